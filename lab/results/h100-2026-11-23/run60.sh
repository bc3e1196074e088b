#!/usr/bin/env bash
# Final suites of the stop: every gpu suite (copy2d and graph_nodes new), and the new examples natively and through detshare.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs" PATH=/opt/torch/.venv/bin:$PATH
r=$out/r60.txt
{ date -u; nvidia-smi -L; } > $r
SUITES="copy2d graph_nodes pool gate quota metrics graph launch memcpy stream waits fastpath hostfn threads ipc vmm partition policy admin device context isolation hostile hostmem tensormap" OUT=$out bash .dev/run54.sh > /dev/null 2>&1
cat $out/r54.txt >> $r
dir=$(mktemp -d)
./build-gpu/server/detshare-server --device cuda --listen "unix:$dir/s" 2> "$out/server60.log" &
srv=$!; for _ in $(seq 200); do [ -S "$dir/s" ] && break; sleep 0.05; done; sleep 1
cudart=/usr/local/cuda/lib64
for v in pitched pitched_shared graph_nodes graph_nodes_shared malloc_async malloc_async_shared; do
  LD_LIBRARY_PATH="$cudart:$LD_LIBRARY_PATH" timeout 60 ./build-gpu/examples/$v > "$dir/$v.native" 2>&1; n=$?
  DETSHARE_SERVER="unix:$dir/s" LD_LIBRARY_PATH="$PWD/build-gpu/client:$cudart:$LD_LIBRARY_PATH" timeout 60 ./build-gpu/examples/$v > "$dir/$v.ds" 2>&1; d=$?
  if cmp -s "$dir/$v.native" "$dir/$v.ds"; then same=identical; else same=DIFFERENT; fi
  echo "example $v: native exit $n, detshare exit $d, output $same, $(tail -1 $dir/$v.ds)" >> $r
done
kill -TERM $srv; wait $srv
grep -i "warn\|error" "$out/server60.log" | head -5 >> $r
cat $r
