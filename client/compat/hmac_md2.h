/*
 * HMAC-MD2 (RFC 1319 for MD2, RFC 2104 for HMAC with MD2's 16-byte block).  cudart
 * checks that the driver it runs on answers an integrity challenge with this MAC; see
 * docs/export-tables.md, INTEGRITY_CHECK.  Not for anything that needs security.
 */
#ifndef DS_HMAC_MD2_H
#define DS_HMAC_MD2_H

#include <stddef.h>

/* The MD2 digest of len bytes at msg into out[16]. */
void ds_md2(const void *msg, size_t len, unsigned char out[16]);

/* HMAC-MD2 of len bytes at msg under the key (any length) into out[16]. */
void ds_hmac_md2(const void *key, size_t key_len, const void *msg, size_t len,
                 unsigned char out[16]);

#endif
