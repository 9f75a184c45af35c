#!/usr/bin/env python3
"""Verdict and measurements of one perf_fabric.sh run.

Reads the outputs perf_fabric.sh left in --dir: client/server .out (perftest report
and the `plane_log {...}` line of --plane-log), .err (the --counters JSON) and
fabric.txt (kfabric.sh status). Prints what was measured; exits 1 when a check fails.

Plane log times are the datapath's TSC clock turned into wall-clock ns at exit, so
they line up with the cut/restore times the shell script took with `date +%s%N`.
"""
import argparse
import json
import re
import sys
from pathlib import Path

SWITCH_BOUND_US = 1000.0  # traffic on the surviving plane within 1 ms of detection

failures = []


def check(ok, what):
    print(("  ok    " if ok else "  FAIL  ") + what)
    if not ok:
        failures.append(what)


def plane_log(path):
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("plane_log "):
            return json.loads(line[len("plane_log "):])
    return None


def counters(path):
    """The --counters JSON (an indented object) from a stderr log, or None."""
    text = path.read_text(errors="replace")
    start = text.find('{\n "')
    if start < 0:
        return None
    try:
        return json.JSONDecoder().raw_decode(text[start:])[0]
    except ValueError:
        return None


def fabric_links(path):
    """(plane, link) -> (a_to_b frames, a_to_b dropped, b_to_a frames, b_to_a dropped)."""
    links = {}
    plane = None
    for line in path.read_text(errors="replace").splitlines():
        m = re.match(r"plane (\d+):", line)
        if m:
            plane = int(m.group(1))
        m = re.match(r"\s+x(\d)(\d)\s+A->B\s+(\d+) frames,\s+(\d+) dropped\s+B->A\s+(\d+) frames,\s+(\d+) dropped", line)
        if m and plane is not None:
            links[(int(m.group(1)), int(m.group(2)))] = tuple(int(m.group(k)) for k in range(3, 7))
    return links


def detected(events, plane, up):
    return [e for e in events if e["plane"] == plane and e["up"] == up and e["cause"] == "detected"]


def fmt_us(v):
    return "none" if v is None else f"{v:.1f} us"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", required=True, choices=["loss", "cut", "restore"])
    ap.add_argument("--dir", required=True, type=Path)
    ap.add_argument("--client-rc", type=int, required=True)
    ap.add_argument("--server-rc", type=int, required=True)
    ap.add_argument("--cut-ns", type=int, default=0)
    ap.add_argument("--restore-ns", type=int, default=0)
    ap.add_argument("--restore-start-ns", type=int, default=0)
    a = ap.parse_args()
    d = a.dir

    print("=== verdict")
    check(a.client_rc == 0, f"client exited 0 (got {a.client_rc})")
    check(a.server_rc == 0, f"server exited 0 (got {a.server_rc})")
    client_out = (d / "client.out").read_text(errors="replace")
    check("Data verification: ok" in client_out, "client: Data verification: ok")
    row = re.search(r"^\s*65536\s+(\d+)\s+([\d.]+)\s+([\d.]+)", client_out, re.M)
    cc, sc = counters(d / "client.err"), counters(d / "server.err")
    check(cc is not None and sc is not None, "both sides printed their counters")
    if cc is None or sc is None:
        return 1
    ct, st = cc["transport"], sc["transport"]
    check(ct["conn_errors"] == 0 and st["conn_errors"] == 0,
          f"no connection error (client {ct['conn_errors']}, server {st['conn_errors']})")
    clog, slog = plane_log(d / "client.out"), plane_log(d / "server.out")
    check(clog is not None, "client printed its plane log")
    if clog is None:
        return 1
    ev = clog["events"]

    print("=== measured")
    if row:
        print(f"  write_bw 64 KiB x {row.group(1)}: average {row.group(3)} MB/s (peak 1 ms bin {row.group(2)} MB/s)")
    print(f"  client transport: {ct['tx_data_packets']} data packets, {ct['retransmits']} retransmits, "
          f"{ct['timeouts']} path timeouts")
    print(f"  server transport: {st['rx_packets']} packets in, {st['rx_duplicates']} duplicates, "
          f"{st['rx_ce']} CE-marked")
    print(f"  longest gap between datapath polls (descheduled): client "
          f"{cc['worker']['max_poll_gap_ns'] / 1e6:.2f} ms, server {sc['worker']['max_poll_gap_ns'] / 1e6:.2f} ms;"
          f" longest tx burst call: client {cc['worker']['max_tx_burst_ns'] / 1e6:.2f} ms,"
          f" server {sc['worker']['max_tx_burst_ns'] / 1e6:.2f} ms")
    print(f"  frames dropped on a stalled port (link without carrier): client {cc['worker']['tx_port_stalled']},"
          f" server {sc['worker']['tx_port_stalled']}")
    print(f"  client frames per plane: tx {clog['plane_tx_frames'][:2]}, rx {clog['plane_rx_frames'][:2]}")
    downs = sum(1 for e in ev if not e["up"] and e["cause"] == "detected")
    print(f"  client plane detections: {downs} down, {sum(1 for e in ev if e['up'] and e['cause'] == 'detected')} up"
          f" ({len(ev)} events logged)")

    links = fabric_links(d / "fabric.txt")
    spread = []
    for plane in sorted({p for p, _ in links}):
        per = [links[(plane, k)] for k in (0, 1) if (plane, k) in links]
        ab = [x[0] for x in per]
        ba = [x[2] for x in per]
        print(f"  ECMP plane {plane}: A->B frames per parallel link {ab}, B->A {ba}")
        spread.append(all(x > 0 for x in ab + ba))
    if a.mode == "loss":
        # The kernel hashes each path's UDP source port (random per connection): the 8
        # paths of one plane all land on one of its two links 1 time in 128, on every
        # plane 1 time in 16,384. One plane spreading shows ECMP at work.
        check(any(spread), "the parallel links of a plane both carried frames (ECMP spread)")

    if a.mode == "loss":
        sent = sum(x[0] + x[2] for x in links.values())
        dropped = sum(x[1] + x[3] for x in links.values())
        rate = 100.0 * dropped / max(1, sent + dropped)
        print(f"  BPF loss on the middle links: {dropped} of {sent + dropped} frames = {rate:.2f} %")
        check(0.5 <= rate <= 1.5, f"injected loss rate {rate:.2f} % is about 1 %")
        check(ct["retransmits"] > 0, "the transport had to retransmit")

    if a.mode in ("cut", "restore"):
        after_cut = [e for e in detected(ev, 1, False) if e["wall_ns"] >= a.cut_ns]
        before = [e for e in ev if e["plane"] == 1 and e["cause"] == "detected" and e["wall_ns"] < a.cut_ns]
        det = after_cut[0] if after_cut else None
        if det is None and before and not before[-1]["up"]:
            det = before[-1]  # a jitter-induced detection had already taken it out
            print("  plane 1 was already detected down (spuriously) when the cut came")
        check(det is not None, "the client detected plane 1 down after the cut")
        if det is not None:
            det_ms = (det["wall_ns"] - a.cut_ns) / 1e6
            sw = det["first_tx_after_us"][0]
            print(f"  detection time (cut -> client declares plane 1 dead): {det_ms:.2f} ms")
            print(f"  time to first frame on plane 0 after detection: {fmt_us(sw)}"
                  f" (plane 0's last frame before detection: {fmt_us(det['last_tx_before_us'][0])})")
            check(sw is not None and sw <= SWITCH_BOUND_US,
                  f"first frame on the surviving plane within {SWITCH_BOUND_US:.0f} us of detection")
            if a.mode == "cut":
                on_dead = clog["plane_tx_frames"][1] - det["tx_frames_at"][1]
                on_live = clog["plane_tx_frames"][0] - det["tx_frames_at"][0]
                print(f"  frames after detection: plane 0 {on_live}, plane 1 {on_dead} (probes only)")
                check(on_live > 0, "plane 0 carried the rest of the transfer")
        if slog is not None:
            sd = [e for e in detected(slog["events"], 1, False) if e["wall_ns"] >= a.cut_ns]
            print("  server (ACK sender) detected plane 1 down: " +
                  (f"after {(sd[0]['wall_ns'] - a.cut_ns) / 1e6:.2f} ms" if sd else "no (it sends only ACKs)"))

    if a.mode in ("cut", "restore"):
        print("  client plane events from the cut on (ms after the cut; first frame per plane after each, us):")
        for e in [e for e in ev if e["wall_ns"] >= a.cut_ns][:12]:
            print(f"    {(e['wall_ns'] - a.cut_ns) / 1e6:9.2f} ms  plane {e['plane']} "
                  f"{'up  ' if e['up'] else 'down'} ({e['cause']})  first frames {e['first_tx_after_us']}")

    if a.mode == "restore":
        # From the link coming up: on a loaded host the route and neighbour can take
        # tens of ms more, and a probe may be answered before they are all reported back.
        ups = [e for e in detected(ev, 1, True) if e["wall_ns"] >= (a.restore_start_ns or a.restore_ns)]
        check(len(ups) > 0, "the client re-admitted plane 1 after the link came back")
        if ups:
            up = ups[0]
            grown = clog["plane_tx_frames"][1] - up["tx_frames_at"][1]
            print(f"  re-admission time (link, route, neighbour back -> probe answered; negative: while they were set up): {(up['wall_ns'] - a.restore_ns) / 1e6:.2f} ms")
            print(f"  first frame on plane 1 after re-admission: {fmt_us(up['first_tx_after_us'][1])}")
            print(f"  frames on plane 1 after re-admission: {grown}")
            check(grown > 100, "plane 1's tx counter grew again after re-admission")

    print("=== " + ("PASS" if not failures else "FAIL: " + "; ".join(failures)))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
