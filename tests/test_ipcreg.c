/* The CUDA IPC registry on its own: what a handle opens, and everything it must not. */
#include "ds_error.h"
#include "ipcreg.h"
#include "shm.h"

#include <criterion/criterion.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static struct ds_shm *shm;
static int shm_fd;

static void setup(void)
{
    shm = ds_shm_create(1 << 20, &shm_fd);
    cr_assert_not_null(shm);
}

static void teardown(void)
{
    ds_shm_unmap(shm);
    close(shm_fd);
}

TestSuite(ipcreg, .init = setup, .fini = teardown);

static void blob_of(unsigned char blob[DS_SHM_IPC_BLOB], unsigned char seed)
{
    for (int i = 0; i < DS_SHM_IPC_BLOB; i++)
        blob[i] = (unsigned char)(seed + i);
}

Test(ipcreg, a_handle_opens_its_export_for_its_user)
{
    unsigned char blob[DS_SHM_IPC_BLOB], h[DS_IPCREG_HANDLE];
    struct ds_ipcreg_found f;
    int slot = ds_shm_slot_take(shm), idx;

    blob_of(blob, 7);
    idx = ds_ipcreg_publish(shm, slot, 1000, DS_IPCREG_MEM, 12345, blob, h);
    cr_assert_geq(idx, 0);
    cr_assert_eq(ds_ipcreg_lookup(shm, h, DS_IPCREG_MEM, 1000, &f), 0);
    cr_assert_eq(f.slot, slot);
    cr_assert_eq(f.index, idx);
    cr_assert_eq(f.size, 12345);
    cr_assert_arr_eq(f.blob, blob, sizeof(blob));
    cr_assert_eq(ds_ipcreg_lookup(shm, h, DS_IPCREG_MEM, 1001, &f), DS_EPERM,
                 "another user's tenant opens nothing");
    cr_assert_eq(ds_ipcreg_lookup(shm, h, DS_IPCREG_EVENT, 1000, &f), DS_EHANDLE,
                 "a memory handle is no event handle");
}

Test(ipcreg, any_byte_changed_or_made_up_opens_nothing)
{
    unsigned char blob[DS_SHM_IPC_BLOB], h[DS_IPCREG_HANDLE], forged[DS_IPCREG_HANDLE];
    struct ds_ipcreg_found f;
    int slot = ds_shm_slot_take(shm);

    blob_of(blob, 1);
    /* Exports in every entry a changed slot or index byte could land on. */
    for (int i = 0; i < 4; i++)
        cr_assert_geq(ds_ipcreg_publish(shm, slot, 0, DS_IPCREG_EVENT, 0, blob, h), 0);
    for (int i = 0; i < DS_IPCREG_HANDLE; i++) {
        for (int bit = 0; bit < 8; bit++) {
            memcpy(forged, h, sizeof(h));
            forged[i] ^= (unsigned char)(1u << bit);
            cr_assert_eq(ds_ipcreg_lookup(shm, forged, DS_IPCREG_EVENT, 0, &f), DS_EHANDLE,
                         "byte %d, bit %d changed", i, bit);
        }
    }
    memset(forged, 0, sizeof(forged));
    cr_assert_eq(ds_ipcreg_lookup(shm, forged, DS_IPCREG_EVENT, 0, &f), DS_EHANDLE);
    memset(forged, 0xff, sizeof(forged));
    cr_assert_eq(ds_ipcreg_lookup(shm, forged, DS_IPCREG_EVENT, 0, &f), DS_EHANDLE);
    cr_assert_eq(ds_ipcreg_lookup(shm, h, DS_IPCREG_EVENT, 0, &f), 0, "the real one still opens");
}

Test(ipcreg, a_withdrawn_export_stays_closed_when_its_entry_is_reused)
{
    unsigned char blob[DS_SHM_IPC_BLOB], old[DS_IPCREG_HANDLE], now[DS_IPCREG_HANDLE];
    struct ds_ipcreg_found f;
    int slot = ds_shm_slot_take(shm), idx;

    blob_of(blob, 3);
    idx = ds_ipcreg_publish(shm, slot, 5, DS_IPCREG_MEM, 4096, blob, old);
    ds_ipcreg_withdraw(shm, slot, idx);
    cr_assert_eq(ds_ipcreg_lookup(shm, old, DS_IPCREG_MEM, 5, &f), DS_EHANDLE);
    cr_assert_eq(ds_ipcreg_publish(shm, slot, 5, DS_IPCREG_MEM, 4096, blob, now), idx,
                 "the entry is reused");
    cr_assert_eq(ds_ipcreg_lookup(shm, old, DS_IPCREG_MEM, 5, &f), DS_EHANDLE,
                 "with a new key: the old handle is stale");
    cr_assert_eq(ds_ipcreg_lookup(shm, now, DS_IPCREG_MEM, 5, &f), 0);
}

Test(ipcreg, a_full_table_refuses_only_its_own_tenant)
{
    unsigned char blob[DS_SHM_IPC_BLOB], h[DS_IPCREG_HANDLE];
    struct ds_ipcreg_found f;
    int a = ds_shm_slot_take(shm), b = ds_shm_slot_take(shm);

    blob_of(blob, 9);
    for (int i = 0; i < DS_SHM_IPC_MAX; i++)
        cr_assert_eq(ds_ipcreg_publish(shm, a, 0, DS_IPCREG_MEM, 1, blob, h), i);
    cr_assert_eq(ds_ipcreg_publish(shm, a, 0, DS_IPCREG_MEM, 1, blob, h), DS_ENOMEM);
    cr_assert_geq(ds_ipcreg_publish(shm, b, 0, DS_IPCREG_MEM, 1, blob, h), 0,
                  "another tenant's table is its own");
    ds_ipcreg_withdraw(shm, a, 17);
    cr_assert_eq(ds_ipcreg_publish(shm, a, 0, DS_IPCREG_MEM, 1, blob, h), 17);
    cr_assert_eq(ds_ipcreg_lookup(shm, h, DS_IPCREG_MEM, 0, &f), 0);
}

Test(ipcreg, a_cleared_slot_forgets_its_exports_and_only_them)
{
    unsigned char blob[DS_SHM_IPC_BLOB], ha[DS_IPCREG_HANDLE], hb[DS_IPCREG_HANDLE];
    struct ds_ipcreg_found f;
    int a = ds_shm_slot_take(shm), b = ds_shm_slot_take(shm);

    blob_of(blob, 4);
    cr_assert_geq(ds_ipcreg_publish(shm, a, 0, DS_IPCREG_MEM, 1, blob, ha), 0);
    cr_assert_geq(ds_ipcreg_publish(shm, b, 0, DS_IPCREG_MEM, 1, blob, hb), 0);
    ds_shm_slot_clear(shm, a);
    cr_assert_eq(ds_ipcreg_lookup(shm, ha, DS_IPCREG_MEM, 0, &f), DS_EHANDLE);
    cr_assert_eq(atomic_load(&shm->slots[a].ipc_used), 0);
    cr_assert_eq(ds_ipcreg_lookup(shm, hb, DS_IPCREG_MEM, 0, &f), 0);
}

/* The executor that opens is another process: it sees the export through the block. */
Test(ipcreg, another_process_finds_the_export)
{
    unsigned char blob[DS_SHM_IPC_BLOB], h[DS_IPCREG_HANDLE];
    int slot = ds_shm_slot_take(shm), status;
    pid_t pid;

    blob_of(blob, 2);
    cr_assert_geq(ds_ipcreg_publish(shm, slot, 42, DS_IPCREG_EVENT, 0, blob, h), 0);
    pid = fork();
    if (pid == 0) {
        struct ds_ipcreg_found f;

        _exit(ds_ipcreg_lookup(shm, h, DS_IPCREG_EVENT, 42, &f) == 0 &&
                      memcmp(f.blob, blob, sizeof(blob)) == 0
                  ? 0
                  : 1);
    }
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}
