# Two threads of one PyTorch process: A waits on long GPU work (torch.cuda._sleep, one
# thread spinning on the device, so B's kernels still find SMs); B does add_ + item()
# on another stream.  B's latency shows whether A's wait holds B up.
import statistics, threading, time, torch, json, sys
torch.cuda.init()
sA, sB = torch.cuda.Stream(), torch.cuda.Stream()
x = torch.zeros(1, device="cuda")
torch.cuda.synchronize()
lat, waits, stop = [], [], threading.Event()

def heavy():
    with torch.cuda.stream(sA):
        for _ in range(20):
            torch.cuda._sleep(50_000_000)
            t0 = time.perf_counter(); sA.synchronize(); waits.append(time.perf_counter() - t0)
    stop.set()

def light():
    with torch.cuda.stream(sB):
        while not stop.is_set():
            t0 = time.perf_counter(); x.add_(1); x.item(); lat.append(time.perf_counter() - t0)

ta, tb = threading.Thread(target=heavy), threading.Thread(target=light)
t0 = time.perf_counter(); ta.start(); tb.start(); ta.join(); tb.join()
lat.sort()
print(json.dumps({"b_ops": len(lat), "b_median_us": round(statistics.median(lat) * 1e6, 1),
                  "b_p99_us": round(lat[int(len(lat) * 0.99)] * 1e6, 1), "b_max_ms": round(lat[-1] * 1e3, 2),
                  "a_wait_ms_median": round(statistics.median(waits) * 1e3, 2), "seconds": round(time.perf_counter() - t0, 2),
                  "x": x.item() == len(lat)}))
