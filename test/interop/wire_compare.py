#!/usr/bin/env python3
"""Compares, field by field, the MetaRoCE frames two senders put on the wire.

Reads tshark's fields (the FIELDS below, tab-separated, one frame a line; see
interop.sh wire) and groups every frame by sender: A_PREFIX.* and B_PREFIX.* (the
plane-0 and plane-1 addresses of one node share their last octet). A frame's *shape*
is what must not depend on the stack that sent it: the IPv4/UDP header fields of
spec 2, and per opcode the fixed header size, the LAST and SOLICITED flags, stream,
msg_len, offset, payload size, and the handshake parameters. Ids, PSNs, timestamps,
keys, addresses, SACK contents and the timing-made flags (RETX; ACK_REQ, checked by
its rule instead: every LAST or RETX packet asks for an ACK) are left out.

For every opcode both senders sent, their sets of shapes must be equal; the opcodes
of the operations (REQUIRED) must come from both. With CODEC.tsv (tools/wireshark/
pcap_fields on the same capture), the dissector's CODEC_FIELDS of every frame must also
equal the codec's. Exit 0 when all agree.
  wire_compare.py FIELDS.tsv A_SUFFIX B_SUFFIX [CODEC.tsv]   (last octets: 1 2)
"""
import collections
import sys

FIELDS = [
    "ip.src", "ip.version", "ip.hdr_len", "ip.flags.df", "ip.flags.mf", "ip.frag_offset",
    "ip.ttl", "ip.dsfield.ecn", "ip.proto", "ip.len", "udp.srcport", "udp.dstport",
    "udp.length", "udp.checksum", "metaroce.version", "metaroce.opcode", "metaroce.flags",
    "metaroce.stream", "metaroce.msg_len", "metaroce.offset", "metaroce.payload_len",
    "metaroce.paths", "metaroce.mtu", "metaroce.max_streams", "metaroce.max_msgs",
    "metaroce.planes", "metaroce.rq_depth", "metaroce.rate_hint_mbps", "ip.id", "_ws.expert.message",
]
# What pcap_fields prints, in its order (as test/integration/capture_decode.sh compares).
CODEC_FIELDS = [
    "metaroce.opcode", "metaroce.dst_conn", "metaroce.psn", "metaroce.path", "metaroce.msn",
    "metaroce.offset", "metaroce.msg_len", "metaroce.rx_pkts", "metaroce.ce_pkts",
    "metaroce.sack_count", "metaroce.nak_reason", "metaroce.src_conn", "metaroce.token",
]
# tshark leaves a field empty when asked for it twice: each once.
ALL_FIELDS = FIELDS + [f for f in CODEC_FIELDS if f not in FIELDS]
# Fixed headers after the BTH, per opcode (doc/spec.md 3.0; the dissector's table).
EXT = {0x01: 40, 0x02: 44, 0x03: 24, 0x04: 28, 0x05: 40, 0x06: 24, 0x10: 48, 0x11: 8,
       0x20: 40, 0x21: 40, 0x22: 8, 0x23: 8, 0x24: 8, 0x25: 8, 0x26: 24}
NAMES = {0x01: "WRITE", 0x02: "WRITE_IMM", 0x03: "SEND", 0x04: "SEND_IMM", 0x05: "READ_REQ",
         0x06: "READ_RESP", 0x10: "ACK", 0x11: "NAK", 0x20: "CONNECT", 0x21: "ACCEPT",
         0x22: "CLOSE", 0x23: "CLOSE_ACK", 0x24: "PROBE", 0x25: "PROBE_ACK", 0x26: "COOKIE"}
REQUIRED = ["WRITE", "SEND", "READ_REQ", "READ_RESP", "ACK", "CONNECT", "ACCEPT", "COOKIE",
            "CLOSE", "CLOSE_ACK"]
LAST, ACK_REQ, RETX, SOLICITED = 1, 2, 4, 8


def num(s):
    return int(s, 0) if s else None


def shape(r):
    """(opcode name, ip/udp shape, transport shape) of one frame, or None if not ours."""
    op = num(r["metaroce.opcode"])
    if op is None:
        return None
    flags = num(r["metaroce.flags"]) or 0
    udp_len = num(r["udp.length"])
    payload = num(r["metaroce.payload_len"]) or 0
    sport = num(r["udp.srcport"])
    ip = (("version", r["ip.version"]), ("ihl", r["ip.hdr_len"]), ("df", r["ip.flags.df"]),
          ("mf", r["ip.flags.mf"]), ("frag_offset", r["ip.frag_offset"]), ("ttl", r["ip.ttl"]),
          ("ecn", r["ip.dsfield.ecn"]), ("proto", r["ip.proto"]), ("dport", r["udp.dstport"]),
          ("sport_in_49152_65535", 49152 <= sport <= 65535),
          ("udp_len_is_ip_len_minus_20", udp_len == num(r["ip.len"]) - 20),
          ("udp_checksum_set", num(r["udp.checksum"]) != 0))
    tr = [("version", r["metaroce.version"]), ("header_bytes", udp_len - 8 - payload),
          ("header_per_spec", udp_len - 8 - payload == 20 + EXT.get(op, -1)),
          ("last", bool(flags & LAST)), ("solicited", bool(flags & SOLICITED))]
    for k in ("stream", "msg_len", "offset", "payload_len", "paths", "mtu", "max_streams",
              "max_msgs", "planes", "rq_depth"):
        v = r["metaroce." + k]
        if v != "":
            tr.append((k, v))
    return NAMES.get(op, hex(op)), ip, tuple(tr)


def main():
    path, a_suffix, b_suffix = sys.argv[1], sys.argv[2], sys.argv[3]
    shapes = {a_suffix: collections.defaultdict(set), b_suffix: collections.defaultdict(set)}
    ip_shapes = {a_suffix: set(), b_suffix: set()}
    counts = {a_suffix: collections.Counter(), b_suffix: collections.Counter()}
    retx = collections.Counter()
    ids = {a_suffix: set(), b_suffix: set()}
    hints = {a_suffix: set(), b_suffix: set()}
    nodf = collections.Counter()
    problems = []
    codec = open(sys.argv[4]).read().splitlines() if len(sys.argv) > 4 else None
    frames = 0
    with open(path) as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if len(cols) != len(ALL_FIELDS):
                problems.append(f"frame {frames}: {len(cols)} fields, expected {len(ALL_FIELDS)}")
                continue
            r = dict(zip(ALL_FIELDS, cols))
            if codec is not None:
                mine = "\t".join(r[f] for f in CODEC_FIELDS)
                if frames >= len(codec) or codec[frames] != mine:
                    problems.append(f"frame {frames}: dissector {mine!r} vs codec "
                                    f"{codec[frames] if frames < len(codec) else None!r}")
            frames += 1
            who = r["ip.src"].rsplit(".", 1)[-1]
            if who not in shapes:
                continue
            s = shape(r)
            if s is None:
                continue
            name, ip, tr = s
            if "Malformed" in r["_ws.expert.message"]:
                problems.append(f"{r['ip.src']}: malformed {name}: {r['_ws.expert.message']}")
            flags = num(r["metaroce.flags"]) or 0
            if flags & (LAST | RETX) and name not in ("ACK", "NAK") and not flags & ACK_REQ:
                problems.append(f"{r['ip.src']}: {name} with LAST or RETX but no ACK_REQ")
            retx[who] += bool(flags & RETX)
            shapes[who][name].add(tr)
            ip_shapes[who].add(ip)
            counts[who][name] += 1
            ids[who].add(r["ip.id"])
            nodf[who] += r["ip.flags.df"] != "1"
            if name == "ACK":
                hints[who].add(r["metaroce.rate_hint_mbps"])
    a, b = a_suffix, b_suffix
    if codec is not None:
        if len(codec) != frames:
            problems.append(f"codec decoded {len(codec)} frames, the dissector {frames}")
        elif not any(p.startswith("frame ") for p in problems):
            print(f"dissector and codec agree on all {frames} frames")
    print(f"frames per opcode, sender .{a}: {dict(sorted(counts[a].items()))}")
    print(f"frames per opcode, sender .{b}: {dict(sorted(counts[b].items()))}")
    print(f"retransmissions (RETX, left out of the shapes): .{a} {retx[a]}, .{b} {retx[b]}")
    for who in (a, b):
        print(f"IPv4 ids from .{who} (not compared): " +
              ("all 0" if ids[who] == {"0x0000"} else f"{len(ids[who])} distinct values"))
    print(f"ACK rate hints (Mb/s, a value not a shape): .{a} {sorted(hints[a])[:4]}, .{b} {sorted(hints[b])[:4]}")
    for who in (a, b):
        if nodf[who]:
            problems.append(f"spec 2.1: .{who} sent {nodf[who]} frames without DF (the kernel backend's "
                            "UDP_SEGMENT runs, unless its sockets use IP_PMTUDISC_DO)")
    if ip_shapes[a] == ip_shapes[b] and len(ip_shapes[a]) == 1:
        print("IPv4/UDP fields equal: " + ", ".join(f"{k}={v}" for k, v in next(iter(ip_shapes[a]))))
    else:
        problems.append(f"IPv4/UDP fields differ: .{a} {sorted(ip_shapes[a])} vs .{b} {sorted(ip_shapes[b])}")
    for name in REQUIRED:
        for who in (a, b):
            if not shapes[who].get(name):
                problems.append(f"no {name} from .{who}")
    for name in sorted(set(shapes[a]) | set(shapes[b])):
        sa, sb = shapes[a].get(name, set()), shapes[b].get(name, set())
        if not sa or not sb:
            print(f"{name}: only from .{a if sa else b} ({len(sa or sb)} shape(s)); not compared")
            continue
        if sa == sb:
            print(f"{name}: {len(sa)} shape(s), equal")
            for t in sorted(sa)[:3]:
                print("    " + ", ".join(f"{k}={v}" for k, v in t))
            if len(sa) > 3:
                print(f"    ... {len(sa) - 3} more")
        else:
            problems.append(f"{name}: shapes differ")
            for t in sorted(sa - sb)[:5]:
                print(f"    only .{a}: " + ", ".join(f"{k}={v}" for k, v in t))
            for t in sorted(sb - sa)[:5]:
                print(f"    only .{b}: " + ", ".join(f"{k}={v}" for k, v in t))
    for p in problems[:20]:
        print("FAIL: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
