"""Answering a partner's questions against the real daemon: `hookd
messages` finds deliveries by endpoint, status, event id, type glob, error
class, time window and payload field (--where), newest first with keyset
paging; get/attempts/requeue take an event id; requeue and purge take the
same filters with --dry-run and a bound; a requeue keeps every attempt
ever made in the log, the requeue marked."""
import grp
import json
import os
import pwd
import time

import pytest

from conftest import error_code, wait_until
from test_core import PARKED, run_as_nobody
from test_health import cli, cli_json, sections

DONE = ("delivered", "dead_letter")


def done(d, ids):
    wait_until(lambda: all(d.status(i) in DONE for i in ids), 15, msg="messages settled")


def fleet(hookd, receiver):
    """Endpoint ok delivers, endpoint bad answers 503 (one attempt: dead)."""
    ok, bad = receiver(200), receiver(503)
    d = hookd(endpoints={"ok": {"url": ok.url("/ok")},
                         "bad": {"url": bad.url("/bad"), "max_attempts": "1"}},
              sections=sections())
    ids = {}
    for i in range(6):
        ev = "conv-%d" % i
        typ = "order.paid" if i % 2 == 0 else "lead.new"
        r = d.enqueue("ok", {"click_id": "c_%d" % (40 + i), "amount": 10 + i, "player": {"id": "p%d" % (i % 3)}},
                      event_id=ev, event_type=typ)
        assert r["ok"], r
        ids[("ok", ev)] = r["id"]
    r = d.enqueue("bad", {"click_id": "c_42"}, event_id="conv-2", event_type="order.refund")
    ids[("bad", "conv-2")] = r["id"]
    done(d, ids.values())
    return d, ids


def test_messages_filters_and_paging(hookd, receiver):
    d, ids = fleet(hookd, receiver)

    # "did my conversion with click_id c_42 arrive, and when?"
    r = cli_json(d, "messages", "--where", "click_id=c_42")
    assert [(m["endpoint"], m["status"]) for m in r["messages"]] == [("bad", "dead_letter"), ("ok", "delivered")]
    assert r["messages"][1]["delivered_at"] > 0 and r["next"] is None
    r = cli_json(d, "messages", "--where", "click_id=c_42", "--endpoint", "ok")
    assert [m["id"] for m in r["messages"]] == [ids[("ok", "conv-2")]]
    # numbers as written, nested paths, several conditions (all must hold)
    assert [m["event_id"] for m in cli_json(d, "messages", "--where", "amount=13")["messages"]] == ["conv-3"]
    got = cli_json(d, "messages", "--where", "player.id=p1", "--where", "amount=14")["messages"]
    assert [m["event_id"] for m in got] == ["conv-4"]
    assert cli_json(d, "messages", "--where", "amount=13.0")["messages"] == []

    # indexed and row filters
    assert [m["id"] for m in cli_json(d, "messages", "--status", "dead_letter")["messages"]] == [ids[("bad", "conv-2")]]
    assert len(cli_json(d, "messages", "--status", "delivered,dead_letter")["messages"]) == 7
    assert [m["event_id"] for m in cli_json(d, "messages", "--type", "order.*", "--endpoint", "ok")["messages"]] == \
        ["conv-4", "conv-2", "conv-0"]
    assert [m["event_id"] for m in cli_json(d, "messages", "--type", "*.ref?nd")["messages"]] == ["conv-2"]
    assert [m["endpoint"] for m in cli_json(d, "messages", "--error-class", "http_503")["messages"]] == ["bad"]
    assert len(cli_json(d, "messages", "--event-id", "conv-2")["messages"]) == 2
    assert cli_json(d, "messages", "--since", str(int(time.time() * 1000) + 60000))["messages"] == []
    assert len(cli_json(d, "messages", "--until", "1h")["messages"]) == 0
    assert len(cli_json(d, "messages", "--since", "1h")["messages"]) == 7

    # keyset paging, newest first
    seen, after = [], None
    while True:
        args = ["messages", "--endpoint", "ok", "--limit", "2"] + (["--after", str(after)] if after else [])
        r = cli_json(d, *args)
        seen += [m["id"] for m in r["messages"]]
        after = r["next"]
        if after is None:
            break
    assert seen == sorted((v for k, v in ids.items() if k[0] == "ok"), reverse=True)

    # export: one object per line, every page (--limit is the page size)
    p = cli(d, "messages", "--status", "delivered", "--ndjson", "--limit", "4")
    assert p.returncode == 0, p.stderr
    lines = [json.loads(line) for line in p.stdout.splitlines()]
    assert len(lines) == 6 and all(m["status"] == "delivered" for m in lines)
    assert [m["id"] for m in lines] == sorted((m["id"] for m in lines), reverse=True)
    # the table
    p = cli(d, "messages", "--where", "click_id=c_42")
    assert p.returncode == 0 and "EVENT_ID" in p.stdout and "conv-2" in p.stdout, p.stdout

    # bad requests say what is wrong
    r = d.request({"op": "messages", "where": ["nofield"]})
    assert error_code(r) == "bad_request", r
    r = d.request({"op": "messages", "status": "lost"})
    assert error_code(r) == "bad_request", r
    r = d.request({"op": "messages", "limit": 0})
    assert error_code(r) == "bad_request", r


def test_get_and_attempts_by_event_id(hookd, receiver):
    d, ids = fleet(hookd, receiver)
    r = d.request({"op": "get", "event_id": "conv-1"})
    assert r["ok"] and r["message"]["id"] == ids[("ok", "conv-1")], r
    r = d.request({"op": "get", "event_id": "conv-2"})
    assert error_code(r) == "ambiguous" and "bad" in r["error"]["message"], r
    r = cli_json(d, "get", "--event-id", "conv-2", "--endpoint", "bad")
    assert r["message"]["id"] == ids[("bad", "conv-2")]
    r = cli_json(d, "attempts", "--event-id", "conv-2", "--endpoint", "bad")
    assert [a["status_code"] for a in r["attempts"]] == [503]
    assert error_code(d.request({"op": "attempts", "event_id": "nope"})) == "not_found"
    p = cli(d, "get", "--event-id", "conv-2")
    assert p.returncode == 1 and "ambiguous" in p.stderr + p.stdout


def test_requeue_keeps_every_attempt(hookd, receiver):
    rcv = receiver(503)
    d = hookd(endpoints={"p": {"url": rcv.url("/p"), "max_attempts": "2"}}, sections=sections())
    mid = d.enqueue("p", {"click_id": "c_7"}, event_id="ev-7")["id"]
    d.wait_status(mid, "dead_letter", 15)
    for want in ("dead_letter", "delivered"):
        if want == "delivered":
            rcv.set(200)
        r = cli_json(d, "requeue", "--event-id", "ev-7")
        assert r["requeued"] == 1, r
        d.wait_status(mid, want, 15)
    log = cli_json(d, "attempts", str(mid))["attempts"]
    assert [(a["generation"], a["attempt"], a["event"]) for a in log] == [
        (0, 1, "attempt"), (0, 2, "attempt"),
        (1, 0, "requeued"), (1, 1, "attempt"), (1, 2, "attempt"),
        (2, 0, "requeued"), (2, 1, "attempt")]
    assert [a["status_code"] for a in log if a["event"] == "attempt"] == [503, 503, 503, 503, 200]
    assert all(log[i]["at"] <= log[i + 1]["at"] for i in range(len(log) - 1))
    p = cli(d, "attempts", str(mid))
    assert p.returncode == 0 and p.stdout.count("requeued") == 2 and "generation 2" in p.stdout, p.stdout


def test_requeue_and_purge_by_filter_dry_run_and_bound(hookd, receiver):
    rcv = receiver(503)
    d = hookd(endpoints={"p": {"url": rcv.url("/p"), "max_attempts": "1"}}, sections=sections())
    ids = [d.enqueue("p", {"k": i % 2, "i": i}, event_type="t.%d" % (i % 2))["id"] for i in range(5)]
    done(d, ids)
    r = cli_json(d, "requeue", "--endpoint", "p", "--where", "k=1", "--dry-run")
    assert r["dry_run"] and r["matched"] == 2 and not r["more"], r
    assert all(d.status(i) == "dead_letter" for i in ids)
    r = cli_json(d, "purge", "--endpoint", "p", "--type", "t.0", "--limit", "2")
    assert r["purged"] == 2 and r["more"] is True, r
    r = cli_json(d, "purge", "--endpoint", "p", "--type", "t.0", "--dry-run")
    assert r["matched"] == 1, r
    rcv.set(200)
    r = cli_json(d, "requeue", "--endpoint", "p", "--where", "k=1")
    assert r["requeued"] == 2, r
    wait_until(lambda: d.status(ids[1]) == "delivered" and d.status(ids[3]) == "delivered", 15)
    # the purge took the newest two of t.0; the oldest is left, and only it
    assert d.status(ids[4]) is None and d.status(ids[2]) is None and d.status(ids[0]) == "dead_letter"
    p = cli(d, "requeue", "--endpoint", "p", "--dry-run")
    assert p.returncode == 0 and "would requeue 1" in p.stdout, p.stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to switch to nobody")
def test_payload_search_and_erase_need_an_admin(hookd):
    """A reader may find messages by their ids and types as `get` shows
    them; a condition on the payload reads it, and erasing changes it:
    both are an admin's."""
    nogroup = grp.getgrgid(pwd.getpwnam("nobody").pw_gid).gr_name
    d = hookd(endpoints={"cfg": PARKED}, sections={"server": {"group": nogroup}})
    mid = d.enqueue("cfg", {"click_id": "c_42"}, event_id="ev")["id"]
    reqs = [{"op": "messages", "event_id": "ev"}, {"op": "get", "event_id": "ev"},
            {"op": "messages", "where": ["click_id=c_42"]}, {"op": "erase", "id": mid},
            {"op": "requeue", "event_id": "ev"}, {"op": "purge", "type": "*", "dry_run": True}]
    rep = run_as_nobody(d.sock, reqs)
    assert [m["id"] for m in rep[0]["messages"]] == [mid] and rep[1]["message"]["id"] == mid, rep[:2]
    assert [error_code(r) for r in rep[2:]] == ["forbidden"] * 4, rep[2:]
    assert d.get(mid)["erased_at"] is None


def test_attempts_says_an_error_class_once(hookd):
    d = hookd(endpoints={"gone": {"url": "http://no-such-host.invalid/pb", "max_attempts": "1"}}, sections=sections())
    mid = d.enqueue("gone", {"a": 1})["id"]
    d.wait_status(mid, "dead_letter", 20)
    a = cli_json(d, "attempts", str(mid))["attempts"][0]
    p = cli(d, "attempts", str(mid))
    assert p.returncode == 0, p.stderr
    cls = a["error_class"]
    assert a["detail"].startswith(cls + ": "), a   # what used to print twice
    assert cls and ("error     %s: " % cls) in p.stdout and ("%s: %s:" % (cls, cls)) not in p.stdout, (a, p.stdout)
