/*
 * n5_test.h: a small test harness for the C tests of libn5.
 *
 * Checks never stop the program: each failure prints file:line, the failed
 * expression, the expected and actual status names and the thread's last
 * error message, and is counted; main returns n5t_finish(), which is 1 when
 * any check failed. Every program works in a scratch directory of its own
 * (mkdtemp under $TMPDIR or /tmp), removed by n5t_finish().
 *
 * The status checks also check the last-error contract on every call: after
 * N5_OK the thread's last error is N5_OK with message "", and after a failure
 * n5_last_error_code() equals the returned status and the message is not
 * empty.
 */
#ifndef N5_TEST_H
#define N5_TEST_H

#include <stddef.h>
#include <stdint.h>

#include "n5.h"

/* ---- checks ------------------------------------------------------------- */

/* A condition. */
#define CHECK(cond) n5t_check((cond) ? 1 : 0, __FILE__, __LINE__, #cond)

/* A call that must return N5_OK (and leave the last error clear). */
#define CHECK_OK(expr) n5t_check_status((expr), N5_OK, __FILE__, __LINE__, #expr)

/* A call that must fail with `code` (and set the last error to it). */
#define CHECK_ERR(expr, code) n5t_check_status((expr), (code), __FILE__, __LINE__, #expr)

/* An opener that must return a handle; evaluates to the handle. */
#define CHECK_HANDLE(expr) n5t_check_handle((void *)(expr), __FILE__, __LINE__, #expr)

/* An opener that must return NULL with the last error `code`. */
#define CHECK_NULL_ERR(expr, code) \
    n5t_check_null((const void *)(expr), (code), __FILE__, __LINE__, #expr)

/* Two NUL-terminated strings are equal (NULL allowed on either side). */
#define CHECK_STR(actual, expected) \
    n5t_check_str((actual), (expected), __FILE__, __LINE__, #actual)

/* A malloc'd string (or NULL) equals `expected`; frees it. */
#define CHECK_STR_FREE(actual, expected) \
    n5t_check_str_free((actual), (expected), __FILE__, __LINE__, #actual)

/* Integers are equal. */
#define CHECK_EQ(actual, expected) \
    n5t_check_int((long long)(actual), (long long)(expected), __FILE__, __LINE__, #actual)

/* The thread's last error message contains `needle`. */
#define CHECK_MSG_HAS(needle) n5t_check_msg_has((needle), __FILE__, __LINE__)

/* The thread's last error is `code` (without making a call). */
#define CHECK_LAST(code) n5t_check_last((code), __FILE__, __LINE__)

/* The text output of `fn(ctx, buf, cap, out_len)` is `expected`, checked
   through the whole text convention of n5.h (size query, exact fit, one byte
   short, NULL buffer with capacity, out_len NULL). */
typedef n5_status (*n5t_text_fn)(const void *ctx, char *buf, size_t cap, size_t *out_len);
#define CHECK_TEXT(fn, ctx, expected) \
    n5t_check_text((fn), (ctx), (expected), __FILE__, __LINE__, #fn)

/* Run one test function. */
#define RUN(test) n5t_run(#test, (test))

int n5t_check(int ok, const char *file, int line, const char *expr);
int n5t_check_status(n5_status actual, n5_status expected, const char *file, int line,
                     const char *expr);
void *n5t_check_handle(void *handle, const char *file, int line, const char *expr);
int n5t_check_null(const void *ptr, n5_status expected, const char *file, int line,
                   const char *expr);
int n5t_check_str(const char *actual, const char *expected, const char *file, int line,
                  const char *expr);
int n5t_check_str_free(char *actual, const char *expected, const char *file, int line,
                       const char *expr);
int n5t_check_int(long long actual, long long expected, const char *file, int line,
                  const char *expr);
int n5t_check_msg_has(const char *needle, const char *file, int line);
int n5t_check_last(n5_status expected, const char *file, int line);
int n5t_check_text(n5t_text_fn fn, const void *ctx, const char *expected, const char *file,
                   int line, const char *what);

/* ---- program life cycle ------------------------------------------------- */

/* Create the scratch directory; call first in main. */
void n5t_init(const char *program);
/* Run `test`, printing its name and its failures. */
void n5t_run(const char *name, void (*test)(void));
/* Remove the scratch directory, print the summary; return main's exit code. */
int n5t_finish(void);
/* Number of checks made and failed so far (all threads). */
long n5t_checks(void);
long n5t_failures(void);

/* ---- scratch files ---------------------------------------------------- */

/* The scratch directory. */
const char *n5t_scratch(void);
/* `rel` under the scratch directory. The strings of n5t_path, n5t_join and
   n5t_fresh stay valid until n5t_finish (which frees them). */
const char *n5t_path(const char *rel);
/* "a/b" */
const char *n5t_join(const char *a, const char *b);
/* A new, not yet existing path under the scratch directory ("<prefix>.<n>"). */
const char *n5t_fresh(const char *prefix);
/* Whether something exists at the absolute path. */
int n5t_exists(const char *abs_path);
/* Read a whole file into a NUL-terminated malloc'd buffer (NULL if absent). */
char *n5t_read_file(const char *abs_path, size_t *len);
/* Write a file (replacing it). Returns 0 on success. */
int n5t_write_file(const char *abs_path, const void *data, size_t len);
/* Remove a directory tree (or a file). */
void n5t_rmtree(const char *abs_path);
/* A fingerprint of every entry under a directory (names, types, sizes and
   file contents), malloc'd; two equal fingerprints mean nothing changed. */
char *n5t_tree_fingerprint(const char *abs_path);
/* Number of entries under a directory, recursively (-1 if it does not exist). */
long n5t_tree_count(const char *abs_path);

/* ---- helpers -------------------------------------------------------------- */

/* Fill `n` bytes with a pattern depending on `seed`. */
void n5t_fill(void *buf, size_t n, unsigned seed);
/* Whether all `n` bytes are `byte`. */
int n5t_all_bytes(const void *buf, size_t n, unsigned char byte);
/* Product of `ndim` values. */
uint64_t n5t_prod(size_t ndim, const uint64_t *v);

/* Text adapters for CHECK_TEXT. */
struct n5t_cpath {
    const n5_container *c;
    const char *path;
    const char *key;
};
n5_status n5t_text_version(const void *c, char *buf, size_t cap, size_t *out_len);
n5_status n5t_text_root(const void *c, char *buf, size_t cap, size_t *out_len);
n5_status n5t_text_format(const void *c, char *buf, size_t cap, size_t *out_len);
n5_status n5t_text_options(const void *c, char *buf, size_t cap, size_t *out_len);
n5_status n5t_text_list(const void *cpath, char *buf, size_t cap, size_t *out_len);
n5_status n5t_text_list_recursive(const void *cpath, char *buf, size_t cap, size_t *out_len);
n5_status n5t_text_attributes(const void *cpath, char *buf, size_t cap, size_t *out_len);
n5_status n5t_text_attribute(const void *cpath, char *buf, size_t cap, size_t *out_len);
n5_status n5t_text_compression(const void *d, char *buf, size_t cap, size_t *out_len);
n5_status n5t_text_dataset_path(const void *d, char *buf, size_t cap, size_t *out_len);
n5_status n5t_text_block_list(const void *d, char *buf, size_t cap, size_t *out_len);

/* The text of a text-output call in a malloc'd buffer (NULL on failure). */
char *n5t_text(n5t_text_fn fn, const void *ctx);
/* Shorthands: n5_attributes_get / n5_attribute_get / n5_list as malloc'd text. */
char *n5t_attributes(const n5_container *c, const char *path);
char *n5t_attribute(const n5_container *c, const char *path, const char *key);
char *n5t_list(const n5_container *c, const char *path);

#endif /* N5_TEST_H */
