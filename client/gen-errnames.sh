#!/bin/sh
# Write the CUresult table used by errors.c: one {code, "NAME", "text"} row per value of
# enum cudaError_enum in cuda.h, the text being the value's doc comment's first sentence.
# Usage: gen-errnames.sh CUDA_H OUT
set -eu
awk '
/^typedef enum cudaError_enum/ { inside = 1; next }
inside && /^}/ { inside = 0 }
inside && /\/\*\*/ { doc = $0; sub(/.*\/\*\*[ \t]*/, "", doc); collecting = 1 }
inside && collecting && !/\/\*\*/ { line = $0; sub(/^[ \t]*\*?[ \t]*/, "", line); doc = doc " " line }
inside && /\*\// { collecting = 0; sub(/[ \t]*\*\/.*/, "", doc); text = doc }
inside && /^[ \t]*CUDA_(SUCCESS|ERROR_[A-Z0-9_]+)[ \t]*=/ {
    name = $1; val = $3; sub(/,.*/, "", val)
    t = text; sub(/\. .*/, "", t); sub(/\.$/, "", t); gsub(/\\/, "", t); gsub(/"/, "\x27", t)
    gsub(/::/, "", t); sub(/^[ \t]+/, "", t)
    printf "    { %s, \"%s\", \"%s\" },\n", val, name, t
    text = ""
}
' "$1" > "$2.tmp"
test -s "$2.tmp"
mv "$2.tmp" "$2"
