#!/usr/bin/env bash
# Run 81: do graphs launched on a partition keep to it?  partition-check.sh's kernels
# alone on a half, as plain launches and as a graph, then the pairs; PyTorch left out.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs" PATH=/opt/torch/.venv/bin:$PATH
OUT=$out TORCH=0 timeout 500 bash bench/sharing/partition-check.sh > $out/r81.txt 2>&1
cat $out/r81.txt
