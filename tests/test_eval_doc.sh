#!/usr/bin/env bash
# docs/evaluation.md is what bench/eval/publish.py makes of its template and the GPU
# results in the tree: publish.py's unit tests on a synthetic run, then the doc made
# again into a temporary file and compared, so that a hand edit of the doc or results
# committed without making it again fail here.  Needs numpy (stats.py), not matplotlib.
# Usage: test_eval_doc.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
here=$root/bench/eval
. "$here/python.sh"
"$python" "$here/test_publish.py" 2>&1 | tail -3
doc=$(mktemp)
trap 'rm -f "$doc"' EXIT
"$python" "$here/publish.py" --doc "$doc" > /dev/null
if ! diff -u "$root/docs/evaluation.md" "$doc"; then
    echo "FAIL: docs/evaluation.md is not what bench/eval/publish.py makes of" \
        "bench/eval/evaluation.md.in and lab/results/eval-*/: edit the template and run" \
        "bench/eval/publish.py"
    exit 1
fi
echo "docs/evaluation.md is up to date"
