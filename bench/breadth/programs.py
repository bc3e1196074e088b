"""Programs users bring, each printing one line of hashes of what it computed: run once
natively and once through detshare, the lines must be identical (bench/breadth/run.sh).
usage: programs.py NAME, NAME one of cupy cupy2 cupyraw triton tritonauto compile
compiletrain jax numba resnet resnetdet loader mp expand bf16 bf16train cudagraph sdpa
nccl lstm fp8 sparse jaxsolve.  The program's warnings go to
stderr; only the last stdout line is compared."""
import os, sys, hashlib
# cuBLAS's deterministic workspaces, for the training programs.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
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
    # numba-cuda on the GPU box still registers np.row_stack, which numpy 2 removed: the
    # import fails natively there.  vstack is what row_stack was.
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack
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
elif what in ("resnet", "resnetdet"):
    # As issue 7 asks: cudnn.benchmark, channels_last, bf16 autocast.  cuDNN's benchmark
    # picks algorithms by timing them, so two native runs may differ (they did on the
    # H100, run 102); run.sh says so.  resnetdet also asks cuDNN for deterministic
    # algorithms only, which narrows what the timing can choose from.
    import torch, torchvision, numpy as np
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.deterministic = what == "resnetdet"
    m = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    x = torch.randn(32, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (32,), device="cuda")
    losses = []
    for _ in range(5):
        opt.zero_grad()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.float().item())
    print(what, h(np.array(losses)))
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
elif what == "bf16":
    # A Llama-style model in bf16, made from a config with a fixed seed (nothing to
    # download): greedy generation of 24 tokens, and the logits of the last step.
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=32000, hidden_size=512, intermediate_size=1408,
                      num_hidden_layers=6, num_attention_heads=8, num_key_value_heads=4)
    m = LlamaForCausalLM(cfg).to("cuda", torch.bfloat16).eval()
    ids = torch.randint(0, 32000, (2, 32), device="cuda")
    with torch.no_grad():
        out = m.generate(ids, max_new_tokens=24, do_sample=False, pad_token_id=0)
        logits = m(out).logits[:, -1].float()
    print("bf16", h(out.cpu().numpy()), h(logits.cpu().numpy()))
elif what == "cupyraw":
    import cupy as cp
    k = cp.RawKernel(r"""
    extern "C" __global__ void axpb(const float *x, float *y, float a, float b, int n) {
        int i = blockDim.x * blockIdx.x + threadIdx.x;
        if (i < n) y[i] = a * x[i] + b;
    }""", "axpb")
    x = cp.linspace(0, 1, 1 << 16, dtype=cp.float32); y = cp.empty_like(x)
    k(((1 << 16) // 256,), (256,), (x, y, cp.float32(3), cp.float32(1), cp.int32(1 << 16)))
    print("cupyraw", h(cp.asnumpy(y)))
elif what == "tritonauto":
    # Autotuning times each configuration with events; the result is the same whichever wins.
    import torch, triton, triton.language as tl
    @triton.autotune(configs=[triton.Config({"B": 256}, num_warps=2),
                              triton.Config({"B": 1024}, num_warps=4)], key=["n"])
    @triton.jit
    def scale(x, o, n, B: tl.constexpr):
        i = tl.program_id(0) * B + tl.arange(0, B)
        m = i < n
        tl.store(o + i, tl.load(x + i, mask=m) * 3.0 + 1.0, mask=m)
    x = torch.linspace(0, 1, 1 << 20, device="cuda"); o = torch.empty_like(x)
    scale[lambda meta: (triton.cdiv(x.numel(), meta["B"]),)](x, o, x.numel())
    print("tritonauto", h(o.cpu().numpy()))
elif what == "compiletrain":
    import numpy as np, torch
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(),
                              torch.nn.Linear(512, 10)).cuda()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    loss_of = torch.compile(lambda x, y: torch.nn.functional.cross_entropy(net(x), y))
    x = torch.randn(64, 256, device="cuda"); y = torch.randint(0, 10, (64,), device="cuda")
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = loss_of(x, y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    print("compiletrain", h(np.array(losses)))
elif what == "bf16train":
    # Training steps of the bf16 Llama-style model with SDPA attention (its math kernels:
    # the fused ones' backward passes are not deterministic natively).
    import numpy as np, torch
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.backends.cuda.enable_flash_sdp(False)
    torch.backends.cuda.enable_mem_efficient_sdp(False)
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=32000, hidden_size=512, intermediate_size=1408,
                      num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=4,
                      attn_implementation="sdpa")
    m = LlamaForCausalLM(cfg).to("cuda", torch.bfloat16).train()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
    ids = torch.randint(0, 32000, (4, 128), device="cuda")
    losses = []
    for _ in range(4):
        opt.zero_grad()
        out = m(input_ids=ids, labels=ids)
        out.loss.backward()
        opt.step()
        losses.append(out.loss.float().item())
    print("bf16train", h(np.array(losses)))
elif what == "cudagraph":
    # torch.compile's "reduce-overhead" mode replays CUDA graphs (cudagraph trees, on a
    # private memory pool); a graph captured by hand replays with new inputs.
    import numpy as np, torch
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.ReLU(),
                              torch.nn.Linear(256, 16)).cuda().eval()
    f = torch.compile(net, mode="reduce-overhead")
    xs = [torch.randn(32, 128, device="cuda") for _ in range(6)]
    with torch.no_grad():
        outs = [f(x).clone() for x in xs]
        static = torch.zeros(32, 128, device="cuda")
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            net(static)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = net(static)
        for x in xs:
            static.copy_(x)
            g.replay()
            outs.append(y.clone())
    print("cudagraph", h(torch.cat(outs).cpu().numpy()))
elif what == "sdpa":
    # Fused attention forward passes in bf16: flash, memory-efficient, causal and with a
    # mask (their forward passes are deterministic; the backward ones are not).
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    torch.manual_seed(0)
    q, k, v = (torch.randn(4, 16, 1024, 64, device="cuda", dtype=torch.bfloat16)
               for _ in range(3))
    mask = torch.rand(1024, 1024, device="cuda") > 0.1
    outs = []
    with torch.no_grad():
        for be in (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION):
            with sdpa_kernel(be):
                outs.append(torch.nn.functional.scaled_dot_product_attention(q, k, v))
                outs.append(torch.nn.functional.scaled_dot_product_attention(
                    q, k, v, is_causal=True))
        with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
            outs.append(torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask))
    print("sdpa", *(h(o.float().cpu().numpy()) for o in outs))
elif what == "nccl":
    # Data-parallel training as launched with torchrun, on one GPU: NCCL's communicator,
    # its all-reduce and DDP's bucketed gradients.
    import numpy as np, torch, torch.distributed as dist
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(29500 + os.getpid() % 1000))
    dist.init_process_group("nccl", rank=0, world_size=1)
    torch.manual_seed(0)
    t = torch.arange(1 << 16, device="cuda", dtype=torch.float32)
    dist.all_reduce(t)
    net = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.Tanh(),
                            torch.nn.Linear(128, 4)).cuda(), device_ids=[0])
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x = torch.randn(256, 64, device="cuda"); y = torch.randint(0, 4, (256,), device="cuda")
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    dist.destroy_process_group()
    print("nccl", h(t.cpu().numpy()), h(np.array(losses)))
elif what == "lstm":
    # cuDNN's RNN kernels, forward and backward, under PyTorch's deterministic settings.
    import numpy as np, torch
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(0)
    rnn = torch.nn.LSTM(64, 128, num_layers=2, batch_first=True).cuda()
    x = torch.randn(16, 50, 64, device="cuda")
    out, _ = rnn(x)
    out.pow(2).mean().backward()
    print("lstm", h(out.detach().cpu().numpy()), h(rnn.weight_hh_l0.grad.cpu().numpy()))
elif what == "fp8":
    # FP8 (e4m3) GEMMs with per-tensor scales, as FP8 inference uses them (Hopper's FP8
    # tensor cores, through cuBLASLt).
    import torch
    torch.manual_seed(0)
    a = torch.randn(512, 1024, device="cuda")
    b = torch.randn(256, 1024, device="cuda")
    one = torch.tensor(1.0, device="cuda")
    a8, b8 = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
    c = torch._scaled_mm(a8, b8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    print("fp8", h(c.float().cpu().numpy()))
elif what == "sparse":
    # issue 29: a CSR x dense product (cuSPARSE SpMM) that once printed different bytes
    # through detshare than natively; bench/breadth/repeat.sh runs it many times each way.
    import torch
    torch.manual_seed(0)
    a = torch.rand(1024, 1024)
    a[a < 0.98] = 0
    s = a.cuda().to_sparse_csr()
    b = torch.rand(1024, 64).cuda()
    c = s @ b
    g = torch.rand(1024, 1024, device="cuda")
    g[g < 0.98] = 0
    d = g.to_sparse_csr() @ torch.rand(1024, 64, device="cuda")
    print("sparse", h(c.cpu().numpy()), h(d.cpu().numpy()))
elif what == "jaxsolve":
    # issue 29: XLA's triangular solve, float64 (failed through detshare: "Unable to launch
    # triangular solve"); eigh of the same matrix worked.
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    # JAX falls back to the CPU when it finds no GPU, with other digests: a run through a
    # server that did not start must fail, not differ (run 131).
    assert jax.default_backend() == "gpu", jax.default_backend()
    k = jax.random.normal(jax.random.PRNGKey(0), (128, 128), dtype=jnp.float64)
    a = k @ k.T + 128 * jnp.eye(128, dtype=jnp.float64)
    b = jnp.arange(128, dtype=jnp.float64)
    print("jaxsolve", h(jax.device_get(jnp.linalg.solve(a, b))), h(jax.device_get(jnp.linalg.eigh(a)[0])))
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
