"""Two-GPU programs for issue 26, each printing one line of hashes (and, for NCCL, the
transport it chose on stderr): run natively and as a tenant of two servers, one per GPU
(bench/multigpu/run.sh), the lines must be identical.
usage: programs.py NAME, NAME one of:
  to       a tensor made on cuda:0, copied to cuda:1 and back, a product on each device
  p2pbw    device-to-device copy rate between the two GPUs (GB/s; a figure, not compared)
  ddp1     DDP over both GPUs with both ranks in one process (one thread a rank)
  ddp      DDP with one rank a process: run under torchrun --nproc-per-node 2"""
import os, sys, hashlib, time
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
what = sys.argv[1]


def h(a):
    return hashlib.sha256(a.tobytes()).hexdigest()[:16]


def model(torch):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.Tanh(), torch.nn.Linear(256, 4))


def batch(torch, rank, dev):
    g = torch.Generator().manual_seed(100 + rank)
    return (torch.randn(512, 64, generator=g).to(dev),
            torch.randint(0, 4, (512,), generator=g).to(dev))


def train(torch, dist, rank, dev, steps=10):
    net = torch.nn.parallel.DistributedDataParallel(model(torch).to(dev), device_ids=[dev.index])
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x, y = batch(torch, rank, dev)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, [p.detach().cpu().numpy() for p in net.parameters()]


if what == "to":
    import torch
    torch.manual_seed(0)
    a = torch.randn(1 << 20, device="cuda:0")
    b = a.to("cuda:1")
    m0 = torch.randn(512, 512, device="cuda:0")
    m1 = m0.to("cuda:1")
    p0, p1 = (m0 @ m0).cpu(), (m1 @ m1).cpu()
    back = (b * 2).to("cuda:0")
    torch.cuda.synchronize(0); torch.cuda.synchronize(1)
    same = torch.equal(a.cpu(), b.cpu()) and torch.equal((a * 2).cpu(), back.cpu())
    print("to", same, h(b.cpu().numpy()), h(p0.numpy()), h(p1.numpy()))
elif what == "p2pbw":
    import torch
    n = 256 << 20
    a = torch.empty(n, dtype=torch.uint8, device="cuda:0")
    b = torch.empty(n, dtype=torch.uint8, device="cuda:1")
    print("can access peer", torch.cuda.can_device_access_peer(0, 1), file=sys.stderr)
    for d, s in ((b, a), (a, b)):
        d.copy_(s); torch.cuda.synchronize(0); torch.cuda.synchronize(1)
        t = time.perf_counter()
        for _ in range(10):
            d.copy_(s)
        torch.cuda.synchronize(0); torch.cuda.synchronize(1)
        print("p2pbw %s->%s %.1f GB/s" % (s.device, d.device, 10 * n / (time.perf_counter() - t) / 1e9))
elif what == "ddp1":
    import threading, torch, torch.distributed as dist
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(29600 + os.getpid() % 1000))
    store = dist.HashStore()
    out = {}

    def rank_main(r):
        pg = dist.ProcessGroupNCCL(dist.PrefixStore("ddp1", store), r, 2)
        dev = torch.device("cuda", r)
        torch.cuda.set_device(dev)
        t = torch.full((1 << 16,), float(r + 1), device=dev)
        pg.allreduce([t]).wait()
        out[r] = float(t[0])
    ts = [threading.Thread(target=rank_main, args=(r,)) for r in (0, 1)]
    [t.start() for t in ts]; [t.join() for t in ts]
    print("ddp1", out.get(0), out.get(1))
elif what == "ddp":
    import numpy as np, torch, torch.distributed as dist
    rank = int(os.environ["RANK"])
    dev = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl")
    t = torch.arange(1 << 16, device=dev, dtype=torch.float32) * (rank + 1)
    dist.all_reduce(t)
    losses, params = train(torch, dist, rank, dev)
    dist.destroy_process_group()
    if rank == 0:
        print("ddp", h(t.cpu().numpy()), h(np.array(losses)), h(np.concatenate([p.ravel() for p in params])))
else:
    sys.exit("unknown program %s" % what)
