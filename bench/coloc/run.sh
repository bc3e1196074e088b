#!/usr/bin/env bash
# Co-location on one GPU in one run: each job alone (natively and through detshare), then
# pairs of jobs at once under native time-slicing, native MPS and detshare's policies.
# Writes to $OUT (default lab/results): coloc-<device>-<date>.json, .md, .png, and
# coloc-<device>-<date>-raw.tar.gz (every job's output and stderr, the servers' logs).
#
#   BUILD=build-gpu bash bench/coloc/run.sh
#
# Environment: BUILD (default build), OUT, PYTHON (default python3), SECS (seconds each job
# measures after its warm-up, default 30), PAIRS (default "decode+resnet decode+gpt2
# resnet+gpt2 decode+prefill"), MODES (default "native-timesliced native-mps shared static temporal
# slo-aware tpot-first"; a detshare mode is a --policy), REPEATS (default 1), COMMIT (what
# the report names, where the tree has no git history).  Both jobs of a pair start
# together; the report keeps what they measured while both ran.  With REPEATS=N
# the whole set (alone, then every mode) runs N times over, since the baselines themselves
# move between runs (native MPS by 21% between runs 59 and 61 on the H100): the report
# compares figures of the same repeat and takes medians over repeats.  decode+prefill is
# issue 9's bursty LLM scenario: the decoder has a TPOT SLO of SLO_X (default 1.25) times
# its p50 alone natively in the same repeat, given to detshare's servers (detshare-ctl
# tenant decode class latency slo MS) and counted against by the report.  ALONE_MPS=1 also
# runs each job alone under native MPS (alone-native-mps).  Needs a GPU, PyTorch, torchvision and
# transformers; a job that fails is recorded and the run goes on.
set -uo pipefail
export LC_ALL=C PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo" || exit 1
build=$(cd "${BUILD:-build}" && pwd) || { echo "run.sh: no build directory ${BUILD:-build}" >&2; exit 1; }
out=${OUT:-$repo/lab/results}
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 1
python=${PYTHON:-python3}
secs=${SECS:-30}
repeats=${REPEATS:-1}
pairs=${PAIRS:-decode+resnet decode+gpt2 resnet+gpt2 decode+prefill}
slo_x=${SLO_X:-1.25}
modes=${MODES:-native-timesliced native-mps shared static temporal slo-aware tpot-first}
jobs=$repo/bench/coloc/jobs.py
if [ -d .dev/libs ]; then export LD_LIBRARY_PATH="$repo/.dev/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; fi
nvidia-smi -L > /dev/null 2>&1 || { echo "run.sh: no GPU (nvidia-smi sees none)" >&2; exit 1; }

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
slug=$(echo "$gpu" | tr '[:upper:]' '[:lower:]' | sed -e 's/^nvidia //' -e 's/[^a-z0-9]\+/-/g' -e 's/^-//;s/-$//')
name=coloc-${slug:-gpu}-$(date -u +%Y-%m-%d)
raw=$out/$name-raw
rm -rf "$raw" && mkdir -p "$raw" || exit 1
tmp=$(mktemp -d)
srv= mpsdir=
stop_server() { [ -n "$srv" ] && kill -TERM "$srv" 2> /dev/null && wait "$srv"; srv=; unset DETSHARE_SERVER; mps_gone; }
# Each scenario starts once the last MPS server is gone.  After the native MPS daemon's
# `quit`, executors of a server started within a second or two still ran without MPS,
# even once its MPS server had exited (runs 98-100: the next scenario's executors warned
# that they were no MPS clients), so the native daemon's end is also waited out
# (MPS_SETTLE seconds, default 5).
mps_gone() { for _ in $(seq 100); do pgrep -f nvidia-cuda-mps-server > /dev/null || return 0; sleep 0.1; done; echo "run.sh: an MPS server is still running" >&2; }
stop_mps() {
    [ -n "$mpsdir" ] && echo quit | CUDA_MPS_PIPE_DIRECTORY=$mpsdir/pipe nvidia-cuda-mps-control
    mpsdir=
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
    mps_gone
    sleep "${MPS_SETTLE:-5}"
}
# The report, also of what finished when the run is cut short (a device call's time
# limit: run 103 lost its report so); jobs still running are ended first.
reported=
report() {
    [ -n "$reported" ] && return
    reported=1
    for p in $(jobs -p); do [ "$p" = "$srv" ] || kill "$p" 2> /dev/null; done
    "$python" "$repo/bench/coloc/report.py" "$raw" "$out/$name"
    tar czf "$out/$name-raw.tar.gz" -C "$out" "$name-raw" && rm -rf "$raw"
}
trap 'report; stop_server; stop_mps; rm -rf "$tmp"' EXIT
{
    echo "gpu=$gpu"
    echo "driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
    echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "commit=${COMMIT:-$(git rev-parse --short HEAD 2> /dev/null || echo unknown)}"
    echo "torch=$("$python" -c 'import torch; print(torch.__version__)' 2> /dev/null)"
    echo "secs=$secs"
    echo "repeats=$repeats"
    echo "slo_x=$slo_x"
} > "$raw/meta.txt"

# A detshare server with policy $1 on a fresh socket (and its own MPS daemon).
start_server() {
    local sock=$tmp/$1.sock
    "$build/server/detshare-server" --device cuda --policy "$1" --warm 2 --mps-dir "$tmp/mps-$1" \
        --listen "unix:$sock" 2> "$raw/server-$1@r$rep.log" &
    srv=$!
    for _ in $(seq 300); do [ -S "$sock" ] && break; sleep 0.05; done
    sleep 1
    export DETSHARE_SERVER="unix:$sock"
}

# A native MPS daemon of our own, for the processes started after this.
start_mps() {
    mpsdir=$tmp/native-mps
    mkdir -p "$mpsdir/pipe" "$mpsdir/log"
    CUDA_MPS_PIPE_DIRECTORY=$mpsdir/pipe CUDA_MPS_LOG_DIRECTORY=$mpsdir/log nvidia-cuda-mps-control -d
    export CUDA_MPS_PIPE_DIRECTORY=$mpsdir/pipe CUDA_MPS_LOG_DIRECTORY=$mpsdir/log
}

# Run job $2 as scenario $1 of repeat $rep, in the background; detshare when $3 is "ds".
launch() {
    local class=best-effort
    [ "$2" = decode ] && class=latency
    if [ "$3" = ds ]; then
        LD_LIBRARY_PATH="$build/client:$LD_LIBRARY_PATH" DETSHARE_TENANT=$2 DETSHARE_CLASS=$class \
            CUDA_CACHE_PATH=$tmp/cache-ds timeout $((secs + 240)) "$python" "$jobs" "$2" "$secs" \
            > "$raw/$1@r$rep-$2.jsonl" 2> "$raw/$1@r$rep-$2.err" &
    else
        CUDA_CACHE_PATH=$tmp/cache-native timeout $((secs + 240)) "$python" "$jobs" "$2" "$secs" \
            > "$raw/$1@r$rep-$2.jsonl" 2> "$raw/$1@r$rep-$2.err" &
    fi
}

# The decoder's TPOT SLO in this repeat, in ms to the microsecond (what detshare-ctl takes):
# SLO_X times its p50 alone natively.
slo_ms() {
    "$python" - "$raw/alone-native@r$rep-decode.jsonl" "$slo_x" << 'EOF'
import json, sys
steps = sorted(json.loads(l)["tpot_ms"] for l in open(sys.argv[1]) if '"step"' in l)
print("%.3f" % max(0.001, round(float(sys.argv[2]) * steps[len(steps) // 2], 3)) if steps else 0)
EOF
}

# Give the decoder of a detshare server its SLO once it has connected (within a minute).
give_slo() {
    local ms
    ms=$(slo_ms 2> /dev/null)
    [ -n "$ms" ] && [ "$ms" != 0 ] || return
    echo "$ms" > "$raw/slo@r$rep.txt"
    for _ in $(seq 300); do
        "$build/server/detshare-ctl" tenant decode class latency slo "$ms" > /dev/null 2>&1 && return
        sleep 0.2
    done
}

# Start what mode $1 runs under (nothing, a native MPS daemon, or a server with that
# policy) and set how: native or ds.  end_mode stops it.
begin_mode() {
    how=ds
    case $1 in
    native-timesliced) how=native ;;
    native-mps) how=native; start_mps ;;
    *) start_server "$1" ;;
    esac
}
end_mode() {
    case $1 in
    native-timesliced) ;;
    native-mps) stop_mps ;;
    *) stop_server ;;
    esac
}

# Each pair at once under mode $1: natively, or through a server with that policy.
run_mode() {
    local mode=$1 how pids
    begin_mode "$mode"
    for pair in $pairs; do
        pids=
        for job in ${pair/+/ }; do launch "$mode-$pair" "$job" "$how"; pids="$pids $!"; done
        [ "$pair" = decode+prefill ] && [ "$how" = ds ] && give_slo
        for p in $pids; do wait "$p"; echo "$mode-$pair@r$rep $p exit $?" >> "$raw/exits.txt"; done
    done
    end_mode "$mode"
}

# Every job alone, as scenario alone-$1: native, native-mps (a native MPS daemon, which
# detshare's own executors always have) or detshare (through a server, policy shared).
run_alone() {
    local mode=$1 how
    case $1 in
    native) mode=native-timesliced ;;
    detshare) mode=shared ;;
    esac
    begin_mode "$mode"
    for job in $alone_jobs; do launch "alone-$1" "$job" "$how"; wait $!; done
    end_mode "$mode"
}

# Jobs ran faster alone through detshare than alone natively (1.09-1.23x, runs 103-110),
# native always first.  So that order and warm-up can be told from detshare itself, the
# alone scenarios go in the other order on even repeats, and ALONE_MPS=1 adds each job
# alone under native MPS.
alone_jobs=$(echo $pairs | tr ' +' '\n\n' | sort -u)
alone="native detshare"
[ "${ALONE_MPS:-0}" = 1 ] && alone="native native-mps detshare"
for ((rep = 1; rep <= repeats; rep++)); do
    order=$alone
    [ $((rep % 2)) -eq 0 ] && order=$(echo $alone | tr ' ' '\n' | tac | tr '\n' ' ')
    for a in $order; do run_alone "$a"; done
    for mode in $modes; do run_mode "$mode"; done
done

report
