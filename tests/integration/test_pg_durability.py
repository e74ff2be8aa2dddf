"""PostgreSQL durability: an enqueue hookd acknowledged on PostgreSQL
survives the server being killed (kill -9 of the postmaster and every
process of the cluster) under load.

The cluster here is a private one with PostgreSQL's durable defaults
(fsync on, whatever HOOKD_PG_DURABLE says) and wal_writer_delay at its
maximum, 10 s, so a commit that did not wait for its WAL flush
(synchronous_commit off) stays in the server's memory long enough for the
kill to lose it. A killed process loses what it had not written; the
page cache survives, so this is the process-crash half of durability;
fsync on is what makes the same acknowledgement hold through a power cut.
The mutant pg-synchronous-commit-off (tests/mutants) must fail here.
"""
import os
import shutil
import signal
import subprocess
import tempfile
import threading

from conftest import HOOKD_BIN, PgCluster, wait_until  # noqa: F401 (HOOKD_BIN: the binary under test)

OPTS = "-c wal_writer_delay=10000 -c synchronous_commit=on"
ROUNDS = 2


def cluster_env():
    return dict(os.environ, HOOKD_PG_DURABLE="1", HOOKD_PG_OPTS=OPTS)


def run(action, d):
    p = subprocess.run([PgCluster.SCRIPT, action, d], capture_output=True, text=True, timeout=120, env=cluster_env())
    assert p.returncode == 0, "cluster.sh %s: %s" % (action, p.stderr)
    return p.stdout.strip()


def kill_cluster(data):
    """SIGKILL the postmaster and each of its children, no shutdown of any."""
    with open(os.path.join(data, "postmaster.pid")) as f:
        pm = int(f.readline())
    kids = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % p) as f:
                stat = f.read()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pm:
            kids.append(int(p))
    for pid in [pm] + kids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    def gone():
        return all(not os.path.exists("/proc/%d" % pid) or open("/proc/%d/stat" % pid).read().split()[2] == "Z"
                   for pid in [pm] + kids)
    wait_until(gone, 10, msg="the cluster's processes gone")
    # a killed postmaster nobody reaps (a container's init may not) stays a
    # zombie that PostgreSQL's lock-file check takes for a live server
    os.unlink(os.path.join(data, "postmaster.pid"))
    lock = os.path.join(os.path.dirname(data), ".s.PGSQL.5432.lock")
    if os.path.exists(lock):
        os.unlink(lock)
    return 1 + len(kids)


def load(d, acked, stop, tag):
    """Enqueue until stopped or hookd goes away; record what was acknowledged."""
    n = 0
    try:
        with d.client(timeout=5) as c:
            while not stop.is_set():
                eid = "%s-%d" % (tag, n)
                n += 1
                r = c.enqueue("a", {"n": n, "pad": "x" * 200}, event_id=eid)
                if r.get("ok") is True:
                    acked.append(eid)
    except (OSError, EOFError, ValueError):
        pass


def test_kill9_of_the_postmaster_loses_no_acknowledged_event(hookd, receiver):
    tmp = tempfile.mkdtemp(prefix="hookd-pgdur.")
    try:
        conninfo = run("start", tmp)
        subprocess.run(["psql", conninfo, "-AtXq", "-c", "CREATE DATABASE dur"], check=True, capture_output=True,
                       timeout=60)
        ci = conninfo.replace("dbname=postgres", "dbname=dur")
        rcv = receiver(200)
        d = hookd(endpoints={"a": {"url": rcv.url("/a")}},
                  sections={"storage": {"backend": "postgres"}, "postgres": {"conninfo": ci}})
        acked = []
        for rnd in range(ROUNDS):
            if rnd:
                run("up", tmp)
                d.start()
            before = len(acked)
            stop = threading.Event()
            threads = [threading.Thread(target=load, args=(d, acked, stop, "r%dt%d" % (rnd, t))) for t in range(4)]
            for t in threads:
                t.start()
            wait_until(lambda: len(acked) - before >= 400, 30, msg="400 acknowledged enqueues")
            killed = kill_cluster(os.path.join(tmp, "data"))
            assert killed >= 3, "postmaster and its children"
            stop.set()
            d.kill()
            for t in threads:
                t.join(30)
        run("up", tmp)
        out = subprocess.run(["psql", ci, "-AtXq", "-c", "SELECT event_id FROM hookd_queue"], capture_output=True,
                             text=True, timeout=60, check=True).stdout.split()
        stored = set(out)
        lost = [e for e in acked if e not in stored]
        assert not lost, "%d of %d acknowledged events lost after kill -9 of PostgreSQL: %s" % (
            len(lost), len(acked), lost[:10])
        # hookd starts on the recovered database and keeps delivering
        d.start()
        wait_until(lambda: d.stats()["pending"] == 0 and d.stats()["in_flight"] == 0, 30, msg="queue drained")
        d.stop()
    finally:
        subprocess.run([PgCluster.SCRIPT, "stop", tmp], capture_output=True, timeout=120)
        shutil.rmtree(tmp, ignore_errors=True)
