/*
 * A program that uses an installed libn5: it checks that the library it runs
 * with is the one its header belongs to, creates a container in the directory
 * given as its argument, writes one block per dataset (gzip and blosc, so the
 * bundled C codecs are linked) and reads it back.
 *
 * Built by the packaging tests through find_package(n5) (tests/consumer-cmake)
 * and through pkg-config (tests/consumer-pkgconfig).
 */
#include <n5.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define CHECK(cond, what)                                                     \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "n5_consumer: %s failed: %s\n", (what),           \
                    n5_last_error_message());                                 \
            return 1;                                                         \
        }                                                                     \
    } while (0)

/* Writes the block at grid position (1, 0) of a 100 x 50 uint16 dataset with
 * 64 x 64 blocks (an edge block of 36 x 50) and reads it back. */
static int roundtrip(n5_container *c, const char *path, const char *compression) {
    static uint16_t out[36 * 50], in[36 * 50];
    const uint64_t dims[2] = {100, 50}, block_size[2] = {64, 64};
    const uint64_t grid_pos[2] = {1, 0}, shape[2] = {36, 50};
    uint64_t got_shape[2] = {0, 0};
    int32_t found = 0;
    size_t i;
    n5_dataset *d;

    for (i = 0; i < 36 * 50; i++)
        out[i] = (uint16_t)(i * 7 + 3);
    d = n5_dataset_create(c, path, 2, dims, block_size, N5_DTYPE_UINT16, compression);
    CHECK(d != NULL, "n5_dataset_create");
    CHECK(n5_block_write(d, 2, grid_pos, shape, N5_DTYPE_UINT16, out, sizeof out) == N5_OK,
          "n5_block_write");
    CHECK(n5_block_read(d, 2, grid_pos, N5_DTYPE_UINT16, in, sizeof in, got_shape, &found)
              == N5_OK,
          "n5_block_read");
    n5_dataset_free(d);
    if (!found || got_shape[0] != 36 || got_shape[1] != 50 || memcmp(in, out, sizeof in) != 0) {
        fprintf(stderr, "n5_consumer: %s: the block read back differs\n", path);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    n5_container *c;
    int failed;

    if (argc != 2) {
        fprintf(stderr, "usage: n5_consumer <directory for a new container>\n");
        return 2;
    }
    if (strcmp(n5_version_string(), N5_VERSION_STRING) != 0 ||
        n5_version_number() != N5_VERSION_NUMBER) {
        fprintf(stderr, "n5_consumer: header %s (%d), library %s (%u)\n", N5_VERSION_STRING,
                N5_VERSION_NUMBER, n5_version_string(), (unsigned)n5_version_number());
        return 1;
    }

    c = n5_container_open(argv[1], N5_MODE_CREATE, NULL);
    CHECK(c != NULL, "n5_container_open");
    failed = roundtrip(c, "gzip", "{\"type\": \"gzip\"}") ||
             roundtrip(c, "blosc", "{\"type\": \"blosc\", \"cname\": \"zstd\"}");
    n5_container_free(c);
    if (failed)
        return 1;
    printf("n5_consumer: libn5 %s, blocks written and read back in %s\n", n5_version_string(),
           argv[1]);
    return 0;
}
