/*
 * n5ls.c: list everything in an N5 container, like `h5ls -r` for HDF5.
 *
 * What it shows
 *   - opening a container read-only (N5_MODE_READ never writes or locks);
 *   - walking the hierarchy with n5_list_names (packed, NUL-separated names);
 *   - dataset metadata: n5_dataset_dtype, _dimensions, _block_size, _compression;
 *   - reading a result of unknown length: ask for the size first
 *     (buf == NULL, buf_cap == 0), allocate, then fetch.
 *
 * Usage
 *   n5ls CONTAINER [GROUP]
 * For the root (or GROUP) and every group and dataset below it, prints
 *
 *   /path/to/group  Group
 *       attributes: {...}                     the whole attributes.json
 *   /path/to/dataset  Dataset
 *       dtype: uint16
 *       dimensions: [256, 200, 64]            N5 order: dimension 0 fastest
 *       blockSize: [64, 64, 32]
 *       compression: {"type":"gzip",...}      with every parameter
 *       attributes: {...}                     includes the keys above
 *
 * Build against an installed libn5
 *   cc -std=c99 -Wall n5ls.c $(pkg-config --cflags --libs n5) -o n5ls
 * or from CMake: find_package(n5 CONFIG REQUIRED), then link n5::n5.
 */
#include <n5.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void report_error(void)
{
    fprintf(stderr, "error: %s: %s\n", n5_status_name(n5_last_error_code()),
            n5_last_error_message());
}

/* Every text getter that takes a container and a path has this signature. */
typedef n5_status (*path_text_fn)(const n5_container *c, const char *path, char *buf,
                                  size_t buf_cap, size_t *out_len);

/* Calls fn(c, path) and returns its text in a new malloc'd string, or NULL
 * on failure (after printing the error). First a size query, then the real
 * call; if the text grew in between (another process wrote attributes), the
 * library answers N5_ERR_BUFFER_TOO_SMALL with the new size, so try again. */
static char *path_text(path_text_fn fn, const n5_container *c, const char *path)
{
    size_t len = 0;
    char *buf = NULL;
    n5_status st = fn(c, path, NULL, 0, &len);
    while (st == N5_OK) {
        char *bigger = realloc(buf, len + 1); /* + 1 for the terminating NUL */
        if (bigger == NULL) {
            fprintf(stderr, "error: out of memory\n");
            free(buf);
            return NULL;
        }
        buf = bigger;
        st = fn(c, path, buf, len + 1, &len);
        if (st == N5_OK)
            return buf;
        if (st == N5_ERR_BUFFER_TOO_SMALL)
            st = N5_OK; /* len now holds the new size: go round again */
    }
    report_error();
    free(buf);
    return NULL;
}

/* Every group and dataset below base, depth first, as packed names: each
 * path relative to base followed by a NUL ("groups\0groups/a\0volume\0").
 * Returns a new malloc'd buffer and its length, or NULL on failure. */
static char *list_below(const n5_container *c, const char *base, size_t *out_len)
{
    size_t len = 0;
    char *buf = NULL;
    /* recursive = 1: the whole tree, as n5_list_recursive. */
    n5_status st = n5_list_names(c, base, 1, NULL, 0, &len, NULL);
    while (st == N5_OK) {
        char *bigger = realloc(buf, len + 1); /* + 1: never malloc(0) */
        if (bigger == NULL) {
            fprintf(stderr, "error: out of memory\n");
            free(buf);
            return NULL;
        }
        buf = bigger;
        st = n5_list_names(c, base, 1, buf, len + 1, &len, NULL);
        if (st == N5_OK) {
            *out_len = len;
            return buf;
        }
        if (st == N5_ERR_BUFFER_TOO_SMALL)
            st = N5_OK; /* the tree grew in between: len holds the new size */
    }
    report_error();
    free(buf);
    return NULL;
}

static void print_dims(const char *label, const uint64_t *v, size_t ndim)
{
    size_t i;
    printf("    %s: [", label);
    for (i = 0; i < ndim; i++)
        printf("%s%llu", i ? ", " : "", (unsigned long long)v[i]);
    printf("]\n");
}

/* Prints the dataset part of the listing; returns 0 on success. */
static int print_dataset(n5_container *c, const char *path)
{
    int result = 1;
    n5_dtype dtype = N5_DTYPE_INVALID;
    size_t ndim = 0, len = 0;
    uint64_t *dims = NULL, *block = NULL;
    char *compression = NULL;
    n5_dataset *d = n5_dataset_open(c, path);

    if (d == NULL) {
        report_error();
        return 1;
    }
    if (n5_dataset_dtype(d, &dtype) != N5_OK || n5_dataset_ndim(d, &ndim) != N5_OK) {
        report_error();
        goto done;
    }
    /* Every per-dimension array has ndim entries: the dataset's rank. */
    dims = malloc(ndim * sizeof *dims);
    block = malloc(ndim * sizeof *block);
    if (dims == NULL || block == NULL) {
        fprintf(stderr, "error: out of memory\n");
        goto done;
    }
    if (n5_dataset_dimensions(d, ndim, dims) != N5_OK ||
        n5_dataset_block_size(d, ndim, block) != N5_OK) {
        report_error();
        goto done;
    }
    /* The compression text, with the same size-query convention (a dataset
     * handle caches its metadata, so the size cannot change in between). */
    if (n5_dataset_compression(d, NULL, 0, &len) != N5_OK) {
        report_error();
        goto done;
    }
    compression = malloc(len + 1);
    if (compression == NULL) {
        fprintf(stderr, "error: out of memory\n");
        goto done;
    }
    if (n5_dataset_compression(d, compression, len + 1, &len) != N5_OK) {
        report_error();
        goto done;
    }
    printf("    dtype: %s\n", n5_dtype_name(dtype));
    print_dims("dimensions", dims, ndim);
    print_dims("blockSize", block, ndim);
    printf("    compression: %s\n", compression);
    result = 0;
done:
    free(dims);
    free(block);
    free(compression);
    n5_dataset_free(d);
    return result;
}

/* Prints one group or dataset: its kind, metadata and attributes. */
static int print_node(n5_container *c, const char *path)
{
    int32_t is_dataset = 0;
    char *attributes;
    int result = 0;

    if (n5_dataset_exists(c, path, &is_dataset) != N5_OK) {
        report_error();
        return 1;
    }
    printf("/%s  %s\n", path, is_dataset ? "Dataset" : "Group");
    if (is_dataset)
        result = print_dataset(c, path);
    /* The whole attributes.json; "{}" for a group that has none. */
    attributes = path_text(n5_attributes_get, c, path);
    if (attributes == NULL)
        return 1;
    printf("    attributes: %s\n", attributes);
    free(attributes);
    return result;
}

int main(int argc, char **argv)
{
    const char *base;
    char *list = NULL, *name, *path = NULL;
    size_t list_len = 0;
    int failures = 0;
    n5_container *c;

    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s CONTAINER [GROUP]\n", argv[0]);
        return 2;
    }
    base = argc > 2 ? argv[2] : "";
    while (base[0] == '/') /* paths are relative to the root; "" is the root */
        base++;

    c = n5_container_open(argv[1], N5_MODE_READ, NULL);
    if (c == NULL) {
        report_error();
        return 1;
    }
    failures += print_node(c, base);

    list = list_below(c, base, &list_len);
    if (list == NULL) {
        n5_container_free(c);
        return 1;
    }
    /* Each name ends with its NUL, so it is a C string as it stands. */
    for (name = list; name < list + list_len; name += strlen(name) + 1) {
        char *joined = realloc(path, strlen(base) + strlen(name) + 2);
        if (joined == NULL) {
            fprintf(stderr, "error: out of memory\n");
            failures++;
            break;
        }
        path = joined;
        sprintf(path, "%s%s%s", base, base[0] ? "/" : "", name);
        /* A failure on one entry (unreadable metadata, say) is reported and
         * the walk goes on; the exit status says that something failed. */
        failures += print_node(c, path);
    }

    free(path);
    free(list);
    n5_container_free(c);
    return failures == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
