"""What bench/breadth/samples.sh does with the outputs of NVIDIA's CUDA sample programs:
normalise them (timings, addresses, device names and detshare's own log lines out),
compare a detshare run with the native one, and write the report.

usage: samples.py normalize FILE [FLAGS]         the normalised lines, to stdout
       samples.py compare NATIVE DETSHARE [FLAGS] "identical", or "differ" and a diff;
                                                 exit status 0 or 1
       samples.py record DIR NAME CUDART ARGS FLAGS   one JSON line for a run pair, from
                                                 DIR/{native,detshare}.{out,err,rc,sec}
                                                 (DIR/missing: the program was not built;
                                                 DIR/native-again.*: a second native run)
       samples.py report JSONL OUTDIR             OUTDIR/samples.md from the records
FLAGS: comma-separated words of bench/breadth/samples.list: "numbers" (every number is a
timing: mask them all), "sorted" (several processes print: compare the lines sorted),
"last" (what it prints depends on the time: compare its last line only)."""
import difflib, json, os, re, sys

# detshare's log line (common/ds_log.c): "HH:MM:SS.mmm detshare[...] LEVEL: text".
DS_LOG = re.compile(r"^\d\d:\d\d:\d\d\.\d{3} detshare\S* \w+: ")
DEVICE = re.compile(r"NVIDIA|Tesla|GeForce|Quadro|\bRTX\b|\b[AHBL]\d{2,3}\b|GPU Device \d|"
                    r"CUDA device \[|Device \d+: \"|[Dd]evice [Nn]ame")
UNIT = (r"(s|ms|msec|msecs|us|usec|usecs|ns|sec|secs|seconds|milliseconds|microseconds|"
        r"[KMGT]i?B/s(ec)?|[KMGT]?[Ff]lop/?s|[GT]FLOPS|G?[Oo]ps/s|Mkeys/s|MElements/s|"
        r"[KMG]?[Bb]ytes/s(ec)?|clocks?)")
TIMING = re.compile(r"\d(\.\d+)?(e[-+]?\d+)?\s*" + UNIT + r"\b|\b[Tt]imes?\b|[Tt]iming|"
                    r"[Tt]hroughput|[Bb]andwidth|[Ee]lapsed|[Pp]erformance|[Ss]peedup|clocks")
ADDRESS = re.compile(r"0x[0-9a-fA-F]{5,}")
PID = re.compile(r"\b(pid|PID|process id)([ =:]+)\d+")
NUMBER = re.compile(r"[-+]?\d+(\.\d*)?([eE][-+]?\d+)?")
SUCCESS = re.compile(r"Test passed|Test PASSED|Result = PASS|\bPASSED\b|completed, returned OK|"
                     r"^\s*OK\s*$|Successful|\bSuccess\b|success!|TEST OK|[Cc]omplete\b|"
                     r"\bOK\b")
WAIVED = re.compile(r"[Ww]aiv|WAIVED")
FAILED = re.compile(r"FAIL|NOT OK|Test failed|\bfailed\b|returned ERROR")


def normalize(text, flags=()):
    """The lines of one output worth comparing, each stripped of what varies run to run."""
    out = []
    for line in text.replace("\r", "").split("\n"):
        line = line.rstrip()
        if DS_LOG.match(line) or DEVICE.search(line) or TIMING.search(line):
            continue
        line = PID.sub(r"\1\2N", ADDRESS.sub("0xADDR", line))
        if "numbers" in flags:
            line = NUMBER.sub("N", line)
        out.append(line)
    while out and out[-1] == "":
        out.pop()
    if "last" in flags:
        return out[-1:]
    return sorted(out) if "sorted" in flags else out


def compare(native, detshare, flags=(), context=6):
    """(True, []) when the normalised texts agree, else (False, the diff's first lines)."""
    a, b = normalize(native, flags), normalize(detshare, flags)
    if a == b:
        return True, []
    diff = difflib.unified_diff(a, b, "native", "detshare", n=1, lineterm="")
    return False, [l for l in diff][2:2 + context]


def verdict(text, rc):
    """passed (exit 0, a success line), exit0 (exit 0, no success line), waived, timeout
    (timeout(1) killed it) or failed, and the line that decided."""
    lines = text.replace("\r", "").split("\n")
    pick = lambda rx: next((l.strip() for l in lines if rx.search(l)), None)
    if rc in (124, 137):
        return "timeout", None
    fail, ok, waive = pick(FAILED), pick(SUCCESS), pick(WAIVED)
    if waive and not fail and rc in (0, 2):
        return "waived", waive
    if rc != 0 or fail:
        return "failed", fail
    return ("passed", ok) if ok else ("exit0", None)


def read(path, default=""):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return default


def record(d, name, cudart, args, flags):
    flags = [f for f in flags.split(",") if f]
    rec = {"program": name, "cudart": cudart, "args": args, "flags": flags}
    text = {}
    for mode in ("native", "detshare"):
        out, err = read(f"{d}/{mode}.out"), read(f"{d}/{mode}.err")
        rc = int(read(f"{d}/{mode}.rc", "-1").strip() or -1)
        status, line = verdict(out + "\n" + err, rc)
        rec[mode] = {"exit": rc, "seconds": float(read(f"{d}/{mode}.sec", "0").strip() or 0),
                     "status": status, "line": line}
        text[mode] = (out, err)
    same_out, diff_out = compare(text["native"][0], text["detshare"][0], flags)
    same_err, diff_err = compare(text["native"][1], text["detshare"][1], flags)
    rec["identical"] = (same_out and same_err and
                        rec["native"]["exit"] == rec["detshare"]["exit"])
    rec["diff"] = diff_out + (["(stderr)"] + diff_err if diff_err else [])
    if os.path.exists(f"{d}/native-again.rc"):
        again = (read(f"{d}/native-again.out"), read(f"{d}/native-again.err"))
        rec["native_repeatable"] = (
            compare(text["native"][0], again[0], flags)[0] and
            compare(text["native"][1], again[1], flags)[0] and
            read(f"{d}/native-again.rc").strip() == str(rec["native"]["exit"]))
    if os.path.exists(f"{d}/missing"):
        rec["native"]["status"] = rec["detshare"]["status"] = "missing"
        rec["identical"], rec["diff"] = False, ["not built: nothing ran"]
    rec["detshare_log"] = [l for l in text["detshare"][1].split("\n") if DS_LOG.match(l)][:5]
    for k in ("device", "driver", "date", "commit"):
        rec[k] = os.environ.get("SAMPLES_" + k.upper(), "")
    return rec


def cell(r):
    s = r["status"]
    return s if s in ("passed", "exit0", "waived") else f"**{s}** (exit {r['exit']})"


def report(jsonl, outdir):
    recs = [json.loads(l) for l in open(jsonl) if l.strip()]
    recs.sort(key=lambda r: (r["program"], r["cudart"]))
    meta = recs[0] if recs else {}
    good = lambda r, m: r[m]["status"] in ("passed", "exit0", "waived")
    md = [f"# CUDA samples natively and through detshare: {meta.get('device', '?')}, "
          f"driver {meta.get('driver', '?')}, {meta.get('date', '?')}, "
          f"commit {meta.get('commit', '?')}", ""]
    for rt in sorted({r["cudart"] for r in recs}):
        rs = [r for r in recs if r["cudart"] == rt]
        md.append(f"- cudart {rt}: {len(rs)} programs; passed or waived natively "
                  f"{sum(good(r, 'native') for r in rs)}, through detshare "
                  f"{sum(good(r, 'detshare') for r in rs)}; identical to native "
                  f"{sum(r['identical'] for r in rs)} of {len(rs)}")
    md += ["", "| program | cudart | native | detshare | native s | detshare s | identical |",
           "| --- | --- | --- | --- | ---: | ---: | --- |"]
    for r in recs:
        md.append(f"| {r['program']} | {r['cudart']} | {cell(r['native'])} | "
                  f"{cell(r['detshare'])} | {r['native']['seconds']:.1f} | "
                  f"{r['detshare']['seconds']:.1f} | {'yes' if r['identical'] else '**no**'} |")
    diffs = [r for r in recs if not r["identical"]]
    md += ["", f"## Differences ({len(diffs)})", ""]
    for r in diffs:
        again = {True: "; two native runs agree", False: "; **two native runs differ too**"}
        md.append(f"### {r['program']} ({r['cudart']}): exit {r['native']['exit']} natively, "
                  f"{r['detshare']['exit']} through detshare"
                  f"{again.get(r.get('native_repeatable'), '')}")
        md += ["", "```"] + (r["diff"] or ["(outputs agree; the exit statuses differ)"])
        md += [f"detshare log: {l}" for l in r.get("detshare_log", [])] + ["```", ""]
    with open(os.path.join(outdir, "samples.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    return sum(not r["identical"] for r in recs)


def main(argv):
    cmd = argv[1] if len(argv) > 1 else ""
    flags = lambda i: [f for f in (argv[i] if len(argv) > i else "").split(",") if f]
    if cmd == "normalize" and len(argv) in (3, 4):
        print("\n".join(normalize(read(argv[2]), flags(3))))
        return 0
    if cmd == "compare" and len(argv) in (4, 5):
        same, diff = compare(read(argv[2]), read(argv[3]), flags(4))
        print("identical" if same else "\n".join(["differ"] + diff))
        return 0 if same else 1
    if cmd == "record" and len(argv) == 7:
        print(json.dumps(record(*argv[2:7])))
        return 0
    if cmd == "report" and len(argv) == 4:
        report(argv[2], argv[3])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
