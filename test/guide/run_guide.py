#!/usr/bin/python3
"""Runs every command of doc/user-guide.md and compares the shape of what it prints
with the output the guide shows.

Each fenced block of the guide follows a marker that says how to run it (a block
without one fails the test):

  <!-- guide-test: ACTION key=value key="a value" ... -->

  run      the block's commands, one after the other; in a `$ ` block the other lines
           are the expected output. Keys: timeout, rc (expected exit code), env (added
           variables, "K=V K=V"), ignore (regex: expected lines not compared, e.g. what
           depends on the machine), prompt (lines starting with it are typed on stdin).
  start    NAME: starts the block's one command in the background with stdin open;
           lines after a `$ ` command are its expected output. Keys: ready (regex
           its output must show before going on), ready-file (a path it must create),
           signal (what `stop` sends: INT, TERM), timeout, rc.
  feed     NAME: the block is a session transcript: lines starting with `prompt`
           (default "metaroce> ") are typed into NAME's stdin, `pace` seconds apart
           after `delay`; the whole block is expected in NAME's output. `subst="TEXT=RE"`
           types, in place of TEXT, group 1 of RE's first match in NAME's output so far
           (a connection id). `end=exit` closes stdin and waits for NAME to exit.
  skip     reason: not run; needs what a CI host lacks. The reason is printed.
  covered  by=TEST reason: run by another test of the suite. Printed too.
  flags    programs=a,b: every -x / --xx inside `inline code` in the prose from here
           to the next `## ` heading must appear in those programs' --help text (no
           block follows this marker). Spans that start with another command's name
           (`mount -t ...`) are not checked.

Any action also takes wait=NAME,... (after the block, wait for those to exit by
themselves) and stop=NAME,... (send them their signal, then wait). A process must exit
0 unless rc says otherwise; when it exits its output is compared with every expected
line given for it. Lines are compared by shape: numbers, hex, MAC and IP addresses become
'#', runs of blanks one blank, words listed in vary= become '~'; expected lines must
appear in order, other lines may come between (EAL's start-up lines, added warnings).
Lines "..." or "... (trimmed ...)" in the guide are not compared.

Paths are rewritten so the run is isolated: build/ -> the build directory, /tmp/ -> a
private directory, --file-prefix=X (and dpdk-telemetry.py -f X) -> a private prefix;
the actual output is mapped back before comparing.

Usage: run_guide.py GUIDE.md BUILD_DIR [FROM_LINE] [--show]
  --show prints every actual output; FROM_LINE skips the markers before that guide line.
"""
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time

MARK = re.compile(r"^<!--\s*guide-test:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^```(\S*)\s*$")
BLOCKLESS = {"flags"}


def parse_guide(path):
    """Returns [(line_no, action, opts, block_lines or None, section_prose)]."""
    lines = open(path, encoding="utf-8").read().splitlines()
    items, pending, i = [], None, 0
    errors = []
    while i < len(lines):
        m = MARK.match(lines[i])
        if m:
            words = shlex.split(m[1])
            action, opts = words[0], {}
            for w in words[1:]:
                k, _, v = w.partition("=")
                opts[k] = v
            if action in BLOCKLESS:
                j = i + 1
                while j < len(lines) and not lines[j].startswith("## "):
                    j += 1
                items.append((i + 1, action, opts, None, prose(lines[i + 1:j])))
            else:
                pending = (i + 1, action, opts)
            i += 1
            continue
        f = FENCE.match(lines[i])
        if f:
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            if pending is None:
                errors.append(f"line {i + 1}: a fenced block without a guide-test marker")
            else:
                items.append((i + 1, pending[1], pending[2], lines[i + 1:j], None))
                pending = None
            i = j + 1
            continue
        i += 1
    return items, errors


def prose(lines):
    """The text outside fenced blocks."""
    out, inside = [], False
    for l in lines:
        if l.startswith("```"):
            inside = not inside
        elif not inside:
            out.append(l)
    return "\n".join(out)


def split_console(block):
    """`$ ` blocks: [(command, [expected lines])]; other blocks: every command line
    (comments dropped) with no expected output. `\\` continues a command."""
    dollar = any(l.startswith("$ ") for l in block)
    cmds, cont = [], False
    for l in block:
        if cont:
            cmds[-1][0] += " " + l.strip()
        elif dollar and l.startswith("$ ") or not dollar and l.strip() and not l.lstrip().startswith("#"):
            cmds.append([l[2:].strip() if dollar else l.strip(), []])
        elif dollar and cmds:
            cmds[-1][1].append(l)
            continue
        else:
            continue
        cont = cmds[-1][0].endswith("\\")
        if cont:
            cmds[-1][0] = cmds[-1][0][:-1].rstrip()
    return [(c, exp) for c, exp in cmds]


class Shape:
    MAC = re.compile(r"\b[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}\b")
    HEX = re.compile(r"\b0x[0-9a-fA-F]+\b")
    NUM = re.compile(r"\d+(\.\d+)?([eE][+-]?\d+)?")
    JOINED = re.compile(r"#([.:]#)+")

    def __init__(self, vary="", prompts=()):
        self.vary = re.compile(r"\b(%s)\b" % vary) if vary else None
        self.prompts = [p for p in prompts if p]

    def __call__(self, line):
        for p in self.prompts:
            while line.startswith(p):
                line = line[len(p):]
        line = self.MAC.sub("#", line)
        line = self.HEX.sub("#", line)
        line = self.NUM.sub("#", line)
        line = self.JOINED.sub("#", line)
        if self.vary:
            line = self.vary.sub("~", line)
        return " ".join(line.split())


def trimmed(line):
    s = line.strip()
    return s == "..." or s.startswith("... (") or s == ""


def compare(expected, actual, shape, ignore=None):
    """Expected lines (guide) in order among actual lines; returns the missing ones."""
    act = [shape(a) for a in actual]
    pos, missing = 0, []
    for e in expected:
        if trimmed(e) or (ignore and re.search(ignore, e)):
            continue
        want = shape(e)
        k = pos
        while k < len(act) and act[k] != want:
            k += 1
        if k == len(act):
            missing.append(e)
        else:
            pos = k + 1
    return missing


class Runner:
    def __init__(self, guide, build, show):
        self.src = os.path.dirname(os.path.dirname(os.path.abspath(guide)))
        self.build = os.path.abspath(build)
        self.show = show
        self.tmp = tempfile.mkdtemp(prefix="metaroce-guide.")
        self.tag = f"gt{os.getpid()}-"
        self.procs = {}  # name -> dict(p, log, expected, opts, line)
        self.failures = []
        self.notes = []

    # --- path rewriting, both ways
    def rewrite(self, cmd):
        # /tmp/ first: the build directory itself may live under /tmp (a CI checkout).
        cmd = re.sub(r"(?<![\w.-])/tmp/", self.tmp + "/", cmd)
        cmd = re.sub(r"(?<![\w./-])build/", self.build + "/", cmd)
        cmd = re.sub(r"--file-prefix=(\S+)", lambda m: f"--file-prefix={self.tag}{m[1]}", cmd)
        cmd = re.sub(r"(dpdk-telemetry\.py\s+-f\s+)(\S+)", lambda m: f"{m[1]}{self.tag}{m[2]}", cmd)
        return cmd

    def unrewrite(self, text):
        return text.replace(self.build + "/", "build/").replace(self.build, "build") \
                   .replace(self.tmp + "/", "/tmp/").replace(self.tag, "")

    def fail(self, line, what):
        self.failures.append(f"guide line {line}: {what}")
        print(f"FAIL guide line {line}: {what}", flush=True)

    def env(self, opts):
        env = dict(os.environ)
        for kv in shlex.split(opts.get("env", "")):
            k, _, v = kv.partition("=")
            env[k] = self.build if v == "build" else self.rewrite(v)
        return env

    # --- actions
    def run(self, line, opts, block):
        prompt = opts.get("prompt")
        shape = Shape(opts.get("vary", ""), [prompt])
        for cmd, expected in split_console(block):
            inputs = [e[len(prompt):] for e in expected if prompt and e.startswith(prompt)]
            expected = [e for e in expected if not (prompt and e.startswith(prompt))]
            real = self.rewrite(cmd)
            print(f"--- run (guide line {line}): {real}", flush=True)
            t0 = time.monotonic()
            try:
                p = subprocess.run(["bash", "-c", real], cwd=self.src, env=self.env(opts),
                                   input="".join(i + "\n" for i in inputs), capture_output=True,
                                   text=True, timeout=float(opts.get("timeout", 60)))
            except subprocess.TimeoutExpired as e:
                self.fail(line, f"'{cmd}' did not finish in {e.timeout} s")
                continue
            out = self.unrewrite(p.stdout).splitlines()
            err = self.unrewrite(p.stderr).splitlines()
            print(f"    exit {p.returncode} in {time.monotonic() - t0:.1f} s, "
                  f"{len(out)} stdout / {len(err)} stderr lines", flush=True)
            if self.show:
                print("\n".join(out + ["--- stderr"] + err))
            if p.returncode != int(opts.get("rc", 0)):
                self.fail(line, f"'{cmd}' exited {p.returncode} (expected {opts.get('rc', 0)});"
                                f" stderr:\n" + "\n".join(err[-20:]))
                continue
            # stdout and stderr come through separate pipes: an expected line may be in
            # either, in order within each.
            self.check_two(line, cmd, expected, out, err, shape, opts.get("ignore"))

    def check_two(self, line, cmd, expected, out, err, shape, ignore):
        so, se = [shape(a) for a in out], [shape(a) for a in err]
        po = pe = 0
        missing = []
        for e in expected:
            if trimmed(e) or (ignore and re.search(ignore, e)):
                continue
            want = shape(e)
            k = next((k for k in range(po, len(so)) if so[k] == want), None)
            if k is not None:
                po = k + 1
                continue
            k = next((k for k in range(pe, len(se)) if se[k] == want), None)
            if k is not None:
                pe = k + 1
                continue
            missing.append(e)
        self.report_missing(line, cmd, missing, out + ["--- stderr"] + err)

    def report_missing(self, line, what, missing, actual):
        if missing:
            self.fail(line, f"output of '{what}' lacks these lines (by shape):\n  "
                      + "\n  ".join(missing) + "\n--- actual output:\n" + "\n".join(actual[-80:]))
        else:
            print("    output has the guide's shape", flush=True)

    def start(self, line, opts, block):
        name = opts["name"]
        ((cmd, expected),) = split_console(block)
        real = self.rewrite(cmd)
        log = os.path.join(self.tmp, f"{name}.log")
        ready_file = self.rewrite(opts["ready-file"]) if "ready-file" in opts else None
        if ready_file and os.path.exists(ready_file):
            os.unlink(ready_file)  # a previous block's socket
        print(f"--- start {name} (guide line {line}): {real}", flush=True)
        p = subprocess.Popen(["bash", "-c", "exec " + real], cwd=self.src, env=self.env(opts),
                             stdin=subprocess.PIPE, stdout=open(log, "w"),
                             stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self.procs[name] = dict(p=p, log=log, expected=list(expected), opts=opts, line=line,
                                shape=Shape(opts.get("vary", ""), ["metaroce> "]), cmd=cmd,
                                deadline=time.monotonic() + float(opts.get("timeout", 60)))
        if ready_file:
            t_end = time.monotonic() + 20
            while not os.path.exists(ready_file):
                if p.poll() is not None or time.monotonic() > t_end:
                    self.fail(line, f"{name} never created {opts['ready-file']}:\n{self.output(name)}")
                    break
                time.sleep(0.1)
        if "ready" in opts:
            t_end = time.monotonic() + 20
            while not re.search(opts["ready"], self.output(name)):
                if p.poll() is not None or time.monotonic() > t_end:
                    self.fail(line, f"{name} never printed /{opts['ready']}/:\n{self.output(name)}")
                    break
                time.sleep(0.1)

    def output(self, name):
        return self.log_text(self.procs[name])

    def log_text(self, pr):
        with open(pr["log"], errors="replace") as f:
            return self.unrewrite(f.read())

    def feed(self, line, opts, block):
        name = opts["name"]
        pr = self.procs[name]
        prompt = opts.get("prompt", "metaroce> ")
        pr["expected"] += block
        pr["shape"] = Shape(opts.get("vary", pr["opts"].get("vary", "")), [prompt])
        text, _, rx = opts.get("subst", "").partition("=")
        subst = {text: rx} if text else {}
        time.sleep(float(opts.get("delay", 0)))
        pace = float(opts.get("pace", 0.5))
        for l in block:
            if not l.startswith(prompt):
                continue
            cmd = l[len(prompt):]
            for text, rx in subst.items():
                m = re.search(rx, self.output(name))
                if text in cmd and m:
                    cmd = cmd.replace(text, m[1])
            print(f"    {name} < {cmd}", flush=True)
            try:
                pr["p"].stdin.write(cmd + "\n")
                pr["p"].stdin.flush()
            except BrokenPipeError:
                self.fail(line, f"{name} exited before '{cmd}'")
                return
            time.sleep(pace)
        if opts.get("end") == "exit":
            pr["p"].stdin.close()
            self.reap(name, None)

    def reap(self, name, sig):
        pr = self.procs.pop(name)
        p = pr["p"]
        if sig is not None and p.poll() is None:
            os.kill(p.pid, sig)
        try:
            p.wait(timeout=max(1.0, pr["deadline"] - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            self.fail(pr["line"], f"{name} did not exit in time (killed)")
        text = self.log_text(pr)
        want_rc = int(pr["opts"].get("rc", 0))
        print(f"--- {name} exit {p.returncode}, {len(text.splitlines())} lines", flush=True)
        if self.show:
            print(text)
        if p.returncode != want_rc:
            self.fail(pr["line"], f"{name} exited {p.returncode} (expected {want_rc}):\n" +
                      "\n".join(text.splitlines()[-30:]))
            return
        missing = compare(pr["expected"], text.splitlines(), pr["shape"], pr["opts"].get("ignore"))
        self.report_missing(pr["line"], pr["cmd"], missing, text.splitlines())

    def after(self, opts):
        for n in filter(None, opts.get("wait", "").split(",")):
            self.reap(n, None)
        for n in filter(None, opts.get("stop", "").split(",")):
            sig = getattr(signal, "SIG" + self.procs[n]["opts"].get("signal", "TERM"))
            self.reap(n, sig)

    # --- inline flags against the programs' --help
    def help_text(self, prog):
        eal = ["--no-huge", "-m", "64", "--no-pci", "-l", "0", f"--file-prefix={self.tag}help",
               "--log-level=*:error"]
        cmds = {
            "eal": [f"{self.build}/app/metaroce-perf/metaroce-perf", "--help"],
            "metaroce": [f"{self.build}/app/metaroce/metaroce", *eal, "--", "--help"],
            "metaroce-perf": [f"{self.build}/app/metaroce-perf/metaroce-perf", *eal, "--", "--help"],
            "metaroce-sim": [f"{self.build}/app/metaroce-sim/metaroce-sim", "--help"],
            "dpdk-dumpcap": ["dpdk-dumpcap", "--help"],
            "dpdk-telemetry.py": ["dpdk-telemetry.py", "--help"],
            "demo.sh": ["sed", "-n", "1,/^set /p", f"{self.src}/scripts/demo.sh"],
        }
        p = subprocess.run(cmds[prog], capture_output=True, text=True, timeout=30)
        return p.stdout + p.stderr

    def flags(self, line, opts, text):
        progs = opts["programs"].split(",")
        helps = "\n".join(self.help_text(p) for p in progs)
        seen, bad = set(), []
        for span in re.findall(r"`([^`]+)`", text):
            words = span.split()
            # A span that starts with another command (`mount -t ...`) is that command's.
            if not words or not (words[0].startswith("-") or os.path.basename(words[0]) in progs):
                continue
            for tok in words:
                m = re.match(r"^(--?[A-Za-z][\w-]*)", tok.split("/")[0])
                if not m or m[1] in seen:
                    continue
                seen.add(m[1])
                if not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(m[1]), helps):
                    bad.append(m[1])
        print(f"--- flags (guide line {line}): {len(seen)} checked against "
              f"{', '.join(progs)} --help", flush=True)
        if bad:
            self.fail(line, f"flags no program's --help lists: {' '.join(bad)}")

    def go(self, items):
        for line, action, opts, block, text in items:
            if action == "run":
                self.run(line, opts, block)
            elif action == "start":
                self.start(line, opts, block)
            elif action == "feed":
                self.feed(line, opts, block)
            elif action == "flags":
                self.flags(line, opts, text)
            elif action == "skip":
                self.notes.append(f"SKIPPED guide line {line}: {opts.get('reason', '(no reason)')}")
                print(self.notes[-1], flush=True)
                if not opts.get("reason"):
                    self.fail(line, "skip without a reason")
            elif action == "covered":
                self.notes.append(f"COVERED guide line {line} by test '{opts.get('by')}': "
                                  f"{opts.get('reason', '')}")
                print(self.notes[-1], flush=True)
            else:
                self.fail(line, f"unknown action '{action}'")
            self.after(opts)
        for name in list(self.procs):
            self.fail(self.procs[name]["line"], f"{name} still running at the end (never stopped)")
            self.reap(name, signal.SIGKILL)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    guide, build = args[:2]
    items, errors = parse_guide(guide)
    if len(args) > 2:  # while editing the guide: start at this guide line
        items = [i for i in items if i[0] >= int(args[2])]
    r = Runner(guide, build, "--show" in sys.argv)
    for e in errors:
        r.fail(0, e)
    t0 = time.monotonic()
    try:
        r.go(items)
    finally:
        for name in list(r.procs):
            os.killpg(r.procs[name]["p"].pid, signal.SIGKILL)
        subprocess.run(["rm", "-rf", r.tmp])
    ran = sum(1 for i in items if i[1] in ("run", "start", "feed"))
    print(f"{len(items)} markers: {ran} blocks run, {len(r.notes)} skipped or covered elsewhere, "
          f"{len(r.failures)} failures, {time.monotonic() - t0:.0f} s")
    for n in r.notes:
        print(n)
    sys.exit(1 if r.failures else 0)


if __name__ == "__main__":
    main()
