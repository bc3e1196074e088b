#!/usr/bin/env bash
# The policy ABI as an outside policy's author gets it: `cmake --install` into a
# temporary prefix puts include/detshare/policy.h there, and examples/policy/ builds
# against it with nothing of detshare's source tree on the include path.
# usage: test_policy_abi.sh BUILD_DIR SOURCE_DIR CC
set -euo pipefail
build=$1 src=$2 cc=$3
tmp=$(mktemp -d /tmp/ds-policy-abi.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

p=$tmp/prefix
cmake --install "$build" --prefix "$p" >/dev/null
[ -f "$p/include/detshare/policy.h" ] || fail "include/detshare/policy.h not installed"
# Only standard headers besides itself: an outside policy has nothing else.
if grep -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$p/include/detshare/policy.h"; then
    fail "the installed header includes a header of the source tree"
fi
for f in "$src"/examples/policy/*.c; do
    so=$tmp/$(basename "$f" .c).so
    "$cc" -std=c11 -Wall -Wextra -Werror -shared -fPIC -I "$p/include" -o "$so" "$f" ||
        fail "$(basename "$f") does not build against $p/include"
    # grep reads everything: with -q, nm could get SIGPIPE and fail the pipe.
    nm -D --defined-only "$so" | grep -w detshare_policy >/dev/null ||
        fail "$(basename "$f"): no detshare_policy"
done
echo "ok: examples/policy built against $p/include alone"
