#!/usr/bin/env bash
# Run 118: bench/fault/blast.sh alone (run 117's gave the server the tenants' libcuda on
# its library path, so no server started: fixed in blast.sh).
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main; [ -e build-gpu ] || ln -s .dev/build-gpu build-gpu
export LD_LIBRARY_PATH="$PWD/.dev/libs"
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; } > "$out/device.txt" 2>&1
t=$(mktemp -d)
nvcc -arch=sm_90 -O2 -o "$t/faultprobe" bench/fault/faultprobe.cu -lcuda
OUT=$out timeout ${CAP:-230} bash bench/fault/blast.sh "$t/faultprobe" build-gpu ${REPEATS:-2} 4 > /dev/null 2>&1
echo "blast: exit $?" >> "$out/device.txt"
cat "$out/device.txt"
python3 - "$out/blast.jsonl" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(r["scenario"], r["repeat"], r["round"], "survived", r["victims_survived"], "/", r["victims"],
          "wild", r["wild_error"], "recovery_ms", r["recovery_ms"], "own", r["log_own_fault"],
          "named", r["log_lost_to_named"], "unattr", r["log_unattributed"], "quar", r["log_quarantined"],
          "told", r["victims_told_on_stderr"], "nomps", r["log_no_mps_client"], r["victim_errors"])
PY
