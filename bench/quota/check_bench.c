/*
 * The cost of the memory-quota check on the executor's allocation path
 * (server/exec/account.h): ds__account_take then ds__account_give of one allocation,
 * timed in a loop, with no rule for the tenant and with one that limits it (the check
 * then compares, and reads the rules again only when they change).  Also the cost when
 * the rules change before every allocation, which no real workload comes near.
 */
#include "account.h"
#include "ds_clock.h"
#include "quota.h"
#include "shm.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define ROUNDS 5
#define ITERS 2000000

/* Best round, in ns per take+give pair. */
static double time_pairs(struct ds_account *a, struct ds_shm *shm, const struct ds_shm_quota *q,
                         unsigned nq, int republish)
{
    double best = 1e30;

    for (int r = 0; r < ROUNDS; r++) {
        uint64_t t0 = ds_now_ns();

        for (int i = 0; i < ITERS; i++) {
            if (republish)
                ds_quota_publish(shm, q, nq);
            if (ds__account_take(a, DS_MEM_DEVICE, 4096) != 0)
                return -1;
            ds__account_give(a, DS_MEM_DEVICE, 4096);
        }
        double ns = (double)(ds_now_ns() - t0) / ITERS;
        if (ns < best)
            best = ns;
    }
    return best;
}

int main(void)
{
    struct ds_shm_quota rules[DS_SHM_QUOTAS];
    struct ds_account a;
    struct ds_shm *shm;
    double none, limited, churn;
    int fd;

    if ((shm = ds_shm_create(80ull << 30, &fd)) == NULL) {
        perror("ds_shm_create");
        return 1;
    }
    /* A full table, the tenant's rule last: the lookup's worst case. */
    memset(rules, 0, sizeof(rules));
    for (int i = 0; i < DS_SHM_QUOTAS; i++) {
        snprintf(rules[i].name, sizeof(rules[i].name), "team-%02d-*", i);
        rules[i].memory = 1ull << 30;
    }
    snprintf(rules[DS_SHM_QUOTAS - 1].name, sizeof(rules[0].name), "bench-*");
    rules[DS_SHM_QUOTAS - 1].memory = 64ull << 30;

    ds__account_init(&a, shm, 0, "bench-tenant");
    ds__account_join(&a, 80ull << 30);
    none = time_pairs(&a, shm, rules, 0, 0);
    ds_quota_publish(shm, rules, DS_SHM_QUOTAS);
    limited = time_pairs(&a, shm, rules, DS_SHM_QUOTAS, 0);
    churn = time_pairs(&a, shm, rules, DS_SHM_QUOTAS, 1);
    if (none < 0 || limited < 0 || churn < 0) {
        fprintf(stderr, "check_bench: an allocation was refused\n");
        return 1;
    }
    printf("quota check (take + give of one allocation), best of %d rounds of %d:\n", ROUNDS,
           ITERS);
    printf("  no quota for the tenant:            %6.1f ns\n", none);
    printf("  quota in force (%d rules):          %6.1f ns\n", DS_SHM_QUOTAS, limited);
    printf("  rules republished before each one:  %6.1f ns\n", churn);
    ds_shm_unmap(shm);
    close(fd);
    return 0;
}
