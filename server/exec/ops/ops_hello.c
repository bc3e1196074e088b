/*
 * The hello (DS_HELLO): a tenant's name checked against what the control process granted
 * and against rules bound to other users, its class, the device opened for it below room
 * kept for its memory, and the answer: the device it will see for its whole life and the
 * address space the driver reserved here, which the tenant reserves too (docs/memory.md).
 */
#include "ops.h"
#include "stripes.h"

#include "devout.h"
#include "ds_error.h"
#include "ds_log.h"
#include "ds_preface.h"
#include "ds_vamap.h"
#include "quota.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

/* The control process chose the tenant's fault domain (and, over TCP, checked its
 * token) for the name its preface gave: its hello may not claim another.  name is the
 * hello's, as ds_name_clean keeps it; a tenant whose token names it gets that name in
 * name instead, whatever its hello says. */
static int name_granted(const struct ds_tenant *t, char *name)
{
    const char *granted = t->shm->slots[t->slot].granted;

    if (granted[0] == '\0')
        return 1;
    if (t->shm->slots[t->slot].named) {
        snprintf(name, DS_NAME_MAX + 1, "%s", granted);
        return 1;
    }
    if (strcmp(name, granted) == 0)
        return 1;
    ds_warn("refusing the hello of %s: its preface (and token, if any) named tenant %s", name,
            granted);
    return 0;
}

/* A Unix tenant may not claim a name whose rule is bound to another user (uid=): the
 * name is that user's, or another could take its limits, class and share. */
static int name_free(const struct ds_tenant *t, const char *name)
{
    const struct ds_shm_slot *s = &t->shm->slots[t->slot];
    struct ds_shm_quota q;

    if (s->peer_pid == 0)
        return 1;
    ds_quota_lookup(t->shm, name, -1, &q);
    if (!q.has_uid || q.uid == (uint32_t)s->peer_uid)
        return 1;
    ds_warn("refusing the hello of %s (pid %d, uid %u): quota rule %s binds that name to "
            "uid %u", name, (int)s->peer_pid, (unsigned)s->peer_uid, q.name, q.uid);
    return 0;
}

/* The class the tenant gets: the one it claims unless its quota rule sets one. */
static int class_of(struct ds_tenant *t, int claimed)
{
    struct ds_shm_quota q;

    ds_quota_lookup(t->shm, t->name, t->acct.uid, &q);
    return ds_quota_class_of(&q, claimed);
}

/* Room held at the top of this process's address space while the device opens.  The
 * driver reserves its device address space where mmap puts things, below the process's
 * libraries, which is also where a tenant's own mappings are, the program's memory made
 * before it connected included; with x86-64's default randomisation the two processes'
 * tops lie up to 1 TiB apart.  Below 2 TiB of room, the reservations stay clear of a
 * tenant's first TiB of mappings, as natively they would be of the program's, made in
 * its own process.  The room is address space only, let go once the device is open. */
#define TENANT_ROOM (2ull << 40)

int ds__ops_open_device(struct ds_tenant *t, int primary)
{
    void *room = mmap(NULL, TENANT_ROOM, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                      -1, 0);
    int rc = t->be != NULL ? 0 : ds__tenant_open(t);

    if (rc == 0 && primary)
        rc = ds__ops_make_primary(t);
    if (room != MAP_FAILED)
        munmap(room, TENANT_ROOM);
    else
        ds_debug("no room held while the device opens: its address space may cover the "
                 "tenant's memory");
    return rc;
}

/* Reserved ranges smaller than this are not the driver's: glibc's per-thread malloc heaps
 * reserve 64 MiB each, their first pages in use, while a driver reserves GiB at a time. */
#define RESERVED_MIN (64ull << 20)

/* This process's reserved address space, as of the hello (one tenant per executor): the
 * device addresses the driver hands out come from there, and natively the program's own
 * mappings could never be there, as the reservations would be in its process.  The
 * hello's reply points into `kept`. */
static void list_reserved(ds_hello_ok *ok)
{
    static ds_va_range kept[DS_VA_RESERVED_MAX];
    struct ds_vamap_range v[DS_VA_RESERVED_MAX];
    uint64_t total = 0;
    int n = ds_vamap_reserved(0, RESERVED_MIN, v, DS_VA_RESERVED_MAX);

    if (n < 0) {
        ds_warn("cannot read this process's mappings (%s): the tenant's memory may land on "
                "device addresses", ds_strerror(n));
        n = 0;
    }
    for (int i = 0; i < n; i++) {
        kept[i].base = v[i].base;
        kept[i].size = v[i].size;
        total += v[i].size;
    }
    ok->reserved.reserved_len = (unsigned)n;
    ok->reserved.reserved_val = kept;
    ds_debug("%d reserved ranges of address space (%llu MiB) go to the tenant", n,
             (unsigned long long)(total >> 20));
}

CUresult ds__ops_hello(struct ds_tenant *t, const ds_hello_args *a, ds_hello_res *r)
{
    ds_hello_ok *ok = &r->ds_hello_res_u.ok;
    char prefix[DS_NAME_MAX + 40], name[DS_NAME_MAX + 1];
    int rc, klass;

    if (t->greeted)
        return CUDA_ERROR_INVALID_VALUE;
    if (a->proto_version != DS_PROTO_VERSION) {
        ds_warn("refusing client speaking protocol %u (server speaks %d)", a->proto_version,
                DS_PROTO_VERSION);
        t->closing = 1;
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    if (a->klass != DS_CLASS_LATENCY && a->klass != DS_CLASS_BEST_EFFORT)
        return CUDA_ERROR_INVALID_VALUE;
    ds_name_clean(name, a->tenant, DS_NAME_MAX);
    if (!name_granted(t, name) || !name_free(t, name)) {
        t->closing = 1;
        return CUDA_ERROR_NOT_PERMITTED;
    }
    rc = ds__ops_open_device(t, 1);
    if (rc != 0) {
        ds_error("cannot open the %s device for a tenant: %s", t->ops->name, ds_strerror(rc));
        t->closing = 1;
        return CUDA_ERROR_NO_DEVICE;
    }
    ds__tenant_map_control(t);
    if (ds__tenant_map_arena(t, a->arena_base) != 0)
        ds_warn("no room to map the tenant's host arena: page-locked memory unavailable");
    memcpy(t->name, name, sizeof(name));
    /* Named in the slot first, so that rules published meanwhile key it (quota.h). */
    memcpy(t->shm->slots[t->slot].tenant, t->name, sizeof(t->name));
    t->view.total_mem = ds__account_join(&t->acct, t->view.total_mem);
    klass = class_of(t, (int)a->klass);
    atomic_store(&t->shm->slots[t->slot].klass, klass);
    snprintf(prefix, sizeof(prefix), "tenant %llu [%s]",
             (unsigned long long)t->shm->slots[t->slot].id, t->name);
    ds_log_set_prefix(prefix);
    if (t->own_process && ds__devout_log_untaken() != 0)
        ds_warn("its device output goes to the server's own output, untagged");
    ds_info("joined as %s on the %s device%s",
            klass == DS_CLASS_LATENCY ? "latency-critical" : "best-effort", t->ops->name,
            klass == (int)a->klass ? "" : " (its quota rule's class, not the one it claimed)");
    t->greeted = 1;
    ok->proto_version = DS_PROTO_VERSION;
    ok->tenant_id = (unsigned)t->shm->slots[t->slot].id;
    ds__stripes_secret((unsigned char *)ok->attach_secret);
    ok->primary = t->primary;
    ok->backend = (char *)t->ops->name;
    ok->dev.name = t->view.name;
    memcpy(ok->dev.uuid, t->view.uuid, sizeof(ok->dev.uuid));
    ok->dev.total_mem = t->view.total_mem;
    ok->dev.attrs.attrs_len = DS_ATTR_COUNT;
    ok->dev.attrs.attrs_val = t->view.attrs;
    ok->dev.driver_version = t->view.driver_version;
    list_reserved(ok);
    return CUDA_SUCCESS;
}
