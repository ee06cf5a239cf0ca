/*
 * Edge cases at the borders of the contract: rank 65, varlength reads of
 * string and object datasets, the argument named in NULL-pointer messages,
 * regular files where groups are expected, and a handle of one type passed
 * where the other is expected (with N5_TEST_DEBUG_HANDLES; under valgrind
 * this also shows that the check reads nothing outside the handle).
 */
#include "n5_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static n5_container *open_fresh(const char **root_out)
{
    const char *root = n5t_fresh("edge");
    if (root_out)
        *root_out = root;
    return CHECK_HANDLE(n5_container_open(root, N5_MODE_CREATE, NULL));
}

/* n5_dataset_create with ndim 65: n5.h says "`dimensions` and `block_size`
   hold `ndim` (1 to 64) values", so 65 is out of the argument's domain:
   N5_ERR_INVALID_ARGUMENT, as ndim 0 is (not N5_ERR_SHAPE_MISMATCH, which
   is about a shape that does not fit an existing dataset). */
static void test_create_rank_65(void)
{
    n5_container *c = open_fresh(NULL);
    uint64_t many[65];
    size_t i;
    if (c == NULL)
        return;
    for (i = 0; i < 65; i++)
        many[i] = 1;
    CHECK_NULL_ERR(n5_dataset_create(c, "k3", 65, many, many, N5_DTYPE_UINT8, NULL),
                   N5_ERR_INVALID_ARGUMENT);
    n5_container_free(c);
}

/* n5_block_read_varlength reads "the numeric block": on string and object
   datasets it is N5_ERR_DTYPE_MISMATCH, like n5_block_read and
   n5_block_write_varlength, rather than the raw payload bytes. */
static void test_read_varlength_non_numeric(void)
{
    n5_container *c = open_fresh(NULL);
    uint64_t one[1] = {1}, pos[1] = {0}, n = 0;
    n5_dataset *s, *o;
    if (c == NULL)
        return;
    s = CHECK_HANDLE(n5_dataset_create(c, "s", 1, one, one, N5_DTYPE_STRING, NULL));
    o = CHECK_HANDLE(n5_dataset_create(c, "o", 1, one, one, N5_DTYPE_OBJECT, NULL));
    if (s && o) {
        CHECK_OK(n5_block_write_strings(s, 1, pos, one, "abc", 4));
        CHECK_OK(n5_block_write_object(o, 1, pos, "xyz", 3));
        CHECK_ERR(n5_block_read_varlength(s, 1, pos, N5_DTYPE_STRING, NULL, 0, &n, NULL, NULL),
                  N5_ERR_DTYPE_MISMATCH);
        CHECK_ERR(n5_block_read_varlength(o, 1, pos, N5_DTYPE_OBJECT, NULL, 0, &n, NULL, NULL),
                  N5_ERR_DTYPE_MISMATCH);
    }
    n5_dataset_free(s);
    n5_dataset_free(o);
    n5_container_free(c);
}

/* n5_block_write_strings(…, packed = NULL, packed_len > 0): the message
   names the argument as the header does, 'packed'. */
static void test_write_strings_null_message(void)
{
    n5_container *c = open_fresh(NULL);
    uint64_t one[1] = {1}, pos[1] = {0};
    n5_dataset *s;
    if (c == NULL)
        return;
    s = CHECK_HANDLE(n5_dataset_create(c, "s", 1, one, one, N5_DTYPE_STRING, NULL));
    if (s) {
        CHECK_ERR(n5_block_write_strings(s, 1, pos, one, NULL, 2), N5_ERR_NULL_POINTER);
        CHECK_MSG_HAS("'packed'");
    }
    n5_dataset_free(s);
    n5_container_free(c);
}

/* n5_remove of a regular file inside the container: n5_exists says there is
   no group or dataset there, so it is "a path that does not exist" (N5_OK,
   nothing removed). n5_container_open(<regular file>, N5_MODE_CREATE) is
   N5_ERR_INVALID_ARGUMENT ("is not a directory"), as READ and READ_WRITE
   are. */
static void test_regular_files(void)
{
    const char *root;
    const char *file = n5t_fresh("plainfile");
    n5_container *c = open_fresh(&root);
    int32_t exists = -1;
    if (c == NULL)
        return;
    CHECK(n5t_write_file(n5t_join(root, "notes.txt"), "x", 1) == 0);
    CHECK_OK(n5_exists(c, "notes.txt", &exists));
    CHECK_EQ(exists, 0);
    CHECK_OK(n5_remove(c, "notes.txt"));
    CHECK(n5t_exists(n5t_join(root, "notes.txt")));
    n5_container_free(c);
    CHECK(n5t_write_file(file, "x", 1) == 0);
    CHECK_NULL_ERR(n5_container_open(file, N5_MODE_CREATE, NULL), N5_ERR_INVALID_ARGUMENT);
}

#ifdef N5_TEST_DEBUG_HANDLES
/* A container handle passed where a dataset handle is expected gives
   N5_ERR_INVALID_HANDLE. The magic tag is the first word of every handle
   cell, so the check reads nothing outside the cell it was given (the
   valgrind variant of this test shows no invalid read). */
static void test_handle_type_confusion(void)
{
    n5_container *c = open_fresh(NULL);
    size_t ndim = 0;
    if (c == NULL)
        return;
    CHECK_ERR(n5_dataset_ndim((n5_dataset *)(void *)c, &ndim), N5_ERR_INVALID_HANDLE);
    n5_container_free(c);
}
#endif

int main(void)
{
    n5t_init("edge_cases");
    RUN(test_create_rank_65);
    RUN(test_read_varlength_non_numeric);
    RUN(test_write_strings_null_message);
    RUN(test_regular_files);
#ifdef N5_TEST_DEBUG_HANDLES
    RUN(test_handle_type_confusion);
#endif
    return n5t_finish();
}
