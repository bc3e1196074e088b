#!/usr/bin/env bash
# Run 82: the partition fix (partition-check TORCH=0 + dbgpart), a failing device assert natively under MPS, the relay probe.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs" PATH=/opt/torch/.venv/bin:$PATH
r=$out/r82.txt; { date -u; nvidia-smi -L; } > $r
echo "== partition-check" >> $r
OUT=$out TORCH=0 timeout 120 bash bench/sharing/partition-check.sh >> $r 2>&1
grep -h "now runs" $out/partition/server-static.log | cut -c14- >> $r
echo "== relay probe (no MPS)" >> $r
nvcc -O2 -arch=native -o .dev/relayprobe .dev/relayprobe.cu -lcuda >> $r 2>&1 && timeout 30 .dev/relayprobe >> $r 2>&1; echo "exit $?" >> $r
gcc -O2 -o .dev/assertprobe .dev/assertprobe.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64/stubs -lcuda
d=$(mktemp -d); mkdir -p $d/pipe $d/log
export CUDA_MPS_PIPE_DIRECTORY=$d/pipe CUDA_MPS_LOG_DIRECTORY=$d/log
nvidia-cuda-mps-control -d
echo "== relay probe (MPS)" >> $r
timeout 30 .dev/relayprobe >> $r 2>&1; echo "exit $?" >> $r
echo "== native assert under MPS" >> $r
timeout 20 .dev/assertprobe build-gpu/tests/kernels/devout.fatbin >> $r 2>&1; echo "exit $?" >> $r
echo "== native after it, under MPS: a plain relay probe" >> $r
timeout 20 .dev/relayprobe >> $r 2>&1; echo "exit $?" >> $r
echo quit | nvidia-cuda-mps-control; sleep 1
tail -5 $d/log/control.log >> $r 2>/dev/null; tail -8 $d/log/server.log >> $r 2>/dev/null
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
cat $r
