"""Issue 29's cuSPARSE product, run R times in this process, for test_sparse_repeat.sh.
usage: sparse_repeat.py R OUT
Prints one line per run: "exact DIGEST float DIGEST", then "mode deterministic" or
"mode default" (whether torch took deterministic algorithms for it), and saves the float
products, stacked, to OUT (torch.save).  The exact product has small integers only, so
every summation order gives the same bytes; the float one is bench/breadth/programs.py's
"sparse", whose sums natively vary run to run."""
import hashlib, sys
import torch

runs, out = int(sys.argv[1]), sys.argv[2]


def digest(t):
    b = t.detach().cpu().contiguous().reshape(-1).view(torch.uint8)
    return hashlib.sha256(b.numpy().tobytes()).hexdigest()[:16]


mode = "deterministic"
try:
    torch.use_deterministic_algorithms(True)
    torch.rand(4, 4, device="cuda").to_sparse_csr() @ torch.rand(4, 2, device="cuda")
except RuntimeError:
    torch.use_deterministic_algorithms(False)
    mode = "default"
torch.manual_seed(0)
a = torch.rand(1024, 1024)
a[a < 0.98] = 0
s = a.cuda().to_sparse_csr()
b = torch.rand(1024, 64).cuda()
ai = torch.randint(1, 8, (1024, 1024)).float() * (a > 0)
si = ai.cuda().to_sparse_csr()
bi = torch.randint(0, 8, (1024, 64)).float().cuda()
floats = []
for _ in range(runs):
    c = s @ b
    e = si @ bi
    torch.cuda.synchronize()
    floats.append(c.cpu())
    print("exact", digest(e), "float", digest(c), flush=True)
print("mode", mode)
torch.save(torch.stack(floats), out)
