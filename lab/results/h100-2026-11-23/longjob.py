# A training loop for a few seconds, to see what status shows of running work.
import sys, time, torch
secs = float(sys.argv[1]) if len(sys.argv) > 1 else 12
m = torch.nn.Sequential(torch.nn.Linear(2048, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 2048)).cuda()
opt = torch.optim.SGD(m.parameters(), lr=1e-3)
x = torch.randn(512, 2048, device="cuda")
end = time.time() + secs; steps = 0
while time.time() < end:
    opt.zero_grad(); m(x).square().mean().backward(); opt.step(); steps += 1
    if steps % 50 == 0: torch.cuda.synchronize()
torch.cuda.synchronize(); print("steps", steps)
