#!/usr/bin/env bash
# Issue 26 on a two-GPU box: each program of programs.py natively, then as a tenant of two
# servers (GPU 0 and GPU 1, each with its own MPS daemon), one line per run:
#   BUILD=build-gpu OUT=DIR bash bench/multigpu/run.sh [PROGRAM...]
# Writes DIR/multigpu.txt (program, mode, exit, last stdout line, NCCL's transports from
# NCCL_DEBUG=INFO) and DIR/raw/ (every run's stderr, the servers' logs).
set -u -o pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo" || exit 1
build=$(cd "${BUILD:-build-gpu}" && pwd) || exit 1
out=${OUT:-$repo/lab/results}; mkdir -p "$out/raw" && out=$(cd "$out" && pwd)
python=${PYTHON:-python3}
[ -d /opt/torch/.venv/bin ] && export PATH="/opt/torch/.venv/bin:$PATH"
[ -d .dev/libs ] && export LD_LIBRARY_PATH="$repo/.dev/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ "$(nvidia-smi -L | wc -l)" -ge 2 ] || { echo "run.sh: needs two GPUs" >&2; exit 1; }
tmp=$(mktemp -d)
pids=()
for g in 0 1; do
    "$build/server/detshare-server" --device cuda --gpu $g --mps-dir "$tmp/mps$g" \
        --listen "unix:$tmp/s$g" 2> "$out/raw/server$g.log" &
    pids+=($!)
done
trap 'kill -TERM "${pids[@]}" 2> /dev/null; wait; rm -rf "$tmp"' EXIT
for g in 0 1; do
    for _ in $(seq 400); do [ -S "$tmp/s$g" ] && break; sleep 0.05; done
    [ -S "$tmp/s$g" ] || { echo "run.sh: server $g did not start" >&2; cat "$out/raw/server$g.log" >&2; exit 1; }
done
one() {
    local mode=$1 prog=$2 env=(NCCL_DEBUG=INFO) cmd line rc
    [ "$mode" = detshare ] && env+=(DETSHARE_SERVER="unix:$tmp/s0,unix:$tmp/s1"
        DETSHARE_TENANT="multigpu-$prog" LD_LIBRARY_PATH="$build/client:${LD_LIBRARY_PATH:-}")
    cmd=("$python" bench/multigpu/programs.py "$prog")
    [ "$prog" = ddp ] && cmd=(torchrun --standalone --nproc-per-node 2 bench/multigpu/programs.py ddp)
    # NCCL_DEBUG=INFO writes to stdout too: the program's own line starts with its name.
    env "${env[@]}" timeout "${CAP:-120}" "${cmd[@]}" > "$out/raw/$prog-$mode.out" 2> "$out/raw/$prog-$mode.err"
    rc=$?
    line=$(grep -a "^$prog " "$out/raw/$prog-$mode.out" | tail -1)
    printf '%-6s %-8s exit %-3s %s | %s\n' "$prog" "$mode" "$rc" "$line" \
        "$(cat "$out/raw/$prog-$mode.out" "$out/raw/$prog-$mode.err" | grep -ao 'via [A-Za-z/]*' | sort | uniq -c | tr -s ' \n' ' ')"
}
for prog in ${*:-to p2pbw ddp1 ddp}; do
    one native "$prog"
    one detshare "$prog"
done | tee "$out/multigpu.txt"
