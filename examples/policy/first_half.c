/*
 * A scheduling policy outside the server's build: the first tenant to join keeps the
 * lower half of the SM groups to itself, and every later one shares the upper half.
 * What a site with one service that must never wait for its neighbours might run.
 *
 *   cc -shared -fPIC -I PREFIX/include -o first_half.so examples/policy/first_half.c
 *   detshare-server --policy ./first_half.so        (or: detshare-ctl policy $PWD/first_half.so)
 *
 * The server calls detshare_policy() with the policy ABI it speaks, then with the older
 * ones it still takes; a policy written for none of them returns NULL and is refused.  Every hook gets the tenants in
 * the order they joined and sets each one's groups (bit i = group i; 0 = every SM).
 */
#include <detshare/policy.h>

static void place(struct ds_sched_view *v)
{
    unsigned half = v->sm_groups / 2;
    uint64_t low = half >= 64 ? ~0ull : (1ull << half) - 1;
    uint64_t all = v->sm_groups >= 64 ? ~0ull : (1ull << v->sm_groups) - 1;

    for (int i = 0; i < v->n; i++) {
        /* Alone, the first tenant has the whole device. */
        v->t[i].groups = v->n == 1 ? 0 : i == 0 ? low : all & ~low;
        v->t[i].gated = 0;
    }
}

static void join(struct ds_sched_view *v, int joined)
{
    (void)joined;
    place(v);
}

static const struct ds_policy first_half = {
    .name = "first-half",
    .about = "the first tenant keeps half the SMs; the others share the rest",
    .on_start = place,
    .on_tenant_join = join,
    .on_tenant_leave = place,
};

const struct ds_policy *detshare_policy(unsigned abi)
{
    return abi == DS_POLICY_ABI ? &first_half : NULL;
}
