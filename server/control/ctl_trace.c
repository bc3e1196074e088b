#include "ctl_trace.h"

#include "admin_fields.h"
#include "shm.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Each tenant is a process (pid: its id), each of its streams a thread numbered from 1 in
 * the order they appear; thread 0 is the tenant's gate holds and SM moves. */
struct lane {
    uint64_t tenant, stream;
};

struct lanes {
    struct lane *v;
    size_t n, cap;
};

static const msgpack_object *get(const msgpack_object *m, const char *key)
{
    if (m == NULL || m->type != MSGPACK_OBJECT_MAP)
        return NULL;
    for (uint32_t i = 0; i < m->via.map.size; i++) {
        const msgpack_object *k = &m->via.map.ptr[i].key;

        if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == strlen(key) &&
            memcmp(k->via.str.ptr, key, k->via.str.size) == 0)
            return &m->via.map.ptr[i].val;
    }
    return NULL;
}

static uint64_t num(const msgpack_object *o)
{
    return o != NULL && o->type == MSGPACK_OBJECT_POSITIVE_INTEGER ? o->via.u64 : 0;
}

static void str(FILE *out, const char *s, size_t n)
{
    fputc('"', out);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

/* SM groups as 0-3,8 (all: the whole device), in quotes unless bare. */
static void groups_as(FILE *out, uint64_t mask, int bare)
{
    int first = 1;

    if (!bare)
        fputc('"', out);
    if (mask == 0)
        fputs("all", out);
    for (int i = 0; i < 64; i++) {
        int j = i;

        if (!(mask >> i & 1))
            continue;
        while (j < 63 && (mask >> (j + 1) & 1))
            j++;
        fprintf(out, first ? "%d" : ",%d", i);
        if (j > i)
            fprintf(out, "-%d", j);
        first = 0;
        i = j;
    }
    if (!bare)
        fputc('"', out);
}

static void groups(FILE *out, uint64_t mask)
{
    groups_as(out, mask, 0);
}

/* The thread of (tenant, stream), numbered from 1; 0 when out of memory. */
static size_t lane_of(struct lanes *l, uint64_t tenant, uint64_t stream, int *is_new)
{
    size_t n = 0;

    *is_new = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (l->v[i].tenant != tenant)
            continue;
        n++;
        if (l->v[i].stream == stream)
            return n;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        struct lane *v = realloc(l->v, cap * sizeof(*v));

        if (v == NULL)
            return 0;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (struct lane){ tenant, stream };
    *is_new = 1;
    return n + 1;
}

static void us(FILE *out, const char *key, int64_t ns)
{
    fprintf(out, ",\"%s\":%.3f", key, (double)ns / 1e3);
}

static const char *const op_names[DS_TRACE_KINDS] = {
    [DS_TRACE_HTOD] = "memcpy HtoD", [DS_TRACE_DTOH] = "memcpy DtoH",
    [DS_TRACE_DTOD] = "memcpy DtoD", [DS_TRACE_MEMSET] = "memset",
    [DS_TRACE_GRAPH] = "graph launch", [DS_TRACE_HOLD] = "gate hold",
};
static const char *const cats[DS_TRACE_KINDS] = {
    [DS_TRACE_KERNEL] = "kernel", [DS_TRACE_HTOD] = "copy", [DS_TRACE_DTOH] = "copy",
    [DS_TRACE_DTOD] = "copy", [DS_TRACE_MEMSET] = "memset", [DS_TRACE_GRAPH] = "graph",
    [DS_TRACE_MOVE] = "move", [DS_TRACE_HOLD] = "gate",
};

/* One [tenant, kind, stream, start_ns, end_ns, bytes, groups, name] as a trace event;
 * returns 0, or -1 when it is not one. */
static int event(FILE *out, const msgpack_object *e, uint64_t t0, struct lanes *l)
{
    const msgpack_object *f = e->via.array.ptr;
    uint64_t tenant, kind, stream, start, end, tid = 0;
    int is_new = 0;

    if (e->type != MSGPACK_OBJECT_ARRAY || e->via.array.size != 8 ||
        f[7].type != MSGPACK_OBJECT_STR || (kind = num(&f[1])) == 0 || kind >= DS_TRACE_KINDS)
        return -1;
    tenant = num(&f[0]);
    stream = num(&f[2]);
    start = num(&f[3]);
    end = num(&f[4]) > start ? num(&f[4]) : start;
    if (kind != DS_TRACE_MOVE && kind != DS_TRACE_HOLD && (tid = lane_of(l, tenant, stream, &is_new)) == 0)
        return -1;
    if (is_new) {
        fprintf(out, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%llu,\"tid\":%llu,"
                     "\"args\":{\"name\":\"stream 0x%llx%s\"}}",
                (unsigned long long)tenant, (unsigned long long)tid, (unsigned long long)stream,
                stream == 0 ? " (legacy)" : "");
        fprintf(out, ",\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%llu,\"tid\":%llu,"
                     "\"args\":{\"sort_index\":%llu}}",
                (unsigned long long)tenant, (unsigned long long)tid, (unsigned long long)tid);
    }
    fputs(",\n{\"name\":", out);
    if (kind == DS_TRACE_KERNEL)
        str(out, f[7].via.str.ptr, f[7].via.str.size);
    else if (kind == DS_TRACE_MOVE) {
        fputs("\"move to SM groups ", out);
        groups_as(out, num(&f[6]), 1);
        fputc('"', out);
    }
    else
        str(out, op_names[kind], strlen(op_names[kind]));
    fprintf(out, ",\"cat\":\"%s\",\"ph\":\"%s\",\"pid\":%llu,\"tid\":%llu", cats[kind],
            kind == DS_TRACE_MOVE ? "i\",\"s\":\"t" : "X", (unsigned long long)tenant,
            (unsigned long long)tid);
    us(out, "ts", (int64_t)(start - t0));
    if (kind != DS_TRACE_MOVE)
        us(out, "dur", (int64_t)(end - start));
    fputs(",\"args\":{\"sm_groups\":", out);
    groups(out, num(&f[6]));
    if (kind != DS_TRACE_MOVE && kind != DS_TRACE_HOLD)
        fprintf(out, ",\"stream\":\"0x%llx\"", (unsigned long long)stream);
    if (kind >= DS_TRACE_HTOD && kind <= DS_TRACE_MEMSET)
        fprintf(out, ",\"bytes\":%llu", (unsigned long long)num(&f[5]));
    fputs("}}", out);
    return 0;
}

/* Each tenant's name and its gate/move thread. */
static void processes(FILE *out, const msgpack_object *name, const msgpack_object *ts)
{
    for (uint32_t i = 0; ts != NULL && ts->type == MSGPACK_OBJECT_ARRAY && i < ts->via.array.size;
         i++) {
        const msgpack_object *t = &ts->via.array.ptr[i];
        char label[160];
        int n;

        n = snprintf(label, sizeof(label), "%.*s (tenant %llu, executor pid %llu)",
                     (int)name->via.str.size, name->via.str.ptr,
                     (unsigned long long)num(get(t, DS_ADMIN_KEY_ID)), (unsigned long long)num(get(t, DS_ADMIN_KEY_PID)));
        fprintf(out, "%s\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%llu,\"args\":{\"name\":",
                i ? "," : "", (unsigned long long)num(get(t, DS_ADMIN_KEY_ID)));
        str(out, label, n > 0 && (size_t)n < sizeof(label) ? (size_t)n : strlen(label));
        fprintf(out, "}},\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%llu,\"tid\":0,"
                     "\"args\":{\"name\":\"detshare: gate holds and SM moves\"}}",
                (unsigned long long)num(get(t, DS_ADMIN_KEY_ID)));
    }
}

static void metadata(FILE *out, const msgpack_object *tr, const msgpack_object *name,
                     size_t nev)
{
    const msgpack_object *ts = get(tr, DS_ADMIN_KEY_TENANTS);

    fputs("],\n\"displayTimeUnit\":\"ns\",\n\"metadata\":{\"detshare\":{\"tenant\":", out);
    str(out, name->via.str.ptr, name->via.str.size);
    fprintf(out, ",\"start_ns\":%llu,\"end_ns\":%llu,\"events\":%zu,\"dropped\":%llu,"
                 "\"capacity\":%llu,\"sm_group_size\":%llu,\"tenants\":[",
            (unsigned long long)num(get(tr, DS_ADMIN_KEY_START_NS)), (unsigned long long)num(get(tr, DS_ADMIN_KEY_END_NS)),
            nev, (unsigned long long)num(get(tr, DS_ADMIN_KEY_DROPPED)),
            (unsigned long long)num(get(tr, DS_ADMIN_KEY_CAPACITY)),
            (unsigned long long)num(get(tr, DS_ADMIN_KEY_SM_GROUP_SIZE)));
    for (uint32_t i = 0; ts != NULL && ts->type == MSGPACK_OBJECT_ARRAY && i < ts->via.array.size;
         i++) {
        const msgpack_object *t = &ts->via.array.ptr[i];

        fprintf(out, "%s{\"id\":%llu,\"pid\":%llu,\"sm_groups\":", i ? "," : "",
                (unsigned long long)num(get(t, DS_ADMIN_KEY_ID)), (unsigned long long)num(get(t, DS_ADMIN_KEY_PID)));
        groups(out, num(get(t, DS_ADMIN_KEY_SM_GROUPS)));
        fputc('}', out);
    }
    fputs("]}}}\n", out);
}

int ds_ctl_trace_write(const msgpack_object *tr, FILE *out)
{
    const msgpack_object *name = get(tr, DS_ADMIN_KEY_NAME), *ev = get(tr, DS_ADMIN_KEY_EVENTS);
    uint64_t t0 = num(get(tr, DS_ADMIN_KEY_START_NS));
    struct lanes l = { 0 };
    size_t n = 0;

    const msgpack_object *ts = get(tr, DS_ADMIN_KEY_TENANTS);

    /* The array's first entries are the tenants' names: a trace has at least one. */
    if (name == NULL || name->type != MSGPACK_OBJECT_STR || ev == NULL ||
        ev->type != MSGPACK_OBJECT_ARRAY || ts == NULL || ts->type != MSGPACK_OBJECT_ARRAY ||
        ts->via.array.size == 0)
        return -1;
    fputs("{\"traceEvents\":[", out);
    processes(out, name, ts);
    for (uint32_t i = 0; i < ev->via.array.size; i++)
        n += event(out, &ev->via.array.ptr[i], t0, &l) == 0;
    free(l.v);
    metadata(out, tr, name, n);
    return 0;
}
