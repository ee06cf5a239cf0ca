/*
 * Versions, status names, dtypes and the thread-local last error.
 */
#include "n5_test.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_versions(void)
{
    char text[64];
    CHECK_EQ(n5_version_major(), N5_VERSION_MAJOR);
    CHECK_EQ(n5_version_minor(), N5_VERSION_MINOR);
    CHECK_EQ(n5_version_patch(), N5_VERSION_PATCH);
    CHECK_EQ(n5_version_number(), N5_VERSION_NUMBER);
    CHECK_EQ(N5_VERSION_NUMBER,
             N5_VERSION_MAJOR * 10000 + N5_VERSION_MINOR * 100 + N5_VERSION_PATCH);
    CHECK_EQ(n5_version_number(),
             n5_version_major() * 10000 + n5_version_minor() * 100 + n5_version_patch());
    CHECK(n5_version_string() != NULL);
    CHECK_STR(n5_version_string(), N5_VERSION_STRING);
    snprintf(text, sizeof text, "%u.%u.%u", (unsigned)n5_version_major(),
             (unsigned)n5_version_minor(), (unsigned)n5_version_patch());
    CHECK_STR(n5_version_string(), text);
    /* static: the same pointer every time */
    CHECK(n5_version_string() == n5_version_string());
    CHECK_LAST(N5_OK);
}

static void test_status_names(void)
{
    static const struct {
        n5_status code;
        const char *name;
    } names[] = {
        {N5_OK, "N5_OK"},
        {N5_ERR_INVALID_ARGUMENT, "N5_ERR_INVALID_ARGUMENT"},
        {N5_ERR_NULL_POINTER, "N5_ERR_NULL_POINTER"},
        {N5_ERR_INVALID_UTF8, "N5_ERR_INVALID_UTF8"},
        {N5_ERR_IO, "N5_ERR_IO"},
        {N5_ERR_NOT_FOUND, "N5_ERR_NOT_FOUND"},
        {N5_ERR_ALREADY_EXISTS, "N5_ERR_ALREADY_EXISTS"},
        {N5_ERR_INVALID_METADATA, "N5_ERR_INVALID_METADATA"},
        {N5_ERR_UNSUPPORTED, "N5_ERR_UNSUPPORTED"},
        {N5_ERR_DTYPE_MISMATCH, "N5_ERR_DTYPE_MISMATCH"},
        {N5_ERR_SHAPE_MISMATCH, "N5_ERR_SHAPE_MISMATCH"},
        {N5_ERR_OUT_OF_BOUNDS, "N5_ERR_OUT_OF_BOUNDS"},
        {N5_ERR_BUFFER_SIZE, "N5_ERR_BUFFER_SIZE"},
        {N5_ERR_BUFFER_TOO_SMALL, "N5_ERR_BUFFER_TOO_SMALL"},
        {N5_ERR_CODEC, "N5_ERR_CODEC"},
        {N5_ERR_READ_ONLY, "N5_ERR_READ_ONLY"},
        {N5_ERR_JSON, "N5_ERR_JSON"},
        {N5_ERR_INVALID_HANDLE, "N5_ERR_INVALID_HANDLE"},
        {N5_ERR_NETWORK, "N5_ERR_NETWORK"},
        {N5_ERR_ACCESS_DENIED, "N5_ERR_ACCESS_DENIED"},
        {N5_ERR_DANGLING_LINK, "N5_ERR_DANGLING_LINK"},
        {N5_ERR_LINK_CYCLE, "N5_ERR_LINK_CYCLE"},
        {N5_ERR_UNSAFE_PICKLE, "N5_ERR_UNSAFE_PICKLE"},
        {N5_ERR_INCOMPLETE, "N5_ERR_INCOMPLETE"},
        {N5_ERR_PANIC, "N5_ERR_PANIC"},
        {N5_ERR_INTERNAL, "N5_ERR_INTERNAL"},
    };
    static const n5_status unknown[] = {-1, 24, 25, 50, 97, 100, 1000, INT32_MIN, INT32_MAX};
    size_t i;
    /* The codes of the contract (c-api.md, "Error model"). */
    CHECK_EQ(N5_OK, 0);
    CHECK_EQ(N5_ERR_INVALID_ARGUMENT, 1);
    CHECK_EQ(N5_ERR_NULL_POINTER, 2);
    CHECK_EQ(N5_ERR_INVALID_UTF8, 3);
    CHECK_EQ(N5_ERR_IO, 4);
    CHECK_EQ(N5_ERR_NOT_FOUND, 5);
    CHECK_EQ(N5_ERR_ALREADY_EXISTS, 6);
    CHECK_EQ(N5_ERR_INVALID_METADATA, 7);
    CHECK_EQ(N5_ERR_UNSUPPORTED, 8);
    CHECK_EQ(N5_ERR_DTYPE_MISMATCH, 9);
    CHECK_EQ(N5_ERR_SHAPE_MISMATCH, 10);
    CHECK_EQ(N5_ERR_OUT_OF_BOUNDS, 11);
    CHECK_EQ(N5_ERR_BUFFER_SIZE, 12);
    CHECK_EQ(N5_ERR_BUFFER_TOO_SMALL, 13);
    CHECK_EQ(N5_ERR_CODEC, 14);
    CHECK_EQ(N5_ERR_READ_ONLY, 15);
    CHECK_EQ(N5_ERR_JSON, 16);
    CHECK_EQ(N5_ERR_INVALID_HANDLE, 17);
    CHECK_EQ(N5_ERR_NETWORK, 18);
    CHECK_EQ(N5_ERR_ACCESS_DENIED, 19);
    CHECK_EQ(N5_ERR_DANGLING_LINK, 20);
    CHECK_EQ(N5_ERR_LINK_CYCLE, 21);
    CHECK_EQ(N5_ERR_UNSAFE_PICKLE, 22);
    CHECK_EQ(N5_ERR_INCOMPLETE, 23);
    CHECK_EQ(N5_ERR_PANIC, 98);
    CHECK_EQ(N5_ERR_INTERNAL, 99);
    for (i = 0; i < sizeof names / sizeof names[0]; i++) {
        CHECK_STR(n5_status_name(names[i].code), names[i].name);
        CHECK(n5_status_name(names[i].code) == n5_status_name(names[i].code));
    }
    for (i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
        CHECK_STR(n5_status_name(unknown[i]), "N5_ERR_UNKNOWN");

    /* n5_status_name does not change the last error */
    CHECK_EQ(n5_dtype_from_name("bogus"), N5_DTYPE_INVALID);
    CHECK_LAST(N5_ERR_INVALID_ARGUMENT);
    (void)n5_status_name(N5_OK);
    (void)n5_status_name(12345);
    CHECK_LAST(N5_ERR_INVALID_ARGUMENT);
    CHECK_MSG_HAS("bogus");
}

static void test_dtypes(void)
{
    static const struct {
        n5_dtype code;
        const char *name;
        size_t size;
    } types[] = {
        {N5_DTYPE_UINT8, "uint8", 1},     {N5_DTYPE_UINT16, "uint16", 2},
        {N5_DTYPE_UINT32, "uint32", 4},   {N5_DTYPE_UINT64, "uint64", 8},
        {N5_DTYPE_INT8, "int8", 1},       {N5_DTYPE_INT16, "int16", 2},
        {N5_DTYPE_INT32, "int32", 4},     {N5_DTYPE_INT64, "int64", 8},
        {N5_DTYPE_FLOAT32, "float32", 4}, {N5_DTYPE_FLOAT64, "float64", 8},
        {N5_DTYPE_STRING, "string", 0},   {N5_DTYPE_OBJECT, "object", 0},
        {N5_DTYPE_BOOL, "bool", 1},       {N5_DTYPE_FLOAT16, "float16", 2},
        {N5_DTYPE_COMPLEX64, "complex64", 8}, {N5_DTYPE_COMPLEX128, "complex128", 16},
        {N5_DTYPE_FIXED_UTF32, "fixed_utf32", 0}, {N5_DTYPE_FIXED_BYTES, "fixed_bytes", 0},
        {N5_DTYPE_STRUCT, "struct", 0},   {N5_DTYPE_DATETIME64, "datetime64", 8},
        {N5_DTYPE_TIMEDELTA64, "timedelta64", 8},
    };
    static const n5_dtype invalid[] = {N5_DTYPE_INVALID, 22, -1, 100, INT32_MIN, INT32_MAX};
    static const char *bad_names[] = {"", "bogus", "UINT8", "Uint8", "uint8 ", " uint8",
                                      "uint", "u8", "float", "double", "int128", "strings"};
    size_t i;
    CHECK_EQ(N5_DTYPE_INVALID, 0);
    CHECK_EQ(N5_DTYPE_UINT8, 1);
    CHECK_EQ(N5_DTYPE_FLOAT64, 10);
    CHECK_EQ(N5_DTYPE_STRING, 11);
    CHECK_EQ(N5_DTYPE_OBJECT, 12);
    CHECK_EQ(N5_DTYPE_BOOL, 13);
    CHECK_EQ(N5_DTYPE_TIMEDELTA64, 21);
    for (i = 0; i < sizeof types / sizeof types[0]; i++) {
        CHECK_EQ(n5_dtype_size(types[i].code), types[i].size);
        CHECK_LAST(N5_OK);
        CHECK_STR(n5_dtype_name(types[i].code), types[i].name);
        CHECK_LAST(N5_OK);
        CHECK_EQ(n5_dtype_from_name(types[i].name), types[i].code);
        CHECK_LAST(N5_OK);
        CHECK_STR(n5_last_error_message(), "");
    }
    for (i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
        CHECK_EQ(n5_dtype_size(invalid[i]), 0);
        CHECK(n5_dtype_name(invalid[i]) == NULL);
    }
    for (i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
        CHECK_EQ(n5_dtype_from_name(bad_names[i]), N5_DTYPE_INVALID);
        CHECK_LAST(N5_ERR_INVALID_ARGUMENT);
        CHECK(n5_last_error_message()[0] != '\0');
    }
    CHECK_EQ(n5_dtype_from_name("bogus"), N5_DTYPE_INVALID);
    CHECK_MSG_HAS("bogus");
    CHECK_MSG_HAS("n5_dtype_from_name");
    CHECK_EQ(n5_dtype_from_name(NULL), N5_DTYPE_INVALID);
    CHECK_LAST(N5_ERR_NULL_POINTER);
    CHECK_MSG_HAS("name");
    CHECK_EQ(n5_dtype_from_name("uint\xff"), N5_DTYPE_INVALID);
    CHECK_LAST(N5_ERR_INVALID_UTF8);
    CHECK_EQ(n5_dtype_from_name("\xc3"), N5_DTYPE_INVALID);
    CHECK_LAST(N5_ERR_INVALID_UTF8);
}

/* Make the calling thread's last error N5_ERR_INVALID_ARGUMENT. */
static void provoke(void)
{
    (void)n5_dtype_from_name("provoked-error");
    CHECK_LAST(N5_ERR_INVALID_ARGUMENT);
}

#define CLEARS(call) \
    do { \
        provoke(); \
        CHECK_OK(call); \
    } while (0)

#define CLEARS_VALUE(expr) \
    do { \
        provoke(); \
        (void)(expr); \
        CHECK_LAST(N5_OK); \
        CHECK_STR(n5_last_error_message(), ""); \
    } while (0)

/* Every function except the error getters, n5_status_name and the _free
   functions clears the last error on entry. */
static void test_every_call_clears(void)
{
    const char *root = n5t_path("clears");
    char buf[512];
    size_t len, count;
    int32_t flag, mode;
    n5_mode m;
    n5_dtype t;
    size_t ndim;
    uint64_t dims[2] = {4, 3}, bs[2] = {2, 2}, pos[2] = {0, 0}, shape[2], n;
    uint64_t off[2] = {1, 1}, rshape[2] = {2, 2};
    uint8_t data[4] = {1, 2, 3, 4}, rdata[4];
    uint64_t one[1] = {1};
    n5_container *c;
    n5_dataset *d, *ds, *dobj;

    provoke();
    c = CHECK_HANDLE(n5_container_open(root, N5_MODE_CREATE, NULL));
    if (c == NULL)
        return;
    provoke();
    d = CHECK_HANDLE(n5_dataset_create(c, "u8", 2, dims, bs, N5_DTYPE_UINT8, NULL));
    provoke();
    ds = CHECK_HANDLE(n5_dataset_create(c, "str", 1, one, one, N5_DTYPE_STRING, NULL));
    provoke();
    dobj = CHECK_HANDLE(n5_dataset_create(c, "obj", 1, one, one, N5_DTYPE_OBJECT, NULL));
    if (d == NULL || ds == NULL || dobj == NULL)
        goto out;

    CLEARS_VALUE(n5_version_major());
    CLEARS_VALUE(n5_version_minor());
    CLEARS_VALUE(n5_version_patch());
    CLEARS_VALUE(n5_version_number());
    CLEARS_VALUE(n5_version_string());
    CLEARS_VALUE(n5_dtype_size(N5_DTYPE_UINT8));
    CLEARS_VALUE(n5_dtype_name(N5_DTYPE_UINT8));
    CLEARS_VALUE(n5_dtype_from_name("uint8"));
    /* a failing lookup of an invalid code does not fail: it clears too */
    CLEARS_VALUE(n5_dtype_size(0));
    CLEARS_VALUE(n5_dtype_name(0));

    CLEARS(n5_container_version(c, buf, sizeof buf, &len));
    CLEARS(n5_container_root(c, buf, sizeof buf, &len));
    CLEARS(n5_container_mode(c, &m));
    CLEARS(n5_container_options(c, buf, sizeof buf, &len));
    CLEARS(n5_exists(c, "u8", &flag));
    CLEARS(n5_dataset_exists(c, "u8", &flag));
    CLEARS(n5_group_create(c, "g/h"));
    CLEARS(n5_list(c, "", buf, sizeof buf, &len));
    CLEARS(n5_list_recursive(c, "", buf, sizeof buf, &len));
    CLEARS(n5_list_names(c, "", 1, buf, sizeof buf, &len, &count));
    CLEARS(n5_attributes_set(c, "g", "{\"a\":1}"));
    CLEARS(n5_attributes_get(c, "g", buf, sizeof buf, &len));
    CLEARS(n5_attribute_set(c, "g", "b", "2"));
    CLEARS(n5_attribute_get(c, "g", "b", buf, sizeof buf, &len));
    CLEARS(n5_attribute_remove(c, "g", "b"));
    CLEARS(n5_links_list(c, "g", buf, sizeof buf, &len));
    CLEARS(n5_link_resolve(c, "g", buf, sizeof buf, &len));
    CLEARS(n5_reference_resolve(c, "", "\"/g\"", buf, sizeof buf, &len));
    CLEARS(n5_remove(c, "g"));
    {
        n5_dataset *d2;
        provoke();
        d2 = CHECK_HANDLE(n5_dataset_open(c, "u8"));
        n5_dataset_free(d2);
    }
    CLEARS(n5_dataset_ndim(d, &ndim));
    CLEARS(n5_dataset_dimensions(d, 2, shape));
    CLEARS(n5_dataset_block_size(d, 2, shape));
    CLEARS(n5_dataset_grid_shape(d, 2, shape));
    CLEARS(n5_dataset_dtype(d, &t));
    CLEARS(n5_dataset_compression(d, buf, sizeof buf, &len));
    CLEARS(n5_dataset_path(d, buf, sizeof buf, &len));
    CLEARS(n5_dataset_set_dimensions(d, 2, dims));
    CLEARS(n5_block_shape(d, 2, pos, shape));
    CLEARS(n5_block_write(d, 2, pos, bs, N5_DTYPE_UINT8, data, 4));
    CLEARS(n5_block_exists(d, 2, pos, &flag));
    CLEARS(n5_block_read(d, 2, pos, N5_DTYPE_UINT8, rdata, 4, shape, &flag));
    CLEARS(n5_block_info(d, 2, pos, &mode, shape, &n, &flag));
    CLEARS(n5_block_write_varlength(d, 2, pos, bs, N5_DTYPE_UINT8, data, 3));
    CLEARS(n5_block_read_varlength(d, 2, pos, N5_DTYPE_UINT8, rdata, 4, &n, shape, &flag));
    CLEARS(n5_block_list(d, buf, sizeof buf, &len));
    CLEARS(n5_block_delete(d, 2, pos));
    CLEARS(n5_region_write(d, 2, off, rshape, N5_DTYPE_UINT8, data, 4));
    CLEARS(n5_region_read(d, 2, off, rshape, N5_DTYPE_UINT8, rdata, 4));
    CLEARS(n5_block_write_strings(ds, 1, pos, one, "a\0bc", 5));
    CLEARS(n5_block_read_strings(ds, 1, pos, buf, sizeof buf, &len, &count, shape, &flag));
    CLEARS(n5_block_write_object(dobj, 1, pos, data, 4));
    CLEARS(n5_block_read_object(dobj, 1, pos, buf, sizeof buf, &len, &flag));

out:
    n5_dataset_free(d);
    n5_dataset_free(ds);
    n5_dataset_free(dobj);
    n5_container_free(c);
}

/* The error getters and the _free functions leave the last error alone. */
static void test_getters_and_free_keep_error(void)
{
    const char *root = n5t_path("keep");
    n5_container *c, *c2;
    n5_dataset *d;
    uint64_t dims[1] = {4};
    char saved[1024];

    c = CHECK_HANDLE(n5_container_open(root, N5_MODE_CREATE, NULL));
    c2 = CHECK_HANDLE(n5_container_open(root, N5_MODE_READ, NULL));
    d = CHECK_HANDLE(n5_dataset_create(c, "d", 1, dims, dims, N5_DTYPE_INT32, NULL));

    CHECK_ERR(n5_list(c, "missing/group", NULL, 0, &(size_t){0}), N5_ERR_NOT_FOUND);
    snprintf(saved, sizeof saved, "%s", n5_last_error_message());
    CHECK(strstr(saved, "missing/group") != NULL);

    (void)n5_last_error_code();
    (void)n5_last_error_message();
    (void)n5_last_error_code();
    (void)n5_status_name(N5_ERR_JSON);
    n5_container_free(NULL);
    n5_dataset_free(NULL);
    CHECK_LAST(N5_ERR_NOT_FOUND);
    CHECK_STR(n5_last_error_message(), saved);

    /* freeing real handles keeps it too, so "free, then print the error" works */
    n5_dataset_free(d);
    CHECK_LAST(N5_ERR_NOT_FOUND);
    CHECK_STR(n5_last_error_message(), saved);
    n5_container_free(c2);
    CHECK_LAST(N5_ERR_NOT_FOUND);
    CHECK_STR(n5_last_error_message(), saved);
    n5_container_free(c);
    CHECK_LAST(N5_ERR_NOT_FOUND);
    CHECK_STR(n5_last_error_message(), saved);

    /* a new failure replaces the old one */
    CHECK_NULL_ERR(n5_container_open(root, 7, NULL), N5_ERR_INVALID_ARGUMENT);
    CHECK(strstr(n5_last_error_message(), "missing/group") == NULL);
    CHECK_MSG_HAS("n5_container_open");
}

/* Messages name the function and the path, key or argument involved. */
static void test_messages_name_things(void)
{
    const char *root = n5t_path("messages");
    const char *missing_root = n5t_path("no-such-root");
    n5_container *c;
    size_t len = 0;
    char buf[64];

    CHECK_NULL_ERR(n5_container_open(missing_root, N5_MODE_READ, NULL), N5_ERR_NOT_FOUND);
    CHECK_MSG_HAS("n5_container_open");
    CHECK_MSG_HAS("no-such-root");

    c = CHECK_HANDLE(n5_container_open(root, N5_MODE_CREATE, NULL));
    if (c == NULL)
        return;
    CHECK_OK(n5_group_create(c, "grp"));
    CHECK_ERR(n5_list(c, "absent/path", NULL, 0, &len), N5_ERR_NOT_FOUND);
    CHECK_MSG_HAS("n5_list");
    CHECK_MSG_HAS("absent/path");
    CHECK_ERR(n5_attributes_get(c, "absent2", NULL, 0, &len), N5_ERR_NOT_FOUND);
    CHECK_MSG_HAS("n5_attributes_get");
    CHECK_MSG_HAS("absent2");
    CHECK_ERR(n5_attribute_get(c, "grp", "some/key", NULL, 0, &len), N5_ERR_NOT_FOUND);
    CHECK_MSG_HAS("n5_attribute_get");
    CHECK_MSG_HAS("some/key");
    CHECK_NULL_ERR(n5_dataset_open(c, "grp/nods"), N5_ERR_NOT_FOUND);
    CHECK_MSG_HAS("n5_dataset_open");
    CHECK_MSG_HAS("grp/nods");
    CHECK_ERR(n5_attributes_set(c, "grp", "{\"a\":"), N5_ERR_JSON);
    CHECK_MSG_HAS("n5_attributes_set");
    CHECK_MSG_HAS("json_object");
    CHECK_ERR(n5_group_create(c, "../up"), N5_ERR_INVALID_ARGUMENT);
    CHECK_MSG_HAS("../up");
    CHECK_ERR(n5_container_version(c, buf, 2, &len), N5_ERR_BUFFER_TOO_SMALL);
    CHECK_MSG_HAS("n5_container_version");
    n5_container_free(c);
}

/* ---- thread-local last error ------------------------------------------------ */

struct thread_arg {
    int iterations;
    int which;
    long failures;
    n5_status initial_code;
    char initial_message[64];
};

static void *error_thread(void *p)
{
    struct thread_arg *a = p;
    char name[64];
    int i;
    /* a new thread starts without an error */
    a->initial_code = n5_last_error_code();
    snprintf(a->initial_message, sizeof a->initial_message, "%s", n5_last_error_message());
    for (i = 0; i < a->iterations; i++) {
        if (a->which == 0) {
            snprintf(name, sizeof name, "no-type-%d", i);
            (void)n5_dtype_from_name(name);
            if (n5_last_error_code() != N5_ERR_INVALID_ARGUMENT ||
                strstr(n5_last_error_message(), name) == NULL)
                a->failures++;
        } else if (a->which == 1) {
            (void)n5_dtype_from_name(NULL);
            if (n5_last_error_code() != N5_ERR_NULL_POINTER)
                a->failures++;
        } else {
            if (n5_dtype_from_name("int16") != N5_DTYPE_INT16 || n5_last_error_code() != N5_OK ||
                n5_last_error_message()[0] != '\0')
                a->failures++;
        }
    }
    return NULL;
}

static void test_thread_local(void)
{
    pthread_t th[3];
    struct thread_arg args[3];
    char saved[256];
    int i;

    CHECK_EQ(n5_dtype_from_name("main-thread-error"), N5_DTYPE_INVALID);
    snprintf(saved, sizeof saved, "%s", n5_last_error_message());

    /* one thread after the other: a failing call and a clearing call elsewhere */
    for (i = 0; i < 3; i++) {
        memset(&args[i], 0, sizeof args[i]);
        args[i].iterations = 1;
        args[i].which = i;
        CHECK(pthread_create(&th[i], NULL, error_thread, &args[i]) == 0);
        CHECK(pthread_join(th[i], NULL) == 0);
        CHECK_EQ(args[i].initial_code, N5_OK);
        CHECK_STR(args[i].initial_message, "");
        CHECK_EQ(args[i].failures, 0);
        CHECK_LAST(N5_ERR_INVALID_ARGUMENT);
        CHECK_STR(n5_last_error_message(), saved);
    }

    /* all at once, many times */
    for (i = 0; i < 3; i++) {
        memset(&args[i], 0, sizeof args[i]);
        args[i].iterations = 2000;
        args[i].which = i;
        CHECK(pthread_create(&th[i], NULL, error_thread, &args[i]) == 0);
    }
    for (i = 0; i < 3; i++) {
        CHECK(pthread_join(th[i], NULL) == 0);
        CHECK_EQ(args[i].failures, 0);
    }
    CHECK_LAST(N5_ERR_INVALID_ARGUMENT);
    CHECK_STR(n5_last_error_message(), saved);
}

int main(void)
{
    n5t_init("version_errors");
    RUN(test_versions);
    RUN(test_status_names);
    RUN(test_dtypes);
    RUN(test_every_call_clears);
    RUN(test_getters_and_free_keep_error);
    RUN(test_messages_name_things);
    RUN(test_thread_local);
    return n5t_finish();
}
