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
