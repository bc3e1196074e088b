#!/usr/bin/env bash
# Run 71: bench/overhead part 2: the three PyTorch models, 2 rounds of native / unix / tcp.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs" PATH=/opt/torch/.venv/bin:$PATH
COMMIT=${COMMIT:-unknown} BUILD=build-gpu OUT=$out/ov PARTS="torch-resnet50 torch-gpt2 torch-decode" MODEL_ROUNDS=2 ROUNDS=2 TORCH_CAP=40 timeout 570 bash bench/overhead/run.sh > $out/ov.txt 2>&1
echo "overhead exit $?" >> $out/ov.txt
grep -E "step_ms|tpot|tenant runs" $out/ov/*.md; tail -3 $out/ov.txt
