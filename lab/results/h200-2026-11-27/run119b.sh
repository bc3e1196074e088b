#!/usr/bin/env bash
# Run 119b: driver_facts again, one identity kind per process (a kind crashed the single
# process of run 119), the handover test with its server log on failure, and the
# launch checks after the short extra buffer is sent whole.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main; [ -e build-gpu ] || ln -s .dev/build-gpu build-gpu
export LD_LIBRARY_PATH="$PWD/.dev/libs"
t=$(mktemp -d)
gcc -std=c11 -O2 -o "$t/driver_facts" bench/compat/driver_facts.c -I/usr/local/cuda/include -lcuda
for ctx in primary created; do
    for k in $(seq 0 23); do
        timeout 20 "$t/driver_facts" identity $ctx $k >> "$out/driver-facts.jsonl" 2>&1 \
            || echo "{\"identity\":\"$ctx\",\"kind\":$k,\"exit\":$?}" >> "$out/driver-facts.jsonl"
    done
done
timeout 60 "$t/driver_facts" pool >> "$out/driver-facts.jsonl" 2>&1
for s in handover launch_checks; do
    DS_TEST_DEVICE=cuda timeout 90 ./build-gpu/tests/test_$s --jobs 1 > "$out/gpu-$s.log" 2>&1
    echo "gpu test $s: exit $? $(grep -a 'Synthesis' "$out/gpu-$s.log" | tail -1)"
done
cat "$out/driver-facts.jsonl"
