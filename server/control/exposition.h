/*
 * The server's state in Prometheus's text exposition format (version 0.0.4), for the
 * metrics endpoint (metrics.h): server-wide series from the configuration and the control
 * process's own counters, and per-tenant series read from the control block.  Every
 * metric is named in docs/metrics.md.
 */
#ifndef DS_EXPOSITION_H
#define DS_EXPOSITION_H

#include "control.h"
#include "domain.h"
#include "shm.h"

#include <stddef.h>
#include <stdint.h>

/* Why the control process turned a connection away, each with a counter. */
enum ds_refusal {
    DS_REFUSED_TOKEN,    /* no, a wrong or a malformed token preface, or none in time */
    DS_REFUSED_CAPACITY, /* no tenant slot, no executor, too many prefaces at once */
    DS_REFUSED_SHUTDOWN, /* the server was stopping */
    DS_REFUSED_PREFACE,  /* a Unix peer's preface: malformed, or none in time */
    DS_REFUSED_COUNT
};

/* What the control process knows besides the control block. */
struct ds_exposition_state {
    const struct ds_server_config *cfg;
    const struct ds_shm *shm;
    const char *policy;
    const struct ds_sched_tenant *tenants; /* served now */
    int ntenants;
    int nwarm;
    int mps_daemon_up;           /* meaningful when cfg->mps_daemon > 0 */
    uint64_t tenants_served;     /* handed to an executor since start */
    uint64_t refused[DS_REFUSED_COUNT];
    const struct ds_domains *domains; /* faults by tenant name, quarantine (domain.h) */
};

/* The exposition of `st`, NUL-terminated, in a buffer the caller frees; its length in
 * *len.  Returns NULL when out of memory. */
char *ds_exposition_render(const struct ds_exposition_state *st, size_t *len);

#endif
