#!/usr/bin/env bash
# Builds the CUDA samples that samples.sh runs, from a checkout of NVIDIA's cuda-samples,
# into the layout samples.sh expects (BIN/static/NAME/NAME, BIN/shared/NAME/NAME and the
# files each program reads beside it), packed as a .tar.xz to carry to the GPU box.
#
#   bash bench/breadth/build-samples.sh SAMPLES_CHECKOUT OUT.tar.xz [ARCH] [JOBS]
#
# ARCH is the GPU's (90 for H100/H200, the default).  The samples' own CMake files build
# for nine architectures and link the shared runtime in places; the build works on a copy
# whose architecture list is ARCH alone and whose cudart is the one asked for, so that the
# static build has no shared cudart in it.  Nothing of NVIDIA's goes into this repository:
# the checkout and the result stay outside it (.dev/ is ignored).
set -euo pipefail
src=${1:?usage: build-samples.sh SAMPLES_CHECKOUT OUT.tar.xz [ARCH] [JOBS]}
out=${2:?usage: build-samples.sh SAMPLES_CHECKOUT OUT.tar.xz [ARCH] [JOBS]}
mkdir -p "$(dirname "$out")"
out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
arch=${3:-90}
jobs=${4:-2}
here=$(cd "$(dirname "$0")" && pwd)
names=$(grep -v '^#' "$here/samples.list" | cut -d'|' -f1 | grep -v '^$')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One copy per runtime, with the architecture list and cudart rewritten.
prepare() {
    local kind=$1 dst=$work/src-$1
    cp -r "$src" "$dst"
    find "$dst/Samples" -name CMakeLists.txt -print0 |
        xargs -0 sed -i -E "s/set\(CMAKE_CUDA_ARCHITECTURES [0-9 ]+\)/set(CMAKE_CUDA_ARCHITECTURES $arch)/"
    # Only the listed samples: the others need libraries (nvJPEG, NVVM, ...) that may be
    # missing, which fails the whole configuration.
    local cat n
    for cat in "$dst"/Samples/*/; do
        : > "$cat/CMakeLists.txt"
        for n in $names; do
            [ -d "$cat/$n" ] && echo "add_subdirectory($n)" >> "$cat/CMakeLists.txt"
        done
    done
    if [ "$kind" = static ]; then
        find "$dst/Samples" -name CMakeLists.txt -print0 |
            xargs -0 sed -i -E 's/CUDA::cudart([^_a-z]|$)/CUDA::cudart_static\1/'
    fi
}

# The directory of a sample in the source tree: where its data and sources lie.
sample_dir() {
    find "$1/Samples" -mindepth 2 -maxdepth 2 -type d -name "$2" | head -1
}

build() {
    local kind=$1 cudart=Static
    [ "$kind" = shared ] && cudart=Shared
    prepare "$kind"
    cmake -S "$work/src-$kind" -B "$work/build-$kind" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_CUDA_RUNTIME_LIBRARY=$cudart > "$work/configure-$kind.log" 2>&1
    # All targets in one build, so that the jobs run in parallel; -k: a sample that does
    # not build leaves the others be (collect() takes what was built).
    # shellcheck disable=SC2086
    cmake --build "$work/build-$kind" -j "$jobs" --target $names -- -k > "$work/build-$kind.log" 2>&1 ||
        grep -E 'Error|error:' "$work/build-$kind.log" | head -20 >&2
}

# Each program in a directory of its own with what it reads: the files its build wrote
# beside it (fatbins, PTX), its source directory's data/ and .cu/.cuh files (the NVRTC
# samples compile their own sources at run time).
collect() {
    local kind=$1 n exe sd bd
    for n in $names; do
        exe=$(find "$work/build-$kind/Samples" -type f -name "$n" -perm -u+x | head -1)
        [ -n "$exe" ] || continue
        bd=$(dirname "$exe")
        sd=$(sample_dir "$work/src-$kind" "$n")
        mkdir -p "$work/bin/$kind/$n"
        cp "$exe" "$work/bin/$kind/$n/"
        find "$bd" -maxdepth 1 -type f \( -name '*.fatbin' -o -name '*.ptx' -o -name '*.cubin' \) \
            -exec cp {} "$work/bin/$kind/$n/" \;
        if [ -n "$sd" ]; then
            [ -d "$sd/data" ] && cp -r "$sd/data" "$work/bin/$kind/$n/"
            find "$sd" -maxdepth 1 -type f \( -name '*.cu' -o -name '*.cuh' -o -name '*.h' \) \
                -exec cp {} "$work/bin/$kind/$n/" \;
        fi
    done
}

build static
build shared
mkdir -p "$work/bin"
collect static
collect shared
# libgomp (cudaOpenMP) is not on the GPU box.
mkdir -p "$work/bin/libs"
gomp=$(ldconfig -p | awk '/libgomp.so.1 /{print $NF; exit}')
[ -n "$gomp" ] && cp -L "$gomp" "$work/bin/libs/"
built=$(find "$work/bin/static" "$work/bin/shared" -mindepth 1 -maxdepth 1 -type d | wc -l)
tar cJf "$out" -C "$work" bin
echo "build-samples: $built programs (both runtimes) in $out"
