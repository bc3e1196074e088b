/*
 * JIT options (CUjit_option) as detshare carries them: only those whose value is a
 * number travel to the executor; the rest hold host pointers of the tenant's (logs, the
 * wall time, symbol tables), which the client fills itself or refuses.
 */
#ifndef DS_JIT_H
#define DS_JIT_H

/* 1 when JIT option o takes a number as its value, else 0. */
int ds_jit_scalar_option(int o);

#endif
