#!/usr/bin/env bash
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p $out
export LD_LIBRARY_PATH="$PWD/.dev/libs"
nvcc -O2 -arch=native -o $out/burn bench/sharing/burn.cu || exit 1
d=$(mktemp -d)
DETSHARE_LOG=debug ./build-gpu/server/detshare-server --device cuda --mps start --mps-dir $d/mps --policy static --listen unix:$d/s 2> $out/dbg.log & srv=$!
for _ in $(seq 400); do [ -S $d/s ] && break; sleep 0.05; done
T() { DETSHARE_TENANT=$1 DETSHARE_SERVER=unix:$d/s LD_LIBRARY_PATH=$PWD/build-gpu/client:$LD_LIBRARY_PATH "${@:2}"; }
T idle $out/burn idle 12 & idle=$!
sleep 2
T half $out/burn 8448 200000 5
T half2 $out/burn 8448 200000 5
kill $idle; wait $idle
kill -TERM $srv; wait $srv
grep -v "proc\|serve" $out/dbg.log | grep -iE "context for|move|now runs|cannot|policy|warn|error" | cut -c1-200 | head -40
wc -l $out/dbg.log
