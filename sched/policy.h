/*
 * The server's side of scheduling policies: the built-in ones, finding one by name, and
 * loading one from a shared object.  What a policy itself sees is the ABI in
 * include/detshare/policy.h.  A policy is chosen at start (`detshare-server --policy
 * NAME`) and can be switched at run time (`detshare-ctl policy NAME`).
 *
 * A policy in a shared object is named by its path (anything with a '/'): at start, any
 * path the command line gives; at run time, through the admin API, only files in the
 * directory --policy-dir names, which nobody but root and the server's user can change.
 * What a policy sees of running work comes from the predictor (sched/predict.h).
 */
#ifndef DS_SCHED_POLICY_H
#define DS_SCHED_POLICY_H

#include <detshare/policy.h>

/* The policy called `name`: a built-in one, or one loaded before (a name with a '/' is
 * the path it was loaded from).  NULL when there is none.  Never loads anything. */
const struct ds_policy *ds_policy_find(const char *name);

/* Load the policy in the shared object at `path` (once; later calls return it again),
 * whoever can change that file: for the operator's own command line only.  NULL, logged,
 * when it cannot be loaded, exports no detshare_policy, speaks no ABI from DS_POLICY_ABI
 * down to DS_POLICY_ABI_OLDEST, lacks a hook every policy needs, or takes a built-in
 * policy's name. */
const struct ds_policy *ds_policy_load(const char *path);

/* Let ds_policy_admit load from directory `dir` (--policy-dir): it and every directory
 * above it must be owned by root or this process's user, and it must not be writable by
 * group or others (those above may be, when sticky).  Returns 0, or DS_EINVAL (it does not
 * resolve) or DS_EPERM (not safe) with why. */
int ds_policy_set_dir(const char *dir, char *why, size_t len);

/* For the admin API: the policy loaded before from `path`, or the one in the shared object
 * at `path` when, resolved, it is a regular file inside the ds_policy_set_dir directory
 * that nobody but root and this process's user can change, nor any directory leading to
 * it.  All of that is checked before the file is opened as a library (its constructors run
 * then).  NULL, logged and said in why, when there is no such directory or the file is
 * refused or cannot be loaded (as ds_policy_load). */
const struct ds_policy *ds_policy_admit(const char *path, char *why, size_t len);

/* The built-in policies, the one list of them: X(n) for each ds_policy_<n>, defined in
 * its own source (baseline.c has the first three), in the order --help shows them. */
#define DS_POLICY_BUILTINS(X) X(shared) X(static) X(temporal) X(slo_aware) X(tpot_first)

#define DS_POLICY_DECLARE(n) extern const struct ds_policy ds_policy_##n;
DS_POLICY_BUILTINS(DS_POLICY_DECLARE)
#undef DS_POLICY_DECLARE

/* Every built-in policy, NULL-terminated. */
extern const struct ds_policy *const ds_policies[];

/* The groups first .. first+count-1 as a mask (count 64 or more: every group). */
uint64_t ds_groups_range(unsigned first, unsigned count);

#endif
