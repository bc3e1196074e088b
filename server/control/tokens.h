/*
 * The tokens a server accepts from TCP tenants (--token-file), read once at start, and
 * the check of a tenant's preface (ds_preface.h) against them.  The control process
 * checks both the token and the tenant name the preface gives before the tenant costs
 * an executor; the executor then holds the tenant's hello to that name (shm.h,
 * `granted`), so a name prefix cannot be evaded by naming oneself differently later.
 */
#ifndef DS_TOKENS_H
#define DS_TOKENS_H

#include "ds_preface.h"

struct ds_tokens;

/* Read the token file at `path` (format: ds_token.h).  Returns the set, or NULL after
 * logging why: the file cannot be read, a line is malformed (its number is given), or
 * it holds no token.  Warns when the file's group or others may read it.  Free with
 * ds_tokens_free. */
struct ds_tokens *ds_tokens_load(const char *path);

void ds_tokens_free(struct ds_tokens *t);

/* An empty set, for the tokens the admin API adds at run time (docs/admin.md, "token"):
 * a device plugin mints one per allocation and revokes it when the allocation ends.  They
 * live beside the file's, so SIGHUP leaves them alone.  NULL when out of memory. */
struct ds_tokens *ds_tokens_new(void);

/* How many tokens t holds (0 for NULL). */
size_t ds_tokens_count(const struct ds_tokens *t);

/* Add `token` (1 to DS_TOKEN_MAX bytes) for tenant names beginning with `prefix` ("" for
 * any), or change the prefix of that token when t has it already.  With `as` not empty,
 * the tenants it admits are named `as` instead, followed by what their own name has
 * after the prefix: the device plugin names a pod's tenants after the pod (NS/POD) once
 * it knows it, though their DETSHARE_TENANT was fixed before.  Returns 0, DS_EINVAL for a
 * token, prefix or name out of bounds (a tenant name's characters), DS_EBUSY when t holds
 * DS_TOKENS_MINTED_MAX, DS_ENOMEM. */
#define DS_TOKENS_MINTED_MAX 4096
int ds_tokens_add(struct ds_tokens *t, const char *token, const char *prefix, const char *as);

/* Remove `token` from t.  Returns 0, or DS_EHANDLE when t does not hold it. */
int ds_tokens_revoke(struct ds_tokens *t, const char *token);

/* Check preface p: its token against every token of t and of minted (either may be
 * NULL), in time that depends on neither the token given nor which one it matches, then
 * its tenant name against the matching token's prefix.  Returns NULL when accepted, with
 * `as` (DS_NAME_MAX + 1 bytes) the name the token gives the tenant ("" for its own: see
 * ds_tokens_add), else the reason (static text, safe to send to the tenant). */
const char *ds_tokens_check(const struct ds_tokens *t, const struct ds_tokens *minted,
                            const struct ds_preface *p, char *as);

#endif
