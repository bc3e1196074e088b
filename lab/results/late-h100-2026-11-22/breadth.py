import sys, hashlib
what = sys.argv[1]
def h(a):
    import numpy as np
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:16]
if what == "cupy":
    import cupy as cp, numpy as np
    x = cp.arange(1 << 20, dtype=cp.float32)
    y = cp.sin(x) * 2 + 1
    a = cp.random.RandomState(1).rand(256, 256, dtype=cp.float32)
    m = a @ a
    f = cp.fft.fft(cp.arange(1024, dtype=cp.complex64))
    print("cupy", h(cp.asnumpy(y)), h(cp.asnumpy(m)), h(cp.asnumpy(f)))
elif what == "triton":
    import torch, triton, triton.language as tl
    @triton.jit
    def add(x, y, o, n, B: tl.constexpr):
        i = tl.program_id(0) * B + tl.arange(0, B)
        tl.store(o + i, tl.load(x + i, mask=i < n) + tl.load(y + i, mask=i < n), mask=i < n)
    x = torch.arange(4096, device="cuda", dtype=torch.float32); y = x * 3; o = torch.empty_like(x)
    add[(4,)](x, y, o, 4096, B=1024)
    print("triton", h(o.cpu().numpy()))
elif what == "compile":
    import torch
    f = torch.compile(lambda t: torch.sin(t) * torch.cos(t) + t * 2)
    x = torch.linspace(0, 10, 1 << 16, device="cuda")
    print("compile", h(f(x).cpu().numpy()))
elif what == "jax":
    import jax, jax.numpy as jnp
    d = jax.devices()
    a = jnp.arange(65536, dtype=jnp.float32).reshape(256, 256) / 65536
    f = jax.jit(lambda x: jnp.tanh(x @ x) * 2)
    g = jax.grad(lambda x: jnp.sum(jnp.sin(x @ x)))
    print("jax", d[0].platform, h(jax.device_get(f(a))), h(jax.device_get(g(a))))
elif what == "expand":
    import os, torch
    assert "expandable_segments:True" in os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
    torch.manual_seed(0)
    outs = []
    keep = []
    for i in range(40):
        n = 1 << (10 + i % 12)
        t = torch.randn(n, device="cuda")
        keep.append(t * 2)
        if i % 3 == 0:
            keep.pop(0)
        outs.append(float(t.sum()))
    big = torch.randn(4096, 4096, device="cuda")
    m = big @ big
    print("expand", h(torch.tensor(outs).numpy()), h(m.cpu().numpy()), torch.cuda.memory_reserved() >> 20)
elif what == "cupy2":
    import cupy as cp, numpy as np
    import cupyx.scipy.sparse as sp, cupyx.scipy.sparse.linalg as spl
    rs = cp.random.RandomState(3)
    a = rs.rand(128, 128, dtype=cp.float64) + cp.eye(128) * 128
    b = rs.rand(128, dtype=cp.float64)
    sol = cp.linalg.solve(a, b)              # cuSOLVER getrf/getrs
    w = cp.linalg.eigh(a + a.T)[0]           # cuSOLVER syevd
    s = sp.csr_matrix(a * (a > 128.5))
    y = s @ b                                # cuSPARSE spmv
    srt = cp.sort(rs.rand(1 << 16, dtype=cp.float32))
    red = cp.asnumpy(cp.cumsum(cp.arange(1 << 16, dtype=cp.int64)))
    st = cp.cuda.Stream(non_blocking=True)
    with st:
        z = cp.arange(1 << 18, dtype=cp.float32) * 3
    st.synchronize()
    print("cupy2", h(cp.asnumpy(sol)), h(cp.asnumpy(w)), h(cp.asnumpy(y)), h(cp.asnumpy(srt)), h(red), h(cp.asnumpy(z)))
elif what == "numba":
    import numpy as np
    from numba import cuda
    @cuda.jit
    def saxpy(o, x, y, a):
        i = cuda.grid(1)
        if i < o.size:
            o[i] = a * x[i] + y[i]
    x = np.arange(1 << 16, dtype=np.float32); y = x * 0.5
    dx, dy = cuda.to_device(x), cuda.to_device(y); do = cuda.device_array_like(x)
    saxpy[256, 256](do, dx, dy, np.float32(2.5))
    print("numba", h(do.copy_to_host()))
elif what == "loader":
    import torch
    from torch.utils.data import DataLoader, TensorDataset
    torch.manual_seed(0)
    ds = TensorDataset(torch.randn(512, 64), torch.arange(512))
    dl = DataLoader(ds, batch_size=32, num_workers=2, pin_memory=True)
    lin = torch.nn.Linear(64, 8).cuda()
    outs = []
    for xb, yb in dl:
        outs.append(lin(xb.cuda(non_blocking=True)).sum().item())
    print("loader", h(torch.tensor(outs).numpy()))
elif what == "mp":
    import torch, torch.multiprocessing as mp
    def child(q, r):
        t = q.get()
        r.put(float(t.sum()))
    if __name__ == "__main__":
        ctx = mp.get_context("spawn")
        q, r = ctx.Queue(), ctx.Queue()
        p = ctx.Process(target=child, args=(q, r))
        p.start()
        t = torch.arange(1000, device="cuda", dtype=torch.float32)
        q.put(t)
        print("mp", r.get(timeout=120))
        p.join()
