#!/usr/bin/python3
"""metaroce-sim's stdout: short and valid JSON by default, the timeline only with
--timeline (arrays filled onto lines, not one number a line), progress on stderr.

Usage: cli_output.py METAROCE_SIM SCENARIO.json
"""
import json
import re
import subprocess
import sys

KEY_FIELDS = ["scenario", "protocol", "seed", "stop_reason", "completed", "data_verified",
              "goodput_gbps", "loss_free_bound_gbps", "fct_us", "messages", "connection_errors",
              "retransmitted_packets", "dropped_packets", "virtual_time_us", "wall_time_s"]
# Fields that depend on the machine, not on the scenario.
MACHINE = {"wall_time_s", "events_per_second", "peak_rss_mb"}
MAX_DEFAULT_LINES = 80

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


def run(*args):
    p = subprocess.run([sim, scenario, *args], capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"{' '.join(args)}: exit {p.returncode}: {p.stderr}")
    return p


sim, scenario = sys.argv[1], sys.argv[2]

plain = run()
lines = plain.stdout.splitlines()
check(len(lines) <= MAX_DEFAULT_LINES, f"default output has {len(lines)} lines (> {MAX_DEFAULT_LINES})")
short = json.loads(plain.stdout)
for k in KEY_FIELDS:
    check(k in short, f"default output lacks {k}")
check("timeline" not in short, "default output carries the timeline")
check(short.get("data_verified") is True, "the run did not verify")
check("--timeline" in plain.stderr, "stderr does not say how to get the timeline")

full = run("--timeline", "--quiet")
check(full.stderr == "", f"--quiet printed on stderr: {full.stderr!r}")
whole = json.loads(full.stdout)
t = whole.get("timeline", {})
bins = len(t.get("goodput_gbps", []))
check(bins > 20, f"--timeline: goodput_gbps has {bins} bins")
check(len(t.get("plane_gbps", [])) >= 1, "--timeline: no per-plane series")
check(all(len(s) == bins for s in t.get("plane_gbps", [])), "--timeline: plane series length differs")
check(len(t.get("last_hop_queue_bytes", [])) == bins, "--timeline: queue series length differs")
# Filled arrays: far fewer lines than numbers, and no line holding a lone number.
numbers = bins * (2 + len(t.get("plane_gbps", [])))
full_lines = full.stdout.splitlines()
check(len(full_lines) < MAX_DEFAULT_LINES + numbers // 4,
      f"--timeline: {len(full_lines)} lines for {numbers} numbers")
lone = [l for l in full_lines if l.strip().rstrip(",").replace(".", "", 1).isdigit()]
check(not lone, f"--timeline: {len(lone)} lines hold a single number")
# The same run either way, apart from the timeline and the host's speed.
a = {k: v for k, v in short.items() if k not in MACHINE}
b = {k: v for k, v in whole.items() if k not in MACHINE and k != "timeline"}
check(a == b, "default and --timeline results differ beyond the timeline")
check("breakdown" not in short, "default output carries the breakdown")

# --breakdown: one finish time per connection, bytes per leaf-spine link and host port.
bd = json.loads(run("--breakdown", "--quiet").stdout).get("breakdown", {})
done = bd.get("conn_done_us", [])
check(len(done) == short["connections"] and all(d > 0 for d in done),
      f"--breakdown: {len(done)} finish times for {short['connections']} connections")
check(max(done, default=0) <= short["completion_time_us"] + 0.001,
      "--breakdown: a connection finished after the run's last completion")
hosts = bd.get("host_up_bytes", [])
check(len(hosts) >= 1 and sum(map(sum, hosts)) > 0, "--breakdown: no host port bytes")
check(isinstance(bd.get("leaf_up_bytes"), list), "--breakdown: no leaf-spine bytes")

beat = run("--progress", "0.01")
progress = [l for l in beat.stderr.splitlines() if "running:" in l]
check(len(progress) >= 1, f"--progress 0.01: no progress line on stderr: {beat.stderr!r}")
check(json.loads(beat.stdout)["scenario"] == short["scenario"], "--progress changed stdout")
# Each line says how far the run is in simulated time and in messages, both never going
# back and never past the end of the run.
UNIT_US = {"us": 1, "ms": 1e3, "s": 1e6}
shown = []
for l in progress:
    m = re.search(r"running: ([0-9.]+) (us|ms|s)(?: of [0-9.]+ (?:us|ms|s))? simulated"
                  r"(?: \(\d+ %\))?, (\d+) of (\d+) messages done, [0-9.]+ s wall", l)
    check(m is not None, f"progress line without simulated time and messages: {l!r}")
    if m:
        shown.append((float(m[1]) * UNIT_US[m[2]], int(m[3]), int(m[4])))
check(shown == sorted(shown), f"progress goes backwards: {shown}")
end_us = json.loads(beat.stdout)["virtual_time_us"]
total = short["messages"]["total"]
check(all(t <= end_us + 0.1 and done <= tot == total for t, done, tot in shown),
      f"progress beyond the run's end ({end_us} us, {total} messages): {shown}")
check(run("--progress", "0.01", "--quiet").stderr == "", "--quiet still prints progress")

bad = subprocess.run([sim, scenario, "--progress", "soon"], capture_output=True, text=True)
check(bad.returncode == 2 and "--progress" in bad.stderr, "--progress soon was not refused")

for f in failures:
    print("FAIL:", f)
print(f"{len(lines)} default lines, {len(full_lines)} with --timeline ({bins} bins)")
sys.exit(1 if failures else 0)
