#!/usr/bin/env bash
# The server's own MPS daemon on a GPU box (lab/gpu-runs.md): two tenants that each keep
# one block busy for REPEATS x about MS run side by side under --mps start (each takes
# about what it takes alone) and take turns under --mps off (each takes about twice that); no daemon is left after SIGTERM, nor after
# SIGKILL of the server followed by a restart.  Expects build-gpu and .dev/libs; writes
# under $OUT/mps.
set -u
out=${OUT:-/tmp/ds-out}/mps
mkdir -p "$out"
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo" || exit 1
export LD_LIBRARY_PATH="$repo/.dev/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvcc -O2 -arch=native -o "$out/spin" bench/sharing/spin.cu || exit 1
dir=$(mktemp -d)
repeats=${REPEATS:-5} ms=${MS:-300}
daemons() { pgrep -a -f nvidia-cuda-mps | cut -c1-70 | tr '\n' ';'; }

start_server() {
    ./build-gpu/server/detshare-server --device cuda --mps "$1" --mps-dir "$dir/mps" \
        --listen "unix:$dir/s" 2>> "$out/server-$1.log" &
    srv=$!
    for _ in $(seq 400); do [ -S "$dir/s" ] && return 0; sleep 0.05; done
    echo "server did not start"; tail "$out/server-$1.log"; exit 1
}

tenant() {
    DETSHARE_TENANT="spin-$1-$2" DETSHARE_SERVER="unix:$dir/s" \
        LD_LIBRARY_PATH="$repo/build-gpu/client:$LD_LIBRARY_PATH" "$out/spin" "$iters" "$repeats"
}

alone=$("$out/spin" 0 "$repeats" "$ms")
iters=$(echo "$alone" | sed 's/.*"iters": \([0-9]*\).*/\1/')
echo "native alone: $alone"
echo "daemons before: [$(daemons)]"
for mode in start off; do
    start_server "$mode"
    echo "$mode, alone: $(tenant "$mode" 0)"
    t0=$EPOCHREALTIME
    tenant "$mode" 1 > "$out/pair-$mode-1.json" & a=$!
    tenant "$mode" 2 > "$out/pair-$mode-2.json" & b=$!
    wait $a $b
    wall=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", (b - a) * 1000 }')
    echo "$mode, pair: wall $wall ms; tenants: $(cat "$out/pair-$mode-1.json") $(cat "$out/pair-$mode-2.json")"
    if [ "$mode" = start ]; then
        echo "daemons while serving: [$(daemons)]"
        echo "server list: $(echo get_server_list | CUDA_MPS_PIPE_DIRECTORY="$dir/mps/pipe" nvidia-cuda-mps-control)"
    fi
    kill -TERM $srv; wait $srv
    echo "$mode, server exit $?; daemons after SIGTERM: [$(daemons)]"
    grep -h "MPS\|MPS client" "$out/server-$mode.log" | cut -c14- | sort | uniq -c
done
start_server start
tenant kill 0 > /dev/null
kill -KILL $srv; wait $srv 2> /dev/null
sleep 1
echo "daemons after SIGKILL of the server: [$(daemons)]"
rm -f "$dir/s"
start_server start
echo "daemons after the restart: [$(daemons)]"
kill -TERM $srv; wait $srv
echo "daemons after the last SIGTERM: [$(daemons)]"
grep -h "earlier server" "$out/server-start.log"
