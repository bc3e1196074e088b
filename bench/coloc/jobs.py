"""The co-location workloads of bench/coloc, one per process.

    python3 jobs.py decode|resnet|gpt2|prefill SECONDS

Each prints JSON lines on stdout.  Trainers print one line per 2-second window
({"t": wall-clock end, "steps_per_s": ...}) and, at the end, the hash of their first 20
losses; the decoder prints every decode step's time ({"t", "tpot_ms"}) and the hash of its
first generation's tokens; the prefill server prints one line per burst ({"t", "burst_ms",
"prompts"}) and the hash of its first prompt's next tokens.  Wall-clock times let the report keep only the windows in
which two jobs really ran together.  Weights and data come from fixed seeds, so the hashes
compare runs: identical hashes alone and co-located are the determinism check.
"""
import hashlib
import json
import sys
import time

import torch


def emit(**kw):
    print(json.dumps(kw), flush=True)


def digest(values):
    return hashlib.sha256(repr(values).encode()).hexdigest()[:16]


def train(step, secs):
    losses = [step() for _ in range(20)]
    emit(kind="losses", hash=digest(losses))
    torch.cuda.synchronize()
    end, w0, n = time.time() + secs, time.time(), 0
    while time.time() < end:
        step()
        torch.cuda.synchronize()
        n += 1
        if time.time() - w0 >= 2.0:
            emit(kind="window", t=time.time(), steps_per_s=n / (time.time() - w0))
            w0, n = time.time(), 0


def train_step(opt, loss_of):
    """One bf16-autocast training step of loss_of(); returns the loss."""
    def step():
        with torch.autocast("cuda", torch.bfloat16):
            loss = loss_of()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item()

    return step


def resnet(secs):
    import torchvision

    torch.backends.cudnn.benchmark = True
    m = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    x = torch.randn(64, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (64,), device="cuda")
    train(train_step(opt, lambda: torch.nn.functional.cross_entropy(m(x), y)), secs)


def gpt2(secs):
    import transformers

    m = transformers.GPT2LMHeadModel(transformers.GPT2Config()).cuda()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
    ids = torch.randint(0, 50257, (8, 512), device="cuda")
    train(train_step(opt, lambda: m(ids, labels=ids).loss), secs)


def llama():
    """The decoder of both LLM jobs: 12 Llama layers, hidden 1024, bf16, fixed weights."""
    import transformers

    cfg = transformers.LlamaConfig(hidden_size=1024, intermediate_size=2816,
                                   num_hidden_layers=12, num_attention_heads=16,
                                   num_key_value_heads=16, vocab_size=32000)
    return transformers.LlamaForCausalLM(cfg).cuda().to(torch.bfloat16).eval()


# The prefill server's bursts: every BURST_EVERY_S, BURST_PROMPTS prompts of PROMPT_TOKENS
# tokens, BATCH at a time (one forward pass each: what a server does before decoding).
BURST_EVERY_S = 1.0
BURST_PROMPTS = 8
PROMPT_TOKENS = 1024
BATCH = 4


def prefill(secs):
    m = llama()
    g = torch.Generator(device="cuda").manual_seed(1)
    prompts = torch.randint(0, 32000, (BURST_PROMPTS, PROMPT_TOKENS), device="cuda", generator=g)
    with torch.no_grad():
        first = m(prompts[:BATCH]).logits[:, -1].argmax(-1)
        emit(kind="tokens", hash=digest(first.tolist()))
        end, nxt = time.time() + secs, time.time()
        while time.time() < end:
            time.sleep(max(0.0, nxt - time.time()))
            nxt += BURST_EVERY_S
            t0 = time.time()
            for i in range(0, BURST_PROMPTS, BATCH):
                m(prompts[i:i + BATCH]).logits[:, -1].argmax(-1)
            torch.cuda.synchronize()
            emit(kind="burst", t=time.time(), burst_ms=(time.time() - t0) * 1e3,
                 prompts=BURST_PROMPTS)


def decode(secs):
    m = llama()
    ids = torch.randint(0, 32000, (1, 32), device="cuda")

    class Steps:
        """A generate() streamer: the time of every token."""

        def __init__(self):
            self.t = []

        def put(self, _):
            self.t.append(time.time())

        def end(self):
            pass

    with torch.no_grad():
        out = m.generate(ids, max_new_tokens=16, min_new_tokens=16, do_sample=False)
        emit(kind="tokens", hash=digest(out[0].tolist()))
        # A whole request, untimed: its steps past the 16th meet cache lengths the first
        # generation never had, and ran at 50-75 ms instead of 10-15 (H100 runs 58-75,
        # natively as much as through detshare): 48 such steps in a 20 s window made every
        # p99 of those runs a measure of this warm-up, not of the neighbour.
        m.generate(ids, max_new_tokens=64, min_new_tokens=64, do_sample=False)
        torch.cuda.synchronize()
        end = time.time() + secs
        while time.time() < end:
            s = Steps()
            m.generate(ids, max_new_tokens=64, min_new_tokens=64, do_sample=False, streamer=s)
            torch.cuda.synchronize()
            # s.t[0] is the prompt, s.t[1] the first token (prefill): decode steps after.
            for a, b in zip(s.t[1:], s.t[2:]):
                emit(kind="step", t=b, tpot_ms=(b - a) * 1e3)


if __name__ == "__main__":
    torch.manual_seed(0)
    jobs = {"resnet": resnet, "gpt2": gpt2, "decode": decode, "prefill": prefill}
    jobs[sys.argv[1]](float(sys.argv[2]))
