"""Erasure against the real daemon: `hookd erase` by id, by event id and
endpoint, by endpoint and time window removes the payload, the response
excerpts and the URLs as sent while ids, statuses and times stay; on
SQLite the bytes are gone from the database file and its -wal; a waiting
message erased is never delivered; [retention] payload erases delivered
payloads before their rows go."""
import os

from conftest import BACKEND, Reply, error_code, wait_until
from test_health import cli, cli_json, sections

MARK = "PLAYERDATA-7f3a9c-"   # what must not survive an erase


def file_has(path, needle):
    try:
        with open(path, "rb") as f:
            return needle.encode() in f.read()
    except FileNotFoundError:
        return False


def test_erase_by_id_removes_the_bytes(hookd, receiver):
    rcv = receiver(200)
    d = hookd(endpoints={"p": {"url": rcv.url("/pb") + "?player={player}"}}, sections=sections())
    keep = d.enqueue("p", {"player": "someone-else", "pad": "k" * 3000}, event_id="keep")["id"]
    d.wait_status(keep, "delivered", 10)
    # the payload (long enough for overflow pages), the URL as sent and
    # the response excerpt all carry the mark
    rcv.set(Reply(200, body=b"echo " + MARK.encode() + b"resp"))
    mid = d.enqueue("p", {"player": MARK + "payload", "pad": "x" * 6000}, event_id="gone")["id"]
    d.wait_status(mid, "delivered", 10)
    before = d.get(mid)
    assert before["payload_bytes"] > 6000 and before["erased_at"] is None
    assert MARK in cli_json(d, "attempts", str(mid))["attempts"][0]["url"]

    r = cli_json(d, "erase", str(mid))
    assert r["erased"] == 1, r
    after = d.get(mid)
    assert after["payload_bytes"] == 0 and after["erased_at"] >= after["delivered_at"]
    # what hookd did stays
    for k in ("id", "event_id", "status", "created_at", "delivered_at", "attempt_count", "last_status_code"):
        assert after[k] == before[k], k
    a = cli_json(d, "attempts", str(mid))["attempts"][0]
    assert a["url"] is None and a["response"] is None and a["status_code"] == 200
    # the other message is untouched
    assert d.get(keep)["payload_bytes"] > 3000
    row = d.sql_dicts("SELECT payload FROM webhook_queue WHERE id = ?", (mid,))[0]
    assert row["payload"] in ("", b"", None) or len(row["payload"]) == 0
    if BACKEND == "sqlite":
        # secure_delete and the erase's own checkpoint: nothing in either file
        assert not file_has(d.db, MARK) and not file_has(str(d.db) + "-wal", MARK)
    # erasing again changes nothing and says so
    assert cli_json(d, "erase", str(mid))["erased"] == 0


def test_erase_waiting_and_in_flight(hookd, receiver):
    rcv = receiver(503)
    d = hookd(endpoints={"p": {"url": rcv.url("/p"), "max_attempts": "50"}}, sections=sections())
    mid = d.enqueue("p", {"player": MARK}, event_id="e1")["id"]
    wait_until(lambda: d.get(mid)["attempt_count"] >= 1, 10, msg="first attempt")
    # waiting for its retry: erased, it is a dead letter and never sent again
    r = cli_json(d, "erase", "--event-id", "e1", "--endpoint", "p")
    assert r["erased"] == 1, r
    # waiting, it became a dead letter at once; in flight (retries are
    # fast here), when its failed attempt settled: no retry either way
    d.wait_status(mid, "dead_letter", 10)
    m = d.get(mid)
    assert m["last_error_class"] in ("erased", "http_503") and m["last_error"] is None, m
    n = len(rcv.snapshot("/p"))
    rcv.set(200)
    r = d.request({"op": "requeue", "id": mid})
    assert error_code(r) == "not_found", r   # nothing left to send
    d.enqueue("p", {"fence": 1}, event_id="fence")
    wait_until(lambda: any(b"fence" in x.body for x in rcv.snapshot("/p")), 10)
    assert not any(MARK.encode() in x.body for x in rcv.snapshot("/p")[n:])


def test_erase_by_window_dry_run_and_where(hookd, receiver):
    rcv = receiver(200)
    d = hookd(endpoints={"a": {"url": rcv.url("/a")}, "b": {"url": rcv.url("/b")}}, sections=sections())
    ids = [d.enqueue(ep, {"player": {"id": "p%d" % (i % 2)}})["id"] for i, ep in enumerate("aabab")]
    wait_until(lambda: all(d.status(i) == "delivered" for i in ids), 10)
    r = d.request({"op": "erase", "endpoint": "a"})
    assert error_code(r) == "bad_request", r     # never everything by accident
    r = cli_json(d, "erase", "--since", "1h", "--endpoint", "a", "--dry-run")
    assert r["dry_run"] and r["matched"] == 3, r
    assert all(d.get(i)["erased_at"] is None for i in ids)
    # a player's data, wherever it went
    r = cli_json(d, "erase", "--since", "1h", "--where", "player.id=p1")
    assert r["erased"] == 2, r
    assert [i for i in ids if d.get(i)["erased_at"]] == [ids[1], ids[3]]
    p = cli(d, "erase", "--since", "1h", "--endpoint", "a", "--dry-run")   # erased ones are not counted again
    assert p.returncode == 0 and "would erase 1" in p.stdout, p.stdout


def test_retention_payload(hookd, receiver):
    rcv = receiver(200)
    d = hookd(endpoints={"p": {"url": rcv.url("/p")}},
              sections=sections({"retention": {"payload": "1s", "cleanup_interval": "100ms"}}))
    mid = d.enqueue("p", {"player": MARK})["id"]
    d.wait_status(mid, "delivered", 10)
    wait_until(lambda: d.get(mid)["payload_bytes"] == 0, 15, msg="payload erased by retention")
    m = d.get(mid)
    assert m["status"] == "delivered" and m["erased_at"]
