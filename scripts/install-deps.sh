#!/usr/bin/env bash
# Install what building detshare needs, from Debian/Ubuntu packages, when it is missing.
# The CUDA toolkit itself is expected to be installed already (/usr/local/cuda).
set -euo pipefail
pkgs=(cmake gcc make pkg-config rpcsvc-proto libtirpc-dev libuv1-dev libzstd-dev libcriterion-dev libmsgpack-dev procps jq
    libssl-dev openssl
    python3-numpy g++ libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
    libcurl4-openssl-dev python3-grpcio python3-protobuf)
# deploy/kubernetes's checks (scripts/check-k8s-manifests.sh) and the container image
# (packaging/container/build.sh).  kubectl, which renders the manifests, is not among
# them: Debian's kubernetes-client (1.20) is too old for them, so the check uses the
# machine's own kubectl or kustomize and reports itself skipped without one.
pkgs+=(yamllint shellcheck python3-yaml python3-venv dpkg-dev mmdebstrap umoci)
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
# kubernetes-validate (Kubernetes' schemas, 1.25 to 1.37) in a virtual environment of
# its own, where scripts/check-k8s-manifests.sh looks for it.
tools=${DETSHARE_TOOLS:-/opt/detshare-tools}
if [ ! -x "$tools/bin/kubernetes-validate" ]; then
    echo "installing kubernetes-validate==1.37.0 in $tools"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo python3 -m venv "$tools"
    $sudo "$tools/bin/pip" install -q kubernetes-validate==1.37.0
fi
