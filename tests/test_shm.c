#define _GNU_SOURCE
#include "ds_error.h"
#include "shm.h"

#include <criterion/criterion.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

Test(shm, reservations_never_overcommit)
{
    int fd;
    struct ds_shm *shm = ds_shm_create(1000, &fd);
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
    close(fd);
}

Test(shm, shared_across_fork)
{
    int fd;
    struct ds_shm *shm = ds_shm_create(1 << 20, &fd);
    int slot = ds_shm_slot_take(shm), status;
    pid_t pid = fork();

    if (pid == 0)
        _exit(ds_shm_sim_reserve(shm, slot, 4096) == 0 ? 0 : 1);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert_eq(WEXITSTATUS(status), 0);
    cr_assert_eq(ds_shm_sim_used(shm), 4096);
    ds_shm_unmap(shm);
    close(fd);
}

/* A slot's next tenant starts its metrics from zero. */
Test(shm, a_cleared_slot_forgets_its_call_counts)
{
    int fd;
    struct ds_shm *shm = ds_shm_create(1, &fd);
    int slot = ds_shm_slot_take(shm);

    atomic_store(&shm->slots[slot].calls[DS_LAUNCH], 7);
    atomic_store(&shm->slots[slot].errors[DS_PROC_MAX], 2);
    atomic_store(&shm->slots[slot].launches, 7);
    ds_shm_slot_clear(shm, slot);
    cr_assert_eq(ds_shm_slot_take(shm), slot);
    cr_assert_eq(atomic_load(&shm->slots[slot].calls[DS_LAUNCH]), 0);
    cr_assert_eq(atomic_load(&shm->slots[slot].errors[DS_PROC_MAX]), 0);
    cr_assert_eq(atomic_load(&shm->slots[slot].launches), 0);
    ds_shm_unmap(shm);
    close(fd);
}

Test(shm, slots_run_out_cleanly)
{
    int fd;
    struct ds_shm *shm = ds_shm_create(1, &fd);

    for (int i = 0; i < DS_SHM_SLOTS; i++)
        cr_assert_eq(ds_shm_slot_take(shm), i);
    cr_assert_eq(ds_shm_slot_take(shm), -1);
    ds_shm_unmap(shm);
    close(fd);
}

Test(shm, another_process_attaches_by_descriptor)
{
    int fd, slot, status;
    struct ds_shm *shm = ds_shm_create(1 << 20, &fd);
    pid_t pid;

    shm->gpu = 3;
    slot = ds_shm_slot_take(shm);
    pid = fork();
    if (pid == 0) {
        struct ds_shm *mine = ds_shm_attach(fd);

        _exit(mine != NULL && mine->gpu == 3 && ds_shm_sim_reserve(mine, slot, 100) == 0 ? 0
                                                                                       : 1);
    }
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert_eq(WEXITSTATUS(status), 0);
    cr_assert_eq(ds_shm_sim_used(shm), 100);
    ds_shm_unmap(shm);
    close(fd);
}

Test(shm, a_descriptor_that_is_not_a_control_block_is_refused)
{
    int fd;
    struct ds_shm *shm = ds_shm_create(1, &fd);
    int other = memfd_create("other", 0);

    cr_assert_null(ds_shm_attach(other), "wrong size");
    shm->version = DS_SHM_VERSION + 1;
    cr_assert_null(ds_shm_attach(fd), "another version");
    ds_shm_unmap(shm);
    close(fd);
    close(other);
}
