#!/usr/bin/env bash
# Run 93: bench/breadth with the programs added after the morning's run (CuPy RawKernel,
# autotuned Triton, torch.compile training, bf16 Llama training) and two native runs each.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export PATH=/opt/torch/.venv/bin:$PATH
BUILD=build-gpu OUT=$out COMMIT=${COMMIT:-unknown} timeout 580 bash bench/breadth/run.sh 2>&1 | tail -25
