#!/usr/bin/env python3
"""make mutants: apply each mutation of tests/mutants/mutants.txt to a
scratch copy of the tree, rebuild, run the tests named to kill it, and
fail unless every mutant is killed.

The scratch copy lives in build/mutants/tree (the sources, the tests and
a copy of build/'s objects, so a mutant rebuilds one object and links).
Mutants run one after the other in that copy: the file is mutated, the
mutant built and tested, and the file put back before the next one.

  tests/mutants/run.py [--list] [--only NAME,...] [--no-baseline] [--keep]

Before the mutants, every kill command runs once on the unmutated copy
(the baseline): a command that fails without a mutation kills nothing and
stops the run. Exit status 0 only if every selected mutant was killed.
"""
import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIST = ROOT / "tests" / "mutants" / "mutants.txt"
COPY_DIRS = ("src", "include", "schema", "tests", "conf", "packaging")
COPY_FILES = ("Makefile", "VERSION")


class Mutant:
    def __init__(self, name, line):
        self.name = name
        self.line = line
        self.file = None
        self.kill = None
        self.why = ""
        self.original = None
        self.mutant = None


def parse(path):
    """The list: blocks starting with '== name', keys 'file:', 'kill:',
    'why:', then '--- original' and '+++ mutant' sections taken verbatim
    (multi-line; the final newline of each section is not part of it).
    Lines starting with '#' outside the sections are comments."""
    out, cur, sect = [], None, None
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        if raw.startswith("== "):
            cur = Mutant(raw[3:].strip(), n)
            out.append(cur)
            sect = None
            continue
        if cur is None:
            if raw.strip() and not raw.startswith("#"):
                sys.exit("%s:%d: text before the first '== name'" % (path, n))
            continue
        if raw == "--- original":
            sect, cur.original = "original", []
            continue
        if raw == "+++ mutant":
            sect, cur.mutant = "mutant", []
            continue
        if sect:
            getattr(cur, sect).append(raw)
            continue
        if not raw.strip() or raw.startswith("#"):
            continue
        key, _, val = raw.partition(":")
        key = key.strip()
        if key == "file":
            cur.file = val.strip()
        elif key == "kill":
            cur.kill = val.strip()
        elif key == "why":
            cur.why = (cur.why + " " + val.strip()).strip()
        else:
            sys.exit("%s:%d: unknown key %r" % (path, n, key))
    names = set()
    for m in out:
        if m.name in names:
            sys.exit("%s:%d: mutant %s listed twice" % (path, m.line, m.name))
        names.add(m.name)
        if not (m.file and m.kill and m.original is not None and m.mutant is not None):
            sys.exit("%s:%d: mutant %s needs file:, kill:, --- original and +++ mutant" % (path, m.line, m.name))
        # trailing blank lines separate blocks; they are not part of the text
        for sec in (m.original, m.mutant):
            while sec and not sec[-1].strip():
                sec.pop()
        m.original = "\n".join(m.original)
        m.mutant = "\n".join(m.mutant)
        if m.original == m.mutant:
            sys.exit("%s:%d: mutant %s changes nothing" % (path, m.line, m.name))
    return out


def make_copy(tree):
    """A scratch tree: sources and tests, and build/ with its timestamps
    (make then rebuilds only what a mutation touches)."""
    if tree.exists():
        shutil.rmtree(tree)
    tree.mkdir(parents=True)
    for d in COPY_DIRS:
        if (ROOT / d).is_dir():
            shutil.copytree(ROOT / d, tree / d, symlinks=True,
                            ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", "crashes"))
    for f in COPY_FILES:
        shutil.copy2(ROOT / f, tree / f)
    build = ROOT / "build"
    for sub in ("obj", "gen", "tests", "fault"):
        if (build / sub).is_dir():
            shutil.copytree(build / sub, tree / "build" / sub, symlinks=True)
    for f in ("libhookd.a", "hookd"):
        if (build / f).exists():
            shutil.copy2(build / f, tree / "build" / f)


def sh(cmd, cwd, env, log, timeout):
    """Run cmd (a shell line) in cwd; its output goes to log. Returns
    (status, seconds); status None on a timeout."""
    t0 = time.monotonic()
    with open(log, "ab") as f:
        f.write(("\n$ %s\n" % cmd).encode())
        f.flush()
        p = subprocess.Popen(["bash", "-c", cmd], cwd=str(cwd), env=env, stdout=f, stderr=subprocess.STDOUT,
                             start_new_session=True)
        try:
            rc = p.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9)
            p.wait()
            rc = None
    return rc, time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--list", action="store_true", help="print the mutants and exit")
    ap.add_argument("--check", action="store_true",
                    help="only check that every mutation applies to exactly one place of its file (make test)")
    ap.add_argument("--only", help="comma-separated mutant names")
    ap.add_argument("--no-baseline", action="store_true", help="skip running the kill commands unmutated")
    ap.add_argument("--keep", action="store_true", help="keep build/mutants/tree afterwards")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per kill command (a timeout kills)")
    a = ap.parse_args()

    mutants = parse(LIST)
    if a.only:
        want = set(a.only.split(","))
        unknown = want - {m.name for m in mutants}
        if unknown:
            sys.exit("unknown mutant(s): %s" % ", ".join(sorted(unknown)))
        mutants = [m for m in mutants if m.name in want]
    if a.list:
        for m in mutants:
            print("%-28s %-28s %s" % (m.name, m.file, m.kill))
        return 0

    if a.check:
        # an edit to a mutated line would otherwise surface only in the
        # long CI step: caught here in a second
        bad = 0
        for m in mutants:
            n = (ROOT / m.file).read_text().count(m.original)
            if n != 1:
                print("mutant %s: its original text occurs %d times in %s (want exactly 1): update %s"
                      % (m.name, n, m.file, LIST.relative_to(ROOT)))
                bad += 1
        print("mutants: %d listed, %d stale" % (len(mutants), bad))
        return 2 if bad else 0

    out = ROOT / "build" / "mutants"
    tree = out / "tree"
    out.mkdir(parents=True, exist_ok=True)
    log = out / "mutants.log"
    log.write_text("")
    t_start = time.monotonic()
    make_copy(tree)
    env = dict(os.environ)
    env["HOOKD_BIN"] = str(tree / "build" / "hookd")
    env.pop("HOOKD_TEST_BACKEND", None)   # each kill command says its backend
    env.setdefault("PYTHON", sys.executable)   # the kill commands' $PYTHON
    build = "make -j%s all >/dev/null" % (os.environ.get("MUTANT_JOBS") or "2")

    # every mutation applies to exactly one place of the unmutated file
    for m in mutants:
        text = (tree / m.file).read_text()
        n = text.count(m.original)
        if n != 1:
            print("mutant %s: its original text occurs %d times in %s (want exactly 1): update %s"
                  % (m.name, n, m.file, LIST.relative_to(ROOT)))
            return 2

    rc, _ = sh(build, tree, env, log, a.timeout)
    if rc != 0:
        print("the unmutated tree does not build (see %s)" % log)
        return 2
    if not a.no_baseline:
        for cmd in dict.fromkeys(m.kill for m in mutants):
            rc, secs = sh(cmd, tree, env, log, a.timeout)
            print("baseline %-6s %5.0fs  %s" % ("ok" if rc == 0 else "FAILS", secs, cmd), flush=True)
            if rc != 0:
                print("a kill command fails without any mutation: it kills nothing (see %s)" % log)
                return 2

    results = []
    for m in mutants:
        path = tree / m.file
        orig = path.read_text()
        path.write_text(orig.replace(m.original, m.mutant, 1))
        try:
            brc, _ = sh(build, tree, env, log, a.timeout)
            if brc != 0:
                verdict, secs = "NO-BUILD", 0.0
            else:
                rc, secs = sh(m.kill, tree, env, log, a.timeout)
                verdict = "survived" if rc == 0 else ("killed(timeout)" if rc is None else "killed")
        finally:
            path.write_text(orig)
        results.append((m, verdict, secs))
        print("%-16s %5.0fs  %-28s %s" % (verdict, secs, m.name, m.kill), flush=True)
    sh(build, tree, env, log, a.timeout)   # leave the copy unmutated

    killed = sum(1 for _, v, _ in results if v.startswith("killed"))
    total = len(results)
    print("mutants: %d of %d killed (%.0f%%) in %.0f s; log %s"
          % (killed, total, 100.0 * killed / total if total else 100.0, time.monotonic() - t_start, log))
    bad = [(m, v) for m, v, _ in results if not v.startswith("killed")]
    for m, v in bad:
        print("  %s %s (%s): %s" % (v.upper(), m.name, m.file, m.why))
    if not a.keep:
        shutil.rmtree(tree, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
