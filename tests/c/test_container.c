/*
 * Containers (modes, options, getters), read-only handles and the group
 * hierarchy (exists, dataset_exists, group_create, list, list_recursive,
 * remove) with every spelling of paths.
 */
#include "n5_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>


/* What n5_container_options adds for a local container with default link and
   storage options (nwb.md: follow_links; c-api.md and storage.md:
   io_concurrency, cache_bytes, retry). */
#define LOCAL_STORAGE                                                                   \
    ",\"follow_links\":true,\"io_concurrency\":4,\"cache_bytes\":0,\"retry\":{\"max_attempts\":8,\"max_seconds\":60.0," \
    "\"request_timeout_seconds\":30.0}}"

static int make_dir(const char *abs_path)
{
    return mkdir(abs_path, 0755);
}

static char *read_text(const char *abs_path)
{
    return n5t_read_file(abs_path, NULL);
}

/* n5_list_names(c, path, recursive) gives `count` names packed in `len`
   bytes (NULs included), checked through the size-query convention. */
#define CHECK_NAMES(c, path, recursive, packed, len, count) \
    check_names((c), (path), (recursive), (packed), (len), (count), __FILE__, __LINE__)

static void check_names(const n5_container *c, const char *path, int32_t recursive,
                        const char *packed, size_t len, size_t count, const char *file, int line)
{
    char *buf = malloc(len + 8);
    size_t out_len = 12345, out_count = 12345;
    int ok = 1;
    /* size query */
    ok &= n5t_check_status(n5_list_names(c, path, recursive, NULL, 0, &out_len, &out_count),
                           N5_OK, file, line, "n5_list_names size query");
    ok &= n5t_check_int((long long)out_len, (long long)len, file, line, "size query out_len");
    ok &= n5t_check_int((long long)out_count, (long long)count, file, line, "size query count");
    ok &= n5t_check_status(n5_list_names(c, path, recursive, NULL, 0, NULL, &out_count),
                           N5_ERR_NULL_POINTER, file, line, "n5_list_names without out_len");
    ok &= n5t_check_status(n5_list_names(c, path, recursive, NULL, 4, &out_len, &out_count),
                           N5_ERR_NULL_POINTER, file, line, "n5_list_names NULL buf, cap 4");
    /* exact fit: no NUL is added after the last name's */
    memset(buf, 'Z', len + 8);
    out_len = out_count = 12345;
    ok &= n5t_check_status(n5_list_names(c, path, recursive, buf, len, &out_len, &out_count),
                           N5_OK, file, line, "n5_list_names exact fit");
    ok &= n5t_check(out_len == len && out_count == count && memcmp(buf, packed, len) == 0 &&
                        buf[len] == 'Z',
                    file, line, "n5_list_names exact fit gives the packed names");
    /* optional outputs */
    memset(buf, 'Z', len + 8);
    ok &= n5t_check_status(n5_list_names(c, path, recursive, buf, len + 8, NULL, NULL), N5_OK,
                           file, line, "n5_list_names with out_len and out_count NULL");
    ok &= n5t_check(memcmp(buf, packed, len) == 0, file, line, "n5_list_names large buffer");
    /* one byte short */
    if (len > 0) {
        memset(buf, 0x5a, len + 8);
        out_len = out_count = 12345;
        ok &= n5t_check_status(
            n5_list_names(c, path, recursive, buf, len - 1, &out_len, &out_count),
            N5_ERR_BUFFER_TOO_SMALL, file, line, "n5_list_names one byte short");
        ok &= n5t_check(out_len == len && out_count == 12345 && n5t_all_bytes(buf, len + 8, 0x5a),
                        file, line, "one byte short: out_len set, count and buffer untouched");
    }
    (void)ok;
    free(buf);
}

static void test_modes(void)
{
    const char *missing = n5t_fresh("missing");
    const char *nested = n5t_join(n5t_fresh("nested"), "a/b/root");
    const char *root;
    n5_container *c;
    n5_mode mode = -1;
    char *text;

    /* READ and READ_WRITE need an existing root and create nothing */
    CHECK_NULL_ERR(n5_container_open(missing, N5_MODE_READ, NULL), N5_ERR_NOT_FOUND);
    CHECK(!n5t_exists(missing));
    CHECK_NULL_ERR(n5_container_open(missing, N5_MODE_READ_WRITE, NULL), N5_ERR_NOT_FOUND);
    CHECK(!n5t_exists(missing));
    CHECK_NULL_ERR(n5_container_open(missing, N5_MODE_READ, "{\"threads\":1}"),
                   N5_ERR_NOT_FOUND);
    CHECK(!n5t_exists(missing));

    /* CREATE makes the root and its parents, with attributes.json {"n5":"4.0.0"} */
    c = CHECK_HANDLE(n5_container_open(nested, N5_MODE_CREATE, NULL));
    CHECK_STR_FREE(read_text(n5t_join(nested, "attributes.json")), "{\"n5\":\"4.0.0\"}");
    CHECK_EQ(n5t_tree_count(nested), 1);
    CHECK_TEXT(n5t_text_version, c, "4.0.0");
    CHECK_TEXT(n5t_text_root, c, nested);
    CHECK_OK(n5_container_mode(c, &mode));
    CHECK_EQ(mode, N5_MODE_CREATE);
    n5_container_free(c);

    /* READ_WRITE and READ of it */
    c = CHECK_HANDLE(n5_container_open(nested, N5_MODE_READ_WRITE, NULL));
    CHECK_OK(n5_container_mode(c, &mode));
    CHECK_EQ(mode, N5_MODE_READ_WRITE);
    CHECK_TEXT(n5t_text_version, c, "4.0.0");
    n5_container_free(c);
    c = CHECK_HANDLE(n5_container_open(nested, N5_MODE_READ, NULL));
    CHECK_OK(n5_container_mode(c, &mode));
    CHECK_EQ(mode, N5_MODE_READ);
    CHECK_TEXT(n5t_text_version, c, "4.0.0");
    n5_container_free(c);

    /* CREATE of an existing container opens it as it is (no rewrite) */
    root = n5t_fresh("existing");
    CHECK(make_dir(root) == 0);
    text = "{\"custom\":[1,2],\"n5\":\"2.5.1\"}";
    CHECK(n5t_write_file(n5t_join(root, "attributes.json"), text, strlen(text)) == 0);
    {
        char *before = n5t_tree_fingerprint(root);
        char *after;
        c = CHECK_HANDLE(n5_container_open(root, N5_MODE_CREATE, NULL));
        CHECK_TEXT(n5t_text_version, c, "2.5.1");
        n5_container_free(c);
        c = CHECK_HANDLE(n5_container_open(root, N5_MODE_READ_WRITE, NULL));
        n5_container_free(c);
        after = n5t_tree_fingerprint(root);
        CHECK_STR(after, before);
        free(before);
        free(after);
    }
    CHECK_STR_FREE(read_text(n5t_join(root, "attributes.json")), text);

    /* a root directory without "n5": READ shows version "" and writes nothing */
    root = n5t_fresh("noversion");
    CHECK(make_dir(root) == 0);
    c = CHECK_HANDLE(n5_container_open(root, N5_MODE_READ, NULL));
    CHECK_TEXT(n5t_text_version, c, "");
    n5_container_free(c);
    CHECK_EQ(n5t_tree_count(root), 0);
    text = "{\"x\":1}";
    CHECK(n5t_write_file(n5t_join(root, "attributes.json"), text, strlen(text)) == 0);
    c = CHECK_HANDLE(n5_container_open(root, N5_MODE_READ, NULL));
    CHECK_TEXT(n5t_text_version, c, "");
    n5_container_free(c);
    CHECK_STR_FREE(read_text(n5t_join(root, "attributes.json")), text);
    /* writers add the version, as Java does, and keep the other keys */
    c = CHECK_HANDLE(n5_container_open(root, N5_MODE_READ_WRITE, NULL));
    CHECK_TEXT(n5t_text_version, c, "4.0.0");
    CHECK_STR_FREE(n5t_attributes(c, ""), "{\"x\":1,\"n5\":\"4.0.0\"}");
    n5_container_free(c);

    /* a newer major version is unsupported in every mode and left alone */
    root = n5t_fresh("newer");
    CHECK(make_dir(root) == 0);
    text = "{\"n5\":\"5.0.0\"}";
    CHECK(n5t_write_file(n5t_join(root, "attributes.json"), text, strlen(text)) == 0);
    CHECK_NULL_ERR(n5_container_open(root, N5_MODE_READ, NULL), N5_ERR_UNSUPPORTED);
    CHECK_MSG_HAS("5.0.0");
    CHECK_NULL_ERR(n5_container_open(root, N5_MODE_READ_WRITE, NULL), N5_ERR_UNSUPPORTED);
    CHECK_NULL_ERR(n5_container_open(root, N5_MODE_CREATE, NULL), N5_ERR_UNSUPPORTED);
    CHECK_STR_FREE(read_text(n5t_join(root, "attributes.json")), text);
    /* 4.x minor versions are read */
    text = "{\"n5\":\"4.9.1-SNAPSHOT\"}";
    CHECK(n5t_write_file(n5t_join(root, "attributes.json"), text, strlen(text)) == 0);
    c = CHECK_HANDLE(n5_container_open(root, N5_MODE_READ, NULL));
    CHECK_TEXT(n5t_text_version, c, "4.9.1-SNAPSHOT");
    n5_container_free(c);

    /* a root attributes.json that is not JSON */
    root = n5t_fresh("badjson");
    CHECK(make_dir(root) == 0);
    CHECK(n5t_write_file(n5t_join(root, "attributes.json"), "{nope", 5) == 0);
    CHECK_NULL_ERR(n5_container_open(root, N5_MODE_READ, NULL), N5_ERR_JSON);
    CHECK_MSG_HAS("attributes.json");

    /* invalid mode codes: nothing is created */
    root = n5t_fresh("badmode");
    CHECK_NULL_ERR(n5_container_open(root, 3, NULL), N5_ERR_INVALID_ARGUMENT);
    CHECK_MSG_HAS("mode");
    CHECK_NULL_ERR(n5_container_open(root, -1, NULL), N5_ERR_INVALID_ARGUMENT);
    CHECK_NULL_ERR(n5_container_open(root, 100, NULL), N5_ERR_INVALID_ARGUMENT);
    CHECK(!n5t_exists(root));

    /* bad roots */
    CHECK_NULL_ERR(n5_container_open("", N5_MODE_CREATE, NULL), N5_ERR_INVALID_ARGUMENT);
    CHECK_NULL_ERR(n5_container_open(NULL, N5_MODE_CREATE, NULL), N5_ERR_NULL_POINTER);
    {
        char bad[1200];
        snprintf(bad, sizeof bad, "%s/bad\xff\xfe", n5t_scratch());
        CHECK_NULL_ERR(n5_container_open(bad, N5_MODE_CREATE, NULL), N5_ERR_INVALID_UTF8);
        CHECK(!n5t_exists(bad));
    }
    /* a regular file is not a container */
    root = n5t_fresh("plainfile");
    CHECK(n5t_write_file(root, "x", 1) == 0);
    CHECK_NULL_ERR(n5_container_open(root, N5_MODE_READ, NULL), N5_ERR_INVALID_ARGUMENT);
    CHECK_NULL_ERR(n5_container_open(root, N5_MODE_READ_WRITE, NULL), N5_ERR_INVALID_ARGUMENT);
    CHECK(n5_container_open(root, N5_MODE_CREATE, NULL) == NULL);
    CHECK(n5_last_error_code() != N5_OK);
    CHECK_STR_FREE(read_text(root), "x");
}

static void test_options(void)
{
    const char *root = n5t_fresh("options");
    n5_container *c;
    char *text, expected[256];
    static const char *invalid_args[] = {
        "{\"thread\":2}",  "{\"threads\":2,\"cache\":1}", "{\"threads\":-1}",
        "{\"threads\":\"2\"}", "{\"threads\":1.5}", "{\"threads\":null}",
        "{\"threads\":100000}", "{\"write_empty_blocks\":1}",
    };
    static const char *bad_json[] = {"{", "", "{\"threads\":}", "[]", "null", "2", "\"x\"",
                                     "{\"threads\":2} x"};
    size_t i;
    int threads = 0;

    /* NULL: one thread per core */
    c = CHECK_HANDLE(n5_container_open(root, N5_MODE_CREATE, NULL));
    text = n5t_text(n5t_text_options, c);
    CHECK(text != NULL &&
          sscanf(text, "{\"threads\":%d,\"write_empty_blocks\":true,", &threads) == 1 &&
          threads >= 1);
    n5_container_free(c);
    /* {} and {"threads":0} are the default too */
    snprintf(expected, sizeof expected, "{\"threads\":%d,\"write_empty_blocks\":true" LOCAL_STORAGE,
             threads);
    c = CHECK_HANDLE(n5_container_open(root, N5_MODE_READ, "{}"));
    CHECK_TEXT(n5t_text_options, c, expected);
    n5_container_free(c);
    c = CHECK_HANDLE(n5_container_open(root, N5_MODE_READ, "{\"threads\":0}"));
    CHECK_TEXT(n5t_text_options, c, expected);
    n5_container_free(c);
    free(text);

    c = CHECK_HANDLE(n5_container_open(root, N5_MODE_READ_WRITE, "{\"threads\":2}"));
    CHECK_TEXT(n5t_text_options, c, "{\"threads\":2,\"write_empty_blocks\":true" LOCAL_STORAGE);
    n5_container_free(c);
    c = CHECK_HANDLE(n5_container_open(root, N5_MODE_READ, " { \"threads\" : 1 } "));
    CHECK_TEXT(n5t_text_options, c, "{\"threads\":1,\"write_empty_blocks\":true" LOCAL_STORAGE);
    n5_container_free(c);
    c = CHECK_HANDLE(
        n5_container_open(root, N5_MODE_READ, "{\"write_empty_blocks\":false,\"threads\":3}"));
    CHECK_TEXT(n5t_text_options, c, "{\"threads\":3,\"write_empty_blocks\":false" LOCAL_STORAGE);
    n5_container_free(c);

    /* storage options show as given; credentials never show */
    c = CHECK_HANDLE(n5_container_open(
        root, N5_MODE_READ,
        "{\"threads\":1,\"io_concurrency\":16,\"cache_bytes\":1048576,"
        "\"retry\":{\"max_attempts\":3,\"max_seconds\":5},"
        "\"s3\":{\"access_key_id\":\"AKIDEXAMPLE\",\"secret_access_key\":\"s3cr3t\"}}"));
    CHECK_TEXT(n5t_text_options, c,
               "{\"threads\":1,\"write_empty_blocks\":true,\"follow_links\":true,\"io_concurrency\":16,"
               "\"cache_bytes\":1048576,\"retry\":{\"max_attempts\":3,\"max_seconds\":5.0,"
               "\"request_timeout_seconds\":30.0}}");
    n5_container_free(c);

    /* unknown keys and out-of-range values are errors; bad JSON is N5_ERR_JSON;
       none of them creates the root */
    for (i = 0; i < sizeof invalid_args / sizeof invalid_args[0]; i++) {
        const char *fresh = n5t_fresh("badopt");
        CHECK_NULL_ERR(n5_container_open(fresh, N5_MODE_CREATE, invalid_args[i]),
                       N5_ERR_INVALID_ARGUMENT);
        CHECK(!n5t_exists(fresh));
    }
    CHECK_NULL_ERR(n5_container_open(root, N5_MODE_READ, "{\"thread\":2}"),
                   N5_ERR_INVALID_ARGUMENT);
    CHECK_MSG_HAS("thread");
    for (i = 0; i < sizeof bad_json / sizeof bad_json[0]; i++) {
        const char *fresh = n5t_fresh("badjson");
        CHECK_NULL_ERR(n5_container_open(fresh, N5_MODE_CREATE, bad_json[i]), N5_ERR_JSON);
        CHECK(!n5t_exists(fresh));
    }
    CHECK_NULL_ERR(n5_container_open(root, N5_MODE_READ, "{\"threads\":\"\xff\"}"),
                   N5_ERR_INVALID_UTF8);
}

static void test_getters(void)
{
    const char *root = n5t_fresh("getters");
    char with_slash[1200];
    n5_container *c;
    n5_mode mode = 77;
    size_t len = 99;

    c = CHECK_HANDLE(n5_container_open(root, N5_MODE_CREATE, "{\"threads\":3}"));
    if (c == NULL)
        return;
    CHECK_TEXT(n5t_text_version, c, "4.0.0");
    CHECK_TEXT(n5t_text_format, c, "n5");
    CHECK_TEXT(n5t_text_root, c, root);
    CHECK_TEXT(n5t_text_options, c, "{\"threads\":3,\"write_empty_blocks\":true" LOCAL_STORAGE);
    CHECK_ERR(n5_container_mode(c, NULL), N5_ERR_NULL_POINTER);
    CHECK_OK(n5_container_mode(c, &mode));
    CHECK_EQ(mode, N5_MODE_CREATE);
    /* failures leave the outputs alone */
    mode = 77;
    CHECK_ERR(n5_container_mode(NULL, &mode), N5_ERR_NULL_POINTER);
    CHECK_EQ(mode, 77);
    CHECK_ERR(n5_container_version(NULL, NULL, 0, &len), N5_ERR_NULL_POINTER);
    CHECK_EQ(len, 99);
    n5_container_free(c);

    /* the root is given back as it was given */
    snprintf(with_slash, sizeof with_slash, "%s/", root);
    c = CHECK_HANDLE(n5_container_open(with_slash, N5_MODE_READ, NULL));
    CHECK_TEXT(n5t_text_root, c, with_slash);
    n5_container_free(c);

    /* the format: from the options of a new container, then from its
       documents; Zarr containers have no N5 version */
    {
        const char *z3 = n5t_fresh("getters-zarr3");
        const char *z2 = n5t_fresh("getters-zarr2");
        c = CHECK_HANDLE(n5_container_open(z3, N5_MODE_CREATE, "{\"format\":\"zarr3\"}"));
        CHECK_TEXT(n5t_text_format, c, "zarr3");
        CHECK_TEXT(n5t_text_version, c, "");
        n5_container_free(c);
        c = CHECK_HANDLE(n5_container_open(z3, N5_MODE_READ, NULL));
        CHECK_TEXT(n5t_text_format, c, "zarr3");
        n5_container_free(c);
        c = CHECK_HANDLE(n5_container_open(z2, N5_MODE_CREATE, "{\"format\":\"zarr2\"}"));
        n5_container_free(c);
        c = CHECK_HANDLE(n5_container_open(z2, N5_MODE_READ, NULL));
        CHECK_TEXT(n5t_text_format, c, "zarr2");
        n5_container_free(c);
        CHECK_ERR(n5_container_format(NULL, NULL, 0, &len), N5_ERR_NULL_POINTER);
    }
}

/* Every writing function through a READ handle: N5_ERR_READ_ONLY, and the
   tree (names, inodes, sizes, contents, times) stays exactly as it was. */
static void test_read_only(void)
{
    const char *root = n5t_fresh("readonly");
    uint64_t dims[2] = {4, 4}, bs[2] = {2, 2}, pos[2] = {0, 0}, pos2[2] = {1, 1};
    uint64_t one[1] = {1}, zero[1] = {0}, shape[2], n;
    uint16_t block[4] = {1, 2, 3, 4}, rblock[4];
    uint64_t big[2] = {8, 8}, off[2] = {1, 1};
    n5_container *w, *c;
    n5_dataset *d, *ds, *dobj;
    char *before, *after;
    char buf[256];
    size_t len, count;
    int32_t flag, mode;

    w = CHECK_HANDLE(n5_container_open(root, N5_MODE_CREATE, NULL));
    if (w == NULL)
        return;
    CHECK_OK(n5_group_create(w, "g/sub"));
    CHECK_OK(n5_attributes_set(w, "g", "{\"k\":1}"));
    d = CHECK_HANDLE(n5_dataset_create(w, "num", 2, dims, bs, N5_DTYPE_UINT16, NULL));
    CHECK_OK(n5_block_write(d, 2, pos, bs, N5_DTYPE_UINT16, block, sizeof block));
    n5_dataset_free(d);
    ds = CHECK_HANDLE(n5_dataset_create(w, "str", 1, one, one, N5_DTYPE_STRING, NULL));
    CHECK_OK(n5_block_write_strings(ds, 1, zero, one, "x", 2));
    n5_dataset_free(ds);
    dobj = CHECK_HANDLE(n5_dataset_create(w, "obj", 1, one, one, N5_DTYPE_OBJECT, NULL));
    CHECK_OK(n5_block_write_object(dobj, 1, zero, "abc", 3));
    n5_dataset_free(dobj);
    n5_container_free(w);

    before = n5t_tree_fingerprint(root);
    c = CHECK_HANDLE(n5_container_open(root, N5_MODE_READ, NULL));
    if (c == NULL) {
        free(before);
        return;
    }
    d = CHECK_HANDLE(n5_dataset_open(c, "num"));
    ds = CHECK_HANDLE(n5_dataset_open(c, "str"));
    dobj = CHECK_HANDLE(n5_dataset_open(c, "obj"));

    /* reading works */
    CHECK_OK(n5_exists(c, "g/sub", &flag));
    CHECK_EQ(flag, 1);
    CHECK_STR_FREE(n5t_attributes(c, "g"), "{\"k\":1}");
    CHECK_STR_FREE(n5t_attribute(c, "g", "k"), "1");
    CHECK_STR_FREE(n5t_list(c, ""), "[\"g\",\"num\",\"obj\",\"str\"]");
    CHECK_NAMES(c, "", 1, "g\0g/sub\0num\0obj\0str", sizeof "g\0g/sub\0num\0obj\0str", 5);
    CHECK_OK(n5_block_read(d, 2, pos, N5_DTYPE_UINT16, rblock, sizeof rblock, shape, &flag));
    CHECK(flag == 1 && memcmp(rblock, block, sizeof block) == 0);
    CHECK_OK(n5_region_read(d, 2, off, bs, N5_DTYPE_UINT16, rblock, sizeof rblock));
    CHECK_OK(n5_block_info(d, 2, pos, &mode, shape, &n, &flag));
    CHECK_OK(n5_block_list(d, buf, sizeof buf, &len));
    CHECK_OK(n5_block_read_strings(ds, 1, zero, buf, sizeof buf, &len, &count, NULL, &flag));
    CHECK_OK(n5_block_read_object(dobj, 1, zero, buf, sizeof buf, &len, &flag));

    /* every write fails */
    CHECK_ERR(n5_group_create(c, "new/group"), N5_ERR_READ_ONLY);
    CHECK_MSG_HAS("read-only");
    CHECK_ERR(n5_group_create(c, "g"), N5_ERR_READ_ONLY);
    CHECK_ERR(n5_group_create(c, ""), N5_ERR_READ_ONLY);
    CHECK_ERR(n5_remove(c, "g"), N5_ERR_READ_ONLY);
    CHECK_ERR(n5_remove(c, "missing"), N5_ERR_READ_ONLY);
    CHECK_ERR(n5_container_remove_stale_temporaries(c, 0, NULL, NULL), N5_ERR_READ_ONLY);
    CHECK_ERR(n5_attributes_set(c, "g", "{\"k\":2}"), N5_ERR_READ_ONLY);
    CHECK_ERR(n5_attributes_set(c, "g/sub", "{}"), N5_ERR_READ_ONLY);
    CHECK_ERR(n5_attributes_set(c, "", "{\"x\":1}"), N5_ERR_READ_ONLY);
    CHECK_ERR(n5_attribute_set(c, "g", "k", "2"), N5_ERR_READ_ONLY);
    CHECK_ERR(n5_attribute_set(c, "g/sub", "a/b[3]", "2"), N5_ERR_READ_ONLY);
    CHECK_ERR(n5_attribute_remove(c, "g", "k"), N5_ERR_READ_ONLY);
    CHECK_ERR(n5_attribute_remove(c, "g", "missing"), N5_ERR_READ_ONLY);
    CHECK_NULL_ERR(n5_dataset_create(c, "newds", 2, dims, bs, N5_DTYPE_UINT8, NULL),
                   N5_ERR_READ_ONLY);
    CHECK_NULL_ERR(n5_dataset_create(c, "g/sub", 2, dims, bs, N5_DTYPE_UINT8, NULL),
                   N5_ERR_READ_ONLY);
    CHECK_NULL_ERR(n5_dataset_create(c, "num", 2, dims, bs, N5_DTYPE_UINT16, NULL),
                   N5_ERR_READ_ONLY);
    CHECK_ERR(n5_dataset_set_dimensions(d, 2, big), N5_ERR_READ_ONLY);
    CHECK_ERR(n5_block_write(d, 2, pos2, bs, N5_DTYPE_UINT16, block, sizeof block),
              N5_ERR_READ_ONLY);
    CHECK_ERR(n5_block_write(d, 2, pos, bs, N5_DTYPE_UINT16, block, sizeof block),
              N5_ERR_READ_ONLY);
    CHECK_ERR(n5_block_write_varlength(d, 2, pos2, bs, N5_DTYPE_UINT16, block, 2),
              N5_ERR_READ_ONLY);
    CHECK_ERR(n5_block_delete(d, 2, pos), N5_ERR_READ_ONLY);
    CHECK_ERR(n5_block_delete(d, 2, pos2), N5_ERR_READ_ONLY);
    CHECK_ERR(n5_region_write(d, 2, off, bs, N5_DTYPE_UINT16, block, sizeof block),
              N5_ERR_READ_ONLY);
    CHECK_ERR(n5_block_write_strings(ds, 1, zero, one, "y", 2), N5_ERR_READ_ONLY);
    CHECK_ERR(n5_block_write_object(dobj, 1, zero, "xyz", 3), N5_ERR_READ_ONLY);

    n5_dataset_free(d);
    n5_dataset_free(ds);
    n5_dataset_free(dobj);
    n5_container_free(c);
    after = n5t_tree_fingerprint(root);
    CHECK_STR(after, before);
    free(before);
    free(after);
}

static void test_paths(void)
{
    const char *root = n5t_fresh("paths");
    static const char *escaping[] = {"..", "../x", "/..", "./..", "a/../..", "/a/b/../../../etc",
                                     "../x/y"};
    static const char *root_spellings[] = {"", "/", ".", "./", "//", "/./.", "a/.."};
    n5_container *c;
    int32_t flag;
    size_t len = 4242, i;
    char bad[16];
    uint64_t dims[1] = {2};

    c = CHECK_HANDLE(n5_container_open(root, N5_MODE_CREATE, NULL));
    if (c == NULL)
        return;
    for (i = 0; i < sizeof root_spellings / sizeof root_spellings[0]; i++) {
        flag = -1;
        CHECK_OK(n5_exists(c, root_spellings[i], &flag));
        CHECK_EQ(flag, 1);
        CHECK_OK(n5_dataset_exists(c, root_spellings[i], &flag));
        CHECK_EQ(flag, 0);
        CHECK_STR_FREE(n5t_attributes(c, root_spellings[i]), "{\"n5\":\"4.0.0\"}");
        CHECK_ERR(n5_remove(c, root_spellings[i]), N5_ERR_INVALID_ARGUMENT);
    }
    CHECK_MSG_HAS("root");
    CHECK_EQ(n5t_tree_count(root), 1);

    /* leading "/", "." and ".." resolve */
    CHECK_OK(n5_group_create(c, "/lead/ing"));
    CHECK(n5t_exists(n5t_join(root, "lead/ing")));
    CHECK_OK(n5_group_create(c, "a/../b"));
    CHECK(n5t_exists(n5t_join(root, "b")));
    CHECK(!n5t_exists(n5t_join(root, "a")));
    CHECK_OK(n5_group_create(c, "./c/./d/"));
    CHECK(n5t_exists(n5t_join(root, "c/d")));
    CHECK_OK(n5_exists(c, "c/x/../d", &flag));
    CHECK_EQ(flag, 1);
    CHECK_OK(n5_exists(c, "/lead//ing/", &flag));
    CHECK_EQ(flag, 1);
    CHECK_OK(n5_attributes_set(c, "/c/d", "{\"v\":1}"));
    CHECK_STR_FREE(n5t_attribute(c, "c/d", "v"), "1");

    /* names with spaces, unicode, '#', '%' are ordinary */
    CHECK_OK(n5_group_create(c, "with space/\xc3\xbcn\xc3\xaf/#h%25"));
    CHECK_OK(n5_exists(c, "with space/\xc3\xbcn\xc3\xaf/#h%25", &flag));
    CHECK_EQ(flag, 1);
    CHECK_STR_FREE(n5t_list(c, "with space"), "[\"\xc3\xbcn\xc3\xaf\"]");
    CHECK_NAMES(c, "with space", 1, "\xc3\xbcn\xc3\xaf\0\xc3\xbcn\xc3\xaf/#h%25", 18, 2);

    /* ".." above the root: an error for every function taking a path */
    for (i = 0; i < sizeof escaping / sizeof escaping[0]; i++) {
        const char *p = escaping[i];
        n5_dataset *d;
        flag = 5;
        CHECK_ERR(n5_exists(c, p, &flag), N5_ERR_INVALID_ARGUMENT);
        CHECK_EQ(flag, 5);
        CHECK_MSG_HAS("above the container root");
        CHECK_ERR(n5_dataset_exists(c, p, &flag), N5_ERR_INVALID_ARGUMENT);
        CHECK_ERR(n5_group_create(c, p), N5_ERR_INVALID_ARGUMENT);
        CHECK_ERR(n5_list(c, p, NULL, 0, &len), N5_ERR_INVALID_ARGUMENT);
        CHECK_EQ(len, 4242);
        CHECK_ERR(n5_list_recursive(c, p, NULL, 0, &len), N5_ERR_INVALID_ARGUMENT);
        CHECK_ERR(n5_list_names(c, p, 0, NULL, 0, &len, NULL), N5_ERR_INVALID_ARGUMENT);
        CHECK_ERR(n5_list_names(c, p, 1, NULL, 0, &len, NULL), N5_ERR_INVALID_ARGUMENT);
        CHECK_EQ(len, 4242);
        CHECK_ERR(n5_remove(c, p), N5_ERR_INVALID_ARGUMENT);
        CHECK_ERR(n5_attributes_get(c, p, NULL, 0, &len), N5_ERR_INVALID_ARGUMENT);
        CHECK_ERR(n5_attributes_set(c, p, "{}"), N5_ERR_INVALID_ARGUMENT);
        CHECK_ERR(n5_attribute_get(c, p, "k", NULL, 0, &len), N5_ERR_INVALID_ARGUMENT);
        CHECK_ERR(n5_attribute_set(c, p, "k", "1"), N5_ERR_INVALID_ARGUMENT);
        CHECK_ERR(n5_attribute_remove(c, p, "k"), N5_ERR_INVALID_ARGUMENT);
        d = n5_dataset_create(c, p, 1, dims, dims, N5_DTYPE_UINT8, NULL);
        CHECK_NULL_ERR(d, N5_ERR_INVALID_ARGUMENT);
        n5_dataset_free(d);
        d = n5_dataset_open(c, p);
        CHECK_NULL_ERR(d, N5_ERR_INVALID_ARGUMENT);
        n5_dataset_free(d);
    }
    /* nothing was made beside the root */
    CHECK(!n5t_exists(n5t_path("x")));
    CHECK(!n5t_exists(n5t_path("etc")));
    CHECK(!n5t_exists(n5t_path("k")));

    /* invalid UTF-8 in paths */
    snprintf(bad, sizeof bad, "g\xff");
    CHECK_ERR(n5_exists(c, bad, &flag), N5_ERR_INVALID_UTF8);
    CHECK_MSG_HAS("path");
    CHECK_ERR(n5_dataset_exists(c, bad, &flag), N5_ERR_INVALID_UTF8);
    CHECK_ERR(n5_group_create(c, bad), N5_ERR_INVALID_UTF8);
    CHECK_ERR(n5_group_create(c, "ok/\xc3("), N5_ERR_INVALID_UTF8);
    CHECK_ERR(n5_group_create(c, "\xed\xa0\x80"), N5_ERR_INVALID_UTF8); /* surrogate */
    CHECK_ERR(n5_group_create(c, "\xc0\xaf"), N5_ERR_INVALID_UTF8);     /* overlong '/' */
    CHECK_ERR(n5_list(c, bad, NULL, 0, &len), N5_ERR_INVALID_UTF8);
    CHECK_ERR(n5_list_recursive(c, bad, NULL, 0, &len), N5_ERR_INVALID_UTF8);
    CHECK_ERR(n5_list_names(c, bad, 0, NULL, 0, &len, NULL), N5_ERR_INVALID_UTF8);
    CHECK_ERR(n5_remove(c, bad), N5_ERR_INVALID_UTF8);
    CHECK_ERR(n5_attributes_get(c, bad, NULL, 0, &len), N5_ERR_INVALID_UTF8);
    CHECK_ERR(n5_attributes_set(c, bad, "{}"), N5_ERR_INVALID_UTF8);
    CHECK_ERR(n5_attribute_get(c, bad, "k", NULL, 0, &len), N5_ERR_INVALID_UTF8);
    CHECK_ERR(n5_attribute_set(c, bad, "k", "1"), N5_ERR_INVALID_UTF8);
    CHECK_ERR(n5_attribute_remove(c, bad, "k"), N5_ERR_INVALID_UTF8);
    CHECK_NULL_ERR(n5_dataset_create(c, bad, 1, dims, dims, N5_DTYPE_UINT8, NULL),
                   N5_ERR_INVALID_UTF8);
    CHECK_NULL_ERR(n5_dataset_open(c, bad), N5_ERR_INVALID_UTF8);
    CHECK_STR_FREE(n5t_list(c, ""), "[\"b\",\"c\",\"lead\",\"with space\"]");
    n5_container_free(c);
}

static void test_hierarchy(void)
{
    const char *root = n5t_fresh("hier");
    n5_container *c;
    n5_dataset *d;
    struct n5t_cpath p;
    int32_t flag;
    size_t len;
    uint64_t dims[2] = {4, 4}, bs[2] = {2, 2}, pos[2] = {1, 1};
    uint8_t block[4] = {0};

    c = CHECK_HANDLE(n5_container_open(root, N5_MODE_CREATE, NULL));
    if (c == NULL)
        return;
    p.c = c;
    p.key = NULL;

    /* an empty container */
    p.path = "";
    CHECK_TEXT(n5t_text_list, &p, "[]");
    CHECK_TEXT(n5t_text_list_recursive, &p, "[]");
    CHECK_NAMES(c, "", 0, "", 0, 0);
    CHECK_NAMES(c, "/", 1, "", 0, 0);

    /* nested creation */
    CHECK_OK(n5_group_create(c, "z/y/x"));
    CHECK_OK(n5_exists(c, "z", &flag));
    CHECK_EQ(flag, 1);
    CHECK_OK(n5_exists(c, "z/y", &flag));
    CHECK_EQ(flag, 1);
    CHECK_OK(n5_exists(c, "z/y/x", &flag));
    CHECK_EQ(flag, 1);
    CHECK_OK(n5_exists(c, "z/y/x/w", &flag));
    CHECK_EQ(flag, 0);
    CHECK_OK(n5_dataset_exists(c, "z/y", &flag));
    CHECK_EQ(flag, 0);
    /* groups get no attributes.json of their own */
    CHECK(!n5t_exists(n5t_join(root, "z/attributes.json")));
    /* existing groups are left as they are */
    CHECK_OK(n5_attributes_set(c, "z", "{\"keep\":true}"));
    CHECK_OK(n5_group_create(c, "z"));
    CHECK_OK(n5_group_create(c, "z/y/x"));
    CHECK_STR_FREE(n5t_attributes(c, "z"), "{\"keep\":true}");

    CHECK_OK(n5_group_create(c, "a"));
    CHECK_OK(n5_group_create(c, "m/n"));
    d = CHECK_HANDLE(n5_dataset_create(c, "m/ds", 2, dims, bs, N5_DTYPE_UINT8, NULL));
    CHECK_OK(n5_block_write(d, 2, pos, bs, N5_DTYPE_UINT8, block, 4));
    CHECK_OK(n5_dataset_exists(c, "m/ds", &flag));
    CHECK_EQ(flag, 1);
    CHECK_OK(n5_exists(c, "m/ds", &flag));
    CHECK_EQ(flag, 1);
    CHECK_OK(n5_dataset_exists(c, "m/nothing", &flag));
    CHECK_EQ(flag, 0);
    /* things that are not groups are not listed */
    CHECK(mkdir(n5t_join(root, ".hidden"), 0755) == 0);
    CHECK(n5t_write_file(n5t_join(root, "notes.txt"), "x", 1) == 0);

    p.path = "";
    CHECK_TEXT(n5t_text_list, &p, "[\"a\",\"m\",\"z\"]");
    CHECK_TEXT(n5t_text_list_recursive, &p,
               "[\"a\",\"m\",\"m/ds\",\"m/n\",\"z\",\"z/y\",\"z/y/x\"]");
    p.path = "/m";
    CHECK_TEXT(n5t_text_list, &p, "[\"ds\",\"n\"]");
    CHECK_TEXT(n5t_text_list_recursive, &p, "[\"ds\",\"n\"]");
    p.path = "z";
    CHECK_TEXT(n5t_text_list_recursive, &p, "[\"y\",\"y/x\"]");
    /* a dataset has no children (block directories are not groups) */
    p.path = "m/ds";
    CHECK_TEXT(n5t_text_list, &p, "[]");
    CHECK_TEXT(n5t_text_list_recursive, &p, "[]");
    p.path = "a";
    CHECK_TEXT(n5t_text_list, &p, "[]");
    /* the same names, packed */
    CHECK_NAMES(c, "", 0, "a\0m\0z", sizeof "a\0m\0z", 3);
    CHECK_NAMES(c, "", 1, "a\0m\0m/ds\0m/n\0z\0z/y\0z/y/x", 25, 7);
    CHECK_NAMES(c, "/m", 0, "ds\0n", 5, 2);
    CHECK_NAMES(c, "z", 1, "y\0y/x", 6, 2);
    CHECK_NAMES(c, "m/ds", 0, "", 0, 0);
    CHECK_NAMES(c, "m/ds", 1, "", 0, 0);
    CHECK_NAMES(c, "a", 0, "", 0, 0);
    {
        size_t nlen = 4242, ncount = 4242;
        CHECK_ERR(n5_list_names(c, "", 2, NULL, 0, &nlen, &ncount), N5_ERR_INVALID_ARGUMENT);
        CHECK_MSG_HAS("recursive");
        CHECK_ERR(n5_list_names(c, "", -1, NULL, 0, &nlen, &ncount), N5_ERR_INVALID_ARGUMENT);
        CHECK_ERR(n5_list_names(c, "missing", 0, NULL, 0, &nlen, &ncount), N5_ERR_NOT_FOUND);
        CHECK_MSG_HAS("missing");
        CHECK_ERR(n5_list_names(c, "missing", 1, NULL, 0, &nlen, &ncount), N5_ERR_NOT_FOUND);
        CHECK_ERR(n5_list_names(c, "m/\xff", 0, NULL, 0, &nlen, &ncount), N5_ERR_INVALID_UTF8);
        CHECK_ERR(n5_list_names(c, "m/../..", 1, NULL, 0, &nlen, &ncount),
                  N5_ERR_INVALID_ARGUMENT);
        CHECK(nlen == 4242 && ncount == 4242);
    }
    /* missing paths: NOT_FOUND, out_len untouched */
    len = 31337;
    CHECK_ERR(n5_list(c, "missing", NULL, 0, &len), N5_ERR_NOT_FOUND);
    CHECK_MSG_HAS("missing");
    CHECK_EQ(len, 31337);
    CHECK_ERR(n5_list(c, "a/missing", NULL, 0, &len), N5_ERR_NOT_FOUND);
    CHECK_ERR(n5_list_recursive(c, "missing", NULL, 0, &len), N5_ERR_NOT_FOUND);
    CHECK_EQ(len, 31337);
    CHECK_ERR(n5_list(c, "notes.txt", NULL, 0, &len), N5_ERR_NOT_FOUND);

    /* a file where a group should be */
    CHECK_ERR(n5_group_create(c, "notes.txt/sub"), N5_ERR_ALREADY_EXISTS);
    CHECK_OK(n5_exists(c, "notes.txt", &flag));
    CHECK_EQ(flag, 0);

    /* remove */
    CHECK_OK(n5_remove(c, "z/y"));
    CHECK_OK(n5_exists(c, "z/y", &flag));
    CHECK_EQ(flag, 0);
    CHECK_OK(n5_exists(c, "z", &flag));
    CHECK_EQ(flag, 1);
    CHECK_OK(n5_remove(c, "z/y"));           /* already gone: fine */
    CHECK_OK(n5_remove(c, "never/existed")); /* never there: fine */
    CHECK_OK(n5_remove(c, "/m/ds"));
    CHECK_OK(n5_dataset_exists(c, "m/ds", &flag));
    CHECK_EQ(flag, 0);
    CHECK(!n5t_exists(n5t_join(root, "m/ds")));
    /* the open dataset handle of a removed dataset reads zeros */
    CHECK_OK(n5_block_exists(d, 2, pos, &flag));
    CHECK_EQ(flag, 0);
    n5_dataset_free(d);
    CHECK_ERR(n5_remove(c, ""), N5_ERR_INVALID_ARGUMENT);
    CHECK_ERR(n5_remove(c, "m/.."), N5_ERR_INVALID_ARGUMENT);
    CHECK(n5t_exists(n5t_join(root, "attributes.json")));
    p.path = "";
    CHECK_TEXT(n5t_text_list_recursive, &p, "[\"a\",\"m\",\"m/n\",\"z\"]");
    n5_container_free(c);
}

/* n5_container_remove_stale_temporaries: what killed writers leave is
   removed once older than the age given, and nothing else is touched. */
static void test_stale_temporaries(void)
{
    const char *root = n5t_fresh("stale");
    uint64_t dims[2] = {4, 4}, bs[2] = {2, 2}, pos[2] = {0, 0};
    uint8_t block[4] = {1, 2, 3, 4}, back[4];
    uint64_t removed = 99, bytes = 99, shape[2];
    int32_t found = 0;
    n5_container *c = CHECK_HANDLE(n5_container_open(root, N5_MODE_CREATE, NULL));
    n5_dataset *d;
    if (c == NULL)
        return;
    d = CHECK_HANDLE(n5_dataset_create(c, "d", 2, dims, bs, N5_DTYPE_UINT8, NULL));
    CHECK_OK(n5_block_write(d, 2, pos, bs, N5_DTYPE_UINT8, block, sizeof block));
    CHECK(n5t_write_file(n5t_join(root, "d/0/.n5tmp.0.4242.7"), "half a block", 12) == 0);
    CHECK(n5t_write_file(n5t_join(root, ".n5tmp.attributes.json.4242.8"), "{", 1) == 0);
    /* younger than an hour: kept */
    CHECK_OK(n5_container_remove_stale_temporaries(c, 3600, &removed, &bytes));
    CHECK_EQ(removed, 0);
    CHECK_EQ(bytes, 0);
    CHECK(n5t_exists(n5t_join(root, "d/0/.n5tmp.0.4242.7")));
    CHECK_OK(n5_container_remove_stale_temporaries(c, 0, &removed, &bytes));
    CHECK_EQ(removed, 2);
    CHECK_EQ(bytes, 13);
    CHECK(!n5t_exists(n5t_join(root, "d/0/.n5tmp.0.4242.7")));
    CHECK(!n5t_exists(n5t_join(root, ".n5tmp.attributes.json.4242.8")));
    CHECK_OK(n5_container_remove_stale_temporaries(c, 0, NULL, NULL));
    CHECK_OK(n5_block_read(d, 2, pos, N5_DTYPE_UINT8, back, sizeof back, shape, &found));
    CHECK_EQ(found, 1);
    CHECK(memcmp(back, block, sizeof block) == 0);
    CHECK_ERR(n5_container_remove_stale_temporaries(NULL, 0, NULL, NULL), N5_ERR_NULL_POINTER);
    n5_dataset_free(d);
    n5_container_free(c);
}

int main(void)
{
    n5t_init("container");
    RUN(test_modes);
    RUN(test_options);
    RUN(test_getters);
    RUN(test_read_only);
    RUN(test_paths);
    RUN(test_hierarchy);
    RUN(test_stale_temporaries);
    return n5t_finish();
}
