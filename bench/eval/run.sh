#!/usr/bin/env bash
# The evaluation (issue 28): every experiment natively and through detshare, as cells
# (experiment x mode x repeat), resumable.  docs/evaluation.md says what it runs.
#
#   bench/eval/run.sh [--quick|--full] [--device sim|cuda] [--out DIR] [EXPERIMENT...]
#
# --quick (the default): 3 repeats of 2 s windows; --full: 5 repeats of 10 s.  --device:
# cuda (the default; native baselines and detshare on the GPU) or sim (detshare's modes
# only).  --out (default lab/results/eval-DEVICE-PROFILE): where cells.jsonl, meta.json
# and raw/ go; the same --out again skips the cells it holds.  --budget SECONDS: start no
# cell that would end after that (exit 3; run again to go on).  Environment: BUILD (the
# build directory, default build), PYTHON (an interpreter with numpy), COMMIT.
# Then: bench/eval/report.py OUT.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/python.sh"
exec "$python" "$here/harness.py" "$@"
