#!/usr/bin/env bash
# Run 84: the failing-assert test of test_devout, and the assert probe through detshare --mps start 4 times, with thread states of stuck executors.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs"
r=$out/r84.txt; date -u > $r
K=build-gpu/tests/kernels/devout.fatbin
gcc -O2 -o .dev/assertprobe .dev/assertprobe.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64/stubs -lcuda
DS_TEST_DEVICE=cuda timeout 100 ./build-gpu/tests/test_devout --jobs 1 --filter '*assert*' > $out/devout84.log 2>&1; echo "test_devout assert: exit $?" >> $r
tmp=$(mktemp -d)
DETSHARE_LOG=debug build-gpu/server/detshare-server --device cuda --mps start --mps-dir $tmp/mps --listen unix:$tmp/s 2> $out/srv84.log & pid=$!
for i in $(seq 100); do [ -S $tmp/s ] && break; sleep 0.05; done
for n in 1 2 3 4; do
  echo "== probe $n" >> $r
  DETSHARE_SERVER=unix:$tmp/s LD_LIBRARY_PATH=build-gpu/client:$LD_LIBRARY_PATH timeout 12 .dev/assertprobe $K >> $r 2>&1 & ap=$!
  sleep 5
  for e in $(pgrep -f "detshare-server --executor"); do
    echo "-- executor $e $(tr '\0' ' ' < /proc/$e/cmdline)" >> $r
    for tk in /proc/$e/task/*; do echo "$(basename $tk) $(cat $tk/comm) $(cat $tk/wchan) $(cat $tk/stat | cut -d' ' -f3)" >> $r; done
  done
  wait $ap; echo "probe exit $?" >> $r
done
kill -TERM $pid; sleep 3; kill -KILL $pid 2>/dev/null; wait $pid 2>/dev/null
grep -a "device context\|left:\|error\|warn\|fault\|MPS" $out/srv84.log | cut -c1-220 | tail -30 >> $r
cat $r
