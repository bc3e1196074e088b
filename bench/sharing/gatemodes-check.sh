#!/usr/bin/env bash
# Which way gates should go (issue 8, item 4): gatemodes.cu's three modes, ROUNDS times
# each (default 3) with the order rotated, natively and as the client of a private MPS
# daemon (as detshare's executors are).  Writes $OUT/gatemodes/results.jsonl, one object
# per run with "mps" added, and each run's progress to $OUT/gatemodes/progress.log (where a
# run that hangs stopped).  Every run has a time limit.
set -u -o pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo" || exit 1
out=${OUT:-/tmp/ds-out}/gatemodes
mkdir -p "$out"
nvcc -O2 -arch=native -o "$out/gatemodes" bench/sharing/gatemodes.cu -lcuda || exit 1
rounds=${ROUNDS:-3} kernels=${KERNELS:-200000} period=${PERIOD_US:-2000}
dir=$(mktemp -d)
trap 'echo quit | CUDA_MPS_PIPE_DIRECTORY=$dir/pipe nvidia-cuda-mps-control 2> /dev/null; rm -rf "$dir"' EXIT

run_all() {
    local modes=(none host relay)
    for r in $(seq "$rounds"); do
        for k in 0 1 2; do
            local m=${modes[$(((k + r) % 3))]}
            timeout -k 5 60 "$out/gatemodes" "$m" "$kernels" "$period" 2>> "$out/progress.log" |
                sed "s/^{/{\"mps\": $1, \"round\": $r, /" >> "$out/results.jsonl" ||
                echo "{\"mps\": $1, \"round\": $r, \"mode\": \"$m\", \"failed\": true}" >> "$out/results.jsonl"
        done
    done
}

: > "$out/results.jsonl"
run_all false
mkdir -p "$dir/pipe" "$dir/log"
export CUDA_MPS_PIPE_DIRECTORY=$dir/pipe CUDA_MPS_LOG_DIRECTORY=$dir/log
nvidia-cuda-mps-control -d || exit 1
run_all true
cat "$out/results.jsonl"
