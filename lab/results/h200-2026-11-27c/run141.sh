#!/usr/bin/env bash
# Run 141 (for the next session; not run in the session that wrote it): infer with its
# SLO told (1.2x its p99 alone natively, fixed by the calibration), in a results folder of
# its own so that every mode runs in one sitting: what slo-aware's SLO-driven lender gives
# the flood.  Two calls of this script finish the quick profile (it resumes).
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main; [ -e build-gpu ] || ln -s .dev/build-gpu build-gpu
export LD_LIBRARY_PATH="$PWD/.dev/libs"
t=$(mktemp -d)
RESULTS=lab/results/eval-cuda-quick-slo BUDGET=${B:-480} LIMIT=${L:-560} OUT=$t/infer \
    bash bench/eval/gpu-run.sh --quick --calibrate infer > "$t/infer.txt" 2>&1
tar czf "$out/infer.tgz" -C "$t" infer infer.txt
tail -30 "$t/infer.txt"
