#!/usr/bin/python3
"""Runs the issue-4 experiments on the fabric model, metaroce and the RoCEv2 model side
by side, into OUT_DIR: the JSON of every run, then (report.py) its README.md and figures.

Usage: run.py SIM_BINARY OUT_DIR [--quick] [--sweep FAMILY] [--seeds FAMILY] [--sweep-only]
What runs is in definitions.py (the sweep's families in sweep.py); OUT_DIR/run.json
records the set and how long it took.
  --sweep FAMILY  also runs the sweep (full, quick or tiny) into OUT_DIR/sweep/
  --seeds FAMILY  also runs the noisiest targets on more seeds (full or quick) into
                  OUT_DIR/seeds/ (seeds.py; needs the experiments)
  --sweep-only    runs the sweep alone (no experiments)
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402
import seeds  # noqa: E402
import sweep  # noqa: E402
from definitions import EXPERIMENTS, result_path  # noqa: E402


def dump(obj, expand=("input", "timeline")):
    """One member a line (and one line per member of the objects named in expand), so a
    run's file reads and diffs by field without a timeline spread one number a line."""
    lines = []
    for k, v in obj.items():
        if k in expand and isinstance(v, dict):
            inner = [f"  {json.dumps(ik)}: {json.dumps(iv)}" for ik, iv in v.items()]
            lines.append(f" {json.dumps(k)}: {{\n" + ",\n".join(inner) + "\n }")
        else:
            lines.append(f" {json.dumps(k)}: {json.dumps(v)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def run_one(sim, s, timeline=True):
    p = subprocess.run([sim, "-", "--quiet"] + (["--timeline"] if timeline else []),
                       input=json.dumps(s), text=True, capture_output=True)
    if p.returncode == 2 or not p.stdout:
        raise SystemExit(f"{s['name']} {s['transport']['protocol']}: {p.stderr}")
    r = json.loads(p.stdout)
    r["input"] = s
    return r


def save(out, rel, r):
    path = os.path.join(out, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(dump(r))


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        raise SystemExit(__doc__)
    sim, out = args[0], args[1]
    quick = "--quick" in args[2:]
    family = args[args.index("--sweep") + 1] if "--sweep" in args else None
    if family is not None and family not in sweep.FAMILIES:
        raise SystemExit(f"--sweep: no family '{family}' ({', '.join(sweep.FAMILIES)})")
    exps = [] if "--sweep-only" in args else EXPERIMENTS
    spread = args[args.index("--seeds") + 1] if "--seeds" in args and exps else None
    if spread is not None and spread not in seeds.FAMILIES:
        raise SystemExit(f"--seeds: no family '{spread}' ({', '.join(seeds.FAMILIES)})")
    start = time.time()
    # The sweep's runs leave the timeline out: only its summaries are read.
    cases = [(exp.dir, result_path(exp, s), s, True) for exp in exps for _, _, s in exp.cases(quick)]
    if family:
        cases += [("sweep", sweep.file_name(key), s, False) for key, s in sweep.cases(family)]
    if spread:
        cases += [("seeds", seeds.file_name(key), s, False) for key, s in seeds.cases(spread, quick)]
    for i, (what, rel, s, timeline) in enumerate(cases, 1):
        r = run_one(sim, s, timeline)
        save(out, rel, r)
        print(f"[{i}/{len(cases)}] {what}/{s['name']} {s['transport']['protocol']}"
              f"{'' if s['seed'] == 1 else ' seed ' + str(s['seed'])}: "
              f"{r['goodput_gbps']} Gb/s, verified {r['data_verified']}, {r['wall_time_s']} s "
              f"({time.time() - start:.0f} s so far)", flush=True)
    manifest = {"quick": quick, "elapsed_s": round(time.time() - start), "cores": os.cpu_count(),
                "experiments": [exp.dir for exp in exps]}
    if family:
        manifest["sweep"] = family
    if spread:
        manifest["seeds"] = spread
    with open(os.path.join(out, "run.json"), "w") as f:
        json.dump(manifest, f)
        f.write("\n")
    report.write(out, None)
    print(f"wrote {out}/README.md and its figures ({time.time() - start:.0f} s)")


if __name__ == "__main__":
    main()
