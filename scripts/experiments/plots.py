"""The experiments' figures (SVG), drawn from the results alone."""
import os

import svgplot
from definitions import LABEL, PROTOCOLS

COLOR = {"metaroce": "#1f77b4", "rocev2_model": "#d62728"}


def times(r):
    dt = r["timeline"]["interval_us"]
    return [i * dt for i in range(len(r["timeline"]["goodput_gbps"]))]


def loss(exp, res, quick, out):
    p = svgplot.Panel("Goodput vs iid loss", "iid loss (%)", "goodput (% of loss-free)")
    p.symlog_x(0.1)
    names = [n for n, _ in exp.names()][:len(exp.rates)]
    for proto in PROTOCOLS:
        base = res[proto]["loss_0pct"]["goodput_gbps"]
        p.line([r * 100 for r in exp.rates], [res[proto][n]["goodput_gbps"] / base * 100 for n in names],
               LABEL[proto], COLOR[proto], dots=True)
    p.hline(95, "target 95 % at 1 %", "#2ca02c")
    p.hline(75, "target 75 % at 10 %", "#ff7f0e")
    p.mark(1, 86, "MetaRoCE claim 86 % at 1 %")
    svgplot.save(os.path.join(out, exp.dir, "goodput_vs_loss.svg"), [p], 1)


def incast(exp, res, quick, out):
    panels = []
    for n in exp.sizes(quick):
        p = svgplot.Panel(f"{n}:1 incast, last-hop queue", "time (us)", "queue (KB)")
        for proto in PROTOCOLS:
            r = res[proto][n]
            p.line(times(r), [v / 1e3 for v in r["timeline"]["last_hop_queue_bytes"]], LABEL[proto],
                   COLOR[proto], width=1)
        p.hline(res["metaroce"][n]["max_queue_bytes"]["bdp"] / 1e3, "1 BDP")
        panels.append(p)
    svgplot.save(os.path.join(out, exp.dir, "incast_queue.svg"), panels, 1, panel_w=640, panel_h=260)


def planes(exp, res, quick, out):
    p = svgplot.Panel("Plane scaling", "planes", "goodput (Gb/s)")
    for proto in PROTOCOLS:
        p.line(exp.planes, [res[proto][k]["goodput_gbps"] for k in exp.planes], LABEL[proto],
               COLOR[proto], dots=True)
    one = res["metaroce"][1]["goodput_gbps"]
    p.line(exp.planes, [one * k for k in exp.planes], "linear from metaroce @1", "#555555", 1, "5 4")
    svgplot.save(os.path.join(out, exp.dir, "plane_scaling.svg"), [p], 1)


def plane_failure(exp, res, quick, out):
    # One panel per plane count and protocol: the total and each plane, at most five
    # lines, the same colour per plane everywhere.
    # A row shares its y scale so the protocols compare at a glance.
    panels = []
    for k in exp.planes:
        top = max(max(res[proto][k]["timeline"]["goodput_gbps"]) for proto in PROTOCOLS)
        for proto in PROTOCOLS:
            r = res[proto][k]
            p = svgplot.Panel(f"{LABEL[proto]}, {k} planes", "time (us)", "goodput (Gb/s)")
            p.ymax = top
            t = times(r)
            for pl, series in enumerate(r["timeline"]["plane_gbps"]):
                p.line(t, series, f"plane {pl}" + (" (fails)" if pl == 1 else ""),
                       svgplot.COLORS[(pl + 2) % len(svgplot.COLORS)], 1)
            p.line(t, r["timeline"]["goodput_gbps"], "total", "#000000", 1.5)
            p.vline(300, "plane 1 fails at 300 us")
            panels.append(p)
    svgplot.save(os.path.join(out, exp.dir, "plane_failure_timeline.svg"), panels, len(PROTOCOLS))


DRAW = {"1_loss": loss, "2_incast": incast, "3_planes": planes, "4_plane_failure": plane_failure}


def draw_all(experiments, results, quick, out):
    for exp in experiments:
        if exp.dir in DRAW:
            DRAW[exp.dir](exp, results[exp.dir], quick, out)
