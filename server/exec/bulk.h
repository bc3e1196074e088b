/*
 * Page-locked buffers for the copy chunks a tenant without a shared arena (a remote, TCP
 * tenant) sends in-band.  A host-to-device chunk is decoded straight into a free slot
 * (common/ds_rec.h reads it from the socket in place), from which the device copies it
 * in stream order while the next chunk arrives; a device-to-host chunk is copied into
 * the reply buffer and sent from there.  Page-locked memory is what lets the driver
 * copy at full speed and asynchronously; a pageable buffer makes it stage every byte.
 *
 * Bounded: DS_BULK_SLOTS chunks for host to device plus one for device to host, made
 * at the first in-band chunk of DS_REC_DIRECT bytes or more (a tenant that copies a few
 * bytes at a time pins nothing), owned by the tenant and freed at its exit.  A slot is
 * lent from when it is handed out until the copy from it is queued (or it is given back
 * unused), then reused only once the event recorded after that copy has completed; when
 * none is free, or the buffers could not be made, a chunk goes through a buffer of its
 * own, as before, so nothing here ever waits for the device.  A striped copy
 * (stripes.h) keeps up to two slots per data connection lent at once, in either
 * direction: enough slots for the most data connections.
 */
#ifndef DS_BULK_H
#define DS_BULK_H

#include <stdint.h>

#define DS_BULK_SLOTS 8

struct ds_tenant;
struct ds_bevent;
struct ds_bstream;

struct ds_bulk {
    int state;           /* 0 not tried, 1 ready, -1 unavailable */
    unsigned char *mem;  /* DS_BULK_SLOTS + 1 chunks; the last is the reply buffer */
    int pinned;          /* registered with the device (host_map) */
    uint64_t addr;       /* the device's address of mem, when pinned */
    struct ds_bevent *ev[DS_BULK_SLOTS]; /* recorded after the last copy from slot i */
    int busy[DS_BULK_SLOTS];
    unsigned next;
};

/* Lend a slot of DS_CHUNK_MAX bytes to decode a host-to-device chunk into (or, for a
 * striped copy, to fill from the device and send), or NULL when none is free or there
 * are none (yet, or for a tenant with a shared arena, whose bulk bytes never come
 * in-band).  The slot goes back with ds__bulk_htod_queued or ds__bulk_forget. */
char *ds__bulk_htod_slot(struct ds_tenant *t);

/* Make the buffers now, for a striped copy of n bytes (as the first in-band chunk of
 * that size would).  Returns 1 when there are slots, 0 when not. */
int ds__bulk_ready(struct ds_tenant *t, uint64_t n);

/* The copy of n bytes from p (a slot or not) was queued on stream s: a slot is busy
 * until the device has done it.  Returns 0, or DS_E* when its event could not be
 * recorded. */
int ds__bulk_htod_queued(struct ds_tenant *t, const void *p, uint64_t n, struct ds_bstream *s);

/* The buffer of DS_CHUNK_MAX bytes for a device-to-host chunk of n bytes, or NULL (the
 * caller then allocates one).  The reply must have left before the next call is served. */
char *ds__bulk_dtoh_buf(struct ds_tenant *t, uint64_t n);

/* If *p is one of the tenant's buffers, forget it (*p = NULL), so that freeing the
 * decoded arguments or results does not free it; a slot lent and not queued from is
 * free again. */
void ds__bulk_forget(struct ds_tenant *t, char **p);

/* 1 when p is one of the tenant's buffers. */
int ds__bulk_owns(const struct ds_tenant *t, const void *p);

/* Free the buffers, once the copies from them are done (at most a short wait; the
 * executor exits with the tenant). */
void ds__bulk_fini(struct ds_tenant *t);

#endif
