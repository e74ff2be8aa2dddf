"""hookd export / hookd import: moving a queue to another hookd.

- everything waiting moves (pending, awaiting retry, in flight) and so do
  dead letters and the endpoints made through the API, secrets and pause
  included; on the new side every message is delivered exactly once, its
  body byte for byte what was enqueued, signed with the secret that moved
  with it;
- the receiving side's own endpoint definitions win; importing the same
  file again adds nothing; a cut-short file stores whole batches and says
  so, and finishing with the whole file adds only the rest;
- import refuses a running daemon; export never overwrites and its file is
  0600; the secrets in it are sealed under the exporting side's key file,
  which the importing side needs (and without it, import says so);
- a due time given as deliver_at moves as a time on the wall clock
  (the mark clock steps leave alone), a delay's as a wait.
"""
import json
import os
import shutil
import stat
import time

from conftest import Reply, verify_signature, wait_until

S_CFG = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
S_API = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
# key order, UTF-8, escapes: the bytes that are signed must survive the trip
BODY = '{"z":%d, "a":"caf\\u00e9 \u00e9 \\"q\\"\\n", "list":[3,1,2]}'


def raw_enqueue(c, ep, eid, n):
    body = BODY % n
    c.send_line('{"op":"enqueue","endpoint":"%s","event_id":"%s","payload":%s}' % (ep, eid, body))
    r = c.recv_json()
    assert r.get("ok") is True, r
    return body.encode()


def test_a_queue_moves_to_another_hookd_exactly_once(hookd, receiver, tmp_path):
    rcv = receiver(200)
    rcv.set(Reply(500), "/dead")
    rcv.set(Reply(503), "/retry")
    a = hookd(name="a", endpoints={"cfg": {"url": rcv.url("/cfg-a"), "secret": S_CFG, "paused": "yes"},
                                   "dead": {"url": rcv.url("/dead"), "max_attempts": 1},
                                   "retry": {"url": rcv.url("/retry"), "max_attempts": 5}},
              sections={"delivery": {"base_delay": "1h", "max_delay": "1h"}})
    r = a.request({"op": "endpoint.put", "name": "api", "url": rcv.url("/api"), "secret": S_API,
                   "header": ["X-Tenant: t1"]})
    assert r["ok"] is True, r
    assert a.cli("pause", "api").returncode == 0
    sent = {}
    with a.client() as c:
        for i in range(40):
            sent["c%d" % i] = ("cfg", raw_enqueue(c, "cfg", "c%d" % i, i))
            sent["p%d" % i] = ("api", raw_enqueue(c, "api", "p%d" % i, i))
        for i in range(2):
            raw_enqueue(c, "dead", "d%d" % i, i)
            sent["r%d" % i] = ("retry", raw_enqueue(c, "retry", "r%d" % i, i))
    wait_until(lambda: a.statuses().get("dead_letter", 0) == 2 and a.statuses().get("failed", 0) == 2, 15,
               msg="2 dead letters, 2 awaiting retry")
    before = len(rcv.requests)

    # export while running: allowed, with a note; stopped: the move
    busy = a.cli("export", tmp_path / "while-running.ndjson")
    assert busy.returncode == 0 and "hookd is running" in busy.stderr, busy.stderr
    a.stop()
    out = tmp_path / "queue.ndjson"
    p = a.cli("export", out)
    assert p.returncode == 0, p.stderr
    assert "84 messages (80 pending, 2 awaiting retry, 2 dead letters)" in p.stderr, p.stderr
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert lines[0]["kind"] == "hookd-export" and lines[-1] == {"kind": "end", "endpoints": 4, "messages": 84}
    again = a.cli("export", out)
    assert again.returncode == 1 and "exists" in again.stderr
    # secrets and header values travel sealed
    text = out.read_text()
    for s in (S_CFG, S_API, S_CFG[6:], S_API[6:], "X-Tenant: t1"):
        assert s not in text, s
    assert '"X-Tenant:enc1:' in text

    # B: its own cfg (another URL, same secret), nothing else; stopped while importing.
    # Without A's key the sealed secrets cannot be opened: import says so.
    b = hookd(name="b", start=False, endpoints={"cfg": {"url": rcv.url("/cfg-b"), "secret": S_CFG}})
    p = b.cli("import", out)
    assert p.returncode != 0 and "another key" in p.stderr and "key_file" in p.stderr, p.stderr
    os.unlink(b.db.parent / "secret.key")
    shutil.copy2(a.db.parent / "secret.key", b.db.parent / "secret.key")
    p = b.cli("import", out)
    assert p.returncode == 0, p.stderr
    assert "imported 84 messages (80 pending, 2 awaiting retry, 2 dead letters), 0 already here" in p.stdout, p.stdout
    # cfg is b's own (configured here): it stays as b defines it
    assert "endpoints: 3 created, 1 already here" in p.stdout, p.stdout
    assert "(they came from the other side's configuration): dead, retry" in p.stdout, p.stdout
    p = b.cli("import", out)
    assert p.returncode == 0 and "imported 0 messages" in p.stdout and "84 already here" in p.stdout, p.stdout

    b.start()
    p = b.cli("import", out)
    # refused while b runs (on PostgreSQL by the node lock b holds)
    assert p.returncode == 1 and ("stop it first" in p.stderr or
                                  (b.pg and "another hookd process runs" in p.stderr)), p.stderr
    assert b.cli("resume", "api").returncode == 0
    wait_until(lambda: len([r for r in rcv.requests[before:] if r.path in ("/cfg-b", "/api")]) >= 80, 20,
               msg="the moved messages delivered by b")
    got = {}
    for r in rcv.requests[before:]:
        if r.path in ("/cfg-b", "/api"):
            assert r.event_id not in got, "delivered twice: %s" % r.event_id
            got[r.event_id] = r
    assert set(got) == {k for k, v in sent.items() if v[0] in ("cfg", "api")}
    for eid, r in got.items():
        ep, body = sent[eid]
        assert r.body == body, eid
        assert verify_signature(S_CFG if ep == "cfg" else S_API, r.headers, r.body), eid
        if ep == "api":
            assert r.headers.get("x-tenant") == "t1"
    assert not [r for r in rcv.requests[before:] if r.path == "/cfg-a"], "b keeps its own definition of cfg"
    st = b.statuses()
    assert st.get("dead_letter") == 2 and st.get("failed") == 2, st
    dead = b.sql("SELECT last_error_class, attempt_count FROM webhook_queue WHERE status = 'dead_letter'")
    assert dead == [("http_500", 1), ("http_500", 1)]


def test_a_cut_short_file_stores_whole_batches_and_the_rest_follows(hookd, tmp_path):
    a = hookd(name="a", endpoints={"held": {"url": "http://127.0.0.1:9/x", "paused": "yes"}})
    with a.client() as c:
        for i in range(2500):
            raw_enqueue(c, "held", "h%d" % i, i)
    a.stop()
    full = tmp_path / "full.ndjson"
    assert a.cli("export", full).returncode == 0
    lines = full.read_text().splitlines(True)
    cut = tmp_path / "cut.ndjson"
    cut.write_text("".join(lines[:2200]))      # header, endpoint, health?, ~2197 messages, no end

    b = hookd(name="b", start=False)
    p = b.cli("import", cut)
    assert p.returncode == 1 and "ends before its end line" in p.stderr, p.stderr
    assert "before the error, stored 2000 messages" in p.stdout, p.stdout
    assert "importing the whole file again is safe" in p.stdout
    p = b.cli("import", full)
    assert p.returncode == 0, p.stderr
    assert "imported 500 messages" in p.stdout and "2000 already here" in p.stdout, p.stdout
    assert b.sql("SELECT count(*), count(DISTINCT event_id) FROM webhook_queue") == [(2500, 2500)]

    # not an export at all, and a damaged line: refused with the line's number, nothing stored
    junk = tmp_path / "junk.ndjson"
    junk.write_text('{"kind":"message"}\n')
    c = hookd(name="c", start=False)
    p = c.cli("import", junk)
    assert p.returncode == 1 and "not a hookd export" in p.stderr, p.stderr
    bad = tmp_path / "bad.ndjson"
    bad.write_text(lines[0] + lines[1] + '{"kind":"message","endpoint":"held","event_id":"x"}\n')
    p = c.cli("import", bad)
    assert p.returncode == 1 and ":3:" in p.stderr and "payload" in p.stderr, p.stderr
    c.start()
    assert c.sql("SELECT count(*) FROM webhook_queue") == [(0,)]


def test_deliver_at_moves_as_a_time(hookd, receiver, tmp_path):
    rcv = receiver(200)
    a = hookd(name="a", endpoints={"e": {"url": rcv.url("/e")}})
    at = int(time.time() * 1000) + 10 * 60 * 1000
    assert a.request({"op": "enqueue", "endpoint": "e", "event_id": "fixed", "payload": {}, "deliver_at": at})["ok"]
    rel = a.request({"op": "enqueue", "endpoint": "e", "event_id": "rel", "payload": {}, "delay": "10m"})
    a.stop()
    out = tmp_path / "queue.ndjson"
    assert a.cli("export", out).returncode == 0
    msgs = {m["event_id"]: m for m in map(json.loads, out.read_text().splitlines()) if m["kind"] == "message"}
    assert msgs["fixed"]["deliver_at"] == at and msgs["fixed"]["next_attempt_at"] == at, msgs["fixed"]
    assert msgs["rel"]["deliver_at"] is None and msgs["rel"]["next_attempt_at"] == rel["deliver_at"], msgs["rel"]

    b = hookd(name="b", start=False, endpoints={"e": {"url": rcv.url("/e")}})
    p = b.cli("import", out)
    assert p.returncode == 0 and "imported 2 messages" in p.stdout, (p.stdout, p.stderr)
    b.start()
    rows = dict(b.sql("SELECT event_id, deliver_at FROM webhook_queue"))
    assert rows == {"fixed": at, "rel": None}, rows
    assert rcv.count() == 0
