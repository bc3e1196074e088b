#!/usr/bin/env python3
"""PyTorch figures for bench/overhead/run.sh, natively or through detshare (the same
script either way: run.sh sets LD_LIBRARY_PATH and DETSHARE_SERVER for the latter).

Usage: torch_bench.py --what micro|resnet50|gpt2|decode [--cap SECONDS]

Each workload runs in its own process, so that one crash loses only its own figures.
Prints one JSON object per line, flushed at once:
  {"info": "torch", ...}                       device, versions
  {"metric": M, "value": V, "unit": U, "n": N}  V a median over N repeats or steps
Models are built from configs with random weights: nothing is downloaded.
"""
import argparse
import faulthandler
import json
import os
import statistics
import sys
import time

# Before transformers is imported: construction from a config must never reach a hub.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import torch  # noqa: E402

MIB256 = 256 << 20


def emit(metric, value, unit, n, **extra):
    print(json.dumps({"metric": metric, "value": value, "unit": unit, "n": n, **extra}),
          flush=True)


def info(what, **versions):
    print(json.dumps({"info": "torch", "what": what, "torch": torch.__version__,
                      "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(0),
                      **versions}), flush=True)


class Deadline:
    """A wall-time cap: the loops below stop early rather than let a slow run eat the
    whole budget (each figure says how many operations it is the median of)."""

    def __init__(self, seconds):
        self.end = time.monotonic() + seconds

    def passed(self):
        return time.monotonic() > self.end


def us_per_op(op, count, deadline, sync_each):
    """µs per call of op over up to count calls, ending with a synchronize; checks the
    deadline every 500 calls."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    done = 0
    while done < count and not (done and deadline.passed()):
        for _ in range(min(500, count - done)):
            op()
            if sync_each:
                torch.cuda.synchronize()
        done += min(500, count - done)
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / done * 1e6, done


def small_ops(deadline):
    """Launch-bound work: an asynchronous add, the same add synchronized each time, and
    .item() (a device-to-host read that synchronizes)."""
    x = torch.zeros(1, device="cuda")
    cases = (("add_small_us", lambda: x.add_(1), 20000, False),
             ("add_sync_us", lambda: x.add_(1), 2000, True),
             ("item_us", x.item, 2000, False))
    for name, op, count, sync_each in cases:
        us_per_op(op, 200, deadline, sync_each)  # warm-up
        runs = [us_per_op(op, count, deadline, sync_each) for _ in range(3)]
        emit(name, statistics.median(r[0] for r in runs), "us", 3,
             ops=min(r[1] for r in runs))


def gbps(copy, reps=5):
    """Median GB/s of a synchronous 256 MiB copy, after one warm-up."""
    times = []
    for i in range(reps + 1):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        copy()
        torch.cuda.synchronize()
        if i:
            times.append(time.perf_counter() - t0)
    return MIB256 / statistics.median(times) / 1e9


def copies():
    """256 MiB each way from pinned and from pageable host memory.  Host buffers are
    filled first so that no copy pays for faulting pages in; device-to-host copies go
    into preallocated buffers so that what is timed is the copy, not a host allocation."""
    pageable = torch.ones(MIB256, dtype=torch.uint8)
    pinned = torch.ones(MIB256, dtype=torch.uint8).pin_memory()
    dev = torch.ones(MIB256, dtype=torch.uint8, device="cuda")
    for kind, host in (("pinned", pinned), ("pageable", pageable)):
        emit(f"copy_256m_{kind}_h2d_gbps", gbps(lambda: host.to("cuda", non_blocking=False)),
             "GB/s", 5)
        emit(f"copy_256m_{kind}_d2h_gbps", gbps(lambda: host.copy_(dev)), "GB/s", 5)


def step_ms(step, warmup, steps, deadline):
    """Median ms of a training or generation step, each synchronized; at least three
    measured steps even past the deadline."""
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    times = []
    while len(times) < steps and (len(times) < 3 or not deadline.passed()):
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), len(times)


def resnet50(deadline):
    import torchvision
    import torch.nn.functional as F

    info("resnet50", torchvision=torchvision.__version__)
    torch.backends.cudnn.benchmark = True
    with torch.device("cuda"):
        model = torchvision.models.resnet50(weights=None)
        x = torch.randn(64, 3, 224, 224)
        y = torch.randint(0, 1000, (64,))
    model = model.to(memory_format=torch.channels_last)
    x = x.to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    ms, n = step_ms(step, 5, 20, deadline)
    emit("resnet50_step_ms", ms, "ms", n, batch=64)


def gpt2(deadline):
    import transformers

    info("gpt2", transformers=transformers.__version__)
    with torch.device("cuda"):
        model = transformers.GPT2LMHeadModel(transformers.GPT2Config())
        ids = torch.randint(0, model.config.vocab_size, (8, 512))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()

    ms, n = step_ms(step, 3, 20, deadline)
    emit("gpt2_step_ms", ms, "ms", n, batch="8x512")


def decode(deadline):
    import transformers

    info("decode", transformers=transformers.__version__)
    cfg = transformers.LlamaConfig(hidden_size=1024, intermediate_size=2816,
                                   num_hidden_layers=12, num_attention_heads=16,
                                   num_key_value_heads=8, vocab_size=32000,
                                   max_position_embeddings=2048)
    with torch.device("cuda"):
        model = transformers.LlamaForCausalLM(cfg).to(torch.bfloat16).eval()
        ids = torch.randint(3, cfg.vocab_size, (1, 32))
    new = 128

    def generate():
        with torch.no_grad():
            out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new,
                                 min_new_tokens=new, do_sample=False, use_cache=True,
                                 pad_token_id=0)
        if out.shape[1] != ids.shape[1] + new:
            raise RuntimeError(f"generated {out.shape[1] - ids.shape[1]} tokens, not {new}")

    ms, n = step_ms(generate, 1, 3, deadline)
    emit("decode_tpot_ms", ms / new, "ms", n, new_tokens=new, prompt=32)


def micro(deadline):
    info("micro")
    small_ops(deadline)
    copies()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--what", required=True, choices=("micro", "resnet50", "gpt2", "decode"))
    ap.add_argument("--cap", type=float, default=150,
                    help="seconds after which loops stop early (default 150)")
    args = ap.parse_args()
    # A crash inside the driver (ours or NVIDIA's) then leaves a Python stack in stderr,
    # which run.sh keeps in the report.
    faulthandler.enable()
    if not torch.cuda.is_available():
        sys.exit("torch_bench: torch sees no CUDA device")
    torch.manual_seed(0)
    {"micro": micro, "resnet50": resnet50, "gpt2": gpt2, "decode": decode}[args.what](
        Deadline(args.cap))


if __name__ == "__main__":
    main()
