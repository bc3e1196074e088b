#!/usr/bin/env bash
# Run 104: the coloc part of run 103 again, as a second repeat (one command holds at most
# 600 s; both pairs take about 420).
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs" PATH=/opt/torch/.venv/bin:$PATH
BUILD=build-gpu OUT=$out SECS=20 REPEATS=1 PAIRS="decode+gpt2 decode+resnet" MODES="native-mps slo-aware" \
  COMMIT=${COMMIT:-unknown} timeout 560 bash bench/coloc/run.sh > $out/coloc.txt 2>&1
tail -30 $out/coloc.txt
