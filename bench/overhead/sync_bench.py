#!/usr/bin/env python3
"""How long a synchronisation after GPU work of a given length takes, in PyTorch.

Prints one JSON line per case: the median and p90 of the wall time of `work; .item()`
(matrix products of a few sizes, so the GPU part lasts from tens of microseconds to a few
milliseconds) and of one ResNet-50 inference batch followed by torch.cuda.synchronize().
Run it natively and through detshare in the same sitting: the difference is what a
synchronisation costs through detshare once the GPU is done (the executor's spin, its
wake-ups, the reply), which --sync-spin-us trades against idle CPU (docs/server.md).

Usage: sync_bench.py [--repeats N]
"""
import argparse
import json
import os
import statistics
import time

os.environ["HF_HUB_OFFLINE"] = "1"

import torch  # noqa: E402


def timed(fn, repeats):
    for _ in range(10):
        fn()
    t = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        t.append((time.perf_counter() - t0) * 1e6)
    t.sort()
    return statistics.median(t), t[int(0.9 * len(t))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=200)
    args = ap.parse_args()
    for n in (512, 2048, 4096, 8192):
        x = torch.randn(n, n, device="cuda")
        med, p90 = timed(lambda: (x @ x)[0, 0].item(), args.repeats)
        print(json.dumps({"case": f"matmul{n}+item", "median_us": round(med, 1),
                          "p90_us": round(p90, 1)}), flush=True)
    try:
        import torchvision
    except ImportError:
        return
    m = torchvision.models.resnet50().cuda().eval().to(torch.bfloat16)
    m = m.to(memory_format=torch.channels_last)
    b = torch.randn(32, 3, 224, 224, device="cuda", dtype=torch.bfloat16)
    b = b.to(memory_format=torch.channels_last)

    def batch():
        with torch.no_grad():
            m(b)
        torch.cuda.synchronize()

    med, p90 = timed(batch, args.repeats // 2)
    print(json.dumps({"case": "resnet50-b32-bf16", "median_us": round(med, 1),
                      "p90_us": round(p90, 1)}), flush=True)


if __name__ == "__main__":
    main()
