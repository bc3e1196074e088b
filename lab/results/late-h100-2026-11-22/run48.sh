#!/usr/bin/env bash
# JAX under deterministic XLA settings (is the difference XLA's timing-based autotuning?),
# then bench/overhead run F.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs"
r=$out/r48.txt
dir=$(mktemp -d)
./build-gpu/server/detshare-server --device cuda --listen "unix:$dir/s" 2> "$out/srv48.log" &
srv=$!; for _ in $(seq 200); do [ -S "$dir/s" ] && break; sleep 0.05; done; sleep 1
for flags in "--xla_gpu_autotune_level=0" "--xla_gpu_deterministic_ops=true"; do
  for i in 1 2; do echo "native [$flags] #$i: $(XLA_FLAGS=$flags timeout 100 python3 .dev/breadth.py jax 2>/dev/null | tail -1)" >> $r; done
  for i in 1 2 3; do echo "detshare [$flags] #$i: $(XLA_FLAGS=$flags DETSHARE_SERVER=unix:$dir/s LD_LIBRARY_PATH=$PWD/build-gpu/client:$LD_LIBRARY_PATH timeout 100 python3 .dev/breadth.py jax 2>/dev/null | tail -1)" >> $r; done
done
kill -TERM $srv; wait $srv
rm -f "$out/srv48.log"
OUT=$out BUILD=build-gpu TORCH_CAP=60 timeout 450 bash bench/overhead/run.sh > $out/bench.txt 2>&1
echo "bench exit $?" >> $r
cat $r; tail -45 $out/bench.txt
