#!/usr/bin/env bash
# Run 78: bench/coloc with the decoder's untimed warm-up request, slo-aware at its
# three-quarter cap: decode beside ResNet-50 and beside GPT-2, against native MPS.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs" PATH=/opt/torch/.venv/bin:$PATH
BUILD=build-gpu OUT=$out SECS=${SECS:-20} PAIRS="decode+resnet decode+gpt2" \
  MODES="native-mps slo-aware" COMMIT=${COMMIT:-unknown} timeout 570 bash bench/coloc/run.sh > $out/r78.txt 2>&1
tail -30 $out/r78.txt
