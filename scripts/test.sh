#!/usr/bin/env bash
# Build detshare twice and run every test in both builds: with AddressSanitizer and
# UndefinedBehaviorSanitizer, and plain (where nvcc-built CUDA runtime programs also run:
# they cannot host the sanitizer runtime).  GPU tests report themselves skipped where
# there is no GPU.  The container image's test (label `image`: a package build and a
# Debian root fetched from the network) runs only with DETSHARE_TEST_IMAGE=1.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
. scripts/env.sh
for cfg in "build-test -DDETSHARE_SANITIZE=ON" "build-test-plain -DDETSHARE_SANITIZE=OFF"; do
    set -- $cfg
    cmake -S . -B "$1" "$2" -DDETSHARE_WERROR=ON >/dev/null
    cmake --build "$1" -j"$(nproc)"
    skip=(-LE image)
    [ "${DETSHARE_TEST_IMAGE:-0}" = 1 ] && skip=()
    ctest --test-dir "$1" --output-on-failure -j"$(nproc)" --timeout 600 "${skip[@]}"
done
