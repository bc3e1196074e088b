#!/usr/bin/env bash
# Run 86: the executor's fence pattern around a failing assert, natively under a private MPS daemon and without.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
cd "$(dirname "$0")/.."
r=$out/r86.txt; date -u > $r
K=build-gpu/tests/kernels/devout.fatbin
gcc -O2 -o .dev/assertfence .dev/assertfence.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64/stubs -lcuda
for mode in plain arm; do for i in 1 2 3; do echo "== no MPS, $mode $i" >> $r; timeout 8 .dev/assertfence $K $mode >> $r 2>&1; echo "exit $?" >> $r; done; done
d=$(mktemp -d); mkdir -p $d/pipe $d/log
export CUDA_MPS_PIPE_DIRECTORY=$d/pipe CUDA_MPS_LOG_DIRECTORY=$d/log
nvidia-cuda-mps-control -d
for mode in plain arm; do for i in 1 2 3 4; do echo "== MPS, $mode $i" >> $r; timeout 8 .dev/assertfence $K $mode >> $r 2>&1; echo "exit $?" >> $r; sleep 0.5; done; done
echo quit | nvidia-cuda-mps-control; sleep 1
grep -v "Assertion" $r
