#include "policy.h"

#include "ds_error.h"
#include "ds_log.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ABI 3's policies index the tenants and read every field where they were then: ABI 4's
 * slo_us went into the padding after id, and nothing else moved (on LP64, where
 * detshare runs). */
_Static_assert(offsetof(struct ds_sched_tenant, slo_us) == sizeof(int) &&
                   offsetof(struct ds_sched_tenant, groups) == 8 &&
                   offsetof(struct ds_sched_tenant, escapes) == 104 &&
                   sizeof(struct ds_sched_tenant) == 112,
               "struct ds_sched_tenant no longer lays out as ABI 3's");

#define ENTRY(n) &ds_policy_##n,
const struct ds_policy *const ds_policies[] = { DS_POLICY_BUILTINS(ENTRY) NULL };
#undef ENTRY

static const struct ds_policy *builtin(const char *name)
{
    for (int i = 0; ds_policies[i] != NULL; i++)
        if (strcmp(ds_policies[i]->name, name) == 0)
            return ds_policies[i];
    return NULL;
}

/* Policies loaded from shared objects, kept for the server's life (a switch back to one
 * must find it, and its code may still be on a stack). */
#define MAX_LOADED 16
static struct {
    char path[PATH_MAX];
    const struct ds_policy *p;
} loaded[MAX_LOADED];
static int nloaded;
static pthread_mutex_t loaded_lock = PTHREAD_MUTEX_INITIALIZER;

static const struct ds_policy *find_loaded(const char *name, int by_path)
{
    for (int i = 0; i < nloaded; i++)
        if (strcmp(by_path ? loaded[i].path : loaded[i].p->name, name) == 0)
            return loaded[i].p;
    return NULL;
}

static int printable(const char *s)
{
    if (s == NULL || s[0] == '\0' || strlen(s) > 64)
        return 0;
    for (; *s != '\0'; s++)
        if (*s <= ' ' || *s > '~' || *s == '/')
            return 0;
    return 1;
}

/* Why the policy in a shared object cannot be used, or NULL when it can. */
static const char *unusable(const struct ds_policy *p)
{
    if (p == NULL)
        return "it does not speak this server's policy ABI";
    if (!printable(p->name))
        return "its name is empty, too long or not printable";
    if (p->on_start == NULL || p->on_tenant_join == NULL || p->on_tenant_leave == NULL)
        return "it lacks on_start, on_tenant_join or on_tenant_leave";
    if (p->on_tick != NULL && p->tick_ms == 0)
        return "it has on_tick but no tick_ms";
    if (builtin(p->name) != NULL || find_loaded(p->name, 0) != NULL)
        return "another policy has its name";
    return NULL;
}

/* dlopen `file` (the policy `as` names) and take its policy.  NULL, logged and said in
 * why, when that fails.  Called with loaded_lock held. */
static const struct ds_policy *load(const char *file, const char *as, char *why, size_t len)
{
    const struct ds_policy *(*entry)(unsigned);
    const struct ds_policy *p = NULL;
    unsigned abi = DS_POLICY_ABI;
    const char *bad;
    void *h;

    if (nloaded == MAX_LOADED || strlen(as) >= PATH_MAX) {
        snprintf(why, len, "no room for another loaded policy");
        ds_error("policy %s: %s", as, why);
        return NULL;
    }
    if ((h = dlopen(file, RTLD_NOW | RTLD_LOCAL)) == NULL) {
        const char *err = dlerror();

        snprintf(why, len, "cannot load it: %s", err);
        ds_error("cannot load policy %s: %s", as, err);
        return NULL;
    }
    *(void **)&entry = dlsym(h, "detshare_policy");
    while (entry != NULL && abi >= DS_POLICY_ABI_OLDEST && (p = entry(abi)) == NULL)
        abi--;
    bad = entry == NULL ? "it exports no detshare_policy" : unusable(p);
    if (bad != NULL) {
        snprintf(why, len, "%s (ABI %d down to %d)", bad, DS_POLICY_ABI, DS_POLICY_ABI_OLDEST);
        ds_error("policy %s refused: %s", as, why);
        dlclose(h);
        return NULL;
    }
    snprintf(loaded[nloaded].path, PATH_MAX, "%s", as);
    loaded[nloaded++].p = p;
    ds_info("policy %s loaded from %s (ABI %u)", p->name, as, abi);
    return p;
}

const struct ds_policy *ds_policy_load(const char *path)
{
    const struct ds_policy *p;
    char why[256];

    pthread_mutex_lock(&loaded_lock);
    p = find_loaded(path, 1);
    if (p == NULL)
        p = load(path, path, why, sizeof(why));
    pthread_mutex_unlock(&loaded_lock);
    return p;
}

/* The directory the admin API may load policies from, resolved; empty: none. */
static char admin_dir[PATH_MAX];

/* Why code in the file or directory `st` describes could come from someone other than
 * root or the server's own user, or NULL when it cannot.  An `ancestor` of the policy
 * directory may be writable by others when sticky (/tmp): they cannot rename or replace
 * the entries root or the server's user own there, which the next component is. */
static const char *untrusted(const struct stat *st, int ancestor)
{
    if (st->st_uid != 0 && st->st_uid != geteuid())
        return "owned by a user other than root and the server's";
    if (!(st->st_mode & (S_IWGRP | S_IWOTH)) || (ancestor && (st->st_mode & S_ISVTX)))
        return NULL;
    return st->st_mode & S_IWOTH ? "writable by others" : "writable by its group";
}

/* Check every directory of the resolved path `real` from / down to its first `upto`
 * bytes; those no shorter than dirlen (the policy directory and below) strictly.
 * Returns 0, or -1 with why. */
static int trusted_dirs(const char *real, size_t upto, size_t dirlen, char *why, size_t len)
{
    char part[PATH_MAX];
    const char *bad;
    struct stat st;

    for (size_t end = 1; end <= upto; end++) {
        if (end > 1 && end < upto && real[end] != '/')
            continue;
        memcpy(part, real, end);
        part[end] = '\0';
        if (lstat(part, &st) != 0) {
            snprintf(why, len, "%s: %s", part, strerror(errno));
            return -1;
        }
        bad = S_ISDIR(st.st_mode) ? untrusted(&st, end < dirlen) : "not a directory";
        if (bad != NULL) {
            snprintf(why, len, "%s is %s", part, bad);
            return -1;
        }
    }
    return 0;
}

/* The file itself: opened without following a link, a regular file only root or the
 * server's user can change.  Returns 0, or -1 with why. */
static int trusted_file(const char *real, char *why, size_t len)
{
    int fd = open(real, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    const char *bad;
    struct stat st;

    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(why, len, "%s: %s", real, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    bad = S_ISREG(st.st_mode) ? untrusted(&st, 0) : "not a regular file";
    if (bad != NULL) {
        snprintf(why, len, "%s is %s", real, bad);
        return -1;
    }
    return 0;
}

/* Whether `path` may be loaded at run time: it resolves (links and all) to a file inside
 * admin_dir, and nobody but root and the server's user can change that file or any
 * directory leading to it.  Returns 0 with the resolved path in real, or -1 with why. */
static int admissible(const char *path, char *real, char *why, size_t len)
{
    size_t dirlen = strlen(admin_dir);
    const char *slash;

    if (dirlen == 0) {
        snprintf(why, len, "loading a policy from a file at run time is off: the server "
                           "needs --policy-dir DIR, and the file in DIR (built-in policies, "
                           "and those loaded at start, switch by name)");
        return -1;
    }
    if (realpath(path, real) == NULL) {
        snprintf(why, len, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (strncmp(real, admin_dir, dirlen) != 0 ||
        (real[dirlen] != '/' && admin_dir[dirlen - 1] != '/')) {
        snprintf(why, len, "%s is not inside the policy directory %s", real, admin_dir);
        return -1;
    }
    slash = strrchr(real, '/');
    return trusted_dirs(real, slash == real ? 1 : (size_t)(slash - real), dirlen, why, len) ||
                   trusted_file(real, why, len)
               ? -1
               : 0;
}

int ds_policy_set_dir(const char *dir, char *why, size_t len)
{
    char real[PATH_MAX];

    if (realpath(dir, real) == NULL) {
        snprintf(why, len, "%s: %s", dir, strerror(errno));
        return DS_EINVAL;
    }
    if (trusted_dirs(real, strlen(real), strlen(real), why, len) != 0)
        return DS_EPERM;
    pthread_mutex_lock(&loaded_lock);
    snprintf(admin_dir, sizeof(admin_dir), "%s", real);
    pthread_mutex_unlock(&loaded_lock);
    return 0;
}

const struct ds_policy *ds_policy_admit(const char *path, char *why, size_t len)
{
    const struct ds_policy *p;
    char real[PATH_MAX];

    pthread_mutex_lock(&loaded_lock);
    p = find_loaded(path, 1);
    if (p == NULL && admissible(path, real, why, len) != 0)
        ds_error("policy %s refused: %s", path, why);
    else if (p == NULL)
        p = load(real, path, why, len);
    pthread_mutex_unlock(&loaded_lock);
    return p;
}

const struct ds_policy *ds_policy_find(const char *name)
{
    const struct ds_policy *p;

    if ((p = builtin(name)) != NULL)
        return p;
    pthread_mutex_lock(&loaded_lock);
    p = find_loaded(name, strchr(name, '/') != NULL);
    pthread_mutex_unlock(&loaded_lock);
    return p;
}

uint64_t ds_groups_range(unsigned first, unsigned count)
{
    uint64_t mask = count >= 64 ? ~0ull : (1ull << count) - 1;

    return mask << first;
}
