#include "ds_addr.h"
#include "ds_error.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

Test(addr, parses_unix_and_tcp)
{
    struct ds_addr a;
    char buf[300];

    cr_assert_eq(ds_addr_parse("unix:/run/x.sock", &a), 0);
    cr_assert_eq(a.kind, DS_ADDR_UNIX);
    cr_assert_str_eq(a.path, "/run/x.sock");
    cr_assert_eq(ds_addr_parse("tcp:127.0.0.1:7000", &a), 0);
    cr_assert_eq(a.kind, DS_ADDR_TCP);
    cr_assert_str_eq(a.host, "127.0.0.1");
    cr_assert_str_eq(a.port, "7000");
    cr_assert_eq(ds_addr_parse("tcp:[::1]:9", &a), 0);
    cr_assert_str_eq(a.host, "::1");
    ds_addr_format(&a, buf, sizeof(buf));
    cr_assert_str_eq(buf, "tcp:[::1]:9");
}

Test(addr, refuses_bad_syntax)
{
    struct ds_addr a;
    char longpath[200];

    memset(longpath, 'x', sizeof(longpath));
    memcpy(longpath, "unix:", 5);
    longpath[sizeof(longpath) - 1] = '\0';
    cr_assert_eq(ds_addr_parse("unix:", &a), DS_EINVAL);
    cr_assert_eq(ds_addr_parse(longpath, &a), DS_EINVAL);
    cr_assert_eq(ds_addr_parse("tcp:host", &a), DS_EINVAL);
    cr_assert_eq(ds_addr_parse("tcp:host:0", &a), DS_EINVAL);
    cr_assert_eq(ds_addr_parse("tcp:host:70000", &a), DS_EINVAL);
    cr_assert_eq(ds_addr_parse("tcp::80", &a), DS_EINVAL);
    cr_assert_eq(ds_addr_parse("/tmp/x.sock", &a), DS_EINVAL);
}

Test(addr, default_follows_xdg_runtime_dir)
{
    struct ds_addr a;
    char want[64];

    setenv("XDG_RUNTIME_DIR", "/run/user/1234", 1);
    ds_addr_default(&a);
    cr_assert_str_eq(a.path, "/run/user/1234/detshare.sock");
    unsetenv("XDG_RUNTIME_DIR");
    ds_addr_default(&a);
    snprintf(want, sizeof(want), "/tmp/detshare-%u/detshare.sock", (unsigned)getuid());
    cr_assert_str_eq(a.path, want, "the default is in a directory of the user's own");
}
