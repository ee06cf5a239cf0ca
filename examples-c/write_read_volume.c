/*
 * write_read_volume.c: write a 3-D volume with libn5 and read part of it back.
 *
 * What it shows
 *   - creating a container (N5_MODE_CREATE) and a gzip-compressed uint16 dataset;
 *   - writing the whole volume with one n5_region_write call from a buffer in
 *     N5 order (dimension 0, x, varies fastest);
 *   - reopening the container read-only and reading an unaligned sub-region
 *     that straddles block boundaries with n5_region_read;
 *   - checking every status and printing n5_last_error_message() on failure.
 *
 * Usage
 *   write_read_volume [CONTAINER]        (default: example.n5; created if missing)
 * The program removes and re-creates the dataset "volume", so it can be re-run.
 * It exits with status 0 when every voxel read back is right, 1 otherwise.
 *
 * Build against an installed libn5
 *   cc -std=c99 -Wall write_read_volume.c $(pkg-config --cflags --libs n5) -o write_read_volume
 * (when libn5 is not in a folder the loader searches, add
 *  -Wl,-rpath,$(pkg-config --variable=libdir n5) or set LD_LIBRARY_PATH)
 * or from CMake:
 *   find_package(n5 CONFIG REQUIRED)
 *   add_executable(write_read_volume write_read_volume.c)
 *   target_link_libraries(write_read_volume PRIVATE n5::n5)
 * In the libn5 source tree, `ctest -L example` builds and runs all examples.
 *
 * Dimension order: libn5 uses N5's own order everywhere. Index 0 of every
 * dimensions/offset/shape array is the fastest-varying axis (here x), and a
 * buffer holds the voxel (x, y, z) at index x + nx * (y + ny * z). That is
 * column-major (Fortran, MATLAB, Julia) order. A C array declared as
 * vol[nz][ny][nx] has exactly this layout, so in C you list the shape
 * "backwards": {nx, ny, nz}.
 */
#include <n5.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The value stored at voxel (x, y, z): easy to recompute when checking. */
static uint16_t voxel_value(uint64_t x, uint64_t y, uint64_t z)
{
    return (uint16_t)(x + 7 * y + 131 * z);
}

/* Every n5_ function reports failure through its return value (a status, or
 * NULL for the openers). The details are kept per thread: the code with
 * n5_last_error_code() and a message naming the function and the path. */
static void report_error(void)
{
    fprintf(stderr, "error: %s: %s\n", n5_status_name(n5_last_error_code()),
            n5_last_error_message());
}

int main(int argc, char **argv)
{
    const char *root = argc > 1 ? argv[1] : "example.n5";
    /* Dimensions and block size in N5 order: x, y, z. */
    const uint64_t dims[3] = {256, 200, 64};
    const uint64_t block_size[3] = {64, 64, 32};
    const uint64_t origin[3] = {0, 0, 0};
    /* A region that starts and ends inside blocks. */
    const uint64_t offset[3] = {37, 51, 13};
    const uint64_t shape[3] = {100, 80, 20};

    int status = EXIT_FAILURE;
    n5_container *c = NULL;
    n5_dataset *d = NULL;
    uint16_t *volume = NULL, *region = NULL;
    size_t volume_len = (size_t)(dims[0] * dims[1] * dims[2]);
    size_t region_len = (size_t)(shape[0] * shape[1] * shape[2]);
    size_t mismatches = 0;
    uint64_t x, y, z;

    /* The header you compiled against should match the library you run with. */
    if (n5_version_number() != N5_VERSION_NUMBER)
        fprintf(stderr, "warning: n5.h is %s but the library is %s\n", N5_VERSION_STRING,
                n5_version_string());

    /* ---- write -------------------------------------------------------- */
    c = n5_container_open(root, N5_MODE_CREATE, NULL);
    if (c == NULL) {
        report_error();
        goto done;
    }
    /* Start afresh: n5_dataset_create refuses to overwrite an existing dataset
     * (N5_ERR_ALREADY_EXISTS). Removing a path that does not exist is not an
     * error. */
    if (n5_remove(c, "volume") != N5_OK) {
        report_error();
        goto done;
    }
    /* Compression is N5's JSON object, such as {"type":"gzip","level":6} or
     * {"type":"zstd"}; missing parameters get N5's defaults. NULL means raw. */
    d = n5_dataset_create(c, "volume", 3, dims, block_size, N5_DTYPE_UINT16,
                          "{\"type\":\"gzip\"}");
    if (d == NULL) {
        report_error();
        goto done;
    }

    volume = malloc(volume_len * sizeof *volume);
    region = malloc(region_len * sizeof *region);
    if (volume == NULL || region == NULL) {
        fprintf(stderr, "error: out of memory\n");
        goto done;
    }
    for (z = 0; z < dims[2]; z++)
        for (y = 0; y < dims[1]; y++)
            for (x = 0; x < dims[0]; x++)
                volume[x + dims[0] * (y + dims[1] * z)] = voxel_value(x, y, z);

    /* The buffer length is in bytes and must be exactly
     * prod(shape) * n5_dtype_size(dtype); the dtype must be the dataset's. */
    if (n5_region_write(d, 3, origin, dims, N5_DTYPE_UINT16, volume,
                        volume_len * sizeof *volume) != N5_OK) {
        report_error();
        goto done;
    }
    printf("wrote %s/volume: uint16 %llux%llux%llu in blocks of %llux%llux%llu (gzip)\n", root,
           (unsigned long long)dims[0], (unsigned long long)dims[1],
           (unsigned long long)dims[2], (unsigned long long)block_size[0],
           (unsigned long long)block_size[1], (unsigned long long)block_size[2]);

    /* Handles may be freed in any order; each is freed exactly once. */
    n5_dataset_free(d);
    n5_container_free(c);
    d = NULL;
    c = NULL;

    /* ---- read back, as a separate reader would ------------------------ */
    c = n5_container_open(root, N5_MODE_READ, NULL);
    if (c == NULL) {
        report_error();
        goto done;
    }
    d = n5_dataset_open(c, "volume");
    if (d == NULL) {
        report_error();
        goto done;
    }
    if (n5_region_read(d, 3, offset, shape, N5_DTYPE_UINT16, region,
                       region_len * sizeof *region) != N5_OK) {
        report_error();
        goto done;
    }

    /* Element (i, j, k) of the region is voxel (offset + (i, j, k)). */
    for (z = 0; z < shape[2]; z++)
        for (y = 0; y < shape[1]; y++)
            for (x = 0; x < shape[0]; x++) {
                uint16_t got = region[x + shape[0] * (y + shape[1] * z)];
                uint16_t want = voxel_value(offset[0] + x, offset[1] + y, offset[2] + z);
                if (got != want && mismatches++ < 10)
                    fprintf(stderr, "mismatch at (%llu, %llu, %llu): read %u, expected %u\n",
                            (unsigned long long)(offset[0] + x),
                            (unsigned long long)(offset[1] + y),
                            (unsigned long long)(offset[2] + z), (unsigned)got, (unsigned)want);
            }
    if (mismatches != 0) {
        fprintf(stderr, "FAILED: %zu of %zu voxels differ\n", mismatches, region_len);
        goto done;
    }
    printf("read region offset (%llu, %llu, %llu) shape (%llu, %llu, %llu): "
           "all %zu voxels match\n",
           (unsigned long long)offset[0], (unsigned long long)offset[1],
           (unsigned long long)offset[2], (unsigned long long)shape[0],
           (unsigned long long)shape[1], (unsigned long long)shape[2],
           region_len);
    status = EXIT_SUCCESS;

done:
    /* Freeing NULL is a no-op, and freeing never changes the last error. */
    n5_dataset_free(d);
    n5_container_free(c);
    free(volume);
    free(region);
    return status;
}
