#include "registry.h"

#include "backend.h"
#include "ds_error.h"
#include "shm.h"

#include <stdio.h>
#include <string.h>

/* The sim models an H100's SMs in any number the operator asks for. */
static int probe_sim(const struct ds_backend_want *w, struct ds_sm_groups *groups,
                     uint64_t *memory, char *why, size_t len)
{
    (void)why;
    (void)len;
    ds_sim_sm_groups(w->sim_sms, groups);
    *memory = w->sim_memory;
    return 0;
}

static int probe_cuda(const struct ds_backend_want *w, struct ds_sm_groups *groups,
                      uint64_t *memory, char *why, size_t len)
{
    return ds_cuda_probe(w->gpu, groups, memory, why, len);
}

/* In the order "auto" tries them: the sim, which every machine can run, last. */
static const struct ds_backend_entry backends[] = {
    { "cuda", DS_SHM_CUDA, &ds_cuda_backend, 1, probe_cuda },
    { "sim", DS_SHM_SIM, &ds_sim_backend, 0, probe_sim },
};
#define NBACKENDS (sizeof(backends) / sizeof(backends[0]))

/* "sim, cuda or auto": the sim first, as the one every machine has. */
static void list_names(char *buf, size_t len)
{
    size_t off = 0;

    buf[0] = '\0';
    for (size_t i = NBACKENDS; i-- > 0 && off < len;)
        off += (size_t)snprintf(buf + off, len - off, "%s, ", backends[i].name);
    if (off >= 2 && off < len)
        snprintf(buf + off - 2, len - off + 2, " or auto");
}

static const struct ds_backend_entry *find(const char *name)
{
    for (size_t i = 0; i < NBACKENDS; i++)
        if (strcmp(backends[i].name, name) == 0)
            return &backends[i];
    return NULL;
}

int ds_registry_choose(const char *want, const struct ds_backend_want *w,
                       const struct ds_backend_entry **out, struct ds_sm_groups *groups,
                       uint64_t *memory, char *why, size_t len)
{
    const struct ds_backend_entry *e = find(want);
    char passed[160] = "";

    if (e != NULL) {
        *out = e;
        return e->probe(w, groups, memory, why, len);
    }
    if (strcmp(want, "auto") != 0) {
        list_names(why, len);
        return DS_EINVAL;
    }
    for (size_t i = 0; i < NBACKENDS; i++) {
        if (backends[i].probe(w, groups, memory, passed, sizeof(passed)) == 0) {
            *out = &backends[i];
            snprintf(why, len, "%s", i > 0 ? passed : "");
            return 0;
        }
    }
    snprintf(why, len, "%s", passed);
    return DS_ENOTSUP;
}

const struct ds_backend_entry *ds_registry_device(unsigned device)
{
    for (size_t i = 0; i < NBACKENDS; i++)
        if (backends[i].device == device)
            return &backends[i];
    return NULL;
}
