/*
 * What the control process makes of a tenant's leaving after a fault (docs/reliability.md,
 * "A kernel's fault"): whose fault it was, in the log and the fault domains' counts, the
 * quarantine of a culprit, probation for the suspects of a fault nobody attributed, and,
 * when a context was lost in an MPS domain, the domain's recovery (recovery.h).
 */
#ifndef DS_CONTROL_FAULTS_H
#define DS_CONTROL_FAULTS_H

#include "shm.h"

#include <stdint.h>

struct control;

/* The tenant called `name` in slot s left with exit status `status` (its slot not yet
 * cleared): its fault told and counted, or, having run clean in a domain of its own, its
 * probation ended. */
void ds__faults_tell(struct control *c, const struct ds_shm_slot *s, const char *name,
                     int status);

/* An executor of domain isolation (and group, for DS_ISO_GROUP) left with its context
 * lost, its slot cleared: the other executors look at theirs, and an MPS domain begins
 * its recovery. */
void ds__faults_lost(struct control *c, uint32_t isolation, unsigned group);

#endif
