"""Payload filters and event type patterns: fan-out stores rows only for
the endpoints whose filter passes; a direct enqueue to an endpoint whose
filter does not pass answers ok, filtered, and stores nothing; each
endpoint's count in the metrics; a bad filter refused with its position
by endpoint.put, the INI file and check-config; filters kept through a
restart and endpoint.put round trip."""
from conftest import error_code, wait_until


def filtered_metric(d, name):
    text = d.request({"op": "metrics"})["text"]
    for line in text.splitlines():
        if line.startswith('hookd_endpoint_filtered_total{endpoint="%s"}' % name):
            return float(line.split()[-1])
    return 0.0


def test_fanout_and_direct_enqueue_filtered(hookd, receiver):
    rcv = receiver(200)
    d = hookd(endpoints={
        "conv": {"url": rcv.url("/conv"), "event_types": "order.*",
                     "filter": "status in (approved, rebill) and amount >= 10"},
        "de": {"url": rcv.url("/de"), "event_types": "order.created, *.refunded", "filter": "data.country = DE"},
        "all": {"url": rcv.url("/all"), "event_types": "order.*"},
        "other": {"url": rcv.url("/other"), "event_types": "user.created"},
    })
    cases = [
        # (type, payload, endpoints that get a row)
        ("order.created", {"status": "approved", "amount": 12.5, "data": {"country": "DE"}}, {"conv", "de", "all"}),
        ("order.created", {"status": "approved", "amount": 9.99, "data": {"country": "FR"}}, {"all"}),
        ("order.paid", {"status": "rebill", "amount": "10"}, {"conv", "all"}),
        ("order.paid", {"status": "pending", "amount": 50}, {"all"}),
        ("payment.refunded", {"data": {"country": "DE"}}, {"de"}),
    ]
    ids = []
    for n, (t, payload, want) in enumerate(cases):
        r = d.request({"op": "enqueue", "event_type": t, "event_id": "f%d" % n, "payload": payload})
        assert r["ok"] is True, r
        got = {x["endpoint"] for x in r["deliveries"]}
        assert got == want, (t, payload, r)
        subs = {"order.created": 3, "order.paid": 2, "payment.refunded": 1}[t]
        assert r.get("filtered", 0) == subs - len(want), r
        ids += [x["id"] for x in r["deliveries"]]
    # a fan-out every subscriber's filter keeps out: ok, nothing stored
    r = d.request({"op": "enqueue", "event_type": "payment.refunded", "event_id": "fx",
                   "payload": {"data": {"country": "US"}}})
    assert r["ok"] is True and r["deliveries"] == [] and r["filtered"] == 1, r
    # no subscriber at all is still an error
    r = d.request({"op": "enqueue", "event_type": "nothing.here", "payload": {}})
    assert error_code(r) == "no_subscribers", r
    # a direct enqueue the filter keeps out: ok, filtered, nothing stored
    r = d.request({"op": "enqueue", "endpoint": "conv", "event_id": "direct-1",
                   "payload": {"status": "chargeback", "amount": 100}})
    assert r == {"ok": True, "filtered": True, "event_id": "direct-1"}, r
    r = d.request({"op": "enqueue", "endpoint": "conv", "event_id": "direct-2",
                   "payload": {"status": "approved", "amount": 100}})
    assert r["ok"] is True and "id" in r and "filtered" not in r, r
    ids.append(r["id"])
    for i in ids:
        d.wait_status(i, "delivered")
    paths = sorted(q.path for q in rcv.requests)
    assert paths.count("/conv") == 3 and paths.count("/de") == 2 and paths.count("/all") == 4, paths
    assert "/other" not in paths
    stored = d.sql("SELECT count(*) FROM webhook_queue")[0][0]
    assert stored == len(ids), stored
    assert not d.sql("SELECT id FROM webhook_queue WHERE event_id IN ('direct-1', 'fx')")
    # the counters: conv kept out 3 (two fan-outs, one direct), de 2, all none
    wait_until(lambda: filtered_metric(d, "conv") == 3, msg="conv counter")
    assert filtered_metric(d, "de") == 2 and filtered_metric(d, "all") == 0
    # kept through a restart (stored with the endpoint's other keys)
    d.restart()
    r = d.request({"op": "enqueue", "endpoint": "conv", "payload": {"status": "approved", "amount": 1}})
    assert r["ok"] is True and r.get("filtered") is True, r


def test_bad_filter_refused_with_its_position(hookd, receiver):
    rcv = receiver(200)
    d = hookd()
    r = d.request({"op": "endpoint.put", "name": "x", "url": rcv.url("/x"), "filter": "status in (a b)"})
    assert error_code(r) == "bad_request", r
    assert r["error"]["message"] == "filter: expected ',' or ')' in the list at position 14", r
    r = d.request({"op": "endpoint.put", "name": "x", "url": rcv.url("/x"), "filter": "amount >= 10 and"})
    assert error_code(r) == "bad_request" and "position 17" in r["error"]["message"], r
    r = d.request({"op": "endpoint.put", "name": "x", "url": rcv.url("/x"), "filter": "amount >= 10",
                   "event_types": "order.*"})
    assert r["ok"] is True, r
    assert d.endpoints()["x"]["settings"]["filter"] == "amount >= 10"
    r = d.request({"op": "enqueue", "endpoint": "x", "payload": {"amount": 3}})
    assert r.get("filtered") is True, r
    # the INI file: check-config and the daemon's start name the key and the position
    d.write_config({"endpoint.bad": {"url": rcv.url("/b"), "filter": "status = approved or (amount > 5"}})
    p = d.cli("check-config")
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert "endpoint.bad" in p.stderr and "filter" in p.stderr and "expected ')' at position 33 (the end)" in p.stderr, p.stderr
