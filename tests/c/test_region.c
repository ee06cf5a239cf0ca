/*
 * Regions: n5_region_write / n5_region_read across many blocks at unaligned
 * offsets, compared with a reference volume kept in memory (dimension 0
 * fastest), missing blocks, sub-regions and errors.
 */
#include "n5_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The reference volume: dims[0] fastest. */
struct volume {
    uint64_t dims[3];
    uint16_t *v;
};

static size_t at(const struct volume *vol, uint64_t x, uint64_t y, uint64_t z)
{
    return (size_t)(x + vol->dims[0] * (y + vol->dims[1] * z));
}

/* Copy a box of the reference into `buf` (box shape, dimension 0 fastest). */
static void extract(const struct volume *vol, const uint64_t *off, const uint64_t *shape,
                    uint16_t *buf)
{
    uint64_t x, y, z;
    size_t i = 0;
    for (z = 0; z < shape[2]; z++)
        for (y = 0; y < shape[1]; y++)
            for (x = 0; x < shape[0]; x++)
                buf[i++] = vol->v[at(vol, off[0] + x, off[1] + y, off[2] + z)];
}

static void insert(struct volume *vol, const uint64_t *off, const uint64_t *shape,
                   const uint16_t *buf)
{
    uint64_t x, y, z;
    size_t i = 0;
    for (z = 0; z < shape[2]; z++)
        for (y = 0; y < shape[1]; y++)
            for (x = 0; x < shape[0]; x++)
                vol->v[at(vol, off[0] + x, off[1] + y, off[2] + z)] = buf[i++];
}

static int read_matches(n5_dataset *d, const struct volume *vol, uint64_t ox, uint64_t oy,
                        uint64_t oz, uint64_t sx, uint64_t sy, uint64_t sz)
{
    uint64_t off[3], shape[3];
    size_t n = (size_t)(sx * sy * sz);
    uint16_t *got = malloc(n * 2 + 2), *want = malloc(n * 2 + 2);
    int ok;
    off[0] = ox, off[1] = oy, off[2] = oz;
    shape[0] = sx, shape[1] = sy, shape[2] = sz;
    memset(got, 0xab, n * 2);
    extract(vol, off, shape, want);
    ok = CHECK_OK(n5_region_read(d, 3, off, shape, N5_DTYPE_UINT16, got, n * 2));
    ok = ok && memcmp(got, want, n * 2) == 0;
    if (!ok)
        fprintf(stderr, "    region [%llu,%llu,%llu]+[%llu,%llu,%llu] differs\n",
                (unsigned long long)ox, (unsigned long long)oy, (unsigned long long)oz,
                (unsigned long long)sx, (unsigned long long)sy, (unsigned long long)sz);
    free(got);
    free(want);
    return ok;
}

static void write_box(n5_dataset *d, struct volume *vol, uint64_t ox, uint64_t oy, uint64_t oz,
                      uint64_t sx, uint64_t sy, uint64_t sz, unsigned seed)
{
    uint64_t off[3], shape[3];
    size_t n = (size_t)(sx * sy * sz), i;
    uint16_t *buf = malloc(n * 2 + 2);
    off[0] = ox, off[1] = oy, off[2] = oz;
    shape[0] = sx, shape[1] = sy, shape[2] = sz;
    for (i = 0; i < n; i++)
        buf[i] = (uint16_t)(1 + (i * 7 + seed * 1000) % 65000);
    if (CHECK_OK(n5_region_write(d, 3, off, shape, N5_DTYPE_UINT16, buf, n * 2)))
        insert(vol, off, shape, buf);
    free(buf);
}

static void test_volume(void)
{
    const char *root = n5t_fresh("region");
    n5_container *c = CHECK_HANDLE(n5_container_open(root, N5_MODE_CREATE, "{\"threads\":2}"));
    struct volume vol;
    uint64_t bs[3] = {8, 5, 4}, grid[3], pos[3];
    n5_dataset *d;
    int32_t exists;
    vol.dims[0] = 20, vol.dims[1] = 17, vol.dims[2] = 9;
    vol.v = calloc((size_t)(vol.dims[0] * vol.dims[1] * vol.dims[2]), 2);
    if (c == NULL) {
        free(vol.v);
        return;
    }
    d = CHECK_HANDLE(n5_dataset_create(c, "vol", 3, vol.dims, bs, N5_DTYPE_UINT16,
                                       "{\"type\":\"gzip\"}"));
    if (d == NULL)
        goto out;
    CHECK_OK(n5_dataset_grid_shape(d, 3, grid));
    CHECK(grid[0] == 3 && grid[1] == 4 && grid[2] == 3);

    /* nothing stored: all zeros */
    CHECK(read_matches(d, &vol, 0, 0, 0, 20, 17, 9));
    /* a region over many blocks at an unaligned offset */
    write_box(d, &vol, 3, 2, 1, 13, 11, 6, 1);
    CHECK(read_matches(d, &vol, 3, 2, 1, 13, 11, 6));
    CHECK(read_matches(d, &vol, 0, 0, 0, 20, 17, 9));
    /* sub-regions, single voxels, rows, the far corner */
    CHECK(read_matches(d, &vol, 5, 4, 3, 4, 4, 2));
    CHECK(read_matches(d, &vol, 7, 4, 3, 2, 2, 2));
    CHECK(read_matches(d, &vol, 3, 2, 1, 1, 1, 1));
    CHECK(read_matches(d, &vol, 15, 12, 6, 1, 1, 1));
    CHECK(read_matches(d, &vol, 0, 7, 4, 20, 1, 1));
    CHECK(read_matches(d, &vol, 19, 16, 8, 1, 1, 1));
    CHECK(read_matches(d, &vol, 10, 10, 5, 10, 7, 4));
    /* blocks the region did not touch are not stored and read as zeros */
    pos[0] = 0, pos[1] = 0, pos[2] = 2;
    CHECK_OK(n5_block_exists(d, 3, pos, &exists));
    CHECK_EQ(exists, 0);
    pos[0] = 2, pos[1] = 3, pos[2] = 0;
    CHECK_OK(n5_block_exists(d, 3, pos, &exists));
    CHECK_EQ(exists, 0);
    pos[0] = 0, pos[1] = 0, pos[2] = 0;
    CHECK_OK(n5_block_exists(d, 3, pos, &exists));
    CHECK_EQ(exists, 1);
    CHECK(read_matches(d, &vol, 0, 0, 8, 8, 5, 1));
    /* an overlapping write updates the blocks it covers in part */
    write_box(d, &vol, 6, 0, 0, 9, 6, 3, 2);
    CHECK(read_matches(d, &vol, 0, 0, 0, 20, 17, 9));
    /* the end of the dataset, where blocks are smaller */
    write_box(d, &vol, 15, 14, 7, 5, 3, 2, 3);
    CHECK(read_matches(d, &vol, 0, 0, 0, 20, 17, 9));
    CHECK(read_matches(d, &vol, 16, 15, 8, 4, 2, 1));
    /* whole blocks, aligned */
    write_box(d, &vol, 8, 5, 4, 8, 5, 4, 4);
    CHECK(read_matches(d, &vol, 0, 0, 0, 20, 17, 9));
    /* the blocks agree with the volume */
    {
        uint64_t bpos[3] = {1, 1, 1}, shape[3];
        uint16_t block[160], want[160];
        uint64_t boff[3] = {8, 5, 4};
        CHECK_OK(n5_block_read(d, 3, bpos, N5_DTYPE_UINT16, block, sizeof block, shape, NULL));
        extract(&vol, boff, bs, want);
        CHECK(memcmp(block, want, sizeof want) == 0);
    }
    /* a handle opened afterwards sees the same */
    {
        n5_dataset *d2 = CHECK_HANDLE(n5_dataset_open(c, "vol"));
        if (d2)
            CHECK(read_matches(d2, &vol, 0, 0, 0, 20, 17, 9));
        n5_dataset_free(d2);
    }
out:
    n5_dataset_free(d);
    n5_container_free(c);
    free(vol.v);
}

static void test_region_errors(void)
{
    const char *root = n5t_fresh("region_err");
    n5_container *c = CHECK_HANDLE(n5_container_open(root, N5_MODE_CREATE, NULL));
    uint64_t dims[3] = {10, 6, 4}, bs[3] = {4, 4, 4};
    uint64_t off[3] = {1, 1, 1}, shape[3] = {2, 3, 2}, big[3], o2[3];
    uint16_t buf[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, back[13];
    n5_dataset *d;
    if (c == NULL)
        return;
    d = CHECK_HANDLE(n5_dataset_create(c, "ds", 3, dims, bs, N5_DTYPE_UINT16, NULL));
    if (d == NULL) {
        n5_container_free(c);
        return;
    }
    /* out of bounds, naming the dimension; nothing written */
    o2[0] = 9, o2[1] = 0, o2[2] = 0;
    CHECK_ERR(n5_region_write(d, 3, o2, shape, N5_DTYPE_UINT16, buf, 24), N5_ERR_OUT_OF_BOUNDS);
    CHECK_MSG_HAS("dimension 0");
    o2[0] = 0, o2[1] = 4, o2[2] = 0;
    CHECK_ERR(n5_region_read(d, 3, o2, shape, N5_DTYPE_UINT16, back, 24), N5_ERR_OUT_OF_BOUNDS);
    CHECK_MSG_HAS("dimension 1");
    o2[0] = 0, o2[1] = 0, o2[2] = 3;
    CHECK_ERR(n5_region_read(d, 3, o2, shape, N5_DTYPE_UINT16, back, 24), N5_ERR_OUT_OF_BOUNDS);
    CHECK_MSG_HAS("dimension 2");
    o2[0] = UINT64_MAX, o2[1] = 0, o2[2] = 0;
    CHECK_ERR(n5_region_read(d, 3, o2, shape, N5_DTYPE_UINT16, back, 24), N5_ERR_OUT_OF_BOUNDS);
    CHECK_ERR(n5_region_write(d, 3, o2, shape, N5_DTYPE_UINT16, buf, 24), N5_ERR_OUT_OF_BOUNDS);
    big[0] = 11, big[1] = 1, big[2] = 1;
    o2[0] = 0, o2[1] = 0, o2[2] = 0;
    CHECK_ERR(n5_region_read(d, 3, o2, big, N5_DTYPE_UINT16, back, 22), N5_ERR_OUT_OF_BOUNDS);
    CHECK_EQ(n5t_tree_count(n5t_join(root, "ds")), 1);
    /* exactly up to the end is fine */
    big[0] = 10, big[1] = 1, big[2] = 1;
    CHECK_OK(n5_region_read(d, 3, o2, big, N5_DTYPE_UINT16, back, 20));
    /* buffer sizes: one element short or long, odd bytes */
    CHECK_ERR(n5_region_write(d, 3, off, shape, N5_DTYPE_UINT16, buf, 22), N5_ERR_BUFFER_SIZE);
    CHECK_ERR(n5_region_write(d, 3, off, shape, N5_DTYPE_UINT16, buf, 26), N5_ERR_BUFFER_SIZE);
    CHECK_ERR(n5_region_write(d, 3, off, shape, N5_DTYPE_UINT16, buf, 23), N5_ERR_BUFFER_SIZE);
    CHECK_ERR(n5_region_read(d, 3, off, shape, N5_DTYPE_UINT16, back, 22), N5_ERR_BUFFER_SIZE);
    CHECK_ERR(n5_region_read(d, 3, off, shape, N5_DTYPE_UINT16, back, 26), N5_ERR_BUFFER_SIZE);
    CHECK_ERR(n5_region_read(d, 3, off, shape, N5_DTYPE_UINT16, NULL, 0), N5_ERR_BUFFER_SIZE);
    CHECK_ERR(n5_region_read(d, 3, off, shape, N5_DTYPE_UINT16, NULL, 24), N5_ERR_NULL_POINTER);
    CHECK_ERR(n5_region_write(d, 3, off, shape, N5_DTYPE_UINT16, NULL, 24), N5_ERR_NULL_POINTER);
    /* dtypes, ranks, pointers */
    CHECK_ERR(n5_region_write(d, 3, off, shape, N5_DTYPE_INT16, buf, 24), N5_ERR_DTYPE_MISMATCH);
    CHECK_ERR(n5_region_read(d, 3, off, shape, N5_DTYPE_UINT8, back, 12), N5_ERR_DTYPE_MISMATCH);
    CHECK_ERR(n5_region_read(d, 3, off, shape, 0, back, 24), N5_ERR_INVALID_ARGUMENT);
    CHECK_ERR(n5_region_write(d, 3, off, shape, 22, buf, 24), N5_ERR_INVALID_ARGUMENT);
    CHECK_ERR(n5_region_read(d, 2, off, shape, N5_DTYPE_UINT16, back, 24), N5_ERR_SHAPE_MISMATCH);
    CHECK_ERR(n5_region_write(d, 4, off, shape, N5_DTYPE_UINT16, buf, 24), N5_ERR_SHAPE_MISMATCH);
    CHECK_ERR(n5_region_read(d, 3, NULL, shape, N5_DTYPE_UINT16, back, 24), N5_ERR_NULL_POINTER);
    CHECK_ERR(n5_region_read(d, 3, off, NULL, N5_DTYPE_UINT16, back, 24), N5_ERR_NULL_POINTER);
    CHECK_ERR(n5_region_write(d, 3, NULL, shape, N5_DTYPE_UINT16, buf, 24), N5_ERR_NULL_POINTER);
    CHECK_ERR(n5_region_write(d, 3, off, NULL, N5_DTYPE_UINT16, buf, 24), N5_ERR_NULL_POINTER);
    CHECK_EQ(n5t_tree_count(n5t_join(root, "ds")), 1);
    /* empty regions */
    shape[0] = 0;
    CHECK_OK(n5_region_read(d, 3, off, shape, N5_DTYPE_UINT16, NULL, 0));
    CHECK_OK(n5_region_write(d, 3, off, shape, N5_DTYPE_UINT16, NULL, 0));
    o2[0] = 10, o2[1] = 6, o2[2] = 4;
    big[0] = 0, big[1] = 0, big[2] = 0;
    CHECK_OK(n5_region_read(d, 3, o2, big, N5_DTYPE_UINT16, NULL, 0));
    CHECK_ERR(n5_region_read(d, 3, o2, shape, N5_DTYPE_UINT16, NULL, 0), N5_ERR_OUT_OF_BOUNDS);
    CHECK_EQ(n5t_tree_count(n5t_join(root, "ds")), 1);
    /* unaligned buffers */
    shape[0] = 2;
    {
        unsigned char *in = malloc(25), *out = malloc(25);
        memcpy(in + 1, buf, 24);
        CHECK_OK(n5_region_write(d, 3, off, shape, N5_DTYPE_UINT16, in + 1, 24));
        CHECK_OK(n5_region_read(d, 3, off, shape, N5_DTYPE_UINT16, out + 1, 24));
        CHECK(memcmp(out + 1, buf, 24) == 0);
        free(in);
        free(out);
    }
    n5_dataset_free(d);
    n5_container_free(c);
}

static void test_every_dtype(void)
{
    static const n5_dtype types[] = {
        N5_DTYPE_UINT8, N5_DTYPE_UINT16, N5_DTYPE_UINT32, N5_DTYPE_UINT64,  N5_DTYPE_INT8,
        N5_DTYPE_INT16, N5_DTYPE_INT32,  N5_DTYPE_INT64,  N5_DTYPE_FLOAT32, N5_DTYPE_FLOAT64,
    };
    const char *root = n5t_fresh("region_types");
    n5_container *c = CHECK_HANDLE(n5_container_open(root, N5_MODE_CREATE, "{\"threads\":1}"));
    uint64_t dims[2] = {7, 6}, bs[2] = {3, 4}, off[2] = {2, 1}, shape[2] = {5, 5};
    uint64_t zero[2] = {0, 0};
    size_t k;
    if (c == NULL)
        return;
    for (k = 0; k < sizeof types / sizeof types[0]; k++) {
        size_t es = n5_dtype_size(types[k]), n = 25, i;
        unsigned char *in = malloc(n * es), *out = malloc(dims[0] * dims[1] * es);
        char path[16];
        n5_dataset *d;
        snprintf(path, sizeof path, "t%d", (int)types[k]);
        d = CHECK_HANDLE(n5_dataset_create(c, path, 2, dims, bs, types[k],
                                           "{\"type\":\"blosc\",\"cname\":\"zstd\",\"shuffle\":2}"));
        if (d != NULL) {
            n5t_fill(in, n * es, (unsigned)k);
            CHECK_OK(n5_region_write(d, 2, off, shape, types[k], in, n * es));
            CHECK_OK(n5_region_read(d, 2, zero, dims, types[k], out, dims[0] * dims[1] * es));
            /* (x, y) of the region is (x + 2, y + 1) of the dataset */
            for (i = 0; i < n; i++) {
                size_t x = i % 5, y = i / 5;
                size_t j = (x + 2) + 7 * (y + 1);
                if (memcmp(in + i * es, out + j * es, es) != 0)
                    break;
            }
            CHECK_EQ(i, n);
            CHECK(n5t_all_bytes(out, 2 * es, 0)); /* (0,0), (1,0) untouched */
        }
        n5_dataset_free(d);
        free(in);
        free(out);
    }
    n5_container_free(c);
}

int main(void)
{
    n5t_init("region");
    RUN(test_volume);
    RUN(test_region_errors);
    RUN(test_every_dtype);
    return n5t_finish();
}
