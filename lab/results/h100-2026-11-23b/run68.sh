#!/usr/bin/env bash
# Run 68: after merging devout (device printf, cuLink, graph event nodes), hostreg (registration, managed memory) and the fault handling: their gpu suites, neighbours, and the runtime examples against native.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs" PATH=/opt/torch/.venv/bin:$PATH
SUITES="devout link graph_events hostreg managed hostmem fault memcpy launch graph_nodes graph waits gate stream context hostfn" OUT=$out timeout 420 bash .dev/run54.sh > /dev/null 2>&1
cp $out/r54.txt $out/r68.txt
dir=$(mktemp -d)
./build-gpu/server/detshare-server --device cuda --listen "unix:$dir/s" 2> "$out/server.log" &
srv=$!
for _ in $(seq 200); do [ -S "$dir/s" ] && break; sleep 0.05; done
cudart=/usr/local/cuda/lib64
for e in vector_add mapped graphs malloc_async pitched managed; do
  for v in "$e" "${e}_shared"; do
    [ -x ./build-gpu/examples/$v ] || continue
    LD_LIBRARY_PATH="$cudart:$LD_LIBRARY_PATH" timeout 60 ./build-gpu/examples/$v > "$dir/$v.native" 2>&1; n=$?
    DETSHARE_SERVER="unix:$dir/s" LD_LIBRARY_PATH="$PWD/build-gpu/client:$cudart:$LD_LIBRARY_PATH" timeout 60 ./build-gpu/examples/$v > "$dir/$v.ds" 2>&1; d=$?
    if cmp -s "$dir/$v.native" "$dir/$v.ds"; then same=identical; else same=DIFFERENT; fi
    echo "example $v: native exit $n, detshare exit $d, output $same" >> $out/r68.txt
  done
done
kill -TERM $srv; wait $srv; echo "server: exit $?" >> $out/r68.txt
cat $out/r68.txt
