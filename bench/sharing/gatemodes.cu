// Host gates against gates relayed by a resident control kernel (relay.cuh), in one
// process, with no server: which way should detshare's gates go (issue 8, item 4)?
//   none   launches only, no waits: what a launch costs here
//   host   before each kernel the stream waits (cuStreamWaitValue32) on a word in mapped
//          host memory, as the executor's gates do today (server/backend/cuda/cuda_gate.c)
//   relay  the stream waits on a word in device memory, which ds_rck_relay copies from
//          the host word
// Part 1, the gate open: KERNELS short kernels back to back, launches per second.
// Part 2: the same launches while a host thread closes and opens the gate every
// PERIOD_US; each kernel records its start (gputime.cuh puts it on the host clock).
// For each close: how long after it kernels still started (hold); for each open: how
// long until the next kernel started (resume); and, free of the clock offset these need,
// the gaps in the kernels' start times against the closed intervals (gaps).  Prints one
// JSON object; relay then says whether memory can be freed while the resident kernel runs.
// usage: gatemodes none|host|relay [KERNELS [PERIOD_US]]
#include "relay.cuh"
#include "gputime.cuh"

#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <unistd.h>
#include <vector>

__global__ void stamp(unsigned long long *starts, int i)
{
    starts[i] = gpu_now();
}

struct gate {
    const char *mode;
    CUdeviceptr wait_on; // 0: no waits
    cudaStream_t work;
};

static int launch_all(const gate &g, unsigned long long *starts, int n)
{
    for (int i = 0; i < n; i++) {
        if (g.wait_on &&
            cuStreamWaitValue32((CUstream)g.work, g.wait_on, 0, CU_STREAM_WAIT_VALUE_EQ) !=
                CUDA_SUCCESS)
            return -1;
        stamp<<<1, 1, 0, g.work>>>(starts, i);
    }
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}

static double pct(std::vector<double> v, double p)
{
    if (v.empty())
        return -1;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, (size_t)(p * (double)v.size()))];
}

struct event {
    long long at;
    unsigned closed;
};

// The toggler: every period, flip the host word, noting the time just before the store.
static void toggle(volatile unsigned *word, long long period_us, std::atomic<int> *done,
                   std::vector<event> *events)
{
    unsigned closed = 0;

    while (!done->load()) {
        std::this_thread::sleep_for(std::chrono::microseconds(period_us));
        closed ^= 1;
        events->push_back({host_ns(), closed});
        *word = closed;
    }
    if (closed) {
        events->push_back({host_ns(), 0});
        *word = 0;
    }
}

static void latencies(const std::vector<event> &ev, const std::vector<long long> &starts,
                      long long edge)
{
    std::vector<double> hold, resume;
    size_t after_max = 0;

    for (size_t i = 0; i + 1 < ev.size(); i++) {
        long long t = ev[i].at, next = ev[i + 1].at;
        long long end = ev[i].closed ? next - edge : next;
        auto lo = std::lower_bound(starts.begin(), starts.end(), t);
        auto hi = std::lower_bound(starts.begin(), starts.end(), end);

        if (t < starts.front() || next > starts.back() || end <= t)
            continue;
        if (ev[i].closed) {
            hold.push_back(lo == hi ? 0.0 : (double)(*(hi - 1) - t) / 1e3);
            after_max = std::max(after_max, (size_t)(hi - lo));
        } else if (lo != hi) {
            resume.push_back((double)(*lo - t) / 1e3);
        }
    }
    printf("\"closes\": %zu, \"hold_us_p50\": %.2f, \"hold_us_p90\": %.2f, "
           "\"hold_us_p99\": %.2f, \"hold_us_max\": %.2f, \"kernels_after_close_max\": %zu, "
           "\"opens\": %zu, \"resume_us_p50\": %.2f, \"resume_us_p90\": %.2f, "
           "\"resume_us_p99\": %.2f, \"resume_us_max\": %.2f",
           hold.size(), pct(hold, 0.5), pct(hold, 0.9), pct(hold, 0.99), pct(hold, 1.0),
           after_max, resume.size(), pct(resume, 0.5), pct(resume, 0.9), pct(resume, 0.99),
           pct(resume, 1.0));
}

// The same question without the clock offset: a gate that holds leaves a gap in the
// device's own start times for each closed interval, about as long as the interval (the
// difference is hold - resume).  Counts the gaps longer than half a period against the
// closed intervals of at least that length within the kernels' span (the span widened by
// `margin` on the host clock, whose offset from the device's is what is not trusted; the
// toggler's last close, opened at once when the launches end, is not one).
static void gaps(const std::vector<event> &ev, const std::vector<long long> &starts,
                 long long margin, long long period_ns)
{
    std::vector<double> closed, gap;
    long long lo = starts.front() - margin, hi = starts.back() + margin;

    for (size_t i = 0; i + 1 < ev.size(); i++)
        if (ev[i].closed && ev[i].at > lo && ev[i + 1].at < hi &&
            ev[i + 1].at - ev[i].at >= period_ns / 2)
            closed.push_back((double)(ev[i + 1].at - ev[i].at));
    for (size_t j = 0; j + 1 < starts.size(); j++)
        if (starts[j + 1] - starts[j] > period_ns / 2)
            gap.push_back((double)(starts[j + 1] - starts[j]));
    printf(", \"closed_intervals\": %zu, \"closed_us_p50\": %.2f, \"gaps\": %zu, "
           "\"gap_us_p50\": %.2f, \"gap_us_min\": %.2f",
           closed.size(), pct(closed, 0.5) / 1e3, gap.size(), pct(gap, 0.5) / 1e3,
           pct(gap, 0.0) / 1e3);
}

// Whether cuMemFree returns while the resident kernel runs, or waits for it (the driver
// may synchronise the context to free): the executor frees tenants' memory at any time.
// Prints one line; a watchdog prints the other answer and ends the process after 5 s.
static void free_beside_resident()
{
    std::thread([] {
        std::this_thread::sleep_for(std::chrono::seconds(5));
        printf("{\"free_beside_resident\": \"hung\"}\n");
        fflush(stdout);
        _exit(3);
    }).detach();
    void *p;
    cudaError_t rc = cudaMalloc(&p, 1 << 20);
    if (rc == cudaSuccess)
        rc = cudaFree(p);
    printf("{\"free_beside_resident\": \"%s\"}\n", cudaGetErrorName(rc));
    fflush(stdout);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "host";
    int n = argc > 2 ? atoi(argv[2]) : 200000;
    long long period = argc > 3 ? atoll(argv[3]) : 2000, offset, spread;
    unsigned *host_word, *dev_word;
    unsigned long long *starts;
    cudaStream_t relay;
    gate g = {mode, 0, 0};

    if (strcmp(mode, "none") && strcmp(mode, "host") && strcmp(mode, "relay")) {
        fprintf(stderr, "usage: gatemodes none|host|relay [KERNELS [PERIOD_US]]\n");
        return 2;
    }
    if (gpu_clock_offset(20, &offset, &spread) != 0 ||
        cudaHostAlloc(&host_word, sizeof(*host_word), cudaHostAllocMapped) != cudaSuccess ||
        cudaMalloc(&dev_word, sizeof(*dev_word)) != cudaSuccess ||
        cudaMalloc(&starts, n * sizeof(*starts)) != cudaSuccess ||
        cudaMemset(dev_word, 0, sizeof(*dev_word)) != cudaSuccess ||
        cudaStreamCreateWithFlags(&g.work, cudaStreamNonBlocking) != cudaSuccess ||
        cudaStreamCreateWithFlags(&relay, cudaStreamNonBlocking) != cudaSuccess ||
        cudaDeviceSynchronize() != cudaSuccess) {
        fprintf(stderr, "gatemodes: cannot set up the device\n");
        return 1;
    }
    *(volatile unsigned *)host_word = 0;
    // Load `stamp` before the resident kernel starts: with lazy loading (the default
    // since CUDA 12.2) its first launch would load it then, which may wait for the
    // context's kernels to finish, and the resident one never does (CUDA C Programming
    // Guide, "Lazy Loading", concurrent execution).
    stamp<<<1, 1, 0, g.work>>>(starts, 0);
    if (cudaStreamSynchronize(g.work) != cudaSuccess) {
        fprintf(stderr, "gatemodes: cannot run a kernel\n");
        return 1;
    }
    if (!strcmp(mode, "host"))
        g.wait_on = (CUdeviceptr)host_word;
    if (!strcmp(mode, "relay")) {
        g.wait_on = (CUdeviceptr)dev_word;
        ds_rck_relay<<<1, 1, 0, relay>>>(host_word, dev_word);
    }

    // Part 1: the gate stays open.  One untimed pass first loads the module and warms up.
    // Progress goes to stderr, so that a run that hangs says where.
    fprintf(stderr, "gatemodes %s: set up, part 1\n", mode);
    if (launch_all(g, starts, n / 10) != 0 || cudaStreamSynchronize(g.work) != cudaSuccess)
        return 1;
    fprintf(stderr, "gatemodes %s: warm\n", mode);
    long long t0 = host_ns();
    if (launch_all(g, starts, n) != 0 || cudaStreamSynchronize(g.work) != cudaSuccess)
        return 1;
    double rate = n / ((double)(host_ns() - t0) / 1e9);

    printf("{\"mode\": \"%s\", \"kernels\": %d, \"period_us\": %lld, \"launches_per_s\": %.0f, "
           "\"clock_spread_us\": %.2f", mode, n, period, rate, spread / 1e3);
    fflush(stdout);
    if (g.wait_on) {
        std::atomic<int> done(0);
        std::vector<event> ev;
        std::vector<unsigned long long> raw(n);
        std::vector<long long> st(n);

        fprintf(stderr, "gatemodes %s: part 2\n", mode);
        std::thread toggler(toggle, (volatile unsigned *)host_word, period, &done, &ev);
        int rc = launch_all(g, starts, n);
        done.store(1);
        toggler.join();
        fprintf(stderr, "gatemodes %s: part 2 submitted\n", mode);
        if (rc != 0 || cudaStreamSynchronize(g.work) != cudaSuccess)
            return 1;
        cudaMemcpy(raw.data(), starts, n * sizeof(*starts), cudaMemcpyDeviceToHost);
        for (int i = 0; i < n; i++)
            st[i] = (long long)raw[i] - offset;
        std::sort(st.begin(), st.end());
        printf(", ");
        // A kernel starting within the calibration's error before an open is the open's.
        latencies(ev, st, std::max(5000ll, 10 * spread));
        gaps(ev, st, period * 1000, period * 1000);
    }
    printf("}\n");
    fflush(stdout);
    if (!strcmp(mode, "relay"))
        free_beside_resident();
    *(volatile unsigned *)host_word = DS_RCK_QUIT;
    return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
