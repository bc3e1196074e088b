#!/usr/bin/env bash
# Build detshare with AddressSanitizer and UndefinedBehaviorSanitizer and run every test
# (GPU tests report themselves skipped where there is no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
. scripts/env.sh
cmake -S . -B build-test -DDETSHARE_SANITIZE=ON -DDETSHARE_WERROR=ON >/dev/null
cmake --build build-test -j"$(nproc)"
ctest --test-dir build-test --output-on-failure -j"$(nproc)" --timeout 600
