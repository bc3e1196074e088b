#include "quiet.h"

#include "rpc.h"

#include <pthread.h>

static struct {
    pthread_mutex_t lock;
    uint64_t at; /* ds__rpc_calls() when it was true */
    ds_handle stream;
    int all;
    int dev; /* the device whose streams these are */
} quiet = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* The device a call naming stream or context h goes to: a handle's own, else (CUDA's
 * stream numbers) the current context's. */
static int device_of(ds_handle h)
{
    return (h >> 56) != 0 ? ds__route_dev_of(h) : ds__route_current();
}

void ds__quiet_mark(ds_handle h, int all)
{
    pthread_mutex_lock(&quiet.lock);
    quiet.at = ds__rpc_my_last();
    quiet.stream = h;
    quiet.all = all;
    quiet.dev = ds__route_last();
    pthread_mutex_unlock(&quiet.lock);
}

int ds__quiet_is(ds_handle h, int all)
{
    int q;

    pthread_mutex_lock(&quiet.lock);
    q = quiet.at != 0 && quiet.at == ds__rpc_calls() && quiet.dev == device_of(h) &&
        (quiet.all || (!all && quiet.stream == h));
    pthread_mutex_unlock(&quiet.lock);
    return q;
}
