#!/usr/bin/env bash
# Programs users bring (CuPy with cuBLAS/cuFFT/cuSOLVER/cuSPARSE, Triton, torch.compile,
# JAX, numba-cuda, a PyTorch DataLoader with pinned memory and workers, CUDA tensors
# handed to another process, PyTorch's expandable segments, a bf16 Llama-style model with
# transformers, CUDA graphs, fused attention, NCCL with DDP, cuDNN's LSTM, FP8 GEMMs),
# each run natively twice and then through one detshare-server: the hashes
# each prints must be identical.  A program whose two native runs differ is not
# deterministic on its own, and is reported so rather than compared.  GPU box only.
#
# Environment: BUILD (default build-gpu), OUT (default lab/results), PYTHON (default
# python3), WHAT (the programs, default all), CAP (seconds per run, default 150), MPS
# (the server's --mps, default start), COMMIT.  JAX runs with XLA's GEMM autotuning off
# (it times candidates, so even two native runs can differ: lab/gpu-runs.md, run 48).
# Writes breadth-<gpu>-<date>.md and .json, and -raw.tar.gz with every run's stderr and
# the server's log.
set -u -o pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo" || exit 1
build=$(cd "${BUILD:-build-gpu}" && pwd) || exit 1
out=${OUT:-$repo/lab/results}
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 1
python=${PYTHON:-python3}
cap=${CAP:-150}
what=${WHAT:-cupy cupy2 cupyraw triton tritonauto compile compiletrain jax numba resnet loader mp expand bf16 bf16train cudagraph sdpa nccl lstm fp8}
[ -d .dev/libs ] && export LD_LIBRARY_PATH="$repo/.dev/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONUNBUFFERED=1 XLA_FLAGS=--xla_gpu_autotune_level=0
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) || { echo "run.sh: no GPU" >&2; exit 1; }
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
slug=$(echo "$gpu" | tr '[:upper:]' '[:lower:]' | sed -e 's/^nvidia //' -e 's/[^a-z0-9]\+/-/g')
name=breadth-$slug-$(date -u +%Y-%m-%d)
raw=$out/$name-raw
rm -rf "$raw" && mkdir -p "$raw" || exit 1
tmp=$(mktemp -d)
# A private MPS directory: a server left by an earlier step on the same GPU owns the
# default one, and this one would not start (run 131).
"$build/server/detshare-server" --device cuda --mps "${MPS:-start}" --mps-dir "$tmp/mps" \
    --listen "unix:$tmp/s" \
    2> "$raw/server.log" &
srv=$!
trap 'kill -TERM $srv 2> /dev/null; wait $srv; rm -rf "$tmp"' EXIT
for _ in $(seq 400); do [ -S "$tmp/s" ] && break; sleep 0.05; done
[ -S "$tmp/s" ] || { echo "run.sh: the server did not start:" >&2; cat "$raw/server.log" >&2; exit 1; }

# One run: the program's last stdout line, its wall seconds and exit status, as JSON.
run_one() {
    local mode=$1 prog=$2 env=() t0 line rc
    [ "$prog" = expand ] && env+=(PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True)
    [ "$mode" = detshare ] && env+=(DETSHARE_SERVER="unix:$tmp/s" DETSHARE_TENANT="breadth-$prog"
        LD_LIBRARY_PATH="$build/client:${LD_LIBRARY_PATH:-}")
    t0=$(date +%s%N)
    line=$(env "${env[@]}" timeout "$cap" "$python" bench/breadth/programs.py "$prog" \
        2> "$raw/$prog-$mode.err" | tail -1)
    rc=$?
    "$python" -c 'import json, sys; print(json.dumps({"mode": sys.argv[1], "program": sys.argv[2],
        "line": sys.argv[3], "exit": int(sys.argv[4]), "seconds": round(int(sys.argv[5]) / 1e9, 2)}))' \
        "$mode" "$prog" "$line" "$rc" "$(( $(date +%s%N) - t0 ))"
}

: > "$raw/runs.jsonl"
for prog in $what; do
    run_one native "$prog" >> "$raw/runs.jsonl"
    run_one native-again "$prog" >> "$raw/runs.jsonl"
    run_one detshare "$prog" >> "$raw/runs.jsonl"
done
"$python" - "$raw/runs.jsonl" "$out/$name" "$gpu" "$driver" "${COMMIT:-$(git rev-parse --short HEAD 2> /dev/null)}" << 'EOF'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
prefix, gpu, driver, commit = sys.argv[2:6]
by = {}
for r in runs:
    by.setdefault(r["program"], {})[r["mode"]] = r
rows = []
for prog, m in by.items():
    n, a, d = m.get("native", {}), m.get("native-again", {}), m.get("detshare", {})
    ran = bool(n.get("line")) and n.get("exit") == 0
    repeatable = ran and a.get("exit") == 0 and a.get("line") == n.get("line")
    ok = repeatable and d.get("exit") == 0 and n.get("line") == d.get("line")
    rows.append({"program": prog, "native": n, "native_again": a, "detshare": d,
                 "native_repeatable": repeatable, "identical": ok})
json.dump({"gpu": gpu, "driver": driver, "commit": commit, "programs": rows},
          open(prefix + ".json", "w"), indent=1)
with open(prefix + ".md", "w") as f:
    f.write(f"# bench/breadth: {gpu}, driver {driver}, commit {commit}\n\n")
    f.write("| program | native | detshare | native s | detshare s | native twice the same "
            "| identical |\n")
    f.write("| --- | --- | --- | ---: | ---: | --- | --- |\n")
    for r in rows:
        n, d = r["native"], r["detshare"]
        cell = lambda x: (x.get("line") or f"exit {x.get('exit')}").replace("|", "/")
        same = "yes" if r["native_repeatable"] else "**no**"
        verdict = "yes" if r["identical"] else "**no**" if r["native_repeatable"] else "-"
        f.write(f"| {r['program']} | {cell(n)} | {cell(d)} | {n.get('seconds', '-')} | "
                f"{d.get('seconds', '-')} | {same} | {verdict} |\n")
    f.write(f"\n{sum(r['identical'] for r in rows)} of {len(rows)} identical; "
            f"{sum(not r['native_repeatable'] for r in rows)} not comparable (a native run "
            "failed, or two native runs differed).\n")
print(open(prefix + ".md").read())
EOF
tar czf "$out/$name-raw.tar.gz" -C "$out" "$name-raw" && rm -rf "$raw"
