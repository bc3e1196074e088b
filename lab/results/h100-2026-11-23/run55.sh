#!/usr/bin/env bash
# Pools through PyTorch and CuPy, two PyTorch threads, what status shows of a running job.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs" PATH=/opt/torch/.venv/bin:$PATH
r=$out/r55.txt; : > $r
DS_TEST_DEVICE=cuda timeout 150 ./build-gpu/tests/test_pool --jobs 1 > "$out/gpu-pool.log" 2>&1; echo "gpu test pool: exit $?, $(grep -a Synthesis $out/gpu-pool.log | cut -c14-)" >> $r
dir=$(mktemp -d)
./build-gpu/server/detshare-server --device cuda --listen "unix:$dir/s" --policy slo-aware 2> "$out/server55.log" &
srv=$!; for _ in $(seq 200); do [ -S "$dir/s" ] && break; sleep 0.05; done; sleep 1
ds() { DETSHARE_SERVER=unix:$dir/s LD_LIBRARY_PATH=$PWD/build-gpu/client:$LD_LIBRARY_PATH "$@"; }
for w in torch cupy; do
  echo "pool $w native:   $(PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync timeout 120 python3 .dev/pool.py $w 2>&1 | tail -1)" >> $r
  echo "pool $w detshare: $(PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync ds timeout 120 python3 .dev/pool.py $w 2>&1 | tail -1)" >> $r
done
echo "torch default allocator native:   $(timeout 120 python3 .dev/pool.py torch 2>&1 | tail -1)" >> $r
echo "torch default allocator detshare: $(ds timeout 120 python3 .dev/pool.py torch 2>&1 | tail -1)" >> $r
echo "mt detshare: $(ds timeout 60 python3 .dev/mt.py 2>&1 | tail -1)" >> $r
# Status while a job runs: the predictor's view of it.
( DETSHARE_TENANT=job DETSHARE_CLASS=latency ds timeout 60 python3 .dev/pool.py torch > /dev/null 2>&1 ) &
job=$!
for i in 1 2 3 4 5 6; do sleep 1; ./build-gpu/server/detshare-ctl --admin unix:$dir/s.admin status --json >> "$out/status55.jsonl" 2>&1; done
wait $job
kill -TERM $srv; wait $srv
tail -3 "$out/server55.log" >> $r
cat $r
