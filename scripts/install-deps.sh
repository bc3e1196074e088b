#!/usr/bin/env bash
# Install what building detshare needs, from Debian/Ubuntu packages, when it is missing.
# The CUDA toolkit itself is expected to be installed already (/usr/local/cuda).
set -euo pipefail
pkgs=(cmake gcc make pkg-config rpcsvc-proto libtirpc-dev libuv1-dev libzstd-dev libcriterion-dev libmsgpack-dev procps jq
    python3-numpy g++ libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
    libcurl4-openssl-dev python3-grpcio python3-protobuf)
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
# libnvidia-ml.so.1 (nvml/) is built from nvml.h, which a toolkit installed without
# its NVML part lacks: take the header of the toolkit's release from NVIDIA's
# nvidia-nvml-dev wheel into /usr/local/include.
inc=/usr/local/cuda/include
if [ ! -f "$inc/nvml.h" ] && [ ! -f /usr/local/include/nvml.h ]; then
    # CUDA_VERSION 13000 is release 13.0.
    ver=$(awk '/#define CUDA_VERSION / { print int($3 / 1000) "." int($3 % 1000 / 10) }' \
        "$inc/cuda.h")
    echo "installing nvml.h from nvidia-nvml-dev==${ver}.*"
    tmp=$(mktemp -d)
    python3 -m pip download -q --no-deps -d "$tmp" "nvidia-nvml-dev==${ver}.*"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    python3 -c 'import sys, zipfile, glob
z = zipfile.ZipFile(glob.glob(sys.argv[1] + "/*.whl")[0])
name = next(n for n in z.namelist() if n.endswith("/include/nvml.h"))
sys.stdout.buffer.write(z.read(name))' "$tmp" > "$tmp/nvml.h"
    $sudo install -m 644 "$tmp/nvml.h" /usr/local/include/nvml.h
    rm -rf "$tmp"
fi
