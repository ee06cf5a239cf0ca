/*
 * Numeric blocks: n5_block_shape, n5_block_write / n5_block_read for every
 * dtype in native byte order, n5_block_exists, n5_block_delete, buffer and
 * shape errors, unaligned buffers, optional outputs and corrupt block files.
 */
#include "n5_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const n5_dtype numeric[] = {
    N5_DTYPE_UINT8, N5_DTYPE_UINT16, N5_DTYPE_UINT32, N5_DTYPE_UINT64,  N5_DTYPE_INT8,
    N5_DTYPE_INT16, N5_DTYPE_INT32,  N5_DTYPE_INT64,  N5_DTYPE_FLOAT32, N5_DTYPE_FLOAT64,
};
#define N_NUMERIC (sizeof numeric / sizeof numeric[0])

static n5_container *open_fresh(const char **root_out)
{
    const char *root = n5t_fresh("block");
    if (root_out)
        *root_out = root;
    return CHECK_HANDLE(n5_container_open(root, N5_MODE_CREATE, NULL));
}

static void test_block_shape(void)
{
    n5_container *c = open_fresh(NULL);
    uint64_t dims[3] = {5, 7, 4}, bs[3] = {2, 3, 4}, shape[3], pos[3];
    uint64_t sentinel[3] = {9, 9, 9};
    n5_dataset *d;
    if (c == NULL)
        return;
    d = CHECK_HANDLE(n5_dataset_create(c, "ds", 3, dims, bs, N5_DTYPE_INT16, NULL));
    if (d == NULL) {
        n5_container_free(c);
        return;
    }
    pos[0] = 0, pos[1] = 0, pos[2] = 0;
    CHECK_OK(n5_block_shape(d, 3, pos, shape));
    CHECK(shape[0] == 2 && shape[1] == 3 && shape[2] == 4);
    pos[0] = 2, pos[1] = 0, pos[2] = 0;
    CHECK_OK(n5_block_shape(d, 3, pos, shape));
    CHECK(shape[0] == 1 && shape[1] == 3 && shape[2] == 4);
    pos[0] = 1, pos[1] = 2, pos[2] = 0;
    CHECK_OK(n5_block_shape(d, 3, pos, shape));
    CHECK(shape[0] == 2 && shape[1] == 1 && shape[2] == 4);
    pos[0] = 2, pos[1] = 2, pos[2] = 0;
    CHECK_OK(n5_block_shape(d, 3, pos, shape));
    CHECK(shape[0] == 1 && shape[1] == 1 && shape[2] == 4);

    /* outside the grid: OUT_OF_BOUNDS naming the dimension, output untouched */
    memcpy(shape, sentinel, sizeof shape);
    pos[0] = 3, pos[1] = 0, pos[2] = 0;
    CHECK_ERR(n5_block_shape(d, 3, pos, shape), N5_ERR_OUT_OF_BOUNDS);
    CHECK_MSG_HAS("dimension 0");
    pos[0] = 0, pos[1] = 3, pos[2] = 0;
    CHECK_ERR(n5_block_shape(d, 3, pos, shape), N5_ERR_OUT_OF_BOUNDS);
    CHECK_MSG_HAS("dimension 1");
    pos[0] = 0, pos[1] = 0, pos[2] = 1;
    CHECK_ERR(n5_block_shape(d, 3, pos, shape), N5_ERR_OUT_OF_BOUNDS);
    CHECK_MSG_HAS("dimension 2");
    pos[0] = UINT64_MAX, pos[1] = 0, pos[2] = 0;
    CHECK_ERR(n5_block_shape(d, 3, pos, shape), N5_ERR_OUT_OF_BOUNDS);
    CHECK(memcmp(shape, sentinel, sizeof shape) == 0);
    /* rank and pointers */
    pos[0] = 0;
    CHECK_ERR(n5_block_shape(d, 2, pos, shape), N5_ERR_SHAPE_MISMATCH);
    CHECK_ERR(n5_block_shape(d, 4, pos, shape), N5_ERR_SHAPE_MISMATCH);
    CHECK_ERR(n5_block_shape(d, 3, NULL, shape), N5_ERR_NULL_POINTER);
    CHECK_ERR(n5_block_shape(d, 3, pos, NULL), N5_ERR_NULL_POINTER);
    CHECK_ERR(n5_block_shape(NULL, 3, pos, shape), N5_ERR_NULL_POINTER);
    CHECK(memcmp(shape, sentinel, sizeof shape) == 0);
    n5_dataset_free(d);
    n5_container_free(c);
}

/* Element `i` of a test pattern of dtype `t`, stored at `p` in native order. */
static void put_value(n5_dtype t, void *p, size_t i, unsigned seed)
{
    long long v = (long long)((i + 1) * 2654435761u + seed) % 100000 - 50000;
    switch (t) {
    case N5_DTYPE_UINT8: { uint8_t x = (uint8_t)v; memcpy(p, &x, 1); break; }
    case N5_DTYPE_INT8: { int8_t x = (int8_t)v; memcpy(p, &x, 1); break; }
    case N5_DTYPE_UINT16: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
    case N5_DTYPE_INT16: { int16_t x = (int16_t)v; memcpy(p, &x, 2); break; }
    case N5_DTYPE_UINT32: { uint32_t x = (uint32_t)v * 65537u; memcpy(p, &x, 4); break; }
    case N5_DTYPE_INT32: { int32_t x = (int32_t)v * 40000; memcpy(p, &x, 4); break; }
    case N5_DTYPE_UINT64: { uint64_t x = (uint64_t)v * 0x100000001ULL; memcpy(p, &x, 8); break; }
    case N5_DTYPE_INT64: { int64_t x = (int64_t)v * 0x100000001LL; memcpy(p, &x, 8); break; }
    case N5_DTYPE_FLOAT32: { float x = (float)v / 7.0f; memcpy(p, &x, 4); break; }
    case N5_DTYPE_FLOAT64: { double x = (double)v / 7.0; memcpy(p, &x, 8); break; }
    default: break;
    }
}

static void *pattern(n5_dtype t, size_t n, unsigned seed)
{
    size_t es = n5_dtype_size(t), i;
    unsigned char *buf = malloc(n * es + 1);
    for (i = 0; i < n; i++)
        put_value(t, buf + i * es, i, seed);
    return buf;
}

static void test_round_trip_every_dtype(void)
{
    n5_container *c = open_fresh(NULL);
    uint64_t dims[2] = {5, 7}, bs[2] = {2, 3}, grid[2] = {3, 3};
    size_t k;
    if (c == NULL)
        return;
    for (k = 0; k < N_NUMERIC; k++) {
        n5_dtype t = numeric[k];
        size_t es = n5_dtype_size(t);
        char path[32];
        n5_dataset *d;
        uint64_t gx, gy;
        snprintf(path, sizeof path, "t%d", (int)t);
        d = CHECK_HANDLE(n5_dataset_create(c, path, 2, dims, bs, t, "{\"type\":\"gzip\"}"));
        if (d == NULL)
            continue;
        /* every block, edge blocks smaller */
        for (gy = 0; gy < grid[1]; gy++)
            for (gx = 0; gx < grid[0]; gx++) {
                uint64_t pos[2], shape[2];
                size_t n;
                void *buf;
                pos[0] = gx, pos[1] = gy;
                CHECK_OK(n5_block_shape(d, 2, pos, shape));
                n = (size_t)n5t_prod(2, shape);
                buf = pattern(t, n, (unsigned)(gx * 10 + gy));
                CHECK_OK(n5_block_write(d, 2, pos, shape, t, buf, n * es));
                free(buf);
            }
        for (gy = 0; gy < grid[1]; gy++)
            for (gx = 0; gx < grid[0]; gx++) {
                uint64_t pos[2], shape[2], out_shape[2] = {0, 0};
                size_t n;
                void *expect, *back;
                int32_t found = -1;
                pos[0] = gx, pos[1] = gy;
                CHECK_OK(n5_block_shape(d, 2, pos, shape));
                n = (size_t)n5t_prod(2, shape);
                expect = pattern(t, n, (unsigned)(gx * 10 + gy));
                back = malloc(n * es);
                memset(back, 0xab, n * es);
                CHECK_OK(n5_block_read(d, 2, pos, t, back, n * es, out_shape, &found));
                CHECK_EQ(found, 1);
                CHECK(out_shape[0] == shape[0] && out_shape[1] == shape[1]);
                CHECK(memcmp(expect, back, n * es) == 0);
                free(expect);
                free(back);
            }
        n5_dataset_free(d);
    }
    n5_container_free(c);
}

/* Values are passed in native order; the file holds them big-endian. */
static void test_byte_order_on_disk(void)
{
    const char *root;
    n5_container *c = open_fresh(&root);
    uint64_t one[1] = {1}, zero[1] = {0};
    n5_dataset *d;
    size_t len = 0;
    unsigned char *file;
    if (c == NULL)
        return;
    {
        uint16_t v = 0x0102;
        d = CHECK_HANDLE(n5_dataset_create(c, "u16", 1, one, one, N5_DTYPE_UINT16, NULL));
        CHECK_OK(n5_block_write(d, 1, zero, one, N5_DTYPE_UINT16, &v, 2));
        n5_dataset_free(d);
        file = (unsigned char *)n5t_read_file(n5t_join(root, "u16/0"), &len);
        /* mode 0, ndim 1, size 1, then the value */
        CHECK(file != NULL && len == 10);
        if (file && len == 10) {
            static const unsigned char want[10] = {0, 0, 0, 1, 0, 0, 0, 1, 0x01, 0x02};
            CHECK(memcmp(file, want, 10) == 0);
        }
        free(file);
    }
    {
        float v = 1.5f;
        d = CHECK_HANDLE(n5_dataset_create(c, "f32", 1, one, one, N5_DTYPE_FLOAT32, NULL));
        CHECK_OK(n5_block_write(d, 1, zero, one, N5_DTYPE_FLOAT32, &v, 4));
        n5_dataset_free(d);
        file = (unsigned char *)n5t_read_file(n5t_join(root, "f32/0"), &len);
        CHECK(file != NULL && len == 12);
        if (file && len == 12)
            CHECK(file[8] == 0x3f && file[9] == 0xc0 && file[10] == 0 && file[11] == 0);
        free(file);
    }
    {
        int64_t v = -2;
        d = CHECK_HANDLE(n5_dataset_create(c, "i64", 1, one, one, N5_DTYPE_INT64, NULL));
        CHECK_OK(n5_block_write(d, 1, zero, one, N5_DTYPE_INT64, &v, 8));
        n5_dataset_free(d);
        file = (unsigned char *)n5t_read_file(n5t_join(root, "i64/0"), &len);
        CHECK(file != NULL && len == 16);
        if (file && len == 16)
            CHECK(n5t_all_bytes(file + 8, 7, 0xff) && file[15] == 0xfe);
        free(file);
    }
    n5_container_free(c);
}

static void test_missing_exists_delete(void)
{
    const char *root;
    n5_container *c = open_fresh(&root);
    uint64_t dims[2] = {4, 4}, bs[2] = {2, 2}, pos[2] = {1, 0}, out_shape[2] = {0, 0};
    uint64_t oob[2] = {0, 2};
    int32_t buf[4] = {1, -2, 3, -4}, back[4];
    int32_t found = -1, exists = -1;
    n5_dataset *d;
    if (c == NULL)
        return;
    d = CHECK_HANDLE(n5_dataset_create(c, "ds", 2, dims, bs, N5_DTYPE_INT32, NULL));
    if (d == NULL) {
        n5_container_free(c);
        return;
    }
    /* not stored: zeros, found 0, nominal shape */
    memset(back, 0xab, sizeof back);
    CHECK_OK(n5_block_read(d, 2, pos, N5_DTYPE_INT32, back, sizeof back, out_shape, &found));
    CHECK_EQ(found, 0);
    CHECK(out_shape[0] == 2 && out_shape[1] == 2);
    CHECK(n5t_all_bytes(back, sizeof back, 0));
    CHECK_OK(n5_block_exists(d, 2, pos, &exists));
    CHECK_EQ(exists, 0);

    CHECK_OK(n5_block_write(d, 2, pos, bs, N5_DTYPE_INT32, buf, sizeof buf));
    CHECK_OK(n5_block_exists(d, 2, pos, &exists));
    CHECK_EQ(exists, 1);
    CHECK(n5t_exists(n5t_join(root, "ds/1/0")));
    /* rewriting replaces */
    buf[0] = 100;
    CHECK_OK(n5_block_write(d, 2, pos, bs, N5_DTYPE_INT32, buf, sizeof buf));
    CHECK_OK(n5_block_read(d, 2, pos, N5_DTYPE_INT32, back, sizeof back, NULL, NULL));
    CHECK(memcmp(back, buf, sizeof buf) == 0);
    /* no temporary files are left behind */
    CHECK_EQ(n5t_tree_count(n5t_join(root, "ds")), 3);

    CHECK_OK(n5_block_delete(d, 2, pos));
    CHECK_OK(n5_block_exists(d, 2, pos, &exists));
    CHECK_EQ(exists, 0);
    CHECK(!n5t_exists(n5t_join(root, "ds/1/0")));
    found = -1;
    memset(back, 0xab, sizeof back);
    CHECK_OK(n5_block_read(d, 2, pos, N5_DTYPE_INT32, back, sizeof back, NULL, &found));
    CHECK_EQ(found, 0);
    CHECK(n5t_all_bytes(back, sizeof back, 0));
    CHECK_OK(n5_block_delete(d, 2, pos)); /* not stored: fine */

    /* outside the grid */
    exists = 7;
    CHECK_ERR(n5_block_exists(d, 2, oob, &exists), N5_ERR_OUT_OF_BOUNDS);
    CHECK_EQ(exists, 7);
    CHECK_ERR(n5_block_delete(d, 2, oob), N5_ERR_OUT_OF_BOUNDS);
    CHECK_ERR(n5_block_read(d, 2, oob, N5_DTYPE_INT32, back, sizeof back, NULL, NULL),
              N5_ERR_OUT_OF_BOUNDS);
    CHECK_ERR(n5_block_write(d, 2, oob, bs, N5_DTYPE_INT32, buf, sizeof buf),
              N5_ERR_OUT_OF_BOUNDS);
    CHECK(!n5t_exists(n5t_join(root, "ds/0/2")));
    /* rank and pointers */
    CHECK_ERR(n5_block_exists(d, 1, pos, &exists), N5_ERR_SHAPE_MISMATCH);
    CHECK_ERR(n5_block_exists(d, 2, NULL, &exists), N5_ERR_NULL_POINTER);
    CHECK_ERR(n5_block_exists(d, 2, pos, NULL), N5_ERR_NULL_POINTER);
    CHECK_ERR(n5_block_delete(d, 3, pos), N5_ERR_SHAPE_MISMATCH);
    CHECK_ERR(n5_block_delete(d, 2, NULL), N5_ERR_NULL_POINTER);
    CHECK_EQ(exists, 7);
    n5_dataset_free(d);
    n5_container_free(c);
}

static void test_buffer_and_shape_errors(void)
{
    const char *root;
    n5_container *c = open_fresh(&root);
    uint64_t dims[2] = {5, 4}, bs[2] = {2, 2}, pos[2] = {0, 0}, edge[2] = {2, 0};
    uint64_t shape[2], out_shape[2] = {77, 77};
    uint16_t buf[5] = {1, 2, 3, 4, 5}, back[5];
    int32_t found = 77;
    n5_dataset *d;
    if (c == NULL)
        return;
    d = CHECK_HANDLE(n5_dataset_create(c, "ds", 2, dims, bs, N5_DTYPE_UINT16, NULL));
    if (d == NULL) {
        n5_container_free(c);
        return;
    }
    /* one element short or long, odd byte counts, nothing */
    CHECK_ERR(n5_block_write(d, 2, pos, bs, N5_DTYPE_UINT16, buf, 6), N5_ERR_BUFFER_SIZE);
    CHECK_MSG_HAS("8");
    CHECK_ERR(n5_block_write(d, 2, pos, bs, N5_DTYPE_UINT16, buf, 10), N5_ERR_BUFFER_SIZE);
    CHECK_ERR(n5_block_write(d, 2, pos, bs, N5_DTYPE_UINT16, buf, 7), N5_ERR_BUFFER_SIZE);
    CHECK_ERR(n5_block_write(d, 2, pos, bs, N5_DTYPE_UINT16, buf, 0), N5_ERR_BUFFER_SIZE);
    CHECK_ERR(n5_block_write(d, 2, pos, bs, N5_DTYPE_UINT16, NULL, 0), N5_ERR_BUFFER_SIZE);
    CHECK_ERR(n5_block_write(d, 2, pos, bs, N5_DTYPE_UINT16, NULL, 8), N5_ERR_NULL_POINTER);
    CHECK_ERR(n5_block_read(d, 2, pos, N5_DTYPE_UINT16, back, 6, out_shape, &found),
              N5_ERR_BUFFER_SIZE);
    CHECK_ERR(n5_block_read(d, 2, pos, N5_DTYPE_UINT16, back, 10, out_shape, &found),
              N5_ERR_BUFFER_SIZE);
    CHECK_ERR(n5_block_read(d, 2, pos, N5_DTYPE_UINT16, back, 9, out_shape, &found),
              N5_ERR_BUFFER_SIZE);
    CHECK_ERR(n5_block_read(d, 2, pos, N5_DTYPE_UINT16, NULL, 0, out_shape, &found),
              N5_ERR_BUFFER_SIZE);
    CHECK_ERR(n5_block_read(d, 2, pos, N5_DTYPE_UINT16, NULL, 8, out_shape, &found),
              N5_ERR_NULL_POINTER);
    /* the edge block (2,0) is 1x2: a full-size buffer is one element... too many */
    CHECK_ERR(n5_block_read(d, 2, edge, N5_DTYPE_UINT16, back, 8, out_shape, &found),
              N5_ERR_BUFFER_SIZE);
    CHECK_OK(n5_block_read(d, 2, edge, N5_DTYPE_UINT16, back, 4, out_shape, &found));
    CHECK(out_shape[0] == 1 && out_shape[1] == 2 && found == 0);
    out_shape[0] = out_shape[1] = 77;
    found = 77;

    /* dtypes */
    CHECK_ERR(n5_block_write(d, 2, pos, bs, N5_DTYPE_INT16, buf, 8), N5_ERR_DTYPE_MISMATCH);
    CHECK_MSG_HAS("ds");
    CHECK_ERR(n5_block_write(d, 2, pos, bs, N5_DTYPE_UINT8, buf, 4), N5_ERR_DTYPE_MISMATCH);
    CHECK_ERR(n5_block_write(d, 2, pos, bs, N5_DTYPE_STRING, buf, 8), N5_ERR_DTYPE_MISMATCH);
    CHECK_ERR(n5_block_read(d, 2, pos, N5_DTYPE_FLOAT32, back, 16, out_shape, &found),
              N5_ERR_DTYPE_MISMATCH);
    CHECK_ERR(n5_block_read(d, 2, pos, N5_DTYPE_UINT32, back, 16, out_shape, &found),
              N5_ERR_DTYPE_MISMATCH);
    CHECK_ERR(n5_block_write(d, 2, pos, bs, 0, buf, 8), N5_ERR_INVALID_ARGUMENT);
    CHECK_ERR(n5_block_write(d, 2, pos, bs, 22, buf, 8), N5_ERR_INVALID_ARGUMENT);
    CHECK_ERR(n5_block_write(d, 2, pos, bs, -1, buf, 8), N5_ERR_INVALID_ARGUMENT);
    CHECK_ERR(n5_block_read(d, 2, pos, 0, back, 8, out_shape, &found), N5_ERR_INVALID_ARGUMENT);
    CHECK_ERR(n5_block_read(d, 2, pos, 99, back, 8, out_shape, &found), N5_ERR_INVALID_ARGUMENT);

    /* shapes: every extent from 1 to the block size */
    shape[0] = 0, shape[1] = 2;
    CHECK_ERR(n5_block_write(d, 2, pos, shape, N5_DTYPE_UINT16, buf, 0), N5_ERR_SHAPE_MISMATCH);
    shape[0] = 3, shape[1] = 1;
    CHECK_ERR(n5_block_write(d, 2, pos, shape, N5_DTYPE_UINT16, buf, 6), N5_ERR_SHAPE_MISMATCH);
    CHECK_MSG_HAS("blockSize");
    shape[0] = 2, shape[1] = 3;
    CHECK_ERR(n5_block_write(d, 2, pos, shape, N5_DTYPE_UINT16, buf, 12), N5_ERR_SHAPE_MISMATCH);
    CHECK_ERR(n5_block_write(d, 2, pos, NULL, N5_DTYPE_UINT16, buf, 8), N5_ERR_NULL_POINTER);
    CHECK_ERR(n5_block_write(d, 3, pos, bs, N5_DTYPE_UINT16, buf, 8), N5_ERR_SHAPE_MISMATCH);
    CHECK_ERR(n5_block_write(d, 1, pos, bs, N5_DTYPE_UINT16, buf, 8), N5_ERR_SHAPE_MISMATCH);
    CHECK_ERR(n5_block_write(d, 2, NULL, bs, N5_DTYPE_UINT16, buf, 8), N5_ERR_NULL_POINTER);
    CHECK_ERR(n5_block_read(d, 3, pos, N5_DTYPE_UINT16, back, 8, out_shape, &found),
              N5_ERR_SHAPE_MISMATCH);
    CHECK_ERR(n5_block_read(d, 2, NULL, N5_DTYPE_UINT16, back, 8, out_shape, &found),
              N5_ERR_NULL_POINTER);
    /* failures leave the scalar outputs alone and write nothing */
    CHECK(out_shape[0] == 77 && out_shape[1] == 77 && found == 77);
    CHECK_EQ(n5t_tree_count(n5t_join(root, "ds")), 1);

    /* a smaller shape is stored as given and zero-extended on read */
    shape[0] = 1, shape[1] = 2;
    CHECK_OK(n5_block_write(d, 2, pos, shape, N5_DTYPE_UINT16, buf, 4));
    memset(back, 0xab, sizeof back);
    CHECK_OK(n5_block_read(d, 2, pos, N5_DTYPE_UINT16, back, 8, out_shape, &found));
    CHECK(found == 1 && out_shape[0] == 2 && out_shape[1] == 2);
    CHECK(back[0] == 1 && back[1] == 0 && back[2] == 2 && back[3] == 0);
    /* a padded end block (full block size at the edge) is clipped */
    CHECK_OK(n5_block_write(d, 2, edge, bs, N5_DTYPE_UINT16, buf, 8));
    memset(back, 0xab, sizeof back);
    CHECK_OK(n5_block_read(d, 2, edge, N5_DTYPE_UINT16, back, 4, out_shape, &found));
    CHECK(found == 1 && out_shape[0] == 1 && out_shape[1] == 2);
    CHECK(back[0] == 1 && back[1] == 3);
    n5_dataset_free(d);
    n5_container_free(c);
}

static void test_unaligned_and_optional(void)
{
    n5_container *c = open_fresh(NULL);
    uint64_t dims[2] = {3, 3}, bs[2] = {3, 3};
    unsigned char *raw = malloc(9 * 8 + 1), *back_raw = malloc(9 * 8 + 1);
    unsigned char arrays[3 * 3 * 8 + 1];
    uint64_t *upos, *ushape, *uout;
    double expect[9];
    n5_dataset *d;
    size_t i;
    int32_t found = -1;
    if (c == NULL) {
        free(raw);
        free(back_raw);
        return;
    }
    for (i = 0; i < 9; i++)
        expect[i] = (double)i * 1.25 - 3.0;
    memcpy(raw + 1, expect, sizeof expect);
    /* per-dimension arrays at odd addresses too (the library reads them unaligned) */
    memset(arrays, 0, sizeof arrays);
    upos = (uint64_t *)(void *)(arrays + 1);
    ushape = (uint64_t *)(void *)(arrays + 1 + 16);
    uout = (uint64_t *)(void *)(arrays + 1 + 32);
    memcpy(arrays + 1 + 16, bs, sizeof bs);
    d = CHECK_HANDLE(n5_dataset_create(c, "f64", 2, dims, bs, N5_DTYPE_FLOAT64,
                                       "{\"type\":\"blosc\",\"shuffle\":1}"));
    if (d != NULL) {
        uint64_t got[2];
        CHECK_OK(n5_block_write(d, 2, upos, ushape, N5_DTYPE_FLOAT64, raw + 1, sizeof expect));
        memset(back_raw, 0, 9 * 8 + 1);
        CHECK_OK(n5_block_read(d, 2, upos, N5_DTYPE_FLOAT64, back_raw + 1, sizeof expect, uout,
                               &found));
        CHECK_EQ(found, 1);
        CHECK(memcmp(back_raw + 1, expect, sizeof expect) == 0);
        memcpy(got, arrays + 1 + 32, sizeof got);
        CHECK(got[0] == 3 && got[1] == 3);
        /* optional outputs NULL */
        memset(back_raw, 0, 9 * 8 + 1);
        CHECK_OK(n5_block_read(d, 2, upos, N5_DTYPE_FLOAT64, back_raw + 1, sizeof expect, NULL,
                               NULL));
        CHECK(memcmp(back_raw + 1, expect, sizeof expect) == 0);
        CHECK_OK(n5_block_shape(d, 2, upos, uout));
        n5_dataset_free(d);
    }
    free(raw);
    free(back_raw);
    n5_container_free(c);
}

static void test_corrupt_blocks(void)
{
    const char *root;
    n5_container *c = open_fresh(&root);
    uint64_t dims[2] = {4, 4}, bs[2] = {2, 2}, pos[2] = {1, 0}, region_off[2] = {0, 0};
    uint8_t buf[4] = {1, 2, 3, 4}, back[16];
    static const unsigned char garbage[] = "this is not an N5 block at all";
    static const unsigned char bad_payload[] = {0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 2,
                                                'n', 'o', 't', ' ', 'g', 'z'};
    static const unsigned char short_raw[] = {0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 2, 1, 2};
    static const unsigned char truncated[] = {0, 0, 0};
    n5_dataset *raw, *gz;
    int32_t found = 77, exists = 0, mode = 77;
    uint64_t n = 77;
    if (c == NULL)
        return;
    raw = CHECK_HANDLE(n5_dataset_create(c, "raw", 2, dims, bs, N5_DTYPE_UINT8, NULL));
    gz = CHECK_HANDLE(n5_dataset_create(c, "gz", 2, dims, bs, N5_DTYPE_UINT8,
                                        "{\"type\":\"gzip\"}"));
    if (raw == NULL || gz == NULL)
        goto out;
    CHECK_OK(n5_block_write(raw, 2, pos, bs, N5_DTYPE_UINT8, buf, 4));
    CHECK_OK(n5_block_write(gz, 2, pos, bs, N5_DTYPE_UINT8, buf, 4));

    /* garbage header */
    CHECK(n5t_write_file(n5t_join(root, "raw/1/0"), garbage, sizeof garbage) == 0);
    CHECK_OK(n5_block_exists(raw, 2, pos, &exists));
    CHECK_EQ(exists, 1);
    CHECK_ERR(n5_block_read(raw, 2, pos, N5_DTYPE_UINT8, back, 4, NULL, &found), N5_ERR_CODEC);
    CHECK_MSG_HAS("raw/1/0");
    CHECK_MSG_HAS("n5_block_read");
    CHECK_EQ(found, 77);
    CHECK_ERR(n5_block_info(raw, 2, pos, &mode, NULL, &n, &found), N5_ERR_CODEC);
    CHECK_MSG_HAS("raw/1/0");
    CHECK(mode == 77 && n == 77 && found == 77);
    CHECK_ERR(n5_region_read(raw, 2, region_off, dims, N5_DTYPE_UINT8, back, 16), N5_ERR_CODEC);
    CHECK_MSG_HAS("raw/1/0");
    /* a header without enough data */
    CHECK(n5t_write_file(n5t_join(root, "raw/1/0"), short_raw, sizeof short_raw) == 0);
    CHECK_ERR(n5_block_read(raw, 2, pos, N5_DTYPE_UINT8, back, 4, NULL, &found), N5_ERR_CODEC);
    CHECK_MSG_HAS("raw/1/0");
    /* a truncated header */
    CHECK(n5t_write_file(n5t_join(root, "raw/1/0"), truncated, sizeof truncated) == 0);
    CHECK_ERR(n5_block_read(raw, 2, pos, N5_DTYPE_UINT8, back, 4, NULL, &found), N5_ERR_CODEC);
    CHECK_ERR(n5_block_info(raw, 2, pos, &mode, NULL, &n, &found), N5_ERR_CODEC);
    /* an empty file */
    CHECK(n5t_write_file(n5t_join(root, "raw/1/0"), "", 0) == 0);
    CHECK_ERR(n5_block_read(raw, 2, pos, N5_DTYPE_UINT8, back, 4, NULL, &found), N5_ERR_CODEC);
    /* a valid header with a payload that is not gzip */
    CHECK(n5t_write_file(n5t_join(root, "gz/1/0"), bad_payload, sizeof bad_payload) == 0);
    CHECK_ERR(n5_block_read(gz, 2, pos, N5_DTYPE_UINT8, back, 4, NULL, &found), N5_ERR_CODEC);
    CHECK_MSG_HAS("gz/1/0");
    CHECK_OK(n5_block_info(gz, 2, pos, &mode, NULL, &n, &found));
    CHECK(mode == N5_BLOCK_MODE_DEFAULT && n == 4 && found == 1);
    /* a header extent above blockSize, a header of another rank, an object
       block in a numeric dataset, an element count no block can hold */
    {
        static const unsigned char too_big[] = {0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 2,
                                                1, 2, 3, 4, 5, 6};
        static const unsigned char rank3[] = {0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 2,
                                              0, 0, 0, 1, 1, 2, 3, 4};
        static const unsigned char object[] = {0, 2, 0, 0, 0, 4, 1, 2, 3, 4};
        static const unsigned char hostile[] = {0, 1, 0, 2, 0, 0, 0, 2, 0, 0, 0, 2,
                                                0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4};
        static const unsigned char trailing[] = {0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 2,
                                                 9, 8, 7, 6, 5, 4, 3};
        uint64_t shape[2] = {0, 0};
        CHECK(n5t_write_file(n5t_join(root, "raw/1/0"), too_big, sizeof too_big) == 0);
        CHECK_ERR(n5_block_read(raw, 2, pos, N5_DTYPE_UINT8, back, 4, NULL, NULL), N5_ERR_CODEC);
        CHECK_MSG_HAS("blockSize");
        CHECK_ERR(n5_block_read_varlength(raw, 2, pos, N5_DTYPE_UINT8, back, 16, &n, NULL, NULL),
                  N5_ERR_CODEC);
        /* the header itself is reported as stored */
        CHECK_OK(n5_block_info(raw, 2, pos, &mode, shape, &n, &found));
        CHECK(mode == N5_BLOCK_MODE_DEFAULT && shape[0] == 3 && shape[1] == 2 && n == 6);
        CHECK(n5t_write_file(n5t_join(root, "raw/1/0"), rank3, sizeof rank3) == 0);
        CHECK_ERR(n5_block_read(raw, 2, pos, N5_DTYPE_UINT8, back, 4, NULL, NULL), N5_ERR_CODEC);
        CHECK_MSG_HAS("dimensions");
        CHECK(n5t_write_file(n5t_join(root, "raw/1/0"), object, sizeof object) == 0);
        CHECK_ERR(n5_block_read(raw, 2, pos, N5_DTYPE_UINT8, back, 4, NULL, NULL), N5_ERR_CODEC);
        CHECK_ERR(n5_block_read_varlength(raw, 2, pos, N5_DTYPE_UINT8, NULL, 0, &n, NULL, NULL),
                  N5_ERR_CODEC);
        CHECK(n5t_write_file(n5t_join(root, "gz/1/0"), hostile, sizeof hostile) == 0);
        CHECK_ERR(n5_block_read_varlength(gz, 2, pos, N5_DTYPE_UINT8, NULL, 0, &n, NULL, NULL),
                  N5_ERR_CODEC);
        CHECK_ERR(n5_block_read(gz, 2, pos, N5_DTYPE_UINT8, back, 4, NULL, NULL), N5_ERR_CODEC);
        /* data beyond what the header announces is ignored */
        CHECK(n5t_write_file(n5t_join(root, "raw/1/0"), trailing, sizeof trailing) == 0);
        CHECK_OK(n5_block_read(raw, 2, pos, N5_DTYPE_UINT8, back, 4, NULL, &found));
        CHECK(found == 1 && back[0] == 9 && back[1] == 8 && back[2] == 7 && back[3] == 6);
    }
    /* the dataset goes on working: rewriting and deleting corrupt blocks */
    CHECK_OK(n5_block_write(gz, 2, pos, bs, N5_DTYPE_UINT8, buf, 4));
    CHECK_OK(n5_block_read(gz, 2, pos, N5_DTYPE_UINT8, back, 4, NULL, &found));
    CHECK(memcmp(back, buf, 4) == 0);
    CHECK_OK(n5_block_delete(raw, 2, pos));
    CHECK_OK(n5_region_read(raw, 2, region_off, dims, N5_DTYPE_UINT8, back, 16));
    CHECK(n5t_all_bytes(back, 16, 0));
out:
    n5_dataset_free(raw);
    n5_dataset_free(gz);
    n5_container_free(c);
}

int main(void)
{
    n5t_init("block");
    RUN(test_block_shape);
    RUN(test_round_trip_every_dtype);
    RUN(test_byte_order_on_disk);
    RUN(test_missing_exists_delete);
    RUN(test_buffer_and_shape_errors);
    RUN(test_unaligned_and_optional);
    RUN(test_corrupt_blocks);
    return n5t_finish();
}
