/*
 * Record marking (RFC 5531, section 11) checked as it passes through a record stream's
 * reader.  TI-RPC's xdrrec takes any fragment length, and the decoders rpcgen generates
 * read 4-byte words straight out of xdrrec's buffer (XDR_INLINE): a fragment whose
 * length is not a whole number of XDR units leaves every later word misaligned.  XDR
 * data is made of 4-byte units and xdrrec's own writers (client and executor alike)
 * only ever cut fragments between them, so such a fragment can only come from a peer
 * that breaks the protocol.
 */
#ifndef DS_RECMARK_H
#define DS_RECMARK_H

#include <stddef.h>
#include <stdint.h>

/* Where the stream is: zeroed at its start, which is a fragment header. */
struct ds_recmark {
    uint32_t left;  /* bytes of the current fragment still to come */
    unsigned have;  /* bytes of the next fragment header seen so far */
    uint32_t mark;  /* ...and their value */
};

/* Follow the n bytes at p, just read from the stream.  Returns 0, or DS_EPROTO when a
 * fragment header gives a length that is not a multiple of 4. */
int ds_recmark_scan(struct ds_recmark *m, const void *p, size_t n);

#endif
