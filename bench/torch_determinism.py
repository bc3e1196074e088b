"""PyTorch through detshare versus natively, bit for bit.

Runs, with fixed seeds and PyTorch's deterministic settings: 20 SGD training steps of
torchvision's ResNet-50 (random init, batch 32), 20 Adam steps of a small GPT-2
(transformers, random init) followed by greedy generation of 64 tokens, work on two extra
streams, and a CUDA graph captured and replayed.  Every loss is printed with float.hex(),
so two runs agree exactly when their outputs are byte-identical.

Usage: CUBLAS_WORKSPACE_CONFIG=:4096:8 python3 torch_determinism.py [sections]
"""
import os
import sys
import time

import torch

SECTIONS = sys.argv[1:] or ["resnet", "gpt2", "streams", "graphs"]


def setup(seed):
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False


def resnet():
    import torchvision

    setup(1)
    model = torchvision.models.resnet50(weights=None).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(32, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (32,), device="cuda")
    for step in range(20):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        print("resnet50 step %2d loss %s" % (step, loss.item().hex()), flush=True)


def gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    setup(2)
    cfg = GPT2Config(n_layer=4, n_head=4, n_embd=256, n_positions=256, vocab_size=8192)
    model = GPT2LMHeadModel(cfg).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    ids = torch.randint(0, cfg.vocab_size, (8, 128), device="cuda")
    for step in range(20):
        opt.zero_grad(set_to_none=True)
        loss = model(ids, labels=ids).loss
        loss.backward()
        opt.step()
        print("gpt2 step %2d loss %s" % (step, loss.item().hex()), flush=True)
    model.eval()
    with torch.no_grad():
        out = model.generate(ids[:1, :16], max_new_tokens=64, do_sample=False,
                             pad_token_id=0)
    print("gpt2 greedy tokens", out[0, 16:].tolist(), flush=True)


def streams():
    setup(3)
    a = torch.randn(1024, 1024, device="cuda")
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    with torch.cuda.stream(s1):
        b = a @ a
    with torch.cuda.stream(s2):
        c = a.relu().sum(dim=0)
    torch.cuda.synchronize()
    print("streams %s %s" % (b.sum().item().hex(), c.sum().item().hex()))
    print("memory allocated %d reserved %d" % (torch.cuda.memory_allocated(),
                                              torch.cuda.memory_reserved()))


def graphs():
    setup(4)
    model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.GELU(),
                                torch.nn.Linear(512, 512)).cuda()
    static_in = torch.randn(64, 512, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            model(static_in)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g):
        static_out = model(static_in)
    sums = []
    for i in range(5):
        static_in.copy_(torch.full((64, 512), float(i), device="cuda"))
        g.replay()
        sums.append(static_out.sum().item().hex())
    print("graph replays", " ".join(sums))


if __name__ == "__main__":
    print("device", torch.cuda.get_device_name(0), "torch", torch.__version__, flush=True)
    for name in SECTIONS:
        t0 = time.time()
        globals()[name]()
        print("%s took %.1f s" % (name, time.time() - t0), file=sys.stderr, flush=True)
