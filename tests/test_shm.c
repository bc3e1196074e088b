#include "ds_error.h"
#include "shm.h"

#include <criterion/criterion.h>
#include <sys/wait.h>
#include <unistd.h>

Test(shm, reservations_never_overcommit)
{
    struct ds_shm *shm = ds_shm_map(1000);
    int a = ds_shm_slot_take(shm), b = ds_shm_slot_take(shm);

    cr_assert(a >= 0 && b >= 0 && a != b);
    cr_assert_eq(ds_shm_sim_reserve(shm, a, 600), 0);
    cr_assert_eq(ds_shm_sim_reserve(shm, b, 500), DS_ENOMEM);
    cr_assert_eq(ds_shm_sim_reserve(shm, b, 400), 0);
    cr_assert_eq(ds_shm_sim_used(shm), 1000);
    ds_shm_slot_clear(shm, a);
    cr_assert_eq(ds_shm_sim_used(shm), 400, "a cleared slot gives back all it held");
    cr_assert_eq(ds_shm_slot_take(shm), a, "and can be taken again");
    ds_shm_unmap(shm);
}

Test(shm, shared_across_fork)
{
    struct ds_shm *shm = ds_shm_map(1 << 20);
    int slot = ds_shm_slot_take(shm), status;
    pid_t pid = fork();

    if (pid == 0)
        _exit(ds_shm_sim_reserve(shm, slot, 4096) == 0 ? 0 : 1);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert_eq(WEXITSTATUS(status), 0);
    cr_assert_eq(ds_shm_sim_used(shm), 4096);
    ds_shm_unmap(shm);
}

Test(shm, slots_run_out_cleanly)
{
    struct ds_shm *shm = ds_shm_map(1);

    for (int i = 0; i < DS_SHM_SLOTS; i++)
        cr_assert_eq(ds_shm_slot_take(shm), i);
    cr_assert_eq(ds_shm_slot_take(shm), -1);
    ds_shm_unmap(shm);
}
