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

/* Check preface p: its token against every token of t, in time that depends on neither
 * the token given nor which one it matches, then its tenant name against the matching
 * token's prefix.  Returns NULL when accepted, else the reason (static text, safe to
 * send to the tenant). */
const char *ds_tokens_check(const struct ds_tokens *t, const struct ds_preface *p);

#endif
