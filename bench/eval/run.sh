#!/usr/bin/env bash
# The evaluation (issue 28): every experiment natively and through detshare, as cells
# (experiment x mode x repeat), resumable.  docs/evaluation.md says what it runs.
#
#   bench/eval/run.sh [--quick|--full] [--device sim|cuda] [--out DIR] [--calibrate]
#                     [--budget SECONDS] [--modes A,B] [--repeats N] [--secs S] [EXPERIMENT...]
#
# Experiments: latflood, infer, train-compute, train-memory, train-small (trainpair: the
# three), overhead; without names, the profile's set.  --quick (the default): 3 repeats,
# short windows, on a GPU four co-located modes; --full: 5 repeats, longer windows, every
# mode.  --calibrate: first check, per experiment not calibrated in DIR yet, that its
# best-effort jobs fill the device and that time-slicing hurts its latency job, choosing
# its parameters (DIR/calibration.json).  --device: cuda (the default; native baselines
# and detshare on the GPU) or sim (detshare's modes only, PyTorch jobs as stand-ins).
# --out (default lab/results/eval-DEVICE-PROFILE): where cells.jsonl, meta.json and raw/
# go; the same --out again skips the cells it holds.  --budget: start nothing that would
# end after that (exit 3; run again to go on).  Environment: BUILD (the build directory,
# default build), PYTHON (an interpreter with numpy), TORCH_PYTHON (one with PyTorch),
# COMMIT.  docs/evaluation.md says the rest.  Then: bench/eval/report.py OUT.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/python.sh"
exec "$python" "$here/harness.py" "$@"
