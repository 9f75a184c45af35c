"""The issue-4 experiments: which scenarios each one runs and how its results read.

Every scenario derives from one base fabric (16 hosts, 4 hosts per leaf, 4 spines per
plane, 100 Gb/s, 1 us links, 1 MiB buffers, 100 KB ECN threshold, MTU 4096). An
experiment lists its runs (cases), then turns their results into a section of
doc/results/README.md, its targets (met or missed) and its rows of the headline table.
Text only: plots.py draws the figures, so checking the tables needs nothing installed.
"""
import copy

PROTOCOLS = ["metaroce", "rocev2_model"]
LABEL = {"metaroce": "metaroce", "rocev2_model": "RoCEv2 model"}

BASE = {
    "seed": 1,
    "topology": {"hosts": 16, "planes": 2, "spines_per_plane": 4, "hosts_per_leaf": 4,
                 "link_gbps": 100, "link_delay_ns": 1000, "switch_buffer_bytes": 1048576,
                 "ecn_threshold_bytes": 100000},
    "transport": {"min_rto_us": 30, "connect_retry_us": 30, "mtu": 4096, "paths_per_connection": 16},
    "faults": {"loss": {"model": "none"}},
    "workload": {"pattern": "pairs", "senders": 8, "op": "write", "message_bytes": 1048576,
                 "messages": 16, "outstanding": 8},
}


def scenario(name, protocol, **over):
    """BASE with overrides; a__b=v sets s[a][b] = v."""
    s = copy.deepcopy(BASE)
    s["name"] = name
    for path, value in over.items():
        node = s
        keys = path.split("__")
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        node[keys[-1]] = value
    s["transport"]["protocol"] = protocol
    return s


def verdict(ok, text):
    return ("met" if ok else "**missed**") + f" ({text})"


def fmt(v, nd=1):
    return "n/a" if v is None else f"{v:.{nd}f}"


def pct(v):
    return f"{v * 100:.1f} %"


class Loss:
    dir = "1_loss"
    rates = [0, 0.001, 0.01, 0.02, 0.05, 0.10]

    def names(self):
        cases = [(f"loss_{r * 100:g}pct", {"model": "iid", "rate": r} if r else {"model": "none"})
                 for r in self.rates]
        return cases + [("loss_gilbert_1pct_b8", {"model": "gilbert", "rate": 0.01, "burst": 8})]

    def cases(self, quick):
        msgs = 4 if quick else 16
        # One leaf: no ECMP collisions, so the figure is about loss recovery alone.
        return [(name, p, scenario(name, p, faults__loss=loss, topology__hosts_per_leaf=16,
                                   workload__messages=msgs))
                for p in PROTOCOLS for name, loss in self.names()]

    def report(self, res, quick):
        msgs = 4 if quick else 16
        lines = ["## 1. Goodput vs loss", "",
                 f"8 pairs on 2 planes under one leaf (no ECMP collisions: the loss alone), each "
                 f"writing {msgs} x 1 MiB. Goodput in Gb/s "
                 "(share of the same protocol's loss-free goodput).", "",
                 "| loss | metaroce | RoCEv2 model |", "|---|---|---|"]

        def share(p, name):
            return res[p][name]["goodput_gbps"] / res[p]["loss_0pct"]["goodput_gbps"]

        for name, _ in self.names():
            row = [name.replace("loss_", "")]
            for p in PROTOCOLS:
                r = res[p][name]
                row.append(f"{r['goodput_gbps']:.1f} ({share(p, name) * 100:.1f} %)"
                           + ("" if r["data_verified"] else " UNVERIFIED"))
            lines.append("| " + " | ".join(row) + " |")
        lines += ["", "![goodput vs loss](1_loss/goodput_vs_loss.svg)", ""]
        r1, r10 = share("metaroce", "loss_1pct"), share("metaroce", "loss_10pct")
        targets = [("goodput at 1 % loss ≥ 95 % of loss-free",
                    verdict(r1 >= 0.95, f"{r1 * 100:.1f} %, margin {(r1 - 0.95) * 100:+.1f} pt")),
                   ("goodput at 10 % loss ≥ 75 % of loss-free",
                    verdict(r10 >= 0.75, f"{r10 * 100:.1f} %, margin {(r10 - 0.75) * 100:+.1f} pt"))]
        head = [("goodput at 1 % loss (of loss-free)", pct(r1),
                 pct(share("rocev2_model", "loss_1pct")), "~86 %"),
                ("goodput at 10 % loss", pct(r10), pct(share("rocev2_model", "loss_10pct")),
                 "\"useful bandwidth\"")]
        return lines, targets, head


class Incast:
    dir = "2_incast"

    def sizes(self, quick):
        return [8, 64] if quick else [8, 64, 256]

    def cases(self, quick):
        out = []
        for n in self.sizes(quick):
            for p in PROTOCOLS:
                out.append((n, p, scenario(f"incast_{n}", p, timeline_us=2,
                                           topology__hosts=n + 8, topology__hosts_per_leaf=8,
                                           workload__pattern="incast", workload__senders=n,
                                           workload__message_bytes=131072,
                                           workload__messages=4 if n <= 64 else 2,
                                           workload__outstanding=2, workload__victim=True)))
        return out

    def report(self, res, quick):
        ns = self.sizes(quick)
        lines = ["## 2. Incast N:1", "",
                 "Hosts 1..N write to host 0 (2 planes, 8 hosts per leaf); a victim flow from host "
                 "H-1 (another leaf) writes to host 1 (the sink's leaf) throughout. Convergence: start "
                 "of the first window after which every window of every sender stays within 10 % of "
                 "the fair share (the window must hold 20 fair-share packets, shown as 'window'), in base "
                 "RTTs after the last sender started sending (connection set-up, two RTTs with the "
                 "cookie, is not counted; 0: in band from the first window that holds every sender); Jain "
                 "over per-sender goodput while all senders are active; queues in KB (BDP = 100 Gb/s x "
                 "base RTT).", "",
                 "| N | protocol | goodput Gb/s | Jain | converge (RTTs) | window (RTTs) | peak last-hop KB "
                 "| steady last-hop KB | victim Gb/s | drops | conn errors |",
                 "|---|---|---|---|---|---|---|---|---|---|---|"]
        for n in ns:
            for p in PROTOCOLS:
                r = res[p][n]
                q = r["max_queue_bytes"]
                lines.append(f"| {n} | {LABEL[p]} | {r['goodput_gbps']:.1f} | {fmt(r['jain_index'], 3)} | "
                             f"{fmt(r['convergence_rtts'])} | {r['convergence_window_rtts']:.1f} | "
                             f"{q['peak_last_hop'] / 1e3:.0f} | {q['steady_last_hop'] / 1e3:.0f} | "
                             f"{fmt((r['victim'] or {}).get('gbps'))} | {r['dropped_packets']} | "
                             f"{r['connection_errors']} |")
        lines += ["", "![incast queues](2_incast/incast_queue.svg)", ""]
        targets = []
        for n in ns:
            r = res["metaroce"][n]
            c = r["convergence_rtts"]
            q = r["max_queue_bytes"]
            jain = r["jain_index"] or 0
            targets.append((f"incast {n}:1 fair share within 2 RTTs",
                            verdict(c is not None and c <= 2,
                                    "never" if c is None else f"{c:.1f} RTTs, margin {2 - c:+.1f}")))
            targets.append((f"incast {n}:1 Jain ≥ 0.95",
                            verdict(jain >= 0.95, f"{fmt(r['jain_index'], 3)}, margin {jain - 0.95:+.3f}")))
            targets.append((f"incast {n}:1 steady last-hop queue ≤ 1 BDP",
                            verdict(q["steady_last_hop"] <= q["bdp"],
                                    f"{q['steady_last_hop'] / 1e3:.0f} KB vs {q['bdp'] / 1e3:.0f} KB; "
                                    f"peak {q['peak_last_hop'] / 1e3:.0f} KB")))

        def jain_queue(p, n):
            r = res[p][n]
            q = r["max_queue_bytes"]
            bdp = f" (BDP {q['bdp'] / 1e3:.0f} KB)" if p == "metaroce" else ""
            return f"{fmt(r['jain_index'], 3)} / {q['steady_last_hop'] / 1e3:.0f} KB{bdp}"

        def converge(p, n):
            c = res[p][n]["convergence_rtts"]
            return "never" if c is None else f"{c:.1f}"

        head = [("incast 64:1 Jain / steady last-hop queue", jain_queue("metaroce", 64),
                 jain_queue("rocev2_model", 64), "resolved in 1-2 RTTs"),
                ("incast 64:1 convergence to fair share (RTTs)", converge("metaroce", 64),
                 converge("rocev2_model", 64), "1-2 RTTs")]
        if ns[-1] != 64:
            n = ns[-1]
            head.append((f"incast {n}:1 Jain", fmt(res["metaroce"][n]["jain_index"], 3),
                         fmt(res["rocev2_model"][n]["jain_index"], 3), "–"))
        return lines, targets, head


class Planes:
    dir = "3_planes"
    planes = [1, 2, 4, 8]

    def connections(self, quick):
        return 1000 if quick else 4000

    def cases(self, quick):
        return [(k, p, scenario(f"planes_{k}", p, topology__planes=k,
                                transport__paths_per_connection=8, transport__max_streams=1,
                                transport__rq_depth=4, transport__max_msgs=4,
                                transport__rocev2_spread_planes=True,
                                workload__senders=16, workload__connections=self.connections(quick),
                                workload__message_bytes=262144, workload__messages=4 if quick else 8,
                                workload__outstanding=1))
                for k in self.planes for p in PROTOCOLS]

    def report(self, res, quick):
        conns = self.connections(quick)
        lines = ["## 3. Plane scaling", "",
                 f"16 hosts, every host writes to the host 8 away; {conns} connections in total, each "
                 "writing 2 x 256 KiB; metaroce with 8 paths, 1 stream, 4 messages per connection; the "
                 "RoCEv2 model spreads QPs over the planes (multi-rail). Bound = line rate of 16 hosts.", "",
                 "| planes | protocol | goodput Gb/s | bound Gb/s | scaling vs 1 plane | state B/conn "
                 "| peak RSS MB | wall s |",
                 "|---|---|---|---|---|---|---|---|"]
        for k in self.planes:
            for p in PROTOCOLS:
                r = res[p][k]
                lines.append(f"| {k} | {LABEL[p]} | {r['goodput_gbps']:.0f} | {r['loss_free_bound_gbps']:.0f} | "
                             f"{r['goodput_gbps'] / res[p][1]['goodput_gbps'] / k * 100:.0f} % of linear | "
                             f"{r['state_bytes_per_connection']:.0f} | {r['peak_rss_mb']:.0f} | "
                             f"{r['wall_time_s']:.1f} |")
        lines += ["", "![plane scaling](3_planes/plane_scaling.svg)", ""]

        def linear(p):
            return res[p][8]["goodput_gbps"] / (8 * res[p][1]["goodput_gbps"])

        lin = linear("metaroce")
        targets = [(f"≥ 95 % of linear scaling 1 → 8 planes at {conns:,} connections",
                    verdict(lin >= 0.95, f"{lin * 100:.1f} % of linear, margin {(lin - 0.95) * 100:+.1f} pt"))]
        head = [(f"1 → 8 planes at {conns:,} connections", f"{lin * 100:.0f} % of linear",
                 f"{linear('rocev2_model') * 100:.0f} %", "linear")]
        return lines, targets, head


class PlaneFailure:
    dir = "4_plane_failure"
    planes = [2, 4]

    def cases(self, quick):
        return [(k, p, scenario(f"plane_failure_{k}", p, timeline_us=10, topology__planes=k,
                                transport__rocev2_spread_planes=True,
                                faults__events=[{"at_us": 300, "action": "fail_plane", "plane": 1}],
                                workload__connections=4 * 8,
                                workload__message_bytes=1048576,
                                workload__messages=(8 if quick else 16) * k // 2))
                for k in self.planes for p in PROTOCOLS]

    def report(self, res, quick):
        lines = ["## 4. Plane failure", "",
                 "8 pairs, 4 connections each, plane 1 fails at 300 us and stays down. Recovery: first "
                 "time after which the 200 us moving average (goodput counts whole 1 MiB messages) stays "
                 "≥ (P-1)/P of the goodput before the fault (to the end of the transfer); 'after' "
                 "averages from 1 ms after the fault.", "",
                 "| planes | protocol | before Gb/s | target Gb/s | after Gb/s | dip Gb/s | recover (us) "
                 "| conn errors | verified |",
                 "|---|---|---|---|---|---|---|---|---|"]
        targets = []
        for k in self.planes:
            for p in PROTOCOLS:
                r = res[p][k]
                v = r["recovery"] or {}
                lines.append(f"| {k} | {LABEL[p]} | {fmt(v.get('before_gbps'))} | {fmt(v.get('target_gbps'))} | "
                             f"{fmt(v.get('after_gbps'))} | {fmt(v.get('min_gbps'))} | "
                             f"{fmt(v.get('time_to_recover_us'))} | {r['connection_errors']} | "
                             f"{r['data_verified']} |")
            r = res["metaroce"][k]
            t = (r["recovery"] or {}).get("time_to_recover_us")
            targets.append((f"lose 1 of {k} planes: ≥ {k - 1}/{k} throughput within 1 ms",
                            verdict(t is not None and t <= 1000,
                                    "never" if t is None else f"{t:.0f} us, margin {1000 - t:+.0f} us")))
            targets.append((f"lose 1 of {k} planes: zero connection errors",
                            verdict(r["connection_errors"] == 0, f"{r['connection_errors']} errors")))
        lines += ["", "![plane failure](4_plane_failure/plane_failure_timeline.svg)", ""]

        def recover(p):
            v = res[p][4]["recovery"] or {}
            t = v.get("time_to_recover_us")
            if t is None:
                return "never"
            # 0 means the moving average never fell below the target.
            return f"{t:.0f} µs" + (" (never below it)" if t == 0 else "")

        head = [("lose 1 of 4 planes: time to 3/4 of the throughput", recover("metaroce"),
                 recover("rocev2_model"), "autonomous"),
                ("lose 1 of 4 planes: connection errors", str(res["metaroce"][4]["connection_errors"]),
                 str(res["rocev2_model"][4]["connection_errors"]), "none")]
        return lines, targets, head


class Collectives:
    dir = "5_collectives"
    patterns = ["alltoall", "allreduce_ring"]

    def size(self, quick):
        return 16 << 20 if quick else 64 << 20

    def cases(self, quick):
        out = []
        for p in PROTOCOLS:
            out.append(("alltoall", p, scenario(
                "alltoall", p, workload__pattern="alltoall", workload__senders=16,
                workload__message_bytes=262144, workload__messages=4 if quick else 8,
                workload__outstanding=2)))
            out.append(("allreduce_ring", p, scenario(
                "allreduce_ring", p, workload__pattern="allreduce_ring", workload__senders=8,
                workload__message_bytes=self.size(quick), workload__outstanding=1)))
        return out

    def report(self, res, quick):
        size = self.size(quick)
        lines = ["## 5. Collectives", "",
                 f"alltoall: 16 hosts each write {2 if quick else 4} x 256 KiB to every other host. "
                 f"allreduce_ring: 8 hosts, {size >> 20} MiB vector, 14 steps of {size >> 23} MiB "
                 "chunks; a step starts when the previous step's chunk was acknowledged.", "",
                 "| pattern | protocol | completion (us) | goodput Gb/s | p99 FCT us | verified |",
                 "|---|---|---|---|---|---|"]
        for name in self.patterns:
            for p in PROTOCOLS:
                r = res[p][name]
                lines.append(f"| {name} | {LABEL[p]} | {r['completion_time_us']:.0f} | "
                             f"{r['goodput_gbps']:.0f} | {r['fct_us']['p99']:.0f} | {r['data_verified']} |")

        def ms(p):
            return " / ".join(f"{res[p][n]['completion_time_us'] / 1000:.2f}" for n in self.patterns) + " ms"

        head = [("all-to-all / ring all-reduce completion", ms("metaroce"), ms("rocev2_model"), "–")]
        return lines + [""], [], head


class ScaleAcross:
    """Two sites joined by long-haul links (1 ms one way, one per spine and plane): a
    local sender (10 us base RTT) and a remote one (2 ms) write to the same host, so
    they share its last hop, behind the long-haul links. 'routes' makes 2 of plane
    0's 4 long-haul routes 10 Gb/s: paths should leave them for the other 6."""
    dir = "6_scale_across"
    cases_ = {"shared": 0, "routes": 2}

    def cases(self, quick):
        out = []
        for key, slow in self.cases_.items():
            for p in PROTOCOLS:
                out.append((key, p, scenario(
                    f"scale_across_{key}", p, timeline_us=100, duration_us=200000,
                    topology__hosts=4, topology__hosts_per_leaf=1,
                    topology__long_haul={"site_b_leaf": 2, "delay_us": 1000, "gbps": 100,
                                         "slow_routes": slow, "slow_gbps": 10},
                    transport__paths_per_connection=64, transport__rocev2_spread_planes=True,
                    workload__pattern="incast", workload__senders=2,
                    workload__message_bytes=4 << 20, workload__messages=48 if quick else 64,
                    workload__outstanding=8)))
        return out

    @staticmethod
    def routes(r):
        """(share of the remote flow's long-haul bytes on the slow routes, their share of
        the long-haul capacity)."""
        back = [x for x in r.get("long_haul", []) if x["from_site"] == 1]
        total = sum(x["tx_bytes"] for x in back) or 1
        cap = sum(x["gbps"] for x in back)
        slow = [x for x in back if x["gbps"] < max(y["gbps"] for y in back)]
        return sum(x["tx_bytes"] for x in slow) / total, sum(x["gbps"] for x in slow) / cap

    def report(self, res, quick):
        lines = ["## 6. Scale-across", "",
                 "Hosts 0 and 1 in site A, hosts 2 and 3 in site B (one leaf each, 4 spines per plane, "
                 "2 planes); between the sites one long-haul link per spine and plane, 100 Gb/s, 1 ms one "
                 "way. Host 1 (10 us base RTT) and host 2 (2 ms) each write "
                 f"{48 if quick else 64} x 4 MiB to host 0, 64 paths per connection. Jain over the two "
                 "senders while both are active. 'routes': 2 of plane 0's long-haul routes run at 10 Gb/s "
                 "(their share of the capacity is small); how much of the remote sender's long-haul traffic "
                 "they carried tells whether paths prefer the uncongested routes.", "",
                 "| case | protocol | goodput Gb/s | Jain local/remote | timeouts | reroutes | drops "
                 "| slow routes: bytes / capacity share | state B/conn (idle, 64 paths) | verified |",
                 "|---|---|---|---|---|---|---|---|---|---|"]
        for key in self.cases_:
            for p in PROTOCOLS:
                r = res[p][key]
                share = "–"
                if key == "routes":
                    b, c = self.routes(r)
                    share = f"{b * 100:.1f} % / {c * 100:.1f} %"
                lines.append(f"| {key} | {LABEL[p]} | {r['goodput_gbps']:.1f} | {fmt(r['jain_index'], 3)} | "
                             f"{r['timeouts']} | {r['reroutes']} | {r['dropped_packets']} | {share} | "
                             f"{r['state_bytes_per_connection']:.0f} | {r['data_verified']} |")
        j = res["metaroce"]["shared"]["jain_index"] or 0
        b, c = self.routes(res["metaroce"]["routes"])
        targets = [("scale-across: Jain between 10 us and 2 ms flows ≥ 0.9",
                    verdict(j >= 0.9, f"{j:.3f}, margin {j - 0.9:+.3f}")),
                   ("scale-across: slow long-haul routes carry no more than their capacity share",
                    verdict(b <= c, f"{b * 100:.1f} % of the bytes, {c * 100:.1f} % of the capacity"))]
        # Taken at the end of the run, when every connection is idle (doc/model.md).
        st = res["metaroce"]["shared"]["state_bytes_per_connection"]
        targets.append(("state of an idle connection with 64 paths ≤ 4 KiB",
                        verdict(st <= 4096, f"{st:.0f} B, margin {4096 - st:+.0f} B")))
        head = [("scale-across: Jain 10 us vs 2 ms flows", fmt(j, 3),
                 fmt(res["rocev2_model"]["shared"]["jain_index"], 3), "open problem")]
        return lines + [""], targets, head


EXPERIMENTS = [Loss(), Incast(), Planes(), PlaneFailure(), Collectives(), ScaleAcross()]


def result_path(exp, s):
    """Where a run's JSON lives, relative to the results directory."""
    return f"{exp.dir}/{s['name']}.{s['transport']['protocol']}.json"
