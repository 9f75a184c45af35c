#!/usr/bin/python3
"""The seed spread's arithmetic (scripts/experiments/seeds.py) on made-up goodputs: each
target's per-seed ratio, its mean and worst seed, and a verdict that follows the worst
seed, not the mean or seed 1. (report.py --check recomputes the committed seeds.json from
doc/results' runs in experiments_results_match.)

Usage: seeds_check.py EXPERIMENTS_DIR
"""
import sys

sys.path.insert(0, sys.argv[1])
import seeds  # noqa: E402

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


def run(gbps):
    return {"goodput_gbps": gbps, "wall_time_s": 0.5}


# Loss-free 100 Gb/s on every seed; 10 % loss gives 90, 80, 70, 85 on seeds 1-4:
# mean 81.25 % passes 75 %, seed 3 (70 %) does not.
tenth = {1: 90.0, 2: 80.0, 3: 70.0, 4: 85.0}
seed1 = {"1_loss": {"loss_0pct": run(100.0), "loss_1pct": run(99.0), "loss_10pct": run(tenth[1])},
         "3_planes": {1: run(100.0), 2: run(200.0), 4: run(400.0), 8: run(800.0)}}
extra = {}
for seed in seeds.FAMILIES["full"]:
    extra[("1_loss", "loss_0pct", seed)] = run(100.0)
    extra[("1_loss", "loss_1pct", seed)] = run(96.0)
    extra[("1_loss", "loss_10pct", seed)] = run(tenth[seed])
    for k in (1, 2, 4, 8):
        # Plane scaling: linear on every seed but seed 2 at 8 planes (720 of 800).
        extra[("3_planes", k, seed)] = run(100.0 * k * (0.9 if (k, seed) == (8, 2) else 1.0))

s = seeds.summary(seed1, extra, "full")
t = s["targets"]
check(s["seeds"] == [1, 2, 3, 4], f"seeds {s['seeds']}")
check(t["loss_10pct"]["by_seed"] == [0.9, 0.8, 0.7, 0.85], f"10 % by seed {t['loss_10pct']['by_seed']}")
check(abs(t["loss_10pct"]["mean"] - 0.8125) < 1e-4, f"10 % mean {t['loss_10pct']['mean']}")
check(t["loss_10pct"]["worst"] == 0.7 and t["loss_10pct"]["worst_seed"] == 3, "10 % worst seed")
check(t["loss_10pct"]["met"] is False, "a target whose mean passes but one seed fails was called met")
check(t["loss_1pct"]["met"] is True, "1 % loss: every seed >= 95 % but not met")
check(t["planes_4"]["met"] is True and t["planes_4"]["worst"] == 1.0, "4 planes: linear on every seed")
check(t["planes_8"]["worst"] == 0.9 and t["planes_8"]["worst_seed"] == 2 and not t["planes_8"]["met"],
      f"8 planes: {t['planes_8']}")
lines, targets, head = seeds.report(s)
page = "\n".join(lines)
check("| 90.0 % | 80.0 % | 70.0 % | 85.0 % | 81.2 % | 70.0 % |" in page, "the table row of the 10 % target")
check(any("worst goodput at 10 % loss" in name and v.startswith("**missed**") for name, v in targets),
      "the 10 % target's verdict")
check(len(head) == len(seeds.HEADLINE), "headline rows")

for f in failures:
    print("FAIL:", f)
if failures:
    sys.exit(1)
print("seeds: per-seed ratios, mean, worst seed and verdicts follow from the runs")
