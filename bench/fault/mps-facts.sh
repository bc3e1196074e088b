#!/usr/bin/env bash
# What the fault handling of issue 24 builds on, measured natively (no detshare):
#  1. one private MPS daemon, four victims and one wild tenant: who gets which error
#     when, what MPS's logs say (can they name the culprit?), and how long after the
#     fault a new client's first kernel ends;
#  2. a process that is no MPS client (an empty pipe directory) beside the same fault;
#  3. two private MPS daemons on one GPU at once: do their clients run side by side or
#     take turns (one 8-block kernel spinning 1 s in each), and does a fault under one
#     reach the other's clients?
# Usage: mps-facts.sh FAULTPROBE (bench/fault/faultprobe.cu, built with nvcc).  Writes
# $OUT/mps-facts.jsonl (every line the programs printed, tagged) and $OUT/mps-logs.txt.
set -u
fp=$(readlink -f "$1")
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
w=$(mktemp -d)
facts=$out/mps-facts.jsonl; : > "$facts"
now() { date +%s%N; }
daemon() { mkdir -p "$w/$1/pipe" "$w/$1/log"; CUDA_MPS_PIPE_DIRECTORY=$w/$1/pipe CUDA_MPS_LOG_DIRECTORY=$w/$1/log nvidia-cuda-mps-control -d; }
quit() { echo quit | CUDA_MPS_PIPE_DIRECTORY=$w/$1/pipe nvidia-cuda-mps-control > /dev/null 2>&1; }
# under DOMAIN TAG ARGS...: run faultprobe as a client of DOMAIN ("none": no MPS client), tagging its lines
under() { local d=$1 tag=$2; shift 2; mkdir -p "$w/$d/pipe"
  CUDA_MPS_PIPE_DIRECTORY=$w/$d/pipe CUDA_MPS_LOG_DIRECTORY=$w/$d/log "$fp" "$@" 2>&1 | sed "s/^/$tag\t/" >> "$facts"; }
mark() { printf 'mark\t{"what": "%s", "at_ns": %s}\n' "$1" "$(now)" >> "$facts"; }

# 1 and 2: one daemon A; victims under A and one that is no MPS client; wild under A at 3 s.
daemon A; sleep 1
under A warmup first
for i in 1 2 3 4; do under A "exp1-victim$i" victim 8 & done
under none exp1-own victim 8 &
sleep 0.5
under A exp1-wild wild 2500
mark exp1-wild-exited
# Recovery: a new client of A, tried again until its first kernel ends.
for i in $(seq 100); do
    t=$(now); under A "exp1-recover$i" first
    tail -1 "$facts" | grep -q '"error": "cudaSuccess"' && break
    sleep 0.1
done
mark exp1-recovered
wait
mark exp1-all-exited
quit A; sleep 1
{ echo "== A control.log"; cat "$w/A/log/control.log"; echo "== A server.log"; cat "$w/A/log/server.log"; } > "$out/mps-logs.txt" 2>&1

# 3: two daemons B and C at once.
daemon B; daemon C; sleep 1
under B warmB first; under C warmC first
under B exp3-alone-B work 8 500000000
under B exp3-sameB-1 work 8 500000000 & under B exp3-sameB-2 work 8 500000000 & wait
under B exp3-split-B work 8 500000000 & under C exp3-split-C work 8 500000000 & wait
under B exp3-mps-B work 8 500000000 & under none exp3-own work 8 500000000 & wait
for i in 1 2; do under B "exp3-victimB$i" victim 8 & under C "exp3-victimC$i" victim 8 & done
sleep 0.5
under B exp3-wildB wild 2500
mark exp3-wild-exited
for i in $(seq 100); do
    under B "exp3-recoverB$i" first
    tail -1 "$facts" | grep -q '"error": "cudaSuccess"' && break
    sleep 0.1
done
mark exp3-recovered
wait
quit B; quit C; sleep 1
{ for d in B C; do echo "== $d control.log"; cat "$w/$d/log/control.log"; echo "== $d server.log"; cat "$w/$d/log/server.log"; done; } >> "$out/mps-logs.txt" 2>&1
(dmesg 2>&1 | grep -i -E 'xid|NVRM' | tail -20) >> "$out/mps-logs.txt"
cat "$facts"
