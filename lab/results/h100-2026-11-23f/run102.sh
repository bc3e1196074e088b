#!/usr/bin/env bash
# Run 102 (prepared, not run: this session's device time was spent): the two breadth
# programs added last (numba with row_stack aliased; ResNet-50 with cudnn.benchmark,
# channels_last, bf16 autocast), then contexts made ahead on a GPU: two pairs of burn.cu
# tenants under --policy static with two warm executors, the second pair on executors
# that started after the first pair's moves; their moves should not wait for contexts.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs" PATH=/opt/torch/.venv/bin:$PATH
BUILD=build-gpu OUT=$out WHAT="numba resnet" COMMIT=${COMMIT:-unknown} timeout 300 bash bench/breadth/run.sh 2>&1 | tail -6
nvcc -O2 -arch=native -o $out/burn bench/sharing/burn.cu || exit 1
tmp=$(mktemp -d)
DETSHARE_LOG=debug build-gpu/server/detshare-server --device cuda --mps start --mps-dir $tmp/mps \
  --policy static --warm 2 --listen unix:$tmp/s 2> $out/ahead-server.log & srv=$!
for _ in $(seq 200); do [ -S $tmp/s ] && break; sleep 0.05; done; sleep 1
pair() {
  local pids=
  for t in a b; do
    DETSHARE_TENANT=$1-$t DETSHARE_SERVER=unix:$tmp/s LD_LIBRARY_PATH=build-gpu/client:$LD_LIBRARY_PATH \
      timeout 60 $out/burn 1056 2000 2000 > $out/ahead-$1-$t.json & pids="$pids $!"
  done
  wait $pids
}
pair first; sleep 2; pair second
kill -TERM $srv; wait $srv; echo "server exit $?"
grep -h "made ahead\|moved in" $out/ahead-server.log | cut -c1-160
