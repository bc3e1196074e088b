/* What CONTEXT_IDENTITY slots 51 and 39 (docs/export-tables.md, 4.9) answer for the
 * streams of a program, as relations between the numbers rather than the numbers
 * themselves: run through detshare by test_export and natively by native_identity, so
 * that the two can be compared on a GPU. */
#ifndef DS_IDENTITY_CASES_H
#define DS_IDENTITY_CASES_H

#include <stddef.h>

/* Ask slot 51 then slot 39 for the legacy stream (as 0 and as CU_STREAM_LEGACY), the
 * per-thread stream, two new streams, a second context's legacy stream and a value that
 * is no stream, writing "case answer\n" lines into out (len bytes, NUL terminated).
 * Needs the primary context current.  Returns 0, or -1 when setting up failed (out then
 * says what). */
int ds_identity_cases(char *out, size_t len);

#endif
