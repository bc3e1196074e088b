#include "policy.h"

#include "ds_log.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

const struct ds_policy *const ds_policies[] = { &ds_policy_shared, &ds_policy_static,
                                                 &ds_policy_temporal, &ds_policy_slo_aware,
                                                 &ds_policy_tpot_first, NULL };

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

static const struct ds_policy *load(const char *path)
{
    const struct ds_policy *(*entry)(unsigned);
    const struct ds_policy *p;
    const char *why;
    void *h;

    if (nloaded == MAX_LOADED || strlen(path) >= PATH_MAX) {
        ds_error("policy %s: no room for another loaded policy", path);
        return NULL;
    }
    if ((h = dlopen(path, RTLD_NOW | RTLD_LOCAL)) == NULL) {
        ds_error("cannot load policy %s: %s", path, dlerror());
        return NULL;
    }
    *(void **)&entry = dlsym(h, "detshare_policy");
    p = entry != NULL ? entry(DS_POLICY_ABI) : NULL;
    why = entry == NULL ? "it exports no detshare_policy" : unusable(p);
    if (why != NULL) {
        ds_error("policy %s refused: %s (ABI %d)", path, why, DS_POLICY_ABI);
        dlclose(h);
        return NULL;
    }
    snprintf(loaded[nloaded].path, PATH_MAX, "%s", path);
    loaded[nloaded++].p = p;
    ds_info("policy %s loaded from %s", p->name, path);
    return p;
}

const struct ds_policy *ds_policy_load(const char *path)
{
    const struct ds_policy *p;

    pthread_mutex_lock(&loaded_lock);
    p = find_loaded(path, 1);
    if (p == NULL)
        p = load(path);
    pthread_mutex_unlock(&loaded_lock);
    return p;
}

const struct ds_policy *ds_policy_find(const char *name)
{
    const struct ds_policy *p;

    if (strchr(name, '/') != NULL)
        return ds_policy_load(name);
    if ((p = builtin(name)) != NULL)
        return p;
    pthread_mutex_lock(&loaded_lock);
    p = find_loaded(name, 0);
    pthread_mutex_unlock(&loaded_lock);
    return p;
}

uint64_t ds_groups_range(unsigned first, unsigned count)
{
    uint64_t mask = count >= 64 ? ~0ull : (1ull << count) - 1;

    return mask << first;
}

void ds_groups_format(uint64_t groups, unsigned group_size, char *buf, size_t len)
{
    size_t off;
    int i = 0;

    if (groups == 0) {
        snprintf(buf, len, "the whole device");
        return;
    }
    off = (size_t)snprintf(buf, len, "SM groups");
    while (i < 64 && off < len) {
        int j = i;

        if (!(groups >> i & 1)) {
            i++;
            continue;
        }
        while (j + 1 < 64 && (groups >> (j + 1) & 1))
            j++;
        off += (size_t)snprintf(buf + off, len - off, j > i ? " %d-%d" : " %d", i, j);
        i = j + 1;
    }
    if (off < len)
        snprintf(buf + off, len - off, " (%u SMs)",
                 (unsigned)__builtin_popcountll(groups) * group_size);
}
