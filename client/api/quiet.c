#include "quiet.h"

#include "rpc.h"

#include <pthread.h>

static struct {
    pthread_mutex_t lock;
    uint64_t at; /* ds__rpc_calls() when it was true */
    ds_handle stream;
    int all;
} quiet = { .lock = PTHREAD_MUTEX_INITIALIZER };

void ds__quiet_mark(ds_handle h, int all)
{
    pthread_mutex_lock(&quiet.lock);
    quiet.at = ds__rpc_my_last();
    quiet.stream = h;
    quiet.all = all;
    pthread_mutex_unlock(&quiet.lock);
}

int ds__quiet_is(ds_handle h, int all)
{
    int q;

    pthread_mutex_lock(&quiet.lock);
    q = quiet.at != 0 && quiet.at == ds__rpc_calls() && (quiet.all || (!all && quiet.stream == h));
    pthread_mutex_unlock(&quiet.lock);
    return q;
}

int ds__quiet_all(void)
{
    return ds__quiet_is(0, 1);
}
