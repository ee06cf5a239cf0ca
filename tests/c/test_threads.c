/*
 * Threads: several pthreads using the same container and dataset handles at
 * once (disjoint block writes, region reads, attribute merges into one
 * group, same-block writes), handles opened and freed in threads, and
 * handles freed in any order.
 */
#include "n5_test.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NTHREADS 6
#define GRID 8   /* blocks per dimension */
#define BS 8     /* block extent */
#define DIM (GRID * BS)
#define MERGES 12

struct shared {
    n5_container *c;
    n5_dataset *d;
    const char *root;
};

struct worker {
    struct shared *s;
    int id;
};

static uint32_t value(uint64_t bx, uint64_t by, size_t i)
{
    return (uint32_t)(1 + bx * 1000003u + by * 7919u + i);
}

static void fill_block(uint32_t *buf, uint64_t bx, uint64_t by)
{
    size_t i;
    for (i = 0; i < BS * BS; i++)
        buf[i] = value(bx, by, i);
}

/* In a region read of the whole dataset, each block is either not there yet
   (zeros) or complete: block files are replaced atomically. */
static int blocks_whole(const uint32_t *vol)
{
    uint64_t bx, by, x, y;
    for (by = 0; by < GRID; by++)
        for (bx = 0; bx < GRID; bx++) {
            int zeros = 1, pattern = 1;
            for (y = 0; y < BS; y++)
                for (x = 0; x < BS; x++) {
                    uint32_t v = vol[(bx * BS + x) + DIM * (by * BS + y)];
                    if (v != 0)
                        zeros = 0;
                    if (v != value(bx, by, x + BS * y))
                        pattern = 0;
                }
            if (!zeros && !pattern)
                return 0;
        }
    return 1;
}

static void *work(void *p)
{
    struct worker *w = p;
    struct shared *s = w->s;
    uint64_t bx, by, bs[2] = {BS, BS};
    uint64_t zero[2] = {0, 0}, dims[2] = {DIM, DIM};
    uint32_t *block = malloc(BS * BS * 4), *back = malloc(BS * BS * 4);
    uint32_t *vol = malloc(DIM * DIM * 4);
    char json[64], key[64];
    int i;

    CHECK_LAST(N5_OK);
    for (by = 0; by < GRID; by++)
        for (bx = 0; bx < GRID; bx++) {
            uint64_t pos[2];
            int32_t found = -1;
            if ((int)((bx + by * GRID) % NTHREADS) != w->id)
                continue;
            pos[0] = bx, pos[1] = by;
            fill_block(block, bx, by);
            CHECK_OK(n5_block_write(s->d, 2, pos, bs, N5_DTYPE_UINT32, block, BS * BS * 4));
            CHECK_OK(n5_block_read(s->d, 2, pos, N5_DTYPE_UINT32, back, BS * BS * 4, NULL,
                                   &found));
            CHECK(found == 1 && memcmp(block, back, BS * BS * 4) == 0);
            /* a region read of everything, while the others write */
            if ((bx + by) % 3 == 0) {
                CHECK_OK(n5_region_read(s->d, 2, zero, dims, N5_DTYPE_UINT32, vol, DIM * DIM * 4));
                CHECK(blocks_whole(vol));
            }
        }
    /* merges of different keys into the same group, through both functions */
    for (i = 0; i < MERGES; i++) {
        snprintf(json, sizeof json, "{\"t%d_%d\":%d}", w->id, i, i);
        CHECK_OK(n5_attributes_set(s->c, "g", json));
        snprintf(key, sizeof key, "p%d_%d", w->id, i);
        snprintf(json, sizeof json, "[%d,%d]", w->id, i);
        CHECK_OK(n5_attribute_set(s->c, "g", key, json));
    }
    /* the same group created by everyone; datasets of one's own */
    CHECK_OK(n5_group_create(s->c, "shared/nested/group"));
    {
        char path[32];
        n5_dataset *own, *again;
        snprintf(path, sizeof path, "own/d%d", w->id);
        own = CHECK_HANDLE(n5_dataset_create(s->c, path, 2, dims, bs, N5_DTYPE_UINT32, NULL));
        again = CHECK_HANDLE(n5_dataset_open(s->c, "ds"));
        if (own != NULL) {
            CHECK_OK(n5_region_write(own, 2, zero, bs, N5_DTYPE_UINT32, block, BS * BS * 4));
            n5_dataset_free(own);
        }
        if (again != NULL) {
            CHECK_OK(n5_block_exists(again, 2, zero, &(int32_t){0}));
            n5_dataset_free(again);
        }
    }
    CHECK_LAST(N5_OK);
    free(block);
    free(back);
    free(vol);
    return NULL;
}

static void test_shared_handles(void)
{
    struct shared s;
    struct worker w[NTHREADS];
    pthread_t th[NTHREADS];
    uint64_t dims[2] = {DIM, DIM}, bs[2] = {BS, BS}, zero[2] = {0, 0};
    uint32_t *vol;
    char *attrs;
    int i, j;

    s.root = n5t_fresh("threads");
    s.c = CHECK_HANDLE(n5_container_open(s.root, N5_MODE_CREATE, "{\"threads\":2}"));
    if (s.c == NULL)
        return;
    s.d = CHECK_HANDLE(n5_dataset_create(s.c, "ds", 2, dims, bs, N5_DTYPE_UINT32,
                                         "{\"type\":\"gzip\",\"level\":1}"));
    CHECK_OK(n5_group_create(s.c, "g"));
    if (s.d == NULL) {
        n5_container_free(s.c);
        return;
    }
    for (i = 0; i < NTHREADS; i++) {
        w[i].s = &s;
        w[i].id = i;
        CHECK(pthread_create(&th[i], NULL, work, &w[i]) == 0);
    }
    for (i = 0; i < NTHREADS; i++)
        CHECK(pthread_join(th[i], NULL) == 0);

    /* every block is there and complete */
    vol = malloc(DIM * DIM * 4);
    CHECK_OK(n5_region_read(s.d, 2, zero, dims, N5_DTYPE_UINT32, vol, DIM * DIM * 4));
    CHECK(blocks_whole(vol));
    CHECK(vol[0] != 0 && vol[DIM * DIM - 1] != 0);
    free(vol);
    {
        char *list = n5t_text(n5t_text_block_list, s.d);
        size_t commas = 0;
        const char *q;
        for (q = list ? list : ""; *q; q++)
            commas += *q == ']';
        CHECK_EQ(commas, GRID * GRID + 1);
        free(list);
    }
    /* every merge landed */
    attrs = n5t_attributes(s.c, "g");
    CHECK(attrs != NULL);
    for (i = 0; attrs && i < NTHREADS; i++)
        for (j = 0; j < MERGES; j++) {
            char key[64];
            snprintf(key, sizeof key, "\"t%d_%d\":%d", i, j, j);
            if (!CHECK(strstr(attrs, key) != NULL))
                fprintf(stderr, "    missing %s\n", key);
            snprintf(key, sizeof key, "\"p%d_%d\":[%d,%d]", i, j, i, j);
            if (!CHECK(strstr(attrs, key) != NULL))
                fprintf(stderr, "    missing %s\n", key);
        }
    free(attrs);
    CHECK_STR_FREE(n5t_list(s.c, "own"), "[\"d0\",\"d1\",\"d2\",\"d3\",\"d4\",\"d5\"]");
    CHECK_STR_FREE(n5t_list(s.c, "shared/nested"), "[\"group\"]");
    /* no temporary files were left */
    CHECK_EQ(n5t_tree_count(n5t_join(s.root, "g")), 1);
    n5_dataset_free(s.d);
    n5_container_free(s.c);
}

/* Two threads writing the same block over and over, a third reading it:
   every read sees one whole version, and one of them is left. */
struct same_block {
    n5_dataset *d;
    int id;
    int rounds;
    long torn;
};

static void *same_block_work(void *p)
{
    struct same_block *a = p;
    uint64_t pos[1] = {0}, shape[1] = {256};
    uint8_t buf[256], back[256];
    int r, i;
    memset(buf, a->id == 0 ? 0x11 : 0x22, sizeof buf);
    for (r = 0; r < a->rounds; r++) {
        if (a->id < 2) {
            if (n5_block_write(a->d, 1, pos, shape, N5_DTYPE_UINT8, buf, sizeof buf) != N5_OK)
                a->torn++;
        } else {
            int32_t found = 0;
            if (n5_block_read(a->d, 1, pos, N5_DTYPE_UINT8, back, sizeof back, NULL, &found) !=
                N5_OK) {
                a->torn++;
                continue;
            }
            for (i = 1; i < 256; i++)
                if (back[i] != back[0])
                    break;
            if (i != 256 || (found && back[0] != 0x11 && back[0] != 0x22))
                a->torn++;
        }
    }
    return NULL;
}

static void test_same_block(void)
{
    const char *root = n5t_fresh("sameblock");
    n5_container *c = CHECK_HANDLE(n5_container_open(root, N5_MODE_CREATE, NULL));
    uint64_t dims[1] = {256}, pos[1] = {0};
    struct same_block a[3];
    pthread_t th[3];
    uint8_t back[256];
    n5_dataset *d;
    int i;
    if (c == NULL)
        return;
    d = CHECK_HANDLE(n5_dataset_create(c, "ds", 1, dims, dims, N5_DTYPE_UINT8,
                                       "{\"type\":\"xz\",\"preset\":0}"));
    if (d == NULL) {
        n5_container_free(c);
        return;
    }
    for (i = 0; i < 3; i++) {
        a[i].d = d;
        a[i].id = i;
        a[i].rounds = 40;
        a[i].torn = 0;
        CHECK(pthread_create(&th[i], NULL, same_block_work, &a[i]) == 0);
    }
    for (i = 0; i < 3; i++) {
        CHECK(pthread_join(th[i], NULL) == 0);
        CHECK_EQ(a[i].torn, 0);
    }
    CHECK_OK(n5_block_read(d, 1, pos, N5_DTYPE_UINT8, back, sizeof back, NULL, NULL));
    CHECK((back[0] == 0x11 || back[0] == 0x22) && n5t_all_bytes(back, sizeof back, back[0]));
    CHECK_EQ(n5t_tree_count(n5t_join(root, "ds")), 2);
    n5_dataset_free(d);
    n5_container_free(c);
}

/* A dataset handle keeps its container alive. */
static void test_free_order(void)
{
    const char *root = n5t_fresh("freeorder");
    n5_container *c = CHECK_HANDLE(n5_container_open(root, N5_MODE_CREATE, NULL));
    uint64_t dims[2] = {4, 4}, bs[2] = {2, 2}, pos[2] = {1, 1};
    int16_t buf[4] = {-1, 2, -3, 4}, back[4];
    n5_dataset *d1, *d2;
    int32_t found = 0;
    if (c == NULL)
        return;
    d1 = CHECK_HANDLE(n5_dataset_create(c, "a", 2, dims, bs, N5_DTYPE_INT16, NULL));
    d2 = CHECK_HANDLE(n5_dataset_open(c, "a"));
    n5_container_free(c); /* first */
    if (d1 != NULL) {
        CHECK_OK(n5_block_write(d1, 2, pos, bs, N5_DTYPE_INT16, buf, sizeof buf));
        CHECK_TEXT(n5t_text_dataset_path, d1, "a");
        CHECK_TEXT(n5t_text_block_list, d1, "[[1,1]]");
    }
    n5_dataset_free(d1);
    if (d2 != NULL) {
        CHECK_OK(n5_block_read(d2, 2, pos, N5_DTYPE_INT16, back, sizeof back, NULL, &found));
        CHECK(found == 1 && memcmp(back, buf, sizeof buf) == 0);
        CHECK_OK(n5_dataset_set_dimensions(d2, 2, bs));
    }
    n5_dataset_free(d2); /* last: the container goes with it */

    c = CHECK_HANDLE(n5_container_open(root, N5_MODE_READ, NULL));
    CHECK_STR_FREE(n5t_attribute(c, "a", "dimensions"), "[2,2]");
    n5_container_free(c);
}

/* Handles created in one thread, used and freed in another. */
static void *use_and_free(void *p)
{
    n5_dataset *d = p;
    uint64_t pos[1] = {0};
    int32_t exists = -1;
    CHECK_OK(n5_block_exists(d, 1, pos, &exists));
    CHECK_EQ(exists, 1);
    n5_dataset_free(d);
    return NULL;
}

static void test_cross_thread_free(void)
{
    const char *root = n5t_fresh("crossfree");
    n5_container *c = CHECK_HANDLE(n5_container_open(root, N5_MODE_CREATE, NULL));
    uint64_t dims[1] = {4}, pos[1] = {0};
    uint8_t buf[4] = {1, 2, 3, 4};
    pthread_t th[4];
    n5_dataset *d;
    int i;
    if (c == NULL)
        return;
    d = CHECK_HANDLE(n5_dataset_create(c, "x", 1, dims, dims, N5_DTYPE_UINT8, NULL));
    if (d)
        CHECK_OK(n5_block_write(d, 1, pos, dims, N5_DTYPE_UINT8, buf, 4));
    n5_dataset_free(d);
    for (i = 0; i < 4; i++) {
        n5_dataset *h = CHECK_HANDLE(n5_dataset_open(c, "x"));
        CHECK(pthread_create(&th[i], NULL, use_and_free, h) == 0);
    }
    n5_container_free(c);
    for (i = 0; i < 4; i++)
        CHECK(pthread_join(th[i], NULL) == 0);
}

int main(void)
{
    n5t_init("threads");
    RUN(test_shared_handles);
    RUN(test_same_block);
    RUN(test_free_order);
    RUN(test_cross_thread_free);
    return n5t_finish();
}
