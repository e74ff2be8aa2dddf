"""hookd backup / hookd restore.

- a backup taken while events stream in and deliveries settle is one
  consistent snapshot: integrity_check ok, every event acknowledged before
  it began is in it, nothing acknowledged only after it ended;
- it never overwrites a file; restore refuses a running daemon, a foreign
  or damaged copy and the live database itself, leaving everything as it was;
- restored, hookd serves the copy: its waiting rows are delivered, the
  replaced database is kept beside it, whole.
"""
import sqlite3
import threading

import pytest

from conftest import Reply, wait_until

# hookd backup and restore copy the SQLite file; on PostgreSQL the database
# is backed up with pg_dump or pg_basebackup (hookd backup says so)
pytestmark = pytest.mark.sqlite_only("hookd backup/restore copy the SQLite file (PostgreSQL: pg_dump)")


def integrity(path):
    con = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    try:
        return con.execute("PRAGMA integrity_check").fetchall(), \
            dict(con.execute("SELECT status, count(*) FROM webhook_queue GROUP BY status").fetchall()), \
            {r[0] for r in con.execute("SELECT event_id FROM webhook_queue")}
    finally:
        con.close()


def test_backup_under_load_is_one_consistent_snapshot(hookd, receiver, tmp_path):
    rcv = receiver(200)
    d = hookd(endpoints={"live": {"url": rcv.url("/live")}, "held": {"url": rcv.url("/held"), "paused": "yes"}})
    acked = []          # (event_id, monotonic index) in ack order
    stop = threading.Event()

    def stream():
        with d.client() as c:
            i = 0
            while not stop.is_set() and i < 20000:
                for ep in ("live", "held"):
                    r = c.enqueue(ep, {"n": i}, event_id="e%s%d" % (ep, i))
                    assert r.get("ok") is True, r
                    acked.append("e%s%d" % (ep, i))
                i += 1

    t = threading.Thread(target=stream)
    t.start()
    try:
        wait_until(lambda: len(acked) > 2000, 30, msg="a stream under way")
        before = len(acked)
        out = tmp_path / "copy.db"
        p = d.cli("backup", out)
        after = len(acked)
    finally:
        stop.set()
        t.join(60)
    assert p.returncode == 0, p.stderr
    assert "backed up" in p.stdout and str(out) in p.stdout
    assert not (tmp_path / "copy.db.tmp").exists()
    checks, statuses, ids = integrity(out)
    assert checks == [("ok",)]
    assert set(acked[:before]) <= ids, "an event acknowledged before the backup began is missing"
    assert ids <= set(acked[:after]) | set(acked[after:after + 64]), "events from nowhere"
    assert statuses.get("delivered", 0) > 0 and statuses.get("pending", 0) > 0, statuses
    # never overwritten
    again = d.cli("backup", out)
    assert again.returncode == 1 and "exists" in again.stderr
    assert integrity(out)[0] == [("ok",)]


def test_restore_puts_the_copy_back_and_keeps_the_old_database(hookd, receiver, tmp_path):
    rcv = receiver(Reply(200))
    d = hookd(endpoints={"a": {"url": rcv.url("/a"), "paused": "yes"}})
    kept = [d.enqueue("a", {"n": i}, event_id="kept%d" % i)["id"] for i in range(5)]
    copy = tmp_path / "copy.db"
    assert d.cli("backup", copy).returncode == 0
    later = [d.enqueue("a", {"n": i}, event_id="later%d" % i)["id"] for i in range(3)]

    # refused while hookd runs; nothing moved
    p = d.cli("restore", copy)
    assert p.returncode == 1 and "stop it first" in p.stderr, p.stderr
    assert len(d.sql("SELECT id FROM webhook_queue")) == 8
    d.stop()

    # a foreign file, a damaged copy and the live database itself: refused, untouched
    junk = tmp_path / "junk.db"
    junk.write_text("not a database at all, just text\n" * 200)
    damaged = tmp_path / "damaged.db"
    raw = bytearray(copy.read_bytes())
    for off in range(4096, len(raw), 4096):   # every b-tree page header but the first
        raw[off:off + 8] = b"\xff" * 8
    damaged.write_bytes(bytes(raw))
    before = sorted(p.name for p in d.dir.iterdir())
    for bad, why in ((junk, "cannot read it as a database"), (damaged, "damaged"), (d.db, "the database itself"),
                     (tmp_path / "missing.db", "")):
        p = d.cli("restore", bad)
        assert p.returncode == 1, (bad, p.stdout, p.stderr)
        assert why in p.stderr, p.stderr
    assert sorted(p.name for p in d.dir.iterdir()) == before
    assert not list(tmp_path.glob("*.db-wal")) and not list(tmp_path.glob("*.db-shm"))

    p = d.cli("restore", copy)
    assert p.returncode == 0, p.stderr
    aside = [x for x in d.dir.iterdir() if ".pre-restore-" in x.name and not x.name.endswith("-wal")]
    assert len(aside) == 1 and str(aside[0]) in p.stdout
    checks, _, ids = integrity(aside[0])
    assert checks == [("ok",)] and ids == {"kept%d" % i for i in range(5)} | {"later%d" % i for i in range(3)}

    # the copy is served: its rows, delivered once resumed; the later ones were never in it
    d.start()
    assert sorted(r[0] for r in d.sql("SELECT id FROM webhook_queue")) == kept
    assert d.cli("resume", "a").returncode == 0
    wait_until(lambda: d.statuses().get("delivered", 0) == 5, 15, msg="the restored rows delivered")
    assert sorted(r.event_id for r in rcv.requests) == sorted("kept%d" % i for i in range(5))
    assert all(d.row(m) is None for m in later if m not in kept)
