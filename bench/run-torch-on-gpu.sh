#!/usr/bin/env bash
# PyTorch natively and through detshare on a GPU box (see lab/gpu-runs.md): the script
# bench/torch_determinism.py twice natively (to show the native run is deterministic),
# then as two detshare tenants at once, one over the Unix socket and one over TCP
# loopback.  Every output must be byte-identical to the first native one.
# Expects build-gpu and .dev/libs as bench/run-on-gpu.sh does; writes under $OUT.
set -uo pipefail
out=${OUT:-/tmp/ds-out}
mkdir -p "$out"
if [ "$PWD" != /work/main ]; then mkdir -p /work && ln -sfn "$PWD" /work/main; cd /work/main; fi
export LD_LIBRARY_PATH="$PWD/.dev/libs" CUBLAS_WORKSPACE_CONFIG=:4096:8 PYTHONUNBUFFERED=1
script=bench/torch_determinism.py
dir=$(mktemp -d)
(umask 077; echo "torch-$$-$RANDOM" > "$dir/tokens")
./build-gpu/server/detshare-server --device cuda --listen "unix:$dir/s" --listen tcp:127.0.0.1:7077 \
    --token-file "$dir/tokens" 2> "$out/torch-server.log" &
srv=$!
sleep 1
timeout 300 python3 $script "$@" > "$out/torch-native1.txt" 2> "$out/torch-native.err"
timeout 300 python3 $script "$@" > "$out/torch-native2.txt" 2>> "$out/torch-native.err"
ds_lib="$PWD/build-gpu/client:$LD_LIBRARY_PATH"
DETSHARE_TENANT=torch-unix DETSHARE_SERVER="unix:$dir/s" LD_LIBRARY_PATH="$ds_lib" \
    timeout 400 python3 $script "$@" > "$out/torch-unix.txt" 2> "$out/torch-unix.err" &
a=$!
DETSHARE_TENANT=torch-tcp DETSHARE_SERVER=tcp:127.0.0.1:7077 DETSHARE_TOKEN_FILE="$dir/tokens" \
    LD_LIBRARY_PATH="$ds_lib" \
    timeout 400 python3 $script "$@" > "$out/torch-tcp.txt" 2> "$out/torch-tcp.err" &
b=$!
wait $a; ea=$?
wait $b; eb=$?
kill -TERM $srv; wait $srv
same() { cmp -s "$out/torch-native1.txt" "$1" && echo identical || echo DIFFERENT; }
{
    echo "native run 2:                 $(same "$out/torch-native2.txt")"
    echo "detshare over unix (exit $ea): $(same "$out/torch-unix.txt")"
    echo "detshare over tcp (exit $eb):  $(same "$out/torch-tcp.txt")"
    grep -h took "$out/torch-native.err" "$out/torch-unix.err" "$out/torch-tcp.err"
} | tee "$out/torch-summary.txt"
