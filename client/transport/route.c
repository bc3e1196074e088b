#define _GNU_SOURCE
#include "route.h"

#include "ds_log.h"
#include "ds_xdrview.h"

#include <dirent.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Where the packaged service (detshare@N.service) puts GPU N's tenant socket; a unit
 * test compiles this file with a directory of its own. */
#ifndef DS_RUN_DIR
#define DS_RUN_DIR "/run/detshare"
#endif

#define TAG_MASK (0xfull << DS_ROUTE_SHIFT)

static int ndev = 1;
static ds_route_owner_fn owner_of;

/* What the calling thread is doing: the device whose wire it encodes for and whose
 * replies it decodes, the devices a call's arguments named while they are being looked
 * at (discovering), its current context, its pinned device and its last call's. */
struct seen {
    unsigned objects; /* bit k: something of device k other than a context */
    unsigned ctxs;    /* bit k: a context of device k */
};
static _Thread_local int enc, dec, current, last;
static _Thread_local int pin = -1;
static _Thread_local struct seen *discovering;

/* Server handles carry their type in bits 56-59 (server/exec/handles.c); the stream
 * numbers CUDA reserves (0, 1, 2) and host addresses have none. */
static int is_handle(uint64_t h)
{
    return ((h >> 56) & 0xf) != 0;
}

static bool_t view_handle(XDR *x, ds_handle *h)
{
    ds_handle wire;

    if (x->x_op == XDR_DECODE) {
        if (!ds_xdr_handle_plain(x, h))
            return FALSE;
        if (is_handle(*h) && (*h & TAG_MASK) == 0)
            *h |= (uint64_t)dec << DS_ROUTE_SHIFT;
        return TRUE;
    }
    if (x->x_op != XDR_ENCODE || !is_handle(*h))
        return ds_xdr_handle_plain(x, h);
    /* A made-up handle naming no device of the tenant decides nothing: wherever it
     * goes, it goes tagged, and is refused. */
    if (discovering != NULL && ds__route_dev_of(*h) < ndev) {
        unsigned bit = 1u << ds__route_dev_of(*h);

        if (((*h >> 56) & 0xf) == 1) /* DS_H_CTX */
            discovering->ctxs |= bit;
        else
            discovering->objects |= bit;
    }
    /* Another device's handle goes with every tag bit set: device 0's carries no tag,
     * and untagged it could be one this server issued. */
    wire = ds__route_dev_of(*h) == enc ? *h & ~TAG_MASK : *h | TAG_MASK;
    return ds_xdr_handle_plain(x, &wire);
}

static bool_t view_dptr(XDR *x, ds_dptr *p)
{
    if (x->x_op == XDR_ENCODE && discovering != NULL && *p != 0) {
        int dev = owner_of(*p);

        if (dev >= 0)
            discovering->objects |= 1u << dev;
    }
    return ds_xdr_dptr_plain(x, p);
}

static const struct ds_xdr_view client_view = { .handle = view_handle, .dptr = view_dptr };

/* With one server there is nothing to tag or to find: its calls are encoded as they
 * were before several servers existed, at no cost. */
void ds__route_start(int n, ds_route_owner_fn owner)
{
    ndev = n;
    owner_of = owner;
    if (n > 1)
        ds_xdr_set_view(&client_view);
}

void ds__route_encoding(int dev)
{
    enc = dev;
}

void ds__route_decoding(int dev)
{
    dec = dev;
}

void ds__route_set_current(uint64_t ctx)
{
    int dev = ds__route_dev_of(ctx);

    /* A made-up context is refused by whichever server it reaches. */
    current = dev < ndev ? dev : 0;
}

int ds__route_current(void)
{
    return current;
}

void ds__route_pin(int dev)
{
    pin = dev;
}

void ds__route_unpin(void)
{
    pin = -1;
}

int ds__route_last(void)
{
    return last;
}

/* The one device of mask, or -1 when it has several. */
static int only(unsigned mask)
{
    return (mask & (mask - 1)) == 0 ? __builtin_ctz(mask) : -1;
}

int ds__route_pick(xdrproc_t xarg, void *arg)
{
    struct seen s = { 0, 0 };

    if (ndev == 1)
        return 0;
    if (pin >= 0)
        return last = pin;
    discovering = &s;
    xdr_sizeof(xarg, arg);
    discovering = NULL;
    if (s.objects != 0)
        return last = only(s.objects);
    if (s.ctxs != 0)
        return last = only(s.ctxs);
    return last = current;
}

/* The list's entries into out; returns 0 or -1 (said which entry is wrong). */
static int parse_list(const char *list, struct ds_addr out[DS_ROUTE_MAX], int *n)
{
    char *copy = strdup(list), *save = NULL, *tok;
    int rc = 0;

    if (copy == NULL) {
        ds_error("DETSHARE_SERVER: out of memory");
        return -1;
    }
    *n = 0;
    for (tok = strtok_r(copy, ",", &save); tok != NULL && rc == 0;
         tok = strtok_r(NULL, ",", &save)) {
        if (*n == DS_ROUTE_MAX) {
            ds_error("DETSHARE_SERVER lists more than %d servers", DS_ROUTE_MAX);
            rc = -1;
        } else if (ds_addr_parse(tok, &out[*n]) != 0) {
            ds_error("DETSHARE_SERVER entry %d (%s) is neither unix:PATH nor tcp:HOST:PORT",
                     *n + 1, tok);
            rc = -1;
        } else {
            ++*n;
        }
    }
    if (rc == 0 && *n == 0) {
        ds_error("DETSHARE_SERVER=%s names no server", list);
        rc = -1;
    }
    free(copy);
    return rc;
}

/* N of a directory named gpuN, or -1. */
static int gpu_number(const char *name)
{
    char *end;
    long v;

    if (strncmp(name, "gpu", 3) != 0 || name[3] < '0' || name[3] > '9')
        return -1;
    v = strtol(name + 3, &end, 10);
    return *end == '\0' && v < 1024 ? (int)v : -1;
}

static int by_number(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

/* Every DS_RUN_DIR/gpuN/detshare.sock, in N order, into out; the count. */
static int packaged_sockets(struct ds_addr out[DS_ROUTE_MAX])
{
    int gpus[DS_ROUTE_MAX], n = 0;
    DIR *d = opendir(DS_RUN_DIR);
    struct dirent *e;

    if (d == NULL)
        return 0;
    while ((e = readdir(d)) != NULL && n < DS_ROUTE_MAX) {
        char path[sizeof(out->path)];
        struct stat st;
        int g = gpu_number(e->d_name);

        snprintf(path, sizeof(path), DS_RUN_DIR "/gpu%d/detshare.sock", g);
        if (g >= 0 && stat(path, &st) == 0 && S_ISSOCK(st.st_mode))
            gpus[n++] = g;
    }
    closedir(d);
    qsort(gpus, (size_t)n, sizeof(gpus[0]), by_number);
    for (int i = 0; i < n; i++) {
        memset(&out[i], 0, sizeof(out[i]));
        out[i].kind = DS_ADDR_UNIX;
        snprintf(out[i].path, sizeof(out[i].path), DS_RUN_DIR "/gpu%d/detshare.sock", gpus[i]);
    }
    return n;
}

static void default_servers(struct ds_addr out[DS_ROUTE_MAX], int *n)
{
    struct stat st;

    ds_addr_default(&out[0]);
    *n = 1;
    if (stat(out[0].path, &st) != 0 && (*n = packaged_sockets(out)) == 0) {
        ds_addr_default(&out[0]);
        *n = 1;
    }
}

/* CUDA's reading of CUDA_VISIBLE_DEVICES: indices, separated by commas; the list ends
 * at the first entry that is not the index of a device not yet chosen (so "" and
 * "-1" hide every device).  Keeps the chosen servers, in the list's order.  A value
 * whose first entry names none of the servers (a GPU UUID, or the index of a GPU of the
 * host that a scheduler gave the job, beside one server) was meant for the host's GPUs,
 * not for the tenant's list: it is ignored, with a warning, rather than hiding the
 * device detshare serves. */
static void choose_visible(const char *v, struct ds_addr all[DS_ROUTE_MAX], int *n)
{
    struct ds_addr chosen[DS_ROUTE_MAX];
    unsigned taken = 0;
    const char *whole = v;
    int k = 0;

    while (k < *n) {
        char *end;
        long i = strtol(v, &end, 10);

        if (end == v || (*end != ',' && *end != '\0') || i < 0 || i >= *n ||
            (taken & (1u << i)))
            break;
        taken |= 1u << i;
        chosen[k++] = all[i];
        if (*end == '\0')
            break;
        v = end + 1;
    }
    if (k == 0 && whole[0] != '\0' && whole[0] != '-') {
        ds_warn("CUDA_VISIBLE_DEVICES=%s names none of this tenant's %d device(s) (its "
                "servers, in DETSHARE_SERVER's order): ignored",
                whole, *n);
        return;
    }
    memcpy(all, chosen, (size_t)k * sizeof(chosen[0]));
    *n = k;
}

int ds__route_servers(struct ds_addr out[DS_ROUTE_MAX], int *n)
{
    const char *list = getenv("DETSHARE_SERVER");
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");

    if (list == NULL || list[0] == '\0')
        default_servers(out, n);
    else if (parse_list(list, out, n) != 0)
        return -1;
    if (visible != NULL)
        choose_visible(visible, out, n);
    return 0;
}
