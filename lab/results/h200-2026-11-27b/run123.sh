#!/usr/bin/env bash
# Run 123: what the box has for the device plugin's check (Python with grpc), the gpu
# suites of the client/executor moves of the architecture step (issue 27: graph, host
# registration, managed, stream attributes, capture, launch, stream memory operations),
# and first_launch natively and through detshare (why single-kernel samples report a
# tenth of their native throughput, issue 29).
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main; [ -e build-gpu ] || ln -s .dev/build-gpu build-gpu
export LD_LIBRARY_PATH="$PWD/.dev/libs"
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; nproc
  for p in python3 /usr/bin/python3; do echo "$p: $($p -c 'import sys; print(sys.version.split()[0])' 2>&1)"
    $p -c 'import grpc, google.protobuf as g; print("  grpc", grpc.__version__, "protobuf", g.__version__)' 2>&1 | tail -1; done
  which cmake kubectl 2>&1; } > "$out/device.txt" 2>&1
t=$(mktemp -d)
nvcc -arch=sm_90 -O2 -o "$t/first_launch" bench/compat/first_launch.cu
{
  echo "== native"; "$t/first_launch" 8
  ./build-gpu/server/detshare-server --device cuda --listen "unix:$t/s" --mps-dir "$t/mps" 2> "$t/server.log" &
  srv=$!
  for _ in $(seq 400); do [ -S "$t/s" ] && break; sleep 0.05; done
  for i in 1 2; do echo "== detshare $i"; DETSHARE_SERVER=unix:$t/s LD_LIBRARY_PATH=$PWD/build-gpu/client:$LD_LIBRARY_PATH "$t/first_launch" 8; done
  echo "== detshare, the tenant's LAZY loading off"; DETSHARE_SERVER=unix:$t/s CUDA_MODULE_LOADING=EAGER LD_LIBRARY_PATH=$PWD/build-gpu/client:$LD_LIBRARY_PATH "$t/first_launch" 8
  kill -TERM $srv; wait $srv
  CUDA_MODULE_LOADING=EAGER ./build-gpu/server/detshare-server --device cuda --listen "unix:$t/s2" --mps-dir "$t/mps2" 2> "$t/server2.log" &
  srv=$!
  for _ in $(seq 400); do [ -S "$t/s2" ] && break; sleep 0.05; done
  echo "== detshare, server EAGER"; DETSHARE_SERVER=unix:$t/s2 LD_LIBRARY_PATH=$PWD/build-gpu/client:$LD_LIBRARY_PATH "$t/first_launch" 8
  echo "== detshare --mps off"; kill -TERM $srv; wait $srv
  ./build-gpu/server/detshare-server --device cuda --mps off --listen "unix:$t/s3" 2> "$t/server3.log" &
  srv=$!
  for _ in $(seq 400); do [ -S "$t/s3" ] && break; sleep 0.05; done
  DETSHARE_SERVER=unix:$t/s3 LD_LIBRARY_PATH=$PWD/build-gpu/client:$LD_LIBRARY_PATH "$t/first_launch" 8
  kill -TERM $srv; wait $srv
} > "$out/first_launch.txt" 2>&1
cat "$out/device.txt" "$out/first_launch.txt"
for s in graph graph_host graph_child graph_update graph_cond graph_userobj graph_mem graph_hostcopy graph_memop graph_events graph_nodes hostreg managed streamattr capture_to_graph launch launch_checks streammem hostfn device export; do
    DS_TEST_DEVICE=cuda timeout 120 ./build-gpu/tests/test_$s --jobs 1 > "$t/gpu-$s.log" 2>&1
    echo "gpu test $s: exit $? $(grep -a 'Synthesis' "$t/gpu-$s.log" | tail -1)" | tee -a "$out/suites.txt"
    grep -a -v "^  server" "$t/gpu-$s.log" | grep -a -B2 -A14 "Assertion\|FAIL" | head -60 >> "$out/gpu-suites-fail.txt"
done
