#!/usr/bin/env bash
# Run 88: the waker instead of host functions: failing asserts under MPS through detshare, GPU suites, then bench/overhead micro parts.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs" PATH=/opt/torch/.venv/bin:$PATH
r=$out/r88.txt; { date -u; nvidia-smi -L; } > $r
start=$(date +%s)
K=build-gpu/tests/kernels/devout.fatbin
gcc -O2 -o .dev/assertprobe .dev/assertprobe.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64/stubs -lcuda
tmp=$(mktemp -d)
build-gpu/server/detshare-server --device cuda --mps start --mps-dir $tmp/mps --listen unix:$tmp/s 2> $out/srv88.log & pid=$!
for i in $(seq 100); do [ -S $tmp/s ] && break; sleep 0.05; done
for n in 1 2 3 4 5; do
  DETSHARE_SERVER=unix:$tmp/s LD_LIBRARY_PATH=build-gpu/client:$LD_LIBRARY_PATH timeout 12 .dev/assertprobe $K > $out/probe.txt 2>&1
  echo "assert probe $n: exit $? $(grep -v Assertion $out/probe.txt | tr '\n' ' ')" >> $r
done
sleep 1; echo "executors left: $(pgrep -fc 'detshare-server --executor')" >> $r
kill -TERM $pid; wait $pid; echo "server exit $?" >> $r
for t in ${SUITES:-devout fault waits fastpath hostfn graph_host stream launch memcpy context partition gate isolation hostile threads graph_child streammem funcquery}; do
  [ $(( $(date +%s) - start )) -gt 300 ] && { echo "gpu test $t: not run (time)" >> $r; continue; }
  t0=$(date +%s)
  DS_TEST_DEVICE=cuda timeout 100 ./build-gpu/tests/test_$t --jobs 1 > "$out/gpu-$t.log" 2>&1; rc=$?
  echo "gpu test $t: exit $rc, $(( $(date +%s) - t0 )) s, $(grep -a Synthesis "$out/gpu-$t.log" | cut -c14-)" >> $r
  [ $rc = 0 ] && rm -f "$out/gpu-$t.log"
done
left=$(( 560 - ($(date +%s) - start) ))
echo "overhead with ${left} s left" >> $r
BUILD=build-gpu OUT=$out/overhead PARTS="micro" ROUNDS=3 COMMIT=${COMMIT:-unknown} timeout $left bash bench/overhead/run.sh > $out/overhead.txt 2>&1; echo "overhead exit $?" >> $r
echo "done at $(( $(date +%s) - start )) s" >> $r
cd "$out" && tar czf logs88.tgz --remove-files $(ls | grep -E "\.log$|\.err$") 2>/dev/null
cat $r; tail -40 $out/overhead.txt
