/* Which server a call goes to (client/transport/route.c), compiled in directly with its
 * packaged-socket directory moved under the build tree: the list of servers, the
 * default that finds every gpuN socket, CUDA_VISIBLE_DEVICES, handles tagged with their
 * device on the way in and stripped on the way out, and the device a call's arguments
 * choose. */
#include "route.h"

#include "ds_xdrview.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define STREAM(idx) ((2ull << 56) | (idx))
#define FUNC(idx) ((5ull << 56) | (idx))
#define CTX(idx) ((1ull << 56) | (idx))
#define TAG(dev) ((uint64_t)(dev) << DS_ROUTE_SHIFT)

static void servers_with(const char *list, const char *visible, struct ds_addr *out, int *n,
                         int want_rc)
{
    if (list != NULL)
        setenv("DETSHARE_SERVER", list, 1);
    else
        unsetenv("DETSHARE_SERVER");
    if (visible != NULL)
        setenv("CUDA_VISIBLE_DEVICES", visible, 1);
    else
        unsetenv("CUDA_VISIBLE_DEVICES");
    cr_assert_eq(ds__route_servers(out, n), want_rc, "%s / %s", list, visible);
}

Test(route, the_list_in_its_order)
{
    struct ds_addr a[DS_ROUTE_MAX];
    int n;

    servers_with("unix:/x/a.sock,tcp:h:7070,unix:/x/c.sock", NULL, a, &n, 0);
    cr_assert_eq(n, 3);
    cr_assert_str_eq(a[0].path, "/x/a.sock");
    cr_assert_eq(a[1].kind, DS_ADDR_TCP);
    cr_assert_str_eq(a[1].port, "7070");
    cr_assert_str_eq(a[2].path, "/x/c.sock");
}

Test(route, a_bad_list_is_refused)
{
    char many[2048] = "unix:/s";
    struct ds_addr a[DS_ROUTE_MAX];
    int n;

    servers_with("unix:/x/a.sock,bogus", NULL, a, &n, -1);
    servers_with(",", NULL, a, &n, -1);
    for (int i = 0; i < DS_ROUTE_MAX; i++)
        strcat(many, ",unix:/s");
    servers_with(many, NULL, a, &n, -1);
}

Test(route, visible_devices_choose_and_order)
{
    struct ds_addr a[DS_ROUTE_MAX];
    int n;

    servers_with("unix:/a,unix:/b,unix:/c", "2,0", a, &n, 0);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(a[0].path, "/c");
    cr_assert_str_eq(a[1].path, "/a");
    /* As CUDA reads it: the list ends at an index it cannot use. */
    servers_with("unix:/a,unix:/b,unix:/c", "1,7,0", a, &n, 0);
    cr_assert_eq(n, 1);
    cr_assert_str_eq(a[0].path, "/b");
    servers_with("unix:/a,unix:/b", "0,0", a, &n, 0);
    cr_assert_eq(n, 1);
    servers_with("unix:/a,unix:/b", "", a, &n, 0);
    cr_assert_eq(n, 0);
    servers_with("unix:/a,unix:/b", "-1", a, &n, 0);
    cr_assert_eq(n, 0);
}

/* A value meant for the host's GPUs (a scheduler's index, a UUID) does not hide the
 * device detshare serves. */
Test(route, visible_devices_naming_no_server_are_ignored)
{
    struct ds_addr a[DS_ROUTE_MAX];
    int n;

    servers_with("unix:/a,unix:/b", "GPU-1234", a, &n, 0);
    cr_assert_eq(n, 2);
    servers_with("unix:/a", "3", a, &n, 0);
    cr_assert_eq(n, 1);
    cr_assert_str_eq(a[0].path, "/a");
}

static void make_socket(const char *path)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);

    cr_assert_geq(fd, 0);
    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
    unlink(path);
    cr_assert_eq(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0, "%s", path);
    close(fd);
}

Test(route, unset_finds_every_gpu_socket_in_order)
{
    static const int gpus[] = { 10, 0, 2 };
    char path[256], xdg[] = "/tmp/ds-route-xdg.XXXXXX";
    struct ds_addr a[DS_ROUTE_MAX];
    int n;

    cr_assert_not_null(mkdtemp(xdg));
    setenv("XDG_RUNTIME_DIR", xdg, 1);
    mkdir(DS_RUN_DIR, 0700);
    mkdir(DS_RUN_DIR "/gpuX", 0700);
    for (size_t i = 0; i < sizeof(gpus) / sizeof(gpus[0]); i++) {
        snprintf(path, sizeof(path), DS_RUN_DIR "/gpu%d", gpus[i]);
        mkdir(path, 0700);
        snprintf(path, sizeof(path), DS_RUN_DIR "/gpu%d/detshare.sock", gpus[i]);
        make_socket(path);
    }
    servers_with(NULL, NULL, a, &n, 0);
    cr_assert_eq(n, 3);
    cr_assert_str_eq(a[0].path, DS_RUN_DIR "/gpu0/detshare.sock");
    cr_assert_str_eq(a[1].path, DS_RUN_DIR "/gpu2/detshare.sock");
    cr_assert_str_eq(a[2].path, DS_RUN_DIR "/gpu10/detshare.sock");
    servers_with(NULL, "1", a, &n, 0);
    cr_assert_eq(n, 1);
    cr_assert_str_eq(a[0].path, DS_RUN_DIR "/gpu2/detshare.sock");
    /* The tenant's own default socket, when there is one, is the server it means. */
    snprintf(path, sizeof(path), "%s/detshare.sock", xdg);
    make_socket(path);
    servers_with(NULL, NULL, a, &n, 0);
    cr_assert_eq(n, 1);
    cr_assert_str_eq(a[0].path, path);
    unlink(path);
    rmdir(xdg);
}

/* handle as device `enc`'s wire carries it. */
static uint64_t encoded(uint64_t handle, int enc)
{
    char buf[8];
    XDR x;
    uint64_t back = 0;

    ds__route_encoding(enc);
    xdrmem_create(&x, buf, sizeof(buf), XDR_ENCODE);
    cr_assert(xdr_ds_handle(&x, &handle));
    xdrmem_create(&x, buf, sizeof(buf), XDR_DECODE);
    cr_assert(ds_xdr_handle_plain(&x, &back));
    return back;
}

/* The handle a reply from device dev's server carrying `wire` gives the tenant. */
static uint64_t decoded(uint64_t wire, int dev)
{
    char buf[8];
    XDR x;
    uint64_t h = 0;

    xdrmem_create(&x, buf, sizeof(buf), XDR_ENCODE);
    cr_assert(ds_xdr_handle_plain(&x, &wire));
    ds__route_decoding(dev);
    xdrmem_create(&x, buf, sizeof(buf), XDR_DECODE);
    cr_assert(xdr_ds_handle(&x, &h));
    return h;
}

static int owner(uint64_t p)
{
    return p >= 0x10000 && p < 0x20000 ? 1 : p >= 0x30000 && p < 0x40000 ? 0 : -1;
}

Test(route, handles_carry_their_device)
{
    ds__route_start(2, owner);
    cr_assert_eq(decoded(STREAM(7), 1), STREAM(7) | TAG(1));
    cr_assert_eq(decoded(STREAM(7), 0), STREAM(7));
    /* CUDA's stream numbers are nobody's handles. */
    cr_assert_eq(decoded(1, 1), 1);
    cr_assert_eq(decoded(2, 1), 2);
    cr_assert_eq(ds__route_dev_of(decoded(CTX(3), 1)), 1);
    /* Back to its own server untagged; to another, as a handle it never issued. */
    cr_assert_eq(encoded(STREAM(7) | TAG(1), 1), STREAM(7));
    cr_assert_eq(encoded(STREAM(7) | TAG(1), 0), STREAM(7) | TAG(15));
    cr_assert_eq(encoded(STREAM(7), 0), STREAM(7));
    cr_assert_eq(encoded(STREAM(7), 1), STREAM(7) | TAG(15));
}

Test(route, a_call_goes_where_its_objects_are)
{
    ds_launch_args l = { .fn = FUNC(1) | TAG(1), .stream = STREAM(1) | TAG(1) };
    ds_alloc_args a = { .ctx = CTX(1) | TAG(1), .size = 4096 };
    ds_dtoh_args d = { .src = 0x10100, .size = 16, .stream = 0 };

    ds__route_start(2, owner);
    cr_assert_eq(ds__route_pick((xdrproc_t)xdr_ds_launch_args, &l), 1);
    cr_assert_eq(ds__route_last(), 1);
    cr_assert_eq(ds__route_pick((xdrproc_t)xdr_ds_alloc_args, &a), 1);
    cr_assert_eq(ds__route_pick((xdrproc_t)xdr_ds_dtoh_args, &d), 1);
    /* An object of device 0 named with device 1's context: the object decides. */
    d.src = 0x30000;
    cr_assert_eq(ds__route_pick((xdrproc_t)xdr_ds_dtoh_args, &d), 0);
    /* A made-up handle names no device of the tenant, and decides nothing. */
    l.fn = FUNC(1) | TAG(9);
    cr_assert_eq(ds__route_pick((xdrproc_t)xdr_ds_launch_args, &l), 1);
    ds__route_set_current(CTX(2) | TAG(9));
    cr_assert_eq(ds__route_current(), 0);
    l.fn = FUNC(1) | TAG(1);
    /* Objects of two devices: no server can serve it. */
    l.stream = STREAM(1);
    cr_assert_eq(ds__route_pick((xdrproc_t)xdr_ds_launch_args, &l), -1);
    /* Nothing named: the current context's device; pinned: the pin. */
    d.src = 0x50000;
    d.stream = 1;
    ds__route_set_current(CTX(2) | TAG(1));
    cr_assert_eq(ds__route_current(), 1);
    cr_assert_eq(ds__route_pick((xdrproc_t)xdr_ds_dtoh_args, &d), 1);
    ds__route_pin(0);
    cr_assert_eq(ds__route_pick((xdrproc_t)xdr_ds_dtoh_args, &d), 0);
    ds__route_unpin();
    cr_assert_eq(ds__route_pick((xdrproc_t)xdr_ds_dtoh_args, &d), 1);
}

Test(route, one_server_looks_at_nothing)
{
    ds_launch_args l = { .fn = FUNC(1) | TAG(1), .stream = STREAM(1) };

    ds__route_start(1, owner);
    cr_assert_eq(ds__route_pick((xdrproc_t)xdr_ds_launch_args, &l), 0);
    /* No view installed: handles travel as the server issued them. */
    cr_assert_eq(decoded(STREAM(7), 1), STREAM(7));
}
