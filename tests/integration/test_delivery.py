"""hookd delivery against a real HTTP receiver: bytes, headers, signatures,
retry/dead-letter classification, Retry-After, timeouts, SSRF guard,
crash and shutdown behaviour, isolation of a hanging endpoint, breaker."""
import json
import time

import pytest

from conftest import (HANG, RESET, ROOT, SECRET_A, SECRET_B, Reply, Sequence, error_code, pct, redirect,
                      retry_after, verify_signature, wait_until)

VERSION = (ROOT / "VERSION").read_text().strip()
DONE = ("delivered", "dead_letter")


def ep(rcv, path="/hook", **kw):
    d = {"url": rcv.url(path)}
    d.update(kw)
    return d


# ------------------------------------------------------------------ success

def test_success_exact_bytes_headers_signatures(hookd, receiver):
    rcv = receiver(200)
    d = hookd(endpoints={"a": ep(rcv, "/exact?x=1", secret=[SECRET_B, SECRET_A], header="X-Partner: acme")})
    payload = ('{"order": 12345678901234567890, "amount": 1.50, "name": "Zo\u00eb \u2713 \u65e5\u672c \U0001f600",'
               ' "esc": "\\u00e9\\n\\"q\\"", "n": [1, 2.0e3, -0.0, null, true],\t"deep": {"a": {}}}')
    line = '{"op":"enqueue","endpoint":"a","event_id":"evt_exact","payload":%s}' % payload
    t0 = time.time()
    with d.client() as c:
        c.send_line(line.encode("utf-8"))
        r = c.recv_json()
    assert r["ok"] is True, r
    req = rcv.wait_for(1)[0]
    assert req.method == "POST"
    assert req.path == "/exact?x=1"
    assert req.body == payload.encode("utf-8")
    h = req.headers
    assert h["content-type"] == "application/json"
    assert h["user-agent"] == "hookd/" + VERSION
    assert h["webhook-id"] == "evt_exact"
    assert abs(int(h["webhook-timestamp"]) - t0) < 10
    assert h["x-partner"] == "acme"
    assert int(h["content-length"]) == len(req.body)
    sigs = h["webhook-signature"].split(" ")
    assert len(sigs) == 2 and all(s.startswith("v1,") for s in sigs), sigs
    assert verify_signature(SECRET_A, h, req.body)
    assert verify_signature(SECRET_B, h, req.body)
    assert not verify_signature("whsec_" + "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB", h, req.body)
    row = d.wait_status(r["id"], "delivered")
    assert row["attempt_count"] == 1 and row["last_status_code"] == 200 and row["delivered_at"]
    m = d.get(r["id"])
    assert m["status"] == "delivered" and m["attempt_count"] == 1 and m["last_status_code"] == 200
    assert len(m["attempts"]) == 1 and m["attempts"][0]["status_code"] == 200
    assert d.stats()["delivered_last_hour"] >= 1
    d.idle()
    assert rcv.count() == 1


def test_no_secret_no_signature_header(hookd, receiver):
    rcv = receiver(200)
    d = hookd(endpoints={"a": ep(rcv)})
    r = d.enqueue("a", {"x": 1}, event_id="nosig")
    req = rcv.wait_for(1)[0]
    assert "webhook-signature" not in req.headers
    assert req.headers["webhook-id"] == "nosig"
    d.wait_status(r["id"], "delivered")


def test_fan_out_delivers_to_each_subscriber(hookd, receiver):
    rcv = receiver(200)
    d = hookd(endpoints={"a": ep(rcv, "/a", event_types="conversion"),
                         "b": ep(rcv, "/b", event_types="*"),
                         "c": ep(rcv, "/c", event_types="payment")})
    r = d.enqueue(payload={"k": 1}, event_type="conversion", event_id="fan1")
    assert sorted(x["endpoint"] for x in r["deliveries"]) == ["a", "b"]
    for x in r["deliveries"]:
        d.wait_status(x["id"], "delivered")
    d.idle()
    assert sorted(q.path for q in rcv.snapshot()) == ["/a", "/b"]
    assert {q.event_id for q in rcv.snapshot()} == {"fan1"}


# ------------------------------------------------------------------ retry and dead letter

def test_500_then_200_delivered_on_second_attempt(hookd, receiver):
    rcv = receiver(Sequence(500, 200))
    d = hookd(endpoints={"a": ep(rcv)})
    r = d.enqueue("a", {"x": 1})
    row = d.wait_status(r["id"], "delivered")
    assert row["attempt_count"] == 2
    assert rcv.count() == 2
    m = d.get(r["id"])
    assert [a["status_code"] for a in sorted(m["attempts"], key=lambda a: a["at"])] == [500, 200]


@pytest.mark.serial  # holds a wall-clock bound
def test_always_500_dead_letter_after_max_attempts(hookd, receiver):
    rcv = receiver(Reply(500, body=b"boom: database on fire"))
    d = hookd(endpoints={"a": ep(rcv, max_attempts=3)})
    r = d.enqueue("a", {"x": 1})
    row = d.wait_status(r["id"], "dead_letter")
    d.idle()             # nothing left to retry: no 4th attempt
    assert rcv.count() == 3
    assert row["attempt_count"] == 3
    assert row["last_status_code"] == 500
    assert "500" in row["last_error"] and "boom" in row["last_error"], row["last_error"]
    st = d.stats()
    assert st["dead_letter"] >= 1
    gaps = [b.t - a.t for a, b in zip(rcv.snapshot(), rcv.snapshot()[1:])]
    assert all(g < 2.0 for g in gaps), gaps   # max_delay 200ms


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_4xx_dead_letter_after_one_request(hookd, receiver, status):
    rcv = receiver(status)
    d = hookd(endpoints={"a": ep(rcv)})
    r = d.enqueue("a", {"x": 1})
    row = d.wait_status(r["id"], "dead_letter")
    d.idle()
    assert rcv.count() == 1
    assert row["attempt_count"] == 1 and row["last_status_code"] == status


@pytest.mark.parametrize("status", [408, 425, 502, 503, 504])
def test_retryable_statuses(hookd, receiver, status):
    rcv = receiver(Sequence(status, 200))
    d = hookd(endpoints={"a": ep(rcv)})
    r = d.enqueue("a", {"x": 1})
    row = d.wait_status(r["id"], "delivered")
    assert row["attempt_count"] == 2 and rcv.count() == 2


def test_410_dead_letters_and_pauses_endpoint(hookd, receiver):
    rcv = receiver(410)
    d = hookd(endpoints={"a": ep(rcv), "other": ep(rcv, "/other")})
    r1 = d.enqueue("a", {"n": 1})
    row = d.wait_status(r1["id"], "dead_letter")
    assert row["last_status_code"] == 410 and row["attempt_count"] == 1
    eps = wait_until(lambda: d.endpoints()["a"]["paused"] and d.endpoints(), 5, msg="endpoint a paused")
    assert eps["other"]["paused"] is False
    rcv.set(200)
    r2 = d.enqueue("a", {"n": 2})
    r3 = d.enqueue("other", {"n": 3})
    d.wait_status(r3["id"], "delivered")   # the other endpoint still works, a was enqueued first
    assert rcv.count("/hook") == 1, "a paused endpoint was sent a message"
    assert d.status(r2["id"]) == "pending"
    # resume: the held message goes out
    assert d.request({"op": "resume", "endpoint": "a"})["ok"] is True
    d.wait_status(r2["id"], "delivered")
    assert d.status(r1["id"]) == "dead_letter"


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_redirect_is_dead_letter_and_not_followed(hookd, receiver, status):
    rcv = receiver()
    rcv.set(redirect(rcv.url("/target"), status), "/hook")
    rcv.set(200, "/target")
    d = hookd(endpoints={"a": ep(rcv)})
    r = d.enqueue("a", {"x": 1})
    row = d.wait_status(r["id"], "dead_letter")
    d.idle()
    assert row["last_status_code"] == status
    assert rcv.count("/target") == 0, "the redirect was followed"
    assert rcv.count("/hook") == 1


@pytest.mark.serial  # holds a wall-clock bound
@pytest.mark.parametrize("status", [429, 503])
def test_retry_after_is_a_floor(hookd, receiver, status):
    """Retry-After: 1 on 429/503 delays the next attempt by >= ~1s, even
    though the backoff alone (base 50ms) would retry much sooner."""
    rcv = receiver(Sequence(retry_after(1, status), 200))
    d = hookd(endpoints={"a": ep(rcv, base_delay="50ms", max_delay="5s")})
    r = d.enqueue("a", {"x": 1})
    d.wait_status(r["id"], "delivered", timeout=15)
    first, second = rcv.snapshot()[:2]
    gap = second.t - first.t_done
    assert 0.9 <= gap < 4.0, "next attempt %.3fs after a Retry-After: 1 answer" % gap


@pytest.mark.serial  # holds a wall-clock bound
@pytest.mark.parametrize("status", [429, 503])
def test_retry_after_is_capped_at_max_delay(hookd, receiver, status):
    """The floor is capped at max_delay: a receiver cannot park a message
    (or, with 429, its whole endpoint) for an hour with Retry-After: 3600."""
    rcv = receiver(Sequence(retry_after(3600, status), 200))
    d = hookd(endpoints={"a": ep(rcv, base_delay="50ms", max_delay="1s")})
    r = d.enqueue("a", {"x": 1})
    d.wait_status(r["id"], "delivered", timeout=10)
    first, second = rcv.snapshot()[:2]
    gap = second.t - first.t_done
    assert gap < 3.0, "next attempt %.3fs after Retry-After: 3600 with max_delay 1s" % gap


@pytest.mark.serial  # holds a wall-clock bound
def test_retry_after_below_max_delay(hookd, receiver):
    """With max_delay above the Retry-After value the floor holds."""
    rcv = receiver(Sequence(retry_after(1, 429), 200))
    d = hookd(endpoints={"a": ep(rcv, base_delay="50ms", max_delay="5s")})
    r = d.enqueue("a", {"x": 1})
    d.wait_status(r["id"], "delivered", timeout=15)
    first, second = rcv.snapshot()[:2]
    gap = second.t - first.t_done
    assert 0.9 <= gap < 4.0, gap


def test_timeout_is_retried(hookd, receiver):
    rcv = receiver(Sequence(HANG, 200))
    d = hookd(endpoints={"a": ep(rcv, timeout="500ms")})
    r = d.enqueue("a", {"x": 1})
    row = d.wait_status(r["id"], "delivered", timeout=10)
    assert row["attempt_count"] == 2
    first, second = rcv.snapshot()[:2]
    assert second.t - first.t >= 0.45
    m = d.get(r["id"])
    attempts = sorted(m["attempts"], key=lambda a: a["at"])
    assert attempts[0]["error_class"] == "timeout" and attempts[0]["status_code"] is None, attempts
    assert 400 <= attempts[0]["response_ms"] <= 3000, attempts
    assert attempts[1]["status_code"] == 200


def test_timeout_recorded_in_last_error(hookd, receiver):
    rcv = receiver(HANG)
    d = hookd(endpoints={"a": ep(rcv, timeout="300ms", max_attempts=1)})
    r = d.enqueue("a", {"x": 1})
    row = d.wait_status(r["id"], "dead_letter", timeout=10)
    assert row["last_status_code"] is None
    assert "timeout" in row["last_error"].lower(), row["last_error"]


def test_connection_reset_is_retried(hookd, receiver):
    rcv = receiver(Sequence(RESET, 200))
    d = hookd(endpoints={"a": ep(rcv)})
    r = d.enqueue("a", {"x": 1})
    row = d.wait_status(r["id"], "delivered")
    assert row["attempt_count"] == 2 and rcv.count() == 2
    attempts = sorted(d.get(r["id"])["attempts"], key=lambda a: a["at"])
    assert attempts[0]["status_code"] is None and attempts[0]["error_class"] in ("io", "connect"), attempts


def test_connection_refused_is_retried(hookd, receiver):
    from conftest import free_port
    port = free_port()
    d = hookd(endpoints={"a": {"url": "http://127.0.0.1:%d/" % port, "max_attempts": 2}})
    r = d.enqueue("a", {"x": 1})
    row = d.wait_status(r["id"], "dead_letter")
    assert row["attempt_count"] == 2 and row["last_status_code"] is None
    assert row["last_error"].startswith("connect"), row["last_error"]


def test_webhook_id_stable_across_retries(hookd, receiver):
    rcv = receiver(Sequence(500, RESET, 503, 200))
    d = hookd(endpoints={"a": ep(rcv, secret=SECRET_A)})
    r = d.enqueue("a", {"x": "retry me"}, event_id="evt_stable")
    d.wait_status(r["id"], "delivered")
    reqs = rcv.snapshot()
    assert len(reqs) == 4
    assert [q.event_id for q in reqs] == ["evt_stable"] * 4
    assert len({q.body for q in reqs}) == 1
    ts = [int(q.headers["webhook-timestamp"]) for q in reqs]
    assert ts == sorted(ts)
    assert all(verify_signature(SECRET_A, q.headers, q.body) for q in reqs)


# ------------------------------------------------------------------ SSRF guard

@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "127.0.0.2", "2130706433", "0x7f000001", "0.0.0.0",
                                  "[::ffff:7f00:1]"])
def test_ssrf_guard_refuses_loopback_by_default(hookd, receiver, host):
    rcv = receiver(200)
    url = "http://%s:%d/hook" % (host, rcv.port)
    d = hookd(endpoints={"a": {"url": url}}, sections={"delivery": {"allow_networks": None}})
    r = d.enqueue("a", {"x": 1})
    row = d.wait_status(r["id"], "dead_letter")
    assert "SSRF" in row["last_error"], row["last_error"]
    assert row["attempt_count"] == 1 and row["last_status_code"] is None
    d.idle()
    assert rcv.count() == 0


@pytest.mark.parametrize("host", ["0.0.0.0", "[::1]"])
def test_ssrf_guard_allow_list_is_precise(hookd, receiver, host):
    """allow_networks = 127.0.0.0/8 lets 127.x through, not other spellings
    of this host (0.0.0.0 reaches local listeners on Linux)."""
    rcv = receiver(200)
    d = hookd(endpoints={"a": {"url": "http://%s:%d/hook" % (host, rcv.port), "max_attempts": 1}})
    r = d.enqueue("a", {"x": 1})
    row = d.wait_status(r["id"], "dead_letter")
    d.idle()
    assert rcv.count() == 0, "request reached the receiver via %s" % host
    assert "SSRF" in row["last_error"], row["last_error"]


# ------------------------------------------------------------------ crash and shutdown

def test_kill9_during_delivery_nothing_lost_or_stuck(hookd, receiver, capsys):
    rcv = receiver(Reply(200, delay=0.3))
    d = hookd(endpoints={"a": ep(rcv)})
    n = 200
    with d.client() as c:
        replies = c.pipeline([{"op": "enqueue", "endpoint": "a", "event_id": "k-%03d" % i, "payload": {"i": i}}
                              for i in range(n)])
    assert all(x["ok"] for x in replies)
    rcv.wait_for(n // 3, timeout=20)
    before = rcv.count()
    d.kill()
    assert before < n, "everything was delivered before the kill; the test proves nothing"
    inflight_at_kill = d.sql("SELECT count(*) FROM webhook_queue WHERE status = 'in_flight'")[0][0]
    d.start()
    wait_until(lambda: sum(d.statuses().get(s, 0) for s in DONE) == n, 40,
               msg="all %d messages delivered or dead after restart (%s)" % (n, d.statuses()))
    st = d.statuses()
    assert st.get("in_flight", 0) == 0 and st.get("pending", 0) == 0 and st.get("failed", 0) == 0, st
    assert st.get("delivered") == n, st
    seen = rcv.event_ids()
    missing = {"k-%03d" % i for i in range(n)} - set(seen)
    assert not missing, sorted(missing)[:10]
    dups = len(seen) - len(set(seen))
    with capsys.disabled():
        print("\nkill -9 during delivery: %d requests before the kill, %d rows in_flight at the kill, "
              "%d duplicate deliveries after restart" % (before, inflight_at_kill, dups))
    assert dups <= inflight_at_kill + 64, (dups, inflight_at_kill)   # + the default in-flight cap
    assert "recovered_in_flight" in d.log()


@pytest.mark.serial  # holds a wall-clock bound
def test_sigterm_lets_transfers_in_flight_finish(hookd, receiver):
    rcv = receiver(Reply(200, delay=1.0))
    # fixed concurrency: five in flight at once, whatever the limiter would learn
    d = hookd(endpoints={"a": ep(rcv, adaptive=False)}, sections={"delivery": {"shutdown_grace": "5s"}})
    ids = [d.enqueue("a", {"i": i})["id"] for i in range(5)]
    rcv.wait_for(5)
    assert all(d.status(i) == "in_flight" for i in ids)
    t0 = time.monotonic()
    rc = d.terminate(timeout=20)
    took = time.monotonic() - t0
    assert rc == 0, d.log()
    assert took < 4.5, "shutdown took %.1fs for 1s transfers" % took
    assert [d.status(i) for i in ids] == ["delivered"] * 5
    assert not d.sock.exists()


@pytest.mark.serial  # holds a wall-clock bound
def test_sigterm_grace_expired_returns_rows_to_queue(hookd, receiver):
    rcv = receiver(HANG)
    d = hookd(endpoints={"a": ep(rcv, timeout="30s", adaptive=False)},
              sections={"delivery": {"shutdown_grace": "500ms"}})
    ids = [d.enqueue("a", {"i": i})["id"] for i in range(3)]
    rcv.wait_for(3)
    t0 = time.monotonic()
    rc = d.terminate(timeout=20)
    took = time.monotonic() - t0
    assert rc == 0, d.log()
    assert took < 4, "shutdown took %.1fs with shutdown_grace 500ms" % took
    rows = [d.row(i) for i in ids]
    assert all(r["status"] in ("pending", "failed") for r in rows), rows
    assert all(r["attempt_count"] == 0 for r in rows), "an aborted transfer counted as an attempt: %r" % rows


def test_enqueue_during_shutdown_refused_or_stored(hookd, receiver):
    """While stopping (transfers finishing), a connected client's enqueue is
    answered shutting_down, or stored: never acknowledged and lost."""
    rcv = receiver(Reply(200, delay=1.0))
    d = hookd(endpoints={"a": ep(rcv)}, sections={"delivery": {"shutdown_grace": "5s"}})
    c = d.client()
    d.enqueue("a", {"i": 0})
    rcv.wait_for(1)
    d.proc.send_signal(__import__("signal").SIGTERM)
    wait_until(lambda: "event=stopping" in d.log(), 5, msg="hookd stopping")
    try:
        r = c.enqueue("a", {"late": True}, event_id="late")
    except (EOFError, OSError):
        r = None
    c.close()
    assert d.terminate(timeout=20) == 0
    if r is not None and r.get("ok"):
        assert d.sql("SELECT count(*) FROM webhook_queue WHERE event_id = 'late'")[0][0] == 1
    elif r is not None:
        assert error_code(r) == "shutting_down", r


# ------------------------------------------------------------------ isolation

@pytest.mark.serial  # holds a wall-clock bound
def test_hanging_endpoint_does_not_slow_healthy_one(hookd, receiver, capsys):
    rcv = receiver()
    rcv.set(HANG, "/hang")
    rcv.set(200, "/ok")
    # the hanging one at fixed concurrency: the worst case, its slots all
    # held (adaptive, it would get one request at a time)
    d = hookd(endpoints={"hang": ep(rcv, "/hang", timeout="3s", adaptive=False), "ok": ep(rcv, "/ok")})
    with d.client() as c:
        c.pipeline([{"op": "enqueue", "endpoint": "hang", "payload": {"i": i}} for i in range(50)])
        rcv.wait_for(10, path="/hang")
        sent = {}
        for i in range(200):
            eid = "ok-%03d" % i
            sent[eid] = time.time()
            assert c.enqueue("ok", {"i": i}, event_id=eid)["ok"]
    t_last_enqueue = time.time()
    reqs = rcv.wait_for(200, timeout=15, path="/ok")
    done = max(q.t_wall for q in reqs)
    lat = [(q.t_wall - sent[q.event_id]) * 1000 for q in reqs]
    with capsys.disabled():
        print("\nhealthy endpoint beside a hanging one: 200 deliveries, enqueue->receive p50 %.0f ms, "
              "p99 %.0f ms, max %.0f ms; last one %.2fs after the last enqueue"
              % (pct(lat, 50), pct(lat, 99), max(lat), done - t_last_enqueue))
    assert done - t_last_enqueue < 3.0
    assert pct(lat, 99) < 2500, "p99 %.0f ms" % pct(lat, 99)
    assert len({q.event_id for q in reqs}) == 200


# ------------------------------------------------------------------ circuit breaker

@pytest.mark.serial  # holds a wall-clock bound
def test_breaker_opens_probes_once_and_closes(hookd, receiver):
    rcv = receiver(Sequence(*([500] * 5 + [200])))
    d = hookd(endpoints={"a": ep(rcv, max_in_flight=1, max_attempts=100, base_delay="1ms", max_delay="10ms")},
              sections={"breaker": {"failure_threshold": 5, "cooldown": "2s", "max_cooldown": "10s"}})
    ids = [d.enqueue("a", {"i": i}, event_id="br-%d" % i)["id"] for i in range(4)]
    rcv.wait_for(5, timeout=10)
    t5 = rcv.snapshot()[4].t
    # hookd's own state, not a guessed wait; that nothing went out while
    # open is what the probe's gap below shows
    wait_until(lambda: d.endpoints()["a"]["state"] == "open", 5, msg="breaker open")
    state = d.sql("SELECT h.state FROM endpoint_health h JOIN endpoints e ON e.id = h.endpoint_id "
                  "WHERE e.name = 'a'")
    assert state == [("open",)], state
    assert d.endpoints()["a"]["state"] == "open"
    reqs = rcv.wait_for(6, timeout=6)
    probe = reqs[5]
    gap = probe.t - t5
    assert 1.8 <= gap <= 4.0, "probe %.2fs after the breaker opened (cooldown 2s)" % gap
    # the probe was alone: the next request started only after its answer
    reqs = rcv.wait_for(6 + 3, timeout=10)
    assert probe.t_done is not None and reqs[6].t >= probe.t_done - 0.01, (probe.t_done, reqs[6].t)
    for i in ids:
        d.wait_status(i, "delivered")
    wait_until(lambda: d.sql("SELECT h.state FROM endpoint_health h JOIN endpoints e ON e.id = h.endpoint_id "
                             "WHERE e.name = 'a'") == [("closed",)], 5, msg="breaker closed")
    assert rcv.count() == 5 + 4


def test_breaker_failed_probe_reopens(hookd, receiver):
    rcv = receiver(500)
    d = hookd(endpoints={"a": ep(rcv, max_in_flight=1, max_attempts=100, base_delay="1ms", max_delay="10ms")},
              sections={"breaker": {"failure_threshold": 3, "cooldown": "1s", "max_cooldown": "10s"}})
    d.enqueue("a", {"i": 0})
    reqs = rcv.wait_for(4, timeout=8)        # 3 failures, then the probe after ~1s
    assert reqs[3].t - reqs[2].t >= 0.8
    # the failed probe reopened the breaker with the cooldown doubled to
    # 2s: the next probe is the 5th request, no sooner (no guessed wait:
    # the gap between the two probes is the check)
    reqs = rcv.wait_for(5, timeout=6)
    assert reqs[4].t - reqs[3].t >= 1.8, "a failed probe must reopen the breaker: %.2fs" % (reqs[4].t - reqs[3].t)
