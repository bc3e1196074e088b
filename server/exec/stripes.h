/*
 * A TCP tenant's data connections (docs/protocol.md, "Data"): extra connections over
 * which the chunks of its large in-band copies travel, several at a time, while its
 * calls stay on the first.  The hello tells the tenant a secret made here; a data
 * connection shows it in its attach preface, the control process hands it over without
 * checking it (handover.h), and a thread of this module compares it in constant time,
 * keeping the connection or closing it.  One executor serves one tenant, so the state
 * is the module's own.  A Unix or TLS tenant gets an all-zero secret and no data
 * connection is taken for it.  Everything is freed with the tenant (ds__stripes_fini).
 */
#ifndef DS_EXEC_STRIPES_H
#define DS_EXEC_STRIPES_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

struct ds_tenant;

/* Take data connections for the tenant on connected socket fd (tls: its stream is
 * TLS), when it is a cleartext TCP one: makes the secret and starts the taking thread.
 * A wait for chunks gives up once *stop is set (the executor's SIGTERM).  Returns 0,
 * or DS_E* (no secret or no thread: the tenant copies over fd alone). */
int ds__stripes_start(int fd, int tls, const volatile sig_atomic_t *stop);

/* The secret for the hello's answer (DS_ATTACH_SECRET bytes into out; zeros when no
 * data connection is taken). */
void ds__stripes_secret(unsigned char *out);

/* Data connections taken so far, in the order they came. */
int ds__stripes_count(void);

/* Read the chunks of copy `copy` (size bytes, chunk k from data connection k mod conns,
 * each on a thread of its own) and hand each to put(h, offset, bytes, len) on the
 * calling thread, in order; put may keep nothing of bytes after it returns but a copy
 * queued from an in-band slot (bulk.h).  With put NULL the bytes are dropped.  Every
 * header is checked against the copy.  Returns 0; put's first error (the chunks after it
 * read and dropped); DS_EPROTO (a header out of place, logged) or DS_EIO (a connection
 * failed, or *stop was set): then the session is to end. */
typedef int (*ds_stripes_put)(void *h, uint64_t offset, const char *bytes, size_t len);
int ds__stripes_recv(struct ds_tenant *t, uint32_t copy, uint64_t size, unsigned conns,
                     ds_stripes_put put, void *h);

/* Copy `copy` is held (held.h): read its chunks now, into a buffer of its own charged
 * to the tenant's host memory, so that the tenant is not stalled sending them; the
 * ds__stripes_recv of the first held copy then takes them from there.  Returns 0, or
 * DS_E*: the session is to end. */
int ds__stripes_read_ahead(struct ds_tenant *t, uint32_t copy, uint64_t size, unsigned conns);

/* Send copy `copy`'s chunks, each filled by get(h, offset, buf, len) on the calling
 * thread (0, or DS_E* ending the copy) while the chunks before it are sent, chunk k over
 * data connection k mod conns by a thread of its own.  Returns 0, DS_EIO, or get's
 * error: the session is to end. */
typedef int (*ds_stripes_get)(void *h, uint64_t offset, char *buf, size_t len);
int ds__stripes_send(struct ds_tenant *t, uint32_t copy, uint64_t size, unsigned conns,
                     ds_stripes_get get, void *h);

/* Stop taking data connections and close those taken (the tenant left); logged with
 * DETSHARE_LOG=debug. */
void ds__stripes_fini(void);

#endif
