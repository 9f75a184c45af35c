#!/usr/bin/env python3
"""Sends or receives numbered UDP frames on a host port of the kernel fabric, to
measure what the BPF impairments do (no DPDK involved).

  impair_probe.py send IFACE SRC_MAC GW_MAC SRC_IP DST_IP COUNT FLOWS
  impair_probe.py recv IFACE MAX_SECONDS EXPECTED_COUNT   (ends after 1 s of silence)

The sender round-robins COUNT frames over FLOWS UDP source ports; even-numbered
frames are ECN-capable (ECT(0)), odd ones are not. The receiver prints one JSON line:
frames received, lost, duplicated, reordered (arrived after a later frame of its
flow), CE-marked ECT frames, CE-marked non-ECT frames, bad IPv4 header checksums.
"""
import json
import socket
import struct
import sys
import time

UDP_PORT = 4791
MAGIC = b"KFAB"


def ip_checksum(hdr):
    s = sum(struct.unpack("!10H", hdr))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def mac(text):
    return bytes(int(x, 16) for x in text.split(":"))


def send(iface, src_mac, gw_mac, src_ip, dst_ip, count, flows):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    eth = mac(gw_mac) + mac(src_mac) + b"\x08\x00"
    for seq in range(count):
        tos = 0x02 if seq % 2 == 0 else 0x00
        payload = MAGIC + struct.pack("!I", seq) + bytes(56)
        udp = struct.pack("!HHHH", 40000 + seq % flows, UDP_PORT, 8 + len(payload), 0) + payload
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, tos, 20 + len(udp), 0, 0x4000, 64, 17, 0,
                         socket.inet_aton(src_ip), socket.inet_aton(dst_ip))
        ip = ip[:10] + struct.pack("!H", ip_checksum(ip)) + ip[12:]
        while True:
            try:
                s.send(eth + ip + udp)
                break
            except BlockingIOError:
                time.sleep(0.001)
        if seq % 64 == 63:
            time.sleep(0.0005)  # let the softirqs keep up: loss must come from BPF only


def recv(iface, seconds, expected):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
    s.bind((iface, 0))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.settimeout(0.2)
    seen = set()
    highest = {}
    got = dup = reordered = ce_ect = ce_not_ect = bad_csum = 0
    end = time.time() + seconds
    last = 0.0
    while time.time() < end:
        try:
            data, addr = s.recvfrom(4096)
        except socket.timeout:
            if got and time.time() - last > 1.0:
                break  # the sender is done: a second of silence
            continue
        if addr[2] == socket.PACKET_OUTGOING or len(data) < 50 or data[23] != 17:
            continue
        ip = data[14:34]
        if struct.unpack("!H", data[36:38])[0] != UDP_PORT or data[42:46] != MAGIC:
            continue
        seq = struct.unpack("!I", data[46:50])[0]
        got += 1
        last = time.time()
        if ip_checksum(ip[:10] + b"\0\0" + ip[12:]) != struct.unpack("!H", ip[10:12])[0]:
            bad_csum += 1
        if ip[1] & 3 == 3:
            if seq % 2 == 0:
                ce_ect += 1
            else:
                ce_not_ect += 1
        if seq in seen:
            dup += 1
            continue
        seen.add(seq)
        flow = struct.unpack("!H", data[34:36])[0]
        if seq < highest.get(flow, -1):
            reordered += 1
        highest[flow] = max(highest.get(flow, -1), seq)
    print(json.dumps({"received": got, "unique": len(seen), "lost": expected - len(seen),
                      "duplicates": dup, "reordered": reordered, "ce_ect": ce_ect,
                      "ce_not_ect": ce_not_ect, "bad_ip_checksum": bad_csum}))


if __name__ == "__main__":
    if sys.argv[1] == "send":
        send(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6], int(sys.argv[7]),
             int(sys.argv[8]))
    elif sys.argv[1] == "recv":
        recv(sys.argv[2], float(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit("usage: impair_probe.py send|recv ...")
