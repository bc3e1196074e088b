#!/usr/bin/env bash
# SM partitions on a GPU box (lab/gpu-runs.md), under the server's MPS daemon:
# 1. a kernel that keeps every SM it gets busy, alone (whole device), alone on a 64-SM
#    partition (--policy static with an idle neighbour holding the other half), and two
#    of them at once on their two disjoint halves: the pair should run at the alone-on-
#    half speed (on the same SMs they would take twice as long);
#    the kernel alone on the half again, launched as a graph (a graph launched there
#    should keep to the half: if it takes the whole-device time, graphs escape);
# 2. the same pair under --policy shared (both on every SM);
# 3. PyTorch bit for bit while it migrates: bench/torch_determinism.py through detshare
#    under --policy static while a neighbour joins and leaves every second, so the tenant
#    moves between the whole device and half of it mid-run; compared with a native run.
# Expects build-gpu and .dev/libs; writes under $OUT/partition.  TORCH=0 skips part 3.
set -u
out=${OUT:-/tmp/ds-out}/partition
mkdir -p "$out"
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo" || exit 1
export LD_LIBRARY_PATH="$repo/.dev/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvcc -O2 -arch=native -o "$out/burn" bench/sharing/burn.cu || exit 1
dir=$(mktemp -d)
blocks=${BLOCKS:-8448} iters=${ITERS:-200000} repeats=${REPEATS:-5}

start_server() {
    rm -f "$dir/s"
    ./build-gpu/server/detshare-server --device cuda --mps start --mps-dir "$dir/mps" \
        --policy "$1" --listen "unix:$dir/s" 2>> "$out/server-$1.log" &
    srv=$!
    for _ in $(seq 400); do [ -S "$dir/s" ] && return 0; sleep 0.05; done
    echo "server did not start"; tail "$out/server-$1.log"; exit 1
}
stop_server() { kill -TERM $srv; wait $srv; }
tenant() {
    DETSHARE_TENANT="$1" DETSHARE_SERVER="unix:$dir/s" \
        LD_LIBRARY_PATH="$repo/build-gpu/client:$LD_LIBRARY_PATH" "${@:2}"
}
pair() {
    tenant "$1-a" "$out/burn" "$blocks" "$iters" "$repeats" > "$out/$1-a.json" & local a=$!
    tenant "$1-b" "$out/burn" "$blocks" "$iters" "$repeats" > "$out/$1-b.json" & local b=$!
    wait $a $b
    echo "$1: $(cat "$out/$1-a.json") $(cat "$out/$1-b.json")"
}

echo "native alone: $("$out/burn" "$blocks" "$iters" "$repeats")"
start_server static
echo "static, alone (whole device): $(tenant alone "$out/burn" "$blocks" "$iters" "$repeats")"
DETSHARE_TENANT=idle DETSHARE_SERVER="unix:$dir/s" LD_LIBRARY_PATH="$repo/build-gpu/client:$LD_LIBRARY_PATH" \
    "$out/burn" idle 30 & idle=$!
sleep 2
echo "static, alone on half (idle neighbour): $(tenant half "$out/burn" "$blocks" "$iters" "$repeats")"
echo "static, alone on half (idle neighbour), as a graph: $(tenant half-graph "$out/burn" "$blocks" "$iters" "$repeats" graph)"
kill $idle; wait $idle 2> /dev/null
sleep 1
pair static-pair
stop_server
start_server shared
pair shared-pair
stop_server
grep -h "policy static\|now runs" "$out/server-static.log" | cut -c14- | sort | uniq -c

# PyTorch migrating mid-run (TORCH=0 leaves it out).
[ "${TORCH:-1}" = 0 ] && exit 0
export CUBLAS_WORKSPACE_CONFIG=:4096:8 PYTHONUNBUFFERED=1
timeout 300 python3 bench/torch_determinism.py resnet gpt2 streams graphs > "$out/torch-native.txt" 2> "$out/torch-native.err"
start_server static
tenant torch timeout 400 python3 bench/torch_determinism.py resnet gpt2 streams graphs \
    > "$out/torch-migrating.txt" 2> "$out/torch-migrating.err" & t=$!
while kill -0 $t 2> /dev/null; do
    tenant churn "$out/burn" idle 1 > /dev/null 2>&1
    sleep 1
done
wait $t; e=$?
stop_server
echo "torch migrating: exit $e, moved $(grep -c 'tenant\[torch.*now runs' "$out/server-static.log") times; output vs native: $(cmp -s "$out/torch-native.txt" "$out/torch-migrating.txt" && echo identical || echo DIFFERENT)"
