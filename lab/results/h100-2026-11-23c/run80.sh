#!/usr/bin/env bash
# Run 80: the GPU suites of the three breadth branches merged on the morning of
# 2026-11-23 (arrays and textures; graph node kinds and update; stream memory
# operations, device and function queries, context settings, batched copies, stream
# attributes), each under a time limit.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs" PATH=/opt/torch/.venv/bin:$PATH
r=$out/r80.txt
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; } > $r
start=$(date +%s)
for t in ${SUITES:-array textures copy2d graph graph_nodes graph_host graph_child graph_update graph_cond graph_userobj graph_mem graph_memop capture_to_graph runtime streammem devquery ctxconfig funcquery batchcopy streamattr}; do
  [ $(( $(date +%s) - start )) -gt 540 ] && { echo "gpu test $t: not run (time)" >> $r; continue; }
  t0=$(date +%s)
  DS_TEST_DEVICE=cuda timeout 120 ./build-gpu/tests/test_$t --jobs 1 > "$out/gpu-$t.log" 2>&1; rc=$?
  echo "gpu test $t: exit $rc, $(( $(date +%s) - t0 )) s, $(grep -a Synthesis "$out/gpu-$t.log" | cut -c14-)" >> $r
  [ $rc = 0 ] && rm -f "$out/gpu-$t.log"
done
echo "done at $(( $(date +%s) - start )) s" >> $r
cd "$out" && tar czf logs80.tgz --remove-files $(ls | grep -E "\.log$|\.err$") 2>/dev/null
cat $r
