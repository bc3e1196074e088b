#!/usr/bin/env bash
# Run 73: the merged tree (tcp, fuzz) on a few GPU suites, then bench/coloc's second repeat of decode+ResNet-50.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs" PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
SUITES="hostile tcp memcpy launch fault managed" OUT=$out timeout 150 bash .dev/run54.sh > /dev/null 2>&1
cp $out/r54.txt $out/r73.txt
SECS=20 REPEATS=1 PAIRS="decode+resnet" MODES="native-mps shared slo-aware" OUT=$out/coloc BUILD=build-gpu timeout 420 bash bench/coloc/run.sh > $out/coloc.txt 2>&1
echo "coloc exit $?" >> $out/r73.txt
cat $out/r73.txt; grep -A8 "## Targets" $out/coloc.txt
