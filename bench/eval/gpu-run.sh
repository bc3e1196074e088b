#!/usr/bin/env bash
# bench/eval in one device call on a GPU box (bench/eval/gpu-first-run.md): run.sh on the
# GPU with the build and libraries carried in .dev, resuming the results carried in the
# tree, then everything back under $OUT.
#
#   OUT=$OUT bash bench/eval/gpu-run.sh [run.sh's arguments]   (default: --quick --calibrate infer)
#
# Environment: RESULTS (default lab/results/eval-cuda-quick: the run's --out, inside the
# tree so that the next call, given the copy the last one brought back, goes on where it
# stopped), BUILD (default .dev/build-gpu, else build-gpu), BUDGET (default 500: seconds in
# which run.sh starts cells; a cell started late runs to its end), LIMIT (default 570: run.sh
# is stopped after that, the report still written).  $OUT gets eval/ (cells.jsonl,
# calibration.json, meta.json, report.md and .json, plots), eval-raw.tgz (every job's
# output and every server's log) and eval-run.log.
set -u
out=${OUT:-/tmp/ds-out}
mkdir -p "$out"
res=${RESULTS:-lab/results/eval-cuda-quick}
build=${BUILD:-}
if [ -z "$build" ]; then
    build=build-gpu
    [ -d .dev/build-gpu ] && build=.dev/build-gpu
fi
# The commit the build was made from (lab/slim-build.sh writes it): the box's copy of the
# tree may carry a stale .git, which gave this session's first calls an old commit.
[ -z "${COMMIT:-}" ] && [ -f "$build/COMMIT" ] && export COMMIT=$(cat "$build/COMMIT")
[ -d .dev/libs ] && export LD_LIBRARY_PATH="$PWD/.dev/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -d /opt/torch/.venv/bin ] && export PATH="/opt/torch/.venv/bin:$PATH"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
[ $# -gt 0 ] || set -- --quick --calibrate infer
{
    date -u
    nvidia-smi -L
    nvidia-smi --query-gpu=driver_version --format=csv,noheader
    echo "build: $build (commit ${COMMIT:-unknown}); results: $res; arguments: $*"
} > "$out/device.txt" 2>&1
BUILD=$build timeout -k 20 "${LIMIT:-570}" bash bench/eval/run.sh --device cuda --out "$res" \
    --budget "${BUDGET:-500}" "$@" > "$out/eval-run.log" 2>&1
echo "run.sh: exit $?" >> "$out/device.txt"
if [ -d "$res" ]; then
    tar czf "$out/eval-raw.tgz" -C "$res" raw
    mkdir -p "$out/eval"
    find "$res" -maxdepth 1 -type f -exec cp {} "$out/eval/" \;
fi
tail -n 40 "$out/eval-run.log"
cat "$out/device.txt"
