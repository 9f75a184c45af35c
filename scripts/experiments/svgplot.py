"""Line charts as SVG text, with nothing to install: the experiments' figures.

A figure is a grid of panels; each panel has lines, reference lines and markers, axes
with round-number ticks and its legend to the right of the plot, where it cannot hide
data. The output is a pure function of the input (fixed rounding, no timestamps), so
a test can redraw the figures from the committed JSON and compare the files.
"""
import math
from xml.sax.saxutils import escape

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
          "#7f7f7f", "#bcbd22"]
FONT = "font-family=\"DejaVu Sans, Arial, sans-serif\""


def nice_step(span, count=5):
    """A 1, 2 or 5 x 10^k step giving about count intervals over span."""
    if span <= 0:
        return 1.0
    raw = span / count
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def tick_label(v, step):
    if abs(v) < step / 1e6:
        return "0"
    decimals = max(0, -math.floor(math.log10(step))) if step < 1 else 0
    return f"{v:.{decimals}f}"


class Panel:
    def __init__(self, title="", xlabel="", ylabel=""):
        self.title, self.xlabel, self.ylabel = title, xlabel, ylabel
        self.lines, self.hlines, self.vlines, self.marks = [], [], [], []
        self.linthresh = None  # symlog x axis when set
        self.ymax = None       # shared by panels that should compare at a glance

    def line(self, xs, ys, label=None, color=None, width=1.5, dash=None, dots=False):
        self.lines.append(dict(xs=list(xs), ys=list(ys), label=label, color=color, width=width,
                               dash=dash, dots=dots))

    def hline(self, y, label=None, color="#555555", dash="5 4"):
        self.hlines.append(dict(y=y, label=label, color=color, dash=dash))

    def vline(self, x, label=None, color="#d62728", dash="2 3"):
        self.vlines.append(dict(x=x, label=label, color=color, dash=dash))

    def mark(self, x, y, label=None, color="#000000"):
        self.marks.append(dict(x=x, y=y, label=label, color=color))

    def symlog_x(self, linthresh):
        self.linthresh = linthresh

    # -- layout ---------------------------------------------------------------
    def _fx(self, x):
        t = self.linthresh
        if t is None:
            return x
        return x / t if abs(x) < t else math.copysign(1 + math.log10(abs(x) / t), x)

    def _xticks(self, lo, hi):
        if self.linthresh is None:
            step = nice_step(hi - lo)
            first = math.ceil(lo / step - 1e-9)
            return [(v, tick_label(v, step)) for v in
                    (i * step for i in range(first, int(math.floor(hi / step + 1e-9)) + 1))]
        ticks, v = [(0, "0")], self.linthresh
        while v <= hi * (1 + 1e-9):
            ticks.append((v, f"{v:g}"))
            v *= 10
        return ticks

    def labels(self):
        return [e["label"] for e in self.lines + self.hlines + self.vlines + self.marks if e["label"]]

    def _svg(self, ox, oy, w, h, legend_w):
        left, top, bottom = 62, 26, 44
        pw, ph = w - left - legend_w - 8, h - top - bottom
        px0, py0 = ox + left, oy + top
        xs = [x for ln in self.lines for x in ln["xs"]] + [m["x"] for m in self.marks] + \
             [v["x"] for v in self.vlines]
        ys = [y for ln in self.lines for y in ln["ys"]] + [m["y"] for m in self.marks] + \
             [hl["y"] for hl in self.hlines]
        xlo, xhi = min(xs), max(xs)
        if xhi <= xlo:
            xhi = xlo + 1
        ylo = min(ys + [0])
        yhi = max(ys + [self.ymax or ylo]) * 1.02
        if yhi <= ylo:
            yhi = ylo + 1
        ystep = nice_step(yhi - ylo, 7)
        yhi = math.ceil(yhi / ystep - 1e-9) * ystep
        fxlo, fxhi = self._fx(xlo), self._fx(xhi)

        def X(x):
            return px0 + (self._fx(x) - fxlo) / (fxhi - fxlo) * pw

        def Y(y):
            return py0 + ph - (y - ylo) / (yhi - ylo) * ph

        out = [f'<rect x="{px0:.1f}" y="{py0:.1f}" width="{pw:.1f}" height="{ph:.1f}" '
               'fill="white" stroke="#444444"/>']
        y = math.ceil(ylo / ystep - 1e-9) * ystep
        while y <= yhi + ystep * 1e-6:
            out.append(f'<line x1="{px0:.1f}" x2="{px0 + pw:.1f}" y1="{Y(y):.1f}" y2="{Y(y):.1f}" '
                       'stroke="#e5e5e5"/>')
            out.append(f'<text x="{px0 - 5:.1f}" y="{Y(y) + 4:.1f}" text-anchor="end" font-size="11" '
                       f'{FONT}>{tick_label(y, ystep)}</text>')
            y += ystep
        for x, label in self._xticks(xlo, xhi):
            out.append(f'<line x1="{X(x):.1f}" x2="{X(x):.1f}" y1="{py0 + ph:.1f}" y2="{py0 + ph + 4:.1f}" '
                       'stroke="#444444"/>')
            out.append(f'<text x="{X(x):.1f}" y="{py0 + ph + 16:.1f}" text-anchor="middle" '
                       f'font-size="11" {FONT}>{label}</text>')
        out.append(f'<text x="{px0 + pw / 2:.1f}" y="{oy + h - 8:.1f}" text-anchor="middle" '
                   f'font-size="12" {FONT}>{escape(self.xlabel)}</text>')
        out.append(f'<text transform="translate({ox + 16:.1f},{py0 + ph / 2:.1f}) rotate(-90)" '
                   f'text-anchor="middle" font-size="12" {FONT}>{escape(self.ylabel)}</text>')
        out.append(f'<text x="{px0 + pw / 2:.1f}" y="{oy + 17:.1f}" text-anchor="middle" '
                   f'font-size="13" font-weight="bold" {FONT}>{escape(self.title)}</text>')

        legend = []
        out.append(f'<clipPath id="c{ox}_{oy}"><rect x="{px0:.1f}" y="{py0:.1f}" width="{pw:.1f}" '
                   f'height="{ph:.1f}"/></clipPath><g clip-path="url(#c{ox}_{oy})">')
        for hl in self.hlines:
            out.append(f'<line x1="{px0:.1f}" x2="{px0 + pw:.1f}" y1="{Y(hl["y"]):.1f}" y2="{Y(hl["y"]):.1f}" '
                       f'stroke="{hl["color"]}" stroke-dasharray="{hl["dash"]}"/>')
            legend.append((hl["label"], hl["color"], 1, hl["dash"], False))
        for vl in self.vlines:
            out.append(f'<line x1="{X(vl["x"]):.1f}" x2="{X(vl["x"]):.1f}" y1="{py0:.1f}" y2="{py0 + ph:.1f}" '
                       f'stroke="{vl["color"]}" stroke-dasharray="{vl["dash"]}"/>')
            legend.append((vl["label"], vl["color"], 1, vl["dash"], False))
        for i, ln in enumerate(self.lines):
            color = ln["color"] or COLORS[i % len(COLORS)]
            pts = envelope([(X(x), Y(y)) for x, y in zip(ln["xs"], ln["ys"])], pw)
            dash = f' stroke-dasharray="{ln["dash"]}"' if ln["dash"] else ""
            out.append(f'<polyline fill="none" stroke="{color}" stroke-width="{ln["width"]}"{dash} '
                       'stroke-linejoin="round" points="' +
                       " ".join(f"{x:.1f},{y:.1f}" for x, y in pts) + '"/>')
            if ln["dots"]:
                out += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color}"/>' for x, y in pts]
            legend.append((ln["label"], color, ln["width"], ln["dash"], ln["dots"]))
        for m in self.marks:
            out.append(star(X(m["x"]), Y(m["y"]), m["color"]))
            legend.append((m["label"], m["color"], 0, None, "star"))
        out.append("</g>")

        lx, ly = px0 + pw + 12, py0 + 6
        for label, color, width, dash, dots in (e for e in legend if e[0]):
            if dots == "star":
                out.append(star(lx + 11, ly, color))
            else:
                d = f' stroke-dasharray="{dash}"' if dash else ""
                out.append(f'<line x1="{lx:.1f}" x2="{lx + 22:.1f}" y1="{ly:.1f}" y2="{ly:.1f}" '
                           f'stroke="{color}" stroke-width="{max(width, 1.5)}"{d}/>')
            out.append(f'<text x="{lx + 28:.1f}" y="{ly + 4:.1f}" font-size="11" {FONT}>'
                       f'{escape(label)}</text>')
            ly += 17
        return out


def star(x, y, color, r=7):
    pts = []
    for i in range(10):
        a = -math.pi / 2 + i * math.pi / 5
        rr = r if i % 2 == 0 else r * 0.45
        pts.append(f"{x + rr * math.cos(a):.1f},{y + rr * math.sin(a):.1f}")
    return f'<polygon points="{" ".join(pts)}" fill="{color}"/>'


def envelope(pts, width):
    """At most two points per pixel column (its lowest and highest, in order), so a
    long timeline stays small without losing its spikes."""
    if len(pts) <= 2 * width:
        return pts
    out, col, bucket = [], None, []

    def flush():
        if bucket:
            lo = min(bucket, key=lambda p: -p[1])  # SVG y grows downwards
            hi = min(bucket, key=lambda p: p[1])
            out.extend(sorted({lo, hi}, key=bucket.index))

    for p in pts:
        c = int(p[0])
        if c != col:
            flush()
            col, bucket = c, []
        bucket.append(p)
    flush()
    return out


def save(path, panels, cols, panel_w=400, panel_h=330):
    # Room for the longest legend entry (about 6.5 px a character at 11 px).
    legend_w = 44 + 6.5 * max(len(label) for p in panels for label in p.labels())
    panel_w = round(panel_w + legend_w)
    rows = math.ceil(len(panels) / cols)
    w, h = cols * panel_w, rows * panel_h
    body = []
    for i, p in enumerate(panels):
        body += p._svg((i % cols) * panel_w, (i // cols) * panel_h, panel_w, panel_h, legend_w)
    with open(path, "w") as f:
        f.write(f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
                f'viewBox="0 0 {w} {h}">\n<rect width="{w}" height="{h}" fill="white"/>\n')
        f.write("\n".join(body))
        f.write("\n</svg>\n")
