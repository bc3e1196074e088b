/*
 * A tenant's latency SLO as people write it and as detshare keeps it: people write
 * milliseconds with up to three decimals ("4.05", "0.5"), detshare keeps whole
 * microseconds, from the command line and the Kubernetes annotation through the admin
 * API and the control block to the policies.  Both ends use these, so "4.05" means the
 * same 4050 us to detshare-ctl and to the device plugin.
 */
#ifndef DS_SLO_H
#define DS_SLO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The longest SLO anyone may set: an hour, in us (it fits 32 bits). */
#define DS_SLO_MAX_US 3600000000u

/* Parse `ms`, milliseconds written as digits with an optional '.' and one to three more
 * digits, into *us.  Returns 0, or DS_EINVAL (and *us untouched) for anything else: a
 * sign, spaces, an exponent, finer than a microsecond, zero or over DS_SLO_MAX_US. */
int ds_slo_parse(const char *ms, uint32_t *us);

/* Writes `us` as milliseconds with only the decimals it needs ("4.05", "0.5", "40")
 * into buf, truncated to len bytes. */
void ds_slo_format(uint32_t us, char *buf, size_t len);

/* `us` in whole milliseconds, rounded up: what a reader of milliseconds is told, so
 * that a sub-millisecond SLO never reads as 0 (none). */
uint32_t ds_slo_ms_ceil(uint32_t us);

#ifdef __cplusplus
}
#endif

#endif
