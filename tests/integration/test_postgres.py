"""hookd on PostgreSQL ([storage] backend = postgres), one node.

A private, throwaway cluster per test module (tests/pg/cluster.sh: initdb
into a temp directory, Unix socket only) and a database per test:

- deliveries end to end, and kill -9 after acknowledgements loses nothing;
- the seed design's own read queries (the one-row health summary,
  analyze_dead_letters, get_slow_endpoints), copied from the article,
  run unchanged against hookd's database and give the right answers;
- a second process with the same node name is refused; one with a name
  of its own joins (several nodes: test_cluster.py); a node restarted
  while its old session still holds the name's lock waits for it;
- the database going away: enqueues answer storage_unavailable, hookd
  keeps running, reconnects, settles the deliveries that ended meanwhile
  and delivers what it had acknowledged; SIGTERM while it is away exits
  within the grace period, the message delivered again at the next start;
- kill -9 five times under load: every acknowledged event delivered;
- a queue moved from SQLite to PostgreSQL with export/import arrives
  whole, delivered once, bytes intact;
- a database of an older schema version is migrated at start, its rows
  kept (version 6 to 7: waiting rows get no deliver_at);
- configuration: postgres without conninfo is refused, a password in the
  conninfo is never printed.
"""
import os
import shutil
import subprocess


from conftest import HOOKD_BIN, ROOT, SECRET_A, PgCluster, Reply, error_code, verify_signature, wait_until

def pg_sections(conninfo, extra=None):
    s = {"storage": {"backend": "postgres"}, "postgres": {"conninfo": conninfo}}
    for k, v in (extra or {}).items():
        s.setdefault(k, {}).update(v)
    return s


def test_delivers_and_kill9_loses_nothing(hookd, receiver, pgdb):
    ci, sql = pgdb
    rcv = receiver(200)
    d = hookd(endpoints={"a": {"url": rcv.url("/a"), "secret": SECRET_A}}, sections=pg_sections(ci))
    acked = []
    with d.client() as c:
        reqs = [{"op": "enqueue", "endpoint": "a", "event_id": "e%d" % i, "payload": {"i": i, "click": "c%d" % i}}
                for i in range(300)]
        for req, rep in zip(reqs, c.pipeline(reqs)):
            assert rep.get("ok") is True, rep
            acked.append(req["event_id"])
    d.kill()   # right after the last acknowledgement
    stored = {r[0] for r in sql("SELECT event_id FROM webhook_queue")}
    assert set(acked) <= stored, "acknowledged but not stored: %s" % sorted(set(acked) - stored)[:5]
    d.start()
    wait_until(lambda: set(acked) <= set(rcv.event_ids()), 30, msg="all 300 delivered after the restart")
    d.idle()
    # signed as with SQLite, body bytes as enqueued
    r = rcv.snapshot()[0]
    assert verify_signature(SECRET_A, r.headers, r.body)
    rows = dict((k, int(v)) for k, v in sql("SELECT status, count(*) FROM webhook_queue GROUP BY status"))
    assert rows == {"delivered": 300}, rows
    s = d.stats()
    assert s["pending"] == 0 and s["dead_letter"] == 0, s


# The seed design's read queries, as the article writes them (its Python
# passes the numbers as parameters; here they are written in).
SEED_HEALTH_SUMMARY = """
SELECT
    -- Queue depth
    COUNT(*) FILTER (WHERE status = 'pending') AS pending,
    COUNT(*) FILTER (WHERE status = 'failed') AS awaiting_retry,
    COUNT(*) FILTER (WHERE status = 'in_flight') AS in_flight,
    COUNT(*) FILTER (WHERE status = 'dead_letter') AS dead_letter,

    -- Delivery rate (last hour)
    COUNT(*) FILTER (
        WHERE status = 'delivered'
        AND delivered_at >= NOW() - INTERVAL '1 hour'
    ) AS delivered_last_hour,

    -- Failure rate (last hour)
    COUNT(*) FILTER (
        WHERE status IN ('failed', 'dead_letter')
        AND created_at >= NOW() - INTERVAL '1 hour'
    ) AS failed_last_hour,

    -- Oldest undelivered
    MIN(created_at) FILTER (
        WHERE status IN ('pending', 'failed')
    ) AS oldest_pending,

    -- Average delivery latency (last hour, successful only)
    AVG(last_response_ms) FILTER (
        WHERE status = 'delivered'
        AND delivered_at >= NOW() - INTERVAL '1 hour'
    ) AS avg_delivery_ms_last_hour

FROM webhook_queue;
"""

SEED_DEAD_LETTERS = """
        SELECT
            endpoint_id,
            endpoint_url,
            COUNT(*) AS dead_count,

            -- Most common error
            MODE() WITHIN GROUP (ORDER BY last_error) AS primary_error,

            -- Most common status code
            MODE() WITHIN GROUP (ORDER BY last_status_code)
                AS primary_status_code,

            -- Timing
            MIN(created_at) AS first_dead,
            MAX(created_at) AS last_dead,

            -- Average attempts before giving up
            AVG(attempt_count)::INTEGER AS avg_attempts

        FROM webhook_queue
        WHERE status = 'dead_letter'
          AND created_at >= NOW() - INTERVAL '24 hours'
        GROUP BY endpoint_id, endpoint_url
        ORDER BY dead_count DESC
        LIMIT 20
"""

SEED_SLOW = """
        SELECT endpoint_id, endpoint_url,
               p50_ms, p95_ms, p99_ms, sample_count,
               state, consecutive_failures
        FROM endpoint_health
        WHERE p95_ms > %d
          AND sample_count >= 20  -- need sufficient samples
        ORDER BY p95_ms DESC
"""


def test_seed_queries_run_unchanged(hookd, receiver, pgdb):
    ci, sql = pgdb
    rcv = receiver(200)
    rcv.set(Reply(500), "/dead")
    d = hookd(endpoints={"ok": {"url": rcv.url("/ok")},
                         "dead": {"url": rcv.url("/dead"), "max_attempts": 2}},
              sections=pg_sections(ci, {"latency": {"rollup_interval": "1s"}}))
    with d.client() as c:
        for i in range(30):
            assert c.enqueue("ok", {"i": i}, event_id="o%d" % i)["ok"] is True
        for i in range(4):
            assert c.enqueue("dead", {"i": i}, event_id="d%d" % i)["ok"] is True
    wait_until(lambda: d.stats()["dead_letter"] == 4 and rcv.count("/ok") >= 30, 20, msg="30 delivered, 4 dead")
    d.idle()

    (row,) = sql(SEED_HEALTH_SUMMARY)
    pending, retry, in_flight, dead, delivered_hour, failed_hour, oldest, avg_ms = row
    assert (pending, retry, in_flight, dead) == ("0", "0", "0", "4"), row
    assert delivered_hour == "30" and failed_hour == "4", row
    assert oldest == "" and float(avg_ms) >= 0, row

    groups = sql(SEED_DEAD_LETTERS)
    assert len(groups) == 1, groups
    ep_id, url, count, primary_error, primary_status, first, last, avg_attempts = groups[0]
    assert url == rcv.url("/dead") and count == "4" and primary_status == "500" and avg_attempts == "2", groups
    assert primary_error, groups
    assert first <= last

    # the rollup fills p50/p95/p99 and sample_count as the seed's does
    wait_until(lambda: sql("SELECT sample_count FROM endpoint_health h JOIN endpoints e ON e.id = h.endpoint_id "
                           "WHERE e.name = 'ok'") == [["30"]], 15, msg="rollup of 30 samples")
    slow = sql(SEED_SLOW % -1)
    assert [r[1] for r in slow] == [rcv.url("/ok")], slow
    assert sql(SEED_SLOW % 2000) == []
    # the seed's percentile query reads the latency ring
    (p,) = sql("SELECT COUNT(*), percentile_cont(0.50) WITHIN GROUP (ORDER BY response_ms) FROM endpoint_latency "
               "WHERE endpoint_id = %s AND measured_at >= NOW() - INTERVAL '24 hours'" % slow[0][0])
    assert p[0] == "30", p


def test_searches_have_indexes(hookd, pgdb):
    """The searches that promise an index have one on PostgreSQL too (the
    plans with sequential scans priced out: a table this small is always
    read whole otherwise): an event id, dead letters, one endpoint's dead
    letters, the walk from an id down (and its window probes), and one
    endpoint's span of ids."""
    ci, sql = pgdb
    d = hookd(endpoints={"a": {"url": "http://127.0.0.1:9/a", "paused": True}}, sections=pg_sections(ci))
    with d.client() as c:
        for i in range(20):
            assert c.enqueue("a", {"i": i}, event_id="e%d" % i)["ok"] is True
    found = d.request({"op": "messages", "event_id": "e7"})
    assert [m["event_id"] for m in found["messages"]] == ["e7"], found

    def plan(where):
        rows = sql("SET enable_seqscan = off; EXPLAIN SELECT q.id FROM hookd_queue q WHERE %s "
                   "ORDER BY q.id DESC LIMIT 500" % where)
        return "\n".join(r[0] for r in rows)
    assert "idx_queue_event" in plan("q.event_id = 'e7'")
    assert "idx_queue_dead_id" in plan("q.status = 'dead_letter' AND q.id < 100")
    assert "idx_queue_dead_ep" in plan("q.status = 'dead_letter' AND q.endpoint_id = 1 AND q.id < 100")
    assert "hookd_queue_pkey" in plan("q.id < 100")
    # one endpoint's rows: a span of ids, never the dedup key (endpoint first)
    by_ep = plan("q.endpoint_id + 0 = 1 AND q.id < 100 AND q.id >= 1")
    assert "hookd_queue_pkey" in by_ep and "endpoint_id_event_id" not in by_ep, by_ep


def test_schema_applied_by_operator_then_a_role_without_create(hookd, receiver, pgdb):
    """hookd schema-sql is the DDL; applied by the operator, a role that may
    only read and write the tables runs hookd (no CREATE needed)."""
    ci, sql = pgdb
    ddl = subprocess.run([HOOKD_BIN, "schema-sql"], capture_output=True, text=True, timeout=30)
    assert ddl.returncode == 0 and "CREATE TABLE hookd_queue" in ddl.stdout, ddl.stderr
    out = subprocess.run(["psql", ci, "-qAtX", "-v", "ON_ERROR_STOP=1"], input=ddl.stdout, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    role = "app%d" % os.getpid()
    sql("CREATE ROLE %s LOGIN; REVOKE CREATE ON SCHEMA public FROM PUBLIC; "
                 "GRANT USAGE ON SCHEMA public TO %s; "
                 "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO %s; "
                 "GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO %s" % (role, role, role, role))
    rcv = receiver(200)
    d = hookd(endpoints={"a": {"url": rcv.url("/a")}},
              sections=pg_sections(ci.replace("user=hookd", "user=" + role)))
    assert d.enqueue("a", {"x": 1}, event_id="r1")["ok"] is True
    wait_until(lambda: rcv.count() == 1, 15, msg="delivered by the restricted role")
    assert "schema_migrated" not in d.log()


def test_version_6_database_migrates_keeping_rows(hookd, receiver, pgdb):
    """A database a hookd of schema version 6 left: at start hookd applies
    version 7 (deliver_at), the waiting row keeps its times, has no
    deliver_at (version 6 stored none: its due time stays a wait) and is
    delivered."""
    ci, sql = pgdb
    files = sorted((ROOT / "schema" / "postgres").glob("*.sql"))
    assert files[6].name.startswith("007_"), files
    ddl = ("BEGIN;\nCREATE TABLE hookd_schema (version integer NOT NULL);\n" +
           "".join(f.read_text() for f in files[:6]) +
           "INSERT INTO hookd_schema (version) VALUES (1), (2), (3), (4), (5), (6);\nCOMMIT;\n")
    out = subprocess.run(["psql", ci, "-qAtX", "-v", "ON_ERROR_STOP=1"], input=ddl, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    sql("INSERT INTO endpoints (name, url, source, created_at, updated_at) "
        "VALUES ('a', 'http://127.0.0.1:9/', 'config', now(), now())")
    sql("INSERT INTO hookd_queue (endpoint_id, event_id, payload, created_at, next_attempt_at) "
        "SELECT id, 'old', convert_to('{}', 'UTF8'), now() - interval '1 minute', "
        "now() - interval '1 minute' FROM endpoints")
    rcv = receiver(200)
    d = hookd(endpoints={"a": {"url": rcv.url("/a")}}, sections=pg_sections(ci))
    assert "event=schema_migrated backend=postgres from=6 to=7" in d.log(), d.log()[-2000:]
    wait_until(lambda: rcv.count() == 1, 15, msg="the row from version 6 delivered")
    assert rcv.snapshot()[0].event_id == "old"
    assert sql("SELECT max(version) FROM hookd_schema") == [["7"]]
    assert sql("SELECT event_id, deliver_at IS NULL FROM hookd_queue") == [["old", "t"]]


def test_same_node_name_refused(hookd, pgdb):
    """Two processes with one node name would each hand the other's rows
    in flight back to the queue at start: the second is refused, one with
    a name of its own joins."""
    ci, sql = pgdb
    hookd(name="one", sections=pg_sections(ci))
    two = hookd(name="two", sections=pg_sections(ci), start=False)
    two.start(wait=False)
    rc = two.proc.wait(30)
    assert rc != 0
    assert "another hookd process runs as node" in two.log(), two.log()[-2000:]
    three = hookd(name="three", sections=pg_sections(ci, {"postgres": {"node_name": "three"}}))
    assert three.running
    names = sorted(r[0] for r in sql("SELECT name FROM hookd_node"))
    assert len(names) == 2 and "three" in names, names


def test_node_lock_of_a_session_that_is_ending_is_waited_for(hookd, pgdb):
    """Restarted right after kill -9, a node can find its old session still
    holding its name's lock until the server notices the client is gone (a
    CI run was refused 0.2 s after the kill). It waits for the lock, up to
    5 s, instead of refusing; a holder that keeps it is refused after that
    wait, the message saying how long."""
    ci, sql = pgdb
    lock = "SELECT pg_advisory_lock(hashtext('hookd.node:' || current_schema() || ':' || 'n1'))"

    def hold(seconds):
        p = subprocess.Popen(["psql", ci, "-AtX", "-v", "ON_ERROR_STOP=1", "-c",
                              "%s; SELECT pg_sleep(%s)" % (lock, seconds)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_until(lambda: sql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted")[0][0] == "1",
                   10, msg="the lock held by another session")
        return p

    holder = hold(1.5)
    try:
        d = hookd(name="waits", sections=pg_sections(ci, {"postgres": {"node_name": "n1"}}))
        assert d.running
        assert "event=node_lock_waited node=n1" in d.log(), d.log()[-2000:]
        d.stop()
    finally:
        holder.kill()
        holder.wait()
    wait_until(lambda: sql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted")[0][0] == "0",
               10, msg="the lock released")
    holder = hold(60)
    try:
        two = hookd(name="refused", sections=pg_sections(ci, {"postgres": {"node_name": "n1"}}), start=False)
        two.start(wait=False)
        assert two.proc.wait(30) != 0
        assert "another hookd process runs as node n1 on this database (its lock held for" in two.log(), \
            two.log()[-2000:]
    finally:
        holder.kill()
        holder.wait()


def test_database_restart_answers_unavailable_then_recovers(hookd, receiver, tmp_path):
    own = PgCluster()   # this test stops its server: not the shared one
    try:
        own.start()
        ci = own.new_db("blink")
        rcv = receiver(200)
        rcv.set(Reply(200, delay=1.5), "/slow")
        d = hookd(endpoints={"a": {"url": rcv.url("/a")}, "s": {"url": rcv.url("/slow"), "timeout": "10s"}},
                  sections=pg_sections(ci))
        with d.client() as c:
            for i in range(20):
                assert c.enqueue("a", {"i": i}, event_id="before%d" % i)["ok"] is True
            for i in range(3):
                assert c.enqueue("s", {"i": i}, event_id="slow%d" % i)["ok"] is True
        wait_until(lambda: rcv.count("/a") >= 20, 15, msg="first 20 delivered")
        rcv.wait_for(1, 15, path="/slow")   # a slow delivery is under way: it ends while the database is down
        own.down()
        with d.client() as c:
            r = c.enqueue("a", {"i": -1}, event_id="while-down")
        assert r.get("ok") is not True and error_code(r) == "storage_unavailable", r
        assert d.running, "hookd must not exit because the database went away"
        wait_until(lambda: any(q.t_done for q in rcv.snapshot("/slow")), 15, msg="a slow delivery answered")
        own.up()
        acked = []

        def enqueue_ok():
            with d.client() as c:
                r = c.enqueue("a", {"i": 99}, event_id="after")
            return r.get("ok") is True

        wait_until(enqueue_ok, 20, msg="enqueue accepted again after the restart")
        with d.client() as c:
            for i in range(20):
                r = c.enqueue("a", {"i": i}, event_id="later%d" % i)
                assert r["ok"] is True, r
                acked.append("later%d" % i)
        wait_until(lambda: set(acked + ["after"]) <= set(rcv.event_ids()), 20, msg="delivered after reconnecting")
        d.idle(30)
        assert "while-down" not in rcv.event_ids()
        assert "pg_reconnected" in d.log()
        # the results of the deliveries that ended while the database was
        # down were kept and settled: each slow message sent once, delivered
        slow = sorted(rcv.event_ids("/slow"))
        assert len(slow) == 3 and len(set(slow)) == 3, slow
        assert d.sql("SELECT status, count(*) FROM webhook_queue WHERE event_id LIKE 'slow%' GROUP BY status") == \
            [("delivered", 3)]
    finally:
        own.stop()


def test_shutdown_while_database_down_exits_and_redelivers(hookd, receiver):
    """SIGTERM while the database is away and a result is waiting to be
    recorded: hookd exits within its grace period instead of waiting for
    ever; the message goes back to the queue at the next start."""
    own = PgCluster()
    try:
        own.start()
        ci = own.new_db("away")
        rcv = receiver(200)
        rcv.set(Reply(200, delay=1.0), "/slow")
        d = hookd(endpoints={"s": {"url": rcv.url("/slow")}},
                  sections=pg_sections(ci, {"delivery": {"shutdown_grace": "2s"}}))
        assert d.enqueue("s", {"i": 1}, event_id="s1")["ok"] is True
        rcv.wait_for(1, 15, path="/slow")
        own.down()
        wait_until(lambda: any(q.t_done for q in rcv.snapshot("/slow")), 15, msg="the delivery answered")
        assert d.terminate(timeout=20) == 0
        assert "results_not_saved" in d.log()
        own.up()
        d.start()
        wait_until(lambda: rcv.count("/slow") >= 2, 20, msg="delivered again after the restart")
        d.idle(20)
        assert d.sql("SELECT status FROM webhook_queue WHERE event_id = 's1'") == [("delivered",)]
    finally:
        own.stop()


def test_kill9_loop_under_load_loses_nothing(hookd, receiver, pgdb):
    """Five kill -9 under a steady stream of enqueues and deliveries: every
    acknowledged event is in the database afterwards and is delivered;
    duplicates only from what was in flight at a kill."""
    ci, sql = pgdb
    rcv = receiver(200)
    d = hookd(endpoints={"a": {"url": rcv.url("/a")}}, sections=pg_sections(ci))
    acked = set()
    n = 0
    for kill in range(5):
        with d.client(timeout=30) as c:
            for _ in range(4):
                reqs = [{"op": "enqueue", "endpoint": "a", "event_id": "k%d" % (n + i), "payload": {"n": n + i}}
                        for i in range(100)]
                for req, rep in zip(reqs, c.pipeline(reqs)):
                    assert rep.get("ok") is True, rep
                    acked.add(req["event_id"])
                n += 100
        d.kill()   # deliveries of this batch still under way
        d.start()
    wait_until(lambda: acked <= set(rcv.event_ids()), 60, msg="every acknowledged event delivered")
    d.idle(30)
    stored = {r[0] for r in sql("SELECT event_id FROM webhook_queue WHERE status = 'delivered'")}
    assert acked <= stored
    ids = rcv.event_ids()
    dups = len(ids) - len(set(ids))
    print("pg kill -9 loop: %d acknowledged, %d requests, %d duplicates" % (len(acked), len(ids), dups))
    # at most what one endpoint can have in flight at each kill
    assert dups <= 5 * 64, dups


def test_queue_moves_from_sqlite_to_postgres(hookd, receiver, pgdb, tmp_path):
    ci, sql = pgdb
    rcv = receiver(200)
    # paused: everything waits, due now
    src = hookd(name="src", endpoints={"a": {"url": rcv.url("/a"), "secret": SECRET_A, "paused": "yes"}})
    bodies = {}
    with src.client() as c:
        for i in range(50):
            body = '{"z":%d, "a":"caf\\u00e9 \u00e9", "k":[3,1]}' % i
            c.send_line('{"op":"enqueue","endpoint":"a","event_id":"m%d","payload":%s}' % (i, body))
            assert c.recv_json()["ok"] is True
            bodies["m%d" % i] = body.encode()
    src.stop()
    f = tmp_path / "queue.ndjson"
    out = src.cli("export", f)
    assert out.returncode == 0, out.stderr

    dst = hookd(name="dst", endpoints={"a": {"url": rcv.url("/a"), "secret": SECRET_A}},
                sections=pg_sections(ci), start=False)
    # the export's secrets are sealed under src's key: the new box needs it
    (dst.db.parent / "secret.key").unlink(missing_ok=True)
    shutil.copy2(src.db.parent / "secret.key", dst.db.parent / "secret.key")
    out = dst.cli("import", f)
    assert out.returncode == 0, out.stderr
    again = dst.cli("import", f)
    assert again.returncode == 0, again.stderr
    assert sql("SELECT count(*) FROM hookd_queue") == [["50"]]
    dst.start()
    wait_until(lambda: rcv.count() >= 50, 20, msg="50 moved messages delivered")
    dst.idle()
    got = {r.event_id: r for r in rcv.snapshot()}
    assert len(rcv.snapshot()) == 50 and set(got) == set(bodies)
    for eid, r in got.items():
        assert r.body == bodies[eid], eid
        assert verify_signature(SECRET_A, r.headers, r.body)


def test_config_needs_conninfo_and_hides_password(hookd, tmp_path):
    d = hookd(sections={"storage": {"backend": "postgres"}}, start=False)
    out = d.cli("check-config")
    assert out.returncode != 0 and "needs [postgres] conninfo" in out.stderr + out.stdout
    d.write_config(dict(d.sections, postgres={"conninfo": "host=/nowhere user=x password=Sup3rS3cret dbname=y"}))
    out = d.cli("check-config")   # prints the configuration, then tries it
    assert out.returncode != 0 and "cannot be reached" in out.stderr, out.stderr
    assert "password=***" in out.stdout and "Sup3rS3cret" not in out.stdout + out.stderr
    # SQLite's backup and restore say what to use instead
    for cmd in (("backup", tmp_path / "b.db"), ("restore", tmp_path / "b.db")):
        out = d.cli(*cmd)
        assert out.returncode != 0 and ("pg_dump" in out.stderr or "pg_restore" in out.stderr), (cmd, out.stderr)
    d.write_config(dict(d.sections, postgres={"conninfo": "postgresql://u:Sup3rS3cret@/db?host=/nowhere"}))
    d.start(wait=False)
    assert d.proc.wait(30) != 0
    assert "Sup3rS3cret" not in d.log()
    assert "postgres" in d.log()
