#!/usr/bin/env bash
# Run 113 (prepared, not run: this session's device time was spent): issue 9's bursty
# scenario again after f79198e, where tpot-first stopped confining a lone decoder for its
# own sake (run 108's decoder was put on a quarter of the SMs 6 times in 8 s).  One
# repeat per command; join repeats with bench/coloc/report.py RAW... PREFIX, with runs
# 91, 92 and 106 for the earlier code.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs" PATH=/opt/torch/.venv/bin:$PATH
BUILD=build-gpu OUT=$out SECS=20 REPEATS=1 PAIRS="decode+prefill" MODES="slo-aware tpot-first" \
  COMMIT=${COMMIT:-unknown} timeout 560 bash bench/coloc/run.sh > $out/coloc.txt 2>&1
tail -24 $out/coloc.txt
tar xzf $out/coloc-*-raw.tar.gz -O --wildcards '*server-tpot-first*' | grep "policy tpot-first" | head -20
