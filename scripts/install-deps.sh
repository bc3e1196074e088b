#!/usr/bin/env bash
# Install what building detshare needs, from Debian/Ubuntu packages, when it is missing.
# The CUDA toolkit itself is expected to be installed already (/usr/local/cuda).
set -euo pipefail
pkgs=(cmake gcc make pkg-config rpcsvc-proto libtirpc-dev libuv1-dev libzstd-dev libcriterion-dev libmsgpack-dev procps jq)
missing=()
for p in "${pkgs[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing: ${missing[*]}"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if ! command -v nvcc >/dev/null && [ ! -d /usr/local/cuda/include ]; then
    echo "the CUDA toolkit was not found (no nvcc on PATH, no /usr/local/cuda)" >&2
    exit 1
fi
