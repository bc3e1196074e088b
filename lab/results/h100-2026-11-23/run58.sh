#!/usr/bin/env bash
# bench/coloc: decode beside ResNet-50 under native MPS, shared, the predictor-based slo-aware and tpot-first.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs"
SECS=20 PAIRS="decode+resnet" MODES="native-mps shared slo-aware tpot-first" OUT=$out BUILD=build-gpu timeout 585 bash bench/coloc/run.sh > $out/coloc.txt 2>&1
echo "coloc exit $?" >> $out/coloc.txt
tail -40 $out/coloc.txt
