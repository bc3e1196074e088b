#!/usr/bin/env bash
# CUDA IPC under PyTorch (bench/ipc/torch_ipc.py) on a GPU box: natively, then through
# detshare with both processes local tenants of one server (each its own executor, MPS
# clients of one GPU).  The two outputs must be identical.  Expects build-gpu and
# .dev/libs as bench/run-on-gpu.sh does; writes under $OUT.
set -uo pipefail
out=${OUT:-/tmp/ds-out}
mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/.dev/libs" PYTHONUNBUFFERED=1
script=bench/ipc/torch_ipc.py
dir=$(mktemp -d)
./build-gpu/server/detshare-server --device cuda --mps start --mps-dir "$dir/mps" \
    --listen "unix:$dir/s" 2> "$out/ipc-server.log" &
srv=$!
sleep 2
timeout 300 python3 $script > "$out/ipc-native.txt" 2> "$out/ipc-native.err"
en=$?
DETSHARE_TENANT=ipc DETSHARE_SERVER="unix:$dir/s" LD_LIBRARY_PATH="$PWD/build-gpu/client:$LD_LIBRARY_PATH" \
    timeout 300 python3 $script > "$out/ipc-detshare.txt" 2> "$out/ipc-detshare.err"
ed=$?
kill -TERM $srv; wait $srv
{
    echo "native exit $en, detshare exit $ed"
    cmp -s "$out/ipc-native.txt" "$out/ipc-detshare.txt" && echo "outputs identical" ||
        { echo "outputs DIFFERENT"; diff "$out/ipc-native.txt" "$out/ipc-detshare.txt"; }
    grep -h took "$out/ipc-native.err" "$out/ipc-detshare.err"
    grep -h -i 'ipc\|refused' "$out/ipc-server.log"
} | tee "$out/ipc-summary.txt"
