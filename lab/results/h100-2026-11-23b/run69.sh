#!/usr/bin/env bash
# Run 69: the device-assert hang of gpu_devout (who holds what, where), and graph_events after the node_set fix.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs"
r=$out/r69.txt; date -u > $r
DS_TEST_DEVICE=cuda DETSHARE_LOG=debug timeout 40 ./build-gpu/tests/test_devout --jobs 1 --filter 'devout/a_failed_device_assert*' > $out/da.log 2>&1 &
t=$!
sleep 15
{ echo "== ps after 15 s"; ps -eo pid,ppid,stat,wchan:32,etime,args | grep -v " ps " | grep -E "detshare|test_devout|boxfort|mps" ; for p in $(pgrep -f "detshare-server --executor"); do echo "== executor $p"; cat /proc/$p/wchan; echo; ls -l /proc/$p/fd | head -20; for th in /proc/$p/task/*; do echo "task $th: $(cat $th/wchan) $(cat $th/stat | cut -d' ' -f3) syscall $(cat $th/syscall)"; cat $th/stack; done; done; } >> $r 2>&1
cp /tmp/dstest.*/server.log $out/da-server.log 2>/dev/null
wait $t; echo "devout assert exit $?" >> $r
grep -a -v "^\s*$" $out/da.log | tail -60 > $out/da-tail.log
cat $r
