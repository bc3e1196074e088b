# Stream-ordered allocator users: PyTorch's cudaMallocAsync backend (set through
# PYTORCH_CUDA_ALLOC_CONF by the caller) and CuPy's MemoryAsyncPool.  Prints a hash of results.
import hashlib, sys
what = sys.argv[1]
h = hashlib.sha256()
if what == "torch":
    import torch
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10)).cuda()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    x = torch.randn(256, 512, device="cuda"); y = torch.randint(0, 10, (256,), device="cuda")
    for i in range(50):
        opt.zero_grad(); loss = torch.nn.functional.cross_entropy(m(x), y); loss.backward(); opt.step()
        h.update(loss.detach().cpu().numpy().tobytes())
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        z = torch.randn(4096, 4096, device="cuda") @ torch.randn(4096, 4096, device="cuda")
    s.synchronize()
    h.update(z.sum().cpu().numpy().tobytes())
    print("backend", torch.cuda.get_allocator_backend(), "loss", float(loss), "hash", h.hexdigest()[:16])
else:
    import cupy
    cupy.cuda.set_allocator(cupy.cuda.MemoryAsyncPool().malloc)
    cupy.random.seed(0)
    for i in range(20):
        a = cupy.random.rand(1024, 1024, dtype=cupy.float32)
        b = (a @ a.T).sum(axis=0)
        h.update(cupy.asnumpy(b).tobytes())
    print("cupy async pool hash", h.hexdigest()[:16])
