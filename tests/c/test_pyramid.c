/*
 * Pyramids: n5_pyramid_plan (the levels as JSON text) and n5_pyramid_build
 * (levels reduced from the stored level before, the metadata, builds in
 * parts and their finalisation), with every error status of the contract.
 */
#include "n5_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NX = 20, NY = 12, NZ = 6 };

/* A uint16 dataset [20, 12, 6] (blocks 4) whose voxel (x, y, z) holds
   x + 20 y + 240 z. */
static n5_container *source(const char *name, const char **root_out)
{
    const char *root = n5t_fresh(name);
    n5_container *c = CHECK_HANDLE(n5_container_open(root, N5_MODE_CREATE, NULL));
    const uint64_t dims[3] = {NX, NY, NZ}, block[3] = {4, 4, 4}, offset[3] = {0, 0, 0};
    static uint16_t data[NX * NY * NZ];
    n5_dataset *d;
    size_t i;

    if (root_out)
        *root_out = root;
    if (c == NULL)
        return NULL;
    d = CHECK_HANDLE(n5_dataset_create(c, "raw/s0", 3, dims, block, N5_DTYPE_UINT16,
                                       "{\"type\":\"raw\"}"));
    for (i = 0; i < NX * NY * NZ; i++)
        data[i] = (uint16_t)i;
    if (d != NULL)
        CHECK_OK(n5_region_write(d, 3, offset, dims, N5_DTYPE_UINT16, data, sizeof data));
    n5_dataset_free(d);
    CHECK_OK(n5_attributes_set(c, "raw/s0", "{\"resolution\":[4,4,40],\"units\":[\"nm\",\"nm\",\"nm\"]}"));
    return c;
}

/* Voxel (x, y, z) of the dataset at `path` (uint16, 3-D). */
static long voxel(n5_container *c, const char *path, uint64_t x, uint64_t y, uint64_t z)
{
    n5_dataset *d = CHECK_HANDLE(n5_dataset_open(c, path));
    const uint64_t offset[3] = {x, y, z}, one[3] = {1, 1, 1};
    uint16_t v = 0;

    if (d == NULL)
        return -1;
    CHECK_OK(n5_region_read(d, 3, offset, one, N5_DTYPE_UINT16, &v, sizeof v));
    n5_dataset_free(d);
    return v;
}

static void test_plan(void)
{
    n5_container *c = source("pyramid-plan", NULL);
    size_t len = 0;
    char *text;

    if (c == NULL)
        return;
    CHECK_OK(n5_pyramid_plan(c, "raw/s0", "{\"factors\": [2, 2, 1]}", NULL, 0, &len));
    text = malloc(len + 1);
    CHECK_OK(n5_pyramid_plan(c, "raw/s0", "{\"factors\": [2, 2, 1]}", text, len + 1, &len));
    /* [20,12,6] by [2,2,1] while an axis is longer than a block (4):
       [10,6,6], [5,3,6], [3,3,6] (y stops at 3, x at 3). */
    CHECK(strstr(text, "\"format\":\"n5\"") != NULL);
    CHECK(strstr(text, "\"path\":\"s1\",\"shape\":[10,6,6]") != NULL);
    CHECK(strstr(text, "\"path\":\"s2\",\"shape\":[5,3,6]") != NULL);
    CHECK(strstr(text, "\"path\":\"s3\",\"shape\":[3,3,6],\"factors\":[8,4,1],\"relative\":[2,1,1]") != NULL);
    CHECK(strstr(text, "\"s4\"") == NULL);
    free(text);
    CHECK_ERR(n5_pyramid_plan(c, "raw/s0", "{\"method\": \"avg\"}", NULL, 0, &len),
              N5_ERR_INVALID_ARGUMENT);
    CHECK_MSG_HAS("unknown method 'avg'");
    CHECK_ERR(n5_pyramid_plan(c, "raw/s0", "{\"method\": ", NULL, 0, &len), N5_ERR_JSON);
    CHECK_ERR(n5_pyramid_plan(c, "raw/s0", "{\"colour\": 1}", NULL, 0, &len),
              N5_ERR_INVALID_ARGUMENT);
    CHECK_ERR(n5_pyramid_plan(c, "raw/nope", NULL, NULL, 0, &len), N5_ERR_NOT_FOUND);
    CHECK_ERR(n5_pyramid_plan(NULL, "raw/s0", NULL, NULL, 0, &len), N5_ERR_NULL_POINTER);
    CHECK_ERR(n5_pyramid_plan(c, NULL, NULL, NULL, 0, &len), N5_ERR_NULL_POINTER);
    n5_container_free(c);
}

static void test_build(void)
{
    n5_container *c = source("pyramid-build", NULL);
    const uint64_t dims[1] = {4}, block[1] = {2};
    n5_dataset *s;
    char *attrs;

    if (c == NULL)
        return;
    /* In place: s0 stays, s1 and s2 are the means of the level before. */
    CHECK_OK(n5_pyramid_build(c, "raw/s0", c, "raw", "{\"factors\": [2, 2, 1], \"levels\": 3}"));
    CHECK_EQ(voxel(c, "raw/s0", 3, 2, 1), 3 + 40 + 240);
    /* s1 (1,1,1): the mean of x 2..3, y 2..3 at z 1: 282, 283, 302 and 303
       make 292.5, rounded to the even 292. */
    CHECK_EQ(voxel(c, "raw/s1", 1, 1, 1), 292);
    CHECK_EQ(voxel(c, "raw/s2", 0, 0, 2), (voxel(c, "raw/s1", 0, 0, 2) + voxel(c, "raw/s1", 1, 0, 2) +
                                           voxel(c, "raw/s1", 0, 1, 2) + voxel(c, "raw/s1", 1, 1, 2) + 2) / 4);
    attrs = n5t_attributes(c, "raw");
    CHECK(attrs != NULL && strstr(attrs, "\"multiScale\":true") != NULL);
    CHECK(attrs != NULL && strstr(attrs, "libn5_pyramid") == NULL);
    free(attrs);
    /* Again: nothing changes. */
    CHECK_OK(n5_pyramid_build(c, "raw/s0", c, "raw", "{\"factors\": [2, 2, 1], \"levels\": 3}"));
    /* Another plan at the same group: refused, nothing written. */
    CHECK_ERR(n5_pyramid_build(c, "raw/s0", c, "raw", "{\"method\": \"max\", \"factors\": [2, 2, 1], \"levels\": 3}"),
              N5_ERR_ALREADY_EXISTS);
    CHECK_MSG_HAS("raw");
    /* A dataset where the group would be. */
    s = CHECK_HANDLE(n5_dataset_create(c, "taken", 1, dims, block, N5_DTYPE_UINT8, NULL));
    n5_dataset_free(s);
    CHECK_ERR(n5_pyramid_build(c, "raw/s0", c, "taken", NULL), N5_ERR_ALREADY_EXISTS);
    /* Strings cannot be reduced. */
    s = CHECK_HANDLE(n5_dataset_create(c, "text", 1, dims, block, N5_DTYPE_STRING, NULL));
    n5_dataset_free(s);
    CHECK_ERR(n5_pyramid_build(c, "text", c, "text-pyramid", NULL), N5_ERR_UNSUPPORTED);
    CHECK_ERR(n5_pyramid_build(c, "raw/s0", NULL, "x", NULL), N5_ERR_NULL_POINTER);
    CHECK_ERR(n5_pyramid_build(c, "raw/s0", c, "x", "{\"factors\": [1, 1, 1]}"),
              N5_ERR_INVALID_ARGUMENT);
    n5_container_free(c);
}

static void test_parts(void)
{
    n5_container *c = source("pyramid-parts", NULL);
    char *attrs;
    size_t len = 0;

    if (c == NULL)
        return;
    CHECK_OK(n5_pyramid_build(c, "raw/s0", c, "out", "{\"part\": [1, 3]}"));
    CHECK_ERR(n5_pyramid_build(c, "raw/s0", c, "out", "{\"finalize\": true}"), N5_ERR_INCOMPLETE);
    CHECK_MSG_HAS("parts 0/3, 2/3 have not finished");
    attrs = n5t_attribute(c, "out", "libn5_pyramid/done");
    CHECK(attrs != NULL && strcmp(attrs, "[1]") == 0);
    free(attrs);
    CHECK(n5_attribute_get(c, "out", "multiScale", NULL, 0, &len) == N5_ERR_NOT_FOUND);
    CHECK_ERR(n5_pyramid_build(c, "raw/s0", c, "out", "{\"part\": [0, 2]}"), N5_ERR_ALREADY_EXISTS);
    CHECK_OK(n5_pyramid_build(c, "raw/s0", c, "out", "{\"part\": [0, 3]}"));
    CHECK_OK(n5_pyramid_build(c, "raw/s0", c, "out", "{\"part\": [2, 3]}"));
    attrs = n5t_attributes(c, "out");
    CHECK(attrs != NULL && strstr(attrs, "libn5_pyramid") == NULL && strstr(attrs, "multiScale") != NULL);
    free(attrs);
    /* The same as one build. */
    CHECK_OK(n5_pyramid_build(c, "raw/s0", c, "whole", NULL));
    CHECK_EQ(voxel(c, "out/s2", 1, 1, 1), voxel(c, "whole/s2", 1, 1, 1));
    CHECK_EQ(voxel(c, "out/s1", 4, 2, 3), voxel(c, "whole/s1", 4, 2, 3));
    CHECK_OK(n5_pyramid_build(c, "raw/s0", c, "out", "{\"finalize\": true}"));
    n5_container_free(c);
}

static void test_read_only(void)
{
    const char *root = NULL;
    n5_container *c = source("pyramid-ro", &root);
    n5_container *r;

    if (c == NULL)
        return;
    n5_container_free(c);
    r = CHECK_HANDLE(n5_container_open(root, N5_MODE_READ, NULL));
    if (r == NULL)
        return;
    CHECK_ERR(n5_pyramid_build(r, "raw/s0", r, "out", NULL), N5_ERR_READ_ONLY);
    n5_container_free(r);
}

int main(void)
{
    n5t_init("pyramid");
    RUN(test_plan);
    RUN(test_build);
    RUN(test_parts);
    RUN(test_read_only);
    return n5t_finish();
}
