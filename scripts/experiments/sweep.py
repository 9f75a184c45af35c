"""The sweep (issue 12): the loss and incast targets over a family of fabrics, and the
worst value of each target over the family. A target is met when its worst value is.

A family is a sampled grid, not the full cross product: a base fabric, each dimension
moved alone to its extremes (1 and 4 leaves, 2-8 spines per plane, 1-8 planes, 4-256
paths, 64 KiB-16 MiB messages) and a few corners that move several at once. Every
fabric runs the loss cases (loss-free, iid and bursty Gilbert loss at 10 %) and the
incast sizes, metaroce and the RoCEv2 model alike, and the READ fan-in sizes (host 0
reads from N hosts at once: the reader is the incast receiver), metaroce alone (the
RoCEv2 model has only WRITE). Text only, like definitions.py.
"""
import copy

from definitions import BASE, LABEL, PROTOCOLS, fmt, verdict

KIB, MIB = 1 << 10, 1 << 20

# Each fabric: name -> overrides of the base (4 leaves of 4 hosts, 4 spines, 2 planes,
# 16 paths, 1 MiB messages). leaves=1 puts every host under one leaf.
DIMENSIONS = {
    "base": {},
    "1_leaf": {"leaves": 1},
    "2_spines": {"spines": 2},
    "8_spines": {"spines": 8},
    "1_plane": {"planes": 1},
    "4_planes": {"planes": 4},
    "8_planes": {"planes": 8},
    "4_paths": {"paths": 4},
    "64_paths": {"paths": 64},
    "256_paths": {"paths": 256},
    "64KiB": {"msg": 64 * KIB},
    "16MiB": {"msg": 16 * MIB},
}
CORNERS = {
    # The issue's multi-leaf fabric: 0.61 of loss-free at 10 % loss on main.
    "issue_16h_4s_64p_4MiB": {"spines": 4, "paths": 64, "msg": 4 * MIB},
    "wide_8pl_8s_256p_64KiB": {"planes": 8, "spines": 8, "paths": 256, "msg": 64 * KIB},
    "narrow_1pl_2s_4p_16MiB": {"planes": 1, "spines": 2, "paths": 4, "msg": 16 * MIB},
    "1_leaf_8pl_64p_4MiB": {"leaves": 1, "planes": 8, "paths": 64, "msg": 4 * MIB},
}
LOSSES = {
    "lossless": {"model": "none"},
    "iid_10pct": {"model": "iid", "rate": 0.10},
    "gilbert_10pct_b4": {"model": "gilbert", "rate": 0.10, "burst": 4},
}

FAMILIES = {
    # name: (fabrics, loss cases, incast sizes, payload per loss connection, incast
    # messages, READ fan-in sizes)
    "full": (list(DIMENSIONS) + list(CORNERS), list(LOSSES), [8, 64, 256], 16 * MIB, 4, [8, 64, 256]),
    "quick": (["base", "1_leaf", "1_plane", "issue_16h_4s_64p_4MiB", "wide_8pl_8s_256p_64KiB",
               "narrow_1pl_2s_4p_16MiB"], list(LOSSES), [64], 4 * MIB, 2, [64]),
    # The model suite's test: small enough for seconds, still two fabrics and every kind.
    "tiny": (["base", "1_leaf"], ["lossless", "iid_10pct"], [8], 1 * MIB, 2, [8]),
}


def fabric(name):
    f = {"leaves": 4, "spines": 4, "planes": 2, "paths": 16, "msg": 1 * MIB}
    f.update(DIMENSIONS[name] if name in DIMENSIONS else CORNERS[name])
    return f


def base_scenario(name, protocol, f, hosts, per_leaf):
    s = copy.deepcopy(BASE)
    s["name"] = name
    t = s["topology"]
    t.update(hosts=hosts, planes=f["planes"], spines_per_plane=f["spines"],
             hosts_per_leaf=hosts if f["leaves"] == 1 else per_leaf)
    s["transport"]["paths_per_connection"] = f["paths"]
    s["transport"]["protocol"] = protocol
    return s


def incast_scenario(fname, kind, n, p, f, msgs, op):
    # Senders under several leaves, the sink's leaf shared with a victim flow.
    s = base_scenario(f"sweep_{fname}_{kind}_{n}", p, f, n + 8, 8)
    s["timeline_us"] = 2
    # The victim needs a second leaf.
    s["workload"].update(pattern="incast", senders=n, op=op, message_bytes=131072,
                         messages=msgs, outstanding=2, victim=f["leaves"] > 1)
    return s


def cases(family):
    """[(key, scenario)]; key = (fabric, 'loss'|'incast'|'read_incast', case, protocol)."""
    fabrics, losses, sizes, payload, incast_msgs, read_sizes = FAMILIES[family]
    out = []
    for fname in fabrics:
        f = fabric(fname)
        for p in PROTOCOLS:
            for lname in losses:
                s = base_scenario(f"sweep_{fname}_{lname}", p, f, 16, 4)
                s["faults"]["loss"] = copy.deepcopy(LOSSES[lname])
                s["workload"].update(message_bytes=f["msg"], messages=max(2, payload // f["msg"]),
                                     outstanding=8 if f["msg"] < MIB else 4)
                # The RoCEv2 model's go-back-N may never finish a 16 MiB message at 10 %
                # loss: every run stops by 50 ms (metaroce needs about 1-2 ms here).
                s["duration_us"] = 50000
                out.append(((fname, "loss", lname, p), s))
            for n in sizes:
                out.append(((fname, "incast", n, p), incast_scenario(fname, "incast", n, p, f, incast_msgs, "write")))
        for n in read_sizes:
            s = incast_scenario(fname, "read_incast", n, "metaroce", f, incast_msgs, "read")
            out.append(((fname, "read_incast", n, "metaroce"), s))
    return out


def file_name(key):
    fname, kind, case, p = key
    return f"sweep/{fname}.{kind}_{case}.{p}.json"


# The targets: (id, what, better, threshold, published MetaRoCE figure).
TARGETS = [
    ("goodput_10pct_iid", "goodput at 10 % iid loss (of loss-free)", "high", 0.75, "\"useful bandwidth\""),
    ("goodput_10pct_bursty", "goodput at 10 % bursty loss (Gilbert, 4-packet bursts)", "high", 0.75, "–"),
    ("loss_timeouts", "timeouts at 10 % iid loss", "low", 0, "–"),
    ("loss_reroutes", "reroutes at 10 % iid loss", "low", 0, "–"),
    ("incast_jain", "incast Jain", "high", 0.95, "–"),
    ("incast_convergence_rtts", "incast convergence to fair share (RTTs)", "low", 2, "1-2 RTTs"),
    ("incast_timeouts", "incast timeouts", "low", 0, "–"),
    ("incast_drop_pct", "incast drops (% of packets)", "low", 1, "–"),
    ("read_incast_jain", "READ fan-in Jain", "high", 0.95, "–"),
    ("read_incast_convergence_rtts", "READ fan-in convergence to fair share (RTTs)", "low", 2, "open problem"),
    ("read_incast_timeouts", "READ fan-in timeouts", "low", 0, "–"),
    ("read_incast_drop_pct", "READ fan-in drops (% of packets)", "low", 1, "–"),
]


def values(results, family, protocol):
    """{target id: [(fabric/case, value)]} from the runs; None is 'never' (convergence)."""
    fabrics, losses, sizes, _, _, read_sizes = FAMILIES[family]
    v = {t[0]: [] for t in TARGETS}

    def incast(kind, x, where):
        v[f"{kind}_jain"].append((where, x["jain_index"] or 0.0))
        v[f"{kind}_convergence_rtts"].append((where, x["convergence_rtts"]))
        v[f"{kind}_timeouts"].append((where, x["timeouts"]))
        inj = x["fabric_packets"]["injected"]
        v[f"{kind}_drop_pct"].append((where, 100.0 * x["dropped_packets"] / inj if inj else 0.0))

    for fname in fabrics:
        def r(kind, case):
            return results[(fname, kind, case, protocol)]
        free = r("loss", "lossless")["goodput_gbps"]
        if "iid_10pct" in losses:
            x = r("loss", "iid_10pct")
            v["goodput_10pct_iid"].append((fname, x["goodput_gbps"] / free if free else 0.0))
            v["loss_timeouts"].append((fname, x["timeouts"]))
            v["loss_reroutes"].append((fname, x["reroutes"]))
        if "gilbert_10pct_b4" in losses:
            x = r("loss", "gilbert_10pct_b4")
            v["goodput_10pct_bursty"].append((fname, x["goodput_gbps"] / free if free else 0.0))
        for n in sizes:
            incast("incast", r("incast", n), f"{fname}, {n}:1")
        for n in read_sizes if protocol == "metaroce" else []:
            incast("read_incast", r("read_incast", n), f"{fname}, {n}:1")
    return v


def worst(better, pairs):
    """(where, value) of the worst run: lowest for 'high', highest for 'low', None
    (never converged) worst of all."""
    if not pairs:
        return None
    if better == "low":
        never = [p for p in pairs if p[1] is None]
        if never:
            return never[0]
        return max(pairs, key=lambda p: p[1])
    return min(pairs, key=lambda p: p[1])


def met(better, threshold, value):
    if value is None:
        return False
    return value >= threshold if better == "high" else value <= threshold


def summary(results, family):
    """What sweep.json holds: per target, the worst over the family and where."""
    out = {"family": family, "fabrics": {f: fabric(f) for f in FAMILIES[family][0]},
           "losses": {k: LOSSES[k] for k in FAMILIES[family][1]},
           "incast_sizes": FAMILIES[family][2], "read_incast_sizes": FAMILIES[family][5],
           "runs": len(results),
           "sim_s": round(sum(r["wall_time_s"] for r in results.values()), 1), "targets": {}}
    for tid, what, better, threshold, _ in TARGETS:
        entry = {"what": what, "better": better, "threshold": threshold}
        for p in PROTOCOLS:
            w = worst(better, values(results, family, p)[tid])
            entry[p] = None if w is None else {"worst": w[1], "at": w[0]}
        if entry["metaroce"] is not None:
            entry["met"] = met(better, threshold, entry["metaroce"]["worst"])
            out["targets"][tid] = entry
    return out


def show(tid, v):
    tid = tid.removeprefix("read_")
    if v is None:
        return "never"
    if tid.startswith("goodput"):
        return f"{v * 100:.1f} %"
    if tid == "incast_jain":
        return f"{v:.3f}"
    if tid == "incast_convergence_rtts":
        return f"{v:.1f}"
    if tid == "incast_drop_pct":
        return f"{v:.2f} %"
    return str(v)


def report(summ):
    """(README lines, [(target, verdict)], headline rows) from sweep.json's content."""
    fam = summ["family"]
    fabrics = summ["fabrics"]
    lines = ["## Sweep: the targets over a family of fabrics", "",
             f"Family `{fam}` ({len(fabrics)} fabrics; {len(summ['losses'])} loss cases and incast "
             f"{', '.join(f'{n}:1' for n in summ['incast_sizes'])} on each, both protocols). A sampled "
             "grid: the base (4 leaves of 4 hosts, 4 spines per plane, 2 planes, 16 paths, 1 MiB "
             "messages), each dimension alone at its extremes, and corners that move several at once. "
             "Loss runs: 8 pairs; incast: N senders under leaves of 8 hosts (one leaf when the fabric "
             "has one) writing 128 KiB messages to host 0, with a victim flow when there are several leaves; "
             f"READ fan-in ({', '.join(f'{n}:1' for n in summ.get('read_incast_sizes', []))}, metaroce "
             "only: the RoCEv2 model has only WRITE): the same fabric, host 0 reading 128 KiB messages "
             "from each of the N hosts at once, the victim host 1 reading from H-1. Each cell is the "
             "**worst** run of the family (lowest goodput or Jain, highest convergence, timeouts or "
             "drops) and where it happened.", "",
             "| fabric | leaves | spines/plane | planes | paths | message |", "|---|---|---|---|---|---|"]
    for name, f in fabrics.items():
        msg = f"{f['msg'] >> 20} MiB" if f["msg"] >= MIB else f"{f['msg'] >> 10} KiB"
        lines.append(f"| {name} | {f['leaves']} | {f['spines']} | {f['planes']} | {f['paths']} | {msg} |")
    lines += ["", "| target | worst metaroce (where) | worst RoCEv2 model (where) | published MetaRoCE |",
              "|---|---|---|---|"]
    targets, head = [], []
    pub = {t[0]: t[4] for t in TARGETS}
    for tid, e in summ["targets"].items():
        cells = []
        for p in PROTOCOLS:
            w = e.get(p)
            cells.append("n/a" if w is None else f"{show(tid, w['worst'])} ({w['at']})")
        lines.append(f"| {e['what']} | {cells[0]} | {cells[1]} | {pub[tid]} |")
        op = "≥" if e["better"] == "high" else "≤"
        thr = f"{e['threshold'] * 100:.0f} %" if tid.startswith("goodput") else f"{e['threshold']}"
        targets.append((f"sweep: worst {e['what']} {op} {thr}",
                        verdict(e["met"], f"{show(tid, e['metaroce']['worst'])} at {e['metaroce']['at']}")))
        head.append((f"sweep worst: {e['what']}", show(tid, e["metaroce"]["worst"]),
                     "n/a" if e.get("rocev2_model") is None else show(tid, e["rocev2_model"]["worst"]),
                     pub[tid]))
    return lines + [""], targets, head

