#!/usr/bin/env bash
# Run 103: numba-cuda through detshare now that the compile cache's slot 2 answers
# success (nvJitLink failed the link on its garbage result in run 102), then decode
# beside GPT-2 and beside ResNet-50 under slo-aware, whose fence now probes back
# without an SLO, against native MPS; one repeat, 20 s windows.  The servers' logs
# show whether warm executors come up as MPS clients after native MPS's daemon quits,
# and whether they stop at SIGTERM.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs" PATH=/opt/torch/.venv/bin:$PATH
BUILD=build-gpu OUT=$out WHAT="numba" COMMIT=${COMMIT:-unknown} timeout 120 bash bench/breadth/run.sh 2>&1 | tail -4
BUILD=build-gpu OUT=$out SECS=20 REPEATS=1 PAIRS="decode+gpt2 decode+resnet" MODES="native-mps slo-aware" \
  COMMIT=${COMMIT:-unknown} timeout 450 bash bench/coloc/run.sh > $out/coloc.txt 2>&1
tail -30 $out/coloc.txt
