#!/usr/bin/env bash
# Issue 29's XLA triangular solve: JAX's float64 jnp.linalg.solve (and eigh) of a
# 128x128 SPD matrix, natively twice and through a detshare server; the digests it prints
# must be those of the native runs (which must agree with each other: XLA's GEMM
# autotuning is off, as in bench/breadth).  Through detshare it once failed with
# "INTERNAL: Unable to launch triangular solve".  Skipped (77) without a GPU or JAX.
# Usage: test_jax_solve.sh BUILD_DIR
set -uo pipefail
build=$(cd "$1" && pwd)
repo=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}
nvidia-smi -L > /dev/null 2>&1 || exit 77
export XLA_FLAGS=--xla_gpu_autotune_level=0
"$python" -c 'import jax, sys; sys.exit(0 if jax.default_backend() == "gpu" else 1)' \
    > /dev/null 2>&1 || { echo "no JAX with a GPU: skipped"; exit 77; }
t=$(mktemp -d)
"$build/server/detshare-server" --device cuda --mps start --mps-dir "$t/mps" --warm 0 \
    --listen "unix:$t/s" 2> "$t/server.log" &
srv=$!
trap 'kill -TERM $srv 2> /dev/null; wait $srv; rm -rf "$t"' EXIT
for _ in $(seq 400); do [ -S "$t/s" ] && break; sleep 0.05; done
[ -S "$t/s" ] || { echo "FAIL: no server"; cat "$t/server.log"; exit 1; }
one() { "$python" "$repo/bench/breadth/programs.py" jaxsolve 2> "$t/$1.err" | tail -1; }
a=$(one native) b=$(one native-again)
c=$(DETSHARE_SERVER="unix:$t/s" DETSHARE_TENANT=jax-solve \
    LD_LIBRARY_PATH="$build/client${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" one detshare)
echo "native:       $a"; echo "native again: $b"; echo "detshare:     $c"
[ -n "$a" ] && [ "$a" = "$b" ] || { echo "FAIL: the native runs differ or failed"; tail -5 "$t/native.err"; exit 1; }
[ "$c" = "$a" ] || { echo "FAIL: through detshare"; tail -5 "$t/detshare.err"; tail -5 "$t/server.log"; exit 1; }
echo "PASS"
