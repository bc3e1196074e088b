/*
 * CUDA IPC between tenants of one user (cuIpcGetMemHandle, cuIpcOpenMemHandle,
 * cuIpcCloseMemHandle, cuIpcGetEventHandle, cuIpcOpenEventHandle), as
 * torch.multiprocessing shares CUDA tensors between processes.
 *
 * An export is published in the server's registry (server/ipcreg.h) under the exporting
 * tenant's user, and the tenant gets the registry's handle, the same one each time it
 * exports the same allocation or event.  The export is withdrawn when the allocation is
 * freed or the event destroyed, the tenant's exit included.  Opening looks the handle up
 * first, and refuses with CUDA_ERROR_INVALID_HANDLE and a log line whatever is not a live
 * export of a tenant of the opener's own user (one answer for all of these, so that a
 * tenant learns nothing of other users' exports); only then does the backend open what
 * the registry, never the tenant, describes.  A tenant over TCP has no user that the
 * kernel vouches for: IPC is CUDA_ERROR_NOT_SUPPORTED to it, either way.
 *
 * Opened memory is device memory of the opener for every check (an entry of t->mem of
 * kind DS_RANGE_IPC, which cuMemFree refuses and the quota does not count: the memory is
 * the exporter's) until cuIpcCloseMemHandle drops its last
 * reference: opening the same handle again gives the same address and one more
 * reference, as the driver does.
 *
 * A tenant with several servers on one host copies between its devices through the same
 * exports (DS_PEER_EXPORT, DS_PEER_OPEN): the source's executor exports the allocation,
 * the destination's looks the handle up in the source executor's own control block and
 * maps it as if cuIpcOpenMemHandle had opened it, so the copy runs device to device and
 * its mapping is closed with DS_IPC_MEM_CLOSE.
 *
 * A stream of one of those servers' devices waits for an event of another's through
 * the event's shadow (DS_PEER_EVENT_EXPORT, DS_PEER_EVENT_OPEN): an interprocess event
 * that the event's executor makes on the first such wait and exports, and records, at
 * each such wait, on a stream of its own that first waits for the tenant's event; so the
 * shadow completes when the event's last record before the wait does, and the waiting
 * executor, which opened the shadow, waits for it on the tenant's stream, on the device.
 */
#include "ops.h"

#include "ds_error.h"
#include "ds_log.h"
#include "exec_spawn.h"
#include "ipcreg.h"
#include "shm.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

_Static_assert(DS_IPC_BLOB == DS_SHM_IPC_BLOB, "the registry holds a backend's blob");
_Static_assert(DS_IPC_HANDLE_SIZE == DS_IPCREG_HANDLE, "the wire holds a registry handle");

/* An opened mapping (data of its t->ipc_in entry): which export it is, and how many
 * times the tenant opened it without closing. */
struct opened {
    int slot, index;
    uint64_t key[2];
    unsigned refs;
};

/* The tenant's user in *uid, or -1 with a log line for a tenant whose user the kernel
 * does not vouch for (TCP). */
static int tenant_uid(const struct ds_tenant *t, const char *call, uint32_t *uid)
{
    const struct ds_shm_slot *s = &t->shm->slots[t->slot];

    if (s->peer_pid == 0) {
        ds_warn("%s refused (CUDA_ERROR_NOT_SUPPORTED): IPC is for tenants on the Unix "
                "socket, whose user the kernel vouches for; this one is over TCP", call);
        return -1;
    }
    *uid = (uint32_t)s->peer_uid;
    return 0;
}

/* The export a tenant's handle names, for the tenant to open: CUDA_SUCCESS with *f, or
 * the refusal, logged. */
static CUresult look_up(struct ds_tenant *t, const char *call, const ds_ipc_handle *h,
                        enum ds_ipcreg_kind kind, uint32_t uid, struct ds_ipcreg_found *f)
{
    int rc = ds_ipcreg_lookup(t->shm, (const unsigned char *)h->bytes, kind, uid, f);

    if (rc == DS_EPERM) {
        ds_warn("%s refused (CUDA_ERROR_INVALID_HANDLE): the handle was exported by a "
                "tenant of another user", call);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (rc != 0) {
        ds_warn("%s refused (CUDA_ERROR_INVALID_HANDLE): the handle names nothing exported "
                "now (made up, altered, or its export withdrawn)", call);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    /* The driver opens no handle in the process that exported it. */
    return f->slot == t->slot ? CUDA_ERROR_INVALID_CONTEXT : CUDA_SUCCESS;
}

/* Publish what the backend exported (blob) and hand the tenant its handle in *out.
 * Returns CUDA_SUCCESS or the refusal, logged. */
static CUresult publish(struct ds_tenant *t, uint32_t uid, enum ds_ipcreg_kind kind,
                        uint64_t size, const unsigned char *blob, struct ds_ipc_export **out)
{
    struct ds_ipc_export *x = malloc(sizeof(*x));
    int idx;

    if (x == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    idx = ds_ipcreg_publish(t->shm, t->slot, uid, kind, size, blob, x->handle);
    if (idx >= 0) {
        x->index = idx;
        *out = x;
        return CUDA_SUCCESS;
    }
    free(x);
    if (idx == DS_ENOMEM) {
        ds_warn("IPC export refused (CUDA_ERROR_OUT_OF_MEMORY): the tenant holds %d exports, "
                "all the registry keeps for one; freeing exported memory or destroying "
                "exported events makes room", DS_SHM_IPC_MAX);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    ds_error("IPC export failed: no random key for its handle");
    return CUDA_ERROR_OPERATING_SYSTEM;
}

static void withdraw(struct ds_tenant *t, struct ds_ipc_export *x)
{
    ds_ipcreg_withdraw(t->shm, t->slot, x->index);
    free(x);
}

static void reply_handle(const struct ds_ipc_export *x, ds_ipc_handle_res *r)
{
    memcpy(r->ds_ipc_handle_res_u.handle.bytes, x->handle, sizeof(x->handle));
}

/* The whole of the cuMemAlloc allocation that p lies in, as the driver exports it. */
CUresult ds__ops_ipc_mem_export(struct ds_tenant *t, const ds_dptr *p, ds_ipc_handle_res *r)
{
    const struct ds_memtab_entry *e = ds_memtab_find(&t->mem, *p, 0), *done;
    struct ds_memtab_entry out;
    unsigned char blob[DS_IPC_BLOB];
    struct ds_ipc_export *x;
    uint32_t uid;
    CUresult rc;
    int err;

    if (tenant_uid(t, "cuIpcGetMemHandle", &uid) != 0)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (e == NULL || e->kind != DS_RANGE_ALLOC)
        return CUDA_ERROR_INVALID_VALUE;
    out = (struct ds_memtab_entry){ .base = e->base, .size = e->size };
    if ((done = ds_memtab_find(&t->ipc_out, out.base, 0)) != NULL) {
        reply_handle(done->data, r);
        return CUDA_SUCCESS;
    }
    if ((err = t->ops->ipc_mem_export(t->be, out.base, out.size, blob)) != 0)
        return ds_error_to_cu(err);
    if ((rc = publish(t, uid, DS_IPCREG_MEM, out.size, blob, &x)) != CUDA_SUCCESS)
        return rc;
    out.data = x;
    if (ds_memtab_insert(&t->ipc_out, &out) != 0) {
        withdraw(t, x);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    reply_handle(x, r);
    return CUDA_SUCCESS;
}

void ds__ops_ipc_mem_gone(struct ds_tenant *t, uint64_t base)
{
    struct ds_memtab_entry x;

    if (ds_memtab_remove(&t->ipc_out, base, &x) == 0)
        withdraw(t, x.data);
}

/* The tenant's mapping of export f, if it has one open. */
static const struct ds_memtab_entry *find_opened(const struct ds_tenant *t,
                                                 const struct ds_ipcreg_found *f)
{
    for (size_t i = 0; i < t->ipc_in.n; i++) {
        const struct opened *o = t->ipc_in.v[i].data;

        if (o->slot == f->slot && o->index == f->index && o->key[0] == f->key[0] &&
            o->key[1] == f->key[1])
            return &t->ipc_in.v[i];
    }
    return NULL;
}

/* Map export f anew in context ctx, as device memory of the tenant's, at *base. */
static CUresult map_new(struct ds_tenant *t, uint64_t ctx, const struct ds_ipcreg_found *f,
                        unsigned flags, uint64_t *base)
{
    struct opened *o = calloc(1, sizeof(*o));
    struct ds_memtab_entry in = { .size = f->size, .owner = ctx, .data = o };
    struct ds_memtab_entry dev = { .size = f->size, .kind = DS_RANGE_IPC };
    int rc;

    if (o == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if ((rc = t->ops->ipc_mem_open(t->be, f->blob, f->size, flags, &dev.base)) != 0) {
        free(o);
        if (rc == DS_EHANDLE)
            ds_warn("cuIpcOpenMemHandle refused (CUDA_ERROR_INVALID_HANDLE): the exported "
                    "memory is gone");
        return ds_error_to_cu(rc);
    }
    in.base = dev.base;
    if ((rc = ds_memtab_insert(&t->mem, &dev)) == 0 &&
        (rc = ds_memtab_insert(&t->ipc_in, &in)) != 0)
        ds_memtab_remove(&t->mem, dev.base, NULL);
    if (rc != 0) {
        t->ops->ipc_mem_close(t->be, dev.base);
        free(o);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *o = (struct opened){ .slot = f->slot, .index = f->index, .key = { f->key[0], f->key[1] },
                          .refs = 1 };
    *base = dev.base;
    return CUDA_SUCCESS;
}

/* Map export f for the tenant in context ctx, or take one more reference to its
 * mapping, into *r. */
static CUresult open_found(struct ds_tenant *t, uint64_t ctx, const struct ds_ipcreg_found *f,
                           unsigned flags, ds_range_res *r)
{
    const struct ds_memtab_entry *m = find_opened(t, f);
    CUresult rc;

    if (m != NULL) {
        struct opened *o = m->data;

        if (o->refs == UINT_MAX)
            return CUDA_ERROR_INVALID_VALUE;
        o->refs++;
        r->ds_range_res_u.range.base = m->base;
    } else if ((rc = map_new(t, ctx, f, flags, &r->ds_range_res_u.range.base)) !=
               CUDA_SUCCESS) {
        return rc;
    }
    r->ds_range_res_u.range.size = f->size;
    return CUDA_SUCCESS;
}

CUresult ds__ops_ipc_mem_open(struct ds_tenant *t, const ds_ipc_mem_open_args *a,
                              ds_range_res *r)
{
    struct ds_ipcreg_found f;
    uint32_t uid;
    CUresult rc;

    if (ds__tenant_ctx(t, a->ctx) == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (tenant_uid(t, "cuIpcOpenMemHandle", &uid) != 0)
        return CUDA_ERROR_NOT_SUPPORTED;
    /* The H100's driver (580) refuses any other flags, 0 included (run 44), as the
     * runtime's documentation says it must be given. */
    if (a->flags != CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)
        return CUDA_ERROR_INVALID_VALUE;
    rc = look_up(t, "cuIpcOpenMemHandle", &a->handle, DS_IPCREG_MEM, uid, &f);
    if (rc != CUDA_SUCCESS)
        return rc;
    return open_found(t, a->ctx, &f, a->flags, r);
}

/* The tenant's own allocation exported for its executor of another server on this host:
 * the registry's handle, and this executor, whose control block holds the registry. */
CUresult ds__ops_peer_export(struct ds_tenant *t, const ds_dptr *p, ds_peer_token_res *r)
{
    ds_ipc_handle_res h;
    CUresult rc = ds__ops_ipc_mem_export(t, p, &h);

    if (rc != CUDA_SUCCESS)
        return rc;
    r->ds_peer_token_res_u.token.handle = h.ds_ipc_handle_res_u.handle;
    r->ds_peer_token_res_u.token.pid = (int)getpid();
    return CUDA_SUCCESS;
}

/* Look a peer token up in the registry of the control block that executor pid maps at
 * DS_EXEC_SHM_FD.  The tenant names the process, but only an executor of this server's
 * user can be opened so (the kernel's check on /proc/PID/fd), only a control block passes
 * ds_shm_attach, and the registry still wants the export's random key and the tenant's
 * user: a token of another tenant's, made up or stale, opens nothing. */
static CUresult peer_look_up(const ds_peer_token *tok, enum ds_ipcreg_kind kind, uint32_t uid,
                             struct ds_ipcreg_found *f)
{
    char path[64];
    struct ds_shm *shm;
    int fd, rc = DS_EHANDLE;

    snprintf(path, sizeof(path), "/proc/%d/fd/%d", tok->pid, DS_EXEC_SHM_FD);
    fd = tok->pid > 0 && tok->pid != (int)getpid() ? open(path, O_RDWR | O_CLOEXEC) : -1;
    if (fd >= 0 && (shm = ds_shm_attach(fd)) != NULL) {
        rc = ds_ipcreg_lookup(shm, (const unsigned char *)tok->handle.bytes, kind, uid, f);
        ds_shm_unmap(shm);
    }
    if (fd >= 0)
        close(fd);
    if (rc != 0)
        ds_warn("%s refused (CUDA_ERROR_INVALID_HANDLE): the other device's executor has "
                "no live export of this tenant's user on this host by that name",
                kind == DS_IPCREG_MEM ? "peer copy" : "wait for another device's event");
    return rc == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult ds__ops_peer_open(struct ds_tenant *t, const ds_peer_open_args *a, ds_range_res *r)
{
    struct ds_ipcreg_found f;
    uint32_t uid;
    CUresult rc;

    if (ds__tenant_ctx(t, a->ctx) == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (tenant_uid(t, "peer copy", &uid) != 0)
        return CUDA_ERROR_NOT_SUPPORTED;
    if ((rc = peer_look_up(&a->token, DS_IPCREG_MEM, uid, &f)) != CUDA_SUCCESS)
        return rc;
    return open_found(t, a->ctx, &f, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS, r);
}

/* Unmap opened mapping i of t->ipc_in, whatever its references. */
static void unmap_opened(struct ds_tenant *t, size_t i)
{
    struct ds_memtab_entry in = t->ipc_in.v[i];

    ds_memtab_remove(&t->mem, in.base, NULL);
    t->ops->ipc_mem_close(t->be, in.base);
    ds_memtab_remove(&t->ipc_in, in.base, NULL);
    free(in.data);
}

CUresult ds__ops_ipc_mem_close(struct ds_tenant *t, const ds_dptr *p, ds_hyper_res *r)
{
    const struct ds_memtab_entry *m = ds_memtab_find(&t->ipc_in, *p, 0);
    struct opened *o;

    if (m == NULL || m->base != *p)
        return CUDA_ERROR_INVALID_VALUE;
    o = m->data;
    r->ds_hyper_res_u.value = --o->refs;
    if (o->refs == 0)
        unmap_opened(t, (size_t)(m - t->ipc_in.v));
    return CUDA_SUCCESS;
}

void ds__ops_ipc_close(struct ds_tenant *t, uint64_t ctx, int all)
{
    for (size_t i = t->ipc_in.n; i-- > 0;)
        if (all || t->ipc_in.v[i].owner == ctx)
            unmap_opened(t, i);
}

CUresult ds__ops_ipc_event_export(struct ds_tenant *t, const ds_handle *h,
                                  ds_ipc_handle_res *r)
{
    struct ds_vevent *e = ds_handles_get(&t->h, *h, DS_H_EVENT);
    unsigned char blob[DS_IPC_BLOB];
    uint32_t uid;
    CUresult rc;
    int err;

    if (e == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (tenant_uid(t, "cuIpcGetEventHandle", &uid) != 0)
        return CUDA_ERROR_NOT_SUPPORTED;
    /* An opened event is exported by the tenant that made it, whose handle serves all. */
    if (!(e->flags & CU_EVENT_INTERPROCESS) || e->opened)
        return CUDA_ERROR_INVALID_VALUE;
    if (e->exported == NULL) {
        if ((err = t->ops->ipc_event_export(t->be, e->real, blob)) != 0)
            return ds_error_to_cu(err);
        if ((rc = publish(t, uid, DS_IPCREG_EVENT, 0, blob, &e->exported)) != CUDA_SUCCESS)
            return rc;
    }
    reply_handle(e->exported, r);
    return CUDA_SUCCESS;
}

void ds__ops_ipc_event_gone(struct ds_tenant *t, struct ds_vevent *e)
{
    if (e->exported != NULL)
        withdraw(t, e->exported);
    e->exported = NULL;
    /* A wait already given to another executor holds its own opened shadow. */
    if (e->shadow != NULL) {
        withdraw(t, e->shadow_out);
        t->ops->event_destroy(t->be, e->shadow);
    }
    e->shadow = NULL;
    e->shadow_out = NULL;
}

/* A tenant's event opened from the registry's entry f, in context ctx, into *r. */
static CUresult open_event(struct ds_tenant *t, uint64_t ctx, const struct ds_ipcreg_found *f,
                           ds_handle_res *r)
{
    struct ds_vevent *e = calloc(1, sizeof(*e));
    int err;

    if (e == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *e = (struct ds_vevent){ .ctx = ctx, .flags = CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING,
                             .opened = 1 };
    if ((err = t->ops->ipc_event_open(t->be, f->blob, &e->real)) != 0) {
        free(e);
        return ds_error_to_cu(err);
    }
    return ds__tenant_publish_event(t, e, &r->ds_handle_res_u.handle);
}

/* A new event of the tenant's, like one created with CU_EVENT_INTERPROCESS and
 * CU_EVENT_DISABLE_TIMING, as the driver makes it. */
CUresult ds__ops_ipc_event_open(struct ds_tenant *t, const ds_ipc_event_open_args *a,
                                ds_handle_res *r)
{
    struct ds_ipcreg_found f;
    uint32_t uid;
    CUresult rc;

    if (ds__tenant_ctx(t, a->ctx) == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (tenant_uid(t, "cuIpcOpenEventHandle", &uid) != 0)
        return CUDA_ERROR_NOT_SUPPORTED;
    rc = look_up(t, "cuIpcOpenEventHandle", &a->handle, DS_IPCREG_EVENT, uid, &f);
    return rc == CUDA_SUCCESS ? open_event(t, a->ctx, &f, r) : rc;
}

/* Event e's shadow, made and published (for a tenant of user uid). */
static CUresult shadow_new(struct ds_tenant *t, uint32_t uid, struct ds_vevent *e)
{
    unsigned char blob[DS_IPC_BLOB];
    struct ds_bevent *sh;
    CUresult rc;
    int err = t->ops->event_create(t->be, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING, &sh);

    if (err != 0)
        return ds_error_to_cu(err);
    if ((err = t->ops->ipc_event_export(t->be, sh, blob)) != 0)
        rc = ds_error_to_cu(err);
    else
        rc = publish(t, uid, DS_IPCREG_EVENT, 0, blob, &e->shadow_out);
    if (rc != CUDA_SUCCESS) {
        t->ops->event_destroy(t->be, sh);
        return rc;
    }
    e->shadow = sh;
    return CUDA_SUCCESS;
}

/* The stream the shadows are recorded on, made on first use: none of the tenant's, so
 * that its wait for the tenant's event holds none of the tenant's work back. */
static CUresult shadow_stream(struct ds_tenant *t)
{
    int err;

    if (t->shadows != NULL)
        return CUDA_SUCCESS;
    err = t->ops->stream_create(t->be, CU_STREAM_NON_BLOCKING, 0, &t->shadows);
    if (err != 0)
        t->shadows = NULL;
    return ds_error_to_cu(err);
}

void ds__ops_shadows_fini(struct ds_tenant *t)
{
    if (t->shadows != NULL)
        t->ops->stream_destroy(t->be, t->shadows);
    t->shadows = NULL;
}

/* The shadow's record is made when this call returns, so a wait the tenant sends to its
 * other server next finds it whatever order the two executors run in. */
CUresult ds__ops_peer_event_export(struct ds_tenant *t, const ds_handle *h, ds_peer_token_res *r)
{
    struct ds_vevent *e = ds_handles_get(&t->h, *h, DS_H_EVENT);
    uint32_t uid;
    CUresult rc;
    int err;

    if (e == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (tenant_uid(t, "a wait for another device's event", &uid) != 0)
        return CUDA_ERROR_NOT_SUPPORTED;
    if ((rc = shadow_stream(t)) != CUDA_SUCCESS ||
        (e->shadow == NULL && (rc = shadow_new(t, uid, e)) != CUDA_SUCCESS))
        return rc;
    if ((err = t->ops->stream_wait_event(t->be, t->shadows, e->real)) != 0 ||
        (err = t->ops->event_record(t->be, e->shadow, t->shadows)) != 0)
        return ds_error_to_cu(err);
    memcpy(r->ds_peer_token_res_u.token.handle.bytes, e->shadow_out->handle,
           sizeof(e->shadow_out->handle));
    r->ds_peer_token_res_u.token.pid = (int)getpid();
    return CUDA_SUCCESS;
}

CUresult ds__ops_peer_event_open(struct ds_tenant *t, const ds_peer_open_args *a,
                                 ds_handle_res *r)
{
    struct ds_ipcreg_found f;
    uint32_t uid;
    CUresult rc;

    if (ds__tenant_ctx(t, a->ctx) == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (tenant_uid(t, "a wait for another device's event", &uid) != 0)
        return CUDA_ERROR_NOT_SUPPORTED;
    rc = peer_look_up(&a->token, DS_IPCREG_EVENT, uid, &f);
    return rc == CUDA_SUCCESS ? open_event(t, a->ctx, &f, r) : rc;
}
