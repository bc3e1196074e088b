#!/usr/bin/env bash
# Every function nvml.h declares, under the name it declares and under the unversioned
# name older programs link to (nvml.h's #define nvmlInit nvmlInit_v2 and the rest), is
# exported by detshare's libnvidia-ml.so.1, and nothing but nvml* names is.
# Usage: test_nvml_exports.sh NVML_H LIBNVIDIA_ML
set -euo pipefail
hdr=$1 lib=$2
exported=$(nm -D --defined-only "$lib" | awk '{ print $3 }' | sort -u)
declared=$( {
    grep -oE 'DECLDIR +\**nvml[A-Za-z0-9_]+ *\(' "$hdr" | grep -oE 'nvml[A-Za-z0-9_]+'
    grep -oE '^ *#define +nvml[A-Za-z0-9_]+ +nvml[A-Za-z0-9_]+_v[0-9]+ *$' "$hdr" |
        awk '{ print $2 }'
} | sort -u)
missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
if [ -n "$missing" ]; then
    echo "not exported:" $missing
    exit 1
fi
others=$(echo "$exported" | grep -v '^nvml' || true)
if [ -n "$others" ]; then
    echo "exported beyond NVML:" $others
    exit 1
fi
echo "$(echo "$declared" | wc -l) names declared by nvml.h, all exported"
