#!/usr/bin/env bash
# How long moving a tenant between SM partitions takes on a GPU box (lab/gpu-runs.md):
# two tenants run many short kernels under --policy static while detshare-ctl switches
# the policy between static and shared every ~10 ms, so each switch moves both; each
# executor logs how long each move took (`now runs on ... (moved in N us)`).  The same
# pair without switching is timed too.  Expects build-gpu and .dev/libs; writes under
# $OUT/rebind.
set -u
out=${OUT:-/tmp/ds-out}/rebind
mkdir -p "$out"
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo" || exit 1
export LD_LIBRARY_PATH="$repo/.dev/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvcc -O2 -arch=native -o "$out/burn" bench/sharing/burn.cu || exit 1
dir=$(mktemp -d)
blocks=${BLOCKS:-1056} iters=${ITERS:-2000} repeats=${REPEATS:-20000} switches=${SWITCHES:-100}
ctl() { ./build-gpu/server/detshare-ctl --admin "unix:$dir/s.admin" "$@" > /dev/null; }

run_pair() { # $1 = label, $2 = 1 to switch policies meanwhile
    rm -f "$dir/s"
    ./build-gpu/server/detshare-server --device cuda --mps start --mps-dir "$dir/mps" \
        --policy static --listen "unix:$dir/s" 2> "$out/server-$1.log" &
    local srv=$! a b
    for _ in $(seq 400); do [ -S "$dir/s" ] && break; sleep 0.05; done
    sleep 1
    for t in a b; do
        DETSHARE_TENANT="$1-$t" DETSHARE_SERVER="unix:$dir/s" \
            LD_LIBRARY_PATH="$repo/build-gpu/client:$LD_LIBRARY_PATH" \
            "$out/burn" "$blocks" "$iters" "$repeats" > "$out/$1-$t.json" &
        eval "$t=\$!"
    done
    if [ "$2" = 1 ]; then
        sleep 0.3
        for _ in $(seq "$switches"); do ctl policy shared; sleep 0.01; ctl policy static; sleep 0.01; done
    fi
    wait "$a" "$b"
    kill -TERM $srv; wait $srv
    echo "$1: $(cat "$out/$1-a.json") $(cat "$out/$1-b.json")"
}

run_pair steady 0
run_pair switching 1
grep -ho "moved in [0-9]* us" "$out/server-switching.log" | awk '{print $3}' | sort -n > "$out/moves.txt"
n=$(wc -l < "$out/moves.txt")
pick() { sed -n "$(( ($1 * n + 99) / 100 ))p" "$out/moves.txt"; }
[ "$n" -gt 0 ] && echo "moves: $n; time per move: median $(pick 50) us, p90 $(pick 90) us, p99 $(pick 99) us, max $(tail -1 "$out/moves.txt") us"
