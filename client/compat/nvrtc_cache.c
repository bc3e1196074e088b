/*
 * NVRTC's compile cache, kept in files beside the tenant.
 *
 * How NVRTC 13 uses the table (docs/export-tables.md 4.11): for each stage of a compile
 * (bitcode to PTX, kind 2; to cubin, kind 1) it makes a key from the stage's input and
 * options, looks the key up, on a miss compiles and stores the result, and releases the
 * key.  A hit's buffer is ours; NVRTC copies it and hands it back through slot 6.  Any
 * nonzero result is a miss or "no cache" to NVRTC, which then simply compiles.
 *
 * One file per entry, named by a hash of the key.  The file holds the whole key, so a
 * lookup compares it byte for byte: a hash collision is a miss, never wrong code.  The
 * value carries a checksum, so a torn or damaged file is a miss too.  Writers go through
 * a temporary file and rename(), so readers in other processes see whole entries only.
 */
#define _GNU_SOURCE
#include "nvrtc_cache.h"

#include "cuda_api.h"
#include "ds_log.h"
#include "unsupported.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_MAXSIZE (1ull << 30)
#define MAGIC "dsnvrtc1"

struct key {
    uint32_t kind;
    int32_t sm, arch_specific;
    uint64_t hash;
    size_t len; /* of material: the option strings, NUL-separated, then the input */
    unsigned char material[];
};

struct head {
    char magic[8];
    uint32_t kind;
    int32_t sm, arch_specific;
    uint32_t unused;
    uint64_t material_len, value_len, value_sum;
};

static struct {
    pthread_once_t once;
    int enabled;
    char dir[PATH_MAX - 64];
    uint64_t maxsize;
    pthread_mutex_t lock; /* usage */
    int64_t usage;        /* bytes in dir, as last counted plus what we stored; -1: not yet */
    atomic_uint hits, misses, stores;
} cache = { .once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER, .usage = -1 };

static uint64_t fnv64(const void *p, size_t n, uint64_t h)
{
    const unsigned char *b = p;

    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static int mkdirs(char *path)
{
    for (char *s = path + 1; *s != '\0'; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        int rc = mkdir(path, 0700);
        *s = '/';
        if (rc != 0 && errno != EEXIST)
            return -1;
    }
    return mkdir(path, 0700) == 0 || errno == EEXIST ? 0 : -1;
}

/* CUDA_CACHE_PATH and CUDA_CACHE_MAXSIZE mean here what they mean to the driver; our
 * entries go in a directory of their own, since the driver's format is not ours. */
static void configure(void)
{
    const char *off = getenv("CUDA_CACHE_DISABLE");
    const char *path = getenv("CUDA_CACHE_PATH");
    const char *max = getenv("CUDA_CACHE_MAXSIZE");
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int n;

    if (off != NULL && off[0] != '\0' && strcmp(off, "0") != 0)
        return;
    if (path != NULL && path[0] != '\0')
        n = snprintf(cache.dir, sizeof(cache.dir), "%s/detshare-nvrtc", path);
    else if (xdg != NULL && xdg[0] != '\0')
        n = snprintf(cache.dir, sizeof(cache.dir), "%s/detshare/nvrtc", xdg);
    else if (home != NULL && home[0] != '\0')
        n = snprintf(cache.dir, sizeof(cache.dir), "%s/.cache/detshare/nvrtc", home);
    else
        return;
    cache.maxsize = max != NULL && max[0] != '\0' ? strtoull(max, NULL, 10) : DEFAULT_MAXSIZE;
    if (n < 0 || (size_t)n >= sizeof(cache.dir) || mkdirs(cache.dir) != 0) {
        ds_debug("nvrtc cache: cannot use %s: %s; compiling without it", cache.dir,
                 strerror(errno ? errno : ENAMETOOLONG));
        return;
    }
    ds_debug("nvrtc cache in %s, up to %llu bytes", cache.dir,
             (unsigned long long)cache.maxsize);
    cache.enabled = 1;
}

static void entry_path(const struct key *k, char *out, size_t len)
{
    snprintf(out, len, "%s/%016llx-%u", cache.dir, (unsigned long long)k->hash, k->kind);
}

/* Slot 1.  The strings and the input are NVRTC's and freed after the call: copied. */
static CUresult make_key(void **out, int kind, const void *data, uint32_t size,
                         const char *options, const char *host, const char *build, int sm,
                         int arch_specific)
{
    const char *s[3] = { options ? options : "", host ? host : "", build ? build : "" };
    size_t sl[3], len = size;
    struct key *k;
    unsigned char *p;

    pthread_once(&cache.once, configure);
    if (out == NULL || (data == NULL && size != 0))
        return CUDA_ERROR_INVALID_VALUE;
    *out = NULL;
    if (!cache.enabled)
        return CUDA_ERROR_NOT_INITIALIZED; /* what the driver answers when disabled */
    for (int i = 0; i < 3; i++)
        len += (sl[i] = strlen(s[i]) + 1);
    if ((k = malloc(sizeof(*k) + len)) == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *k = (struct key){ .kind = (uint32_t)kind, .sm = sm, .arch_specific = arch_specific,
                       .len = len };
    p = k->material;
    for (int i = 0; i < 3; i++)
        p = (unsigned char *)memcpy(p, s[i], sl[i]) + sl[i];
    memcpy(p, data, size);
    k->hash = fnv64(k->material, len, fnv64(&k->kind, 12, 0xcbf29ce484222325ull));
    *out = k;
    return CUDA_SUCCESS;
}

/* Slot 2.  NVRTC ignores its result, but nvJitLink fails the link on a nonzero one
 * ("free cache key"): numba-cuda's first kernel failed so on the H100 while this returned
 * void and free() happened to leave a nonzero register. */
static CUresult release_key(void *key)
{
    free(key);
    return CUDA_SUCCESS;
}

static int read_all(int fd, void *buf, size_t n)
{
    for (size_t done = 0; done < n;) {
        ssize_t r = read(fd, (char *)buf + done, n - done);

        if (r <= 0 && !(r < 0 && errno == EINTR))
            return -1;
        if (r > 0)
            done += (size_t)r;
    }
    return 0;
}

static int write_all(int fd, const void *buf, size_t n)
{
    for (size_t done = 0; done < n;) {
        ssize_t w = write(fd, (const char *)buf + done, n - done);

        if (w < 0 && errno != EINTR)
            return -1;
        if (w > 0)
            done += (size_t)w;
    }
    return 0;
}

/* The entry's value when the file holds exactly this key and an intact value, else NULL. */
static void *read_entry(int fd, const struct key *k, uint32_t *size)
{
    struct head h;
    unsigned char *m = NULL, *v = NULL;

    if (read_all(fd, &h, sizeof(h)) != 0 || memcmp(h.magic, MAGIC, 8) != 0 ||
        h.kind != k->kind || h.sm != k->sm || h.arch_specific != k->arch_specific ||
        h.material_len != k->len || h.value_len == 0 || h.value_len > UINT32_MAX)
        return NULL;
    if ((m = malloc(k->len)) == NULL || read_all(fd, m, k->len) != 0 ||
        memcmp(m, k->material, k->len) != 0 || (v = malloc(h.value_len)) == NULL ||
        read_all(fd, v, h.value_len) != 0 ||
        fnv64(v, h.value_len, 0xcbf29ce484222325ull) != h.value_sum) {
        free(m);
        free(v);
        return NULL;
    }
    free(m);
    *size = (uint32_t)h.value_len;
    return v;
}

/* Slot 3.  Only size's 4 bytes are ours to write: NVRTC keeps other data beside them. */
static CUresult load(void *key, int flags, void **data, uint32_t *size)
{
    char path[PATH_MAX];
    void *v = NULL;
    int fd;

    (void)flags;
    if (key == NULL || data == NULL || size == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    entry_path(key, path, sizeof(path));
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
        v = read_entry(fd, key, size);
        if (v != NULL)
            futimens(fd, NULL); /* recently used: evicted last */
        close(fd);
    }
    if (v == NULL) {
        atomic_fetch_add(&cache.misses, 1);
        return CUDA_ERROR_NOT_FOUND;
    }
    atomic_fetch_add(&cache.hits, 1);
    *data = v;
    return CUDA_SUCCESS;
}

struct file {
    struct timespec used;
    off_t size;
    char name[32];
};

static int older(const void *a, const void *b)
{
    const struct timespec *x = &((const struct file *)a)->used;
    const struct timespec *y = &((const struct file *)b)->used;

    return x->tv_sec != y->tv_sec ? (x->tv_sec < y->tv_sec ? -1 : 1)
                                  : (x->tv_nsec < y->tv_nsec ? -1 : x->tv_nsec > y->tv_nsec);
}

/* Count the directory's entries and, above the limit, delete the least recently used
 * down to three quarters of it.  Called with cache.lock held. */
static void count_and_trim(void)
{
    DIR *d = opendir(cache.dir);
    struct file *f = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    int64_t total = 0;

    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        struct stat st;

        if (strlen(e->d_name) >= sizeof(f->name) || e->d_name[0] == '.' ||
            fstatat(dirfd(d), e->d_name, &st, 0) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (n == cap) {
            struct file *g = realloc(f, (cap = cap ? 2 * cap : 64) * sizeof(*f));

            if (g == NULL)
                break;
            f = g;
        }
        f[n].used = st.st_mtim;
        f[n].size = st.st_size;
        strcpy(f[n++].name, e->d_name);
        total += st.st_size;
    }
    if ((uint64_t)total > cache.maxsize) {
        qsort(f, n, sizeof(*f), older);
        for (size_t i = 0; i < n && (uint64_t)total > cache.maxsize / 4 * 3; i++)
            if (unlinkat(dirfd(d), f[i].name, 0) == 0)
                total -= f[i].size;
    }
    closedir(d);
    free(f);
    cache.usage = total;
}

static void account(int64_t bytes)
{
    pthread_mutex_lock(&cache.lock);
    if (cache.usage < 0)
        count_and_trim();
    cache.usage += bytes;
    if ((uint64_t)cache.usage > cache.maxsize)
        count_and_trim();
    pthread_mutex_unlock(&cache.lock);
}

/* Slot 4.  The value is NVRTC's: written out during the call. */
static CUresult store(void *key, int flags, const void *data, uint32_t size)
{
    static atomic_uint seq;
    const struct key *k = key;
    struct head h = { 0 };
    char path[PATH_MAX], tmp[PATH_MAX];
    int fd, ok;

    (void)flags;
    if (k == NULL || data == NULL || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (sizeof(h) + k->len + size > cache.maxsize)
        return CUDA_ERROR_OUT_OF_MEMORY; /* as the driver: too large for the cache */
    memcpy(h.magic, MAGIC, sizeof(h.magic));
    h.kind = k->kind;
    h.sm = k->sm;
    h.arch_specific = k->arch_specific;
    h.material_len = k->len;
    h.value_len = size;
    h.value_sum = fnv64(data, size, 0xcbf29ce484222325ull);
    entry_path(k, path, sizeof(path));
    snprintf(tmp, sizeof(tmp), "%s/.tmp-%d-%u", cache.dir, (int)getpid(),
             atomic_fetch_add(&seq, 1));
    if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0)
        return CUDA_ERROR_OPERATING_SYSTEM;
    ok = write_all(fd, &h, sizeof(h)) == 0 && write_all(fd, k->material, k->len) == 0 &&
         write_all(fd, data, size) == 0;
    ok = close(fd) == 0 && ok && rename(tmp, path) == 0;
    if (!ok) {
        unlink(tmp);
        return CUDA_ERROR_OPERATING_SYSTEM;
    }
    atomic_fetch_add(&cache.stores, 1);
    account((int64_t)(sizeof(h) + k->len + size));
    return CUDA_SUCCESS;
}

/* Slot 6: a hit's buffer, back from NVRTC. */
static CUresult delete_data(void *data)
{
    free(data);
    return CUDA_SUCCESS;
}

/* Slot 5: filled by the real driver, never called by NVRTC 13. */
static CUresult slot5(void)
{
    static atomic_int once;

    return ds__unsupported("NVRTC_CACHE slot 5", &once);
}

/* Seven words: NVRTC takes slot 6 as the deleter only when the table is larger than six. */
void *const ds__nvrtc_cache[7] = {
    (void *)(uintptr_t)(7 * sizeof(void *)),
    (void *)make_key, (void *)release_key, (void *)load, (void *)store,
    (void *)slot5, (void *)delete_data,
};

__attribute__((destructor)) static void summary(void)
{
    unsigned h = atomic_load(&cache.hits), m = atomic_load(&cache.misses);

    if (h + m > 0)
        ds_debug("nvrtc cache: %u hits, %u misses, %u stored (%s)", h, m,
                 atomic_load(&cache.stores), cache.dir);
}
