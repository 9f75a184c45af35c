#!/usr/bin/python3
"""Runs the issue-4 experiments on the fabric model, metaroce and the RoCEv2 model side
by side, into OUT_DIR: the JSON of every run, then (report.py) its README.md and figures.

Usage: run.py SIM_BINARY OUT_DIR [--quick]
What runs is in definitions.py; OUT_DIR/run.json records the set and how long it took.
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402
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


def run_one(sim, s):
    p = subprocess.run([sim, "-", "--quiet", "--timeline"], input=json.dumps(s), text=True,
                       capture_output=True)
    if p.returncode == 2 or not p.stdout:
        raise SystemExit(f"{s['name']} {s['transport']['protocol']}: {p.stderr}")
    r = json.loads(p.stdout)
    r["input"] = s
    return r


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    sim, out = sys.argv[1], sys.argv[2]
    quick = "--quick" in sys.argv[3:]
    start = time.time()
    cases = [(exp, s) for exp in EXPERIMENTS for _, _, s in exp.cases(quick)]
    for i, (exp, s) in enumerate(cases, 1):
        r = run_one(sim, s)
        path = os.path.join(out, result_path(exp, s))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(dump(r))
        print(f"[{i}/{len(cases)}] {exp.dir}/{s['name']} {s['transport']['protocol']}: "
              f"{r['goodput_gbps']} Gb/s, verified {r['data_verified']}, {r['wall_time_s']} s "
              f"({time.time() - start:.0f} s so far)", flush=True)
    with open(os.path.join(out, "run.json"), "w") as f:
        json.dump({"quick": quick, "elapsed_s": round(time.time() - start), "cores": os.cpu_count()}, f)
        f.write("\n")
    report.write(out, None)
    print(f"wrote {out}/README.md and its figures ({time.time() - start:.0f} s)")


if __name__ == "__main__":
    main()
