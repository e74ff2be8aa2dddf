"""Delayed delivery: enqueue "delay" (a duration) or "deliver_at" (epoch
ms or RFC 3339) and the endpoint key delay. A delayed row is stored at
enqueue (duplicates found then), counted as scheduled apart from pending,
left out of the oldest-pending figure, delivered no earlier than its time,
keeps its place among rows of its ordering key, and keeps its time through
export and import. Runs on either backend (HOOKD_TEST_BACKEND)."""
import json
import os
import time
from datetime import datetime, timedelta, timezone

from conftest import error_code


def stats(d):
    r = d.request({"op": "stats"})
    assert r["ok"] is True, r
    return r["stats"]


def test_delay_scheduled_dedup_and_due_time(hookd, receiver):
    rcv = receiver(200)
    d = hookd(endpoints={"a": {"url": rcv.url("/a")}})
    before = int(time.time() * 1000)
    r = d.request({"op": "enqueue", "endpoint": "a", "event_id": "late-1", "delay": "1500ms", "payload": {"n": 1}})
    assert r["ok"] is True and r["duplicate"] is False, r
    due = r["deliver_at"]
    assert before + 1500 <= due <= int(time.time() * 1000) + 1500, r
    # stored at once: a second enqueue of the event is a duplicate, and
    # the row counts as scheduled, not pending, and not as waiting
    r2 = d.request({"op": "enqueue", "endpoint": "a", "event_id": "late-1", "delay": "1s", "payload": {"n": 2}})
    assert r2["ok"] is True and r2["duplicate"] is True and r2["id"] == r["id"], r2
    s = stats(d)
    assert s["scheduled"] == 1 and s["pending"] == 0 and s["oldest_pending"] is None, s
    m = d.get(r["id"])
    assert m["status"] == "pending" and m["next_attempt_at"] == due, m
    metrics = d.request({"op": "metrics"})["text"]
    assert 'hookd_queue_messages{status="scheduled"} 1' in metrics
    # an undelayed message to the same endpoint goes now
    now = d.enqueue("a", {"n": 3}, event_id="now-1")
    d.wait_status(now["id"], "delivered")
    m = d.wait_status(r["id"], "delivered", timeout=15)
    (req,) = [q for q in rcv.requests if q.json() == {"n": 1}]
    assert req.t_wall * 1000 >= due - 5, (req.t_wall * 1000, due)   # 5 ms: the receiver's clock reading
    s = stats(d)
    assert s["scheduled"] == 0, s


def test_deliver_at_forms_and_bounds(hookd, receiver):
    rcv = receiver(200)
    d = hookd(endpoints={"a": {"url": rcv.url("/a")}})
    now_ms = int(time.time() * 1000)
    at = now_ms + 3600 * 1000
    r = d.request({"op": "enqueue", "endpoint": "a", "deliver_at": at, "payload": {}})
    assert r["ok"] is True and r["deliver_at"] == at, r
    iso = datetime.fromtimestamp((at + 60000) / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    r = d.request({"op": "enqueue", "endpoint": "a", "deliver_at": iso, "payload": {}})
    assert r["ok"] is True and r["deliver_at"] == at + 60000, (iso, r)
    # an offset is honoured: the same instant written at +02:00
    local = datetime.fromtimestamp((at + 120000) // 1000, tz=timezone.utc).astimezone(
        timezone(timedelta(hours=2))).isoformat()
    r = d.request({"op": "enqueue", "endpoint": "a", "deliver_at": local, "payload": {}})
    assert r["ok"] is True and r["deliver_at"] == (at + 120000) // 1000 * 1000, (local, r)
    # a time already past is due now
    r = d.request({"op": "enqueue", "endpoint": "a", "deliver_at": now_ms - 5000, "payload": {"past": 1}})
    assert r["ok"] is True and "deliver_at" not in r, r
    d.wait_status(r["id"], "delivered")
    assert stats(d)["scheduled"] == 3
    # refused: past the 30 day bound, both members, malformed values
    for extra, why in (({"delay": "31d"}, "30 days"), ({"delay": 31 * 86400 * 1000}, "30 days"),
                       ({"deliver_at": now_ms + 31 * 86400 * 1000}, "30 days"),
                       ({"delay": "5m", "deliver_at": at}, "not both"), ({"delay": "soon"}, "delay"),
                       ({"delay": -5}, "delay"), ({"deliver_at": "2026-02-30T00:00:00Z"}, "deliver_at"),
                       ({"deliver_at": "tomorrow"}, "deliver_at"), ({"deliver_at": True}, "deliver_at")):
        r = d.request(dict({"op": "enqueue", "endpoint": "a", "payload": {}}, **extra))
        assert error_code(r) == "bad_request" and why in r["error"]["message"], (extra, r)
    # a fan-out with a time past the bound stores nothing for anyone
    d.request({"op": "endpoint.put", "name": "b", "url": rcv.url("/b"), "event_types": "t"})
    r = d.request({"op": "enqueue", "event_type": "t", "deliver_at": now_ms + 40 * 86400 * 1000, "payload": {}})
    assert error_code(r) == "bad_request", r
    assert stats(d)["scheduled"] == 3


def test_endpoint_delay_and_ordering_keeps_enqueue_order(hookd, receiver):
    rcv = receiver(200)
    d = hookd(endpoints={
        "slow": {"url": rcv.url("/slow"), "delay": "1s"},
        "ord": {"url": rcv.url("/ord"), "ordering_key": "{tx}"},
    })
    r = d.request({"op": "enqueue", "endpoint": "slow", "payload": {"x": 1}})
    assert r["ok"] is True and "deliver_at" in r, r
    # the request's own delay wins over the endpoint's, 0 included
    r0 = d.request({"op": "enqueue", "endpoint": "slow", "delay": 0, "payload": {"x": 0}})
    assert "deliver_at" not in r0, r0
    d.wait_status(r0["id"], "delivered")
    m = d.wait_status(r["id"], "delivered", timeout=15)
    assert m["status"] == "delivered"
    (late,) = [q for q in rcv.requests if q.path == "/slow" and q.json() == {"x": 1}]
    assert late.t_wall * 1000 >= r["deliver_at"] - 5
    # ordering: a delayed first status holds the later ones of its key
    first = d.request({"op": "enqueue", "endpoint": "ord", "delay": "800ms", "payload": {"tx": "t1", "s": 1}})
    second = d.enqueue("ord", {"tx": "t1", "s": 2})
    other = d.enqueue("ord", {"tx": "t2", "s": 1})
    d.wait_status(other["id"], "delivered")
    for x in (first, second):
        d.wait_status(x["id"], "delivered", timeout=15)
    seq = [q.json()["s"] for q in rcv.requests if q.path == "/ord" and q.json()["tx"] == "t1"]
    assert seq == [1, 2], seq
    # the key: kept through endpoint.put and refused past the bound
    assert d.endpoints()["slow"]["settings"]["delay"] == "1s"
    r = d.request({"op": "endpoint.put", "name": "x", "url": rcv.url("/x"), "delay": "31d"})
    assert error_code(r) == "bad_request" and "delay" in r["error"]["message"], r


def test_export_import_keeps_the_time(hookd, receiver, tmp_path):
    rcv = receiver(200)
    d = hookd(endpoints={"a": {"url": rcv.url("/a")}})
    r = d.request({"op": "enqueue", "endpoint": "a", "event_id": "keep-1", "delay": "2h", "payload": {"k": 1}})
    due = r["deliver_at"]
    d.stop()
    out = tmp_path / "x.ndjson"
    p = d.cli("export", out)
    assert p.returncode == 0, p.stderr
    rows = [json.loads(l) for l in out.read_text().splitlines() if '"keep-1"' in l]
    assert len(rows) == 1 and rows[0]["next_attempt_at"] == due and rows[0]["status"] == "pending", rows
    d2 = hookd(endpoints={"a": {"url": rcv.url("/a")}}, start=False)
    d2.write_config()
    key = d2.db.parent / "secret.key"
    key.write_bytes((d.db.parent / "secret.key").read_bytes())
    os.chmod(key, 0o600)
    p = d2.cli("import", out)
    assert p.returncode == 0, p.stderr
    d2.start()
    (row,) = d2.sql("SELECT next_attempt_at, status FROM webhook_queue WHERE event_id = 'keep-1'")
    assert row == (due, "pending"), row
    assert stats(d2)["scheduled"] == 1
    assert not rcv.requests
