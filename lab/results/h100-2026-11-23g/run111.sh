#!/usr/bin/env bash
# Run 111: five more programs users bring (bench/breadth/programs.py): torch.compile's
# reduce-overhead CUDA graphs and a hand-captured graph, fused bf16 attention, NCCL with
# DDP on one GPU, cuDNN's LSTM, FP8 GEMMs; each natively twice, then through detshare.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs" PATH=/opt/torch/.venv/bin:$PATH
BUILD=build-gpu OUT=$out WHAT="${WHAT:-cudagraph sdpa nccl lstm fp8}" CAP=100 \
  COMMIT=${COMMIT:-unknown} timeout 400 bash bench/breadth/run.sh 2>&1 | tail -4
cat $out/breadth-*.md
