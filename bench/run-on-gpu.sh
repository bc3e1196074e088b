#!/usr/bin/env bash
# Everything a GPU session runs, in one go (the device tool bills by the minute):
# the gpu-labelled tests, the example tenant, and the copy benchmark native vs detshare.
# Expects a build in build-gpu and its bundled libraries in .dev/libs (see docs/gpu-runs.md).
# Writes logs and results under $OUT.
set -uo pipefail
out=${OUT:-/tmp/ds-out}
mkdir -p "$out"
# ctest and the tests hold absolute paths of the machine they were built on.
if [ "$PWD" != /work/main ]; then mkdir -p /work && ln -sfn "$PWD" /work/main; cd /work/main; fi
export LD_LIBRARY_PATH="$PWD/.dev/libs"
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; } > "$out/device.txt" 2>&1
# The gpu-labelled ctest entries, run directly: the box need not have CMake.
for t in device context memcpy stream isolation hostile; do
    DS_TEST_DEVICE=cuda timeout 300 ./build-gpu/tests/test_$t --jobs 1 >> "$out/gpu-tests.log" 2>&1
    echo "gpu test $t: exit $?" >> "$out/device.txt"
done
dir=$(mktemp -d)
./build-gpu/server/detshare-server --device cuda --listen "unix:$dir/s" 2> "$out/server.log" &
srv=$!
for _ in $(seq 200); do [ -S "$dir/s" ] && break; sleep 0.05; done
DETSHARE_SERVER="unix:$dir/s" LD_LIBRARY_PATH="$PWD/build-gpu/client:$LD_LIBRARY_PATH" \
    ./build-gpu/examples/hello_tenant > "$out/example.log" 2>&1
echo "example: exit $?" >> "$out/device.txt"
./build-gpu/bench/copy_bench native 20 > "$out/copy-native.jsonl" 2>> "$out/bench.log"
DETSHARE_SERVER="unix:$dir/s" LD_LIBRARY_PATH="$PWD/build-gpu/client:$LD_LIBRARY_PATH" \
    ./build-gpu/bench/copy_bench detshare 20 > "$out/copy-detshare.jsonl" 2>> "$out/bench.log"
echo "bench: exit $?" >> "$out/device.txt"
kill -TERM $srv; wait $srv; echo "server: exit $?" >> "$out/device.txt"
cat "$out/device.txt"
