#include "exposition.h"

#include "ds_clock.h"

#include "detshare.h"
#include "ds_procs.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Text that grows as it is written; `failed` once memory ran out, after which writes
 * are dropped and the render returns NULL. */
struct text {
    char *buf;
    size_t len, cap;
    int failed;
};

static int reserve(struct text *t, size_t more)
{
    size_t cap = t->cap ? t->cap : 4096;
    char *p;

    if (t->failed)
        return -1;
    while (cap - t->len <= more)
        cap *= 2;
    if (cap == t->cap)
        return 0;
    if ((p = realloc(t->buf, cap)) == NULL) {
        t->failed = 1;
        return -1;
    }
    t->buf = p;
    t->cap = cap;
    return 0;
}

static void put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct text *t, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || reserve(t, (size_t)n) != 0)
        return;
    va_start(ap, fmt);
    vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

/* A label value as the format wants it: backslash, double quote and newline escaped. */
static void put_value(struct text *t, const char *v)
{
    for (; *v != '\0'; v++) {
        if (*v == '\\')
            put(t, "\\\\");
        else if (*v == '"')
            put(t, "\\\"");
        else if (*v == '\n')
            put(t, "\\n");
        else
            put(t, "%c", *v);
    }
}

static void head(struct text *t, const char *name, const char *type, const char *help)
{
    put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void gauge(struct text *t, const char *name, const char *help, unsigned long long v)
{
    head(t, name, "gauge", help);
    put(t, "%s %llu\n", name, v);
}

/* A series of value 1 whose one label says what is in force. */
static void info(struct text *t, const char *name, const char *help, const char *label,
                 const char *value)
{
    head(t, name, "gauge", help);
    put(t, "%s{%s=\"", name, label);
    put_value(t, value);
    put(t, "\"} 1\n");
}

static uint64_t memory_used(const struct ds_exposition_state *st)
{
    uint64_t sum = 0;

    for (int i = 0; i < st->ntenants; i++)
        sum += atomic_load(&st->shm->slots[st->tenants[i].id].mem_used);
    return sum;
}

static void put_device(struct text *t, const struct ds_exposition_state *st)
{
    const struct ds_server_config *cfg = st->cfg;

    info(t, "detshare_backend_info", "The device backend executors run (sim or cuda).",
         "backend", cfg->backend->name);
    info(t, "detshare_policy_info", "The scheduling policy in force.", "policy", st->policy);
    info(t, "detshare_mps_info", "How executors share the GPU: started (the server's own "
         "MPS daemon), external, off (time-sliced) or none (sim).", "mode", cfg->mps_mode);
    if (cfg->mps_daemon > 0)
        gauge(t, "detshare_mps_daemon_up", "1 while the MPS control daemon the server "
              "started runs, 0 once it has exited.", (unsigned long long)st->mps_daemon_up);
    gauge(t, "detshare_device_sms", "Streaming multiprocessors of the device.", cfg->sm.sms);
    gauge(t, "detshare_device_sm_groups", "SM groups the policy hands out.", cfg->sm.count);
    gauge(t, "detshare_device_sm_group_size", "SMs per group.", cfg->sm.size);
    if (cfg->device_memory > 0)
        gauge(t, "detshare_device_memory_bytes", "Device memory.", cfg->device_memory);
    gauge(t, "detshare_device_memory_used_bytes", "Device memory the tenants connected now "
          "have allocated.", memory_used(st));
}

static void put_server(struct text *t, const struct ds_exposition_state *st)
{
    static const char *const reasons[DS_REFUSED_COUNT] = {
        [DS_REFUSED_TOKEN] = "token",
        [DS_REFUSED_CAPACITY] = "capacity",
        [DS_REFUSED_SHUTDOWN] = "shutdown",
        [DS_REFUSED_PREFACE] = "preface",
    };

    gauge(t, "detshare_tenants", "Tenants connected now.", (unsigned long long)st->ntenants);
    head(t, "detshare_tenants_served_total", "counter",
         "Tenants handed to an executor since the server started.");
    put(t, "detshare_tenants_served_total %llu\n", (unsigned long long)st->tenants_served);
    head(t, "detshare_tenants_refused_total", "counter",
         "Connections refused before an executor was handed them, by reason.");
    for (int r = 0; r < DS_REFUSED_COUNT; r++)
        put(t, "detshare_tenants_refused_total{reason=\"%s\"} %llu\n", reasons[r],
            (unsigned long long)st->refused[r]);
    gauge(t, "detshare_executors_warm", "Executors started ahead of tenants, waiting.",
          (unsigned long long)st->nwarm);
}

/* Tenants past their handshake: before it they have no name or class yet. */
static int named(const struct ds_shm_slot *s)
{
    return s->tenant[0] != '\0';
}

static void put_labels(struct text *t, const struct ds_shm_slot *s, int id)
{
    put(t, "{tenant=\"");
    put_value(t, s->tenant);
    put(t, "\",id=\"%llu\",slot=\"%d\",class=\"%s\"", (unsigned long long)s->id, id,
        atomic_load(&s->klass) == DS_CLASS_LATENCY ? "latency" : "best-effort");
}

typedef unsigned long long (*slot_value)(const struct ds_exposition_state *st,
                                         const struct ds_shm_slot *s);

/* One metric with a series per named tenant. */
static void per_tenant(struct text *t, const struct ds_exposition_state *st, const char *name,
                       const char *type, const char *help, slot_value value)
{
    head(t, name, type, help);
    for (int i = 0; i < st->ntenants; i++) {
        const struct ds_shm_slot *s = &st->shm->slots[st->tenants[i].id];

        if (!named(s))
            continue;
        put(t, "%s", name);
        put_labels(t, s, st->tenants[i].id);
        put(t, "} %llu\n", value(st, s));
    }
}

/* The same with a series per procedure the tenant has called (or failed in). */
static void per_procedure(struct text *t, const struct ds_exposition_state *st,
                          const char *name, const char *help, int errors)
{
    head(t, name, "counter", help);
    for (int i = 0; i < st->ntenants; i++) {
        const struct ds_shm_slot *s = &st->shm->slots[st->tenants[i].id];

        for (unsigned long p = 0; named(s) && p <= DS_PROC_MAX; p++) {
            uint64_t n = atomic_load(errors ? &s->errors[p] : &s->calls[p]);

            if (n == 0 || ds_proc_name(p) == NULL)
                continue;
            put(t, "%s", name);
            put_labels(t, s, st->tenants[i].id);
            put(t, ",procedure=\"%s\"} %llu\n", ds_proc_name(p), (unsigned long long)n);
        }
    }
}

static unsigned long long mem_used(const struct ds_exposition_state *st,
                                   const struct ds_shm_slot *s)
{
    (void)st;
    return atomic_load(&s->mem_used);
}

static unsigned long long host_bytes(const struct ds_exposition_state *st,
                                     const struct ds_shm_slot *s)
{
    (void)st;
    return atomic_load(&s->host_bytes);
}

static unsigned long long launches(const struct ds_exposition_state *st,
                                   const struct ds_shm_slot *s)
{
    (void)st;
    return atomic_load(&s->launches);
}

static unsigned long long migrations(const struct ds_exposition_state *st,
                                     const struct ds_shm_slot *s)
{
    (void)st;
    return atomic_load(&s->migrations);
}

static unsigned long long escapes(const struct ds_exposition_state *st,
                                  const struct ds_shm_slot *s)
{
    (void)st;
    return atomic_load(&s->escapes);
}

static unsigned long long gated(const struct ds_exposition_state *st,
                                const struct ds_shm_slot *s)
{
    (void)st;
    return atomic_load(&s->gate) != 0;
}

static unsigned long long throttled(const struct ds_exposition_state *st,
                                    const struct ds_shm_slot *s)
{
    (void)st;
    return atomic_load(&s->throttled) != 0;
}

/* Bound to no group in particular is the whole device. */
static unsigned long long sms(const struct ds_exposition_state *st, const struct ds_shm_slot *s)
{
    uint64_t groups = atomic_load(&s->bound_groups);

    if (groups == 0)
        return st->cfg->sm.sms;
    return (unsigned long long)__builtin_popcountll(groups) * st->cfg->sm.size;
}

static uint64_t gated_ns(const struct ds_shm_slot *s)
{
    return atomic_load(&s->gated_ns);
}

static uint64_t kernel_ns(const struct ds_shm_slot *s)
{
    return atomic_load(&s->kernel_ns);
}

/* A counter kept in nanoseconds, as seconds with nine decimals. */
static void put_seconds(struct text *t, const struct ds_exposition_state *st, const char *name,
                        const char *help, uint64_t (*ns_of)(const struct ds_shm_slot *))
{
    head(t, name, "counter", help);
    for (int i = 0; i < st->ntenants; i++) {
        const struct ds_shm_slot *s = &st->shm->slots[st->tenants[i].id];
        uint64_t ns = ns_of(s);

        if (!named(s))
            continue;
        put(t, "%s", name);
        put_labels(t, s, st->tenants[i].id);
        put(t, "} %llu.%09llu\n", (unsigned long long)(ns / 1000000000u),
            (unsigned long long)(ns % 1000000000u));
    }
}

/* Faults by tenant name, for every name the server remembers (domain.h), whether or
 * not a tenant of that name is connected now: the tenants a fault ends leave. */
static void put_faults(struct text *t, const struct ds_exposition_state *st)
{
    static const char *const kinds[] = { "own", "neighbour", "unknown" };
    uint64_t now = ds_now_ns();

    head(t, "detshare_tenant_faults_total", "counter",
         "Device contexts of tenants of this name that failed, by whose kernel faulted: "
         "own, a neighbour's in the shared MPS domain, or not known.");
    for (int i = 0; st->domains != NULL && i < DS_DOMAIN_NAMES; i++) {
        const struct ds_domain_name *e = &st->domains->names[i];
        uint64_t n[3] = { e->own_faults, e->lost, e->unknown };

        for (int k = 0; e->name[0] != '\0' && k < 3; k++) {
            put(t, "detshare_tenant_faults_total{tenant=\"");
            put_value(t, e->name);
            put(t, "\",kind=\"%s\"} %llu\n", kinds[k], (unsigned long long)n[k]);
        }
    }
    head(t, "detshare_tenant_quarantined", "gauge",
         "1 while tenants of this name run in a fault domain of their own after their "
         "kernel faulted in the shared one.");
    for (int i = 0; st->domains != NULL && i < DS_DOMAIN_NAMES; i++) {
        const struct ds_domain_name *e = &st->domains->names[i];

        if (e->name[0] == '\0')
            continue;
        put(t, "detshare_tenant_quarantined{tenant=\"");
        put_value(t, e->name);
        put(t, "\"} %d\n", e->quarantine_end > now);
    }
    head(t, "detshare_tenant_probation", "gauge",
         "1 while tenants of this name run in a fault domain of their own as suspects of "
         "a fault nothing attributed.");
    for (int i = 0; st->domains != NULL && i < DS_DOMAIN_NAMES; i++) {
        const struct ds_domain_name *e = &st->domains->names[i];

        if (e->name[0] == '\0')
            continue;
        put(t, "detshare_tenant_probation{tenant=\"");
        put_value(t, e->name);
        put(t, "\"} %d\n", ds__domain_on_probation(e, now));
    }
}

static void put_tenants(struct text *t, const struct ds_exposition_state *st)
{
    put_faults(t, st);
    per_tenant(t, st, "detshare_tenant_memory_used_bytes", "gauge",
               "Device memory the tenant holds, what its memory pools keep included.",
               mem_used);
    per_tenant(t, st, "detshare_tenant_host_bytes", "gauge",
               "Host memory its executor holds for the tenant's pending calls.", host_bytes);
    per_tenant(t, st, "detshare_tenant_launches_total", "counter",
               "Kernels the tenant has launched.", launches);
    per_tenant(t, st, "detshare_tenant_migrations_total", "counter",
               "Times the tenant was moved to other SMs.", migrations);
    per_tenant(t, st, "detshare_tenant_partition_escapes_total", "counter",
               "Kernels that ran on the whole device because their clusters did not fit "
               "the tenant's SMs.", escapes);
    per_tenant(t, st, "detshare_tenant_sms", "gauge",
               "SMs the tenant's kernels run on now.", sms);
    per_tenant(t, st, "detshare_tenant_gated", "gauge",
               "1 while the policy or a kernel-time quota holds the tenant's gate closed.",
               gated);
    per_tenant(t, st, "detshare_tenant_throttled", "gauge",
               "1 while the tenant's kernel-time quota holds its gate closed.", throttled);
    put_seconds(t, st, "detshare_tenant_gated_seconds_total",
                "Time the tenant's kernels were held at its closed gate.",
                gated_ns);
    put_seconds(t, st, "detshare_tenant_kernel_seconds_total",
                "Time the tenant had work on the device, sampled every 5 ms.",
                kernel_ns);
    per_procedure(t, st, "detshare_tenant_calls_total",
                  "Driver calls the tenant made, by procedure.", 0);
    per_procedure(t, st, "detshare_tenant_errors_total",
                  "Calls answered with an error (CUDA_ERROR_NOT_READY is none), by "
                  "procedure.", 1);
}

char *ds_exposition_render(const struct ds_exposition_state *st, size_t *len)
{
    struct text t = { 0 };

    put_server(&t, st);
    put_device(&t, st);
    put_tenants(&t, st);
    if (t.failed || t.buf == NULL) {
        free(t.buf);
        return NULL;
    }
    *len = t.len;
    return t.buf;
}
