"""Statistics of bench/eval: medians, 95% bootstrap intervals, and target decisions.

A figure of the evaluation is the median over repeats, with a percentile bootstrap
interval around it.  A target counts as met only when the whole interval lies on the
right side of it: a median on the right side with an interval across the line is
"inconclusive", not met.  Resampling uses a fixed seed, so the same results give the same
report.
"""

import numpy as np

SEED = 20261127
RESAMPLES = 10000
LEVEL = 0.95


def median(values):
    """The median of values (a sequence of numbers), or None when there are none."""
    v = np.asarray(list(values), dtype=float)
    return float(np.median(v)) if v.size else None


def percentile(values, q):
    """The q-th percentile (0-100) of values, linear between samples; None when empty."""
    v = np.asarray(list(values), dtype=float)
    return float(np.percentile(v, q)) if v.size else None


def bootstrap_ci(values, stat=np.median, resamples=RESAMPLES, level=LEVEL, seed=SEED):
    """(low, high): the percentile bootstrap interval of stat over values.

    One value gives (value, value): an interval needs repeats, and a report shows how
    many it had.  None when there are no values."""
    v = np.asarray(list(values), dtype=float)
    if v.size == 0:
        return None
    if v.size == 1:
        return (float(v[0]), float(v[0]))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, v.size, size=(resamples, v.size))
    stats = stat(v[idx], axis=1)
    tail = (1 - level) / 2 * 100
    return (float(np.percentile(stats, tail)), float(np.percentile(stats, 100 - tail)))


def summary(values):
    """{"n", "median", "ci": [low, high]} of values; median and ci None when empty."""
    v = [float(x) for x in values]
    ci = bootstrap_ci(v)
    return {"n": len(v), "median": median(v), "ci": list(ci) if ci else None}


def paired_ratios(num, den):
    """Ratios num[k] / den[k] over the keys (repeats) both have and den is not zero."""
    return [num[k] / den[k] for k in sorted(num) if k in den and den[k]]


def decide(ci, op, target):
    """"met" when the whole interval ci lies on the right side of target (op "<=" or
    ">="), "missed" when it lies wholly on the wrong side, else "inconclusive"."""
    if ci is None:
        return "no data"
    lo, hi = ci
    if op == "<=":
        return "met" if hi <= target else "missed" if lo > target else "inconclusive"
    if op == ">=":
        return "met" if lo >= target else "missed" if hi < target else "inconclusive"
    raise ValueError("op must be <= or >=, not %r" % (op,))


def verdict(values, op, target):
    """decide() on the bootstrap interval of the median of values (ratios, one a repeat),
    except that one value is "no claim": its interval is that value, and one repeat says
    nothing of how much the next would differ."""
    v = list(values)
    if len(v) == 1:
        return "no claim"
    return decide(bootstrap_ci(v), op, target)


def met(ci, op, target):
    """True only when decide() says met: an interval across the line is not met."""
    return decide(ci, op, target) == "met"
