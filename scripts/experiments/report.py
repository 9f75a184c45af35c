#!/usr/bin/python3
"""Turns a results directory (the JSON of every run) into its README.md, its figures and
the figures block of the top-level README.md, or checks that they already agree.

Usage: report.py DIR [--readme README.md] [--check]
  DIR/run.json says which set ran and how: {"quick": bool, "elapsed_s": s, "cores": n,
  "experiments": [dirs], "sweep": family}; without "experiments", the first five ran
  (runs from before 6_scale_across); without "sweep", no sweep ran.
  DIR/sweep.json holds the sweep's worst values, DIR/seeds.json the seed spread ("seeds":
  family in run.json); --check recomputes both from the runs.
  --readme F  also rewrites (or checks) F's block between the experiments markers.
  --check     writes nothing; exits 1, with a diff, when DIR's README.md, its figures or
              F's block differ from what DIR's JSON gives, or when a run's input is not
              the scenario definitions.py builds now (run ./scripts/experiments.sh --update).
"""
import difflib
import glob
import json
import os
import sys
import tempfile
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import seeds  # noqa: E402
import sweep  # noqa: E402
from definitions import EXPERIMENTS, PROTOCOLS, result_path  # noqa: E402

# What a run.json without an "experiments" list ran.
LEGACY = ["1_loss", "2_incast", "3_planes", "4_plane_failure", "5_collectives"]

BEGIN = ("<!-- experiments:begin (written by ./scripts/experiments.sh --update from "
         "doc/results/; change the script, not this block) -->")
END = "<!-- experiments:end -->"


# Parts of the results that are summaries (their own JSON file), not per-run tables.
SUMMARIES = ("sweep", "seeds")


def experiments(manifest):
    ran = manifest.get("experiments", LEGACY)
    return [exp for exp in EXPERIMENTS if exp.dir in ran]


def load_sweep(out, manifest, problems, expected):
    """{case key: result} of the sweep's runs, None when no sweep ran."""
    family = manifest.get("sweep")
    if family is None:
        return None
    runs = {}
    for key, s in sweep.cases(family):
        r = load_result(out, sweep.file_name(key), s, "sweep.py", problems, expected)
        if r is not None:
            runs[key] = r
    return runs


def load_seeds(out, manifest, results, problems, expected):
    """seeds.json's content from the extra seeds' runs and the experiments' own (seed 1)."""
    family = manifest.get("seeds")
    if family is None:
        return None
    extra = {}
    for key, s in seeds.cases(family, manifest["quick"]):
        r = load_result(out, seeds.file_name(key), s, "seeds.py", problems, expected)
        if r is not None:
            extra[key] = r
    if problems:
        return None
    return seeds.summary({d: res["metaroce"] for d, res in results.items() if d != "sweep"},
                         extra, family)


def load_result(out, rel, scenario, builder, problems, expected):
    """The result at out/rel, None when missing; notes a run of another scenario."""
    expected.add(rel)
    path = os.path.join(out, rel)
    if not os.path.exists(path):
        problems.append(f"{rel}: missing")
        return None
    with open(path) as f:
        r = json.load(f)
    if r.get("input") != scenario:
        problems.append(f"{rel}: ran a different scenario than {builder} builds now")
    return r


def load(out):
    """(manifest, {dir: {protocol: {key: result}}}, problems); results["sweep"] is the
    sweep's summary recomputed from its runs (when one ran)."""
    with open(os.path.join(out, "run.json")) as f:
        manifest = json.load(f)
    quick = manifest["quick"]
    results, problems, expected = {}, [], set()
    runs = load_sweep(out, manifest, problems, expected)
    if runs is not None and not problems:
        results["sweep"] = sweep.summary(runs, manifest["sweep"])
    for exp in experiments(manifest):
        res = results.setdefault(exp.dir, {p: {} for p in PROTOCOLS})
        for key, proto, s in exp.cases(quick):
            r = load_result(out, result_path(exp, s), s, "definitions.py", problems, expected)
            if r is not None:
                res[proto][key] = r
    spread = load_seeds(out, manifest, results, problems, expected)
    if spread is not None:
        results["seeds"] = spread
    for path in sorted(glob.glob(os.path.join(out, "*", "*.json"))):
        rel = os.path.relpath(path, out)
        if rel not in expected:
            problems.append(f"{rel}: not a run of the {'quick' if quick else 'full'} set")
    return manifest, results, problems


def sections(manifest, results):
    quick = manifest["quick"]
    body, targets, head = [], [], []
    for exp in experiments(manifest):
        lines, t, h = exp.report(results[exp.dir], quick)
        body += lines
        targets += t
        head += h
    for part, module in (("seeds", seeds), ("sweep", sweep)):
        if part in results:
            lines, t, h = module.report(results[part])
            body += lines
            targets += t
            head += h
    sim_s = sum(r["wall_time_s"] for d, res in results.items() if d not in SUMMARIES
                for by in res.values() for r in by.values()) + \
        sum(results.get(part, {}).get("sim_s", 0) for part in SUMMARIES)
    cmd = ("./scripts/experiments.sh --update" + (" --quick" if quick else "")
           + (" --sweep" if manifest.get("sweep") in ("full", "quick") else "")
           + (" --seeds" if "seeds" in manifest else ""))
    e = manifest["elapsed_s"]
    took = (f"{sim_s:.0f} s of simulation, {f'{e:.0f} s' if e < 120 else f'{e / 60:.0f} min'} "
            f"for the whole script on {manifest['cores']} cores")
    return body, targets, head, cmd, took


def headline(head):
    return ["| figure | metaroce | RoCEv2 model | published MetaRoCE |", "|---|---|---|---|"] + \
        [f"| {name} | {m} | {r} | {pub} |" for name, m, r, pub in head]


def results_readme(manifest, results):
    body, targets, head, cmd, took = sections(manifest, results)
    doc = ["# Fabric-model results: metaroce vs the RoCEv2 model", "",
           f"Generated by `{cmd}` ({took}). Every number comes from "
           "`build/app/metaroce-sim/metaroce-sim`, a deterministic model (`doc/model.md`); the RoCEv2 "
           "column is a *model of RoCEv2* (go-back-N, DCQCN, one path per QP; `drivers/sim/rocev2/`), "
           "not RoCEv2 hardware. Published MetaRoCE figures are the announcement's claims (no setup "
           "published). JSON of every run (its scenario under `input`, the full timeline) sits next "
           "to the figures; `scripts/experiments/report.py --check` tells whether this page, the "
           "figures and the top-level README still follow from it.", "",
           "## Headline", ""] + headline(head)
    doc += ["", "## Targets (issue 4), metaroce", "", "| target | result |", "|---|---|"]
    doc += [f"| {t} | {v} |" for t, v in targets]
    doc += ["", "Sizes are scaled to run on 2 cores: transfers of 16-512 MiB instead of GiBs, incast "
            "senders send 256-512 KiB each, plane scaling sends 512 KiB per connection; each is still "
            "many BDPs per flow. `--quick` shrinks them further and drops the 256:1 incast.", ""]
    return "\n".join(doc + body) + "\n"


def readme_block(manifest, results):
    _, targets, head, cmd, took = sections(manifest, results)
    met = [t for t, v in targets if v.startswith("met")]
    missed = [f"{t} ({v[len('**missed** ('):-1]})" for t, v in targets if not v.startswith("met")]
    def para(text):
        return textwrap.wrap(text, 92, break_on_hyphens=False) + [""]

    lines = [BEGIN] + para(
        f"`{cmd}` ({took}; full tables, figures and every target in "
        "[`doc/results/README.md`](doc/results/README.md)). The RoCEv2 column is a *model* of "
        "RoCEv2 (go-back-N, DCQCN, one path per QP) in the same fabric, not RoCEv2 hardware.")
    lines += headline(head) + [""]
    lines += para(f"Met ({len(met)} of {len(targets)} targets): " + "; ".join(met) + ".")
    if missed:
        lines += para("Missed: " + "; ".join(missed) + ".")
    return "\n".join(lines[:-1] + [END])


def with_block(text, block):
    b, e = text.find(BEGIN), text.find(END)
    if b < 0 or e < b:
        raise SystemExit(f"the README has no '{BEGIN}' ... '{END}' block")
    return text[:b] + block + text[e + len(END):]


def diff(name, want, have):
    return "".join(difflib.unified_diff(have.splitlines(True), want.splitlines(True),
                                        f"{name} (committed)", f"{name} (from the JSON)", n=1))


def draw(manifest, results, out):
    import plots  # only here: checking the text needs no drawing
    plots.draw_all(experiments(manifest), results, manifest["quick"], out)


def summary_json(results, part):
    return json.dumps(results[part], indent=1) + "\n"


def check(out, readme):
    manifest, results, problems = load(out)
    if problems:
        return problems
    for part in SUMMARIES:
        if part not in results:
            continue
        path = os.path.join(out, f"{part}.json")
        have = open(path).read() if os.path.exists(path) else ""
        want = summary_json(results, part)
        if have != want:
            problems.append(diff(path, want, have))
    path = os.path.join(out, "README.md")
    with open(path) as f:
        have = f.read()
    want = results_readme(manifest, results)
    if have != want:
        problems.append(diff(path, want, have))
    if readme:
        with open(readme) as f:
            text = f.read()
        want = with_block(text, readme_block(manifest, results))
        if text != want:
            problems.append(diff(readme, want, text))
    with tempfile.TemporaryDirectory() as tmp:
        for exp in experiments(manifest):
            os.makedirs(os.path.join(tmp, exp.dir))
        draw(manifest, results, tmp)
        for svg in sorted(glob.glob(os.path.join(tmp, "*", "*.svg"))):
            rel = os.path.relpath(svg, tmp)
            mine = os.path.join(out, rel)
            with open(svg) as a:
                fresh = a.read()
            if not os.path.exists(mine):
                problems.append(f"{rel}: missing")
                continue
            with open(mine) as b:
                if b.read() != fresh:
                    problems.append(f"{rel}: differs from the figure its JSON gives")
    return problems


def write(out, readme):
    manifest, results, problems = load(out)
    if problems:
        raise SystemExit("\n".join(problems))
    draw(manifest, results, out)
    for part in SUMMARIES:
        if part in results:
            with open(os.path.join(out, f"{part}.json"), "w") as f:
                f.write(summary_json(results, part))
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(results_readme(manifest, results))
    if readme:
        with open(readme) as f:
            text = f.read()
        with open(readme, "w") as f:
            f.write(with_block(text, readme_block(manifest, results)))


def main():
    args = sys.argv[1:]
    readme = None
    if "--readme" in args:
        i = args.index("--readme")
        readme = args[i + 1]
        del args[i:i + 2]
    do_check = "--check" in args
    args = [a for a in args if a != "--check"]
    if len(args) != 1:
        raise SystemExit(__doc__)
    if do_check:
        problems = check(args[0], readme)
        for p in problems:
            print(p)
        if problems:
            print("results and their pages disagree: ./scripts/experiments.sh --update regenerates them")
            sys.exit(1)
        print(f"{args[0]}: README, figures" + (f" and {readme}'s block" if readme else "") +
              " follow from the JSON")
    else:
        write(args[0], readme)


if __name__ == "__main__":
    main()
