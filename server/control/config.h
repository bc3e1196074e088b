/*
 * The server's config file (--config PATH), read at start and again on SIGHUP.  A line
 * holds one directive; '#' starts a comment; blank lines are ignored.  The one directive
 * so far:
 *     quota NAME memory=SIZE sm-share=PCT
 * with NAME a tenant name or a prefix pattern ending in '*', and one or both settings
 * (server/quota.h says what they accept and which rule applies to a tenant).
 * docs/admin.md describes the format for operators.
 */
#ifndef DS_CONFIG_H
#define DS_CONFIG_H

#include "shm.h"

/* The quota rules the file at `path` gives, into v (room for DS_SHM_QUOTAS), their
 * number in *n.  Returns 0, or -1 after logging every bad line as "PATH:LINE: why" (or
 * why the file cannot be read); v and *n are then unspecified. */
int ds_config_load(const char *path, struct ds_shm_quota *v, unsigned *n);

#endif
