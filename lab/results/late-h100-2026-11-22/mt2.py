# As mt.py, but B's loop is one of: add (add_ + stream synchronize), item, query.
import statistics, threading, time, torch, json, sys
mode = sys.argv[1]
torch.cuda.init()
sA, sB = torch.cuda.Stream(), torch.cuda.Stream()
x = torch.zeros(1, device="cuda")
torch.cuda.synchronize()
lat, stop = [], threading.Event()
def heavy():
    with torch.cuda.stream(sA):
        for _ in range(8):
            torch.cuda._sleep(50_000_000); sA.synchronize()
    stop.set()
def light():
    with torch.cuda.stream(sB):
        while not stop.is_set():
            t0 = time.perf_counter()
            if mode == "add": x.add_(1); sB.synchronize()
            elif mode == "item": x.item()
            else: sB.query()
            lat.append(time.perf_counter() - t0)
ta, tb = threading.Thread(target=heavy), threading.Thread(target=light)
t0 = time.perf_counter(); ta.start(); tb.start(); ta.join(); tb.join()
lat.sort()
print(mode, json.dumps({"ops": len(lat), "median_us": round(statistics.median(lat) * 1e6, 1) if lat else None,
                  "max_ms": round(lat[-1] * 1e3, 2) if lat else None, "seconds": round(time.perf_counter() - t0, 2)}))
