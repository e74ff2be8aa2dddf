"""hookd core behaviour over the control socket: protocol, validation,
durability, lifecycle, configuration, admin ops and socket permissions."""
import json
import os
import pwd
import grp
import selectors
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import threading
import time

import pytest

from conftest import (HOOKD_BIN, SECRET_A, Client, HANG, error_code, raise_nofile, wait_until)

# an endpoint nothing is ever sent to: rows stay exactly as enqueued
PARKED = {"url": "http://127.0.0.1:9/parked", "paused": "yes"}
SMALL = {"server": {"max_payload": "1KiB", "max_line": "64KiB"}}


def parked(**extra):
    d = dict(PARKED)
    d.update(extra)
    return d


def count_rows(daemon, where="1 = 1", args=()):
    return daemon.sql("SELECT count(*) FROM webhook_queue WHERE " + where, args)[0][0]


# ------------------------------------------------------------------ basics

def test_ping(hookd):
    d = hookd()
    with d.client() as c:
        r = c.request({"op": "ping"})
    assert r["ok"] is True and r["pong"] is True
    assert isinstance(r.get("version"), str) and r["version"]


def test_enqueue_ack_shape_and_get(hookd):
    d = hookd(endpoints={"a": parked(max_attempts=7)})
    payload = {"order": 17, "s": "x"}
    with d.client() as c:
        r = c.enqueue("a", payload, event_id="evt_core_1")
        assert set(r) == {"ok", "id", "event_id", "duplicate"}, r
        assert r["ok"] is True and r["duplicate"] is False and r["event_id"] == "evt_core_1"
        assert isinstance(r["id"], int) and r["id"] > 0
        g = c.get(r["id"])
    assert g["ok"] is True, g
    m = g["message"]
    assert m["id"] == r["id"]
    assert m["endpoint"] == "a"
    assert m["event_id"] == "evt_core_1"
    assert m["status"] == "pending"
    assert m["attempt_count"] == 0
    assert m["max_attempts"] == 7
    assert m["attempts"] == []
    # the stored bytes are the payload as sent
    row = d.row(r["id"])
    assert json.loads(row["payload"]) == payload
    # an id that does not exist
    with d.client() as c:
        assert error_code(c.get(r["id"] + 1000)) == "not_found"


def test_stats_shape(hookd):
    d = hookd(endpoints={"a": PARKED})
    with d.client() as c:
        for i in range(3):
            assert c.enqueue("a", {"i": i})["ok"]
        r = c.request({"op": "stats"})
    assert r["ok"] is True, r
    st = r["stats"]
    for k in ("pending", "awaiting_retry", "in_flight", "dead_letter", "delivered_last_hour", "failed_last_hour",
              "oldest_pending", "oldest_pending_age_ms", "avg_delivery_ms_last_hour"):
        assert k in st, (k, st)
    assert st["pending"] == 3 and st["in_flight"] == 0 and st["dead_letter"] == 0, st
    assert st["delivered_last_hour"] == 0 and st["awaiting_retry"] == 0, st
    assert isinstance(st["oldest_pending_age_ms"], int) and 0 <= st["oldest_pending_age_ms"] < 60000, st


def test_duplicate_event_id(hookd):
    d = hookd(endpoints={"a": PARKED})
    with d.client() as c:
        r1 = c.enqueue("a", {"v": 1}, event_id="evt_dup")
        r2 = c.enqueue("a", {"v": 2}, event_id="evt_dup")
    assert r1["ok"] and r2["ok"], (r1, r2)
    assert r1["duplicate"] is False and r2["duplicate"] is True
    assert r2["id"] == r1["id"] and r2["event_id"] == "evt_dup"
    assert count_rows(d, "event_id = ?", ("evt_dup",)) == 1
    # the first payload wins
    assert json.loads(d.row(r1["id"])["payload"]) == {"v": 1}


def test_generated_event_ids_are_unique(hookd):
    d = hookd(endpoints={"a": PARKED})
    with d.client() as c:
        replies = c.pipeline([{"op": "enqueue", "endpoint": "a", "payload": {"i": i}} for i in range(200)])
    assert all(r["ok"] and r["duplicate"] is False for r in replies), replies[:3]
    eids = [r["event_id"] for r in replies]
    assert all(isinstance(e, str) and len(e) >= 8 for e in eids)
    assert len(set(eids)) == 200
    assert len({r["id"] for r in replies}) == 200
    assert count_rows(d) == 200


def test_fan_out(hookd):
    d = hookd(endpoints={
        "a": parked(event_types="conversion"),
        "b": parked(event_types="payment, conversion"),
        "c": parked(event_types="payment"),
    })
    with d.client() as c:
        r = c.enqueue(payload={"amount": 5}, event_type="conversion", event_id="evt_fan")
        assert r["ok"] is True, r
        assert r["event_id"] == "evt_fan"
        assert "id" not in r
        dl = r["deliveries"]
        assert sorted(x["endpoint"] for x in dl) == ["a", "b"]
        assert all(isinstance(x["id"], int) and x["duplicate"] is False for x in dl)
        assert len({x["id"] for x in dl}) == 2
        rows = d.sql("SELECT e.name, q.id, q.event_type FROM webhook_queue q JOIN endpoints e ON e.id = q.endpoint_id "
                     "WHERE q.event_id = 'evt_fan' ORDER BY e.name")
        assert [(n, t) for n, _, t in rows] == [("a", "conversion"), ("b", "conversion")]
        assert {x["endpoint"]: x["id"] for x in dl} == {n: i for n, i, _ in rows}
        # again: same rows, flagged duplicate
        r2 = c.enqueue(payload={"amount": 5}, event_type="conversion", event_id="evt_fan")
        assert sorted((x["endpoint"], x["id"], x["duplicate"]) for x in r2["deliveries"]) == \
            sorted((x["endpoint"], x["id"], True) for x in dl)
        # generated event id: one id shared by every delivery
        r3 = c.enqueue(payload={}, event_type="payment")
        assert sorted(x["endpoint"] for x in r3["deliveries"]) == ["b", "c"]
        assert count_rows(d, "event_id = ?", (r3["event_id"],)) == 2


def test_no_subscribers(hookd):
    d = hookd(endpoints={"a": parked(event_types="conversion"), "b": PARKED})  # b subscribes to nothing
    with d.client() as c:
        assert error_code(c.enqueue(payload={}, event_type="refund")) == "no_subscribers"
        c.ping()
    assert count_rows(d) == 0


# ------------------------------------------------------------------ bad input

def _big_payload_line(n):
    return json.dumps({"op": "enqueue", "endpoint": "a", "payload": {"pad": "x" * n}})


BAD_INPUTS = [
    ("malformed_json", b'{"op": "ping"', "bad_json"),
    ("malformed_json_2", b'{op: ping}', "bad_json"),
    ("array", b'[1, 2, 3]', "bad_request"),
    ("string", b'"ping"', "bad_request"),
    ("number", b'42', "bad_request"),
    ("null", b'null', "bad_request"),
    ("missing_op", b'{}', "bad_request"),
    ("op_not_string", b'{"op": 1}', "bad_request"),
    ("op_null", b'{"op": null}', "bad_request"),
    ("unknown_op", b'{"op": "frobnicate"}', "unknown_op"),
    ("missing_payload", b'{"op": "enqueue", "endpoint": "a"}', "bad_request"),
    ("payload_string", b'{"op": "enqueue", "endpoint": "a", "payload": "x"}', "bad_request"),
    ("payload_number", b'{"op": "enqueue", "endpoint": "a", "payload": 12}', "bad_request"),
    ("payload_null", b'{"op": "enqueue", "endpoint": "a", "payload": null}', "bad_request"),
    ("endpoint_not_string", b'{"op": "enqueue", "endpoint": 5, "payload": {}}', "bad_request"),
    ("no_endpoint_no_type", b'{"op": "enqueue", "payload": {}}', "bad_request"),
    ("event_id_blank", b'{"op": "enqueue", "endpoint": "a", "event_id": "a b", "payload": {}}', "bad_request"),
    ("event_id_empty", b'{"op": "enqueue", "endpoint": "a", "event_id": "", "payload": {}}', "bad_request"),
    ("event_id_long", b'{"op": "enqueue", "endpoint": "a", "event_id": "' + b"e" * 201 + b'", "payload": {}}',
     "bad_request"),
    ("unknown_endpoint", b'{"op": "enqueue", "endpoint": "nosuch", "payload": {}}', "unknown_endpoint"),
    ("payload_too_large", _big_payload_line(1100).encode(), "payload_too_large"),
    ("nul_byte", b'{"op": "ping", "x": "a\x00b"}', "bad_json"),
    ("nul_byte_outside", b'{"op": "ping"}\x00', "bad_json"),
    ("invalid_utf8", b'{"op": "ping", "x": "\xff\xfe"}', "bad_json"),
    ("overlong_utf8", b'{"op": "ping", "x": "\xc0\xaf"}', "bad_json"),
    ("surrogate_utf8", b'{"op": "ping", "x": "\xed\xa0\x80"}', "bad_json"),
    ("trailing_garbage", b'{"op": "ping"} x', "bad_json"),
    ("two_objects", b'{"op": "ping"}{"op": "ping"}', "bad_json"),
    ("get_without_id", b'{"op": "get"}', "bad_request"),
    ("get_id_string", b'{"op": "get", "id": "7"}', "bad_request"),
    ("get_id_negative", b'{"op": "get", "id": -1}', "bad_request"),
    ("get_id_fraction", b'{"op": "get", "id": 1.5}', "bad_request"),
    ("unknown_member", b'{"op": "stats", "verbose": true}', "bad_request"),
    ("repeated_member", b'{"op": "get", "id": 1, "id": 2}', "bad_request"),
]


def test_misspelt_member_refused_not_ignored(hookd):
    """A misspelt event_id used to be ignored: the event got a generated id,
    and the client's retry with the same (misspelt) id became a second
    delivery. Every op names the member it does not know."""
    d = hookd(endpoints={"a": PARKED}, sections=SMALL)
    with d.client() as c:
        for line, name in [
            ({"op": "enqueue", "endpoint": "a", "evnt_id": "x1", "payload": {"k": 1}}, "evnt_id"),
            ({"op": "enqueue", "endpoint": "a", "event_tyep": "conversion", "payload": {}}, "event_tyep"),
            ({"op": "pause", "endpoint": "a", "force": True}, "force"),
            ({"op": "dead_letters", "hour": 2}, "hour"),
        ]:
            r = c.request(line)
            assert error_code(r) == "bad_request", (line, r)
            assert "'%s'" % name in r["error"]["message"], r
        r = c.send_line(b'{"op":"enqueue","endpoint":"a","event_id":"e1","event_id":"e2","payload":{}}')
        r = c.recv_json()
        assert error_code(r) == "bad_request" and "event_id" in r["error"]["message"], r
    assert count_rows(d) == 0


def test_bad_inputs_keep_connection_usable(hookd):
    d = hookd(endpoints={"a": PARKED}, sections=SMALL)
    with d.client() as c:
        for name, line, want in BAD_INPUTS:
            c.send_line(line)
            r = c.recv_json()
            assert r.get("ok") is False, (name, r)
            assert error_code(r) == want, (name, r)
            # the same connection still answers
            assert c.request({"op": "ping"})["pong"] is True, name
        # and still enqueues
        ok = c.enqueue("a", {"fine": True}, event_id="after_bad")
        assert ok["ok"] is True and ok["duplicate"] is False
    assert count_rows(d) == 1
    assert d.running


def test_payload_limit_is_exact(hookd):
    """max_payload = 1KiB counts the payload's own bytes, as written."""
    d = hookd(endpoints={"a": PARKED}, sections=SMALL)
    fill = 1024 - len('{"p":""}')
    with d.client() as c:
        at = '{"op":"enqueue","endpoint":"a","event_id":"at","payload":{"p":"%s"}}' % ("x" * fill)
        over = '{"op":"enqueue","endpoint":"a","event_id":"over","payload":{"p":"%s"}}' % ("x" * (fill + 1))
        c.send_line(at)
        r = c.recv_json()
        assert r["ok"] is True, r
        c.send_line(over)
        assert error_code(c.recv_json()) == "payload_too_large"
    assert len(d.row(r["id"])["payload"]) == 1024


def test_line_too_long_skips_to_next_newline(hookd):
    d = hookd(endpoints={"a": PARKED}, sections=SMALL)
    long_line = b'{"op":"ping","pad":"' + b"y" * (200 * 1024) + b'"}'
    with d.client() as c:
        # the long line and the next request in a single write
        c.send(long_line + b"\n" + b'{"op":"ping"}\n')
        assert error_code(c.recv_json()) == "line_too_long"
        r = c.recv_json()
        assert r.get("pong") is True, r
        # the long line trickled in pieces, with requests before and after
        c.send(b'{"op":"ping"}\n')
        for i in range(0, len(long_line), 7000):
            c.send(long_line[i:i + 7000])
        c.send(b'\n{"op":"enqueue","endpoint":"a","event_id":"after_long","payload":{}}\n')
        assert c.recv_json().get("pong") is True
        assert error_code(c.recv_json()) == "line_too_long"
        r = c.recv_json()
        assert r.get("ok") is True and r["event_id"] == "after_long", r
        # nothing of the long line was taken for a request
        assert c.request({"op": "ping"})["pong"] is True
    assert count_rows(d) == 1


def test_deeply_nested_json(hookd):
    d = hookd(endpoints={"a": PARKED}, sections=SMALL)
    depth = 5000
    with d.client() as c:
        lines = [
            b"[" * depth + b"]" * depth,
            b'{"op":"ping","x":' + b"[" * depth + b"]" * depth + b"}",
            b'{"op":"ping","x":' + b'{"a":' * depth + b"1" + b"}" * depth + b"}",
            b'{"op":"enqueue","endpoint":"a","payload":' + b"[" * depth + b"]" * depth + b"}",
            b'{"op":"ping","x":' + b"[" * depth,  # unbalanced too
        ]
        for line in lines:
            c.send_line(line)
            r = c.recv_json()
            assert r.get("ok") is False, r
            error_code(r)
            assert c.request({"op": "ping"})["pong"] is True
    assert d.running
    assert count_rows(d) == 0


def test_half_close_gets_answers(hookd):
    """A client that writes its requests and shuts down its sending side
    still gets every reply."""
    d = hookd(endpoints={"a": PARKED})
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(str(d.sock))
    s.sendall(b'{"op":"ping"}\n{"op":"enqueue","endpoint":"a","payload":{}}\n{"op":"ping"}')  # last: no newline
    s.shutdown(socket.SHUT_WR)
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    lines = [json.loads(l) for l in data.splitlines()]
    assert len(lines) >= 2, data
    assert lines[0]["pong"] is True and lines[1]["ok"] is True


# ------------------------------------------------------------------ pipelining and concurrency

def test_pipelining_1000_in_order(hookd):
    d = hookd(endpoints={"a": PARKED})
    with d.client() as c:
        first = c.enqueue("a", {"first": 1}, event_id="pl-first")
        reqs = []
        for i in range(1000):
            if i % 10 == 3:
                reqs.append({"op": "ping"})
            elif i % 10 == 7:
                reqs.append({"op": "get", "id": first["id"]})  # answered by another thread
            else:
                reqs.append({"op": "enqueue", "endpoint": "a", "event_id": "pl-%04d" % i, "payload": {"i": i}})
        c.settimeout(30)
        replies = c.pipeline(reqs)
    last_id = first["id"]
    for req, rep in zip(reqs, replies):
        assert rep.get("ok") is True, (req, rep)
        if req["op"] == "ping":
            assert rep.get("pong") is True, (req, rep)
        elif req["op"] == "get":
            assert rep["message"]["event_id"] == "pl-first", (req, rep)
        else:
            assert rep["event_id"] == req["event_id"], (req, rep)
            assert rep["id"] > last_id, (req, rep)
            last_id = rep["id"]
    assert count_rows(d) == 1 + 800


def test_1000_concurrent_clients(hookd):
    n = 1000
    if raise_nofile(n + 200) < n + 100:
        pytest.skip("RLIMIT_NOFILE too low for %d sockets" % n)
    d = hookd(endpoints={"a": PARKED})
    socks = []
    try:
        for i in range(n):
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(10)
            s.connect(str(d.sock))
            socks.append(s)
        # everyone connected; now everyone asks
        sel = selectors.DefaultSelector()
        for i, s in enumerate(socks):
            s.sendall(json.dumps({"op": "enqueue", "endpoint": "a", "event_id": "cc-%d" % i,
                                  "payload": {"client": i}}).encode() + b"\n")
            s.setblocking(False)
            sel.register(s, selectors.EVENT_READ, [i, b""])
        replies = {}
        deadline = time.monotonic() + 60
        while len(replies) < n and time.monotonic() < deadline:
            for key, _ in sel.select(timeout=1):
                i, buf = key.data
                try:
                    chunk = key.fileobj.recv(4096)
                except BlockingIOError:
                    continue
                if not chunk:
                    sel.unregister(key.fileobj)
                    replies[i] = {"closed": buf}
                    continue
                buf += chunk
                key.data[1] = buf
                if b"\n" in buf:
                    replies[i] = json.loads(buf.split(b"\n")[0])
                    sel.unregister(key.fileobj)
        sel.close()
    finally:
        for s in socks:
            s.close()
    assert len(replies) == n, "%d of %d clients answered" % (len(replies), n)
    bad = {i: r for i, r in replies.items() if r.get("ok") is not True or r.get("event_id") != "cc-%d" % i}
    assert not bad, list(bad.items())[:5]
    assert count_rows(d) == n
    assert count_rows(d, "event_id LIKE 'cc-%'") == n
    with d.client() as c:
        c.ping()


# ------------------------------------------------------------------ durability and lifecycle

def test_kill9_after_acks_loses_nothing(hookd, receiver):
    rcv = receiver(200)
    d = hookd(endpoints={"a": {"url": rcv.url("/k"), "max_in_flight": 4}})
    per_conn, nconn = 500, 4
    acked = [[] for _ in range(nconn)]
    errors = []

    def burst(k):
        try:
            with d.client(timeout=30) as c:
                reqs = [{"op": "enqueue", "endpoint": "a", "event_id": "k9-%d-%d" % (k, i), "payload": {"k": k, "i": i}}
                        for i in range(per_conn)]
                # a few pipelined batches per connection
                for b in range(0, per_conn, 100):
                    for req, rep in zip(reqs[b:b + 100], c.pipeline(reqs[b:b + 100])):
                        if rep.get("ok") is True:
                            acked[k].append((rep["id"], req["event_id"]))
                        else:
                            errors.append(rep)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=burst, args=(k,)) for k in range(nconn)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    d.kill()   # the moment the last ack has arrived
    print("kill -9: %d acks in %.2fs, receiver had %d requests" % (per_conn * nconn, time.monotonic() - t0, rcv.count()))
    assert not errors, errors[:5]
    all_acked = [x for a in acked for x in a]
    assert len(all_acked) == per_conn * nconn
    d.start()
    stored = dict(d.sql("SELECT q.event_id, e.name FROM webhook_queue q JOIN endpoints e ON e.id = q.endpoint_id"))
    missing = [eid for _, eid in all_acked if stored.get(eid) != "a"]
    assert not missing, "%d acknowledged enqueues lost after kill -9, e.g. %s" % (len(missing), missing[:5])
    ids = dict(d.sql("SELECT event_id, id FROM webhook_queue"))
    assert all(ids[eid] == mid for mid, eid in all_acked)


def test_sigterm_exits_0_and_removes_socket(hookd):
    d = hookd(endpoints={"a": PARKED})
    with d.client() as c:
        c.enqueue("a", {})
    assert d.sock.exists()
    rc = d.terminate()
    assert rc == 0, d.log()
    assert not d.sock.exists()
    log = d.log()
    assert "event=stopped" in log


@pytest.mark.serial  # holds a wall-clock bound
def test_sigterm_is_prompt_when_idle(hookd):
    """Nothing in flight: SIGTERM to exit well under a second or two (no
    waiting for a periodic timer)."""
    d = hookd(endpoints={"a": PARKED})
    d.idle()   # serving, nothing to do
    t0 = time.monotonic()
    assert d.terminate(timeout=30) == 0
    took = time.monotonic() - t0
    assert took < 2.0, "idle hookd took %.1fs to stop after SIGTERM" % took


@pytest.mark.serial  # holds a wall-clock bound
def test_sigterm_with_idle_client_connected(hookd):
    d = hookd(endpoints={"a": PARKED})
    c = d.client()
    c.ping()
    t0 = time.monotonic()
    rc = d.terminate(timeout=20)
    assert rc == 0
    took = time.monotonic() - t0
    assert took < 2.0, "hookd took %.1fs to stop with an idle client connected" % took
    c.close()


def test_second_instance_refuses(hookd):
    d = hookd(endpoints={"a": PARKED})
    with d.client() as c:
        r = c.enqueue("a", {}, event_id="first")
    p = subprocess.run([HOOKD_BIN, "serve", "-c", str(d.cfg)], capture_output=True, timeout=30, cwd=str(d.dir))
    assert p.returncode != 0
    err = (p.stdout + p.stderr).decode(errors="replace")
    assert "another hookd" in err, err
    # the first one is unharmed and still owns the socket
    assert d.sock.exists()
    with d.client() as c:
        c.ping()
        assert c.get(r["id"])["ok"] is True


def test_second_instance_other_db_same_socket_refuses(hookd):
    d = hookd(endpoints={"a": PARKED})
    other = d.dir / "other.ini"
    sections = {k: dict(v) for k, v in d.sections.items()}
    sections["storage"]["path"] = str(d.dir / "other.db")
    if d.pg:   # the other database, on PostgreSQL too
        from conftest import pg_test_database
        sections["postgres"]["conninfo"] = pg_test_database()
    from conftest import render_ini
    other.write_text(render_ini(sections))
    p = subprocess.run([HOOKD_BIN, "serve", "-c", str(other)], capture_output=True, timeout=30, cwd=str(d.dir))
    assert p.returncode != 0
    err = (p.stdout + p.stderr).decode(errors="replace")
    assert str(d.sock) in err and "another hookd" in err, err
    assert d.sock.exists()
    with d.client() as c:
        c.ping()


def test_second_instance_leaves_live_queue_alone(hookd, receiver):
    """A second `hookd serve` on the same config must not touch the first's
    database: its start must not return the first's in-flight rows to the
    queue (that would deliver them twice)."""
    rcv = receiver(HANG)
    d = hookd(endpoints={"a": {"url": rcv.url("/slow"), "timeout": "20s"}})
    r = d.enqueue("a", {"x": 1}, event_id="inflight-1")
    rcv.wait_for(1)
    assert d.status(r["id"]) == "in_flight"
    p = subprocess.run([HOOKD_BIN, "serve", "-c", str(d.cfg)], capture_output=True, timeout=30, cwd=str(d.dir))
    assert p.returncode != 0
    assert d.status(r["id"]) == "in_flight", (
        "the refused second instance changed a live in-flight row to %r; its stderr:\n%s"
        % (d.status(r["id"]), p.stderr.decode(errors="replace")))
    # the second instance has exited: had it sent the row, the receiver
    # would have it by now
    assert rcv.count() == 1, "the in-flight message was sent again"


# ------------------------------------------------------------------ configuration errors

def run_serve(cfg, cwd, timeout=20):
    p = subprocess.Popen([HOOKD_BIN, "serve", "-c", str(cfg)], cwd=str(cwd), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise AssertionError("hookd serve kept running on a bad configuration")
    return p.returncode, (out + err).decode(errors="replace")


@pytest.mark.parametrize("section,key,value,why", [
    ("server", "no_such_key", "1", "unknown key"),
    ("delivery", "max_attempts", "0", "out of range"),
    ("delivery", "timeout", "soon", "duration"),
    ("storage", "synchronous", "sometimes", "off, normal, full, extra"),
    ("nosuchsection", "x", "1", "unknown section"),
])
def test_config_error_stops_start(tmp_path, section, key, value, why):
    cfg = tmp_path / "bad.ini"
    sock = tmp_path / "s.sock"
    cfg.write_text("[storage]\npath = %s\n[server]\nsocket = %s\n\n[%s]\n%s = %s\n"
                   % (tmp_path / "db", sock, section, key, value))
    rc, out = run_serve(cfg, tmp_path)
    assert rc == 2, (rc, out)
    assert "%s:7:" % cfg in out, out         # file:line of the offending key
    assert key in out and value in out and why in out, out
    assert not sock.exists()
    assert not (tmp_path / "db").exists(), "a bad configuration still created the database"


def test_config_error_bad_endpoint_url(tmp_path):
    cfg = tmp_path / "bad.ini"
    cfg.write_text("[storage]\npath = %s\n[server]\nsocket = %s\n[endpoint.x]\nurl = ftp://example.com/\n"
                   % (tmp_path / "db", tmp_path / "s.sock"))
    rc, out = run_serve(cfg, tmp_path)
    assert rc == 2 and "%s:6" % cfg in out and "url" in out, out


def test_config_secret_not_echoed(tmp_path):
    cfg = tmp_path / "bad.ini"
    cfg.write_text("[storage]\npath = %s\n[endpoint.x]\nurl = http://example.com/\nsecret = whsec_not!base64!!\n"
                   % (tmp_path / "db"))
    rc, out = run_serve(cfg, tmp_path)
    assert rc == 2 and "secret" in out, out
    assert "not!base64" not in out, out


@pytest.mark.sqlite_only("writes the SQLite file")
def test_schema_newer_than_binary_refuses_and_leaves_file(hookd):
    d = hookd(endpoints={"a": PARKED}, start=False)
    con = sqlite3.connect(str(d.db))
    con.execute("CREATE TABLE future (x)")
    con.execute("INSERT INTO future VALUES (1)")
    con.execute("PRAGMA user_version = 99")
    con.commit()
    con.close()
    before = d.db.read_bytes()
    mtime = d.db.stat().st_mtime_ns
    rc, out = run_serve(d.cfg, d.dir)
    assert rc != 0, out
    assert "99" in out and "newer" in out, out
    assert d.db.read_bytes() == before
    assert d.db.stat().st_mtime_ns == mtime
    assert not os.path.exists(str(d.db) + "-wal") or os.path.getsize(str(d.db) + "-wal") == 0
    assert not d.sock.exists()


@pytest.mark.sqlite_only("writes the SQLite file")
def test_foreign_database_refused(hookd):
    d = hookd(start=False)
    con = sqlite3.connect(str(d.db))
    con.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    con.commit()
    con.close()
    before = d.db.read_bytes()
    rc, out = run_serve(d.cfg, d.dir)
    assert rc != 0, out
    assert d.db.read_bytes() == before


# ------------------------------------------------------------------ endpoint admin

def test_endpoint_put_delete_persist(hookd):
    d = hookd(endpoints={"cfg": PARKED})
    put = {"op": "endpoint.put", "name": "api1", "url": "http://127.0.0.1:9/api1", "paused": True,
           "event_types": ["conversion", "lead"], "secrets": [SECRET_A], "headers": ["X-Partner: acme"],
           "max_attempts": 9}
    with d.client() as c:
        r = c.request(put)
        assert r["ok"] is True and r["created"] is True and r["endpoint"]["name"] == "api1", r
        r2 = c.request(put)
        assert r2["ok"] is True and r2["created"] is False and r2["endpoint"]["id"] == r["endpoint"]["id"], r2
        e = c.enqueue("api1", {"a": 1}, event_id="to-api1")
        assert e["ok"] is True, e
        assert c.get(e["id"])["message"]["max_attempts"] == 9
        fan = c.enqueue(payload={}, event_type="lead")
        assert [x["endpoint"] for x in fan["deliveries"]] == ["api1"], fan
    assert "api1" in d.endpoints()
    row = d.sql("SELECT url, source, event_types FROM endpoints WHERE name = 'api1'")
    assert row == [("http://127.0.0.1:9/api1", "api", "conversion,lead")]

    d.restart()
    eps = d.endpoints()
    assert "api1" in eps and "cfg" in eps
    with d.client() as c:
        r = c.enqueue("api1", {"a": 2}, event_id="to-api1-again")
        assert r["ok"] is True, r
        r = c.request({"op": "endpoint.delete", "name": "api1"})
        assert r["ok"] is True, r
        assert error_code(c.enqueue("api1", {}, event_id="x")) == "unknown_endpoint"
        assert error_code(c.request({"op": "endpoint.delete", "name": "api1"})) in ("unknown_endpoint", "not_found")
    d.restart()
    assert "api1" not in d.endpoints()
    with d.client() as c:
        assert error_code(c.enqueue("api1", {}, event_id="y")) == "unknown_endpoint"
    assert d.sql("SELECT count(*) FROM endpoints WHERE name = 'api1'")[0][0] == 0


@pytest.mark.parametrize("url,reason", [
    ("ftp://example.com/x", "http"),
    ("file:///etc/passwd", "http"),
    ("http://user:pw@example.com/", "credentials"),
    ("http:///nohost", "host"),
    ("", "empty"),
])
def test_endpoint_put_bad_url(hookd, url, reason):
    d = hookd()
    with d.client() as c:
        r = c.request({"op": "endpoint.put", "name": "bad", "url": url})
        assert error_code(r) == "bad_request", r
        assert reason in r["error"]["message"], r
        c.ping()
    assert d.sql("SELECT count(*) FROM endpoints WHERE name = 'bad'")[0][0] == 0


def test_endpoint_put_bad_fields(hookd):
    d = hookd()
    cases = [
        {"op": "endpoint.put", "url": "http://127.0.0.1:9/"},                                  # no name
        {"op": "endpoint.put", "name": "bad name", "url": "http://127.0.0.1:9/"},
        {"op": "endpoint.put", "name": "x"},                                                  # no url
        {"op": "endpoint.put", "name": "x", "url": "http://127.0.0.1:9/", "secrets": ["nope"]},
        {"op": "endpoint.put", "name": "x", "url": "http://127.0.0.1:9/", "headers": ["Host: evil"]},
        {"op": "endpoint.put", "name": "x", "url": "http://127.0.0.1:9/", "max_attempts": 0},
        {"op": "endpoint.put", "name": "x", "url": "http://127.0.0.1:9/", "no_such_setting": 1},
    ]
    with d.client() as c:
        for req in cases:
            r = c.request(req)
            assert error_code(r) == "bad_request", (req, r)
    assert d.sql("SELECT count(*) FROM endpoints")[0][0] == 0


def test_endpoint_put_on_config_endpoint_conflicts(hookd):
    d = hookd(endpoints={"cfg": PARKED})
    with d.client() as c:
        r = c.request({"op": "endpoint.put", "name": "cfg", "url": "http://127.0.0.1:9/other"})
        assert error_code(r) == "conflict", r
        r = c.request({"op": "endpoint.delete", "name": "cfg"})
        assert error_code(r) == "conflict", r
    assert d.sql("SELECT url, source FROM endpoints WHERE name = 'cfg'") == [(PARKED["url"], "config")]


# ------------------------------------------------------------------ permissions

NOBODY_CLIENT = r"""
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(sys.argv[1])
f = s.makefile("rwb")
out = []
for line in sys.stdin.read().splitlines():
    f.write(line.encode() + b"\n"); f.flush()
    out.append(json.loads(f.readline()))
print(json.dumps(out))
"""


def run_as_nobody(sock, reqs):
    pw = pwd.getpwnam("nobody")
    p = subprocess.run([sys.executable, "-c", NOBODY_CLIENT, str(sock)], input="\n".join(json.dumps(r) for r in reqs),
                       capture_output=True, text=True, timeout=30, user=pw.pw_uid, group=pw.pw_gid,
                       extra_groups=[], cwd="/")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to switch to nobody")
def test_admin_ops_forbidden_for_non_admin(hookd):
    nogroup = grp.getgrgid(pwd.getpwnam("nobody").pw_gid).gr_name
    d = hookd(endpoints={"cfg": PARKED}, sections={"server": {"group": nogroup}})
    with d.client() as c:
        mid = c.enqueue("cfg", {}, event_id="x")["id"]
    admin = [
        {"op": "endpoint.put", "name": "evil", "url": "http://127.0.0.1:9/"},
        {"op": "endpoint.delete", "name": "cfg"},
        {"op": "requeue", "id": mid},
        {"op": "requeue", "endpoint": "cfg"},
        {"op": "purge", "endpoint": "cfg"},
        {"op": "purge"},
        {"op": "pause", "endpoint": "cfg"},
        {"op": "resume", "endpoint": "cfg"},
    ]
    allowed = [
        {"op": "ping"},
        {"op": "enqueue", "endpoint": "cfg", "event_id": "from-nobody", "payload": {}},
        {"op": "get", "id": mid},
        {"op": "stats"},
    ]
    replies = run_as_nobody(d.sock, admin + allowed)
    for req, rep in zip(admin, replies[:len(admin)]):
        assert error_code(rep) == "forbidden", (req, rep)
    for req, rep in zip(allowed, replies[len(admin):]):
        assert rep.get("ok") is True, (req, rep)
    # nothing changed
    assert d.sql("SELECT count(*) FROM endpoints WHERE name = 'evil'")[0][0] == 0
    assert d.sql("SELECT paused FROM endpoints WHERE name = 'cfg'")[0][0] == 1
    assert count_rows(d) == 2
    assert "event=forbidden" in d.log()
    # the same requests as root are allowed
    with d.client() as c:
        assert c.request({"op": "pause", "endpoint": "cfg"})["ok"] is True


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to switch to nobody")
def test_admin_uids_grants_admin(hookd):
    nogroup = grp.getgrgid(pwd.getpwnam("nobody").pw_gid).gr_name
    d = hookd(endpoints={"cfg": PARKED}, sections={"server": {"group": nogroup, "admin_uids": "nobody"}})
    rep = run_as_nobody(d.sock, [{"op": "resume", "endpoint": "cfg"}])
    assert rep[0].get("ok") is True, rep


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to switch to nobody")
def test_socket_not_reachable_without_group(hookd):
    """Without [server] group, a user outside hookd's group cannot even
    connect (directory 0750, socket 0660)."""
    d = hookd()
    pw = pwd.getpwnam("nobody")
    p = subprocess.run([sys.executable, "-c", NOBODY_CLIENT, str(d.sock)], input='{"op":"ping"}', capture_output=True,
                       text=True, timeout=30, user=pw.pw_uid, group=pw.pw_gid, extra_groups=[], cwd="/")
    assert p.returncode != 0 and "Permission denied" in p.stderr, (p.stdout, p.stderr)


def test_socket_and_directory_modes(hookd):
    d = hookd()
    st = os.stat(d.sock)
    assert stat.S_ISSOCK(st.st_mode)
    assert stat.S_IMODE(st.st_mode) == 0o660, oct(st.st_mode)
    dst = os.stat(d.sock.parent)
    assert stat.S_IMODE(dst.st_mode) == 0o750, oct(dst.st_mode)
    # the database is not world-readable either (umask 007)
    if not d.pg:
        assert stat.S_IMODE(os.stat(d.db).st_mode) & 0o007 == 0, oct(os.stat(d.db).st_mode)


def test_socket_group(hookd):
    nogroup = grp.getgrgid(pwd.getpwnam("nobody").pw_gid)
    d = hookd(sections={"server": {"group": nogroup.gr_name}})
    assert os.stat(d.sock).st_gid == nogroup.gr_gid
    assert os.stat(d.sock.parent).st_gid == nogroup.gr_gid


def test_socket_group_on_a_directory_made_before(hookd):
    """systemd's RuntimeDirectory= makes the socket's directory hookd:hookd
    0750 before hookd starts: [server] group must still reach it."""
    nogroup = grp.getgrgid(pwd.getpwnam("nobody").pw_gid)
    d = hookd(start=False, sections={"server": {"group": nogroup.gr_name}})
    d.sock.parent.mkdir(mode=0o700, exist_ok=True)
    os.chmod(d.sock.parent, 0o700)
    d.start()
    dst = os.stat(d.sock.parent)
    assert dst.st_gid == nogroup.gr_gid and stat.S_IMODE(dst.st_mode) == 0o750, oct(dst.st_mode)
    assert os.stat(d.sock).st_gid == nogroup.gr_gid
    if not d.pg:
        for f in (d.db, d.db.parent / "secret.key"):
            assert stat.S_IMODE(os.stat(f).st_mode) & 0o077 == 0, (f, oct(os.stat(f).st_mode))


def test_stale_socket_replaced_non_socket_refused(hookd):
    d = hookd(endpoints={"a": PARKED})
    d.kill()                       # leaves the socket file behind
    assert d.sock.exists()
    d.start()                      # a stale socket is replaced
    d.stop()
    d.sock.write_text("not a socket")
    rc, out = run_serve(d.cfg, d.dir)
    assert rc != 0 and "not a socket" in out, out
    assert d.sock.read_text() == "not a socket"
