#!/usr/bin/python3
"""The sweep's report: runs the tiny family through the real runner, recomputes the
worst value of each target from the runs' JSON here (independently of sweep.py), and
checks report.py --check catches a summary that no longer follows from the runs.

Usage: sweep_check.py METAROCE_SIM EXPERIMENTS_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sim, exp_dir = sys.argv[1], sys.argv[2]
run_py = os.path.join(exp_dir, "run.py")
report_py = os.path.join(exp_dir, "report.py")
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


def report_check(d):
    return subprocess.run([sys.executable, report_py, d, "--check"], capture_output=True, text=True)


def runs(d):
    """{(fabric, case, protocol): result} from the files alone."""
    out = {}
    for name in os.listdir(os.path.join(d, "sweep")):
        fabric, case, proto, _ = name.split(".")
        with open(os.path.join(d, "sweep", name)) as f:
            out[(fabric, case, proto)] = json.load(f)
    return out


with tempfile.TemporaryDirectory() as tmp:
    d = os.path.join(tmp, "run")
    p = subprocess.run([sys.executable, run_py, sim, d, "--sweep", "tiny", "--sweep-only"],
                       capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"run.py failed: {p.stderr}")
    r = runs(d)
    with open(os.path.join(d, "sweep.json")) as f:
        summ = json.load(f)
    check(summ["runs"] == len(r) == 14, f"{len(r)} run files, summary says {summ['runs']}")
    check(all(x["data_verified"] for x in r.values() if x["stop_reason"] == "done"),
          "a finished run did not verify its data")

    # The worst values, recomputed here from the files.
    fabrics = sorted({k[0] for k in r})
    for proto in ("metaroce", "rocev2_model"):
        ratios = {f: r[(f, "loss_iid_10pct", proto)]["goodput_gbps"] /
                  r[(f, "loss_lossless", proto)]["goodput_gbps"] for f in fabrics}
        jains = {f: r[(f, "incast_8", proto)]["jain_index"] or 0.0 for f in fabrics}
        touts = {f: r[(f, "loss_iid_10pct", proto)]["timeouts"] for f in fabrics}
        drops = {f: 100.0 * r[(f, "incast_8", proto)]["dropped_packets"] /
                 r[(f, "incast_8", proto)]["fabric_packets"]["injected"] for f in fabrics}
        t = summ["targets"]
        for tid, vals, worst in (("goodput_10pct_iid", ratios, min), ("incast_jain", jains, min),
                                 ("loss_timeouts", touts, max), ("incast_drop_pct", drops, max)):
            got = t[tid][proto]["worst"]
            check(abs(got - worst(vals.values())) < 1e-9,
                  f"{proto} {tid}: summary {got}, the runs give {worst(vals.values())} ({vals})")
        check(t["goodput_10pct_iid"]["met"] == (min(ratios.values()) >= 0.75) or proto != "metaroce",
              "goodput target verdict does not follow from the worst value")
    # READ fan-in: metaroce only (the RoCEv2 model has only WRITE).
    reads = {f: r[(f, "read_incast_8", "metaroce")] for f in fabrics}
    check(all(x["input"]["workload"]["op"] == "read" for x in reads.values()), "a READ fan-in run did not READ")
    t = summ["targets"]
    check(t["read_incast_jain"]["metaroce"]["worst"] == min(x["jain_index"] or 0.0 for x in reads.values()),
          "READ fan-in Jain: the summary's worst is not the runs'")
    check(t["read_incast_timeouts"]["metaroce"]["worst"] == max(x["timeouts"] for x in reads.values()),
          "READ fan-in timeouts: the summary's worst is not the runs'")
    check(t["read_incast_jain"]["rocev2_model"] is None, "the RoCEv2 model has READ fan-in figures")
    readme = open(os.path.join(d, "README.md")).read()
    check("## Sweep" in readme, "README.md has no sweep section")
    check(f"{summ['targets']['incast_jain']['metaroce']['worst']:.3f}" in readme,
          "README.md does not show the worst incast Jain")

    p = report_check(d)
    check(p.returncode == 0, f"report.py --check fails on the fresh run: {p.stdout}")

    # A run that becomes the new worst: the committed summary no longer follows.
    t1 = os.path.join(tmp, "tampered_run")
    shutil.copytree(d, t1)
    best = max(fabrics, key=lambda f: r[(f, "incast_8", "metaroce")]["jain_index"] or 0)
    path = os.path.join(t1, "sweep", f"{best}.incast_8.metaroce.json")
    with open(path) as f:
        x = json.load(f)
    x["jain_index"] = 0.01
    with open(path, "w") as f:
        json.dump(x, f)
    p = report_check(t1)
    check(p.returncode == 1 and "sweep.json" in p.stdout,
          f"report.py --check missed a run that is the new worst: {p.stdout}")

    # A summary whose minimum is not the runs' minimum.
    t2 = os.path.join(tmp, "tampered_summary")
    shutil.copytree(d, t2)
    s2 = dict(summ)
    s2["targets"]["goodput_10pct_iid"]["metaroce"]["worst"] += 0.05
    with open(os.path.join(t2, "sweep.json"), "w") as f:
        json.dump(s2, f, indent=1)
        f.write("\n")
    p = report_check(t2)
    check(p.returncode == 1, "report.py --check accepted a wrong minimum in sweep.json")

for f in failures:
    print("FAIL:", f)
if failures:
    sys.exit(1)
print("sweep: the worst values follow from the runs; report.py --check catches a wrong one")
