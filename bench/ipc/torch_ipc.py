"""CUDA tensors handed between processes with torch.multiprocessing, as data-loading
workers and multi-process trainers do: PyTorch's CUDA IPC (cuIpcGetMemHandle,
cuIpcOpenMemHandle, cuIpcCloseMemHandle and interprocess events) in two processes.

Prints what each side saw, one line per step and nothing that varies between runs: the
output must be the same natively and through detshare (bench/ipc/run.sh compares them).
"""
import sys
import time

import torch
import torch.multiprocessing as mp

N = 1 << 22  # floats: 16 MiB


def consumer(inbox, outbox):
    x = inbox.get()  # opens the producer's memory; PyTorch waits on its IPC event first
    outbox.put(f"consumer: got {tuple(x.shape)} {x.dtype}, sum {x.double().sum().item():.6f}")
    x.mul_(2)  # written in place: the producer's memory
    torch.cuda.synchronize()
    outbox.put("consumer: doubled it")
    y = inbox.get()
    handle = inbox.get()
    # The producer recorded this event after a long kernel and a fill of y: waiting on it
    # here must make the read below see the fill.
    ev = torch.cuda.Event.from_ipc_handle(torch.cuda.current_device(), handle)
    torch.cuda.current_stream().wait_event(ev)
    outbox.put(f"consumer: after the event, y sums to {y.double().sum().item():.1f}")
    del x, y
    torch.cuda.synchronize()
    outbox.put("done")


def main():
    mp.set_start_method("spawn")
    torch.manual_seed(0)
    inbox, outbox = mp.Queue(), mp.Queue()
    worker = mp.Process(target=consumer, args=(inbox, outbox))
    worker.start()

    x = torch.randn(N, device="cuda")
    print(f"producer: sum {x.double().sum().item():.6f}")
    inbox.put(x)
    print(outbox.get())
    print(outbox.get())
    print(f"producer: now sums to {x.double().sum().item():.6f}")

    y = torch.zeros(N, device="cuda")
    torch.cuda.synchronize()
    inbox.put(y)
    ev = torch.cuda.Event(interprocess=True)
    t0 = time.time()
    torch.cuda._sleep(1_000_000_000)  # about half a second of GPU time
    y.fill_(3.0)
    ev.record()
    inbox.put(ev.ipc_handle())
    print(outbox.get())
    print(outbox.get())
    worker.join()
    print(f"producer: consumer exit code {worker.exitcode}")
    print(f"took {time.time() - t0:.2f} s", file=sys.stderr)
    return worker.exitcode


if __name__ == "__main__":
    sys.exit(main())
