#!/usr/bin/env bash
# What status shows of a running PyTorch job (sparse stamps), then bench/overhead run I.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs"
r=$out/r57.txt; : > $r
dir=$(mktemp -d)
./build-gpu/server/detshare-server --device cuda --listen "unix:$dir/s" --policy slo-aware 2> "$out/server57.log" &
srv=$!; for _ in $(seq 200); do [ -S "$dir/s" ] && break; sleep 0.05; done; sleep 1
( DETSHARE_TENANT=job DETSHARE_CLASS=latency DETSHARE_SERVER=unix:$dir/s LD_LIBRARY_PATH=$PWD/build-gpu/client:$LD_LIBRARY_PATH timeout 60 python3 .dev/longjob.py 12 >> $r 2>&1 ) &
job=$!
for i in $(seq 14); do sleep 1; ./build-gpu/server/detshare-ctl --admin unix:$dir/s.admin status --json >> "$out/status57.jsonl" 2>&1; done
wait $job
echo "native: $(timeout 60 python3 .dev/longjob.py 12 2>&1 | tail -1)" >> $r
kill -TERM $srv; wait $srv
OUT=$out BUILD=build-gpu TORCH_CAP=60 timeout 480 bash bench/overhead/run.sh > $out/bench.txt 2>&1
echo "bench exit $?" >> $r
cat $r; grep -E "launch_async|add_small|add_sync|item_us|resnet|gpt2|decode" $out/bench.txt
