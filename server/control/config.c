#include "config.h"

#include "ds_log.h"
#include "quota.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#define LINE_MAX_BYTES 1024

/* Where a file is being read, for its error lines, and where its policy-dir goes (dir
 * NULL: nowhere, the line is only checked). */
struct place {
    const char *path;
    int line;
    char *dir;
    size_t dirlen;
    int dirs; /* policy-dir lines so far */
};

static void drop_comment(char *line)
{
    char *hash = strchr(line, '#');

    if (hash != NULL)
        *hash = '\0';
}

/* "quota NAME k=v...", its first word already taken.  Returns 0 or -1 after logging. */
static int quota_line(const struct place *at, char *save, struct ds_shm_quota *v, unsigned *n)
{
    const char *name = strtok_r(NULL, " \t\r\n", &save), *why;
    struct ds_shm_quota q = { 0 };
    char *kv;
    unsigned which;
    int settings = 0;

    if (name == NULL || !ds_quota_name_ok(name)) {
        ds_error("%s:%d: quota takes a tenant name or a prefix ending in '*' (at most %d "
                 "printable characters, no spaces)", at->path, at->line, DS_NAME_MAX);
        return -1;
    }
    snprintf(q.name, sizeof(q.name), "%s", name);
    while ((kv = strtok_r(NULL, " \t\r\n", &save)) != NULL) {
        if ((why = ds_quota_setting(kv, &q, &which)) != NULL) {
            ds_error("%s:%d: %s: %s", at->path, at->line, kv, why);
            return -1;
        }
        settings++;
    }
    if (settings == 0) {
        ds_error("%s:%d: quota %s sets nothing (memory=SIZE, sm-share=PCT, kernel-time=PCT, class=CLASS, uid=UID)", at->path,
                 at->line, name);
        return -1;
    }
    for (unsigned i = 0; i < *n; i++)
        if (strcmp(v[i].name, q.name) == 0) {
            ds_error("%s:%d: a second quota for %s", at->path, at->line, name);
            return -1;
        }
    if (*n == DS_SHM_QUOTAS) {
        ds_error("%s:%d: more than %d quotas", at->path, at->line, DS_SHM_QUOTAS);
        return -1;
    }
    if (!ds_quota_empty(&q))
        v[(*n)++] = q;
    return 0;
}

/* "policy-dir DIR", its first word already taken.  Returns 0 or -1 after logging. */
static int policy_dir_line(struct place *at, char *save)
{
    const char *dir = strtok_r(NULL, " \t\r\n", &save);

    if (dir == NULL || dir[0] != '/' || strlen(dir) >= PATH_MAX ||
        strtok_r(NULL, " \t\r\n", &save) != NULL) {
        ds_error("%s:%d: policy-dir takes one absolute path", at->path, at->line);
        return -1;
    }
    if (at->dirs++ > 0) {
        ds_error("%s:%d: a second policy-dir", at->path, at->line);
        return -1;
    }
    if (at->dir != NULL)
        snprintf(at->dir, at->dirlen, "%s", dir);
    return 0;
}

/* One line; returns 0 or -1 after logging. */
static int parse_line(struct place *at, char *line, struct ds_shm_quota *v, unsigned *n)
{
    char *save = NULL, *word;

    drop_comment(line);
    word = strtok_r(line, " \t\r\n", &save);
    if (word == NULL)
        return 0;
    if (strcmp(word, "quota") == 0)
        return quota_line(at, save, v, n);
    if (strcmp(word, "policy-dir") == 0)
        return policy_dir_line(at, save);
    ds_error("%s:%d: unknown directive %s (expected quota or policy-dir)", at->path, at->line,
             word);
    return -1;
}

int ds_config_load_at_start(const char *path, struct ds_shm_quota *v, unsigned *n, char *dir,
                            size_t dirlen)
{
    struct place at = { .path = path, .dir = dir, .dirlen = dirlen };
    char line[LINE_MAX_BYTES];
    FILE *f = fopen(path, "r");
    int bad = 0;

    *n = 0;
    if (dir != NULL)
        dir[0] = '\0';
    if (f == NULL) {
        ds_error("%s: cannot read the config file: %s", path, strerror(errno));
        return -1;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        at.line++;
        if (strchr(line, '\n') == NULL && !feof(f)) {
            ds_error("%s:%d: longer than %d bytes", path, at.line, LINE_MAX_BYTES - 2);
            bad = 1;
            break;
        }
        bad |= parse_line(&at, line, v, n) != 0;
    }
    if (!bad && ferror(f)) {
        ds_error("%s: cannot read the config file: %s", path, strerror(EIO));
        bad = 1;
    }
    fclose(f);
    return bad ? -1 : 0;
}

int ds_config_load(const char *path, struct ds_shm_quota *v, unsigned *n)
{
    return ds_config_load_at_start(path, v, n, NULL, 0);
}
