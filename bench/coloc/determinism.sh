#!/usr/bin/env bash
# Issue 9's determinism target: decode tokens and training losses, bitwise identical to
# running alone, under every policy, TRIALS (default 20) trials each.
#
#   BUILD=build-gpu bash bench/coloc/determinism.sh
#
# bench/coloc/trials.py's decode and train trials run alone natively first.  Then, for
# each policy in MODES (default "temporal static shared slo-aware tpot-first"), one server
# with its own MPS daemon runs:
#   - the decode trials as a latency-critical tenant beside GPT-2 training (jobs.py gpt2,
#     best-effort), which the policy shrinks, holds or moves while the decoder works;
#   - the training trials as a best-effort tenant beside the decoder (jobs.py decode,
#     latency-critical), so the trainer is the one moved.
# Each trial is compared with the native trial of the same number.  Writes under
# $OUT/determinism-coloc (default OUT=lab/results): summary.txt, every tenant's output
# and the servers' logs.  DEVICE=sim (default cuda) and a PYTHON that fakes the jobs try
# the script itself without a GPU.
set -uo pipefail
export LC_ALL=C PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export CUBLAS_WORKSPACE_CONFIG=:4096:8

repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo" || exit 1
build=$(cd "${BUILD:-build}" && pwd) || { echo "determinism.sh: no build directory" >&2; exit 1; }
out=${OUT:-$repo/lab/results}/determinism-coloc
rm -rf "$out" && mkdir -p "$out" || exit 1
py=${PYTHON:-python3} trials=${TRIALS:-20}
modes=${MODES:-temporal static shared slo-aware tpot-first}
here=$repo/bench/coloc
if [ -d .dev/libs ]; then export LD_LIBRARY_PATH="$repo/.dev/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; fi
tmp=$(mktemp -d)
srv= nb= tp= spawned=
stop_server() {
    [ -n "$tp" ] && kill "$tp" 2> /dev/null && wait "$tp" 2> /dev/null
    [ -n "$nb" ] && kill "$nb" 2> /dev/null && wait "$nb" 2> /dev/null
    [ -n "$srv" ] && kill -TERM "$srv" 2> /dev/null && wait "$srv"
    srv= nb= tp=
}
trap 'stop_server; rm -rf "$tmp"' EXIT

# Trials that differ from the native run's, and trials missing.
compare() {
    "$py" - "$out/native-$1.jsonl" "$2" << 'EOF'
import json, sys
def load(p):
    try:
        return {r["trial"]: r["digest"] for r in
                (json.loads(l) for l in open(p) if l.startswith("{"))}
    except OSError:
        return {}
a, b = load(sys.argv[1]), load(sys.argv[2])
print(f"{sum(1 for t in a if t in b and a[t] != b[t])} mismatches, "
      f"{sum(1 for t in a if t not in b)} missing of {len(a)}")
EOF
}

# Start a tenant of the server in the background: $1 its name, $2 its class, the rest the
# command.  $spawned is the tenant's own pid (env and timeout exec and forward signals),
# so that killing it ends the tenant, not a subshell around it.
spawn() {
    local name=$1 class=$2
    shift 2
    env DETSHARE_SERVER="unix:$tmp/s" DETSHARE_TENANT="$name" DETSHARE_CLASS="$class" \
        LD_LIBRARY_PATH="$build/client:$LD_LIBRARY_PATH" CUDA_CACHE_PATH="$tmp/cache" "$@" &
    spawned=$!
}

# Under policy $1: trials of kind $2 as tenant class $3, beside jobs.py's $4 as class $5.
beside() {
    local policy=$1 kind=$2 class=$3 job=$4 nclass=$5 f=$out/$1-$2
    spawn "nb-$kind" "$nclass" timeout 900 "$py" "$here/jobs.py" "$job" 600 \
        > "$f-neighbour.jsonl" 2> "$f-neighbour.err"
    nb=$spawned
    # The neighbour's first line comes once its model is built and it runs.
    for _ in $(seq 1200); do [ -s "$f-neighbour.jsonl" ] && break; sleep 0.1; done
    spawn "trials-$kind" "$class" timeout 600 "$py" "$here/trials.py" "$kind" "$trials" \
        > "$f.jsonl" 2> "$f.err"
    tp=$spawned
    # The last status while the trials ran: how often the policy moved and held them.
    while kill -0 "$tp" 2> /dev/null; do
        "$build/server/detshare-ctl" --admin "unix:$tmp/s.admin" status --json > "$tmp/status" 2> /dev/null &&
            mv "$tmp/status" "$f-status.json"
        sleep 1
    done
    wait "$tp"
    tp=
    kill "$nb" 2> /dev/null && wait "$nb" 2> /dev/null
    nb=
    echo "$policy: $kind $(compare "$kind" "$f.jsonl"); $(acted "trials-$kind" "$f-status.json")" \
        "(neighbour $(acted "nb-$kind" "$f-status.json"))" | tee -a "$out/summary.txt"
}

# What the policy did to tenant $1, from the status in $2.  Both tenants are told: under
# slo-aware the policy moves the best-effort one, whichever of the two runs the trials.
acted() {
    "$py" - "$1" "$2" << 'EOF'
import json, sys
try:
    ts = [t for t in json.load(open(sys.argv[2]))["tenants"] if t["name"] == sys.argv[1]]
except (OSError, ValueError, KeyError):
    ts = []
print(f"moved {ts[0]['migrations']} times, held {ts[0]['gated_ms']} ms" if ts else "no status")
EOF
}

for kind in decode train; do
    "$py" "$here/trials.py" "$kind" "$trials" > "$out/native-$kind.jsonl" 2> "$out/native-$kind.err"
done
for policy in $modes; do
    rm -f "$tmp/s"
    "$build/server/detshare-server" --device "${DEVICE:-cuda}" --policy "$policy" --warm 2 \
        --mps-dir "$tmp/mps-$policy" --listen "unix:$tmp/s" 2> "$out/server-$policy.log" &
    srv=$!
    for _ in $(seq 300); do [ -S "$tmp/s" ] && break; sleep 0.05; done
    sleep 1
    beside "$policy" decode latency gpt2 best-effort
    beside "$policy" train best-effort decode latency
    stop_server
done
echo "$(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2> /dev/null)" \
    "commit ${COMMIT:-$(git rev-parse --short HEAD 2> /dev/null)}" >> "$out/summary.txt"
