#!/usr/bin/env bash
# Run 132: bench/eval llm (tpot-first again after 61ac40c, its earlier cells kept aside,
# and the cells left) and determinism's cells left; infer-floor's last cell.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main; [ -e build-gpu ] || ln -s .dev/build-gpu build-gpu
export LD_LIBRARY_PATH="$PWD/.dev/libs"
t=$(mktemp -d)
# tpot-first's llm cells measured before 61ac40c go aside (kept), so that run.sh runs them again
python3 - lab/results/eval-cuda-quick <<'PY'
import json, sys
r = sys.argv[1]
lines = open(r + "/cells.jsonl").read().splitlines()
old = [l for l in lines if json.loads(l)["experiment"] == "llm" and json.loads(l)["scenario"] == "detshare-tpot-first"]
open(r + "/cells.jsonl", "w").write("".join(l + "\n" for l in lines if l not in old))
open(r + "/llm-tpot-first-before-61ac40c.jsonl", "a").write("".join(l + "\n" for l in old))
PY
RESULTS=lab/results/eval-cuda-quick BUDGET=${B:-300} LIMIT=${L:-420} OUT=$t/llm \
    bash bench/eval/gpu-run.sh --quick --calibrate llm determinism > "$t/llm.txt" 2>&1
tar czf "$out/llm.tgz" -C "$t" llm llm.txt
RESULTS=lab/results/eval-cuda-quick-floor BUDGET=10 LIMIT=80 OUT=$t/floor \
    bash bench/eval/gpu-run.sh --quick --calibrate infer > "$t/floor.txt" 2>&1
tar czf "$out/floor.tgz" -C "$t" floor floor.txt
tail -30 "$t/llm.txt"
