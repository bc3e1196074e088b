"""Checks a detshare-ctl trace output (tests/test_trace.c): python3 check_trace.py FILE
[kernel=NAME...] [copy=BYTES...] [hold_ms=MS] [tenants=N].  Prints what is wrong and exits
1, else exits 0.  Chrome trace format: JSON object with traceEvents (ph X: ts and dur in
microseconds)."""
import json
import sys


def fail(why):
    print("trace check: " + why)
    sys.exit(1)


def main():
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    want = {"kernel": [], "copy": [], "hold_ms": [], "tenants": []}
    for arg in sys.argv[2:]:
        key, value = arg.split("=", 1)
        want[key].append(value)
    events = doc.get("traceEvents")
    meta = doc.get("metadata", {}).get("detshare")
    if not isinstance(events, list) or meta is None:
        fail("no traceEvents array or no metadata.detshare")
    if meta["dropped"] != 0:
        fail("%d events dropped" % meta["dropped"])
    if meta["events"] == 0:
        fail("no event")
    for n in want["tenants"]:
        if len(meta["tenants"]) != int(n):
            fail("%d tenants, not %s" % (len(meta["tenants"]), n))
    names = {e["name"] for e in events if e.get("cat") == "kernel"}
    for k in want["kernel"]:
        if k not in names:
            fail("no kernel %s among %s" % (k, sorted(names)))
    copies = [e["args"]["bytes"] for e in events if e.get("cat") in ("copy", "memset")]
    for b in want["copy"]:
        if int(b) not in copies:
            fail("no copy of %s bytes among %s" % (b, copies))
    lanes = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") != "gate":
            if e["dur"] < 0 or "sm_groups" not in e["args"]:
                fail("bad event %s" % e)
            lanes.setdefault((e["pid"], e["tid"]), []).append(e)
    for lane, evs in lanes.items():
        evs.sort(key=lambda e: e["ts"])
        for a, b in zip(evs, evs[1:]):
            # A microsecond of slack: times are converted from float milliseconds.
            if a["ts"] + a["dur"] > b["ts"] + 1.0:
                fail("overlap on stream %s: %s and %s" % (lane, a, b))
    holds = [e["dur"] / 1000.0 for e in events if e.get("cat") == "gate"]
    for ms in want["hold_ms"]:
        if not any(h >= float(ms) for h in holds):
            fail("no gate hold of %s ms or more among %s" % (ms, holds))
    print("trace check: %d events, %d streams, kernels %s, holds %s ms" %
          (len(events), len(lanes), sorted(names), holds))


main()
