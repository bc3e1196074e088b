#!/usr/bin/env bash
# Run 109: issue 9's training-pair target again (run 100 was its one repeat: slo-aware
# 0.98x native MPS, 1.19x time-sliced): ResNet-50 + GPT-2 alone, then under native
# time-slicing, native MPS and slo-aware, one repeat per command.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs" PATH=/opt/torch/.venv/bin:$PATH
BUILD=build-gpu OUT=$out SECS=20 REPEATS=1 PAIRS="resnet+gpt2" \
  MODES="native-timesliced native-mps slo-aware" \
  COMMIT=${COMMIT:-unknown} timeout 560 bash bench/coloc/run.sh > $out/coloc.txt 2>&1
tail -30 $out/coloc.txt
