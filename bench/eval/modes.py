"""The modes bench/eval runs an experiment's jobs in, and the order of a repeat's cells.

Co-located modes: native time-slicing (no MPS), native MPS (a private daemon), native
MPS with fixed partitions (each job's CUDA_MPS_ACTIVE_THREAD_PERCENTAGE from the
experiment), and detshare under each built-in policy.  Each job also runs alone in every
environment: natively, under a native MPS daemon (detshare's executors are MPS clients,
native alone is not) and through detshare.  The sim has no native driver, so there only
detshare's modes exist.  An experiment may bring modes of its own (overhead's moving
policy).  A run may keep only some co-located modes (run.sh --modes, and --quick on a
GPU): the alone environments their ratios need stay.
"""

POLICIES = ["shared", "static", "temporal", "slo-aware", "tpot-first"]
NATIVE = ["native-timesliced", "native-mps", "native-mps-part"]
ALONE_NATIVE = ["alone-native", "alone-native-mps"]
ALONE_DS = "alone-detshare"
# What --quick runs on a GPU of the standard modes (the run's own --modes aside).
QUICK = ["native-timesliced", "native-mps", "detshare-shared", "detshare-slo-aware"]


def pair_modes(device):
    """The standard co-located modes on device ("sim" or "cuda")."""
    ds = ["detshare-" + p for p in POLICIES]
    return ds if device == "sim" else NATIVE + ds


def alone_envs(device):
    """The environments each job runs alone in on device."""
    return [ALONE_DS] if device == "sim" else ALONE_NATIVE + [ALONE_DS]


def alone_env_of(mode):
    """The alone environment a co-located mode's ratios are taken against."""
    return ALONE_DS if mode.startswith("detshare-") else "alone-native"


def norm_env(device):
    """The alone environment an aggregate normalises by: alone natively wherever there is
    a native driver (so detshare's own cost counts against it), else alone through
    detshare."""
    return "alone-native" if device == "cuda" else ALONE_DS


def exp_modes(exp, device, only=None):
    """exp's co-located modes on device, kept to those in only when given."""
    pair = exp.modes[device] if exp.modes else pair_modes(device)
    return [m for m in pair if only is None or m in only]


def exp_alone_envs(exp, device, only=None):
    """The environments exp's jobs run alone in: all of them, or with only, those the
    kept modes' ratios and aggregates need."""
    envs = exp.alone_envs or alone_envs(device)
    if only is None:
        return envs
    need = {alone_env_of(m) for m in exp_modes(exp, device, only)}
    if exp.aggregate:
        need.add(norm_env(device))
    return [e for e in envs if e in need]


def scenarios(exp, device, only=None):
    """Every scenario of exp on device: "ENV:JOB" for a job alone (but one whose alone
    cells another experiment's job stands for: Job.like), then the co-located modes."""
    alone = ["%s:%s" % (env, j.name) for env in exp_alone_envs(exp, device, only)
             for j in exp.jobs if not j.like]
    return alone + exp_modes(exp, device, only)


def repeat_order(items, rep, repeats):
    """The order of a repeat's cells (rep counts from 1): rotated by a share of the list
    that grows with the repeat, and reversed on even repeats, so that no mode always runs
    first, last, or after the same neighbour (order and warm-up effects then show as
    spread between repeats instead of as a bias)."""
    n = len(items)
    shift = (rep - 1) * n // max(repeats, 1) if n else 0
    order = items[shift:] + items[:shift]
    return order[::-1] if rep % 2 == 0 else order
