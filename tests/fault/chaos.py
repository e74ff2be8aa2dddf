#!/usr/bin/env python3
"""make chaos: the long fault runs, bounded in time (< 15 min).

The same code as tests/integration/test_faults.py with bigger counts:
  1. kill -9 loop: --kills (30) random kill -9 of hookd under continuous
     enqueue + delivery load, restart on the same files each time.
  1b. power cuts: --cuts (50) kill -9 at --cut-rate enqueues/s while every
     database write since the last fsync is held in memory only
     (tests/fault/powercut.c), so each kill loses what a power cut loses.
  2. I/O errors: --io-rounds rounds of eio-fsync / eio-write (WAL only or
     every database file) armed after a random number of calls.
  3. Disk full: tmpfs (when mount is allowed) and shim ENOSPC.
  4. Corrupt database at start: --corrupt-inputs random damages of a real
     database (truncations, overwritten page ranges, header).
  5. Checkpoint starvation: a reader holding a snapshot for 10 s.
  6. Clock steps: the wall clock stepped an hour back and forward
     (tests/fault/timeshift.c) under enqueue + delivery load with retries:
     nothing lost, and no message waits longer than its backoff.
Prints one summary table; exit status 1 if any invariant failed.

Environment: HOOKD_BIN (binary under test), FAULTFS_SO, POWERCUT_SO and
TIMESHIFT_SO (the shims), CHAOS_SEED (replay a run).
Stdlib only (pytest is imported for the shared helpers, not run).
"""
import argparse
import os
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "integration"))

import conftest  # noqa: E402
import test_clock as tc  # noqa: E402
import test_faults as tf  # noqa: E402
from _pytest.outcomes import Skipped  # noqa: E402


class Env:
    """What the pytest fixtures give the tests, for a plain script."""

    def __init__(self, root):
        self.root = Path(root)
        self.daemons = []
        self.receivers = []
        self.mounts = []
        self.n = 0

    def hookd(self, endpoints=None, sections=None, start=True, name=None):
        self.n += 1
        work = self.root / (name or "hookd%d" % self.n)
        work.mkdir()
        sockdir = tempfile.mkdtemp(prefix="hk")
        os.chmod(sockdir, 0o755)
        secs = conftest.merge_sections(conftest.base_sections(work, sockdir), sections)
        for ep, kv in (endpoints or {}).items():
            secs["endpoint." + ep] = dict(kv)
        d = conftest.Daemon(work, sockdir, secs)
        self.daemons.append(d)
        if start:
            d.start()
        return d

    def receiver(self, behaviour=200):
        r = conftest.Receiver()
        r.set(behaviour)
        self.receivers.append(r)
        return r

    def tmpfs(self, size):
        mnt = self.root / ("tmpfs%d" % len(self.mounts))
        if os.geteuid() != 0 or not tf.can_mount_tmpfs(mnt):
            raise Skipped("cannot mount a tmpfs")
        tf.subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s,mode=0755" % size, "tmpfs", str(mnt)], check=True)
        self.mounts.append(mnt)
        return mnt

    def cleanup(self):
        for r in self.receivers:
            r.close()
        for d in self.daemons:
            if d.running:
                d.kill()
            shutil.rmtree(d.sockdir, ignore_errors=True)
        for m in self.mounts:
            if tf.subprocess.run(["umount", str(m)], capture_output=True).returncode != 0:
                tf.subprocess.run(["umount", "-l", str(m)], capture_output=True)
        self.receivers, self.daemons, self.mounts = [], [], []


ROWS = []      # (scenario, load held, faults injected, inputs tried, lost, duplicates, verdict)
FAILED = []


def record(name, load, faults, inputs, lost, dups, ok, detail=""):
    ROWS.append((name, load, faults, inputs, lost, dups, "ok" if ok else "FAIL"))
    if not ok:
        FAILED.append("%s: %s" % (name, detail))
    print("[chaos] %-22s %s" % (name, "ok" if ok else "FAIL " + detail[:300]), flush=True)


def skipped(name, why):
    """A scenario that did not run (no shim in a static binary, no tmpfs):
    it proved nothing, so the run does not pass."""
    ROWS.append((name, "-", "-", "-", "-", "-", "NOT RUN"))
    FAILED.append("%s: did not run: %s" % (name, why))
    print("[chaos] %-22s NOT RUN: %s" % (name, why), flush=True)


def run_kills(env, args):
    row = tf.kill_loop(env.hookd, env.receiver, kills=args.kills, seed=args.seed, rate=args.rate,
                       gap=(0.3, 3.0), drain_timeout=240)
    try:
        tf.check_kill_row(row)
        ok, why = True, ""
    except AssertionError as e:
        ok, why = False, str(e)
    record("kill -9 loop", "%d s at %d enq/s, 2 endpoints, cap %d" % (row["seconds"], row["rate_target"],
                                                                    row["in_flight_cap"]),
           "%d kill -9" % row["kills"], "%d acked events" % row["acked"], row["lost"],
           "%d (recovered in flight %d, bound %d)" % (row["duplicates"], row["recovered_in_flight"], row["dup_bound"]),
           ok, why)


def run_powercut(env, args):
    """kill -9 as a power cut: every database write since its file's last
    fsync is lost (tests/fault/powercut.c), under full-speed load."""
    row = tf.kill_loop(env.hookd, env.receiver, kills=args.cuts, seed=args.seed, rate=args.cut_rate,
                       gap=(0.2, 1.5), drain_timeout=300, powercut=True)
    try:
        tf.check_kill_row(row)
        ok, why = True, ""
    except AssertionError as e:
        ok, why = False, str(e)
    record("power cut (kill -9 + unsynced writes lost)",
           "%d s at %d enq/s, 2 endpoints, cap %d" % (row["seconds"], row["rate_target"], row["in_flight_cap"]),
           "%d cuts" % row["kills"], "%d acked events" % row["acked"], row["lost"],
           "%d (integrity %s)" % (row["duplicates"], ",".join(row["integrity"])), ok, why)


def run_io(env, args, rnd):
    modes = ["eio-fsync file .db-wal", "eio-write file .db-wal", "eio-fsync", "eio-write"]
    lost = injected = tried = exits = phantom = 0
    fails = []
    for i in range(args.io_rounds):
        mode = "%s after %d" % (rnd.choice(modes), rnd.randrange(0, 40))
        d = env.hookd(endpoints={"a": tf.PARKED}, start=False)
        try:
            f = tf.start_with_shim(d)
            res = tf.io_error_scenario(d, f, mode, "io%d" % i, before=rnd.randrange(1, 300),
                                       during=rnd.randrange(50, 400), require_error_reply=False)
            tried += 1
            lost += res["lost"]
            injected += res["injected"]
            exits += res["exit"] == tf.EX_TEMPFAIL
            phantom += res["refused_but_stored"]
        except Skipped as e:
            skipped("I/O errors", str(e))
            return
        except AssertionError as e:
            tried += 1
            fails.append("%s: %s" % (mode, str(e)[:400]))
        finally:
            if d.running:
                d.kill()
    record("fsync/write EIO", "200-700 pipelined enqueues/round", "%d EIO injected, %d exits 75" % (injected, exits),
           "%d rounds (mode, after N)" % tried, lost, "0 (%d refused-but-stored)" % phantom, not fails and lost == 0,
           "; ".join(fails))


def run_disk_full(env, args):
    variants = []
    try:
        mnt = env.tmpfs("8m")
        variants.append(("tmpfs", mnt))
    except Skipped as e:
        skipped("disk full (tmpfs)", str(e))
    variants.append(("shim", None))
    for kind, mnt in variants:
        rcv = env.receiver(conftest.Reply(200, delay=0.3))
        secs = {"retention": {"checkpoint_interval": "200ms"}}
        if mnt:
            secs["storage"] = {"path": str(mnt / "hookd.db")}
        d = env.hookd(endpoints={"a": {"url": rcv.url("/full"), "max_in_flight": 8}}, sections=secs, start=False)
        try:
            if kind == "tmpfs":
                d.start()
                ballast = mnt / "ballast"
                res = tf.disk_full_scenario(d, rcv, lambda: tf.fill(ballast), lambda: ballast.unlink(), "cf")
                faults = "tmpfs 8 MiB filled, %d refused" % res["refused_full"]
            else:
                f = tf.start_with_shim(d)
                res = tf.disk_full_scenario(d, rcv, lambda: f.arm("enospc"), f.off, "cs")
                faults = "%d ENOSPC injected, %d refused" % (f.injected, res["refused_full"])
            d.stop()
            record("disk full (%s)" % kind, "enqueues + deliveries (0.3 s replies)", faults,
                   "%d acked" % res["acked"], res["lost"], res["duplicates"], res["lost"] == 0)
        except Skipped as e:
            skipped("disk full (%s)" % kind, str(e))
        except AssertionError as e:
            record("disk full (%s)" % kind, "-", "-", "-", "?", "?", False, str(e))
        finally:
            if d.running:
                d.kill()


def random_damage(img, rnd):
    ps = tf.page_size(img)
    npages = len(img) // ps
    b = bytearray(img)
    k = rnd.random()
    if k < 0.2:
        return "truncate", bytes(b[:rnd.randrange(1, len(b))])
    if k < 0.3:
        n = rnd.randrange(1, 100)
        off = rnd.randrange(0, 100 - n + 1)
        b[off:off + n] = rnd.randbytes(n)
        return "header", bytes(b)
    p = rnd.randrange(0, npages)
    start = 100 if p == 0 else 0
    off = rnd.randrange(start, ps - 1)
    n = rnd.randrange(1, min(512, ps - off) + 1)
    b[p * ps + off:p * ps + off + n] = rnd.randbytes(n)
    return "page", bytes(b)


def corrupt_template(env, kill):
    """Bytes of a real database: (db, -wal, -shm). kill: leave it as a
    kill -9 does (a -wal of committed, unchekpointed frames), else stop."""
    tpl = env.hookd(endpoints={"a": tf.PARKED}, name="template-%s" % ("wal" if kill else "clean"),
                    sections={"retention": {"checkpoint_interval": "1h"}})
    for b in range(0, 3000, 500):
        tf.send_all(tpl, [tf.enq("a", "tpl-%d" % i, size=300) for i in range(b, b + 500)])
    if kill:
        # checkpointed first, so the -wal holds only the last commits and
        # most pages are read from the damaged main file
        tpl.restart()
        tf.send_all(tpl, [tf.enq("a", "tpl-w%d" % i, size=300) for i in range(200)])
        tpl.kill()
    else:
        tpl.stop()
    side = tf.side_bytes(tpl.db)
    return tpl.db.read_bytes(), side["-wal"], side["-shm"]


def run_corrupt(env, args, rnd):
    """Damage the main file (the -wal, when there is one, is kept: SQLite
    skips damaged WAL frames by their checksums, which no check can tell
    from frames never committed). A refused file must stay byte-identical
    with its -wal and -shm; a served one must be one integrity_check calls
    sound (hookd writes to what it serves: recovery, the checkpoint)."""
    templates = [corrupt_template(env, kill=False), corrupt_template(env, kill=True)]
    counts = {"refused": 0, "started": 0, "undetectable": 0, "modified": 0, "unnamed": 0}
    started_kinds = {}
    for i in range(args.corrupt_inputs):
        img, wal, shm = templates[i % 2]
        kind, bad = random_damage(img, rnd)
        d = env.hookd(endpoints={"a": tf.PARKED}, start=False)
        files = {d.db: bad, Path(str(d.db) + "-wal"): wal, Path(str(d.db) + "-shm"): shm}
        for p, data in files.items():
            if data is not None:
                p.write_bytes(data)
        # can SQLite itself see the damage? (bytes inside a payload cannot
        # be told from data without checksums)
        probe = d.dir / "probe.db"
        probe.write_bytes(bad)
        if wal is not None:
            Path(str(probe) + "-wal").write_bytes(wal)
        try:
            detectable = tf.integrity(probe) != ["ok"]
        except tf.sqlite3.DatabaseError:
            detectable = True
        for p in d.dir.glob("probe.db*"):
            p.unlink()
        rc, out = tf.run_serve(d.cfg, d.dir, timeout=3)
        if rc is None or rc == 0:
            if detectable:
                counts["started"] += 1
                started_kinds[kind] = started_kinds.get(kind, 0) + 1
            else:
                counts["undetectable"] += 1
        else:
            counts["refused"] += 1
            if any((p.read_bytes() if p.exists() else None) != data for p, data in files.items()):
                counts["modified"] += 1
            if str(d.db) not in out:
                counts["unnamed"] += 1
        shutil.rmtree(d.dir, ignore_errors=True)
    ok = counts["started"] == 0 and counts["modified"] == 0 and counts["unnamed"] == 0
    record("corrupt db at start", "-", "random damage of a 1.4 MB db (half with a -wal left by kill -9)",
           "%d inputs: %d refused (%d of them modified), %d detectable but started (%s), "
           "%d undetectable by integrity_check (served)" % (
               args.corrupt_inputs, counts["refused"], counts["modified"], counts["started"],
               ", ".join("%s %d" % kv for kv in sorted(started_kinds.items())) or "-", counts["undetectable"]),
           0, "-", ok, "started on %d damaged files %s; %d refused files modified; %d errors not naming the file" % (
               counts["started"], started_kinds, counts["modified"], counts["unnamed"]))


def run_starvation(env, args):
    d = env.hookd(endpoints={"a": tf.PARKED}, sections={"retention": {"checkpoint_interval": "200ms"}})
    res = tf.starvation_scenario(d, hold=10.0, after=5.0, size=300, max_wal=200 << 20)
    ok = (res["errors"] == 0 and res["wal_drop_s"] is not None and res["wal_max_late"] is not None
          and res["wal_max_late"] <= tf.WAL_BOUND and tf.integrity(d.db) == ["ok"])
    d.stop()
    mb = lambda v: "%.1f MB" % (v / 1e6) if v is not None else "-"  # noqa: E731
    record("checkpoint starvation", "%d enqueues of 300 B in 16 s" % res["enqueued"], "reader held 10 s",
           "-wal %s -> peak %s, drop after %.2f s, then <= %s" % (
               mb(res["wal_before"]), mb(res["wal_peak_held"]), res["wal_drop_s"] or -1, mb(res["wal_max_late"])),
           0, "-", ok, str(res))


HOUR_MS = 3600 * 1000


def run_clock(env, args, rnd):
    """The wall clock stepped +-1 h five times under load, while one
    endpoint fails a third of its attempts (retries at 50 ms .. 1 s of
    backoff): every acknowledged event is delivered, every first attempt
    goes within STALL_S of its enqueue and every retry within its
    backoff's cap plus STALL_S of the attempt before. A step that held
    due rows or retries would hold them an hour."""
    STALL_S = 5.0          # slack for a shared, loaded machine; an error is an hour
    max_delay_s = 1.0
    seconds, rate = 24.0, 150.0
    # back, forward, forward, back, back: it ends an hour behind, where
    # anything a step held would stay held past the drain
    steps = [(3.0, -HOUR_MS), (7.0, HOUR_MS), (11.0, HOUR_MS), (15.0, -HOUR_MS), (19.0, -HOUR_MS)]
    fail_rnd = random.Random(rnd.random())

    def flaky(req):
        return 500 if fail_rnd.random() < 0.33 else 200

    rcv = env.receiver(200)
    rcv.set(flaky, path="/b")
    d = env.hookd(endpoints={"a": {"url": rcv.url("/a")},
                             "b": {"url": rcv.url("/b"), "max_attempts": 100}},
                  sections={"delivery": {"base_delay": "50ms", "max_delay": "1s"},
                            "breaker": {"failure_threshold": 100000}}, start=False)
    try:
        clock = tc.start_shifted(d)
    except Skipped as e:
        record("clock steps +-1 h", "-", "-", "-", "-", "-", False, "not run: %s" % e)
        return
    acked = {}             # event id -> monotonic time of its ack
    errors = []
    stop = threading.Event()

    def load():
        n = 0
        t0 = time.monotonic()
        with conftest.Client(d.sock) as c:
            while not stop.is_set():
                due = t0 + n / rate
                if due > time.monotonic():
                    time.sleep(due - time.monotonic())
                eid = "ck-%d" % n
                r = c.enqueue("a" if n % 2 else "b", {"n": n}, event_id=eid)
                if r.get("ok") is True:
                    acked[eid] = time.monotonic()
                else:
                    errors.append(r)
                n += 1

    th = threading.Thread(target=load, daemon=True)
    t_start = time.monotonic()
    th.start()
    for at, ms in steps:
        left = t_start + at - time.monotonic()
        if left > 0:
            stop.wait(left)
        clock.step(ms)
    stop.wait(max(0.0, t_start + seconds - time.monotonic()))
    stop.set()
    th.join(30)

    def drained():
        st = d.stats()
        return st["pending"] + st["awaiting_retry"] + st["in_flight"] == 0
    try:
        conftest.wait_until(drained, 60, msg="queue drained")
    except AssertionError:
        pass   # what did not drain is counted as lost below
    got = {}
    for r in rcv.snapshot():
        got.setdefault(r.event_id, []).append(r.t)
    delivered_ok = {r.event_id for r in rcv.snapshot() if r.reply is not None and r.reply.status == 200}
    lost = [e for e in acked if e not in delivered_ok]
    stalls = []
    for eid, t_ack in acked.items():
        times = sorted(got.get(eid, []))
        if not times:
            continue
        if times[0] - t_ack > STALL_S:
            stalls.append("%s first attempt %.1f s after its ack" % (eid, times[0] - t_ack))
        for a, b in zip(times, times[1:]):
            if b - a > max_delay_s + STALL_S:
                stalls.append("%s retried %.1f s after the attempt before (cap %.0f s)" % (eid, b - a, max_delay_s))
    seen = d.log().count("event=clock_step ")
    d.stop()
    retries = sum(len(v) - 1 for v in got.values())
    ok = not lost and not stalls and not errors and seen == len(steps)
    record("clock steps +-1 h", "%.0f s at %.0f enq/s, 2 endpoints, 1 failing 1/3" % (seconds, rate),
           "%d steps (%d seen by hookd)" % (len(steps), seen), "%d acked events, %d retries" % (len(acked), retries),
           len(lost), "-", ok,
           "lost %s; stalled %s; refused %s; steps logged %d of %d" % (lost[:5], stalls[:5], errors[:3], seen,
                                                                      len(steps)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kills", type=int, default=30)
    ap.add_argument("--seconds", type=float, default=600, help="time cap of the whole run (soft)")
    ap.add_argument("--rate", type=float, default=500.0, help="enqueues per second during the kill loop")
    ap.add_argument("--io-rounds", type=int, default=12)
    ap.add_argument("--cuts", type=int, default=50, help="power cuts (kill -9 with unsynced writes lost)")
    ap.add_argument("--cut-rate", type=float, default=5000.0, help="enqueues per second during the power cuts")
    ap.add_argument("--corrupt-inputs", type=int, default=40)
    ap.add_argument("--seed", type=int, default=int(os.environ["CHAOS_SEED"]) if os.environ.get("CHAOS_SEED") else None,
                    help="replay a run (default: $CHAOS_SEED, else random; printed at start and end)")
    ap.add_argument("--only", default="kills,powercut,io,full,corrupt,starvation,clock")
    args = ap.parse_args()
    if args.seed is None:
        args.seed = random.randrange(1 << 30)
    rnd = random.Random(args.seed)
    print("[chaos] hookd %s, seed %d" % (conftest.HOOKD_BIN, args.seed), flush=True)
    conftest.raise_nofile()

    def on_term(signo, frame):
        raise SystemExit(124)   # unwinds through the cleanups (daemons, mounts)

    signal.signal(signal.SIGTERM, on_term)
    t0 = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="hookd-chaos"))
    steps = [("kills", run_kills), ("powercut", run_powercut), ("io", run_io), ("full", run_disk_full), ("corrupt", run_corrupt),
             ("starvation", run_starvation), ("clock", run_clock)]
    only = set(args.only.split(","))
    for name, fn in steps:
        if name not in only:
            continue
        if time.monotonic() - t0 > args.seconds:
            record(name, "-", "-", "-", "-", "-", False, "not run: time cap of %.0f s reached" % args.seconds)
            continue
        env = Env(root / name)
        (root / name).mkdir()
        try:
            if fn in (run_io, run_corrupt, run_clock):
                fn(env, args, rnd)
            else:
                fn(env, args)
        except Skipped as e:   # a BaseException: not caught below
            skipped(name, str(e))
        except Exception as e:  # noqa: BLE001 - a crashed step is a failed step
            traceback.print_exc()
            record(name, "-", "-", "-", "?", "?", False, "step crashed: %r" % e)
        finally:
            env.cleanup()
    shutil.rmtree(root, ignore_errors=True)
    head = ("scenario", "load held", "faults injected", "inputs tried", "events lost", "duplicates seen", "verdict")
    print("\n| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in ROWS:
        print("| " + " | ".join(str(x) for x in r) + " |")
    print("\n[chaos] %.0f s, seed %d, %s" % (time.monotonic() - t0, args.seed,
                                              "FAILED:\n  " + "\n  ".join(FAILED) if FAILED else "all invariants held"))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
