/*
 * attributes.c: store and query JSON attributes on an N5 group.
 *
 * What it shows
 *   - n5_attribute_set / n5_attribute_get / n5_attribute_remove with N5
 *     attribute paths: "pipeline/steps[2]/name" walks into objects ("/") and
 *     arrays ("[i]"), creating what is missing; "\/" and "\[" escape a slash
 *     or a bracket that is part of a key;
 *   - n5_attributes_set, which merges a JSON object into the document (each
 *     top-level key replaces the stored value, as N5's setAttributes does);
 *   - n5_attributes_get, which returns the whole attributes.json;
 *   - telling an expected failure (a missing key: N5_ERR_NOT_FOUND) from a
 *     real one by its status code.
 * Values go in and come out as JSON text: the string value denoise is
 * written "\"denoise\"" in C, the number 40 is "40".
 *
 * Usage
 *   attributes [CONTAINER]      (default: attributes.n5; created if missing)
 * Re-creates the group "experiment" in CONTAINER, prints each step and the
 * document, and exits with status 0 when every value read back is right.
 *
 * Build against an installed libn5
 *   cc -std=c99 -Wall attributes.c $(pkg-config --cflags --libs n5) -o attributes
 * or from CMake: find_package(n5 CONFIG REQUIRED), then link n5::n5.
 */
#include <n5.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GROUP "experiment"

static void report_error(void)
{
    fprintf(stderr, "error: %s: %s\n", n5_status_name(n5_last_error_code()),
            n5_last_error_message());
}

/* The documents here are small, so a fixed buffer will do. A buffer that is
 * too small gives N5_ERR_BUFFER_TOO_SMALL with the size needed in *out_len;
 * n5ls.c shows how to ask for the size first. */
static char text[4096];

/* Sets the value at attribute path key; returns 0 on success. */
static int set(n5_container *c, const char *key, const char *json_value)
{
    if (n5_attribute_set(c, GROUP, key, json_value) != N5_OK) {
        report_error();
        return 1;
    }
    printf("set %s = %s\n", key, json_value);
    return 0;
}

/* Reads the value at attribute path key and checks that it is want
 * (compact JSON text); returns 0 when it is. */
static int expect(const n5_container *c, const char *key, const char *want)
{
    size_t len = 0;
    if (n5_attribute_get(c, GROUP, key, text, sizeof text, &len) != N5_OK) {
        report_error();
        return 1;
    }
    printf("get %s = %s\n", key, text);
    if (strcmp(text, want) != 0) {
        fprintf(stderr, "MISMATCH: %s is %s, expected %s\n", key, text, want);
        return 1;
    }
    return 0;
}

/* Prints the whole document of GROUP; returns 0 on success. */
static int print_document(const n5_container *c)
{
    size_t len = 0;
    if (n5_attributes_get(c, GROUP, text, sizeof text, &len) != N5_OK) {
        report_error();
        return 1;
    }
    printf("document: %s\n", text);
    return 0;
}

int main(int argc, char **argv)
{
    const char *root = argc > 1 ? argv[1] : "attributes.n5";
    int failures = 0;
    size_t len = 0;
    n5_status st;
    n5_container *c = n5_container_open(root, N5_MODE_CREATE, NULL);

    if (c == NULL) {
        report_error();
        return EXIT_FAILURE;
    }
    /* A fresh, empty group (removing a missing path is not an error). */
    if (n5_remove(c, GROUP) != N5_OK || n5_group_create(c, GROUP) != N5_OK) {
        report_error();
        n5_container_free(c);
        return EXIT_FAILURE;
    }

    /* 1. Set a value deep inside a document that does not exist yet: the
     *    objects and the array are created, and the array is padded with
     *    nulls (with zeros when the new element is a number). */
    failures += set(c, "pipeline/steps[2]/name", "\"denoise\"");
    failures += print_document(c);
    failures += expect(c, "pipeline/steps[2]/name", "\"denoise\"");
    failures += expect(c, "pipeline/steps[0]", "null");

    /* 2. Any JSON value can be set, objects included. */
    failures += set(c, "pipeline/steps[0]", "{\"name\":\"load\",\"file\":\"raw.tif\"}");
    failures += set(c, "pipeline/steps[1]", "{\"name\":\"crop\"}");
    failures += expect(c, "pipeline/steps[0]/file", "\"raw.tif\"");

    /* 3. A key that contains a slash: escape it, or it means "go inside". */
    failures += set(c, "units\\/pixel", "\"nm\"");
    failures += expect(c, "units\\/pixel", "\"nm\"");

    /* 4. Merge top-level keys. Keys not named ("pipeline") are kept. */
    if (n5_attributes_set(c, GROUP, "{\"owner\":\"ada\",\"resolution\":[4,4,40]}") != N5_OK) {
        report_error();
        failures++;
    }
    failures += expect(c, "resolution[2]", "40");
    failures += expect(c, "owner", "\"ada\"");
    failures += expect(c, "pipeline/steps[1]/name", "\"crop\"");

    /* 5. Remove an array element: the ones after it move down. */
    if (n5_attribute_remove(c, GROUP, "pipeline/steps[1]") != N5_OK) {
        report_error();
        failures++;
    }
    printf("removed pipeline/steps[1]\n");
    failures += expect(c, "pipeline/steps[1]/name", "\"denoise\"");

    /* 6. A key that is not there is an error you may want to handle:
     *    compare the status with N5_ERR_NOT_FOUND. */
    st = n5_attribute_get(c, GROUP, "pipeline/steps[2]", text, sizeof text, &len);
    if (st == N5_ERR_NOT_FOUND) {
        printf("get pipeline/steps[2]: not found, as expected (%s)\n", n5_last_error_message());
    } else {
        if (st == N5_OK)
            fprintf(stderr, "MISMATCH: pipeline/steps[2] should be gone but is %s\n", text);
        else
            report_error();
        failures++;
    }

    failures += print_document(c);
    n5_container_free(c);
    if (failures != 0) {
        fprintf(stderr, "FAILED: %d check(s) failed\n", failures);
        return EXIT_FAILURE;
    }
    printf("all attribute checks passed\n");
    return EXIT_SUCCESS;
}
