/*
 * The admin API: an owner-only (or, with --admin-group, owner-and-group) Unix socket in
 * the control process.  A client sends one msgpack map per request and gets one map back;
 * detshare-ctl is its command-line client and docs/admin.md its schema.  Requests:
 *   {"cmd": "status"}                 -> {"ok": true, "status": {...}}
 *   {"cmd": "policy"}                 -> {"ok": true, "policy": NAME, "policies": [...]}
 *   {"cmd": "policy", "name": NAME}   -> the same, after switching; a NAME with a '/' is a
 *                                        shared object's path, loaded only from the
 *                                        --policy-dir directory (sched/policy.h)
 *   {"cmd": "tenant", "name": NAME, "class": "latency"|"best-effort", "slo_us": N}
 *                                     -> {"ok": true, "tenants": HOW_MANY}; older
 *                                        clients' "slo_ms" in place of "slo_us" too
 *   {"cmd": "quota"}                  -> {"ok": true, "quotas": [{"name", "memory",
 *                                        "sm_share"}...]}
 *   {"cmd": "quota", "name": NAME, "memory": BYTES|nil, "sm_share": PCT|nil}
 *                                     -> the same, after the change, and "tenants":
 *                                        how many connected now it applies to
 *   {"cmd": "tenant", "name": NAME, "phase": "decode"|"prefill"|"auto"}
 *                                     -> {"ok": true, "tenants": HOW_MANY}
 *   {"cmd": "trace", "name": NAME, "seconds": N}
 *                                     -> {"ok": true, "tenants": HOW_MANY, "seconds": N}
 *   {"cmd": "trace", "name": NAME, "stop": true}
 *                                     -> {"ok": true, "trace": {...}} (docs/admin.md)
 *   {"cmd": "token", "token": T, "name": PREFIX, "as": NAME}   ("as" optional)
 *   {"cmd": "token", "token": T, "revoke": true}
 *                                     -> {"ok": true, "tokens": HOW_MANY_ADDED}
 * and {"ok": false, "error": TEXT} for anything else.  A connection has a deadline to send
 * its request and take the answer, and only so many may be open at once (admin.c says why
 * and how long); more are refused with an error map, logged now and then.
 */
#ifndef DS_ADMIN_H
#define DS_ADMIN_H

#include "shm.h"

#include <msgpack.h>
#include <sys/types.h>
#include <uv.h>

struct ds_admin;

/* What the control process answers with. */
struct ds_admin_hooks {
    void *ctx;
    void (*pack_status)(void *ctx, msgpack_packer *pk);
    /* Switch to policy `name` (NULL: only tell).  Returns the policy in force, or NULL
     * when there is no policy called `name`. */
    const char *(*policy)(void *ctx, const char *name);
    /* Give every tenant called `name` class `klass` (DS_CLASS_*) and SLO slo_us (us, 0:
     * none).  Returns how many there were. */
    int (*tenant_class)(void *ctx, const char *name, int klass, unsigned slo_us);
    /* The quota rules in force, as ds_status_pack_quotas packs them. */
    void (*pack_quotas)(void *ctx, msgpack_packer *pk);
    /* Change the quota rule for q->name (checked): the limits whose DS_QUOTA_* bits are in
     * `limits`, from q (0: no limit); a rule left with no limit goes.  Returns NULL with
     * *tenants the number of tenants connected now that the rule applies to, or why it
     * was refused. */
    const char *(*set_quota)(void *ctx, const struct ds_shm_quota *q, unsigned limits,
                             int *tenants);
    /* Give every tenant called `name` phase hint `phase` (enum ds_sched_phase).  Returns
     * how many there were. */
    int (*tenant_phase)(void *ctx, const char *name, int phase);
    /* Start a trace of the tenants called `name` for `seconds` (1 to an hour, checked),
     * or with stop != 0 end it and hand it over: packs the whole answer
     * (server/control/tracectl.h). */
    void (*trace)(void *ctx, const char *name, int stop, unsigned seconds, msgpack_packer *pk);
    /* Add `token` for tenant names beginning with `prefix`, naming them `as` ("": their
     * own name), or with prefix NULL revoke it (tokens.h).  Returns NULL with *count the
     * tokens added that remain, or why it was refused. */
    const char *(*token)(void *ctx, const char *token, const char *prefix, const char *as,
                         size_t *count);
};

/* Listen on `path` in `loop`: mode 0600, or with `group` other than (gid_t)-1, 0660 and
 * owned by that group (--admin-group).  Each connection's deadline is read from the
 * environment here (DETSHARE_ADMIN_DEADLINE_MS, default 30 s).  Returns 0, or a libuv
 * error after logging. */
int ds_admin_open(uv_loop_t *loop, const char *path, gid_t group,
                  const struct ds_admin_hooks *hooks, struct ds_admin **out);

/* Stop listening, close every admin connection and remove the socket file. */
void ds_admin_close(struct ds_admin *a);

#endif
