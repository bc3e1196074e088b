#!/usr/bin/env bash
# Run 108 (prepared, not run: this session's device time was spent): issue 9's
# determinism target, 20 decode and 20 training trials under each policy beside a
# neighbour the policy acts on (bench/coloc/determinism.sh).  Five policies may not fit
# one 600 s command: MODES splits them, e.g. MODES="temporal static shared" here and
# MODES="slo-aware tpot-first" in a second command (each repeats the native trials).
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs" PATH=/opt/torch/.venv/bin:$PATH
BUILD=build-gpu OUT=$out TRIALS=${TRIALS:-20} MODES="${MODES:-temporal static shared}" \
  COMMIT=${COMMIT:-unknown} timeout 580 bash bench/coloc/determinism.sh
tail -12 $out/determinism-coloc/summary.txt
tar czf $out/determinism-coloc.tgz -C $out determinism-coloc
