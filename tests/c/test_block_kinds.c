/*
 * Blocks other than plain numeric ones: varlength blocks, string blocks,
 * object blocks, and the block header (n5_block_info) and listing
 * (n5_block_list).
 */
#include "n5_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static n5_container *open_fresh(const char **root_out)
{
    const char *root = n5t_fresh("kinds");
    if (root_out)
        *root_out = root;
    return CHECK_HANDLE(n5_container_open(root, N5_MODE_CREATE, NULL));
}

static void test_varlength(void)
{
    n5_container *c = open_fresh(NULL);
    uint64_t dims[1] = {10}, bs[1] = {4}, p0[1] = {0}, p1[1] = {1}, p2[1] = {2}, oob[1] = {3};
    uint64_t shape[1], n, small[1] = {2}, zero_shape[1] = {0}, big_shape[1] = {5};
    uint32_t data[6] = {10, 20, 30, 40, 50, 60}, back[8];
    int32_t found, mode;
    n5_dataset *d;
    if (c == NULL)
        return;
    d = CHECK_HANDLE(n5_dataset_create(c, "u32", 1, dims, bs, N5_DTYPE_UINT32,
                                       "{\"type\":\"zstd\"}"));
    if (d == NULL) {
        n5_container_free(c);
        return;
    }
    /* six elements under a header shape of four: mode 1 */
    CHECK_OK(n5_block_write_varlength(d, 1, p0, bs, N5_DTYPE_UINT32, data, 24));
    CHECK_OK(n5_block_info(d, 1, p0, &mode, shape, &n, &found));
    CHECK(mode == N5_BLOCK_MODE_VARLENGTH && shape[0] == 4 && n == 6 && found == 1);

    /* size query: only the counts (and shape, found) */
    n = 0, shape[0] = 0, found = -1;
    CHECK_OK(n5_block_read_varlength(d, 1, p0, N5_DTYPE_UINT32, NULL, 0, &n, shape, &found));
    CHECK(n == 6 && shape[0] == 4 && found == 1);
    CHECK_ERR(n5_block_read_varlength(d, 1, p0, N5_DTYPE_UINT32, NULL, 0, NULL, shape, &found),
              N5_ERR_NULL_POINTER);
    CHECK_ERR(n5_block_read_varlength(d, 1, p0, N5_DTYPE_UINT32, NULL, 24, &n, shape, &found),
              N5_ERR_NULL_POINTER);
    /* exact capacity */
    memset(back, 0, sizeof back);
    n = 0, shape[0] = 0, found = -1;
    CHECK_OK(n5_block_read_varlength(d, 1, p0, N5_DTYPE_UINT32, back, 24, &n, shape, &found));
    CHECK(n == 6 && shape[0] == 4 && found == 1);
    CHECK(memcmp(back, data, 24) == 0);
    /* larger capacity, optional outputs NULL */
    memset(back, 0, sizeof back);
    CHECK_OK(n5_block_read_varlength(d, 1, p0, N5_DTYPE_UINT32, back, sizeof back, NULL, NULL,
                                     NULL));
    CHECK(memcmp(back, data, 24) == 0 && back[6] == 0);
    /* one byte short: BUFFER_TOO_SMALL with the count set, the rest untouched */
    n = 0, shape[0] = 99, found = 99;
    memset(back, 0x5a, sizeof back);
    CHECK_ERR(n5_block_read_varlength(d, 1, p0, N5_DTYPE_UINT32, back, 23, &n, shape, &found),
              N5_ERR_BUFFER_TOO_SMALL);
    CHECK_EQ(n, 6);
    CHECK(shape[0] == 99 && found == 99);
    CHECK(n5t_all_bytes(back, sizeof back, 0x5a));
    /* reading it as a full block takes the first prod(shape) elements */
    CHECK_OK(n5_block_read(d, 1, p0, N5_DTYPE_UINT32, back, 16, shape, &found));
    CHECK(memcmp(back, data, 16) == 0);

    /* as many elements as the shape holds: written in mode 0 */
    CHECK_OK(n5_block_write_varlength(d, 1, p1, bs, N5_DTYPE_UINT32, data, 16));
    CHECK_OK(n5_block_info(d, 1, p1, &mode, shape, &n, &found));
    CHECK(mode == N5_BLOCK_MODE_DEFAULT && shape[0] == 4 && n == 4 && found == 1);
    /* fewer: mode 1, and not readable as a full block */
    CHECK_OK(n5_block_write_varlength(d, 1, p1, bs, N5_DTYPE_UINT32, data, 8));
    CHECK_OK(n5_block_info(d, 1, p1, &mode, shape, &n, &found));
    CHECK(mode == N5_BLOCK_MODE_VARLENGTH && n == 2);
    CHECK_ERR(n5_block_read(d, 1, p1, N5_DTYPE_UINT32, back, 16, shape, &found), N5_ERR_CODEC);
    CHECK_MSG_HAS("u32/1");
    /* zero elements */
    CHECK_OK(n5_block_write_varlength(d, 1, p1, small, N5_DTYPE_UINT32, NULL, 0));
    n = 99;
    CHECK_OK(n5_block_read_varlength(d, 1, p1, N5_DTYPE_UINT32, NULL, 0, &n, shape, &found));
    CHECK(n == 0 && shape[0] == 2 && found == 1);
    /* mode 0 blocks read too */
    CHECK_OK(n5_block_write(d, 1, p1, bs, N5_DTYPE_UINT32, data, 16));
    CHECK_OK(n5_block_read_varlength(d, 1, p1, N5_DTYPE_UINT32, back, sizeof back, &n, shape,
                                     &found));
    CHECK(n == 4 && shape[0] == 4 && found == 1 && memcmp(back, data, 16) == 0);
    /* a missing block: found 0, no elements, the nominal shape (an end block here) */
    n = 99, found = 99;
    CHECK_OK(n5_block_read_varlength(d, 1, p2, N5_DTYPE_UINT32, back, sizeof back, &n, shape,
                                     &found));
    CHECK(n == 0 && found == 0 && shape[0] == 2);

    /* errors */
    CHECK_ERR(n5_block_write_varlength(d, 1, p0, bs, N5_DTYPE_UINT32, data, 7), N5_ERR_BUFFER_SIZE);
    CHECK_ERR(n5_block_write_varlength(d, 1, p0, zero_shape, N5_DTYPE_UINT32, data, 8),
              N5_ERR_SHAPE_MISMATCH);
    CHECK_ERR(n5_block_write_varlength(d, 1, p0, big_shape, N5_DTYPE_UINT32, data, 8),
              N5_ERR_SHAPE_MISMATCH);
    CHECK_ERR(n5_block_write_varlength(d, 1, oob, bs, N5_DTYPE_UINT32, data, 8),
              N5_ERR_OUT_OF_BOUNDS);
    CHECK_ERR(n5_block_write_varlength(d, 1, p0, bs, N5_DTYPE_INT32, data, 8),
              N5_ERR_DTYPE_MISMATCH);
    CHECK_ERR(n5_block_write_varlength(d, 1, p0, bs, 0, data, 8), N5_ERR_INVALID_ARGUMENT);
    CHECK_ERR(n5_block_write_varlength(d, 2, p0, bs, N5_DTYPE_UINT32, data, 8),
              N5_ERR_SHAPE_MISMATCH);
    CHECK_ERR(n5_block_write_varlength(d, 1, p0, NULL, N5_DTYPE_UINT32, data, 8),
              N5_ERR_NULL_POINTER);
    CHECK_ERR(n5_block_write_varlength(d, 1, p0, bs, N5_DTYPE_UINT32, NULL, 8),
              N5_ERR_NULL_POINTER);
    CHECK_ERR(n5_block_read_varlength(d, 1, oob, N5_DTYPE_UINT32, NULL, 0, &n, shape, &found),
              N5_ERR_OUT_OF_BOUNDS);
    CHECK_ERR(n5_block_read_varlength(d, 1, p0, N5_DTYPE_FLOAT32, NULL, 0, &n, shape, &found),
              N5_ERR_DTYPE_MISMATCH);
    CHECK_ERR(n5_block_read_varlength(d, 1, p0, 42, NULL, 0, &n, shape, &found),
              N5_ERR_INVALID_ARGUMENT);
    CHECK_ERR(n5_block_read_varlength(d, 0, p0, N5_DTYPE_UINT32, NULL, 0, &n, shape, &found),
              N5_ERR_SHAPE_MISMATCH);
    /* the block at 0 is still the six elements */
    CHECK_OK(n5_block_read_varlength(d, 1, p0, N5_DTYPE_UINT32, NULL, 0, &n, NULL, NULL));
    CHECK_EQ(n, 6);
    n5_dataset_free(d);
    n5_container_free(c);
}

static void test_strings(void)
{
    const char *root;
    n5_container *c = open_fresh(&root);
    uint64_t dims[2] = {3, 2}, bs[2] = {2, 2}, p0[2] = {0, 0}, p1[2] = {1, 0}, oob[2] = {0, 1};
    uint64_t shape[2], n, zero_shape[2] = {0, 1};
    static const char packed[] = "a\0bc\0\0\xc3\xbc\xe2\x82\xac"; /* "a", "bc", "", "ü€" */
    const size_t packed_len = sizeof packed;                         /* with the last NUL */
    char buf[64];
    size_t len, count;
    int32_t found, mode;
    n5_dataset *d, *num;
    if (c == NULL)
        return;
    d = CHECK_HANDLE(n5_dataset_create(c, "s", 2, dims, bs, N5_DTYPE_STRING,
                                       "{\"type\":\"gzip\"}"));
    num = CHECK_HANDLE(n5_dataset_create(c, "num", 2, dims, bs, N5_DTYPE_INT8, NULL));
    if (d == NULL || num == NULL)
        goto out;
    CHECK_EQ(packed_len, 12);

    CHECK_OK(n5_block_write_strings(d, 2, p0, bs, packed, packed_len));
    /* size query */
    len = 0, count = 0, found = -1, shape[0] = shape[1] = 0;
    CHECK_OK(n5_block_read_strings(d, 2, p0, NULL, 0, &len, &count, shape, &found));
    CHECK(len == packed_len && count == 4 && found == 1 && shape[0] == 2 && shape[1] == 2);
    CHECK_ERR(n5_block_read_strings(d, 2, p0, NULL, 0, NULL, &count, shape, &found),
              N5_ERR_NULL_POINTER);
    CHECK_ERR(n5_block_read_strings(d, 2, p0, NULL, 5, &len, &count, shape, &found),
              N5_ERR_NULL_POINTER);
    /* exact capacity */
    memset(buf, 'Z', sizeof buf);
    len = 0, count = 0;
    CHECK_OK(n5_block_read_strings(d, 2, p0, buf, packed_len, &len, &count, shape, &found));
    CHECK(len == packed_len && count == 4 && memcmp(buf, packed, packed_len) == 0);
    CHECK(buf[packed_len] == 'Z');
    /* optional outputs NULL */
    memset(buf, 'Z', sizeof buf);
    CHECK_OK(n5_block_read_strings(d, 2, p0, buf, sizeof buf, NULL, NULL, NULL, NULL));
    CHECK(memcmp(buf, packed, packed_len) == 0);
    /* one byte short */
    memset(buf, 0x5a, sizeof buf);
    len = 0, count = 99, found = 99;
    CHECK_ERR(n5_block_read_strings(d, 2, p0, buf, packed_len - 1, &len, &count, shape, &found),
              N5_ERR_BUFFER_TOO_SMALL);
    CHECK(len == packed_len && count == 99 && found == 99);
    CHECK(n5t_all_bytes(buf, sizeof buf, 0x5a));
    /* stored in mode 1, counting bytes */
    CHECK_OK(n5_block_info(d, 2, p0, &mode, shape, &n, &found));
    CHECK(mode == N5_BLOCK_MODE_VARLENGTH && n == packed_len && shape[0] == 2 && shape[1] == 2);

    /* an end block with a smaller header shape; empty strings; no strings */
    shape[0] = 1, shape[1] = 2;
    CHECK_OK(n5_block_write_strings(d, 2, p1, shape, "\0\0", 2));
    CHECK_OK(n5_block_read_strings(d, 2, p1, buf, sizeof buf, &len, &count, shape, &found));
    CHECK(len == 2 && count == 2 && buf[0] == 0 && buf[1] == 0);
    CHECK_OK(n5_block_write_strings(d, 2, p1, shape, NULL, 0));
    len = 99, count = 99;
    CHECK_OK(n5_block_read_strings(d, 2, p1, buf, sizeof buf, &len, &count, shape, &found));
    CHECK(len == 0 && count == 0 && found == 1);
    /* deleted: found 0, the nominal shape of the end block */
    CHECK_OK(n5_block_delete(d, 2, p1));
    len = 99, count = 99, found = 99, shape[0] = shape[1] = 0;
    CHECK_OK(n5_block_read_strings(d, 2, p1, buf, sizeof buf, &len, &count, shape, &found));
    CHECK(len == 0 && count == 0 && found == 0 && shape[0] == 1 && shape[1] == 2);

    /* errors */
    CHECK_ERR(n5_block_write_strings(d, 2, p0, bs, "ab", 2), N5_ERR_INVALID_ARGUMENT);
    CHECK_MSG_HAS("NUL");
    CHECK_ERR(n5_block_write_strings(d, 2, p0, bs, "a\0b", 3), N5_ERR_INVALID_ARGUMENT);
    CHECK_ERR(n5_block_write_strings(d, 2, p0, bs, "ok\0\xff\xfe", 6), N5_ERR_INVALID_UTF8);
    CHECK_MSG_HAS("1");
    CHECK_ERR(n5_block_write_strings(d, 2, p0, bs, "\xc3", 2), N5_ERR_INVALID_UTF8);
    CHECK_ERR(n5_block_write_strings(d, 2, p0, bs, NULL, 4), N5_ERR_NULL_POINTER);
    CHECK_ERR(n5_block_write_strings(d, 2, p0, zero_shape, "a", 2), N5_ERR_SHAPE_MISMATCH);
    CHECK_ERR(n5_block_write_strings(d, 2, oob, bs, "a", 2), N5_ERR_OUT_OF_BOUNDS);
    CHECK_ERR(n5_block_write_strings(d, 1, p0, bs, "a", 2), N5_ERR_SHAPE_MISMATCH);
    CHECK_ERR(n5_block_write_strings(d, 2, p0, NULL, "a", 2), N5_ERR_NULL_POINTER);
    CHECK_ERR(n5_block_read_strings(d, 2, oob, buf, sizeof buf, &len, &count, shape, &found),
              N5_ERR_OUT_OF_BOUNDS);
    /* not a string dataset, and string datasets through the numeric functions */
    CHECK_ERR(n5_block_write_strings(num, 2, p0, bs, "a", 2), N5_ERR_DTYPE_MISMATCH);
    CHECK_MSG_HAS("num");
    CHECK_ERR(n5_block_read_strings(num, 2, p0, buf, sizeof buf, &len, &count, shape, &found),
              N5_ERR_DTYPE_MISMATCH);
    CHECK_ERR(n5_block_read(d, 2, p0, N5_DTYPE_STRING, buf, 4, shape, &found),
              N5_ERR_DTYPE_MISMATCH);
    CHECK_ERR(n5_block_write(d, 2, p0, bs, N5_DTYPE_STRING, buf, 4), N5_ERR_DTYPE_MISMATCH);
    CHECK_ERR(n5_block_write_varlength(d, 2, p0, bs, N5_DTYPE_STRING, buf, 4),
              N5_ERR_DTYPE_MISMATCH);
    CHECK_ERR(n5_block_write(d, 2, p0, bs, N5_DTYPE_UINT8, buf, 4), N5_ERR_DTYPE_MISMATCH);
    CHECK_ERR(n5_region_read(d, 2, p0, bs, N5_DTYPE_STRING, buf, 4), N5_ERR_DTYPE_MISMATCH);
    CHECK_ERR(n5_region_write(d, 2, p0, bs, N5_DTYPE_STRING, buf, 4), N5_ERR_DTYPE_MISMATCH);
    /* the first block is unchanged */
    CHECK_OK(n5_block_read_strings(d, 2, p0, buf, sizeof buf, &len, &count, NULL, NULL));
    CHECK(len == packed_len && count == 4 && memcmp(buf, packed, packed_len) == 0);
out:
    n5_dataset_free(d);
    n5_dataset_free(num);
    n5_container_free(c);
}

static void test_objects(void)
{
    n5_container *c = open_fresh(NULL);
    uint64_t dims[1] = {3}, bs[1] = {1}, p0[1] = {0}, p1[1] = {1}, p2[1] = {2}, oob[1] = {3};
    uint64_t shape[1], n;
    static const unsigned char bytes[9] = {0, 1, 'b', 'i', 'n', 'a', 'r', 'y', 0xff};
    unsigned char buf[32];
    size_t len;
    int32_t found, mode;
    n5_dataset *d, *num;
    if (c == NULL)
        return;
    d = CHECK_HANDLE(n5_dataset_create(c, "o", 1, dims, bs, N5_DTYPE_OBJECT,
                                       "{\"type\":\"bzip2\"}"));
    num = CHECK_HANDLE(n5_dataset_create(c, "num", 1, dims, bs, N5_DTYPE_UINT8, NULL));
    if (d == NULL || num == NULL)
        goto out;
    CHECK_OK(n5_block_write_object(d, 1, p0, bytes, sizeof bytes));
    /* size query */
    len = 0, found = -1;
    CHECK_OK(n5_block_read_object(d, 1, p0, NULL, 0, &len, &found));
    CHECK(len == 9 && found == 1);
    CHECK_ERR(n5_block_read_object(d, 1, p0, NULL, 0, NULL, &found), N5_ERR_NULL_POINTER);
    CHECK_ERR(n5_block_read_object(d, 1, p0, NULL, 9, &len, &found), N5_ERR_NULL_POINTER);
    /* exact capacity (no NUL is added) */
    memset(buf, 'Z', sizeof buf);
    len = 0, found = -1;
    CHECK_OK(n5_block_read_object(d, 1, p0, buf, 9, &len, &found));
    CHECK(len == 9 && found == 1 && memcmp(buf, bytes, 9) == 0 && buf[9] == 'Z');
    /* optional outputs NULL */
    memset(buf, 0, sizeof buf);
    CHECK_OK(n5_block_read_object(d, 1, p0, buf, sizeof buf, NULL, NULL));
    CHECK(memcmp(buf, bytes, 9) == 0);
    /* one byte short */
    memset(buf, 0x5a, sizeof buf);
    len = 0, found = 99;
    CHECK_ERR(n5_block_read_object(d, 1, p0, buf, 8, &len, &found), N5_ERR_BUFFER_TOO_SMALL);
    CHECK(len == 9 && found == 99 && n5t_all_bytes(buf, sizeof buf, 0x5a));
    /* header: mode 2, no shape */
    shape[0] = 7;
    CHECK_OK(n5_block_info(d, 1, p0, &mode, shape, &n, &found));
    CHECK(mode == N5_BLOCK_MODE_OBJECT && shape[0] == 0 && n == 9 && found == 1);
    /* empty objects */
    CHECK_OK(n5_block_write_object(d, 1, p1, NULL, 0));
    len = 99, found = -1;
    CHECK_OK(n5_block_read_object(d, 1, p1, NULL, 0, &len, &found));
    CHECK(len == 0 && found == 1);
    /* missing */
    len = 99, found = -1;
    CHECK_OK(n5_block_read_object(d, 1, p2, buf, sizeof buf, &len, &found));
    CHECK(len == 0 && found == 0);
    /* errors */
    CHECK_ERR(n5_block_write_object(d, 1, oob, bytes, 9), N5_ERR_OUT_OF_BOUNDS);
    CHECK_ERR(n5_block_write_object(d, 1, p0, NULL, 9), N5_ERR_NULL_POINTER);
    CHECK_ERR(n5_block_write_object(d, 2, p0, bytes, 9), N5_ERR_SHAPE_MISMATCH);
    CHECK_ERR(n5_block_write_object(d, 1, NULL, bytes, 9), N5_ERR_NULL_POINTER);
    CHECK_ERR(n5_block_read_object(d, 1, oob, buf, sizeof buf, &len, &found),
              N5_ERR_OUT_OF_BOUNDS);
    CHECK_ERR(n5_block_write_object(num, 1, p0, bytes, 9), N5_ERR_DTYPE_MISMATCH);
    CHECK_ERR(n5_block_read_object(num, 1, p0, buf, sizeof buf, &len, &found),
              N5_ERR_DTYPE_MISMATCH);
    CHECK_ERR(n5_block_read(d, 1, p0, N5_DTYPE_OBJECT, buf, 1, NULL, NULL), N5_ERR_DTYPE_MISMATCH);
    CHECK_ERR(n5_block_write(d, 1, p0, bs, N5_DTYPE_OBJECT, buf, 1), N5_ERR_DTYPE_MISMATCH);
    CHECK_ERR(n5_block_write_strings(d, 1, p0, bs, "a", 2), N5_ERR_DTYPE_MISMATCH);
    CHECK_OK(n5_block_read_object(d, 1, p0, buf, sizeof buf, &len, &found));
    CHECK(len == 9 && memcmp(buf, bytes, 9) == 0);
out:
    n5_dataset_free(d);
    n5_dataset_free(num);
    n5_container_free(c);
}

static void test_block_info(void)
{
    n5_container *c = open_fresh(NULL);
    uint64_t dims[3] = {5, 5, 5}, bs[3] = {2, 2, 2}, p[3] = {2, 1, 0}, miss[3] = {0, 0, 0};
    uint64_t oob[3] = {0, 3, 0}, shape[3], n;
    int16_t data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    int32_t mode, found;
    n5_dataset *d;
    if (c == NULL)
        return;
    d = CHECK_HANDLE(n5_dataset_create(c, "i16", 3, dims, bs, N5_DTYPE_INT16,
                                       "{\"type\":\"lz4\"}"));
    if (d == NULL) {
        n5_container_free(c);
        return;
    }
    /* an end block written at its nominal shape 1x2x2 */
    shape[0] = 1, shape[1] = 2, shape[2] = 2;
    CHECK_OK(n5_block_write(d, 3, p, shape, N5_DTYPE_INT16, data, 8));
    shape[0] = shape[1] = shape[2] = 0;
    mode = -1, n = 0, found = -1;
    CHECK_OK(n5_block_info(d, 3, p, &mode, shape, &n, &found));
    CHECK(mode == N5_BLOCK_MODE_DEFAULT && found == 1 && n == 4);
    CHECK(shape[0] == 1 && shape[1] == 2 && shape[2] == 2);
    /* every output may be NULL */
    CHECK_OK(n5_block_info(d, 3, p, NULL, NULL, NULL, NULL));
    found = -1;
    CHECK_OK(n5_block_info(d, 3, p, NULL, NULL, NULL, &found));
    CHECK_EQ(found, 1);
    /* not stored: found 0, the other outputs untouched */
    mode = 77, n = 77, found = 77, shape[0] = shape[1] = shape[2] = 77;
    CHECK_OK(n5_block_info(d, 3, miss, &mode, shape, &n, &found));
    CHECK(found == 0 && mode == 77 && n == 77 && shape[0] == 77 && shape[1] == 77 &&
          shape[2] == 77);
    /* errors */
    found = 77;
    CHECK_ERR(n5_block_info(d, 3, oob, &mode, shape, &n, &found), N5_ERR_OUT_OF_BOUNDS);
    CHECK_MSG_HAS("dimension 1");
    CHECK_ERR(n5_block_info(d, 2, p, &mode, shape, &n, &found), N5_ERR_SHAPE_MISMATCH);
    CHECK_ERR(n5_block_info(d, 3, NULL, &mode, shape, &n, &found), N5_ERR_NULL_POINTER);
    CHECK_ERR(n5_block_info(NULL, 3, p, &mode, shape, &n, &found), N5_ERR_NULL_POINTER);
    CHECK(found == 77 && mode == 77);
    n5_dataset_free(d);
    n5_container_free(c);
}

static void test_block_list(void)
{
    const char *root;
    n5_container *c = open_fresh(&root);
    uint64_t dims[2] = {40, 40}, bs[2] = {2, 2};
    static const uint64_t where[][2] = {{10, 1}, {2, 0}, {1, 15}, {10, 0}, {0, 0}};
    uint8_t data[4] = {0};
    size_t i;
    n5_dataset *d, *d1;
    size_t len = 88;
    if (c == NULL)
        return;
    d = CHECK_HANDLE(n5_dataset_create(c, "ds", 2, dims, bs, N5_DTYPE_UINT8, NULL));
    d1 = CHECK_HANDLE(n5_dataset_create(c, "one", 1, dims, bs, N5_DTYPE_UINT8, NULL));
    if (d == NULL || d1 == NULL)
        goto out;
    CHECK_TEXT(n5t_text_block_list, d, "[]");
    for (i = 0; i < sizeof where / sizeof where[0]; i++)
        CHECK_OK(n5_block_write(d, 2, where[i], bs, N5_DTYPE_UINT8, data, 4));
    /* numeric order, dimension 0 first */
    CHECK_TEXT(n5t_text_block_list, d, "[[0,0],[1,15],[2,0],[10,0],[10,1]]");
    /* entries that are not blocks are ignored */
    CHECK(n5t_write_file(n5t_join(root, "ds/notes.txt"), "x", 1) == 0);
    CHECK(n5t_write_file(n5t_join(root, "ds/2/x"), "x", 1) == 0);
    CHECK(n5t_write_file(n5t_join(root, "ds/2/01"), "x", 1) == 0);
    CHECK(n5t_write_file(n5t_join(root, "ds/0/.n5tmp.0.1.2"), "x", 1) == 0);
    CHECK_TEXT(n5t_text_block_list, d, "[[0,0],[1,15],[2,0],[10,0],[10,1]]");
    CHECK_OK(n5_block_delete(d, 2, where[0]));
    CHECK_TEXT(n5t_text_block_list, d, "[[0,0],[1,15],[2,0],[10,0]]");
    /* one dimension */
    CHECK_OK(n5_block_write(d1, 1, where[1], bs, N5_DTYPE_UINT8, data, 2));
    CHECK_OK(n5_block_write(d1, 1, where[3], bs, N5_DTYPE_UINT8, data, 2));
    CHECK_TEXT(n5t_text_block_list, d1, "[[2],[10]]");
    CHECK_ERR(n5_block_list(NULL, NULL, 0, &len), N5_ERR_NULL_POINTER);
    CHECK_EQ(len, 88);
out:
    n5_dataset_free(d);
    n5_dataset_free(d1);
    n5_container_free(c);
}

int main(void)
{
    n5t_init("block_kinds");
    RUN(test_varlength);
    RUN(test_strings);
    RUN(test_objects);
    RUN(test_block_info);
    RUN(test_block_list);
    return n5t_finish();
}
