"""Storage semantics over the socket: what the storage redesign fixed.

- deleting an endpoint with deliveries in flight strands nothing: their
  late results leave the rows dead letters, and nothing counts as pending;
- the dead-letter analysis groups failures by a stable class, not by a
  message holding a body excerpt;
- an attempt that never reached the endpoint is no latency sample.
"""
import threading

from conftest import Reply, wait_until


def metric(d, name, **labels):
    """One sample of hookd's own metrics (0 when absent)."""
    text = d.request({"op": "metrics"})["text"]
    want = name + ("{" + ",".join('%s="%s"' % kv for kv in sorted(labels.items())) + "}" if labels else "")
    for line in text.splitlines():
        if line.startswith(want + " "):
            return float(line.split()[-1])
    return 0.0


def test_delete_with_20_in_flight_strands_nothing(hookd, receiver):
    gate = threading.Event()
    arrived = []

    def held(req):
        arrived.append(req)   # the receiver records a request once answered
        gate.wait(30)
        return Reply(503, body="late answer")

    rcv = receiver(200)
    rcv.set(held, "/gone")
    d = hookd()
    # fixed concurrency: 20 at once to a receiver that holds them all
    r = d.request({"op": "endpoint.put", "name": "gone", "url": rcv.url("/gone"), "max_in_flight": 32,
                   "adaptive": False, "timeout": "30s"})
    assert r["ok"] is True, r
    with d.client() as c:
        ids = [x["id"] for x in c.pipeline([{"op": "enqueue", "endpoint": "gone", "payload": {"i": i}}
                                            for i in range(20)])]
    wait_until(lambda: len(arrived) == 20, 10, msg="20 requests held by the receiver")
    assert d.stats()["in_flight"] == 20
    r = d.request({"op": "endpoint.delete", "name": "gone"})
    assert r == {"ok": True, "dead_lettered": 20}, r
    gate.set()
    # the 20 late results come back (counted as attempts) and change nothing
    wait_until(lambda: metric(d, "hookd_deliveries_total", outcome="retry") >= 20, 20, msg="20 late results")
    rows = [d.row(i) for i in ids]
    assert [x["status"] for x in rows] == ["dead_letter"] * 20, rows
    assert {x["last_error_class"] for x in rows} == {"endpoint_deleted"}, rows
    s = d.stats()
    assert (s["pending"], s["awaiting_retry"], s["in_flight"]) == (0, 0, 0), s
    assert s["oldest_pending"] is None, s
    assert d.sql("SELECT count(*) FROM endpoint_latency")[0][0] == 0, "a deleted endpoint's late answers are no attempts"


def test_30_different_503_bodies_are_one_dead_letter_group(hookd, receiver):
    n = [0]
    lock = threading.Lock()

    def varied(req):
        with lock:
            n[0] += 1
            return Reply(503, body="upstream hiccup #%d at shard %d" % (n[0], n[0] * 7))

    rcv = receiver(varied)
    d = hookd(endpoints={"flaky": {"url": rcv.url("/f"), "max_attempts": 1, "failure_threshold": 1000}})
    with d.client() as c:
        ids = [x["id"] for x in c.pipeline([{"op": "enqueue", "endpoint": "flaky", "payload": {"i": i}}
                                            for i in range(30)])]
    for i in ids:
        d.wait_status(i, "dead_letter")
    errors = {d.row(i)["last_error"] for i in ids}
    assert len(errors) == 30, "each dead letter keeps its own body excerpt"
    r = d.request({"op": "dead_letters"})
    assert r["ok"] is True and len(r["endpoints"]) == 1, r
    g = r["endpoints"][0]
    assert g["endpoint"] == "flaky" and g["dead_count"] == 30, g
    assert g["primary_error"] == "http_503" and g["primary_status_code"] == 503, g
    assert g["example_error"].startswith("HTTP 503: upstream hiccup #"), g


def test_refused_attempt_is_no_latency_sample(hookd, receiver):
    rcv = receiver(200)
    # the SSRF guard refuses 10.0.0.1 before connecting (no allow-list for it)
    d = hookd(endpoints={"blocked": {"url": "http://10.0.0.1:9/x", "max_attempts": 1},
                         "ok": {"url": rcv.url("/ok")}})
    a = d.enqueue("blocked", {"x": 1})["id"]
    b = d.enqueue("ok", {"x": 1})["id"]
    d.wait_status(a, "dead_letter")
    d.wait_status(b, "delivered")
    m = d.get(a)
    assert m["attempts"][0]["response_ms"] is None and m["attempts"][0]["error_class"] == "ssrf_blocked", m
    assert d.get(b)["attempts"][0]["response_ms"] is not None
    rows = dict(d.sql("SELECT e.name, count(l.response_ms) FROM endpoints e JOIN endpoint_latency l "
                      "ON l.endpoint_id = e.id GROUP BY e.name"))
    assert rows.get("blocked", 0) == 0 and rows["ok"] == 1, rows
