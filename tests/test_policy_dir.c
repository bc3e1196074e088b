/* Policies loaded from files at run time (detshare-ctl policy PATH): only from the
 * directory --policy-dir (or the config file's policy-dir) names, and only files that
 * nobody but root and the server's user can change, reached through directories likewise.
 * All of it is checked before the library is opened: the test library's constructor
 * creates a marker file, which must never appear for a refused one. */
#include "ds_test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static struct ds_test_server srv;
static char base[64], marker[128];

/* The marker policy's library at BASE/rel, mode `mode`. */
static void copy_lib(const char *rel, mode_t mode)
{
    char path[256], buf[65536];
    int in = open(DS_MARKER_POLICY_SO, O_RDONLY), out;
    ssize_t n;

    snprintf(path, sizeof(path), "%s/%s", base, rel);
    out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(in, 0, "%s: %s", DS_MARKER_POLICY_SO, strerror(errno));
    cr_assert_geq(out, 0, "%s: %s", path, strerror(errno));
    while ((n = read(in, buf, sizeof(buf))) > 0)
        cr_assert_eq(write(out, buf, (size_t)n), n);
    cr_assert_eq(fchmod(out, mode), 0);
    close(in);
    close(out);
}

static void set_mode(const char *rel, mode_t mode)
{
    char path[256];

    snprintf(path, sizeof(path), "%s/%s", base, rel);
    cr_assert_eq(chmod(path, mode), 0, "%s: %s", path, strerror(errno));
}

static void make_dir(const char *rel, mode_t mode)
{
    char path[256];

    snprintf(path, sizeof(path), "%s/%s", base, rel);
    cr_assert_eq(mkdir(path, 0700), 0, "%s: %s", path, strerror(errno));
    set_mode(rel, mode);
}

/* BASE/good, a proper policy directory, and BASE/outside, each holding marker.so; the
 * library's constructor would create BASE/ran. */
static void setup(void)
{
    char link[256];

    snprintf(base, sizeof(base), "/tmp/dspolicydir.XXXXXX");
    cr_assert_not_null(mkdtemp(base));
    snprintf(marker, sizeof(marker), "%s/ran", base);
    setenv("DS_TEST_POLICY_MARKER", marker, 1);
    make_dir("good", 0755);
    make_dir("outside", 0755);
    copy_lib("good/marker.so", 0644);
    copy_lib("outside/marker.so", 0644);
    snprintf(link, sizeof(link), "%s/good/escape.so", base);
    cr_assert_eq(symlink("../outside/marker.so", link), 0);
}

static void teardown(void)
{
    ds_test_remove_tree(base);
}

TestSuite(policy_dir, .init = setup, .fini = teardown, .timeout = 120);

/* detshare-ctl policy BASE/rel fails saying `says`, and the library never ran. */
static void expect_refused(const char *rel, const char *says)
{
    char args[300], out[4096];

    snprintf(args, sizeof(args), "policy %s/%s", base, rel);
    cr_assert_neq(ds_test_ctl(&srv, args, out, sizeof(out)), 0, "%s: %s", args, out);
    cr_assert_not_null(strstr(out, says), "%s: %s", args, out);
    cr_assert_neq(access(marker, F_OK), 0, "%s: the library ran inside the server", args);
}

static void expect_loaded(const char *rel)
{
    char args[300], out[4096];

    snprintf(args, sizeof(args), "policy %s/%s", base, rel);
    cr_assert_eq(ds_test_ctl(&srv, args, out, sizeof(out)), 0, "%s: %s", args, out);
    cr_assert_not_null(strstr(out, "policy: marker"), "%s: %s", args, out);
    cr_assert_eq(access(marker, F_OK), 0, "the library loaded but its constructor did not run");
}

Test(policy_dir, without_a_policy_dir_no_file_is_loaded_but_names_still_switch)
{
    char out[4096];

    ds_test_server_start(&srv, 0, NULL);
    expect_refused("good/marker.so", "--policy-dir");
    cr_assert(ds_test_log_has(&srv, "refused: loading a policy from a file at run time is off"));
    cr_assert_eq(ds_test_ctl(&srv, "policy shared", out, sizeof(out)), 0, "%s", out);
    cr_assert_not_null(strstr(out, "policy: shared"), "%s", out);
    ds_test_server_stop(&srv);
}

Test(policy_dir, files_outside_the_dir_or_open_to_others_are_refused_before_they_run)
{
    char args[200];

    snprintf(args, sizeof(args), "--policy-dir %s/good", base);
    ds_test_server_start(&srv, 0, args);
    expect_refused("outside/marker.so", "is not inside the policy directory");
    expect_refused("good/../outside/marker.so", "is not inside the policy directory");
    expect_refused("good/escape.so", "is not inside the policy directory");
    expect_refused("good/absent.so", "No such file");
    copy_lib("good/loose.so", 0664);
    expect_refused("good/loose.so", "loose.so is writable by its group");
    copy_lib("good/open.so", 0646);
    expect_refused("good/open.so", "open.so is writable by others");
    make_dir("good/sub", 0775);
    copy_lib("good/sub/marker.so", 0644);
    expect_refused("good/sub/marker.so", "good/sub is writable by its group");
    /* The directory loosened after the start: checked again at each load. */
    set_mode("good", 0775);
    expect_refused("good/marker.so", "good is writable by its group");
    set_mode("good", 0755);
    if (geteuid() == 0) {
        char path[256];

        snprintf(path, sizeof(path), "%s/good/marker.so", base);
        cr_assert_eq(chown(path, 65534, 65534), 0);
        expect_refused("good/marker.so", "owned by a user other than root and the server's");
        cr_assert_eq(chown(path, 0, 0), 0);
    }
    expect_loaded("good/marker.so");
    ds_test_server_stop(&srv);
}

/* The server's exit status with `args`, its output in out. */
static int server_exit(const char *args, char *out, size_t len)
{
    char cmd[1024];
    FILE *p;
    size_t n;

    snprintf(cmd, sizeof(cmd),
             "timeout 20 %s --device sim --mps off --warm 0 --listen unix:%s/s %s 2>&1",
             DS_SERVER_BIN, base, args);
    p = popen(cmd, "r");
    cr_assert_not_null(p);
    n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    return WEXITSTATUS(pclose(p));
}

static void write_config(const char *text)
{
    char path[256];
    FILE *f;

    snprintf(path, sizeof(path), "%s/conf", base);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

Test(policy_dir, a_dir_open_to_others_stops_the_start)
{
    char args[300], out[4096], conf[300];

    make_dir("loose", 0775);
    snprintf(args, sizeof(args), "--policy-dir %s/loose", base);
    cr_assert_eq(server_exit(args, out, sizeof(out)), 2, "%s", out);
    cr_assert_not_null(strstr(out, "loose is writable by its group"), "%s", out);
    snprintf(args, sizeof(args), "--policy-dir %s/none", base);
    cr_assert_eq(server_exit(args, out, sizeof(out)), 2, "%s", out);
    cr_assert_not_null(strstr(out, "none: No such file"), "%s", out);
    /* The same from the config file. */
    snprintf(conf, sizeof(conf), "policy-dir %s/loose\n", base);
    write_config(conf);
    snprintf(args, sizeof(args), "--config %s/conf", base);
    cr_assert_eq(server_exit(args, out, sizeof(out)), 2, "%s", out);
    cr_assert_not_null(strstr(out, "loose is writable by its group"), "%s", out);
    write_config("policy-dir relative/dir\n");
    cr_assert_eq(server_exit(args, out, sizeof(out)), 2, "%s", out);
    cr_assert_not_null(strstr(out, "conf:1: policy-dir takes one absolute path"), "%s", out);
}

Test(policy_dir, the_config_file_can_name_the_dir)
{
    char args[300], conf[300];

    snprintf(conf, sizeof(conf), "# policies\npolicy-dir %s/good   # ours\n", base);
    write_config(conf);
    snprintf(args, sizeof(args), "--config %s/conf", base);
    ds_test_server_start(&srv, 0, args);
    expect_refused("outside/marker.so", "is not inside the policy directory");
    expect_loaded("good/marker.so");
    ds_test_server_stop(&srv);
}
