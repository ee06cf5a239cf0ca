/*
 * Datasets: creation with every dtype and compression, the stored metadata,
 * opening, the metadata getters and n5_dataset_set_dimensions.
 */
#include "n5_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static n5_container *open_fresh(const char **root_out)
{
    const char *root = n5t_fresh("dataset");
    if (root_out)
        *root_out = root;
    return CHECK_HANDLE(n5_container_open(root, N5_MODE_CREATE, NULL));
}

/* A block round trip: write the first block with a pattern, read it back. */
static void round_trip(n5_dataset *d, n5_dtype t, size_t ndim, unsigned seed)
{
    uint64_t pos[8] = {0}, shape[8], out_shape[8];
    size_t bytes;
    unsigned char *buf, *back;
    int32_t found = -1;
    if (!CHECK_OK(n5_block_shape(d, ndim, pos, shape)))
        return;
    bytes = (size_t)n5t_prod(ndim, shape) * n5_dtype_size(t);
    buf = malloc(bytes);
    back = malloc(bytes);
    n5t_fill(buf, bytes, seed);
    CHECK_OK(n5_block_write(d, ndim, pos, shape, t, buf, bytes));
    CHECK_OK(n5_block_read(d, ndim, pos, t, back, bytes, out_shape, &found));
    CHECK_EQ(found, 1);
    CHECK(memcmp(buf, back, bytes) == 0);
    free(buf);
    free(back);
}

static void test_create_every_dtype(void)
{
    static const struct {
        n5_dtype t;
        const char *name;
    } types[] = {
        {N5_DTYPE_UINT8, "uint8"},     {N5_DTYPE_UINT16, "uint16"}, {N5_DTYPE_UINT32, "uint32"},
        {N5_DTYPE_UINT64, "uint64"},   {N5_DTYPE_INT8, "int8"},     {N5_DTYPE_INT16, "int16"},
        {N5_DTYPE_INT32, "int32"},     {N5_DTYPE_INT64, "int64"},   {N5_DTYPE_FLOAT32, "float32"},
        {N5_DTYPE_FLOAT64, "float64"}, {N5_DTYPE_STRING, "string"}, {N5_DTYPE_OBJECT, "object"},
    };
    n5_container *c = open_fresh(NULL);
    uint64_t dims[3] = {5, 4, 1}, bs[3] = {2, 3, 1}, out[3];
    size_t i, ndim;
    if (c == NULL)
        return;
    for (i = 0; i < sizeof types / sizeof types[0]; i++) {
        char path[64], expected[256];
        n5_dataset *d;
        n5_dtype t = 0;
        snprintf(path, sizeof path, "types/%s", types[i].name);
        d = CHECK_HANDLE(n5_dataset_create(c, path, 3, dims, bs, types[i].t, NULL));
        if (d == NULL)
            continue;
        CHECK_OK(n5_dataset_dtype(d, &t));
        CHECK_EQ(t, types[i].t);
        CHECK_OK(n5_dataset_ndim(d, &ndim));
        CHECK_EQ(ndim, 3);
        CHECK_OK(n5_dataset_dimensions(d, 3, out));
        CHECK(out[0] == 5 && out[1] == 4 && out[2] == 1);
        CHECK_OK(n5_dataset_block_size(d, 3, out));
        CHECK(out[0] == 2 && out[1] == 3 && out[2] == 1);
        CHECK_OK(n5_dataset_grid_shape(d, 3, out));
        CHECK(out[0] == 3 && out[1] == 2 && out[2] == 1);
        CHECK_TEXT(n5t_text_dataset_path, d, path);
        CHECK_TEXT(n5t_text_compression, d, "{\"type\":\"raw\"}");
        snprintf(expected, sizeof expected,
                 "{\"dimensions\":[5,4,1],\"blockSize\":[2,3,1],\"dataType\":\"%s\","
                 "\"compression\":{\"type\":\"raw\"}}",
                 types[i].name);
        CHECK_STR_FREE(n5t_attributes(c, path), expected);
        if (n5_dtype_size(types[i].t) > 0)
            round_trip(d, types[i].t, 3, (unsigned)i);
        n5_dataset_free(d);
        /* and it opens again, with the same metadata */
        d = CHECK_HANDLE(n5_dataset_open(c, path));
        CHECK_OK(n5_dataset_dtype(d, &t));
        CHECK_EQ(t, types[i].t);
        n5_dataset_free(d);
    }
    CHECK_STR_FREE(n5t_list(c, "types"),
                   "[\"float32\",\"float64\",\"int16\",\"int32\",\"int64\",\"int8\",\"object\","
                   "\"string\",\"uint16\",\"uint32\",\"uint64\",\"uint8\"]");
    n5_container_free(c);
}

static void test_compressions(void)
{
    static const struct {
        const char *given;
        const char *stored;
    } cases[] = {
        {NULL, "{\"type\":\"raw\"}"},
        {"{\"type\":\"raw\"}", "{\"type\":\"raw\"}"},
        {"{\"type\":\"gzip\"}", "{\"type\":\"gzip\",\"level\":6,\"useZlib\":false}"},
        {"{\"type\":\"gzip\",\"level\":-1}", "{\"type\":\"gzip\",\"level\":-1,\"useZlib\":false}"},
        {"{\"type\":\"gzip\",\"level\":9,\"useZlib\":true}",
         "{\"type\":\"gzip\",\"level\":9,\"useZlib\":true}"},
        {"{\"useZlib\":false,\"type\":\"gzip\",\"level\":0}",
         "{\"type\":\"gzip\",\"level\":0,\"useZlib\":false}"},
        {"{\"type\":\"zstd\"}", "{\"type\":\"zstd\",\"level\":3}"},
        {"{\"type\":\"zstd\",\"level\":19}", "{\"type\":\"zstd\",\"level\":19}"},
        {"{\"type\":\"zstd\",\"level\":-5,\"id\":\"zstd\"}", "{\"type\":\"zstd\",\"level\":-5}"},
        {"{\"type\":\"lz4\"}", "{\"type\":\"lz4\",\"blockSize\":65536}"},
        {"{\"type\":\"lz4\",\"blockSize\":1024}", "{\"type\":\"lz4\",\"blockSize\":1024}"},
        {"{\"type\":\"bzip2\"}", "{\"type\":\"bzip2\",\"blockSize\":9}"},
        {"{\"type\":\"bzip2\",\"blockSize\":1}", "{\"type\":\"bzip2\",\"blockSize\":1}"},
        {"{\"type\":\"xz\"}", "{\"type\":\"xz\",\"preset\":6}"},
        {"{\"type\":\"xz\",\"preset\":1}", "{\"type\":\"xz\",\"preset\":1}"},
        {"{\"type\":\"blosc\"}",
         "{\"type\":\"blosc\",\"cname\":\"blosclz\",\"clevel\":6,\"shuffle\":0,\"blocksize\":0}"},
        {"{\"type\":\"blosc\",\"cname\":\"lz4\",\"clevel\":5,\"shuffle\":1}",
         "{\"type\":\"blosc\",\"cname\":\"lz4\",\"clevel\":5,\"shuffle\":1,\"blocksize\":0}"},
        {"{\"type\":\"blosc\",\"cname\":\"zstd\",\"clevel\":3,\"shuffle\":2,\"nthreads\":4,"
         "\"typesize\":2}",
         "{\"type\":\"blosc\",\"cname\":\"zstd\",\"clevel\":3,\"shuffle\":2,\"blocksize\":0}"},
    };
    n5_container *c = open_fresh(NULL);
    uint64_t dims[2] = {40, 30}, bs[2] = {16, 16};
    size_t i;
    if (c == NULL)
        return;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[32];
        n5_dataset *d;
        snprintf(path, sizeof path, "c%zu", i);
        d = CHECK_HANDLE(n5_dataset_create(c, path, 2, dims, bs, N5_DTYPE_UINT16, cases[i].given));
        if (d == NULL) {
            fprintf(stderr, "    (compression %s)\n", cases[i].given);
            continue;
        }
        CHECK_TEXT(n5t_text_compression, d, cases[i].stored);
        CHECK_STR_FREE(n5t_attribute(c, path, "compression"), cases[i].stored);
        round_trip(d, N5_DTYPE_UINT16, 2, (unsigned)i + 100);
        n5_dataset_free(d);
        d = CHECK_HANDLE(n5_dataset_open(c, path));
        CHECK_TEXT(n5t_text_compression, d, cases[i].stored);
        round_trip(d, N5_DTYPE_UINT16, 2, (unsigned)i + 200);
        n5_dataset_free(d);
    }
    n5_container_free(c);
}

static void test_create_errors(void)
{
    const char *root;
    n5_container *c = open_fresh(&root);
    uint64_t dims[2] = {10, 10}, bs[2] = {4, 4}, zero_bs[2] = {4, 0};
    uint64_t big_bs[2] = {4, 4294967296ULL}, over_bs[2] = {1, 2147483648ULL};
    uint64_t huge_dims[2] = {UINT64_MAX, 1}, big_block[2] = {65536, 65536};
    uint64_t many[65];
    /* parameters a compressor refuses, and keys the type does not have */
    static const char *bad_compressions[] = {
        "{}",
        "{\"level\":5}",
        "{\"type\":7}",
        "{\"type\":\"gzip\",\"level\":\"high\"}",
        "{\"type\":\"gzip\",\"level\":42}",
        "{\"type\":\"gzip\",\"level\":-2}",
        "{\"type\":\"gzip\",\"useZlib\":1}",
        "{\"type\":\"bzip2\",\"blockSize\":0}",
        "{\"type\":\"bzip2\",\"blockSize\":10}",
        "{\"type\":\"xz\",\"preset\":10}",
        "{\"type\":\"zstd\",\"level\":23}",
        "{\"type\":\"blosc\",\"cname\":\"nope\"}",
        "{\"type\":\"blosc\",\"clevel\":10}",
        "{\"type\":\"blosc\",\"shuffle\":3}",
        "{\"type\":\"raw\",\"level\":1}",
        "{\"type\":\"zstd\",\"clevel\":3}",
    };
    char *before, *after;
    n5_dataset *d;
    size_t i;
    if (c == NULL)
        return;
    for (i = 0; i < 65; i++)
        many[i] = 1;
    d = CHECK_HANDLE(n5_dataset_create(c, "ds", 2, dims, bs, N5_DTYPE_UINT8, NULL));
    n5_dataset_free(d);

    before = n5t_tree_fingerprint(root);
    /* a dataset is already there: no overwrite */
    CHECK_NULL_ERR(n5_dataset_create(c, "ds", 2, dims, bs, N5_DTYPE_UINT8, NULL),
                   N5_ERR_ALREADY_EXISTS);
    CHECK_MSG_HAS("ds");
    CHECK_NULL_ERR(n5_dataset_create(c, "/ds/", 2, bs, bs, N5_DTYPE_FLOAT32,
                                     "{\"type\":\"gzip\"}"),
                   N5_ERR_ALREADY_EXISTS);
    /* shapes */
    CHECK_NULL_ERR(n5_dataset_create(c, "e0", 0, dims, bs, N5_DTYPE_UINT8, NULL),
                   N5_ERR_INVALID_ARGUMENT);
    CHECK_NULL_ERR(n5_dataset_create(c, "e1", 2, NULL, bs, N5_DTYPE_UINT8, NULL),
                   N5_ERR_NULL_POINTER);
    CHECK_MSG_HAS("dimensions");
    CHECK_NULL_ERR(n5_dataset_create(c, "e2", 2, dims, NULL, N5_DTYPE_UINT8, NULL),
                   N5_ERR_NULL_POINTER);
    CHECK_MSG_HAS("block_size");
    CHECK_NULL_ERR(n5_dataset_create(c, "e4", 2, dims, big_bs, N5_DTYPE_UINT8, NULL),
                   N5_ERR_INVALID_ARGUMENT);
    /* dtypes */
    CHECK_NULL_ERR(n5_dataset_create(c, "e5", 2, dims, bs, N5_DTYPE_INVALID, NULL),
                   N5_ERR_INVALID_ARGUMENT);
    CHECK_NULL_ERR(n5_dataset_create(c, "e6", 2, dims, bs, 22, NULL), N5_ERR_INVALID_ARGUMENT);
    /* a Zarr type on an N5 container: unsupported there */
    CHECK_NULL_ERR(n5_dataset_create(c, "e7", 2, dims, bs, N5_DTYPE_BOOL, NULL), N5_ERR_UNSUPPORTED);
    CHECK_NULL_ERR(n5_dataset_create(c, "e7", 2, dims, bs, -1, NULL), N5_ERR_INVALID_ARGUMENT);
    /* extents: zero, above 2^31-1, a dimension above 2^63-1; ranks 0 and 65 */
    CHECK_NULL_ERR(n5_dataset_create(c, "e14", 2, dims, zero_bs, N5_DTYPE_UINT8, NULL),
                   N5_ERR_INVALID_ARGUMENT);
    CHECK_MSG_HAS("blockSize");
    CHECK_NULL_ERR(n5_dataset_create(c, "e15", 2, dims, over_bs, N5_DTYPE_UINT8, NULL),
                   N5_ERR_INVALID_ARGUMENT);
    CHECK_NULL_ERR(n5_dataset_create(c, "e16", 2, huge_dims, bs, N5_DTYPE_UINT8, NULL),
                   N5_ERR_INVALID_ARGUMENT);
    CHECK_NULL_ERR(n5_dataset_create(c, "e17", 2, dims, big_block, N5_DTYPE_UINT8, NULL),
                   N5_ERR_INVALID_ARGUMENT);
    /* compression */
    CHECK_NULL_ERR(n5_dataset_create(c, "e8", 2, dims, bs, N5_DTYPE_UINT8, "{\"type\":\"snappy\"}"),
                   N5_ERR_UNSUPPORTED);
    CHECK_MSG_HAS("snappy");
    for (i = 0; i < sizeof bad_compressions / sizeof bad_compressions[0]; i++) {
        if (!CHECK_NULL_ERR(n5_dataset_create(c, "e18", 2, dims, bs, N5_DTYPE_UINT16,
                                              bad_compressions[i]),
                            N5_ERR_INVALID_ARGUMENT))
            fprintf(stderr, "    compression %s\n", bad_compressions[i]);
    }
    CHECK_NULL_ERR(n5_dataset_create(c, "e19", 2, dims, bs, N5_DTYPE_UINT8,
                                     "{\"type\":\"gzip\",\"lvl\":5}"),
                   N5_ERR_INVALID_ARGUMENT);
    CHECK_MSG_HAS("lvl");
    CHECK_NULL_ERR(n5_dataset_create(c, "e9", 2, dims, bs, N5_DTYPE_UINT8, "{\"type\":"),
                   N5_ERR_JSON);
    CHECK_NULL_ERR(n5_dataset_create(c, "e10", 2, dims, bs, N5_DTYPE_UINT8, "[\"gzip\"]"),
                   N5_ERR_JSON);
    CHECK_NULL_ERR(n5_dataset_create(c, "e11", 2, dims, bs, N5_DTYPE_UINT8, "\"gzip\""),
                   N5_ERR_JSON);
    CHECK_NULL_ERR(n5_dataset_create(c, "e12", 2, dims, bs, N5_DTYPE_UINT8, "{\"type\":\"\xff\"}"),
                   N5_ERR_INVALID_UTF8);
    /* paths */
    CHECK_NULL_ERR(n5_dataset_create(c, NULL, 2, dims, bs, N5_DTYPE_UINT8, NULL),
                   N5_ERR_NULL_POINTER);
    CHECK_NULL_ERR(n5_dataset_create(NULL, "e13", 2, dims, bs, N5_DTYPE_UINT8, NULL),
                   N5_ERR_NULL_POINTER);
    /* none of these created anything */
    after = n5t_tree_fingerprint(root);
    CHECK_STR(after, before);
    free(after);
    free(before);

    /* accepted limits: rank 64, block extent 2^31-1 for 1-byte elements */
    d = CHECK_HANDLE(n5_dataset_create(c, "rank64", 64, many, many, N5_DTYPE_UINT8, NULL));
    n5_dataset_free(d);
    over_bs[1] = 2147483647ULL;
    d = CHECK_HANDLE(n5_dataset_create(c, "bigblock", 2, dims, over_bs, N5_DTYPE_UINT8, NULL));
    n5_dataset_free(d);
    /* a zero dimension is an empty dataset */
    {
        uint64_t zdims[2] = {0, 5}, grid[2], pos[2] = {0, 0}, shape[2];
        d = CHECK_HANDLE(n5_dataset_create(c, "empty", 2, zdims, bs, N5_DTYPE_UINT8, NULL));
        CHECK_OK(n5_dataset_grid_shape(d, 2, grid));
        CHECK(grid[0] == 0 && grid[1] == 2);
        CHECK_ERR(n5_block_shape(d, 2, pos, shape), N5_ERR_OUT_OF_BOUNDS);
        n5_dataset_free(d);
    }
    n5_container_free(c);
}

static void test_create_on_group(void)
{
    const char *root;
    n5_container *c = open_fresh(&root);
    uint64_t dims[1] = {8}, bs[1] = {4};
    n5_dataset *d;
    int32_t flag;
    if (c == NULL)
        return;
    /* parents are created */
    d = CHECK_HANDLE(n5_dataset_create(c, "p/q/ds", 1, dims, bs, N5_DTYPE_INT64, NULL));
    n5_dataset_free(d);
    CHECK_OK(n5_exists(c, "p/q", &flag));
    CHECK_EQ(flag, 1);
    CHECK_OK(n5_dataset_exists(c, "p/q/ds", &flag));
    CHECK_EQ(flag, 1);
    CHECK_OK(n5_dataset_exists(c, "p/q", &flag));
    CHECK_EQ(flag, 0);
    /* user attributes of a group at the path are kept */
    CHECK_OK(n5_group_create(c, "grp/child"));
    CHECK_OK(n5_attributes_set(c, "grp", "{\"keep\":{\"me\":1},\"dataType\":\"junk\"}"));
    CHECK_OK(n5_attributes_set(c, "grp", "{\"compressionType\":\"gzip\"}"));
    d = CHECK_HANDLE(n5_dataset_create(c, "grp", 1, dims, bs, N5_DTYPE_UINT8, "{\"type\":\"xz\"}"));
    n5_dataset_free(d);
    CHECK_STR_FREE(n5t_attribute(c, "grp", "keep"), "{\"me\":1}");
    CHECK_STR_FREE(n5t_attribute(c, "grp", "dataType"), "\"uint8\"");
    CHECK_STR_FREE(n5t_attribute(c, "grp", "compression"), "{\"type\":\"xz\",\"preset\":6}");
    CHECK_STR_FREE(n5t_attribute(c, "grp", "dimensions"), "[8]");
    CHECK(n5t_exists(n5t_join(root, "grp/child")));
    /* a dataset at the root */
    {
        const char *root2 = n5t_fresh("rootds");
        n5_container *c2 = CHECK_HANDLE(n5_container_open(root2, N5_MODE_CREATE, NULL));
        d = CHECK_HANDLE(n5_dataset_create(c2, "", 1, dims, bs, N5_DTYPE_UINT8, NULL));
        CHECK_TEXT(n5t_text_dataset_path, d, "");
        n5_dataset_free(d);
        CHECK_OK(n5_dataset_exists(c2, "/", &flag));
        CHECK_EQ(flag, 1);
        CHECK_STR_FREE(n5t_attributes(c2, ""),
                       "{\"n5\":\"4.0.0\",\"dimensions\":[8],\"blockSize\":[4],"
                       "\"dataType\":\"uint8\",\"compression\":{\"type\":\"raw\"}}");
        d = CHECK_HANDLE(n5_dataset_open(c2, "."));
        CHECK_TEXT(n5t_text_dataset_path, d, "");
        n5_dataset_free(d);
        n5_container_free(c2);
    }
    n5_container_free(c);
}

static void write_attrs(const char *root, const char *path, const char *json)
{
    const char *dir = n5t_join(root, path);
    mkdir(dir, 0755);
    CHECK(n5t_write_file(n5t_join(dir, "attributes.json"), json, strlen(json)) == 0);
}

static void test_open(void)
{
    const char *root;
    n5_container *c = open_fresh(&root);
    uint64_t dims[2] = {6, 7}, bs[2] = {3, 3}, out[2];
    n5_dataset *d;
    if (c == NULL)
        return;
    d = CHECK_HANDLE(n5_dataset_create(c, "a/ds", 2, dims, bs, N5_DTYPE_FLOAT64, NULL));
    n5_dataset_free(d);
    CHECK_OK(n5_group_create(c, "grp"));

    /* spellings of the same path give the normalised path */
    d = CHECK_HANDLE(n5_dataset_open(c, "/a/ds"));
    CHECK_TEXT(n5t_text_dataset_path, d, "a/ds");
    n5_dataset_free(d);
    d = CHECK_HANDLE(n5_dataset_open(c, "a/x/../ds/"));
    CHECK_TEXT(n5t_text_dataset_path, d, "a/ds");
    CHECK_OK(n5_dataset_dimensions(d, 2, out));
    CHECK(out[0] == 6 && out[1] == 7);
    n5_dataset_free(d);

    /* groups and missing paths are not datasets */
    CHECK_NULL_ERR(n5_dataset_open(c, "grp"), N5_ERR_NOT_FOUND);
    CHECK_MSG_HAS("grp");
    CHECK_NULL_ERR(n5_dataset_open(c, "a"), N5_ERR_NOT_FOUND);
    CHECK_NULL_ERR(n5_dataset_open(c, ""), N5_ERR_NOT_FOUND);
    CHECK_NULL_ERR(n5_dataset_open(c, "missing"), N5_ERR_NOT_FOUND);
    CHECK_MSG_HAS("missing");
    CHECK_NULL_ERR(n5_dataset_open(c, "a/ds/0"), N5_ERR_NOT_FOUND);
    CHECK_NULL_ERR(n5_dataset_open(c, NULL), N5_ERR_NULL_POINTER);
    CHECK_NULL_ERR(n5_dataset_open(NULL, "a/ds"), N5_ERR_NULL_POINTER);

    /* metadata that cannot be read */
    write_attrs(root, "bad1",
                "{\"dimensions\":[4],\"blockSize\":[0],\"dataType\":\"uint8\","
                "\"compression\":{\"type\":\"raw\"}}");
    CHECK_NULL_ERR(n5_dataset_open(c, "bad1"), N5_ERR_INVALID_METADATA);
    CHECK_MSG_HAS("bad1");
    write_attrs(root, "bad2",
                "{\"dimensions\":[4],\"blockSize\":[2,2],\"dataType\":\"uint8\","
                "\"compression\":{\"type\":\"raw\"}}");
    CHECK_NULL_ERR(n5_dataset_open(c, "bad2"), N5_ERR_INVALID_METADATA);
    write_attrs(root, "bad3",
                "{\"dimensions\":[4],\"blockSize\":[2],\"dataType\":\"complex64\","
                "\"compression\":{\"type\":\"raw\"}}");
    CHECK_NULL_ERR(n5_dataset_open(c, "bad3"), N5_ERR_INVALID_METADATA);
    write_attrs(root, "bad4",
                "{\"dimensions\":[4],\"blockSize\":[2],\"dataType\":\"uint8\","
                "\"compression\":{\"type\":\"snappy\"}}");
    CHECK_NULL_ERR(n5_dataset_open(c, "bad4"), N5_ERR_UNSUPPORTED);
    write_attrs(root, "bad5",
                "{\"dimensions\":[4],\"blockSize\":[2],\"dataType\":\"uint8\","
                "\"compression\":{\"type\":\"raw\"},\"codecs\":[]}");
    d = n5_dataset_open(c, "bad5"); /* compression wins over codecs */
    CHECK(d != NULL);
    n5_dataset_free(d);
    write_attrs(root, "bad6",
                "{\"dimensions\":[4],\"blockSize\":[2],\"dataType\":\"uint8\",\"codecs\":[]}");
    CHECK_NULL_ERR(n5_dataset_open(c, "bad6"), N5_ERR_UNSUPPORTED);
    write_attrs(root, "bad7", "{\"dimensions\":[4],\"blockSize\":[2],\"dataType\":\"uint8\"");
    CHECK_NULL_ERR(n5_dataset_open(c, "bad7"), N5_ERR_JSON);
    write_attrs(root, "bad8",
                "{\"dimensions\":[-4],\"blockSize\":[2],\"dataType\":\"uint8\","
                "\"compression\":{\"type\":\"raw\"}}");
    CHECK_NULL_ERR(n5_dataset_open(c, "bad8"), N5_ERR_INVALID_METADATA);
    /* Java 1.x metadata */
    write_attrs(root, "legacy",
                "{\"dimensions\":[4],\"blockSize\":[2],\"dataType\":\"int8\","
                "\"compressionType\":\"gzip\"}");
    d = CHECK_HANDLE(n5_dataset_open(c, "legacy"));
    CHECK_TEXT(n5t_text_compression, d, "{\"type\":\"gzip\",\"level\":6,\"useZlib\":false}");
    n5_dataset_free(d);
    n5_container_free(c);
}

static void test_getters(void)
{
    n5_container *c = open_fresh(NULL);
    uint64_t dims[3] = {100, 20, 3}, bs[3] = {32, 20, 2}, out[4] = {7, 7, 7, 7};
    n5_dataset *d;
    size_t ndim = 99, len = 99;
    n5_dtype t = 99;
    if (c == NULL)
        return;
    d = CHECK_HANDLE(n5_dataset_create(c, "g/ds", 3, dims, bs, N5_DTYPE_INT32,
                                       "{\"type\":\"zstd\",\"level\":1}"));
    if (d == NULL) {
        n5_container_free(c);
        return;
    }
    CHECK_OK(n5_dataset_ndim(d, &ndim));
    CHECK_EQ(ndim, 3);
    CHECK_OK(n5_dataset_dtype(d, &t));
    CHECK_EQ(t, N5_DTYPE_INT32);
    CHECK_OK(n5_dataset_dimensions(d, 3, out));
    CHECK(out[0] == 100 && out[1] == 20 && out[2] == 3 && out[3] == 7);
    CHECK_OK(n5_dataset_block_size(d, 3, out));
    CHECK(out[0] == 32 && out[1] == 20 && out[2] == 2 && out[3] == 7);
    CHECK_OK(n5_dataset_grid_shape(d, 3, out));
    CHECK(out[0] == 4 && out[1] == 1 && out[2] == 2 && out[3] == 7);
    CHECK_TEXT(n5t_text_compression, d, "{\"type\":\"zstd\",\"level\":1}");
    CHECK_TEXT(n5t_text_dataset_path, d, "g/ds");

    /* wrong ndim: SHAPE_MISMATCH, output untouched */
    out[0] = out[1] = out[2] = out[3] = 7;
    CHECK_ERR(n5_dataset_dimensions(d, 2, out), N5_ERR_SHAPE_MISMATCH);
    CHECK_MSG_HAS("g/ds");
    CHECK_ERR(n5_dataset_dimensions(d, 4, out), N5_ERR_SHAPE_MISMATCH);
    CHECK_ERR(n5_dataset_dimensions(d, 0, out), N5_ERR_SHAPE_MISMATCH);
    CHECK_ERR(n5_dataset_block_size(d, 2, out), N5_ERR_SHAPE_MISMATCH);
    CHECK_ERR(n5_dataset_block_size(d, 65, out), N5_ERR_SHAPE_MISMATCH);
    CHECK_ERR(n5_dataset_grid_shape(d, 1, out), N5_ERR_SHAPE_MISMATCH);
    CHECK_ERR(n5_dataset_grid_shape(d, (size_t)-1, out), N5_ERR_SHAPE_MISMATCH);
    CHECK(out[0] == 7 && out[1] == 7 && out[2] == 7 && out[3] == 7);
    /* NULL outputs */
    CHECK_ERR(n5_dataset_ndim(d, NULL), N5_ERR_NULL_POINTER);
    CHECK_ERR(n5_dataset_dtype(d, NULL), N5_ERR_NULL_POINTER);
    CHECK_ERR(n5_dataset_dimensions(d, 3, NULL), N5_ERR_NULL_POINTER);
    CHECK_ERR(n5_dataset_block_size(d, 3, NULL), N5_ERR_NULL_POINTER);
    CHECK_ERR(n5_dataset_grid_shape(d, 3, NULL), N5_ERR_NULL_POINTER);
    /* NULL handles, outputs untouched */
    ndim = 99;
    t = 99;
    CHECK_ERR(n5_dataset_ndim(NULL, &ndim), N5_ERR_NULL_POINTER);
    CHECK_ERR(n5_dataset_dtype(NULL, &t), N5_ERR_NULL_POINTER);
    CHECK_ERR(n5_dataset_compression(NULL, NULL, 0, &len), N5_ERR_NULL_POINTER);
    CHECK_ERR(n5_dataset_path(NULL, NULL, 0, &len), N5_ERR_NULL_POINTER);
    CHECK(ndim == 99 && t == 99 && len == 99);
    n5_dataset_free(d);
    n5_container_free(c);
}

static void test_set_dimensions(void)
{
    n5_container *c = open_fresh(NULL);
    uint64_t dims[2] = {5, 5}, bs[2] = {2, 2}, out[2], pos[2] = {2, 2}, shape[2];
    uint64_t grow[2] = {9, 6}, shrink[2] = {1, 1}, three[3] = {1, 1, 1};
    uint8_t block[4] = {1, 2, 3, 4}, back[4];
    n5_dataset *d, *d2;
    int32_t found = -1;
    if (c == NULL)
        return;
    d = CHECK_HANDLE(n5_dataset_create(c, "ds", 2, dims, bs, N5_DTYPE_UINT8, NULL));
    d2 = CHECK_HANDLE(n5_dataset_open(c, "ds"));
    if (d == NULL || d2 == NULL)
        goto out;
    /* the end block (2,2) is 1x1 */
    CHECK_OK(n5_block_shape(d, 2, pos, shape));
    CHECK(shape[0] == 1 && shape[1] == 1);
    CHECK_OK(n5_block_write(d, 2, pos, shape, N5_DTYPE_UINT8, block, 1));

    /* grow */
    CHECK_OK(n5_dataset_set_dimensions(d, 2, grow));
    CHECK_OK(n5_dataset_dimensions(d, 2, out));
    CHECK(out[0] == 9 && out[1] == 6);
    CHECK_OK(n5_dataset_grid_shape(d, 2, out));
    CHECK(out[0] == 5 && out[1] == 3);
    CHECK_STR_FREE(n5t_attribute(c, "ds", "dimensions"), "[9,6]");
    /* the old end block is now full size: zero-extended */
    CHECK_OK(n5_block_shape(d, 2, pos, shape));
    CHECK(shape[0] == 2 && shape[1] == 2);
    memset(back, 0xee, sizeof back);
    CHECK_OK(n5_block_read(d, 2, pos, N5_DTYPE_UINT8, back, 4, out, &found));
    CHECK_EQ(found, 1);
    CHECK(back[0] == 1 && back[1] == 0 && back[2] == 0 && back[3] == 0);
    /* the other handle keeps its cached dimensions until reopened */
    CHECK_OK(n5_dataset_dimensions(d2, 2, out));
    CHECK(out[0] == 5 && out[1] == 5);
    n5_dataset_free(d2);
    d2 = CHECK_HANDLE(n5_dataset_open(c, "ds"));
    CHECK_OK(n5_dataset_dimensions(d2, 2, out));
    CHECK(out[0] == 9 && out[1] == 6);

    /* shrink: blocks outside stay stored and listed */
    CHECK_OK(n5_dataset_set_dimensions(d, 2, shrink));
    CHECK_OK(n5_dataset_grid_shape(d, 2, out));
    CHECK(out[0] == 1 && out[1] == 1);
    CHECK_ERR(n5_block_shape(d, 2, pos, shape), N5_ERR_OUT_OF_BOUNDS);
    CHECK_TEXT(n5t_text_block_list, d, "[[2,2]]");
    CHECK_OK(n5_dataset_set_dimensions(d, 2, dims));
    CHECK_OK(n5_block_read(d, 2, pos, N5_DTYPE_UINT8, back, 1, NULL, &found));
    CHECK(found == 1 && back[0] == 1);

    /* errors leave everything as it was */
    CHECK_ERR(n5_dataset_set_dimensions(d, 3, three), N5_ERR_SHAPE_MISMATCH);
    CHECK_ERR(n5_dataset_set_dimensions(d, 1, grow), N5_ERR_SHAPE_MISMATCH);
    CHECK_ERR(n5_dataset_set_dimensions(d, 0, grow), N5_ERR_SHAPE_MISMATCH);
    CHECK_ERR(n5_dataset_set_dimensions(d, 2, NULL), N5_ERR_NULL_POINTER);
    CHECK_ERR(n5_dataset_set_dimensions(NULL, 2, grow), N5_ERR_NULL_POINTER);
    {
        uint64_t huge[2] = {UINT64_MAX, 1};
        CHECK_ERR(n5_dataset_set_dimensions(d, 2, huge), N5_ERR_INVALID_ARGUMENT);
    }
    CHECK_OK(n5_dataset_dimensions(d, 2, out));
    CHECK(out[0] == 5 && out[1] == 5);
    CHECK_STR_FREE(n5t_attribute(c, "ds", "dimensions"), "[5,5]");
    /* zero extents are allowed (an empty dataset) */
    {
        uint64_t zero[2] = {0, 5};
        CHECK_OK(n5_dataset_set_dimensions(d, 2, zero));
        CHECK_OK(n5_dataset_grid_shape(d, 2, out));
        CHECK(out[0] == 0 && out[1] == 3);
        CHECK_OK(n5_dataset_set_dimensions(d, 2, dims));
    }
out:
    n5_dataset_free(d);
    n5_dataset_free(d2);
    n5_container_free(c);
}

/* A Zarr v3 array with shards made from its own zarr.json document: shapes
   in N5 order, the shard shape, region and block I/O with the fill value
   where nothing is stored, the metadata document, refused documents. */
static void test_zarr_sharded(void)
{
    const char *root = n5t_fresh("zarr3");
    const char *doc =
        "{\"shape\":[6,10],\"data_type\":\"uint16\","
        "\"chunk_grid\":{\"name\":\"regular\",\"configuration\":{\"chunk_shape\":[4,8]}},"
        "\"chunk_key_encoding\":{\"name\":\"default\"},\"fill_value\":7,"
        "\"codecs\":[{\"name\":\"sharding_indexed\",\"configuration\":{\"chunk_shape\":[2,4],"
        "\"codecs\":[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}},"
        "{\"name\":\"zstd\",\"configuration\":{\"level\":3,\"checksum\":false}}],"
        "\"index_codecs\":[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}},"
        "{\"name\":\"crc32c\"}],\"index_location\":\"end\"}}]}";
    uint64_t dims[2], bs[2], shard[2], off[2] = {0, 0}, shape[2] = {10, 4};
    uint64_t pos[2] = {2, 2}, bshape[2];
    uint16_t data[40], back[60], block[8];
    int32_t found = 9;
    size_t len = 0, i;
    char *text;
    n5_container *c;
    n5_dataset *d;

    c = CHECK_HANDLE(n5_container_open(root, N5_MODE_CREATE, "{\"format\":\"zarr3\"}"));
    if (c == NULL)
        return;
    d = CHECK_HANDLE(n5_dataset_create_json(c, "a/b", doc));
    if (d == NULL) {
        n5_container_free(c);
        return;
    }
    CHECK_OK(n5_dataset_dimensions(d, 2, dims));
    CHECK_EQ(dims[0], 10);
    CHECK_EQ(dims[1], 6);
    CHECK_OK(n5_dataset_block_size(d, 2, bs));
    CHECK_EQ(bs[0], 4);
    CHECK_EQ(bs[1], 2);
    CHECK_OK(n5_dataset_shard_shape(d, 2, shard));
    CHECK_EQ(shard[0], 8);
    CHECK_EQ(shard[1], 4);

    /* rows 0..4 written; rows 4..6 stay the fill value */
    for (i = 0; i < 40; i++)
        data[i] = (uint16_t)(1000 + i);
    CHECK_OK(n5_region_write(d, 2, off, shape, N5_DTYPE_UINT16, data, sizeof data));
    shape[1] = 6;
    CHECK_OK(n5_region_read(d, 2, off, shape, N5_DTYPE_UINT16, back, sizeof back));
    for (i = 0; i < 60; i++)
        CHECK_EQ(back[i], i < 40 ? 1000 + i : 7);
    /* block (2, 2): columns 8..10 of rows 4..6, never written */
    CHECK_OK(n5_block_read(d, 2, pos, N5_DTYPE_UINT16, block, 2 * 2 * sizeof(uint16_t),
                           bshape, &found));
    CHECK_EQ(found, 0);
    CHECK_EQ(bshape[0], 2);
    CHECK_EQ(block[0], 7);
    pos[1] = 0;
    CHECK_OK(n5_block_read(d, 2, pos, N5_DTYPE_UINT16, block, 2 * 2 * sizeof(uint16_t),
                           bshape, &found));
    CHECK_EQ(found, 1);
    CHECK_EQ(block[0], 1008);

    /* the document as stored */
    CHECK_OK(n5_dataset_metadata(d, NULL, 0, &len));
    text = malloc(len + 1);
    CHECK_OK(n5_dataset_metadata(d, text, len + 1, &len));
    CHECK(strstr(text, "\"sharding_indexed\"") != NULL);
    CHECK(strstr(text, "\"node_type\":\"array\"") != NULL);
    free(text);
    CHECK_ERR(n5_dataset_metadata(d, NULL, 4, &len), N5_ERR_NULL_POINTER);
    CHECK_ERR(n5_dataset_shard_shape(d, 3, shard), N5_ERR_SHAPE_MISMATCH);
    n5_dataset_free(d);

    /* refused documents write nothing */
    CHECK_NULL_ERR(n5_dataset_create_json(c, "x", "{\"shape\":[2]}"), N5_ERR_INVALID_METADATA);
    CHECK_NULL_ERR(n5_dataset_create_json(c, "x", "[1]"), N5_ERR_JSON);
    CHECK_NULL_ERR(n5_dataset_create_json(c, "x", NULL), N5_ERR_NULL_POINTER);
    CHECK_NULL_ERR(n5_dataset_create_json(NULL, "x", doc), N5_ERR_NULL_POINTER);
    CHECK_ERR(n5_dataset_exists(c, "x", &found), N5_OK);
    CHECK_EQ(found, 0);
    /* N5 blocks of other kinds do not exist in Zarr */
    d = n5_dataset_open(c, "a/b");
    CHECK_ERR(n5_block_write_varlength(d, 2, pos, bs, N5_DTYPE_UINT16, block, 2), N5_ERR_UNSUPPORTED);
    n5_dataset_free(d);
    n5_container_free(c);
}

int main(void)
{
    n5t_init("dataset");
    RUN(test_create_every_dtype);
    RUN(test_compressions);
    RUN(test_create_errors);
    RUN(test_create_on_group);
    RUN(test_open);
    RUN(test_getters);
    RUN(test_set_dimensions);
    RUN(test_zarr_sharded);
    return n5t_finish();
}
