/*
 * read_peer_dataset.c: read a whole dataset that another N5 implementation
 * wrote (tensorstore, z5py, zarr, Java N5, ...), whatever its type and rank.
 *
 * What it shows
 *   - opening a container read-only and a dataset in it;
 *   - finding a dataset's rank, dimensions and element type at run time and
 *     sizing the buffer from them (n5_dtype_size);
 *   - reading everything with one n5_region_read (blocks never written read
 *     as zeros; end blocks that peers pad or truncate are both handled);
 *   - element values arrive in the machine's byte order, not N5's big-endian.
 *
 * Usage
 *   read_peer_dataset CONTAINER DATASET [RAW_OUT]
 * Prints the dataset's metadata and the minimum, maximum and sum of its
 * elements. With RAW_OUT, also writes the array there as raw little-endian
 * elements in N5 order (dimension 0 fastest), the form whose sha256 the
 * peer corpus manifest records, so `sha256sum RAW_OUT` can be compared with
 * it (the libn5 tests do exactly that).
 *   read_peer_dataset /path/to/corpus/tensorstore.n5 dtype_gzip/uint16 out.raw
 *
 * Build against an installed libn5
 *   cc -std=c99 -Wall read_peer_dataset.c $(pkg-config --cflags --libs n5) -o read_peer_dataset
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

/* Element i of a buffer of dtype, as a double (for the summary only). */
static double element(const unsigned char *buf, n5_dtype dtype, size_t i)
{
    /* memcpy, because buf is not aligned for every type in general. */
#define AS(T)                                                                 \
    do {                                                                      \
        T v;                                                                  \
        memcpy(&v, buf + i * sizeof v, sizeof v);                             \
        return (double)v;                                                     \
    } while (0)
    switch (dtype) {
    case N5_DTYPE_UINT8: AS(uint8_t);
    case N5_DTYPE_UINT16: AS(uint16_t);
    case N5_DTYPE_UINT32: AS(uint32_t);
    case N5_DTYPE_UINT64: AS(uint64_t);
    case N5_DTYPE_INT8: AS(int8_t);
    case N5_DTYPE_INT16: AS(int16_t);
    case N5_DTYPE_INT32: AS(int32_t);
    case N5_DTYPE_INT64: AS(int64_t);
    case N5_DTYPE_FLOAT32: AS(float);
    case N5_DTYPE_FLOAT64: AS(double);
    default: return 0.0;
    }
#undef AS
}

/* Writes buf (count elements of size bytes each) to path as little-endian. */
static int write_little_endian(const char *path, unsigned char *buf, size_t count, size_t size)
{
    const uint16_t one = 1;
    int ok;
    FILE *f;

    if (*(const unsigned char *)&one != 1) { /* big-endian machine: swap */
        size_t i, j;
        for (i = 0; i < count; i++)
            for (j = 0; j < size / 2; j++) {
                unsigned char t = buf[i * size + j];
                buf[i * size + j] = buf[i * size + size - 1 - j];
                buf[i * size + size - 1 - j] = t;
            }
    }
    f = fopen(path, "wb");
    if (f == NULL) {
        perror(path);
        return 1;
    }
    ok = fwrite(buf, size, count, f) == count;
    ok = (fclose(f) == 0) && ok;
    if (!ok)
        perror(path);
    return !ok;
}

int main(int argc, char **argv)
{
    int status = EXIT_FAILURE;
    n5_container *c = NULL;
    n5_dataset *d = NULL;
    n5_dtype dtype = N5_DTYPE_INVALID;
    size_t ndim = 0, elem_size, count = 1, i;
    uint64_t *dims = NULL, *offset = NULL, *block = NULL;
    unsigned char *data = NULL;
    double min = 0, max = 0, sum = 0;

    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: %s CONTAINER DATASET [RAW_OUT]\n", argv[0]);
        return 2;
    }
    c = n5_container_open(argv[1], N5_MODE_READ, NULL);
    if (c == NULL) {
        report_error();
        goto done;
    }
    d = n5_dataset_open(c, argv[2]);
    if (d == NULL) {
        report_error();
        goto done;
    }

    /* Rank first: every per-dimension array holds ndim values. */
    if (n5_dataset_ndim(d, &ndim) != N5_OK || n5_dataset_dtype(d, &dtype) != N5_OK) {
        report_error();
        goto done;
    }
    elem_size = n5_dtype_size(dtype); /* 0 for string and object datasets */
    if (elem_size == 0) {
        fprintf(stderr, "error: %s holds %s elements; this program reads numeric data\n",
                argv[2], n5_dtype_name(dtype));
        goto done;
    }
    dims = malloc(ndim * sizeof *dims);
    block = malloc(ndim * sizeof *block);
    offset = calloc(ndim, sizeof *offset); /* read from the origin */
    if (dims == NULL || block == NULL || offset == NULL) {
        fprintf(stderr, "error: out of memory\n");
        goto done;
    }
    if (n5_dataset_dimensions(d, ndim, dims) != N5_OK ||
        n5_dataset_block_size(d, ndim, block) != N5_OK) {
        report_error();
        goto done;
    }
    printf("%s in %s: %s, %zu dimensions (N5 order):", argv[2], argv[1], n5_dtype_name(dtype),
           ndim);
    for (i = 0; i < ndim; i++) {
        /* Guard the buffer size against overflow before allocating. */
        if (dims[i] != 0 && count > SIZE_MAX / elem_size / dims[i]) {
            fprintf(stderr, "\nerror: the dataset is too large for memory\n");
            goto done;
        }
        count *= (size_t)dims[i];
        printf(" %llu", (unsigned long long)dims[i]);
    }
    printf(", blocks of");
    for (i = 0; i < ndim; i++)
        printf(" %llu", (unsigned long long)block[i]);
    printf("\n");

    data = malloc(count * elem_size + 1); /* + 1: malloc(0) may return NULL */
    if (data == NULL) {
        fprintf(stderr, "error: out of memory\n");
        goto done;
    }
    /* The whole dataset: offset 0, shape = dimensions. */
    if (n5_region_read(d, ndim, offset, dims, dtype, data, count * elem_size) != N5_OK) {
        report_error();
        goto done;
    }

    for (i = 0; i < count; i++) {
        double v = element(data, dtype, i);
        if (i == 0 || v < min)
            min = v;
        if (i == 0 || v > max)
            max = v;
        sum += v;
    }
    printf("elements: %zu, min %.17g, max %.17g, sum %.17g\n", count, min, max, sum);

    if (argc > 3) {
        if (write_little_endian(argv[3], data, count, elem_size) != 0)
            goto done;
        printf("wrote %zu bytes to %s\n", count * elem_size, argv[3]);
    }
    status = EXIT_SUCCESS;

done:
    free(data);
    free(dims);
    free(block);
    free(offset);
    n5_dataset_free(d);
    n5_container_free(c);
    return status;
}
