/*
 * The server's config file (--config PATH), read at start and again on SIGHUP.  A line
 * holds one directive; '#' starts a comment; blank lines are ignored.  The directives:
 *     quota NAME memory=SIZE sm-share=PCT
 * with NAME a tenant name or a prefix pattern ending in '*', and one or both settings
 * (server/quota.h says what they accept and which rule applies to a tenant), and
 *     policy-dir DIR
 * at most once: the directory detshare-ctl may load policies from (--policy-dir, which
 * takes precedence), read at start only.
 * docs/admin.md describes the format for operators.
 */
#ifndef DS_CONFIG_H
#define DS_CONFIG_H

#include "shm.h"

#include <stddef.h>

/* The quota rules the file at `path` gives, into v (room for DS_SHM_QUOTAS), their
 * number in *n.  Returns 0, or -1 after logging every bad line as "PATH:LINE: why" (or
 * why the file cannot be read); v and *n are then unspecified. */
int ds_config_load(const char *path, struct ds_shm_quota *v, unsigned *n);

/* ds_config_load, and the file's policy-dir into dir (dirlen bytes; "" when it has none),
 * for the start. */
int ds_config_load_at_start(const char *path, struct ds_shm_quota *v, unsigned *n, char *dir,
                            size_t dirlen);

#endif
