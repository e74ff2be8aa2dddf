"""Operational events ([ops] endpoint) and auto-disable against the real
daemon: events are rows of hookd's own queue, delivered signed to the ops
endpoint; a flapping breaker is summarised once per quiet period; an
endpoint failing for disable_after is disabled with its queue kept and
re-enabled by `hookd resume`; alerts (oldest pending, dead letters
growing, low space) send one event when they start; the ops endpoint is
left out of the applications' fan-out and never hears about itself."""
import json
import time

import pytest

from conftest import BACKEND, Reply, verify_signature, wait_until
from test_health import cli, cli_json, events, sections

OPS_SECRET = "whsec_b3BzLXRlc3Qtc2VjcmV0LW9wcy10ZXN0LXNlY3JldA=="


def ops_ep(rcv, **kw):
    d = {"url": rcv.url("/ops"), "secret": OPS_SECRET, "event_types": "*"}
    d.update(kw)
    return d


def received(rcv, typ=None, endpoint=None):
    """The ops events the receiver got (parsed bodies), in arrival order."""
    out = []
    for r in rcv.snapshot("/ops"):
        if r.reply is None or r.reply.status != 200:
            continue
        body = json.loads(r.body)
        if "type" not in body:
            continue   # a fence message, not an event
        if (typ is None or body["type"] == typ) and (endpoint is None or body["endpoint"] == endpoint):
            out.append(body)
    return out


def wait_event(rcv, typ, endpoint=None, n=1, timeout=15):
    return wait_until(lambda: len(received(rcv, typ, endpoint)) >= n and received(rcv, typ, endpoint), timeout,
                      msg="%d %s event(s) for %s" % (n, typ, endpoint))


def test_breaker_events_signed_and_flapping_summarised(hookd, receiver):
    ops, rcv = receiver(200), receiver(503)
    d = hookd(endpoints={"alerts": ops_ep(ops),
                         "p": {"url": rcv.url("/p"), "failure_threshold": "2", "cooldown": "100ms",
                               "max_cooldown": "100ms", "max_attempts": "1000"}},
              sections=sections({"ops": {"endpoint": "alerts", "quiet": "5s"}}))
    d.enqueue("p", {"i": 1})
    d.enqueue("p", {"i": 2})
    opened = wait_event(ops, "endpoint.breaker_opened", "p")[0]
    assert opened["figures"]["consecutive_failures"] >= 2 and opened["figures"]["failure_threshold"] == 2
    assert opened["reason"] and opened["time"].endswith("Z")
    req = [r for r in ops.snapshot("/ops") if json.loads(r.body)["type"] == "endpoint.breaker_opened"][0]
    assert verify_signature(OPS_SECRET, req.headers, req.body)
    assert req.headers.get("webhook-id", "").startswith("ops_")
    # recover, then fail again, all within the quiet period: held
    rcv.set(200)
    wait_until(lambda: d.endpoints()["p"]["state"] == "closed", 10, msg="breaker closed")
    rcv.set(503)
    d.enqueue("p", {"i": 3})
    d.enqueue("p", {"i": 4})
    wait_until(lambda: d.endpoints()["p"]["state"] in ("open", "half_open"), 10, msg="breaker open again")
    assert len(received(ops, None, "p")) == 1, received(ops, None, "p")
    # one summary once the period is over, in the state the breaker ended in
    wait_until(lambda: len(received(ops, None, "p")) >= 2, 20, msg="the flapping summary")
    summary = received(ops, None, "p")[1]
    assert summary["figures"]["transitions"] >= 2, summary
    assert "quiet period" in summary["reason"], summary
    # every transition is in the log; the ops endpoint got two events
    assert len(events(d, "breaker_transition", endpoint="p")) >= 4


def test_auto_disable_keeps_queue_and_resume_enables(hookd, receiver):
    ops, rcv = receiver(200), receiver(200)
    rcv.set(503, "/p")
    d = hookd(endpoints={"alerts": ops_ep(ops),
                         "p": {"url": rcv.url("/p"), "disable_after": "1s", "failure_threshold": "1000",
                               "max_attempts": "1000"},
                         "q": {"url": rcv.url("/q")}},
              sections=sections({"ops": {"endpoint": "alerts"}}))
    ids = [d.enqueue("p", {"i": i})["id"] for i in range(3)]
    ev = wait_event(ops, "endpoint.disabled", "p")[0]
    assert ev["reason"] == "disabled: no successful delivery for 1s", ev
    assert ev["figures"]["consecutive_failures"] >= 2 and ev["figures"]["disable_after_ms"] == 1000
    assert ev["figures"]["last_error_class"] == "http_503"
    e = d.endpoints()["p"]
    assert e["paused"] is True and e["status"] == "disabled" and e["pause_reason"] == ev["reason"], e
    assert events(d, "endpoint_disabled", endpoint="p")
    # the queue is kept: nothing dead, nothing more sent once idle
    assert all(d.status(i) in ("pending", "failed") for i in ids), [d.status(i) for i in ids]
    d.wait_status(d.enqueue("q", {"fence": 1})["id"], "delivered")
    sent = rcv.count("/p")
    d.enqueue("p", {"i": 3})
    d.wait_status(d.enqueue("q", {"fence": 2})["id"], "delivered")
    assert rcv.count("/p") == sent
    # the table shows it; a restart keeps it
    p = cli(d, "endpoints")
    assert p.returncode == 0 and any(l.split()[0] == "p" and "disabled" in l.split() for l in p.stdout.splitlines()), p.stdout
    d.restart()
    e = d.endpoints()["p"]
    assert e["status"] == "disabled" and e["pause_reason"] == ev["reason"], e
    # resumed while still failing: a whole disable_after again (the clock
    # restarts at the resume), then disabled once more
    t_resume = int(time.time() * 1000)
    r = cli(d, "resume", "p")
    assert r.returncode == 0, r.stderr
    en = wait_event(ops, "endpoint.enabled", "p")[0]
    assert en["reason"] == "operator"
    again = wait_event(ops, "endpoint.disabled", "p", n=2)[1]
    assert again["figures"]["failing_since_ms"] >= t_resume - 50, (again, t_resume)
    # resume for good: the kept messages go out
    rcv.set(200, "/p")
    r = cli(d, "resume", "p")
    assert r.returncode == 0, r.stderr
    wait_event(ops, "endpoint.enabled", "p", n=2)
    for i in ids:
        d.wait_status(i, "delivered", timeout=15)
    e = d.endpoints()["p"]
    assert e["status"] == "active" and e["pause_reason"] is None, e


def test_pause_and_gone_events_and_the_chosen_types(hookd, receiver):
    ops, rcv = receiver(200), receiver(200)
    rcv.set(410, "/gone")
    d = hookd(endpoints={"alerts": ops_ep(ops), "a": {"url": rcv.url("/a")}, "g": {"url": rcv.url("/gone")}},
              sections=sections({"ops": {"endpoint": "alerts", "event_types": "endpoint.paused"}}))
    assert cli(d, "pause", "a").returncode == 0
    ev = wait_event(ops, "endpoint.paused", "a")[0]
    assert ev["reason"] == "operator"
    d.enqueue("g", {"x": 1})
    ev = wait_event(ops, "endpoint.paused", "g")[0]
    assert ev["reason"] == "410 Gone" and ev["figures"]["status_code"] == 410
    assert d.endpoints()["g"]["pause_reason"] == "410 Gone"
    # endpoint.enabled was not chosen: resuming sends nothing
    assert cli(d, "resume", "a").returncode == 0
    assert cli(d, "pause", "a").returncode == 0
    wait_event(ops, "endpoint.paused", "a", n=2)
    d.idle()
    assert [e["type"] for e in received(ops)] == ["endpoint.paused"] * 3, received(ops)
    # a bad type is refused by check-config, naming it
    d.write_config(dict(d.sections, ops={"endpoint": "alerts", "event_types": "endpoint.paused, endpoint.exploded"}))
    p = cli(d, "check-config")
    assert p.returncode != 0 and "[ops] event_types" in p.stderr and "endpoint.exploded" in p.stderr, p.stderr


def test_ops_endpoint_outside_fanout_and_never_about_itself(hookd, receiver):
    ops, rcv = receiver(503), receiver(200)
    d = hookd(endpoints={"alerts": ops_ep(ops, failure_threshold="1", max_attempts="1"),
                         "a": {"url": rcv.url("/a"), "event_types": "*"}},
              sections=sections({"ops": {"endpoint": "alerts"}}))
    r = d.enqueue(payload={"order": 1}, event_type="order.paid")
    assert [x["endpoint"] for x in r["deliveries"]] == ["a"], r
    # addressed by name it still takes a message, which fails and opens
    # its breaker: that is logged, never queued for itself
    d.wait_status(d.enqueue("alerts", {"t": 1})["id"], "dead_letter")
    wait_until(lambda: events(d, "breaker_transition", endpoint="alerts", to="open"), 10, msg="ops breaker open")
    d.idle()
    about_self = d.sql("SELECT count(*) FROM webhook_queue WHERE event_type LIKE 'endpoint.%' AND "
                       "payload LIKE '%\"endpoint\":\"alerts\"%'")
    assert about_self == [(0,)], about_self


def test_alerts_send_one_event_when_they_start(hookd, receiver):
    ops, rcv = receiver(200), receiver(500)
    d = hookd(endpoints={"alerts": ops_ep(ops),
                         "held": {"url": rcv.url("/held"), "paused": "yes"},
                         "dead": {"url": rcv.url("/dead"), "max_attempts": "1"}},
              sections=sections({"ops": {"endpoint": "alerts", "min_free": "100%",
                                         "space_check_interval": "200ms"}}))
    # low space: under "100%" every file system is
    low = wait_event(ops, "storage.low_space")[0]
    assert low["figures"]["free_bytes"] < low["figures"]["total_bytes"] and low["endpoint"] is None
    # the oldest pending message (a paused endpoint's) passes the 1 s alert
    d.enqueue("held", {"x": 1})
    old = wait_event(ops, "queue.oldest_pending_alert")[0]
    assert old["figures"]["oldest_pending_age_ms"] > 1000 and old["figures"]["threshold_ms"] == 1000
    # dead letters growing
    d.wait_status(d.enqueue("dead", {"x": 1})["id"], "dead_letter")
    dl = wait_event(ops, "dead_letters.growing")[0]
    assert dl["figures"]["dead_letter"] >= 1
    # conditions that last send nothing more: three more summaries and
    # space checks, still one event of each
    n = len(events(d, "health_summary"))
    wait_until(lambda: len(events(d, "health_summary")) >= n + 3, 10, msg="three more summaries")
    d.wait_status(d.enqueue("alerts", {"fence": 1})["id"], "delivered")
    assert len(events(d, "alert_oldest_pending")) > 1
    assert len(received(ops, "queue.oldest_pending_alert")) == 1
    assert len(received(ops, "storage.low_space")) == 1
    assert len(received(ops, "dead_letters.growing")) == 1
