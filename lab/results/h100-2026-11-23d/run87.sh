#!/usr/bin/env bash
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
cd "$(dirname "$0")/.."
r=$out/r87.txt; date -u > $r
K=build-gpu/tests/kernels/devout.fatbin
gcc -O2 -o .dev/wakeprobe .dev/wakeprobe.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64/stubs -lcuda -lpthread
for w in hostfunc waker hostfunc waker; do echo "== no MPS $w timing" >> $r; timeout 20 .dev/wakeprobe $K $w 0 >> $r 2>&1; done
d=$(mktemp -d); mkdir -p $d/pipe $d/log
export CUDA_MPS_PIPE_DIRECTORY=$d/pipe CUDA_MPS_LOG_DIRECTORY=$d/log
nvidia-cuda-mps-control -d
for w in hostfunc waker hostfunc waker; do echo "== MPS $w timing" >> $r; timeout 20 .dev/wakeprobe $K $w 0 >> $r 2>&1; done
for i in 1 2 3; do echo "== MPS waker assert $i" >> $r; timeout 8 .dev/wakeprobe $K waker 1 >> $r 2>&1; echo "exit $?" >> $r; sleep 0.5; done
echo "== MPS hostfunc assert" >> $r; timeout 8 .dev/wakeprobe $K hostfunc 1 >> $r 2>&1; echo "exit $?" >> $r
echo quit | nvidia-cuda-mps-control; sleep 1
grep -v "Assertion" $r
