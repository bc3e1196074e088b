/* A policy whose library does something the moment it is opened: its constructor creates
 * the file DS_TEST_POLICY_MARKER names, with the rights of whoever opened it.  A server
 * that refuses the library must never have opened it: tests/test_policy_dir.c. */
#define _POSIX_C_SOURCE 200809L
#include <detshare/policy.h>

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void mark(void)
{
    const char *path = getenv("DS_TEST_POLICY_MARKER");
    int fd = path != NULL ? open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644) : -1;

    if (fd >= 0)
        close(fd);
}

static void nothing(struct ds_sched_view *v)
{
    (void)v;
}

static void nothing_join(struct ds_sched_view *v, int joined)
{
    (void)v;
    (void)joined;
}

static const struct ds_policy marker = {
    .name = "marker",
    .about = "places nobody anywhere in particular",
    .on_start = nothing,
    .on_tenant_join = nothing_join,
    .on_tenant_leave = nothing,
};

const struct ds_policy *detshare_policy(unsigned abi)
{
    return abi == DS_POLICY_ABI ? &marker : NULL;
}
