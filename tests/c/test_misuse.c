/*
 * Misuse: NULL for every pointer argument of every function in n5.h
 * (N5_ERR_NULL_POINTER naming the argument, or a NULL handle, never a
 * crash), n5_*_free(NULL), absurd sizes, and use after free, which debug
 * builds of the library detect (N5_TEST_DEBUG_HANDLES).
 */
#include "n5_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* `call` fails with N5_ERR_NULL_POINTER and the message names `arg`. */
#define NULLARG(call, arg) \
    do { \
        if (CHECK_ERR(call, N5_ERR_NULL_POINTER)) \
            CHECK_MSG_HAS("'" arg "'"); \
    } while (0)

/* An opener returns NULL with N5_ERR_NULL_POINTER naming `arg`. */
#define NULLARG_H(call, arg) \
    do { \
        if (CHECK_NULL_ERR(call, N5_ERR_NULL_POINTER)) \
            CHECK_MSG_HAS("'" arg "'"); \
    } while (0)

static n5_container *c;
static n5_dataset *d, *ds, *dobj;
static const char *root;

static void setup(void)
{
    uint64_t dims[2] = {4, 4}, bs[2] = {2, 2}, one[1] = {1}, pos[2] = {0, 0};
    uint8_t data[4] = {1, 2, 3, 4};
    root = n5t_fresh("misuse");
    c = CHECK_HANDLE(n5_container_open(root, N5_MODE_CREATE, NULL));
    if (c == NULL)
        exit(n5t_finish() | 1);
    CHECK_OK(n5_group_create(c, "g"));
    d = CHECK_HANDLE(n5_dataset_create(c, "u8", 2, dims, bs, N5_DTYPE_UINT8, NULL));
    ds = CHECK_HANDLE(n5_dataset_create(c, "str", 1, one, one, N5_DTYPE_STRING, NULL));
    dobj = CHECK_HANDLE(n5_dataset_create(c, "obj", 1, one, one, N5_DTYPE_OBJECT, NULL));
    if (d == NULL || ds == NULL || dobj == NULL)
        exit(n5t_finish() | 1);
    CHECK_OK(n5_block_write(d, 2, pos, bs, N5_DTYPE_UINT8, data, 4));
    CHECK_OK(n5_block_write_strings(ds, 1, pos, one, "s", 2));
    CHECK_OK(n5_block_write_object(dobj, 1, pos, "o", 1));
}

static void teardown(void)
{
    n5_dataset_free(d);
    n5_dataset_free(ds);
    n5_dataset_free(dobj);
    n5_container_free(c);
}

static void test_null_container_functions(void)
{
    char buf[64];
    size_t len = 0, count = 0;
    int32_t flag = 0;
    n5_mode mode = 0;
    uint64_t dims[2] = {4, 4}, bs[2] = {2, 2};
    char *before = n5t_tree_fingerprint(root), *after;

    NULLARG_H(n5_container_open(NULL, N5_MODE_READ, NULL), "root");
    NULLARG_H(n5_container_open(NULL, N5_MODE_CREATE, "{}"), "root");

    NULLARG(n5_container_version(NULL, buf, sizeof buf, &len), "c");
    NULLARG(n5_container_version(c, NULL, 4, &len), "buf");
    NULLARG(n5_container_version(c, NULL, 0, NULL), "out_len");
    NULLARG(n5_container_format(NULL, buf, sizeof buf, &len), "c");
    NULLARG(n5_container_format(c, NULL, 4, &len), "buf");
    NULLARG(n5_container_format(c, NULL, 0, NULL), "out_len");
    NULLARG(n5_container_root(NULL, buf, sizeof buf, &len), "c");
    NULLARG(n5_container_root(c, NULL, 4, &len), "buf");
    NULLARG(n5_container_root(c, NULL, 0, NULL), "out_len");
    NULLARG(n5_container_mode(NULL, &mode), "c");
    NULLARG(n5_container_mode(c, NULL), "out_mode");
    NULLARG(n5_container_options(NULL, buf, sizeof buf, &len), "c");
    NULLARG(n5_container_options(c, NULL, 4, &len), "buf");
    NULLARG(n5_container_options(c, NULL, 0, NULL), "out_len");

    NULLARG(n5_exists(NULL, "g", &flag), "c");
    NULLARG(n5_exists(c, NULL, &flag), "path");
    NULLARG(n5_exists(c, "g", NULL), "out_exists");
    NULLARG(n5_dataset_exists(NULL, "u8", &flag), "c");
    NULLARG(n5_dataset_exists(c, NULL, &flag), "path");
    NULLARG(n5_dataset_exists(c, "u8", NULL), "out_is_dataset");
    NULLARG(n5_group_create(NULL, "h"), "c");
    NULLARG(n5_group_create(c, NULL), "path");
    NULLARG(n5_list(NULL, "", buf, sizeof buf, &len), "c");
    NULLARG(n5_list(c, NULL, buf, sizeof buf, &len), "path");
    NULLARG(n5_list(c, "", NULL, 4, &len), "buf");
    NULLARG(n5_list(c, "", NULL, 0, NULL), "out_len");
    NULLARG(n5_list_recursive(NULL, "", buf, sizeof buf, &len), "c");
    NULLARG(n5_list_recursive(c, NULL, buf, sizeof buf, &len), "path");
    NULLARG(n5_list_recursive(c, "", NULL, 4, &len), "buf");
    NULLARG(n5_list_recursive(c, "", NULL, 0, NULL), "out_len");
    NULLARG(n5_list_names(NULL, "", 0, buf, sizeof buf, &len, &count), "c");
    NULLARG(n5_list_names(c, NULL, 0, buf, sizeof buf, &len, &count), "path");
    NULLARG(n5_list_names(c, "", 1, NULL, 4, &len, &count), "buf");
    NULLARG(n5_list_names(c, "", 1, NULL, 0, NULL, &count), "out_len");
    CHECK_OK(n5_list_names(c, "", 1, buf, sizeof buf, NULL, NULL));
    NULLARG(n5_remove(NULL, "g"), "c");
    NULLARG(n5_container_remove_stale_temporaries(NULL, 0, NULL, NULL), "c");
    NULLARG(n5_remove(c, NULL), "path");

    NULLARG(n5_attributes_get(NULL, "g", buf, sizeof buf, &len), "c");
    NULLARG(n5_attributes_get(c, NULL, buf, sizeof buf, &len), "path");
    NULLARG(n5_attributes_get(c, "g", NULL, 4, &len), "buf");
    NULLARG(n5_attributes_get(c, "g", NULL, 0, NULL), "out_len");
    NULLARG(n5_attribute_get(NULL, "g", "k", buf, sizeof buf, &len), "c");
    NULLARG(n5_attribute_get(c, NULL, "k", buf, sizeof buf, &len), "path");
    NULLARG(n5_attribute_get(c, "g", NULL, buf, sizeof buf, &len), "key");
    NULLARG(n5_attribute_get(c, "", "n5", NULL, 4, &len), "buf");
    NULLARG(n5_attribute_get(c, "", "n5", NULL, 0, NULL), "out_len");
    NULLARG(n5_attributes_set(NULL, "g", "{}"), "c");
    NULLARG(n5_attributes_set(c, NULL, "{}"), "path");
    NULLARG(n5_attributes_set(c, "g", NULL), "json_object");
    NULLARG(n5_attribute_set(NULL, "g", "k", "1"), "c");
    NULLARG(n5_attribute_set(c, NULL, "k", "1"), "path");
    NULLARG(n5_attribute_set(c, "g", NULL, "1"), "key");
    NULLARG(n5_attribute_set(c, "g", "k", NULL), "json_value");
    NULLARG(n5_attribute_remove(NULL, "g", "k"), "c");
    NULLARG(n5_attribute_remove(c, NULL, "k"), "path");
    NULLARG(n5_attribute_remove(c, "g", NULL), "key");

    NULLARG(n5_links_list(NULL, "g", buf, sizeof buf, &len), "c");
    NULLARG(n5_links_list(c, NULL, buf, sizeof buf, &len), "group_path");
    NULLARG(n5_links_list(c, "g", NULL, 4, &len), "buf");
    NULLARG(n5_links_list(c, "g", NULL, 0, NULL), "out_len");
    NULLARG(n5_link_resolve(NULL, "g", buf, sizeof buf, &len), "c");
    NULLARG(n5_link_resolve(c, NULL, buf, sizeof buf, &len), "path");
    NULLARG(n5_link_resolve(c, "g", NULL, 4, &len), "buf");
    NULLARG(n5_link_resolve(c, "g", NULL, 0, NULL), "out_len");
    NULLARG(n5_link_create(NULL, "g", "l", ".", "/g"), "c");
    NULLARG(n5_link_create(c, NULL, "l", ".", "/g"), "group_path");
    NULLARG(n5_link_create(c, "g", NULL, ".", "/g"), "name");
    NULLARG(n5_link_create(c, "g", "l", NULL, "/g"), "source");
    NULLARG(n5_link_create(c, "g", "l", ".", NULL), "target_path");
    NULLARG(n5_reference_resolve(NULL, "g", "\"/g\"", buf, sizeof buf, &len), "c");
    NULLARG(n5_reference_resolve(c, NULL, "\"/g\"", buf, sizeof buf, &len), "owner_path");
    NULLARG(n5_reference_resolve(c, "g", NULL, buf, sizeof buf, &len), "reference_json");
    NULLARG(n5_reference_resolve(c, "g", "\"/g\"", NULL, 4, &len), "buf");
    NULLARG(n5_reference_resolve(c, "g", "\"/g\"", NULL, 0, NULL), "out_len");

    NULLARG_H(n5_dataset_create(NULL, "x", 2, dims, bs, N5_DTYPE_UINT8, NULL), "c");
    NULLARG_H(n5_dataset_create(c, NULL, 2, dims, bs, N5_DTYPE_UINT8, NULL), "path");
    NULLARG_H(n5_dataset_create(c, "x", 2, NULL, bs, N5_DTYPE_UINT8, NULL), "dimensions");
    NULLARG_H(n5_dataset_create(c, "x", 2, dims, NULL, N5_DTYPE_UINT8, NULL), "block_size");
    NULLARG_H(n5_dataset_create_json(NULL, "x", "{}"), "c");
    NULLARG_H(n5_dataset_create_json(c, NULL, "{}"), "path");
    NULLARG_H(n5_dataset_create_json(c, "x", NULL), "metadata_json");
    NULLARG_H(n5_dataset_open(NULL, "u8"), "c");
    NULLARG_H(n5_dataset_open(c, NULL), "path");

    NULLARG(n5_dtype_from_name(NULL) == N5_DTYPE_INVALID ? n5_last_error_code() : N5_OK, "name");

    /* none of it wrote anything */
    after = n5t_tree_fingerprint(root);
    CHECK_STR(after, before);
    free(before);
    free(after);
}

static void test_null_dataset_functions(void)
{
    uint64_t pos[2] = {0, 0}, bs[2] = {2, 2}, shape[2], n = 0, dims[2] = {4, 4};
    uint64_t pos1[1] = {0}, one[1] = {1};
    uint8_t buf[64];
    size_t ndim = 0, len = 0, count = 0;
    int32_t flag = 0, mode = 0;
    n5_dtype t = 0;
    char *before = n5t_tree_fingerprint(root), *after;

    NULLARG(n5_dataset_ndim(NULL, &ndim), "d");
    NULLARG(n5_dataset_ndim(d, NULL), "out_ndim");
    NULLARG(n5_dataset_dimensions(NULL, 2, shape), "d");
    NULLARG(n5_dataset_dimensions(d, 2, NULL), "out_dims");
    NULLARG(n5_dataset_block_size(NULL, 2, shape), "d");
    NULLARG(n5_dataset_block_size(d, 2, NULL), "out_block_size");
    NULLARG(n5_dataset_shard_shape(NULL, 2, shape), "d");
    NULLARG(n5_dataset_shard_shape(d, 2, NULL), "out");
    NULLARG(n5_dataset_metadata(NULL, (char *)buf, sizeof buf, &len), "d");
    NULLARG(n5_dataset_metadata(d, NULL, 4, &len), "buf");
    NULLARG(n5_dataset_metadata(d, NULL, 0, NULL), "out_len");
    NULLARG(n5_dataset_grid_shape(NULL, 2, shape), "d");
    NULLARG(n5_dataset_grid_shape(d, 2, NULL), "out_grid_shape");
    NULLARG(n5_dataset_dtype(NULL, &t), "d");
    NULLARG(n5_dataset_dtype(d, NULL), "out_dtype");
    NULLARG(n5_dataset_compression(NULL, (char *)buf, sizeof buf, &len), "d");
    NULLARG(n5_dataset_compression(d, NULL, 4, &len), "buf");
    NULLARG(n5_dataset_compression(d, NULL, 0, NULL), "out_len");
    NULLARG(n5_dataset_path(NULL, (char *)buf, sizeof buf, &len), "d");
    NULLARG(n5_dataset_path(d, NULL, 4, &len), "buf");
    NULLARG(n5_dataset_path(d, NULL, 0, NULL), "out_len");
    NULLARG(n5_dataset_set_dimensions(NULL, 2, dims), "d");
    NULLARG(n5_dataset_set_dimensions(d, 2, NULL), "dims");

    NULLARG(n5_block_shape(NULL, 2, pos, shape), "d");
    NULLARG(n5_block_shape(d, 2, NULL, shape), "grid_pos");
    NULLARG(n5_block_shape(d, 2, pos, NULL), "out_shape");
    NULLARG(n5_block_exists(NULL, 2, pos, &flag), "d");
    NULLARG(n5_block_exists(d, 2, NULL, &flag), "grid_pos");
    NULLARG(n5_block_exists(d, 2, pos, NULL), "out_exists");
    NULLARG(n5_block_read(NULL, 2, pos, N5_DTYPE_UINT8, buf, 4, shape, &flag), "d");
    NULLARG(n5_block_read(d, 2, NULL, N5_DTYPE_UINT8, buf, 4, shape, &flag), "grid_pos");
    NULLARG(n5_block_read(d, 2, pos, N5_DTYPE_UINT8, NULL, 4, shape, &flag), "buf");
    CHECK_OK(n5_block_read(d, 2, pos, N5_DTYPE_UINT8, buf, 4, NULL, NULL));
    NULLARG(n5_block_write(NULL, 2, pos, bs, N5_DTYPE_UINT8, buf, 4), "d");
    NULLARG(n5_block_write(d, 2, NULL, bs, N5_DTYPE_UINT8, buf, 4), "grid_pos");
    NULLARG(n5_block_write(d, 2, pos, NULL, N5_DTYPE_UINT8, buf, 4), "shape");
    NULLARG(n5_block_write(d, 2, pos, bs, N5_DTYPE_UINT8, NULL, 4), "buf");
    NULLARG(n5_block_delete(NULL, 2, pos), "d");
    NULLARG(n5_block_delete(d, 2, NULL), "grid_pos");
    NULLARG(n5_block_info(NULL, 2, pos, &mode, shape, &n, &flag), "d");
    NULLARG(n5_block_info(d, 2, NULL, &mode, shape, &n, &flag), "grid_pos");
    CHECK_OK(n5_block_info(d, 2, pos, NULL, NULL, NULL, NULL));
    NULLARG(n5_block_read_varlength(NULL, 2, pos, N5_DTYPE_UINT8, buf, 4, &n, shape, &flag), "d");
    NULLARG(n5_block_read_varlength(d, 2, NULL, N5_DTYPE_UINT8, buf, 4, &n, shape, &flag),
            "grid_pos");
    NULLARG(n5_block_read_varlength(d, 2, pos, N5_DTYPE_UINT8, NULL, 4, &n, shape, &flag), "buf");
    NULLARG(n5_block_read_varlength(d, 2, pos, N5_DTYPE_UINT8, NULL, 0, NULL, shape, &flag),
            "out_num_elements");
    CHECK_OK(n5_block_read_varlength(d, 2, pos, N5_DTYPE_UINT8, buf, 4, NULL, NULL, NULL));
    NULLARG(n5_block_write_varlength(NULL, 2, pos, bs, N5_DTYPE_UINT8, buf, 3), "d");
    NULLARG(n5_block_write_varlength(d, 2, NULL, bs, N5_DTYPE_UINT8, buf, 3), "grid_pos");
    NULLARG(n5_block_write_varlength(d, 2, pos, NULL, N5_DTYPE_UINT8, buf, 3), "shape");
    NULLARG(n5_block_write_varlength(d, 2, pos, bs, N5_DTYPE_UINT8, NULL, 3), "buf");
    NULLARG(n5_block_read_strings(NULL, 1, pos1, (char *)buf, sizeof buf, &len, &count, shape,
                                  &flag),
            "d");
    NULLARG(n5_block_read_strings(ds, 1, NULL, (char *)buf, sizeof buf, &len, &count, shape,
                                  &flag),
            "grid_pos");
    NULLARG(n5_block_read_strings(ds, 1, pos1, NULL, 4, &len, &count, shape, &flag), "buf");
    NULLARG(n5_block_read_strings(ds, 1, pos1, NULL, 0, NULL, &count, shape, &flag), "out_len");
    CHECK_OK(n5_block_read_strings(ds, 1, pos1, (char *)buf, sizeof buf, NULL, NULL, NULL, NULL));
    NULLARG(n5_block_write_strings(NULL, 1, pos1, one, "a", 2), "d");
    NULLARG(n5_block_write_strings(ds, 1, NULL, one, "a", 2), "grid_pos");
    NULLARG(n5_block_write_strings(ds, 1, pos1, NULL, "a", 2), "shape");
    NULLARG(n5_block_write_strings(ds, 1, pos1, one, NULL, 2), "packed");
    NULLARG(n5_block_read_object(NULL, 1, pos1, buf, sizeof buf, &len, &flag), "d");
    NULLARG(n5_block_read_object(dobj, 1, NULL, buf, sizeof buf, &len, &flag), "grid_pos");
    NULLARG(n5_block_read_object(dobj, 1, pos1, NULL, 4, &len, &flag), "buf");
    NULLARG(n5_block_read_object(dobj, 1, pos1, NULL, 0, NULL, &flag), "out_len");
    CHECK_OK(n5_block_read_object(dobj, 1, pos1, buf, sizeof buf, NULL, NULL));
    NULLARG(n5_block_write_object(NULL, 1, pos1, "x", 1), "d");
    NULLARG(n5_block_write_object(dobj, 1, NULL, "x", 1), "grid_pos");
    NULLARG(n5_block_write_object(dobj, 1, pos1, NULL, 1), "buf");
    NULLARG(n5_block_list(NULL, (char *)buf, sizeof buf, &len), "d");
    NULLARG(n5_block_list(d, NULL, 4, &len), "buf");
    NULLARG(n5_block_list(d, NULL, 0, NULL), "out_len");

    NULLARG(n5_region_read(NULL, 2, pos, bs, N5_DTYPE_UINT8, buf, 4), "d");
    NULLARG(n5_region_read(d, 2, NULL, bs, N5_DTYPE_UINT8, buf, 4), "offset");
    NULLARG(n5_region_read(d, 2, pos, NULL, N5_DTYPE_UINT8, buf, 4), "shape");
    NULLARG(n5_region_read(d, 2, pos, bs, N5_DTYPE_UINT8, NULL, 4), "buf");
    NULLARG(n5_region_write(NULL, 2, pos, bs, N5_DTYPE_UINT8, buf, 4), "d");
    NULLARG(n5_region_write(d, 2, NULL, bs, N5_DTYPE_UINT8, buf, 4), "offset");
    NULLARG(n5_region_write(d, 2, pos, NULL, N5_DTYPE_UINT8, buf, 4), "shape");
    NULLARG(n5_region_write(d, 2, pos, bs, N5_DTYPE_UINT8, NULL, 4), "buf");

    after = n5t_tree_fingerprint(root);
    CHECK_STR(after, before);
    free(before);
    free(after);
}

static void test_free_null(void)
{
    CHECK_EQ(n5_dtype_from_name("nope"), N5_DTYPE_INVALID);
    n5_container_free(NULL);
    n5_dataset_free(NULL);
    n5_container_free(NULL);
    n5_dataset_free(NULL);
    CHECK_LAST(N5_ERR_INVALID_ARGUMENT);
    CHECK_MSG_HAS("nope");
}

/* Sizes no caller means: refused before any memory is touched (valgrind
   would see a read past the arrays). */
static void test_absurd_sizes(void)
{
    uint64_t pos[2] = {0, 0}, bs[2] = {2, 2}, shape[2], dims[2] = {4, 4};
    uint8_t buf[4] = {0};
    size_t len = 0;
    int32_t flag;
    n5_dataset *x;

    CHECK_ERR(n5_block_shape(d, (size_t)-1, pos, shape), N5_ERR_SHAPE_MISMATCH);
    CHECK_ERR(n5_block_read(d, 1000, pos, N5_DTYPE_UINT8, buf, 4, shape, &flag),
              N5_ERR_SHAPE_MISMATCH);
    CHECK_ERR(n5_block_write(d, 2, pos, bs, N5_DTYPE_UINT8, buf, (size_t)-1), N5_ERR_BUFFER_SIZE);
    CHECK_ERR(n5_block_read(d, 2, pos, N5_DTYPE_UINT8, buf, (size_t)-1, shape, &flag),
              N5_ERR_BUFFER_SIZE);
    CHECK_ERR(n5_region_read(d, 2, pos, bs, N5_DTYPE_UINT8, buf, (size_t)-1), N5_ERR_BUFFER_SIZE);
    CHECK_ERR(n5_region_write(d, 2, pos, bs, N5_DTYPE_UINT8, buf, (size_t)-1), N5_ERR_BUFFER_SIZE);
    CHECK_ERR(n5_block_write_object(dobj, 1, pos, buf, (size_t)-1), N5_ERR_BUFFER_SIZE);
    CHECK_ERR(n5_block_write_strings(ds, 1, pos, bs, (const char *)buf, (size_t)-1),
              N5_ERR_BUFFER_SIZE);
    CHECK_ERR(n5_dataset_set_dimensions(d, (size_t)-1, dims), N5_ERR_SHAPE_MISMATCH);
    x = n5_dataset_create(c, "huge", (size_t)-1, dims, bs, N5_DTYPE_UINT8, NULL);
    CHECK(x == NULL && n5_last_error_code() != N5_OK);
    n5_dataset_free(x);
    x = n5_dataset_create(c, "huge", 1000, dims, bs, N5_DTYPE_UINT8, NULL);
    CHECK(x == NULL && n5_last_error_code() != N5_OK);
    n5_dataset_free(x);
    /* a text capacity larger than the buffer is fine when the text fits */
    {
        char text[8];
        CHECK_OK(n5_container_version(c, text, 6, &len));
        CHECK_ERR(n5_container_version(c, text, 5, &len), N5_ERR_BUFFER_TOO_SMALL);
        CHECK_EQ(len, 5);
    }
}

#ifdef N5_TEST_DEBUG_HANDLES
/* Debug builds keep freed handle cells and mark them dead: a freed handle is
   N5_ERR_INVALID_HANDLE, and a second free is harmless. */
static void test_use_after_free(void)
{
    const char *r = n5t_fresh("uaf");
    n5_container *c2 = CHECK_HANDLE(n5_container_open(r, N5_MODE_CREATE, NULL));
    uint64_t dims[2] = {4, 4}, bs[2] = {2, 2}, pos[2] = {0, 0}, shape[2] = {9, 9};
    uint8_t buf[4] = {1, 2, 3, 4};
    n5_dataset *d2, *d3;
    int32_t flag = 5;
    size_t len = 5, ndim = 5;
    char text[32];
    if (c2 == NULL)
        return;
    d2 = CHECK_HANDLE(n5_dataset_create(c2, "ds", 2, dims, bs, N5_DTYPE_UINT8, NULL));
    d3 = CHECK_HANDLE(n5_dataset_open(c2, "ds"));
    if (d2 == NULL || d3 == NULL)
        return;
    n5_container_free(c2);
    /* the container handle is dead ... */
    CHECK_ERR(n5_exists(c2, "ds", &flag), N5_ERR_INVALID_HANDLE);
    CHECK_MSG_HAS("freed");
    CHECK_EQ(flag, 5);
    CHECK_ERR(n5_container_version(c2, text, sizeof text, &len), N5_ERR_INVALID_HANDLE);
    CHECK_EQ(len, 5);
    CHECK_ERR(n5_group_create(c2, "g"), N5_ERR_INVALID_HANDLE);
    CHECK_ERR(n5_attributes_set(c2, "", "{\"a\":1}"), N5_ERR_INVALID_HANDLE);
    CHECK_NULL_ERR(n5_dataset_open(c2, "ds"), N5_ERR_INVALID_HANDLE);
    CHECK_NULL_ERR(n5_dataset_create(c2, "ds2", 2, dims, bs, N5_DTYPE_UINT8, NULL),
                   N5_ERR_INVALID_HANDLE);
    CHECK(!n5t_exists(n5t_join(r, "g")) && !n5t_exists(n5t_join(r, "ds2")));
    /* ... the datasets opened from it are alive */
    CHECK_OK(n5_block_write(d2, 2, pos, bs, N5_DTYPE_UINT8, buf, 4));
    CHECK_OK(n5_block_exists(d3, 2, pos, &flag));
    CHECK_EQ(flag, 1);
    /* a second free of the container: nothing happens, the error stays */
    n5_container_free(c2);
    CHECK_LAST(N5_OK);

    n5_dataset_free(d2);
    CHECK_ERR(n5_dataset_ndim(d2, &ndim), N5_ERR_INVALID_HANDLE);
    CHECK_MSG_HAS("'d'");
    CHECK_EQ(ndim, 5);
    CHECK_ERR(n5_block_read(d2, 2, pos, N5_DTYPE_UINT8, buf, 4, shape, &flag),
              N5_ERR_INVALID_HANDLE);
    CHECK(shape[0] == 9 && shape[1] == 9);
    CHECK_ERR(n5_block_write(d2, 2, pos, bs, N5_DTYPE_UINT8, buf, 4), N5_ERR_INVALID_HANDLE);
    CHECK_ERR(n5_region_read(d2, 2, pos, bs, N5_DTYPE_UINT8, buf, 4), N5_ERR_INVALID_HANDLE);
    CHECK_ERR(n5_dataset_path(d2, text, sizeof text, &len), N5_ERR_INVALID_HANDLE);
    CHECK_ERR(n5_block_list(d2, text, sizeof text, &len), N5_ERR_INVALID_HANDLE);
    n5_dataset_free(d2); /* double free: harmless */
    n5_dataset_free(d2);
    /* the other dataset handle still works */
    CHECK_OK(n5_block_read(d3, 2, pos, N5_DTYPE_UINT8, buf, 4, NULL, &flag));
    CHECK(flag == 1 && buf[3] == 4);
    /* a dataset handle is not a container handle (the other way round:
       test_edge_cases.c) */
    CHECK_ERR(n5_exists((n5_container *)(void *)d3, "ds", &flag), N5_ERR_INVALID_HANDLE);
    n5_dataset_free(d3);
    CHECK_ERR(n5_block_exists(d3, 2, pos, &flag), N5_ERR_INVALID_HANDLE);
}
#endif

int main(void)
{
    n5t_init("misuse");
    setup();
    RUN(test_null_container_functions);
    RUN(test_null_dataset_functions);
    RUN(test_free_null);
    RUN(test_absurd_sizes);
#ifdef N5_TEST_DEBUG_HANDLES
    RUN(test_use_after_free);
#else
    printf("test_use_after_free: skipped (the library is a release build)\n");
#endif
    teardown();
    return n5t_finish();
}
