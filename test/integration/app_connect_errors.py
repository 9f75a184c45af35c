#!/usr/bin/env python3
"""'connect' at the metaroce prompt to an address nobody answers (issue 8): it says
how many attempts went unanswered, and Ctrl-C on the terminal interrupts a connect
that is still trying (the prompt comes back, the connection is dropped).
   app_connect_errors.py METAROCE_BINARY CONFIG_DIR"""
import json
import os
import pty
import re
import select
import sys
import tempfile
import time

app, cfg = sys.argv[1], sys.argv[2]
ok = True


def check(cond, what, got=""):
    global ok
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        print("     got: " + repr(got[-1200:]))
        ok = False


def start(config):
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(app, [app, "-l", "0,1", "--main-lcore", "1", "--no-pci", "--no-huge", "-m", "256",
                       "--log-level=*:warning", f"--file-prefix=it-conn-{os.getppid()}",
                       "--vdev=net_null0", "--", "--config", config, "-i", "--no-pdump"])
    return pid, fd


def read_until(fd, want, timeout):
    """What the terminal shows until `want` (a regex) matches or the time is up."""
    out = b""
    end = time.time() + timeout
    while time.time() < end and not re.search(want, out.decode(errors="replace")):
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                out += os.read(fd, 65536)
            except OSError:
                break
    return out.decode(errors="replace")


def finish(pid, fd):
    os.write(fd, b"quit\n")
    read_until(fd, r"\x00never", 3)
    _, status = os.waitpid(pid, 0)
    return status


# 1. The example configuration: an unanswered connect fails after its retries, saying so.
pid, fd = start(os.path.join(cfg, "node-a.json"))
check("metaroce> " in read_until(fd, "metaroce> ", 30), "the prompt appears")
os.write(fd, b"connect 10.0.0.9\n")
out = read_until(fd, r"metaroce> $", 10)
check(re.search(r"connection \d+ to 10\.0\.0\.9: failed: no answer after 21 attempts in [0-9.]+ s; "
                r"is a metaroce node running at 10\.0\.0\.9", out) is not None,
      "connect to a silent address names the unanswered attempts", out)
check(": error" not in out and ": gone" not in out, "no bare ': error' / ': gone'", out)
check(finish(pid, fd) == 0, "the app exits 0")

# 2. A configuration that keeps trying for ~2 minutes: Ctrl-C gives up at once.
with tempfile.TemporaryDirectory() as d:
    c = json.load(open(os.path.join(cfg, "node-a.json")))
    c["transport"].update({"connect_retries": 1000, "connect_retry_us": 100000})
    slow = os.path.join(d, "slow.json")
    json.dump(c, open(slow, "w"))
    pid, fd = start(slow)
    read_until(fd, "metaroce> ", 30)
    os.write(fd, b"connect 10.0.0.9\n")
    out = read_until(fd, r"still trying \(Ctrl-C gives up\)", 5)
    check("no answer yet, still trying (Ctrl-C gives up)" in out, "a long connect says it is still trying", out)
    t0 = time.time()
    os.write(fd, b"\x03")
    out = read_until(fd, r"metaroce> $", 5)
    took = time.time() - t0
    check(re.search(r"connection \d+ to 10\.0\.0\.9: interrupted after [0-9.]+ s \(Ctrl-C\); closed", out)
          is not None and took < 2, f"Ctrl-C interrupts the connect ({took:.2f} s)", out)
    os.write(fd, b"show conn\n")
    out = read_until(fd, r"metaroce> $", 5)
    check("no connections" in out, "the interrupted connection is gone", out)
    check(finish(pid, fd) == 0, "the app exits 0")
sys.exit(0 if ok else 1)
