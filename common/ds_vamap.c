#define _GNU_SOURCE /* MAP_FIXED_NOREPLACE */
#include "ds_vamap.h"

#include "ds_error.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The whole maps file of pid, NUL-terminated, in a malloc'd buffer. */
static int read_maps(int pid, char **text)
{
    char path[40];
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap), *grown;
    ssize_t n;
    int fd;

    if (pid > 0)
        snprintf(path, sizeof(path), "/proc/%d/maps", pid);
    else
        snprintf(path, sizeof(path), "/proc/self/maps");
    if (buf == NULL)
        return DS_ENOMEM;
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
        free(buf);
        return DS_EIO;
    }
    while ((n = read(fd, buf + len, cap - 1 - len)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        len += (size_t)n;
        if (len == cap - 1) {
            if ((grown = realloc(buf, cap * 2)) == NULL)
                break;
            buf = grown;
            cap *= 2;
        }
    }
    close(fd);
    if (n != 0) {
        free(buf);
        return n < 0 ? DS_EIO : DS_ENOMEM;
    }
    buf[len] = '\0';
    *text = buf;
    return 0;
}

/* "base-end perms offset dev inode   path"; 0 or -1 for a line that is not one. */
static int parse(char *line, struct ds_vamap_entry *e)
{
    uint64_t base, end;
    int at = 0;

    if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %*s %*s %" SCNu64 "%n", &base, &end, e->perms,
               &e->inode, &at) != 4 ||
        at == 0 || end <= base)
        return -1;
    e->base = base;
    e->size = end - base;
    e->path = line + at + strspn(line + at, " \t");
    return 0;
}

int ds_vamap_each(int pid, int (*fn)(const struct ds_vamap_entry *e, void *arg), void *arg)
{
    struct ds_vamap_entry e;
    char *text, *line, *next;
    int rc = read_maps(pid, &text);

    if (rc != 0)
        return rc;
    for (line = text; rc == 0 && *line != '\0'; line = next) {
        next = strchr(line, '\n');
        next = next != NULL ? (*next = '\0', next + 1) : line + strlen(line);
        if (parse(line, &e) == 0)
            rc = fn(&e, arg);
    }
    free(text);
    return rc;
}

struct gather {
    uint64_t min_size;
    struct ds_vamap_range *out, run; /* run: the reserved range being merged */
    int max, n;
};

/* Keep the run when it is large enough: in a free place, else over the smallest kept
 * when it is larger. */
static void keep(struct gather *g)
{
    int smallest = 0;

    if (g->run.size < g->min_size || g->run.size == 0)
        return;
    if (g->n < g->max) {
        g->out[g->n++] = g->run;
        return;
    }
    for (int i = 1; i < g->n; i++)
        if (g->out[i].size < g->out[smallest].size)
            smallest = i;
    if (g->n > 0 && g->out[smallest].size < g->run.size)
        g->out[smallest] = g->run;
}

static int reserved_one(const struct ds_vamap_entry *e, void *arg)
{
    struct gather *g = arg;

    if (strcmp(e->perms, "---p") != 0 || e->inode != 0 || e->path[0] != '\0') {
        keep(g);
        g->run.size = 0;
    } else if (g->run.size != 0 && g->run.base + g->run.size == e->base) {
        g->run.size += e->size;
    } else {
        keep(g);
        g->run = (struct ds_vamap_range){ e->base, e->size };
    }
    return 0;
}

static int by_base(const void *a, const void *b)
{
    const struct ds_vamap_range *x = a, *y = b;

    return (x->base > y->base) - (x->base < y->base);
}

int ds_vamap_reserved(int pid, uint64_t min_size, struct ds_vamap_range *out, int max)
{
    struct gather g = { .min_size = min_size, .out = out, .max = max };
    int rc = ds_vamap_each(pid, reserved_one, &g);

    if (rc != 0)
        return rc;
    keep(&g);
    qsort(out, (size_t)g.n, sizeof(*out), by_base);
    return g.n;
}

#define PAGE 4096ull

int ds_vamap_user_range(uint64_t base, uint64_t size)
{
    return size != 0 && ((base | size) % PAGE) == 0 && base != 0 && base < DS_VAMAP_USER_END &&
           size <= DS_VAMAP_USER_END - base;
}

void *ds_vamap_at(uint64_t base, size_t size, int prot, int flags, int fd, off_t offset)
{
    void *want = (void *)(uintptr_t)base;
    void *p = mmap(want, size, prot, flags | MAP_FIXED_NOREPLACE, fd, offset);

    /* An old kernel takes MAP_FIXED_NOREPLACE as a hint and may map elsewhere. */
    if (p != MAP_FAILED && p != want) {
        munmap(p, size);
        return MAP_FAILED;
    }
    return p;
}
