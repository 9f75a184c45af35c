"""Seed spread: the targets whose single run moves most with the model's seed (ECMP
hashing, entropy ports, loss draws) run again on more seeds, metaroce only. The
experiments' own runs are seed 1; these add the others. A target read here is met when
its worst seed meets it, and the page gives the mean beside it, so one lucky or unlucky
seed neither passes nor fails a mechanism. Text only, like definitions.py.
"""
import copy

from definitions import EXPERIMENTS, verdict

# family -> extra seeds (seed 1 is the experiments' own run)
FAMILIES = {"full": [2, 3, 4], "quick": [2]}

# (id, what, experiment dir, [(case key, role)], threshold); value = numerator/denominator.
TARGETS = [
    ("loss_1pct", "goodput at 1 % loss (of loss-free)", "1_loss",
     ("loss_1pct", "loss_0pct", 1), 0.95),
    ("loss_10pct", "goodput at 10 % loss (of loss-free)", "1_loss",
     ("loss_10pct", "loss_0pct", 1), 0.75),
    ("planes_2", "plane scaling 1 → 2 planes (of linear)", "3_planes", (2, 1, 2), 0.95),
    ("planes_4", "plane scaling 1 → 4 planes (of linear)", "3_planes", (4, 1, 4), 0.95),
    ("planes_8", "plane scaling 1 → 8 planes (of linear)", "3_planes", (8, 1, 8), 0.95),
]
HEADLINE = ("loss_10pct", "planes_8")


def experiment(d):
    return next(e for e in EXPERIMENTS if e.dir == d)


def needed(quick):
    """{(dir, case key): seed-1 scenario} of the metaroce runs the targets read."""
    out = {}
    for _, _, d, (num, den, _), _ in TARGETS:
        for key, proto, s in experiment(d).cases(quick):
            if proto == "metaroce" and key in (num, den):
                out[(d, key)] = s
    return out


def cases(family, quick):
    """[((dir, case key, seed), scenario)] of the extra seeds."""
    out = []
    for (d, key), s in needed(quick).items():
        for seed in FAMILIES[family]:
            t = copy.deepcopy(s)
            t["seed"] = seed
            out.append(((d, key, seed), t))
    return out


def file_name(key):
    d, case, seed = key
    return f"seeds/{d}.{case}.seed{seed}.metaroce.json"


def summary(seed1, extra, family):
    """What seeds.json holds. seed1: {dir: {case key: result}} (the experiments' metaroce
    runs); extra: {(dir, case key, seed): result}."""
    seeds = [1] + FAMILIES[family]

    def goodput(d, key, seed):
        r = seed1[d][key] if seed == 1 else extra[(d, key, seed)]
        return r["goodput_gbps"]

    out = {"family": family, "seeds": seeds, "runs": len(extra),
           "sim_s": round(sum(r["wall_time_s"] for r in extra.values()), 1), "targets": {}}
    for tid, what, d, (num, den, scale), threshold in TARGETS:
        vals = []
        for seed in seeds:
            base = goodput(d, den, seed) * scale
            vals.append(round(goodput(d, num, seed) / base, 4) if base else 0.0)
        worst = min(vals)
        out["targets"][tid] = {"what": what, "threshold": threshold, "by_seed": vals,
                               "mean": round(sum(vals) / len(vals), 4), "worst": worst,
                               "worst_seed": seeds[vals.index(worst)], "met": worst >= threshold}
    return out


def report(summ):
    """(README lines, [(target, verdict)], headline rows) from seeds.json's content."""
    seeds = summ["seeds"]
    span = f"seeds {seeds[0]}-{seeds[-1]}" if len(seeds) > 2 else f"seeds {', '.join(map(str, seeds))}"
    lines = ["## Seed spread: the noisiest targets on more seeds", "",
             f"The runs above use the model's seed 1. These targets move most with the seed (ECMP "
             f"hashing, entropy ports, which packets a loss draw takes), so their metaroce runs "
             f"repeat on {span} (`metaroce-sim --seed`, same scenarios). A target here is met when "
             "its **worst** seed meets it.", "",
             "| target | " + " | ".join(f"seed {s}" for s in seeds) + " | mean | worst |",
             "|---|" + "---|" * (len(seeds) + 2)]
    targets, head = [], []
    for tid, e in summ["targets"].items():
        cells = [f"{v * 100:.1f} %" for v in e["by_seed"]]
        lines.append(f"| {e['what']} | " + " | ".join(cells) +
                     f" | {e['mean'] * 100:.1f} % | {e['worst'] * 100:.1f} % |")
        targets.append((f"{span}: worst {e['what']} ≥ {e['threshold'] * 100:.0f} %",
                        verdict(e["met"], f"{e['worst'] * 100:.1f} % at seed {e['worst_seed']}, "
                                          f"mean {e['mean'] * 100:.1f} %")))
        if tid in HEADLINE:
            head.append((f"{span} (mean / worst): {e['what']}",
                         f"{e['mean'] * 100:.1f} % / {e['worst'] * 100:.1f} %", "n/a", "–"))
    return lines + [""], targets, head
