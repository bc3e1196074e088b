#!/usr/bin/env bash
# Build the libFuzzer targets with clang (fuzz/README.md) and run each for SECONDS
# (default 60) from the committed seed corpus, one at a time.  Fails when a target finds
# a crash, leak, hang (an input running over 10 s) or sanitizer report; the input that
# did it is left in build-fuzz/artifacts/.  New inputs go to build-fuzz/corpus/, not to
# the committed corpus.  FUZZ_SEED fixes libFuzzer's seed (CI's is fixed, so that a
# commit's run mostly repeats itself; unset, each run explores afresh).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
have_libfuzzer() {
    command -v clang >/dev/null &&
        [ -f "$(clang -print-resource-dir)/lib/linux/libclang_rt.fuzzer-x86_64.a" ]
}
if ! have_libfuzzer; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq clang >/dev/null
    have_libfuzzer || DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
        "libclang-rt-$(clang -dumpversion | cut -d. -f1)-dev" >/dev/null
fi
. scripts/env.sh
CC=clang cmake -S . -B build-fuzz -DDETSHARE_FUZZ=ON -DDETSHARE_TESTS=OFF >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target fuzz_exec fuzz_reply
mkdir -p build-fuzz/artifacts
for t in exec reply; do
    mkdir -p "build-fuzz/corpus/$t"
    echo "fuzz_$t: ${seconds}s"
    build-fuzz/fuzz/fuzz_$t -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
        ${FUZZ_SEED:+-seed="$FUZZ_SEED"} \
        -print_final_stats=1 -artifact_prefix=build-fuzz/artifacts/ \
        "build-fuzz/corpus/$t" "fuzz/corpus/$t" 2>"build-fuzz/fuzz_$t.log" || {
        tail -n 60 "build-fuzz/fuzz_$t.log" >&2
        echo "fuzz_$t failed: the input is in build-fuzz/artifacts/" >&2
        exit 1
    }
    grep -E '^(#[0-9]+\s+DONE|stat::number_of_executed_units|stat::average_exec_per_sec)' \
        "build-fuzz/fuzz_$t.log"
done
