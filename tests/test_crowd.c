/* Four tenants at once under each baseline (issue 8 tests two; policies must hold with
 * more): static gives each a quarter of the SM groups, disjoint and covering the device;
 * shared leaves everyone on every SM; temporal lets one tenant's kernels run at a time
 * and gives each a turn; a run-time switch between them moves live tenants without losing
 * or reordering work (each runs rounds of copies behind kernels whose last value shows a
 * copy lost or run early), and a tenant that leaves gives its groups back to the others. */
#include "ds_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CROWD 4

static struct ds_test_server srv;

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

struct member {
    char name[16];
    double ms;             /* how long it keeps launching */
    double min_longest_ms; /* the longest wait for a link it must have seen (0: any) */
};

/* Work whose order shows: each round writes a new value into x[0] and copies it link by
 * link to x[10], a kernel before each copy (where a tenant moves).  A copy lost, or run
 * before the one before it, leaves an older round's value at the end.  The sim runs no
 * kernel code, but it does copy. */
struct chain {
    CUfunction fill;
    CUdeviceptr x, scratch;
    int rounds;
    int broken; /* rounds that ended with the wrong value */
};

static int chain_open(struct chain *c)
{
    *c = (struct chain){ 0 };
    if (cuModuleGetFunction(&c->fill, ds_test_module(DS_KERNEL_DIR "/launch.fatbin"), "fill") !=
            CUDA_SUCCESS ||
        cuMemAlloc(&c->x, 11 * sizeof(int)) != CUDA_SUCCESS ||
        cuMemAlloc(&c->scratch, 64) != CUDA_SUCCESS)
        return -1;
    return cuMemsetD32(c->x, 0, 11) == CUDA_SUCCESS ? 0 : -1;
}

/* One round: ten kernels and ten copies, a synchronisation, and the check. */
static int chain_ten(struct chain *c)
{
    int v = 1, n = 0, got = -1;
    void *params[] = { &c->scratch, &v, &n };

    c->rounds++;
    if (cuMemsetD32Async(c->x, (unsigned)c->rounds, 1, NULL) != CUDA_SUCCESS)
        return -1;
    for (int i = 1; i <= 10; i++)
        if (cuLaunchKernel(c->fill, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL) != CUDA_SUCCESS ||
            cuMemcpyDtoDAsync(c->x + (unsigned)i * sizeof(int), c->x + (unsigned)(i - 1) * sizeof(int),
                              sizeof(int), NULL) != CUDA_SUCCESS)
            return -1;
    if (cuMemcpyDtoH(&got, c->x + 10 * sizeof(int), sizeof(got)) != CUDA_SUCCESS)
        return -1;
    c->broken += got != c->rounds;
    return 0;
}

/* 1 when no round lost or reordered a link. */
static int chain_intact(struct chain *c)
{
    return c->rounds > 0 && c->broken == 0;
}

/* A member of the crowd: links for m->ms; exit codes say what went wrong. */
static int member(void *arg)
{
    const struct member *m = arg;
    struct chain c;
    double end, last, longest = 0;

    setenv("DETSHARE_TENANT", m->name, 1);
    if (ds_test_connect() != CUDA_SUCCESS || chain_open(&c) != 0)
        return 1;
    end = now_ms() + m->ms;
    last = now_ms();
    while (now_ms() < end) {
        if (chain_ten(&c) != 0)
            return 2;
        longest = now_ms() - last > longest ? now_ms() - last : longest;
        last = now_ms();
    }
    if (!chain_intact(&c))
        return 3;
    return longest >= m->min_longest_ms ? 0 : 4;
}

static struct member members[CROWD];
static struct ds_test_peer peers[CROWD - 1];

/* Three members forked, then this process connects as the fourth ("crowd-0"). */
static void crowd(const char *args, double ms, double min_longest_ms)
{
    ds_test_server_start(&srv, 0, args);
    for (int i = 0; i < CROWD; i++) {
        snprintf(members[i].name, sizeof(members[i].name), "crowd-%d", i);
        members[i].ms = ms;
        members[i].min_longest_ms = min_longest_ms;
    }
    for (int i = 1; i < CROWD; i++)
        ds_test_peer_fork(&peers[i - 1], member, &members[i]);
    setenv("DETSHARE_TENANT", members[0].name, 1);
    ds_test_ctx();
    for (int i = 1; i < CROWD; i++)
        ds_test_peer_go(&peers[i - 1]);
}

/* The groups list `key` ("sm_groups": where it runs now; "decided_sm_groups") of tenant
 * `name` in `status`, as a mask; -1 when it is not shown. */
static long long groups_in(const char *status, const char *name, const char *key)
{
    char obj[4096], k[64];
    const char *p;
    long long mask = 0;

    if (strstr(status, name) == NULL)
        return -1;
    ds_test_tenant_json(status, name, obj, sizeof(obj));
    snprintf(k, sizeof(k), ",\"%s\":[", key);
    if ((p = strstr(obj, k)) == NULL)
        return -1;
    for (p += strlen(k); *p != ']' && *p != '\0';) {
        char *next;
        long g = strtol(p, &next, 10);

        if (next == p)
            return -1;
        mask |= 1ll << g;
        p = *next == ',' ? next + 1 : next;
    }
    return mask;
}

static long long groups_of(const char *status, const char *name)
{
    return groups_in(status, name, "sm_groups");
}

static int ctl(const char *args)
{
    char out[4096];

    return ds_test_ctl(&srv, args, out, sizeof(out));
}

/* Run rounds of this tenant's chain until `placed` says yes to the status, or 5 s;
 * returns 1 when it did. */
static int chain_until(struct chain *c, int (*placed)(const char *status))
{
    char out[16384];

    for (double end = now_ms() + 5000; now_ms() < end;) {
        cr_assert_eq(chain_ten(c), 0);
        cr_assert_eq(ds_test_ctl(&srv, "status --json", out, sizeof(out)), 0, "%s", out);
        if (placed(out))
            return 1;
        usleep(5000);
    }
    fprintf(stderr, "last status: %s\n", out);
    return 0;
}

/* Every member runs on `each` groups of the sim's 16, disjoint from the others', all of
 * them used (each * CROWD == 16). */
static int disjoint(const char *status, int each)
{
    long long all = 0;

    for (int i = 0; i < CROWD; i++) {
        long long g = groups_of(status, members[i].name);

        if (g <= 0 || __builtin_popcountll((unsigned long long)g) != each || (all & g) != 0)
            return 0;
        all |= g;
    }
    return all == 0xffff;
}

static int quarters(const char *status)
{
    return disjoint(status, 4);
}

static int everywhere(const char *status)
{
    for (int i = 0; i < CROWD; i++)
        if (groups_of(status, members[i].name) != 0xffff)
            return 0;
    return 1;
}

static void leave_all(void)
{
    for (int i = 1; i < CROWD; i++)
        ds_test_peer_leave(&peers[i - 1]);
}

Test(crowd, static_quarters_shared_whole_and_switches_move_live_tenants, .timeout = 120)
{
    struct chain c;

    DS_SIM_ONLY(); /* the group layout of the sim's device */
    crowd("--policy static", 8000, 0);
    cr_assert_eq(chain_open(&c), 0);
    cr_expect(chain_until(&c, quarters), "static: four disjoint quarters");
    cr_assert_eq(ctl("policy shared"), 0);
    cr_expect(chain_until(&c, everywhere), "shared: everyone on every group");
    cr_assert_eq(ctl("policy static"), 0);
    cr_expect(chain_until(&c, quarters), "static again");
    cr_expect(chain_intact(&c), "%d of this tenant's %d rounds broke", c.broken, c.rounds);
    for (int i = 1; i < CROWD; i++)
        ds_test_peer_join(&peers[i - 1]); /* each one's chain intact too */
    leave_all();
    ds_test_server_stop(&srv);
}

/* Under temporal, samples of status never show two tenants with their gates open at once,
 * and every member waits a turn: its longest wait for ten links is at least 30 ms. */
Test(crowd, temporal_lets_one_run_at_a_time_and_each_gets_turns, .timeout = 120)
{
    char out[16384];
    struct chain c;
    int samples = 0;

    crowd("--policy temporal", 2500, 30);
    cr_assert_eq(chain_open(&c), 0);
    for (double end = now_ms() + 2000; now_ms() < end;) {
        int open = 0;

        cr_assert_eq(chain_ten(&c), 0);
        cr_assert_eq(ds_test_ctl(&srv, "status --json", out, sizeof(out)), 0, "%s", out);
        for (const char *p = out; (p = strstr(p, "\"gated\":false")) != NULL; p++)
            open++;
        if (strstr(out, "crowd-3") != NULL) {
            cr_expect_leq(open, 1, "%d gates open at once: %s", open, out);
            samples++;
        }
    }
    cr_expect_gt(samples, 10);
    cr_expect(chain_intact(&c));
    for (int i = 1; i < CROWD; i++)
        ds_test_peer_join(&peers[i - 1]);
    leave_all();
    ds_test_server_stop(&srv);
}

/* A member that leaves gives its quarter back: static splits the device among three. */
Test(crowd, a_member_that_leaves_gives_its_groups_back, .timeout = 120)
{
    char out[16384];
    struct chain c;
    long long a, b, d;
    int spread = 0;

    DS_SIM_ONLY();
    crowd("--policy static", 300, 0);
    cr_assert_eq(chain_open(&c), 0);
    ds_test_peer_join(&peers[0]);
    ds_test_peer_leave(&peers[0]); /* crowd-1 is gone */
    for (double end = now_ms() + 5000; now_ms() < end && !spread;) {
        cr_assert_eq(chain_ten(&c), 0);
        cr_assert_eq(ds_test_ctl(&srv, "status --json", out, sizeof(out)), 0, "%s", out);
        /* The others launch nothing more: what the policy decided for them. */
        a = groups_of(out, "crowd-0");
        b = groups_in(out, "crowd-2", "decided_sm_groups");
        d = groups_in(out, "crowd-3", "decided_sm_groups");
        /* Three tenants of 16 groups: five each, disjoint. */
        spread = strstr(out, "crowd-1") == NULL && a > 0 && b > 0 && d > 0 &&
                 __builtin_popcountll((unsigned long long)a) == 5 && (a & b) == 0 &&
                 (a & d) == 0 && (b & d) == 0;
        usleep(5000);
    }
    cr_expect(spread, "never three disjoint fifths: %s", out);
    cr_expect(chain_intact(&c));
    for (int i = 2; i < CROWD; i++)
        ds_test_peer_join(&peers[i - 1]);
    for (int i = 2; i < CROWD; i++)
        ds_test_peer_leave(&peers[i - 1]);
    ds_test_server_stop(&srv);
}
