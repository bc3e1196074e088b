/* CUPTI through detshare: its driver tables are refused with CUDA_ERROR_NOT_SUPPORTED
 * and one line on the tenant's stderr that points at detshare-ctl trace
 * (docs/export-tables.md 4.14).  With the toolkit's libcupti (DS_HAVE_CUPTI), CUPTI
 * itself is asked too. */
#include "ds_test.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef DS_HAVE_CUPTI
#include <cupti.h>
#endif

/* The first table CUPTI asks for, and the one it asks next when given the first. */
static const unsigned char first[16] = { 0x2c, 0x8e, 0x0a, 0xd8, 0x07, 0x10, 0xab, 0x4e,
                                         0x90, 0xdd, 0x54, 0x71, 0x9f, 0xe5, 0xf7, 0x4b };
static const unsigned char second[16] = { 0xfc, 0x58, 0xac, 0x1a, 0x05, 0x7c, 0x44, 0x4f,
                                          0xa9, 0x77, 0x72, 0xee, 0x9a, 0xef, 0xdb, 0x89 };

static struct ds_test_server srv;

static void setup(void)
{
    ds_test_server_start(&srv, 0, NULL);
}

static void teardown(void)
{
    ds_test_server_stop(&srv);
}

/* What the child found, as its exit status: 0 when all was as expected. */
enum { OK, FIRST_CODE, SECOND_CODE, TABLE_SET, CUPTI_WORKED, CONNECT };

static int ask(const unsigned char bytes[16])
{
    const void *t = (const void *)&t;
    CUuuid id;

    memcpy(id.bytes, bytes, 16);
    if (cuGetExportTable(&t, &id) != CUDA_ERROR_NOT_SUPPORTED)
        return bytes == first ? FIRST_CODE : SECOND_CODE;
    return t != NULL ? TABLE_SET : OK;
}

/* The tenant: stderr to `log`, then what a CUPTI user's process does. */
static int tenant(const char *log)
{
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600), rc;

    if (fd < 0 || dup2(fd, 2) < 0)
        return CONNECT;
    close(fd);
    setenv("DETSHARE_TENANT", "profiled", 1);
#ifdef DS_HAVE_CUPTI
    {
        CUpti_SubscriberHandle sub;

        if (cuptiSubscribe(&sub, NULL, NULL) == CUPTI_SUCCESS)
            return CUPTI_WORKED;
    }
#endif
    if ((rc = ask(first)) != OK || (rc = ask(second)) != OK || (rc = ask(first)) != OK)
        return rc;
    return ds_test_connect() == CUDA_SUCCESS && ask(first) == OK ? OK : CONNECT;
}

static int count_lines(const char *path, const char *needle, char *line, size_t len)
{
    char buf[1024];
    FILE *f = fopen(path, "r");
    int n = 0;

    cr_assert_not_null(f);
    while (fgets(buf, sizeof(buf), f) != NULL) {
        if (strstr(buf, needle) != NULL && n++ == 0)
            snprintf(line, len, "%s", buf);
    }
    fclose(f);
    return n;
}

Test(cupti, refused_with_one_line_that_points_at_trace, .init = setup, .fini = teardown)
{
    char log[160], line[1024] = "";
    int status;
    pid_t pid;

    snprintf(log, sizeof(log), "%s/tenant.err", srv.dir);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0)
        _exit(tenant(log));
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status));
    cr_assert_eq(WEXITSTATUS(status), OK, "the tenant found case %d", WEXITSTATUS(status));
    cr_assert_eq(count_lines(log, "profiling through CUPTI", line, sizeof(line)), 1,
                 "one line, however often CUPTI asks");
    cr_assert_not_null(strstr(line, "detshare-ctl trace profiled --seconds N"), "%s", line);
    cr_assert_not_null(strstr(line, "warn"), "%s", line);
}
