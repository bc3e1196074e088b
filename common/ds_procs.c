#include "ds_procs.h"

#include <stddef.h>

#define NAME_S(n, P, A, R) [P] = #n,
#define NAME_B(n, P, A) [P] = #n,
static const char *const names[DS_PROC_MAX + 1] = { DS_PROCS(NAME_S, NAME_B) };

#define KIND_S(n, P, A, R) [P] = 1,
#define KIND_B(n, P, A) [P] = 2,
static const unsigned char kinds[DS_PROC_MAX + 1] = { DS_PROCS(KIND_S, KIND_B) };

const char *ds_proc_name(unsigned long proc)
{
    return proc <= DS_PROC_MAX ? names[proc] : NULL;
}

int ds_proc_batched(unsigned long proc)
{
    if (proc > DS_PROC_MAX || kinds[proc] == 0)
        return -1;
    return kinds[proc] == 2;
}
