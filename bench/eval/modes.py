"""The modes bench/eval runs an experiment's jobs in, and the order of a repeat's cells.

Co-located modes: native time-slicing (no MPS), native MPS (a private daemon), native
MPS with fixed partitions (each job's CUDA_MPS_ACTIVE_THREAD_PERCENTAGE from the
experiment), and detshare under each built-in policy.  Each job also runs alone in every
environment: natively, under a native MPS daemon (detshare's executors are MPS clients,
native alone is not) and through detshare.  The sim has no native driver, so there only
detshare's modes exist.
"""

POLICIES = ["shared", "static", "temporal", "slo-aware", "tpot-first"]
NATIVE = ["native-timesliced", "native-mps", "native-mps-part"]
ALONE_NATIVE = ["alone-native", "alone-native-mps"]
ALONE_DS = "alone-detshare"


def pair_modes(device):
    """The co-located modes on device ("sim" or "cuda")."""
    ds = ["detshare-" + p for p in POLICIES]
    return ds if device == "sim" else NATIVE + ds


def alone_envs(device):
    """The environments each job runs alone in on device."""
    return [ALONE_DS] if device == "sim" else ALONE_NATIVE + [ALONE_DS]


def scenarios(exp, device):
    """Every scenario of exp on device: "ENV:JOB" for a job alone, then the pair modes."""
    alone = ["%s:%s" % (env, j.name) for env in alone_envs(device) for j in exp.jobs]
    return alone + pair_modes(device)


def alone_env_of(mode):
    """The alone environment a co-located mode's ratios are taken against."""
    return ALONE_DS if mode.startswith("detshare-") else "alone-native"


def repeat_order(items, rep, repeats):
    """The order of a repeat's cells (rep counts from 1): rotated by a share of the list
    that grows with the repeat, and reversed on even repeats, so that no mode always runs
    first, last, or after the same neighbour (order and warm-up effects then show as
    spread between repeats instead of as a bias)."""
    n = len(items)
    shift = (rep - 1) * n // max(repeats, 1) if n else 0
    order = items[shift:] + items[:shift]
    return order[::-1] if rep % 2 == 0 else order
