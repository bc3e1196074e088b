#!/usr/bin/env bash
# Everything a GPU session runs, in one go (the device tool bills by the minute):
# the gpu-labelled tests, the example tenant, and the copy benchmark native vs detshare.
# Expects a build in build-gpu and its bundled libraries in .dev/libs (see lab/gpu-runs.md).
# Writes logs and results under $OUT.
set -uo pipefail
out=${OUT:-/tmp/ds-out}
mkdir -p "$out"
# ctest and the tests hold absolute paths of the machine they were built on.
if [ "$PWD" != /work/main ]; then mkdir -p /work && ln -sfn "$PWD" /work/main; cd /work/main; fi
export LD_LIBRARY_PATH="$PWD/.dev/libs"
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; } > "$out/device.txt" 2>&1
# The gpu-labelled ctest entries, run directly: the box need not have CMake.
for t in device context memcpy stream isolation hostile hostmem launch graph pool copy2d hostreg managed; do
    DS_TEST_DEVICE=cuda timeout 300 ./build-gpu/tests/test_$t --jobs 1 >> "$out/gpu-tests.log" 2>&1
    echo "gpu test $t: exit $?" >> "$out/device.txt"
done
dir=$(mktemp -d)
./build-gpu/server/detshare-server --device cuda --listen "unix:$dir/s" 2> "$out/server.log" &
srv=$!
for _ in $(seq 200); do [ -S "$dir/s" ] && break; sleep 0.05; done
DETSHARE_SERVER="unix:$dir/s" LD_LIBRARY_PATH="$PWD/build-gpu/client:$LD_LIBRARY_PATH" \
    ./build-gpu/examples/hello_tenant > "$out/examples.log" 2>&1
echo "hello_tenant: exit $?" >> "$out/device.txt"
# Each CUDA runtime example natively and through detshare: outputs must match byte for byte.
cudart=/usr/local/cuda/lib64
for e in vector_add streams params mapped cublas_gemm curand_normal graphs malloc_async pitched managed; do
    for v in "$e" "${e}_shared"; do
        LD_LIBRARY_PATH="$cudart:$LD_LIBRARY_PATH" ./build-gpu/examples/$v > "$dir/$v.native" 2>&1
        n=$?
        DETSHARE_SERVER="unix:$dir/s" LD_LIBRARY_PATH="$PWD/build-gpu/client:$cudart:$LD_LIBRARY_PATH" \
            ./build-gpu/examples/$v > "$dir/$v.ds" 2>&1
        d=$?
        if cmp -s "$dir/$v.native" "$dir/$v.ds"; then same=identical; else same=DIFFERENT; fi
        echo "example $v: native exit $n, detshare exit $d, output $same" >> "$out/device.txt"
        { echo "== $v native"; cat "$dir/$v.native"; echo "== $v detshare"; cat "$dir/$v.ds"; } >> "$out/examples.log"
    done
done
./build-gpu/bench/copy_bench native 20 > "$out/copy-native.jsonl" 2>> "$out/bench.log"
DETSHARE_SERVER="unix:$dir/s" LD_LIBRARY_PATH="$PWD/build-gpu/client:$LD_LIBRARY_PATH" \
    ./build-gpu/bench/copy_bench detshare 20 > "$out/copy-detshare.jsonl" 2>> "$out/bench.log"
echo "bench: exit $?" >> "$out/device.txt"
kill -TERM $srv; wait $srv; echo "server: exit $?" >> "$out/device.txt"
cat "$out/device.txt"
