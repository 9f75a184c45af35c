#!/usr/bin/env python3
"""Random small scenarios through metaroce-sim, as held-out scenarios would arrive:
every topology shape, op, pattern, loss model and transport setting the runner accepts,
with faults the transport must ride out (one plane touched on a multi-plane fabric, or
a failure restored within 50 us). Each must exit 0 with its data verified, and give the
same result read from a file as from stdin (a different heap layout: a read past a
vector showed up only one way).

  random_scenarios.py METAROCE_SIM [COUNT] [SEED]
"""
import json
import os
import random
import subprocess
import sys
import tempfile

WALL_FIELDS = {"wall_time_s", "events_per_second", "peak_rss_mb"}


def leaves(hosts, per_leaf):
    return -(-hosts // per_leaf)


def faults(r, hosts, per_leaf, planes, spines):
    """Failures the transport survives without the application."""
    events = []
    for _ in range(r.choice([0, 0, 1, 2])):
        action = r.choice(["plane", "link", "switch"])
        at = r.choice([5, 20, 60])
        # With several planes, only plane 0 fails (for good, maybe); on one plane
        # every failure comes back within 50 us.
        restore = planes == 1 or r.random() < 0.5
        ev = {"at_us": at, "action": "fail_" + action, "plane": 0}
        if action == "link":
            ev["host"] = r.randrange(hosts)
        elif action == "switch":
            if leaves(hosts, per_leaf) > 1 and r.random() < 0.5:
                ev["spine"] = r.randrange(spines)
            else:
                ev["leaf"] = r.randrange(leaves(hosts, per_leaf))
        events.append(ev)
        if restore:
            back = dict(ev, action="restore_" + action, at_us=at + r.choice([10, 30, 50]))
            events.append(back)
    return events


def scenario(r, i):
    hosts = r.choice([2, 3, 4, 6, 8, 12, 16])
    per_leaf = r.choice([1, 2, 4, 8])
    planes = r.choice([1, 2, 2, 3, 4])
    spines = r.choice([1, 2, 3, 4])
    pattern = r.choice(["pairs", "incast", "alltoall", "allreduce_ring"])
    op = r.choice(["write", "write_imm", "send", "send_imm", "read"])
    rocev2 = op == "write" and r.random() < 0.2
    senders_max = hosts - 1 if pattern == "incast" else hosts
    least = 2 if pattern == "allreduce_ring" else 1
    senders = r.randint(least, max(least, senders_max))
    streams = r.choice([1, 1, 2, 4])
    outstanding = r.choice([1, 2, 4, 8])
    loss = r.choice([{"model": "none"},
                     {"model": "iid", "rate": r.choice([0.001, 0.01, 0.05])},
                     {"model": "gilbert", "rate": r.choice([0.01, 0.05]), "burst": r.choice([2, 4])}])
    transport = {"mtu": r.choice([256, 1024, 1500, 4096]),
                 "paths_per_connection": r.choice([1, 2, 4, 16, 64, 256])}
    if r.random() < 0.3:
        transport["ack_every_bytes"] = r.choice([1, 4096, 65536])
    if r.random() < 0.3:
        transport["min_rto_us"] = r.choice([10, 30, 100])
    if rocev2:
        transport["protocol"] = "rocev2_model"
        loss = {"model": "none"}  # the model's go-back-N is not under test here
    workload = {"pattern": pattern, "senders": senders, "op": op,
                "message_bytes": r.choice([1, 7, 100, 4096, 4097, 65536, 200000, 1 << 20]),
                "messages": r.choice([1, 3, 8, 16]), "streams": streams, "outstanding": outstanding}
    pairs = senders * (hosts - 1) if pattern == "alltoall" else senders
    if r.random() < 0.3:
        workload["connections"] = pairs * r.choice([1, 2, 3])
    return {"name": f"random{i}", "seed": r.randint(1, 1000),
            "topology": {"hosts": hosts, "planes": planes, "spines_per_plane": spines,
                         "hosts_per_leaf": per_leaf, "link_gbps": r.choice([25, 100, 400]),
                         "link_delay_ns": r.choice([100, 1000]),
                         "switch_buffer_bytes": r.choice([262144, 1048576]),
                         "ecn_threshold_bytes": r.choice([0, 20000, 100000])},
            "transport": transport,
            "faults": {"loss": loss,
                       "events": [] if rocev2 else faults(r, hosts, per_leaf, planes, spines)},
            "workload": workload}


def run(sim, args, stdin=None):
    p = subprocess.run([sim, *args, "--quiet"], input=stdin, capture_output=True, text=True,
                       timeout=120)
    return p.returncode, p.stdout, p.stderr


def main():
    sim = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 24
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    r = random.Random(seed)
    failures = []
    with tempfile.TemporaryDirectory() as d:
        for i in range(count):
            sc = scenario(r, i)
            text = json.dumps(sc)
            path = os.path.join(d, f"random{i}.json")
            with open(path, "w") as f:
                f.write(text)
            rc_in, out_in, err_in = run(sim, ["-"], stdin=text)
            rc_f, out_f, _ = run(sim, [path])
            why = None
            if rc_in != 0:
                why = f"exit {rc_in}: {err_in.strip()[-300:]}"
            else:
                a, b = json.loads(out_in), json.loads(out_f)
                if not (a.get("completed") and a.get("data_verified")):
                    why = f"not verified: stop {a.get('stop_reason')}, messages {a.get('messages')}"
                elif rc_f != 0 or {k: v for k, v in a.items() if k not in WALL_FIELDS} != \
                        {k: v for k, v in b.items() if k not in WALL_FIELDS}:
                    why = "a different result read from a file than from stdin"
            print(f"random{i}: {'ok' if why is None else 'FAIL ' + why}")
            if why is not None:
                failures.append(f"random{i}: {why}\n  {text}")
    if failures:
        print("\n".join(failures), file=sys.stderr)
        sys.exit(1)
    print(f"{count} random scenarios completed and verified, the same from a file and from stdin")


if __name__ == "__main__":
    main()
