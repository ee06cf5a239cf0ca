/*
 * Attributes: whole documents (n5_attributes_get / n5_attributes_set, merge
 * semantics) and single values by N5 attribute path (n5_attribute_get /
 * n5_attribute_set / n5_attribute_remove), compared as the exact JSON text
 * the library returns.
 */
#include "n5_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static n5_container *open_fresh(const char **root_out)
{
    const char *root = n5t_fresh("attrs");
    if (root_out)
        *root_out = root;
    return CHECK_HANDLE(n5_container_open(root, N5_MODE_CREATE, NULL));
}

static void test_whole_documents(void)
{
    const char *root;
    n5_container *c = open_fresh(&root);
    struct n5t_cpath p;
    size_t len = 777;
    char *file, *before;

    if (c == NULL)
        return;
    p.c = c;
    p.key = NULL;

    p.path = "";
    CHECK_TEXT(n5t_text_attributes, &p, "{\"n5\":\"4.0.0\"}");
    CHECK_OK(n5_group_create(c, "g/h"));
    p.path = "g";
    CHECK_TEXT(n5t_text_attributes, &p, "{}");
    CHECK(!n5t_exists(n5t_join(root, "g/attributes.json")));
    CHECK_ERR(n5_attributes_get(c, "nope", NULL, 0, &len), N5_ERR_NOT_FOUND);
    CHECK_MSG_HAS("nope");
    CHECK_EQ(len, 777);
    CHECK_ERR(n5_attributes_get(c, "g/h/nope", NULL, 0, &len), N5_ERR_NOT_FOUND);

    /* merge: each top-level key replaces the stored value; null is stored */
    CHECK_OK(n5_attributes_set(c, "g", "{\"a\":1,\"b\":{\"x\":1,\"z\":[1,2]},\"s\":\"t\"}"));
    CHECK_TEXT(n5t_text_attributes, &p, "{\"a\":1,\"b\":{\"x\":1,\"z\":[1,2]},\"s\":\"t\"}");
    CHECK_OK(n5_attributes_set(c, "g", "{\"b\":{\"y\":2},\"c\":null,\"a\":[true]}"));
    CHECK_TEXT(n5t_text_attributes, &p, "{\"a\":[true],\"b\":{\"y\":2},\"s\":\"t\",\"c\":null}");
    /* the file holds what the getter returns */
    file = n5t_read_file(n5t_join(root, "g/attributes.json"), NULL);
    CHECK_STR_FREE(n5t_attributes(c, "g"), file);
    free(file);
    /* {} changes nothing; keys are plain keys, not attribute paths */
    CHECK_OK(n5_attributes_set(c, "g", "{}"));
    CHECK_OK(n5_attributes_set(c, "g", " {\"p/q\" : 1, \"r[0]\": 2} "));
    CHECK_TEXT(n5t_text_attributes, &p,
               "{\"a\":[true],\"b\":{\"y\":2},\"s\":\"t\",\"c\":null,\"p/q\":1,\"r[0]\":2}");
    CHECK_STR_FREE(n5t_attribute(c, "g", "p\\/q"), "1");
    CHECK_STR_FREE(n5t_attribute(c, "g", "\\[0]"), NULL);
    CHECK_STR_FREE(n5t_attribute(c, "g", "r\\[0]"), "2");
    /* merging into a group without attributes.json creates it */
    CHECK_OK(n5_attributes_set(c, "g/h", "{}"));
    CHECK(n5t_exists(n5t_join(root, "g/h/attributes.json")));
    CHECK_STR_FREE(n5t_attributes(c, "g/h"), "{}");
    /* numbers exactly as written, unicode as is */
    CHECK_OK(n5_attributes_set(c, "g/h",
                               "{\"u64\":18446744073709551615,\"f\":-0.0,\"tiny\":5e-324,"
                               "\"\xc3\xa9t\xc3\xa9\":\"\xe2\x82\xac\"}"));
    CHECK_STR_FREE(n5t_attributes(c, "g/h"),
                   "{\"u64\":18446744073709551615,\"f\":-0.0,\"tiny\":5e-324,"
                   "\"\xc3\xa9t\xc3\xa9\":\"\xe2\x82\xac\"}");
    CHECK_STR_FREE(n5t_attribute(c, "g/h", "\xc3\xa9t\xc3\xa9"), "\"\xe2\x82\xac\"");

    /* errors change nothing */
    before = n5t_tree_fingerprint(root);
    CHECK_ERR(n5_attributes_set(c, "g", "[1,2]"), N5_ERR_JSON);
    CHECK_MSG_HAS("object");
    CHECK_ERR(n5_attributes_set(c, "g", "1"), N5_ERR_JSON);
    CHECK_ERR(n5_attributes_set(c, "g", "null"), N5_ERR_JSON);
    CHECK_ERR(n5_attributes_set(c, "g", "\"text\""), N5_ERR_JSON);
    CHECK_ERR(n5_attributes_set(c, "g", "{"), N5_ERR_JSON);
    CHECK_ERR(n5_attributes_set(c, "g", ""), N5_ERR_JSON);
    CHECK_ERR(n5_attributes_set(c, "g", "{\"a\":1} {\"b\":2}"), N5_ERR_JSON);
    CHECK_ERR(n5_attributes_set(c, "g", "{'a':1}"), N5_ERR_JSON);
    CHECK_ERR(n5_attributes_set(c, "g", "{\"a\":\"\xff\"}"), N5_ERR_INVALID_UTF8);
    CHECK_ERR(n5_attributes_set(c, "missing", "{\"a\":1}"), N5_ERR_NOT_FOUND);
    CHECK_MSG_HAS("missing");
    CHECK_ERR(n5_attributes_set(c, "g/missing/deeper", "{}"), N5_ERR_NOT_FOUND);
    CHECK_ERR(n5_attributes_set(c, "g", NULL), N5_ERR_NULL_POINTER);
    {
        char *after = n5t_tree_fingerprint(root);
        CHECK_STR(after, before);
        free(after);
    }
    free(before);
    CHECK(!n5t_exists(n5t_join(root, "missing")));
    n5_container_free(c);
}

static void test_attribute_paths(void)
{
    const char *root;
    n5_container *c = open_fresh(&root);
    struct n5t_cpath p;
    size_t len = 555;

    if (c == NULL)
        return;
    CHECK_OK(n5_group_create(c, "g"));
    p.c = c;
    p.path = "g";

    /* intermediate objects and arrays; arrays grow with 0 for numbers... */
    CHECK_OK(n5_attribute_set(c, "g", "arr[2]", "5"));
    CHECK_STR_FREE(n5t_attributes(c, "g"), "{\"arr\":[0,0,5]}");
    /* ... and null otherwise */
    CHECK_OK(n5_attribute_set(c, "g", "strs[2]", "\"s\""));
    CHECK_OK(n5_attribute_set(c, "g", "arr[4]", "{\"k\":1}"));
    CHECK_OK(n5_attribute_set(c, "g", "nums[1]", "1.5"));
    CHECK_STR_FREE(n5t_attributes(c, "g"),
                   "{\"arr\":[0,0,5,null,{\"k\":1}],\"strs\":[null,null,\"s\"],"
                   "\"nums\":[0,1.5]}");
    CHECK_OK(n5_attribute_set(c, "g", "a/b[2]", "true"));
    CHECK_STR_FREE(n5t_attribute(c, "g", "a"), "{\"b\":[null,null,true]}");
    CHECK_OK(n5_attribute_set(c, "g", "obj/list[1]/name", "\"n\""));
    CHECK_STR_FREE(n5t_attribute(c, "g", "obj"), "{\"list\":[null,{\"name\":\"n\"}]}");
    CHECK_OK(n5_attribute_set(c, "g", "m[1][0]", "7"));
    CHECK_STR_FREE(n5t_attribute(c, "g", "m"), "[null,[7]]");

    /* reading by path, leading '/', whole document */
    p.key = "a/b[2]";
    CHECK_TEXT(n5t_text_attribute, &p, "true");
    p.key = "/a/b[2]";
    CHECK_TEXT(n5t_text_attribute, &p, "true");
    p.key = "a/b/[2]";
    CHECK_TEXT(n5t_text_attribute, &p, "true");
    p.key = "obj/list[1]/name";
    CHECK_TEXT(n5t_text_attribute, &p, "\"n\"");
    p.key = "arr[4]/k";
    CHECK_TEXT(n5t_text_attribute, &p, "1");
    p.key = "a/b[0]";
    CHECK_TEXT(n5t_text_attribute, &p, "null");
    CHECK_STR_FREE(n5t_attribute(c, "g", "x/../a/b[2]"), "true");
    {
        char *whole = n5t_attributes(c, "g");
        CHECK(whole != NULL);
        CHECK_STR_FREE(n5t_attribute(c, "g", "/"), whole);
        CHECK_STR_FREE(n5t_attribute(c, "g", ""), whole);
        free(whole);
    }

    /* escapes: "\/" is a '/' in a key, "\[" a '[' */
    CHECK_OK(n5_attribute_set(c, "g", "x\\/y", "1"));
    CHECK_OK(n5_attribute_set(c, "g", "\\[0]", "2"));
    CHECK_OK(n5_attribute_set(c, "g", "e/k\\/l[1]", "3"));
    CHECK_STR_FREE(n5t_attribute(c, "g", "x\\/y"), "1");
    CHECK_STR_FREE(n5t_attribute(c, "g", "\\[0]"), "2");
    CHECK_STR_FREE(n5t_attribute(c, "g", "e"), "{\"k/l\":[0,3]}");
    CHECK_STR_FREE(n5t_attributes(c, "g"),
                   "{\"arr\":[0,0,5,null,{\"k\":1}],\"strs\":[null,null,\"s\"],"
                   "\"nums\":[0,1.5],\"a\":{\"b\":[null,null,true]},"
                   "\"obj\":{\"list\":[null,{\"name\":\"n\"}]},\"m\":[null,[7]],"
                   "\"x/y\":1,\"[0]\":2,\"e\":{\"k/l\":[0,3]}}");

    /* replacing values, writing through a primitive, null stored */
    CHECK_OK(n5_attribute_set(c, "g", "x\\/y", "{\"deep\":[1]}"));
    CHECK_STR_FREE(n5t_attribute(c, "g", "x\\/y/deep[0]"), "1");
    CHECK_OK(n5_attribute_set(c, "g", "nums[0]/sub", "\"v\""));
    CHECK_STR_FREE(n5t_attribute(c, "g", "nums"), "[{\"sub\":\"v\"},1.5]");
    CHECK_OK(n5_attribute_set(c, "g", "n", "null"));
    CHECK_STR_FREE(n5t_attribute(c, "g", "n"), "null");
    CHECK_OK(n5_attribute_set(c, "g", "big", "18446744073709551616"));
    CHECK_STR_FREE(n5t_attribute(c, "g", "big"), "18446744073709551616");
    CHECK_OK(n5_attribute_set(c, "g", "ws", "  [ 1 , 2 ]  "));
    CHECK_STR_FREE(n5t_attribute(c, "g", "ws"), "[1,2]");

    /* missing keys: NOT_FOUND naming the key, out_len untouched */
    CHECK_ERR(n5_attribute_get(c, "g", "missing", NULL, 0, &len), N5_ERR_NOT_FOUND);
    CHECK_MSG_HAS("missing");
    CHECK_EQ(len, 555);
    CHECK_ERR(n5_attribute_get(c, "g", "a/b[3]", NULL, 0, &len), N5_ERR_NOT_FOUND);
    CHECK_MSG_HAS("a/b[3]");
    CHECK_ERR(n5_attribute_get(c, "g", "a/missing", NULL, 0, &len), N5_ERR_NOT_FOUND);
    CHECK_ERR(n5_attribute_get(c, "g", "arr[2]/x", NULL, 0, &len), N5_ERR_NOT_FOUND);
    CHECK_ERR(n5_attribute_get(c, "g", "a[0]", NULL, 0, &len), N5_ERR_NOT_FOUND);
    CHECK_ERR(n5_attribute_get(c, "nogroup", "a", NULL, 0, &len), N5_ERR_NOT_FOUND);
    CHECK_EQ(len, 555);

    /* remove: array elements after it shift down; missing keys are fine */
    CHECK_OK(n5_attribute_remove(c, "g", "arr[1]"));
    CHECK_STR_FREE(n5t_attribute(c, "g", "arr"), "[0,5,null,{\"k\":1}]");
    CHECK_OK(n5_attribute_remove(c, "g", "obj/list"));
    CHECK_STR_FREE(n5t_attribute(c, "g", "obj"), "{}");
    CHECK_OK(n5_attribute_remove(c, "g", "/e/k\\/l"));
    CHECK_STR_FREE(n5t_attribute(c, "g", "e"), "{}");
    CHECK_OK(n5_attribute_remove(c, "g", "n"));
    CHECK_ERR(n5_attribute_get(c, "g", "n", NULL, 0, &len), N5_ERR_NOT_FOUND);
    CHECK_OK(n5_attribute_remove(c, "g", "not/there"));
    CHECK_OK(n5_attribute_remove(c, "g", "arr[99]"));
    CHECK_OK(n5_attribute_remove(c, "g", "not/there[3]"));
    CHECK_STR_FREE(n5t_attribute(c, "g", "arr"), "[0,5,null,{\"k\":1}]");

    /* groups without attributes.json */
    CHECK_OK(n5_group_create(c, "empty"));
    CHECK_OK(n5_attribute_remove(c, "empty", "k"));
    CHECK(!n5t_exists(n5t_join(root, "empty/attributes.json")));
    CHECK_ERR(n5_attribute_get(c, "empty", "k", NULL, 0, &len), N5_ERR_NOT_FOUND);
    CHECK_OK(n5_attribute_set(c, "empty", "k", "1"));
    CHECK_STR_FREE(n5t_attributes(c, "empty"), "{\"k\":1}");

    /* errors */
    CHECK_ERR(n5_attribute_set(c, "nogroup", "k", "1"), N5_ERR_NOT_FOUND);
    CHECK(!n5t_exists(n5t_join(root, "nogroup")));
    CHECK_ERR(n5_attribute_remove(c, "nogroup", "k"), N5_ERR_NOT_FOUND);
    CHECK_ERR(n5_attribute_set(c, "g", "k", "{"), N5_ERR_JSON);
    CHECK_MSG_HAS("json_value");
    CHECK_ERR(n5_attribute_set(c, "g", "k", ""), N5_ERR_JSON);
    CHECK_ERR(n5_attribute_set(c, "g", "k", "nul"), N5_ERR_JSON);
    CHECK_ERR(n5_attribute_set(c, "g", "k", "1 2"), N5_ERR_JSON);
    CHECK_ERR(n5_attribute_set(c, "g", "k", "\"\xff\""), N5_ERR_INVALID_UTF8);
    CHECK_ERR(n5_attribute_set(c, "g", "k\xff", "1"), N5_ERR_INVALID_UTF8);
    CHECK_ERR(n5_attribute_get(c, "g", "k\xff", NULL, 0, &len), N5_ERR_INVALID_UTF8);
    CHECK_ERR(n5_attribute_remove(c, "g", "k\xff"), N5_ERR_INVALID_UTF8);
    /* an index beyond Java's int, or an array growing past the limit */
    CHECK_ERR(n5_attribute_set(c, "g", "huge[99999999999]", "1"), N5_ERR_INVALID_ARGUMENT);
    CHECK_ERR(n5_attribute_get(c, "g", "arr[99999999999]", NULL, 0, &len),
              N5_ERR_INVALID_ARGUMENT);
    CHECK_ERR(n5_attribute_set(c, "g", "huge[2000000000]", "1"), N5_ERR_INVALID_ARGUMENT);
    CHECK_ERR(n5_attribute_get(c, "g", "huge", NULL, 0, &len), N5_ERR_NOT_FOUND);
    CHECK_STR_FREE(n5t_attribute(c, "g", "arr"), "[0,5,null,{\"k\":1}]");
    n5_container_free(c);
}

/* Attributes on datasets sit beside the dataset's own members. */
static void test_dataset_attributes(void)
{
    n5_container *c = open_fresh(NULL);
    n5_dataset *d;
    uint64_t dims[2] = {5, 4}, bs[2] = {2, 3};
    if (c == NULL)
        return;
    d = CHECK_HANDLE(n5_dataset_create(c, "ds", 2, dims, bs, N5_DTYPE_INT16, NULL));
    CHECK_STR_FREE(n5t_attributes(c, "ds"),
                   "{\"dimensions\":[5,4],\"blockSize\":[2,3],\"dataType\":\"int16\","
                   "\"compression\":{\"type\":\"raw\"}}");
    CHECK_OK(n5_attributes_set(c, "ds", "{\"resolution\":[4,4]}"));
    CHECK_OK(n5_attribute_set(c, "ds", "unit", "\"nm\""));
    CHECK_STR_FREE(n5t_attribute(c, "ds", "dimensions[1]"), "4");
    CHECK_STR_FREE(n5t_attribute(c, "ds", "compression/type"), "\"raw\"");
    CHECK_STR_FREE(n5t_attributes(c, "ds"),
                   "{\"dimensions\":[5,4],\"blockSize\":[2,3],\"dataType\":\"int16\","
                   "\"compression\":{\"type\":\"raw\"},\"resolution\":[4,4],\"unit\":\"nm\"}");
    n5_dataset_free(d);
    /* the dataset still opens */
    d = CHECK_HANDLE(n5_dataset_open(c, "ds"));
    n5_dataset_free(d);
    n5_container_free(c);
}

int main(void)
{
    n5t_init("attributes");
    RUN(test_whole_documents);
    RUN(test_attribute_paths);
    RUN(test_dataset_attributes);
    return n5t_finish();
}
