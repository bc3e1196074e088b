/* Quotas that a tenant cannot shed by connecting twice or by choosing its name: a rule's
 * memory limit covers all its live tenants together; a rule bound to a Unix user (uid=)
 * holds every tenant of that user whatever name it claims, from detshare-ctl or the
 * config file; and a Unix tenant of another user cannot take that rule's name. */
#define _GNU_SOURCE
#include "ds_test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MiB (1ull << 20)

static struct ds_test_server srv;
static char dir[64], config[128];

static void write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

    cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

/* A server whose config file holds `rules`. */
static void start_with(const char *rules)
{
    char args[256];

    snprintf(dir, sizeof(dir), "/tmp/dsquid.XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(config, sizeof(config), "%s/detshare.conf", dir);
    write_file(config, rules);
    snprintf(args, sizeof(args), "--config %s --sim-memory 1GiB", config);
    ds_test_server_start(&srv, 0, args);
}

static void stop(void)
{
    ds_test_server_stop(&srv);
    ds_test_remove_tree(dir);
}

static int ctl(const char *args, char *out, size_t len)
{
    return ds_test_ctl(&srv, args, out, len);
}

/* Connect as `name`; NULL leaves DETSHARE_TENANT unset. */
static CUresult connect_as(const char *name)
{
    if (name != NULL)
        setenv("DETSHARE_TENANT", name, 1);
    else
        unsetenv("DETSHARE_TENANT");
    return ds_test_connect();
}

/* A peer, named as its argument says (NULL: unnamed), that takes 60 MiB and keeps it. */
static int hold_60(void *name)
{
    CUdeviceptr d;

    if (connect_as(name) != CUDA_SUCCESS)
        return 1;
    return cuMemAlloc(&d, 60 * MiB) == CUDA_SUCCESS ? 0 : 2;
}

TestSuite(quota_uid, .fini = stop, .timeout = 120);

Test(quota_uid, a_rules_limit_covers_all_its_tenants_together)
{
    struct ds_test_peer peer;
    size_t free_b, total;
    CUdeviceptr d;

    start_with("quota q64 memory=64MiB\n");
    ds_test_peer_fork(&peer, hold_60, "q64");
    ds_test_peer_join(&peer);
    CU_OK(connect_as("q64"));
    CU_OK(cuMemGetInfo(&free_b, &total));
    cr_expect_eq(total, 64 * MiB);
    cr_expect_eq(free_b, 4 * MiB, "the other q64 holds 60 of the rule's 64 MiB");
    CU_IS(cuMemAlloc(&d, 60 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    cr_expect(ds_test_log_has(&srv, "held by every tenant under rule q64"));
    CU_OK(cuMemAlloc(&d, 4 * MiB));
    CU_IS(cuMemAlloc(&d, 1), CUDA_ERROR_OUT_OF_MEMORY);
    /* Once it leaves, what it held is the rule's again. */
    ds_test_peer_leave(&peer);
    for (int i = 0; i < 500 && !ds_test_log_has(&srv, "(q64) left"); i++)
        usleep(10000);
    CU_OK(cuMemAlloc(&d, 60 * MiB));
}

/* A rule for this process's user. */
static void bind_rule(const char *name, unsigned uid, const char *limits)
{
    char args[256], out[4096], want[64];

    snprintf(args, sizeof(args), "quota %s %s uid=%u", name, limits, uid);
    cr_assert_eq(ctl(args, out, sizeof(out)), 0, "%s", out);
    snprintf(want, sizeof(want), "%s: memory", name);
    cr_expect(strstr(out, want), "%s", out);
    snprintf(want, sizeof(want), ", uid %u", uid);
    cr_expect(strstr(out, want), "the listing shows the uid: %s", out);
}

Test(quota_uid, a_rule_bound_to_a_uid_holds_its_tenants_whatever_their_names)
{
    struct ds_test_peer peer;
    char out[16384], obj[2048], unnamed[128];
    size_t total = 0;
    CUdeviceptr d;

    start_with("quota q64-not memory=512MiB\n");
    bind_rule("q64", (unsigned)getuid(), "memory=64MiB");
    ds_test_peer_fork(&peer, hold_60, NULL);
    ds_test_peer_join(&peer);
    /* The client names an unnamed tenant after its program and pid. */
    snprintf(unnamed, sizeof(unnamed), "%s.%d", program_invocation_short_name, (int)peer.pid);
    /* A name with a roomier rule of its own changes nothing: the user's rule comes first. */
    CU_OK(connect_as("q64-not"));
    CU_OK(cuDeviceTotalMem(&total, 0));
    cr_expect_eq(total, 64 * MiB);
    CU_IS(cuMemAlloc(&d, 60 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    CU_OK(cuMemAlloc(&d, 4 * MiB));
    cr_assert_eq(ctl("status --json", out, sizeof(out)), 0, "%s", out);
    ds_test_tenant_json(out, "q64-not", obj, sizeof(obj));
    cr_expect(strstr(obj, "\"quota_rule\":\"q64\""), "%s", obj);
    ds_test_tenant_json(out, unnamed, obj, sizeof(obj));
    cr_expect(strstr(obj, "\"quota_rule\":\"q64\""), "the unnamed tenant too: %s", obj);

    /* Unbound, the name decides again, for tenants connecting later. */
    cr_assert_eq(ctl("quota q64 uid=none", out, sizeof(out)), 0, "%s", out);
    cr_expect(!strstr(out, ", uid "), "%s", out);
    ds_test_peer_leave(&peer);
}

Test(quota_uid, the_config_file_binds_a_rule_and_another_user_cannot_take_its_name)
{
    char rules[256], out[4096], want[64];
    unsigned other = (unsigned)getuid() + 1;

    snprintf(rules, sizeof(rules), "quota theirs memory=8MiB uid=%u\nquota team-* memory=8MiB "
             "uid=%u\n", other, other);
    start_with(rules);
    cr_assert_eq(ctl("quota", out, sizeof(out)), 0, "%s", out);
    snprintf(want, sizeof(want), "theirs: memory 8 MiB");
    cr_expect(strstr(out, want), "%s", out);
    snprintf(want, sizeof(want), ", uid %u", other);
    cr_expect(strstr(out, want), "%s", out);

    cr_expect_eq(connect_as("team-a"), CUDA_ERROR_NO_DEVICE, "a name of another user's rule");
    cr_expect(ds_test_log_has(&srv, "refusing the hello of team-a"), "no refusal logged");
    snprintf(want, sizeof(want), "quota rule team-* binds that name to uid %u", other);
    cr_expect(ds_test_log_has(&srv, want), "expected \"%s\" in the log", want);
    cr_expect_eq(ds_test_log_count(&srv, "[team-a] info: joined"), 0, "team-a joined");
    cr_expect_neq(ctl("quota theirs uid=me", out, sizeof(out)), 0, "%s", out);
}
