#!/usr/bin/python3
"""The scale-across topology: traffic between the sites crosses the long-haul links
(and only that traffic), their delay shows in the completion times, a slow route
sends no faster than its rate, and the data still verifies.

Usage: long_haul_check.py METAROCE_SIM
"""
import json
import subprocess
import sys

sim = sys.argv[1]
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


def run(senders, delay_us, slow_routes=0):
    s = {"name": "long_haul", "seed": 3,
         "topology": {"hosts": 4, "planes": 2, "spines_per_plane": 2, "hosts_per_leaf": 1,
                      "long_haul": {"site_b_leaf": 2, "delay_us": delay_us, "gbps": 100,
                                    "slow_routes": slow_routes, "slow_gbps": 5}},
         "transport": {"paths_per_connection": 8},
         "workload": {"pattern": "incast", "senders": senders, "message_bytes": 262144,
                      "messages": 8, "outstanding": 4}}
    p = subprocess.run([sim, "-", "--quiet"], input=json.dumps(s), capture_output=True, text=True,
                       timeout=60)
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr}")
    return json.loads(p.stdout)


# Host 1 is in host 0's site: nothing crosses.
local = run(1, 500)
check(local["data_verified"], "local run did not verify")
check(sum(x["tx_bytes"] for x in local["long_haul"]) == 0, "local traffic used a long-haul link")
check(local["fct_us"]["max"] < 500, f"local message took {local['fct_us']['max']} us")

# Host 2 is in the other site: its data goes B -> A, the ACKs A -> B.
far = run(2, 500)
check(far["data_verified"], "cross-site run did not verify")
back = sum(x["tx_bytes"] for x in far["long_haul"] if x["from_site"] == 1)
fwd = sum(x["tx_bytes"] for x in far["long_haul"] if x["from_site"] == 0)
payload = far["payload_bytes"] // 2  # host 2's half
check(back >= payload, f"site B -> A carried {back} bytes, host 2 sent {payload}")
check(0 < fwd < back, f"site A -> B carried {fwd} bytes (ACKs only)")
check(far["base_rtt_us"] >= 1000, f"base RTT {far['base_rtt_us']} us ignores the long haul")
check(far["fct_us"]["max"] >= 1000, f"a message crossed the sites in {far['fct_us']['max']} us")

# A 5 Gb/s route cannot have sent faster than 5 Gb/s.
slow = run(2, 100, slow_routes=1)
check(slow["data_verified"], "slow-route run did not verify")
check(any(x["gbps"] == 5 and x["tx_bytes"] > 0 for x in slow["long_haul"]), "the slow route carried nothing")
for x in slow["long_haul"]:
    limit = x["gbps"] / 8 * 1e3 * slow["virtual_time_us"]
    check(x["tx_bytes"] <= limit, f"route {x} sent more than its rate allows ({limit:.0f} B)")

for f in failures:
    print("FAIL:", f)
if failures:
    sys.exit(1)
print("long haul: cross-site traffic only, delayed, rate-limited, verified")
