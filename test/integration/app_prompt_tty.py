#!/usr/bin/env python3
"""The metaroce prompt on a pseudo-terminal, as a person types it: Tab completes
words, a double Tab and '?' list the choices, 'help show' lists only show commands.
   app_prompt_tty.py METAROCE_BINARY CONFIG_DIR"""
import os
import pty
import select
import sys
import time

app, cfg = sys.argv[1], sys.argv[2]
pid, fd = pty.fork()
if pid == 0:
    os.execv(app, [app, "-l", "0,1", "--main-lcore", "1", "--no-pci", "--no-huge", "-m", "256",
                   "--log-level=*:warning", f"--file-prefix=it-tty-{os.getppid()}",
                   "--vdev=net_null0", "--", "--config", os.path.join(cfg, "node-a.json"), "-i", "--no-pdump"])

seen = b""


def read_until(want, timeout=10.0):
    """Reads the terminal until `want` appears after the mark; returns what came."""
    global seen
    start = len(seen)
    end = time.time() + timeout
    while time.time() < end:
        if want.encode() in seen[start:]:
            break
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                seen += os.read(fd, 65536)
            except OSError:
                break
    return seen[start:].decode(errors="replace")


def settle(t=0.7):
    return read_until("\x00never\x00", t)


ok = True


def check(cond, what, got=""):
    global ok
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        print("     got: " + repr(got[-1500:]))
        ok = False


out = read_until("metaroce> ", 30)
check("metaroce> " in out, "the prompt appears", out)

os.write(fd, b"sh\t")
out = settle()
check("show " in out, "'sh<Tab>' completes to 'show '", out)

os.write(fd, b"?")
out = settle()
for obj in ["config", "port", "fwd", "conn", "path", "planes", "cq", "stats", "xstats"]:
    check(f"{obj} [" in out or f"{obj}[" in out, f"'show ?' lists '{obj}'", out)
import re
listed = set(re.findall(r"^\s*(\S+) \[", out, re.M))
check(listed <= {"config", "port", "fwd", "conn", "path", "planes", "cq", "stats", "xstats"},
      f"'show ?' lists only show objects ({sorted(listed)})", out)

os.write(fd, b"planes\n")
out = read_until("metaroce> ")
check("plane  port" in out, "the completed line 'show planes' runs", out)

os.write(fd, b"set \t\t")
out = settle()
check("plane" in out and "fwd" in out and "show" not in out.split("set ", 1)[-1],
      "'set <Tab><Tab>' lists plane and fwd", out)
os.write(fd, b"fwd wr\t")
out = settle()
check("write_" in out, "'set fwd wr<Tab>' completes to the common 'write_'", out)
os.write(fd, b"lat\n")
out = read_until("metaroce> ")
check("Set write_lat packet forwarding mode" in out, "'set fwd write_lat' runs", out)

os.write(fd, b"help show\n")
out = read_until("metaroce> ")
check("show port stats all|<port>" in out and "show fwd stats" in out, "'help show' lists the show commands", out)
check("connect <addr>" not in out and "mr reg" not in out and "set fwd" not in out,
      "'help show' lists nothing else", out)

os.write(fd, b"bogus\n")
out = read_until("metaroce> ")
check("Unknown command 'bogus'; type 'help' for the list" in out, "an unknown word gets our message", out)
os.write(fd, b"show port stats 9\n")
out = read_until("metaroce> ")
check("Bad arguments: port 9 is not one of ours" in out, "a bad argument gets our message", out)

os.write(fd, b"quit\n")
end = time.time() + 15
status = None
while time.time() < end:
    done, st = os.waitpid(pid, os.WNOHANG)
    if done:
        status = st
        break
    settle(0.2)
if status is None:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
check(status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, "quit exits with 0")
sys.exit(0 if ok else 1)
