#!/usr/bin/env python3
"""mechanism-check.sh's report: OUT_DIR -> OUT_DIR/mechanism.json and mechanism.md."""
import glob
import json
import os
import re
import statistics
import sys


def lines(path):
    try:
        with open(path, errors="replace") as f:
            return f.read().splitlines()
    except OSError:
        return []


def first_json(path):
    for text in lines(path):
        if text.startswith("{"):
            try:
                return json.loads(text)
            except ValueError:
                pass
    return None


def pct(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(len(v) * q))] if v else None


def moves(out):
    """Wall time moved every tick against never moved, round by round; move times."""
    rounds = {}
    for path in glob.glob(os.path.join(out, "moves-*-r*.json")):
        m = re.search(r"moves-(fixed|flip)-r(\d+)\.json$", path)
        j = first_json(path)
        if m and j and j.get("ok"):
            rounds.setdefault(int(m.group(2)), {})[m.group(1)] = j["wall_ms"]
    ratios = [r["flip"] / r["fixed"] for r in rounds.values() if "flip" in r and "fixed" in r]
    us, after, count = [], [], {}
    for path in glob.glob(os.path.join(out, "server-moves-*.log")):
        n = 0
        for text in lines(path):
            m = re.search(r"moved in (\d+) us(?:, (\d+) us after the decision)?", text)
            if m:
                us.append(int(m.group(1)))
                if m.group(2) is not None:
                    after.append(int(m.group(2)))
                n += 1
        count[os.path.basename(path)] = n
    return {"rounds": rounds, "flip_over_fixed": ratios,
            "cost": statistics.median(ratios) - 1 if ratios else None,
            "moves_per_log": count, "move_us_p50": pct(us, 0.5), "move_us_p90": pct(us, 0.9),
            "move_us_max": max(us) if us else None, "moves": len(us),
            "decision_us_p50": pct(after, 0.5), "decision_us_p90": pct(after, 0.9),
            "decision_us_max": max(after) if after else None}


def gate(out):
    """For each close inside the tenant's launches: how long kernels still started after
    it; for each open: how long until the next kernel started."""
    path = os.path.join(out, "gate-starts.txt")
    if not os.path.exists(path):
        return {"not_run": True}
    text = lines(path)
    if not text or not text[0].startswith("offset_ns"):
        return {"failed": True}
    spread = int(text[0].split()[3])
    starts = sorted(int(t) for t in text[1:] if t.strip())
    events = []
    for t in lines(os.path.join(out, "server-gate.log")):
        m = re.search(r"pulse: gate (closed|opened) at (\d+)", t)
        if m:
            events.append((int(m.group(2)), m.group(1)))
    events.sort()
    hold, resume, after = [], [], []
    # A policy logs a change just before the control process makes it, and the two
    # clocks agree to within the calibration's spread: a kernel that starts in the last
    # EDGE_NS before an open is that open's, not one the close let through.
    edge = max(50000, 10 * spread)
    for i, (t, what) in enumerate(events):
        nxt = events[i + 1][0] if i + 1 < len(events) else None
        if nxt is None or t < starts[0] or nxt > starts[-1]:
            continue
        end = nxt - edge if what == "closed" else nxt
        inside = [s for s in starts if t <= s < end]
        if what == "closed":
            hold.append(((inside[-1] - t) / 1e3) if inside else 0.0)
            after.append(len(inside))
        elif inside:
            resume.append((inside[0] - t) / 1e3)
    return {"clock_spread_us": spread / 1e3, "closes": len(hold),
            "hold_us_p50": pct(hold, 0.5), "hold_us_p90": pct(hold, 0.9),
            "hold_us_p99": pct(hold, 0.99),
            "hold_us_max": max(hold) if hold else None,
            "kernels_after_close_p50": pct(after, 0.5), "kernels_after_close_max": max(after) if after else None,
            "resume_us_p50": pct(resume, 0.5), "resume_us_p90": pct(resume, 0.9)}


def fault(out):
    res = {name: first_json(os.path.join(out, f"fault-{name}.json")) for name in ("steady", "wild", "after")}
    res["exits"] = lines(os.path.join(out, "fault-exits.txt"))
    return res


def fmt(v, d=1):
    return "-" if v is None else f"{v:.{d}f}"


def main():
    out = sys.argv[1]
    r = {"moves": moves(out), "gate": gate(out), "fault": fault(out)}
    with open(os.path.join(out, "mechanism.json"), "w") as f:
        json.dump(r, f, indent=1)
    mv, g, fl = r["moves"], r["gate"], r["fault"]
    md = ["# bench/sharing/mechanism-check.sh", "",
          "## Moves", "",
          f"wall time moved every tick ÷ never moved, per round: "
          f"{', '.join(f'{x:.3f}' for x in mv['flip_over_fixed']) or '-'}; "
          f"cost (median - 1): {fmt(mv['cost'] * 100 if mv['cost'] is not None else None, 2)}%", "",
          f"moves logged: {mv['moves']}; each took p50 {mv['move_us_p50']} us, p90 {mv['move_us_p90']} us, "
          f"max {mv['move_us_max']} us; from the policy's decision to the move's end (the wait "
          f"for the tenant's next kernel included): p50 {mv['decision_us_p50']} us, "
          f"p90 {mv['decision_us_p90']} us, max {mv['decision_us_max']} us", "",
          "## Gate", ""]
    if g.get("not_run"):
        md.append("not run")
    elif g.get("failed"):
        md.append("the gate tenant failed")
    else:
        md += [f"closes inside the tenant's launches: {g['closes']}; kernels still starting after a close: "
               f"p50 {fmt(g['hold_us_p50'])} us, p90 {fmt(g['hold_us_p90'])} us, p99 {fmt(g['hold_us_p99'])} us, "
               f"max {fmt(g['hold_us_max'])} us "
               f"({g['kernels_after_close_p50']} kernels at the median, {g['kernels_after_close_max']} at most); "
               f"first kernel after an open: p50 {fmt(g['resume_us_p50'])} us, p90 {fmt(g['resume_us_p90'])} us; "
               f"clock offset spread {fmt(g['clock_spread_us'], 2)} us"]
    md += ["", "## Fault", "", "```", json.dumps(fl, indent=1), "```", ""]
    with open(os.path.join(out, "mechanism.md"), "w") as f:
        f.write("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
