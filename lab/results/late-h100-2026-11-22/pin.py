# Pinned 256 MiB copies through PyTorch, as bench/overhead's torch_bench times them.
import statistics, time, torch, json
M = 256 << 20
def gbps(f, reps=5):
    t = []
    for i in range(reps + 1):
        torch.cuda.synchronize(); t0 = time.perf_counter(); f(); torch.cuda.synchronize()
        if i: t.append(time.perf_counter() - t0)
    return round(M / statistics.median(t) / 1e9, 2)
dev = torch.ones(M, dtype=torch.uint8, device="cuda")
a = torch.ones(M, dtype=torch.uint8).pin_memory()
b = torch.empty(M, dtype=torch.uint8, pin_memory=True); b.fill_(1)
r = {"pin_memory_h2d": gbps(lambda: a.to("cuda")), "pin_memory_d2h": gbps(lambda: a.copy_(dev)),
     "empty_pinned_h2d": gbps(lambda: b.to("cuda")), "empty_pinned_d2h": gbps(lambda: b.copy_(dev)),
     "h2d_into_prealloc": gbps(lambda: dev.copy_(a))}
hp = {l.split(":")[0]: l.split(":")[1].strip() for l in open("/proc/meminfo") if "Huge" in l or "Shmem" in l}
print(json.dumps({**r, "meminfo": hp}))
