#include "waiters.h"

#include "control_int.h"

#include <stdio.h>
#include <stdlib.h>

struct ds_waiter {
    struct listener *l;
    uv_stream_t *client;
    char name[DS_NAME_MAX + 1];
    int vouched;
    uint32_t isolation;
    unsigned group;
    struct ds_waiter *next;
};

int ds__waiters_add(struct ds_waiter **list, struct listener *l, uv_stream_t *client,
                    const char *name, int vouched, uint32_t isolation, unsigned group)
{
    struct ds_waiter *w = calloc(1, sizeof(*w));

    if (w == NULL)
        return -1;
    w->l = l;
    w->client = client;
    w->vouched = vouched;
    w->isolation = isolation;
    w->group = group;
    snprintf(w->name, sizeof(w->name), "%s", name);
    while (*list != NULL)
        list = &(*list)->next;
    *list = w;
    return 0;
}

int ds__waiters_serve(struct ds_waiter **list, int own)
{
    struct ds_waiter *w = *list;
    int n = 0;

    *list = NULL;
    for (; w != NULL; n++) {
        struct ds_waiter *next = w->next;

        ds__intake_serve(w->l, w->client, w->name, w->vouched,
                         own ? DS_ISO_OWN : w->isolation, own ? 0 : w->group);
        free(w);
        w = next;
    }
    return n;
}
