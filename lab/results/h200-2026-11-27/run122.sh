#!/usr/bin/env bash
# Run 122: issue 27's check that the architecture step changed no hot path: bench/overhead's
# driver-API and small-op PyTorch parts with the build of the session's start (eee3f36,
# .dev/build-before) and with this one (.dev/build-gpu), alternating, twice each.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; } > "$out/device.txt" 2>&1
for k in 1 2; do
    for b in before gpu; do
        mkdir -p "$out/$b-$k"
        COMMIT=$b PARTS="micro torch-micro" ROUNDS=3 BUILD=.dev/build-$b OUT="$out/$b-$k" \
            timeout 140 bash bench/overhead/run.sh > "$out/$b-$k/run.log" 2>&1
        echo "$b-$k: exit $?" >> "$out/device.txt"
    done
done
cat "$out/device.txt"
for f in "$out"/*/overhead-*.md; do echo "== $f"; grep -E "^\|" "$f" | head -30; done
