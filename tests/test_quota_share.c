/* Units of issue 24's quota fixes, no server: which rule applies to a tenant of a Unix
 * user (uid= rules first), a rule's memory limit shared by its tenants' accounts through
 * the control block, and host memory reservations against the per-tenant and total
 * limits. */
#include "account.h"
#include "ds_error.h"
#include "quota.h"
#include "shm.h"

#include <criterion/criterion.h>
#include <string.h>
#include <unistd.h>

static struct ds_shm_quota rule(const char *name, uint64_t memory, long uid)
{
    struct ds_shm_quota q;

    memset(&q, 0, sizeof(q));
    snprintf(q.name, sizeof(q.name), "%s", name);
    q.memory = memory;
    q.uid = uid >= 0 ? (uint32_t)uid : 0;
    q.has_uid = uid >= 0;
    return q;
}

Test(quota_share, a_users_rules_come_first_then_the_best_fit_then_the_first_by_name)
{
    struct ds_shm_quota v[] = { rule("train-*", 1, -1), rule("zeta", 2, 1000),
                                rule("alpha", 3, 1000), rule("infer-*", 4, 1000),
                                rule("other", 5, 2000) };
    unsigned n = sizeof(v) / sizeof(v[0]);

    cr_expect_eq(ds_quota_match_uid(v, n, "infer-1", 1000), &v[3], "the best fit of its own");
    cr_expect_eq(ds_quota_match_uid(v, n, "train-1", 1000), &v[2],
                 "none of its own fits: the first by name, not the name's rule");
    cr_expect_eq(ds_quota_match_uid(v, n, "train-1", 3000), &v[0], "no rule of its own");
    cr_expect_eq(ds_quota_match_uid(v, n, "train-1", -1), &v[0], "a TCP tenant: by name");
    cr_expect_eq(ds_quota_match_uid(v, n, "other", -1), &v[4], "bound rules match by name");
    cr_expect_eq(ds_quota_match_uid(v, n, "nobody", 3000), NULL);
}

Test(quota_share, uid_settings_parse_and_a_bound_rule_is_not_empty)
{
    struct ds_shm_quota q;
    unsigned which = 0;

    memset(&q, 0, sizeof(q));
    cr_assert_null(ds_quota_setting("uid=0", &q, &which));
    cr_expect_eq(which, DS_QUOTA_UID);
    cr_expect(q.has_uid && q.uid == 0, "uid 0 is root's, bound");
    cr_expect(!ds_quota_empty(&q), "a rule bound to a user reserves its name");
    cr_assert_null(ds_quota_setting("uid=none", &q, &which));
    cr_expect(!q.has_uid && ds_quota_empty(&q));
    cr_expect_not_null(ds_quota_setting("uid=alice", &q, &which));
    cr_expect_not_null(ds_quota_setting("uid=-1", &q, &which));
    cr_expect_not_null(ds_quota_setting("uid=4294967295", &q, &which));
}

/* A tenant named `name` in a slot of shm, of Unix user uid, joined with an account. */
static int join(struct ds_shm *shm, struct ds_account *a, const char *name, uid_t uid)
{
    int slot = ds_shm_slot_take(shm);

    cr_assert_geq(slot, 0);
    shm->slots[slot].peer_pid = getpid();
    shm->slots[slot].peer_uid = uid;
    snprintf(shm->slots[slot].tenant, sizeof(shm->slots[slot].tenant), "%s", name);
    ds__account_init(a, shm, slot, shm->slots[slot].tenant);
    ds__account_join(a, 1ull << 30);
    return slot;
}

Test(quota_share, a_rules_limit_is_shared_by_its_tenants_and_follows_new_rules)
{
    struct ds_shm_quota v[] = { rule("q64", 64, -1), rule("mine", 100, 1000) };
    struct ds_account a, b, c;
    uint64_t free_b = 1000, total = 1000;
    struct ds_shm *shm;
    int fd;

    shm = ds_shm_create(1ull << 30, &fd);
    cr_assert_not_null(shm);
    ds_quota_publish(shm, v, 1);
    join(shm, &a, "q64", 1000);
    join(shm, &b, "q64", 1001);
    join(shm, &c, "q64-not", 1000);
    cr_assert_eq(ds__account_take(&a, DS_MEM_DEVICE, 40), 0);
    cr_expect_eq(ds__account_take(&b, DS_MEM_DEVICE, 40), DS_ENOMEM, "40 + 40 > 64");
    cr_assert_eq(ds__account_take(&b, DS_MEM_POOL, 24), 0);
    ds__account_info(&b, 64, &free_b, &total);
    cr_expect_eq(free_b, 0);
    cr_assert_eq(ds__account_take(&c, DS_MEM_DEVICE, 90), 0, "no rule for its name yet");

    /* Bound to uid 1000, a rule takes a's and c's memory whatever their names: the
     * control process rekeys them as it publishes, before they allocate again. */
    ds_quota_publish(shm, v, 2);
    cr_expect_eq(atomic_load(&shm->slots[c.slot].quota_key),
                 atomic_load(&shm->slots[a.slot].quota_key));
    cr_expect_eq(ds__account_take(&c, DS_MEM_DEVICE, 1), DS_ENOMEM, "130 of 100 held");
    ds__account_give(&c, DS_MEM_DEVICE, 90);
    cr_expect_eq(ds__account_take(&c, DS_MEM_DEVICE, 60), 0);
    cr_expect_eq(ds__account_take(&b, DS_MEM_DEVICE, 40), 0, "b alone under q64 now");
    ds_shm_unmap(shm);
    close(fd);
}

Test(quota_share, host_reservations_hold_to_the_tenants_and_the_total_limit)
{
    struct ds_shm *shm;
    int fd, a, b;

    shm = ds_shm_create(1ull << 30, &fd);
    cr_assert_not_null(shm);
    cr_expect_eq(shm->host_limit, DS_SHM_HOST_LIMIT);
    cr_expect_geq(shm->host_total, DS_SHM_HOST_LIMIT);
    shm->host_limit = 100;
    shm->host_total = 150;
    a = ds_shm_slot_take(shm);
    b = ds_shm_slot_take(shm);
    cr_assert_eq(ds_shm_host_reserve(shm, a, 100), 0);
    cr_expect_eq(ds_shm_host_reserve(shm, a, 1), DS_ENOMEM, "past the tenant's limit");
    cr_expect_eq(ds_shm_host_reserve(shm, b, 60), DS_ENOMEM, "past the total");
    cr_assert_eq(ds_shm_host_reserve(shm, b, 50), 0);
    ds_shm_host_release(shm, a, 100);
    cr_expect_eq(ds_shm_host_reserve(shm, b, 50), 0);
    ds_shm_slot_clear(shm, b);
    cr_expect_eq(atomic_load(&shm->slots[b].host_bytes), 0, "a cleared slot holds nothing");
    shm->host_limit = shm->host_total = 0;
    cr_expect_eq(ds_shm_host_reserve(shm, a, 1ull << 40), 0, "0: no limit");
    ds_shm_unmap(shm);
    close(fd);
}
