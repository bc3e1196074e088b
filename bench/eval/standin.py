"""bench/eval's Python stand-ins for the sim (which runs no PyTorch): the llm and det jobs'
own loops (llm.py, det.py) over the CUDA driver API through ctypes, so that the sim runs
the same scheduling and comparison code as the GPU does, with kernels in place of the
model.

    standin.py llm SECS FATBIN [KEY=VALUE...]     llm.py's serving loop; a prefill is
        blocks_per_token blocks per prompt token (one kernel), a decode step one kernel
        of decode_blocks + blocks_per_row blocks per running request, each block spinning
        NS ns (the sim times a kernel by its grid)
    standin.py det SECS FATBIN [KEY=VALUE...]      det.py's trials: each trial's inputs
        go to the device and back (a copy in, a kernel, a copy out) before numpy computes
        the LM head and the training on the host (numpy on one thread: deterministic
        itself), so the bytes compared are the ones that went through detshare

FATBIN: latflood's kernel (BUILD/bench/eval/spin.fatbin).  The driver is libcuda.so.1 as
the loader finds it: detshare's client under the harness.  Output: as workloads.py's.
"""

import ctypes
import hashlib
import json
import os
import subprocess
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy: one summation order

import det  # noqa: E402
import llm  # noqa: E402
from workloads import WARM_S, Sync  # noqa: E402

NS = 4000


class Driver:
    """The few driver calls the stand-ins make; RuntimeError on any error."""

    def __init__(self, fatbin):
        self.cu = ctypes.CDLL("libcuda.so.1")
        ctx, dev, mod, self.f = ctypes.c_void_p(), ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p()
        with open(fatbin, "rb") as f:
            self.image = ctypes.create_string_buffer(f.read())
        self.call("cuInit", 0)
        self.call("cuDeviceGet", ctypes.byref(dev), 0)
        self.call("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev)
        self.call("cuCtxSetCurrent", ctx)
        self.call("cuModuleLoadData", ctypes.byref(mod), self.image)
        self.call("cuModuleGetFunction", ctypes.byref(self.f), mod, b"spin")
        self.ns = ctypes.c_ulonglong(NS)
        self.args = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.byref(self.ns), ctypes.c_void_p))

    def call(self, name, *args):
        rc = getattr(self.cu, name)(*args)
        if rc != 0:
            raise RuntimeError("%s: CUresult %d" % (name, rc))

    def kernel(self, blocks):
        self.call("cuLaunchKernel", self.f, ctypes.c_uint(max(1, int(blocks))), 1, 1, 256, 1, 1,
                  0, None, self.args, None)

    def sync(self):
        self.call("cuStreamSynchronize", None)

    def alloc(self, size):
        p = ctypes.c_ulonglong()
        self.call("cuMemAlloc_v2", ctypes.byref(p), ctypes.c_size_t(size))
        return p

    def round_trip(self, dptr, data):
        """data (bytes) to the device, a kernel, and back: the bytes the device returned."""
        buf = ctypes.create_string_buffer(data, len(data))
        self.call("cuMemcpyHtoD_v2", dptr, buf, ctypes.c_size_t(len(data)))
        self.kernel(264)
        out = ctypes.create_string_buffer(len(data))
        self.call("cuMemcpyDtoH_v2", out, dptr, ctypes.c_size_t(len(data)))
        return out.raw


class KernelEngine:
    """llm.py's engine as kernels whose grids grow with the work."""

    def __init__(self, drv, kw):
        self.drv = drv
        self.per_token = int(kw.get("blocks_per_token", 800))
        self.decode_blocks = int(kw.get("decode_blocks", 26400))
        self.per_row = int(kw.get("blocks_per_row", 2640))

    def prefill(self, row0, lens):
        self.drv.kernel(self.per_token * sum(lens))
        self.drv.sync()

    def decode(self, n):
        self.drv.kernel(self.decode_blocks + self.per_row * n)
        self.drv.sync()

    def move(self, src, dst):
        pass  # the stand-in keeps no cache


class NumpyCompute:
    """det.py's computations on the host, from bytes that went through the device."""

    def __init__(self, drv, slices, tokens=16, hidden=128, vocab=2048, batch=32, width=64):
        import numpy as np

        self.np, self.drv, self.k = np, drv, slices
        rng = np.random.default_rng(1)
        self.x = rng.standard_normal((tokens, hidden), dtype=np.float32)
        self.w = (rng.standard_normal((hidden, vocab), dtype=np.float32) * 0.02).astype(np.float32)
        self.data = rng.standard_normal((batch, width), dtype=np.float32)
        self.target = rng.standard_normal((batch, 1), dtype=np.float32)
        self.w0 = [(rng.standard_normal((width, width), dtype=np.float32) * 0.03),
                   (rng.standard_normal((width, 1), dtype=np.float32) * 0.03)]
        self.dx = drv.alloc(self.x.nbytes)
        self.dd = drv.alloc(self.data.nbytes)

    def back(self, dptr, a):
        return self.np.frombuffer(self.drv.round_trip(dptr, a.tobytes()), a.dtype).reshape(a.shape)

    def mm(self, a, b, sliced):
        if not sliced:
            return a @ b
        out = None
        for ka, kb in zip(self.np.array_split(a, self.k, 1), self.np.array_split(b, self.k, 0)):
            out = ka @ kb if out is None else out + ka @ kb
        return out

    def __call__(self, sliced):
        np = self.np
        logits = self.mm(self.back(self.dx, self.x), self.w, sliced)
        e = np.exp(logits - logits.max(-1, keepdims=True))
        probs = e / e.sum(-1, keepdims=True)
        top2 = np.argsort(-probs, -1, kind="stable")[:, :2]
        w1, w2 = [w.copy() for w in self.w0]
        losses = []
        for _ in range(det.SHAPE["steps"]):
            data = self.back(self.dd, self.data)
            z = self.mm(data, w1, sliced)
            h = np.maximum(z, 0)
            err = h @ w2 - self.target
            losses.append(float(np.mean(err * err)))
            g = 2 * err / err.size
            g2 = h.T @ g
            g1 = data.T @ ((g @ w2.T) * (z > 0))
            w1 -= np.float32(0.05) * g1.astype(np.float32)
            w2 -= np.float32(0.05) * g2.astype(np.float32)
        lt = np.array(losses)
        return {"lm": hashlib.sha256(logits.tobytes() + probs.tobytes()).hexdigest()[:16],
                "loss": hashlib.sha256(lt.tobytes()).hexdigest()[:16],
                "tokens": top2[:, 0].tolist(), "top2": top2.tolist(), "losses": losses}


def asan_preload():
    """What a Python not built with ASan must preload to load the driver library the
    loader finds when that library is a sanitized build's client: the ASan runtime, and
    the libraries it links whose calls ASan intercepts (libtirpc's XDR: an interceptor
    finds the real function only if its library was there when ASan started).  None for
    a library without ASan."""
    for d in os.environ.get("LD_LIBRARY_PATH", "").split(":"):
        lib = os.path.join(d or ".", "libcuda.so.1")
        if os.path.exists(lib):
            r = subprocess.run(["ldd", lib], capture_output=True, text=True)
            libs = dict(line.strip().split(" (")[0].partition(" => ")[::2]
                        for line in r.stdout.splitlines() if " => " in line)
            asan = [p for n, p in libs.items() if n.startswith("libasan.so")]
            return " ".join(asan + [p for n, p in libs.items() if n.startswith("libtirpc.so")]) \
                if asan else None
    return None


def main(argv):
    if len(argv) < 4 or argv[1] not in ("llm", "det"):
        sys.exit("usage: standin.py llm|det SECS FATBIN [KEY=VALUE...]")
    pre = asan_preload()
    if pre and pre not in os.environ.get("LD_PRELOAD", ""):
        # Python's own allocations are not ours to check: no leak report at its exit.
        env = dict(os.environ, LD_PRELOAD=pre, ASAN_OPTIONS="detect_leaks=0")
        os.execve(sys.executable, [sys.executable] + argv, env)
    secs, kw = float(argv[2]), dict(a.split("=", 1) for a in argv[4:])
    drv = Driver(argv[3])
    sync = Sync(os.environ.get("DS_EVAL_SYNC"))
    if argv[1] == "llm":
        out = llm.run(KernelEngine(drv, kw), kw, secs, WARM_S, sync, time.monotonic, time.sleep)
    else:
        comp = NumpyCompute(drv, int(kw.get("slices", 4)))
        comp(False)
        sync.ready()
        t0 = time.monotonic()
        out = det.trials(comp, int(kw.get("trials", 20)), int(kw.get("slices", 4)))
        sync.mark("done")
        out.update(role="det", secs=time.monotonic() - t0)
    out["job"] = "standin-" + argv[1]
    out["args"] = kw
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
