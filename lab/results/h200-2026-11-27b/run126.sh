#!/usr/bin/env bash
# Run 126 (the session's last minutes): capture_hostfn's two GPU failures of run 125 with
# their whole logs, and the cuSPARSE repeat test after its digest fix, shortened.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main; [ -e build-gpu ] || ln -s .dev/build-gpu build-gpu
export LD_LIBRARY_PATH="$PWD/.dev/libs"
DS_TEST_DEVICE=cuda timeout 60 ./build-gpu/tests/test_capture_hostfn --jobs 1 > "$out/capture_hostfn.log" 2>&1
echo "capture_hostfn: exit $?"
grep -a -v "^  server" "$out/capture_hostfn.log" | grep -a -A40 "Assertion" | head -120
PROCS=2 RUNS=3 timeout 100 bash tests/test_sparse_repeat.sh "$PWD/build-gpu" > "$out/sparse.txt" 2>&1
echo "sparse: exit $?"; grep -v Warning "$out/sparse.txt" | grep -v "torch.rand" | tail -15
