/*
 * n5_test.c: the test harness of the C tests (see n5_test.h).
 */
#include "n5_test.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static long g_checks;
static long g_failures;
static long g_test_failures;
static const char *g_program = "test";
static const char *g_test = "";
static char g_scratch[1024];
static unsigned long g_fresh;
/* Strings handed out by n5t_path, n5t_join and n5t_fresh: kept until n5t_finish. */
static char **g_arena;
static size_t g_arena_len, g_arena_cap;

static void count(int ok)
{
    pthread_mutex_lock(&g_lock);
    g_checks++;
    if (!ok) {
        g_failures++;
        g_test_failures++;
    }
    pthread_mutex_unlock(&g_lock);
}

static void fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    char text[2048];
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s:%d: FAILED [%s] %s\n    last error: %s: %s\n", file, line, g_test, text,
            n5_status_name(n5_last_error_code()), n5_last_error_message());
    count(0);
}

long n5t_checks(void)
{
    long n;
    pthread_mutex_lock(&g_lock);
    n = g_checks;
    pthread_mutex_unlock(&g_lock);
    return n;
}

long n5t_failures(void)
{
    long n;
    pthread_mutex_lock(&g_lock);
    n = g_failures;
    pthread_mutex_unlock(&g_lock);
    return n;
}

int n5t_check(int ok, const char *file, int line, const char *expr)
{
    if (!ok) {
        fail(file, line, "CHECK(%s)", expr);
        return 0;
    }
    count(1);
    return 1;
}

/* The last-error contract after a call that returned `status`. */
static int last_error_consistent(n5_status status, const char *file, int line, const char *expr)
{
    n5_status last = n5_last_error_code();
    const char *msg = n5_last_error_message();
    if (msg == NULL) {
        fail(file, line, "%s: n5_last_error_message() returned NULL", expr);
        return 0;
    }
    if (last != status) {
        fail(file, line, "%s returned %s but n5_last_error_code() is %s", expr,
             n5_status_name(status), n5_status_name(last));
        return 0;
    }
    if (status == N5_OK && msg[0] != '\0') {
        fail(file, line, "%s succeeded but the last error message is \"%s\"", expr, msg);
        return 0;
    }
    if (status != N5_OK && msg[0] == '\0') {
        fail(file, line, "%s failed with %s but the last error message is empty", expr,
             n5_status_name(status));
        return 0;
    }
    return 1;
}

int n5t_check_status(n5_status actual, n5_status expected, const char *file, int line,
                     const char *expr)
{
    if (actual != expected) {
        fail(file, line, "%s returned %s (%d), expected %s (%d)", expr, n5_status_name(actual),
             (int)actual, n5_status_name(expected), (int)expected);
        return 0;
    }
    if (!last_error_consistent(actual, file, line, expr))
        return 0;
    count(1);
    return 1;
}

void *n5t_check_handle(void *handle, const char *file, int line, const char *expr)
{
    if (handle == NULL) {
        fail(file, line, "%s returned NULL", expr);
        return NULL;
    }
    if (!last_error_consistent(N5_OK, file, line, expr))
        return handle;
    count(1);
    return handle;
}

int n5t_check_null(const void *ptr, n5_status expected, const char *file, int line,
                   const char *expr)
{
    if (ptr != NULL) {
        fail(file, line, "%s returned a handle, expected NULL with %s", expr,
             n5_status_name(expected));
        return 0;
    }
    if (n5_last_error_code() != expected) {
        fail(file, line, "%s returned NULL with %s, expected %s", expr,
             n5_status_name(n5_last_error_code()), n5_status_name(expected));
        return 0;
    }
    if (!last_error_consistent(expected, file, line, expr))
        return 0;
    count(1);
    return 1;
}

int n5t_check_str(const char *actual, const char *expected, const char *file, int line,
                  const char *expr)
{
    int ok = (actual == NULL && expected == NULL) ||
             (actual != NULL && expected != NULL && strcmp(actual, expected) == 0);
    if (!ok) {
        fail(file, line, "%s is %s%s%s, expected %s%s%s", expr, actual ? "\"" : "",
             actual ? actual : "NULL", actual ? "\"" : "", expected ? "\"" : "",
             expected ? expected : "NULL", expected ? "\"" : "");
        return 0;
    }
    count(1);
    return 1;
}

int n5t_check_str_free(char *actual, const char *expected, const char *file, int line,
                       const char *expr)
{
    int ok = n5t_check_str(actual, expected, file, line, expr);
    free(actual);
    return ok;
}

int n5t_check_int(long long actual, long long expected, const char *file, int line,
                  const char *expr)
{
    if (actual != expected) {
        fail(file, line, "%s is %lld, expected %lld", expr, actual, expected);
        return 0;
    }
    count(1);
    return 1;
}

int n5t_check_msg_has(const char *needle, const char *file, int line)
{
    const char *msg = n5_last_error_message();
    if (msg == NULL || strstr(msg, needle) == NULL) {
        fail(file, line, "the last error message does not contain \"%s\"", needle);
        return 0;
    }
    count(1);
    return 1;
}

int n5t_check_last(n5_status expected, const char *file, int line)
{
    n5_status last = n5_last_error_code();
    if (last != expected) {
        fail(file, line, "the last error is %s, expected %s", n5_status_name(last),
             n5_status_name(expected));
        return 0;
    }
    count(1);
    return 1;
}

int n5t_check_text(n5t_text_fn fn, const void *ctx, const char *expected, const char *file,
                   int line, const char *what)
{
    size_t want = strlen(expected);
    size_t len = (size_t)-1;
    size_t len2;
    char *buf;
    n5_status s;
    int ok = 1;

    /* 1. size query */
    s = fn(ctx, NULL, 0, &len);
    if (s != N5_OK || len != want) {
        fail(file, line, "%s size query: %s, length %zu, expected N5_OK and %zu", what,
             n5_status_name(s), len, want);
        return 0;
    }
    ok &= last_error_consistent(s, file, line, what);

    /* 2. exact fit */
    buf = malloc(want + 1);
    memset(buf, 'Z', want + 1);
    len2 = (size_t)-1;
    s = fn(ctx, buf, want + 1, &len2);
    if (s != N5_OK || len2 != want || buf[want] != '\0' || memcmp(buf, expected, want) != 0) {
        fail(file, line, "%s exact fit: %s, length %zu, text \"%.*s\", expected \"%s\"", what,
             n5_status_name(s), len2, (int)want, buf, expected);
        ok = 0;
    }
    ok &= last_error_consistent(s, file, line, what);
    free(buf);

    /* 3. one byte short (the NUL does not fit): untouched buffer */
    buf = malloc(want + 1);
    memset(buf, 0x5a, want + 1);
    len2 = (size_t)-1;
    s = fn(ctx, buf, want, &len2);
    if (s != N5_ERR_BUFFER_TOO_SMALL || len2 != want || !n5t_all_bytes(buf, want + 1, 0x5a)) {
        fail(file, line, "%s one byte short: %s, length %zu, buffer %s", what,
             n5_status_name(s), len2,
             n5t_all_bytes(buf, want + 1, 0x5a) ? "untouched" : "CHANGED");
        ok = 0;
    } else {
        ok &= last_error_consistent(s, file, line, what);
    }
    free(buf);

    /* 4. larger buffer, out_len NULL (optional with a buffer) */
    buf = malloc(want + 64);
    memset(buf, 'Z', want + 64);
    s = fn(ctx, buf, want + 64, NULL);
    if (s != N5_OK || strcmp(buf, expected) != 0) {
        fail(file, line, "%s with a large buffer and out_len NULL: %s", what, n5_status_name(s));
        ok = 0;
    }
    ok &= last_error_consistent(s, file, line, what);
    free(buf);

    /* 5. NULL buffer with a nonzero capacity: out_len untouched */
    len2 = 12345;
    s = fn(ctx, NULL, 8, &len2);
    if (s != N5_ERR_NULL_POINTER || len2 != 12345) {
        fail(file, line, "%s NULL buffer with capacity 8: %s, out_len %zu", what,
             n5_status_name(s), len2);
        ok = 0;
    } else {
        ok &= last_error_consistent(s, file, line, what);
    }

    /* 6. size query without out_len */
    s = fn(ctx, NULL, 0, NULL);
    if (s != N5_ERR_NULL_POINTER) {
        fail(file, line, "%s size query with out_len NULL: %s", what, n5_status_name(s));
        ok = 0;
    } else {
        ok &= last_error_consistent(s, file, line, what);
    }

    if (ok)
        count(1);
    return ok;
}

/* ---- life cycle ------------------------------------------------------- */

void n5t_init(const char *program)
{
    const char *tmp = getenv("TMPDIR");
    g_program = program;
    if (tmp == NULL || tmp[0] == '\0')
        tmp = "/tmp";
    snprintf(g_scratch, sizeof g_scratch, "%s/n5-ctest-%s.XXXXXX", tmp, program);
    if (mkdtemp(g_scratch) == NULL) {
        fprintf(stderr, "%s: mkdtemp(%s): %s\n", program, g_scratch, strerror(errno));
        exit(2);
    }
}

void n5t_run(const char *name, void (*test)(void))
{
    long before = n5t_checks();
    g_test = name;
    g_test_failures = 0;
    test();
    printf("%-40s %5ld checks %s\n", name, n5t_checks() - before,
           g_test_failures ? "FAILED" : "ok");
    fflush(stdout);
    g_test = "";
}

int n5t_finish(void)
{
    n5t_rmtree(g_scratch);
    if (n5t_exists(g_scratch)) {
        fprintf(stderr, "%s: could not remove %s\n", g_program, g_scratch);
        g_failures++;
    }
    printf("%s: %ld checks, %ld failed\n", g_program, g_checks, g_failures);
    while (g_arena_len > 0)
        free(g_arena[--g_arena_len]);
    free(g_arena);
    g_arena = NULL;
    g_arena_cap = 0;
    return g_failures ? 1 : 0;
}

/* ---- scratch files ---------------------------------------------------- */

const char *n5t_scratch(void)
{
    return g_scratch;
}


static const char *arena_keep(char *s)
{
    pthread_mutex_lock(&g_lock);
    if (g_arena_len == g_arena_cap) {
        g_arena_cap = g_arena_cap ? g_arena_cap * 2 : 64;
        g_arena = realloc(g_arena, g_arena_cap * sizeof *g_arena);
    }
    g_arena[g_arena_len++] = s;
    pthread_mutex_unlock(&g_lock);
    return s;
}

const char *n5t_join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *s = malloc(n);
    if (b[0] == '\0')
        snprintf(s, n, "%s", a);
    else
        snprintf(s, n, "%s/%s", a, b);
    return arena_keep(s);
}

const char *n5t_path(const char *rel)
{
    return n5t_join(g_scratch, rel ? rel : "");
}

const char *n5t_fresh(const char *prefix)
{
    char rel[256];
    unsigned long n;
    pthread_mutex_lock(&g_lock);
    n = ++g_fresh;
    pthread_mutex_unlock(&g_lock);
    snprintf(rel, sizeof rel, "%s.%lu", prefix, n);
    return n5t_path(rel);
}

int n5t_exists(const char *abs_path)
{
    struct stat st;
    return lstat(abs_path, &st) == 0;
}

char *n5t_read_file(const char *abs_path, size_t *len)
{
    FILE *f = fopen(abs_path, "rb");
    char *buf;
    size_t cap = 4096, n = 0, r;
    if (f == NULL)
        return NULL;
    buf = malloc(cap + 1);
    while ((r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            cap *= 2;
            buf = realloc(buf, cap + 1);
        }
    }
    fclose(f);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

int n5t_write_file(const char *abs_path, const void *data, size_t len)
{
    FILE *f = fopen(abs_path, "wb");
    int rc = 0;
    if (f == NULL)
        return -1;
    if (len && fwrite(data, 1, len, f) != len)
        rc = -1;
    if (fclose(f) != 0)
        rc = -1;
    return rc;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void n5t_rmtree(const char *abs_path)
{
    if (abs_path == NULL || abs_path[0] == '\0' || strcmp(abs_path, "/") == 0)
        return;
    nftw(abs_path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

struct strbuf {
    char *s;
    size_t len, cap;
};

static void sb_add(struct strbuf *sb, const char *text)
{
    size_t n = strlen(text);
    if (sb->len + n + 1 > sb->cap) {
        sb->cap = (sb->len + n + 1) * 2;
        sb->s = realloc(sb->s, sb->cap);
    }
    memcpy(sb->s + sb->len, text, n + 1);
    sb->len += n;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static unsigned long long fnv1a(const char *data, size_t n)
{
    unsigned long long h = 1469598103934665603ULL;
    size_t i;
    for (i = 0; i < n; i++) {
        h ^= (unsigned char)data[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static void fingerprint(struct strbuf *sb, const char *dir, const char *rel)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char **names = NULL;
    size_t n = 0, cap = 0, i;
    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            names = realloc(names, cap * sizeof *names);
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, cmp_names);
    for (i = 0; i < n; i++) {
        char full[4096], sub[4096], line[8192];
        struct stat st;
        snprintf(full, sizeof full, "%s/%s", dir, names[i]);
        snprintf(sub, sizeof sub, "%s%s%s", rel, rel[0] ? "/" : "", names[i]);
        if (lstat(full, &st) != 0) {
            free(names[i]);
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            snprintf(line, sizeof line, "d %s ino=%lu mtime=%ld.%09ld\n", sub,
                     (unsigned long)st.st_ino, (long)st.st_mtim.tv_sec,
                     (long)st.st_mtim.tv_nsec);
            sb_add(sb, line);
            fingerprint(sb, full, sub);
        } else {
            size_t len = 0;
            char *content = n5t_read_file(full, &len);
            snprintf(line, sizeof line, "f %s ino=%lu size=%ld mtime=%ld.%09ld hash=%llx\n", sub,
                     (unsigned long)st.st_ino, (long)st.st_size, (long)st.st_mtim.tv_sec,
                     (long)st.st_mtim.tv_nsec, content ? fnv1a(content, len) : 0ULL);
            free(content);
            sb_add(sb, line);
        }
        free(names[i]);
    }
    free(names);
}

char *n5t_tree_fingerprint(const char *abs_path)
{
    struct strbuf sb = {NULL, 0, 0};
    struct stat st;
    char line[128];
    sb_add(&sb, "");
    if (lstat(abs_path, &st) != 0) {
        sb_add(&sb, "(missing)\n");
        return sb.s;
    }
    snprintf(line, sizeof line, "root mtime=%ld.%09ld\n", (long)st.st_mtim.tv_sec,
             (long)st.st_mtim.tv_nsec);
    sb_add(&sb, line);
    fingerprint(&sb, abs_path, "");
    return sb.s;
}

static long count_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    long n = 0;
    if (d == NULL)
        return 0;
    while ((e = readdir(d)) != NULL) {
        char full[4096];
        struct stat st;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        n++;
        snprintf(full, sizeof full, "%s/%s", dir, e->d_name);
        if (lstat(full, &st) == 0 && S_ISDIR(st.st_mode))
            n += count_tree(full);
    }
    closedir(d);
    return n;
}

long n5t_tree_count(const char *abs_path)
{
    struct stat st;
    if (lstat(abs_path, &st) != 0)
        return -1;
    return count_tree(abs_path);
}

/* ---- helpers -------------------------------------------------------------- */

void n5t_fill(void *buf, size_t n, unsigned seed)
{
    unsigned char *p = buf;
    unsigned x = seed * 2654435761u + 12345u;
    size_t i;
    for (i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (unsigned char)(x >> 16);
    }
}

int n5t_all_bytes(const void *buf, size_t n, unsigned char byte)
{
    const unsigned char *p = buf;
    size_t i;
    for (i = 0; i < n; i++)
        if (p[i] != byte)
            return 0;
    return 1;
}

uint64_t n5t_prod(size_t ndim, const uint64_t *v)
{
    uint64_t p = 1;
    size_t i;
    for (i = 0; i < ndim; i++)
        p *= v[i];
    return p;
}

n5_status n5t_text_version(const void *c, char *buf, size_t cap, size_t *out_len)
{
    return n5_container_version((const n5_container *)c, buf, cap, out_len);
}

n5_status n5t_text_root(const void *c, char *buf, size_t cap, size_t *out_len)
{
    return n5_container_root((const n5_container *)c, buf, cap, out_len);
}

n5_status n5t_text_format(const void *c, char *buf, size_t cap, size_t *out_len)
{
    return n5_container_format((const n5_container *)c, buf, cap, out_len);
}

n5_status n5t_text_options(const void *c, char *buf, size_t cap, size_t *out_len)
{
    return n5_container_options((const n5_container *)c, buf, cap, out_len);
}

n5_status n5t_text_list(const void *ctx, char *buf, size_t cap, size_t *out_len)
{
    const struct n5t_cpath *p = ctx;
    return n5_list(p->c, p->path, buf, cap, out_len);
}

n5_status n5t_text_list_recursive(const void *ctx, char *buf, size_t cap, size_t *out_len)
{
    const struct n5t_cpath *p = ctx;
    return n5_list_recursive(p->c, p->path, buf, cap, out_len);
}

n5_status n5t_text_attributes(const void *ctx, char *buf, size_t cap, size_t *out_len)
{
    const struct n5t_cpath *p = ctx;
    return n5_attributes_get(p->c, p->path, buf, cap, out_len);
}

n5_status n5t_text_attribute(const void *ctx, char *buf, size_t cap, size_t *out_len)
{
    const struct n5t_cpath *p = ctx;
    return n5_attribute_get(p->c, p->path, p->key, buf, cap, out_len);
}

n5_status n5t_text_compression(const void *d, char *buf, size_t cap, size_t *out_len)
{
    return n5_dataset_compression((const n5_dataset *)d, buf, cap, out_len);
}

n5_status n5t_text_dataset_path(const void *d, char *buf, size_t cap, size_t *out_len)
{
    return n5_dataset_path((const n5_dataset *)d, buf, cap, out_len);
}

n5_status n5t_text_block_list(const void *d, char *buf, size_t cap, size_t *out_len)
{
    return n5_block_list((const n5_dataset *)d, buf, cap, out_len);
}

char *n5t_text(n5t_text_fn fn, const void *ctx)
{
    size_t len = 0, len2 = 0;
    char *buf;
    if (fn(ctx, NULL, 0, &len) != N5_OK)
        return NULL;
    buf = malloc(len + 1);
    if (fn(ctx, buf, len + 1, &len2) != N5_OK || len2 != len) {
        free(buf);
        return NULL;
    }
    return buf;
}

char *n5t_attributes(const n5_container *c, const char *path)
{
    struct n5t_cpath p;
    p.c = c;
    p.path = path;
    p.key = NULL;
    return n5t_text(n5t_text_attributes, &p);
}

char *n5t_attribute(const n5_container *c, const char *path, const char *key)
{
    struct n5t_cpath p;
    p.c = c;
    p.path = path;
    p.key = key;
    return n5t_text(n5t_text_attribute, &p);
}

char *n5t_list(const n5_container *c, const char *path)
{
    struct n5t_cpath p;
    p.c = c;
    p.path = path;
    p.key = NULL;
    return n5t_text(n5t_text_list, &p);
}
