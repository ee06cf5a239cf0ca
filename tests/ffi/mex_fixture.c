/*
 * mex_fixture.c: writes the container that tests/ffi/test_mex.m reads
 * through the MEX function examples-matlab/n5_read_region_mex.c.
 *
 *   mex_fixture CONTAINER
 *
 * Datasets (N5 order), each written with n5_region_write:
 *   <dtype> for the ten numeric dtypes ("uint8" ... "float64"): [5, 4, 3],
 *       blocks [2, 3, 2], gzip; element L (N5 linear index, dimension 0
 *       fastest) is L + 1, -(L + 1) for the signed types and (L + 1) / 4
 *       for the floats: in MATLAB, reshape(1:60, [5 4 3]) and so on.
 *   big_uint64 [3]: 2^63 + L (beyond double precision).
 *   vector [10], blocks [4], uint16: 3 * L.
 *   sparse [6, 6] uint8, blocks [3, 3]: only block (1, 1) written, with 9s.
 *   strings [4], dtype string (not readable as an array).
 */
#include <n5.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define CHECK(ok)                                                                  \
    do {                                                                           \
        if (!(ok)) {                                                               \
            fprintf(stderr, "mex_fixture: line %d: %s: %s\n", __LINE__,            \
                    n5_status_name(n5_last_error_code()), n5_last_error_message()); \
            return 1;                                                              \
        }                                                                          \
    } while (0)

static int write_dataset(n5_container *c, const char *path, size_t ndim, const uint64_t *dims,
                         const uint64_t *block, n5_dtype dtype, const void *data)
{
    static const uint64_t zeros[3] = {0, 0, 0};
    size_t count = 1, i;
    n5_dataset *d;
    int ok;

    for (i = 0; i < ndim; i++)
        count *= (size_t)dims[i];
    CHECK(n5_remove(c, path) == N5_OK);
    d = n5_dataset_create(c, path, ndim, dims, block, dtype, "{\"type\":\"gzip\"}");
    CHECK(d != NULL);
    ok = n5_region_write(d, ndim, zeros, dims, dtype, data, count * n5_dtype_size(dtype)) ==
         N5_OK;
    n5_dataset_free(d);
    CHECK(ok);
    return 0;
}

int main(int argc, char **argv)
{
    static const uint64_t dims[3] = {5, 4, 3}, block[3] = {2, 3, 2};
    enum { N = 60 };
    uint8_t u8[N];
    uint16_t u16[N];
    uint32_t u32[N];
    uint64_t u64[N], big[3];
    int8_t i8[N];
    int16_t i16[N];
    int32_t i32[N];
    int64_t i64[N];
    float f32[N];
    double f64[N];
    uint16_t vector[10];
    uint8_t nines[9];
    int i;
    n5_container *c;
    n5_dataset *d;

    if (argc != 2) {
        fprintf(stderr, "usage: mex_fixture CONTAINER\n");
        return 2;
    }
    for (i = 0; i < N; i++) {
        u8[i] = (uint8_t)(i + 1);
        u16[i] = (uint16_t)(i + 1);
        u32[i] = (uint32_t)(i + 1);
        u64[i] = (uint64_t)(i + 1);
        i8[i] = (int8_t)-(i + 1);
        i16[i] = (int16_t)-(i + 1);
        i32[i] = -(i + 1);
        i64[i] = -(int64_t)(i + 1);
        f32[i] = (float)(i + 1) / 4;
        f64[i] = (double)(i + 1) / 4;
    }
    for (i = 0; i < 3; i++)
        big[i] = ((uint64_t)1 << 63) + (uint64_t)i;
    for (i = 0; i < 10; i++)
        vector[i] = (uint16_t)(3 * i);
    memset(nines, 9, sizeof nines);

    c = n5_container_open(argv[1], N5_MODE_CREATE, NULL);
    CHECK(c != NULL);
    if (write_dataset(c, "uint8", 3, dims, block, N5_DTYPE_UINT8, u8) ||
        write_dataset(c, "uint16", 3, dims, block, N5_DTYPE_UINT16, u16) ||
        write_dataset(c, "uint32", 3, dims, block, N5_DTYPE_UINT32, u32) ||
        write_dataset(c, "uint64", 3, dims, block, N5_DTYPE_UINT64, u64) ||
        write_dataset(c, "int8", 3, dims, block, N5_DTYPE_INT8, i8) ||
        write_dataset(c, "int16", 3, dims, block, N5_DTYPE_INT16, i16) ||
        write_dataset(c, "int32", 3, dims, block, N5_DTYPE_INT32, i32) ||
        write_dataset(c, "int64", 3, dims, block, N5_DTYPE_INT64, i64) ||
        write_dataset(c, "float32", 3, dims, block, N5_DTYPE_FLOAT32, f32) ||
        write_dataset(c, "float64", 3, dims, block, N5_DTYPE_FLOAT64, f64)) {
        n5_container_free(c);
        return 1;
    }
    {
        const uint64_t n3[1] = {3}, n10[1] = {10}, b4[1] = {4};
        if (write_dataset(c, "big_uint64", 1, n3, n3, N5_DTYPE_UINT64, big) ||
            write_dataset(c, "vector", 1, n10, b4, N5_DTYPE_UINT16, vector)) {
            n5_container_free(c);
            return 1;
        }
    }
    {
        const uint64_t sdims[2] = {6, 6}, sblock[2] = {3, 3}, pos[2] = {1, 1};
        const uint64_t n4[1] = {4}, b2[1] = {2};
        CHECK(n5_remove(c, "sparse") == N5_OK && n5_remove(c, "strings") == N5_OK);
        d = n5_dataset_create(c, "sparse", 2, sdims, sblock, N5_DTYPE_UINT8, NULL);
        CHECK(d != NULL);
        i = n5_block_write(d, 2, pos, sblock, N5_DTYPE_UINT8, nines, sizeof nines) == N5_OK;
        n5_dataset_free(d);
        CHECK(i);
        d = n5_dataset_create(c, "strings", 1, n4, b2, N5_DTYPE_STRING, NULL);
        CHECK(d != NULL);
        n5_dataset_free(d);
    }
    n5_container_free(c);
    printf("mex_fixture: wrote %s\n", argv[1]);
    return 0;
}
