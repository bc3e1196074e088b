#!/usr/bin/env bash
# Bit-identical results on every SM partition and across moves (lab/gpu-runs.md).
# bench/sharing/determinism.py's LM-head trials and the ResNet-50 training losses of
# bench/torch_determinism.py run natively, then through one server (under its own MPS
# daemon) in each scenario:
#   alone     --policy shared, the tenant alone (all SMs)
#   static2   --policy static beside 1 idle tenant (the GPU split in two)
#   static3   ... beside 2 idle tenants (in three)
#   static5   ... beside 4 idle tenants (in five)
#   moving    static beside 1 idle tenant while detshare-ctl switches the policy between
#             static and shared every 20 ms, so the tenant moves mid-run
# Each scenario's trials are compared with the native run's, trial by trial.  Expects
# build-gpu and .dev/libs; writes under $OUT/determinism (TRIALS, default 100).
set -u
out=${OUT:-/tmp/ds-out}/determinism
mkdir -p "$out"
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo" || exit 1
export LD_LIBRARY_PATH="$repo/.dev/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CUBLAS_WORKSPACE_CONFIG=:4096:8 PYTHONUNBUFFERED=1
py=${PYTHON:-python3} trials=${TRIALS:-100}
det=bench/sharing/determinism.py train=bench/torch_determinism.py

"$py" $det lmhead "$trials" > "$out/native.jsonl" 2> "$out/native.err"
"$py" $train resnet > "$out/native-train.txt" 2>&1

dir=$(mktemp -d)
./build-gpu/server/detshare-server --device cuda --mps start --mps-dir "$dir/mps" \
    --policy shared --listen "unix:$dir/s" 2> "$out/server.log" &
srv=$!
for _ in $(seq 400); do [ -S "$dir/s" ] && break; sleep 0.05; done
sleep 1
ds() { env DETSHARE_SERVER="unix:$dir/s" LD_LIBRARY_PATH="$repo/build-gpu/client:$LD_LIBRARY_PATH" "$@"; }
# The same in the background; $spawned is the tenant's own pid (env execs it), so that
# killing it ends the tenant, not a subshell around it.
spawn() {
    env DETSHARE_SERVER="unix:$dir/s" LD_LIBRARY_PATH="$repo/build-gpu/client:$LD_LIBRARY_PATH" "$@" &
    spawned=$!
}
ctl() { ./build-gpu/server/detshare-ctl --admin "unix:$dir/s.admin" "$@"; }

# Trials that differ from the native run's, and trials missing.
compare() {
    "$py" - "$out/native.jsonl" "$1" <<'PY'
import json, sys
def load(p):
    return {r["trial"]: (r["digest"], r["tokens"]) for r in
            (json.loads(l) for l in open(p) if l.startswith("{"))}
a, b = load(sys.argv[1]), load(sys.argv[2])
print(f"{sum(1 for t in a if t in b and a[t] != b[t])} mismatches, {sum(1 for t in a if t not in b)} missing of {len(a)}")
PY
}

scenario() { # name policy idle-tenants switch
    local name=$1 idles=() sw=
    ctl policy "$2" > /dev/null
    for i in $(seq "$3"); do
        spawn DETSHARE_TENANT="idle$i" "$py" $det idle > "$out/$name-idle$i.txt" 2>&1
        idles+=("$spawned")
    done
    for i in $(seq "$3"); do
        for _ in $(seq 600); do grep -q ready "$out/$name-idle$i.txt" 2> /dev/null && break; sleep 0.05; done
    done
    if [ "$4" = 1 ]; then
        (while :; do ctl policy shared > /dev/null; sleep 0.02; ctl policy static > /dev/null; sleep 0.02; done) &
        sw=$!
    fi
    spawn DETSHARE_TENANT="det-$name" "$py" $det lmhead "$trials" > "$out/$name.jsonl" 2> "$out/$name.err"
    local p=$spawned
    sleep 1
    ctl status --json > "$out/$name-status.json" 2>&1
    wait $p
    ds DETSHARE_TENANT="train-$name" "$py" $train resnet > "$out/$name-train.txt" 2>&1
    [ -n "$sw" ] && { kill $sw; wait $sw 2> /dev/null; ctl policy static > /dev/null; }
    # A bare `wait` would wait for the server too.
    if [ "${#idles[@]}" -gt 0 ]; then
        kill "${idles[@]}"
        wait "${idles[@]}" 2> /dev/null
    fi
    local moves sms
    # Where the LM-head tenant ran: the executor logs each move with the SMs it got.
    sms=$(grep -h "tenant\[det-$name\].*now runs on" "$out/server.log" | grep -o '[0-9]* SMs\|whole device' | sort -u | tr '\n' ' ')
    moves=$(grep -c "tenant\[det-$name\].*moved in" "$out/server.log")
    if cmp -s <(grep -v took "$out/native-train.txt") <(grep -v took "$out/$name-train.txt"); then
        t=identical
    else
        t=DIFFERENT
    fi
    echo "$name: lmhead $(compare "$out/$name.jsonl") (on: ${sms:-all 132 SMs}); moves of the LM-head tenant: $moves; training losses: $t" | tee -a "$out/summary.txt"
}

scenario alone shared 0 0
scenario static2 static 1 0
scenario static3 static 2 0
scenario static5 static 4 0
scenario moving static 1 1
kill -TERM $srv; wait $srv
echo "server exit $?; MPS daemons left: $(pgrep -c -f nvidia-cuda-mps-control)" | tee -a "$out/summary.txt"
