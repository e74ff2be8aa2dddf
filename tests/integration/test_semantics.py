"""Promises kept under admin actions and restarts (issue 32's defects):
a pause, a delete or a new definition reaches jobs already handed to a
delivery thread; requeue refuses rows whose endpoint is gone; an
explicit `paused` applies to an existing endpoint; the adaptive limit
survives a restart; a node with an older config file does not remove
the cluster's endpoints.

Jobs are made to wait for a host slot with max_host_connections = 1,
adaptive = no (every row claimed at once) and a receiver that answers
slowly: the first request is running while the others wait on the
delivery thread."""
import pytest

from conftest import BACKEND, SECRET_A, SECRET_B, Reply, error_code, verify_signature, wait_until

SLOW = Reply(200, delay=0.4)
ONE_AT_A_TIME = {"delivery": {"max_host_connections": 1, "adaptive": False}}


def admin(d, req):
    r = d.request(req)
    assert r.get("ok") is True, (req, r)
    return r


def no_in_flight(d):
    """hookd's own count: no row in flight (what a delivery thread still
    holds has come back)."""
    wait_until(lambda: d.stats()["in_flight"] == 0, 20, msg="no row in flight")


def enqueue_n(d, endpoint, n, prefix):
    ids = []
    with d.client() as c:
        for i in range(n):
            r = c.enqueue(endpoint, {"i": i}, event_id="%s%d" % (prefix, i))
            assert r["ok"] is True, r
            ids.append(r["id"])
    return ids


def sent_ids(rx, path):
    return [r.event_id for r in rx.snapshot(path)]


# ------------------------------------------------------------------ 1: jobs already handed out

def test_pause_reaches_jobs_waiting_for_a_host_slot(hookd, receiver):
    rx = receiver(SLOW)
    d = hookd(endpoints={"a": {"url": rx.url("/a"), "secret": SECRET_A}}, sections=ONE_AT_A_TIME)
    ids = enqueue_n(d, "a", 6, "pa")
    rx.wait_for(1, path="/a")
    admin(d, {"op": "pause", "endpoint": "a"})
    at_pause = len(sent_ids(rx, "/a"))
    no_in_flight(d)
    sent = sent_ids(rx, "/a")
    # at most one transfer may have started while the pause was being
    # committed; everything else waited and must not have gone
    assert len(sent) <= at_pause + 1, (at_pause, sent)
    assert len(sent) < len(ids), sent
    unsent = [m for m in ids if d.row(m)["event_id"] not in sent]
    for m in unsent:
        row = d.row(m)
        assert row["status"] == "pending" and row["attempt_count"] == 0, row
    admin(d, {"op": "resume", "endpoint": "a"})
    for m in ids:
        d.wait_status(m, "delivered", 20)
    assert sorted(set(sent_ids(rx, "/a"))) == sorted("pa%d" % i for i in range(6))


def test_delete_reaches_jobs_waiting_for_a_host_slot(hookd, receiver):
    rx = receiver(SLOW)
    # c shares the host: its message waits behind b's jobs on the same
    # delivery thread, so once it is delivered b's jobs have all started
    # or come back (the deleted rows are dead letters at once: hookd's
    # in_flight count cannot tell)
    d = hookd(endpoints={"c": {"url": rx.url("/c")}}, sections=ONE_AT_A_TIME)
    admin(d, {"op": "endpoint.put", "name": "b", "url": rx.url("/b"), "secrets": [SECRET_A]})
    ids = enqueue_n(d, "b", 6, "db")
    rx.wait_for(1, path="/b")
    admin(d, {"op": "endpoint.delete", "name": "b"})
    at_delete = len(sent_ids(rx, "/b"))
    (sentinel,) = enqueue_n(d, "c", 1, "dc")
    d.wait_status(sentinel, "delivered", 20)
    sent = sent_ids(rx, "/b")
    assert len(sent) <= at_delete + 1, (at_delete, sent)
    for m in ids:
        row = d.row(m)
        if row["event_id"] not in sent:
            assert row["status"] == "dead_letter" and row["last_error_class"] == "endpoint_deleted", row


def test_put_reaches_jobs_waiting_for_a_host_slot(hookd, receiver):
    rx = receiver(SLOW)
    d = hookd(sections=ONE_AT_A_TIME)
    admin(d, {"op": "endpoint.put", "name": "b", "url": rx.url("/old"), "secrets": [SECRET_A]})
    ids = enqueue_n(d, "b", 6, "pb")
    rx.wait_for(1, path="/old")
    admin(d, {"op": "endpoint.put", "name": "b", "url": rx.url("/new"), "secrets": [SECRET_B]})
    at_put = len(sent_ids(rx, "/old"))
    for m in ids:
        d.wait_status(m, "delivered", 20)
    old = sent_ids(rx, "/old")
    assert len(old) <= at_put + 1, (at_put, old)
    new = rx.snapshot("/new")
    assert new, "nothing went to the new URL"
    for r in new:
        assert verify_signature(SECRET_B, r.headers, r.body), "signed with the old secret: %r" % r
        assert not verify_signature(SECRET_A, r.headers, r.body), r
    assert sorted(set(old) | {r.event_id for r in new}) == sorted("pb%d" % i for i in range(6))


# ------------------------------------------------------------------ 3: requeue and a deleted endpoint

def test_requeue_refuses_a_deleted_endpoints_message(hookd, receiver):
    rx = receiver(200)
    d = hookd(endpoints={"c": {"url": rx.url("/c")}})
    admin(d, {"op": "endpoint.put", "name": "b", "url": rx.url("/b"), "paused": True})
    (m,) = enqueue_n(d, "b", 1, "orphan")
    admin(d, {"op": "endpoint.delete", "name": "b"})
    assert d.row(m)["status"] == "dead_letter"

    r = d.request({"op": "requeue", "id": m})
    assert error_code(r) == "unknown_endpoint", r
    assert "deleted endpoint" in r["error"]["message"], r
    row = d.row(m)
    assert row["status"] == "dead_letter" and row["last_error_class"] == "endpoint_deleted", row
    assert d.stats()["pending"] == 0
    # a message that does not exist is still not_found
    assert error_code(d.request({"op": "requeue", "id": m + 1000})) == "not_found"

    # rows an older hookd left pending for a gone endpoint: dead letters
    # again at the next start, instead of waiting forever
    d.stop()
    assert d.rw_sql("UPDATE webhook_queue SET status = 'pending', attempt_count = 0 WHERE id = ?", (m,)) == 1
    d.start()
    row = d.row(m)
    assert row["status"] == "dead_letter" and row["last_error_class"] == "endpoint_deleted", row
    assert "orphans_dead_lettered" in d.log() and "count=1" in d.log()
    s = d.stats()
    assert s["pending"] == 0 and s["oldest_pending"] is None, s
    # what waits for a live endpoint is untouched
    (ok,) = enqueue_n(d, "c", 1, "live")
    d.wait_status(ok, "delivered")


# ------------------------------------------------------------------ 4: paused honoured when given

def delivered_past(d, endpoint, tag):
    """A message to another endpoint delivered: the dispatcher has been
    round since, so a row of a paused endpoint left pending was passed
    over, not merely not reached yet."""
    (m,) = enqueue_n(d, endpoint, 1, tag)
    d.wait_status(m, "delivered", 20)


def paused_in_list(d, name):
    return d.endpoints()[name]["paused"]


def test_endpoint_put_paused_on_an_existing_endpoint(hookd, receiver):
    rx = receiver(200)
    d = hookd(endpoints={"c": {"url": rx.url("/c")}})
    put = {"op": "endpoint.put", "name": "b", "url": rx.url("/b"), "secrets": [SECRET_A]}
    admin(d, put)
    (m0,) = enqueue_n(d, "b", 1, "b-before")
    d.wait_status(m0, "delivered")

    admin(d, dict(put, url=rx.url("/b2"), paused=True))
    assert paused_in_list(d, "b") is True
    assert d.sql("SELECT paused, pause_reason FROM endpoints WHERE name = 'b'") == [(1, "operator")]
    (m1,) = enqueue_n(d, "b", 1, "b-paused")
    delivered_past(d, "c", "c1")
    row = d.row(m1)
    assert row["status"] == "pending" and row["attempt_count"] == 0, row

    admin(d, dict(put, url=rx.url("/b2")))          # paused left out: stays paused
    assert paused_in_list(d, "b") is True
    delivered_past(d, "c", "c2")
    assert d.status(m1) == "pending"
    assert "endpoint_paused" in d.log() and "reason=operator" in d.log()

    admin(d, dict(put, url=rx.url("/b2"), paused=False))
    assert paused_in_list(d, "b") is False
    d.wait_status(m1, "delivered")
    assert [r.event_id for r in rx.snapshot("/b2")] == ["b-paused0"]
    assert d.sql("SELECT paused, pause_reason FROM endpoints WHERE name = 'b'") == [(0, None)]


def test_config_paused_applies_on_sighup_and_at_restart(hookd, receiver):
    import signal
    rx = receiver(200)
    eps = {"a": {"url": rx.url("/a")}, "c": {"url": rx.url("/c")}}
    d = hookd(endpoints=eps)
    assert paused_in_list(d, "a") is False

    def write(paused):
        secs = {k: dict(v) for k, v in d.sections.items()}
        secs["endpoint.a"]["paused"] = paused    # None: the key left out
        d.write_config(secs)

    # SIGHUP: paused = yes added to an existing endpoint
    write(True)
    d.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: paused_in_list(d, "a") is True, 10, msg="a paused by the reload")
    (m,) = enqueue_n(d, "a", 1, "a-paused")
    delivered_past(d, "c", "c1")
    assert d.status(m) == "pending"

    # the key left out: a restart keeps it paused (the state is the store's)
    write(None)
    d.restart()
    assert paused_in_list(d, "a") is True
    delivered_past(d, "c", "c2")
    assert d.status(m) == "pending"

    # paused = no said: resumed at restart
    write(False)
    d.restart()
    assert paused_in_list(d, "a") is False
    d.wait_status(m, "delivered")

    # and paused = yes added while stopped: paused at restart
    write(True)
    d.restart()
    assert paused_in_list(d, "a") is True
    (m2,) = enqueue_n(d, "a", 1, "a-again")
    delivered_past(d, "c", "c3")
    assert d.status(m2) == "pending"


# ------------------------------------------------------------------ 5: the adaptive limit survives a restart

def test_adaptive_limit_is_restored_at_restart(hookd, receiver):
    rx = receiver(200)
    d = hookd(endpoints={"a": {"url": rx.url("/a"), "max_in_flight": 64}})
    (m,) = enqueue_n(d, "a", 1, "warm")
    d.wait_status(m, "delivered")
    d.stop()
    # as a busy day would have left it (saved once a second and at a stop)
    assert d.rw_sql("UPDATE endpoint_health SET concurrency_limit = 34") == 1
    d.start()
    rx.set(Reply(200, delay=1.0))
    with d.client() as c:
        reps = c.pipeline([{"op": "enqueue", "endpoint": "a", "event_id": "r%d" % i, "payload": {"i": i}}
                           for i in range(8)])
    assert all(r["ok"] for r in reps), reps
    for r in reps:
        d.wait_status(r["id"], "delivered", 30)
    got = rx.snapshot("/a")[1:]
    assert len(got) == 8, got
    # all eight were out before the first answer: the limit was 34, not a
    # fresh 1 (one, then two, then four...)
    first_answer = min(r.t_done for r in got)
    assert max(r.t for r in got) < first_answer, sorted((r.t, r.t_done) for r in got)
    # and what is saved now grew from 34 (not 1)
    wait_until(lambda: d.endpoints()["a"]["concurrency_limit"] == 34, 10,
               msg="the saved limit is the restored one")


# ------------------------------------------------------------------ 6: a shared store and an older file

def node(hookd, ci, name, endpoints, prune=None, delivery=None):
    return hookd(name=name, endpoints=endpoints, sections={
        "storage": {"backend": "postgres"},
        "postgres": {"conninfo": ci, "node_name": name, "lease": "2s", "poll_interval": "500ms",
                     "prune_endpoints": prune},
        "delivery": dict(delivery or {})})


def test_pause_on_another_node_reaches_jobs_waiting_there(hookd, receiver, pgdb):
    ci, sql = pgdb
    rx = receiver(SLOW)
    eps = {"a": {"url": rx.url("/a")}}
    n0 = node(hookd, ci, "n0", eps, delivery=ONE_AT_A_TIME["delivery"])
    n1 = node(hookd, ci, "n1", eps, delivery=ONE_AT_A_TIME["delivery"])
    ids = enqueue_n(n0, "a", 6, "xa") + enqueue_n(n1, "a", 6, "xb")
    # both nodes hold jobs: one running each, the rest waiting for a slot
    wait_until(lambda: len(sql("SELECT DISTINCT claimed_by FROM hookd_queue WHERE status = 'in_flight'")) == 2,
               10, msg="rows in flight on both nodes")
    admin(n0, {"op": "pause", "endpoint": "a"})
    at_pause = len(sent_ids(rx, "/a"))
    no_in_flight(n0)
    sent = sent_ids(rx, "/a")
    # one transfer per node may have started while the pause travelled
    assert len(sent) <= at_pause + 2, (at_pause, sent)
    assert len(sent) < len(ids), sent


def test_shared_store_keeps_config_endpoints_missing_from_a_nodes_file(hookd, receiver, pgdb):
    import signal
    ci, sql = pgdb
    rx = receiver(200)
    rx.set(Reply(200, delay=1.5), "/b")
    full = {"a": {"url": rx.url("/a")}, "b": {"url": rx.url("/b")}, "x": {"url": rx.url("/x")}}
    n0 = node(hookd, ci, "n0", full)
    ids = enqueue_n(n0, "b", 3, "kb")
    rx.wait_for(1, path="/b")   # one of b's rows is in flight on n0
    # n1 starts with an older file that knows only a
    n1 = node(hookd, ci, "n1", {"a": full["a"]})
    assert set(n1.endpoints()) == {"a", "b", "x"}
    assert "endpoint=b" in n1.log() and "endpoint_kept" in n1.log()
    assert "endpoint_removed" not in n1.log()
    for m in ids:
        n0.wait_status(m, "delivered", 20)
    assert sql("SELECT count(*) FROM hookd_queue WHERE status = 'dead_letter'") == [["0"]]

    # removing one is an explicit act: not on the node whose file has it
    assert error_code(n0.request({"op": "endpoint.delete", "name": "x"})) == "conflict"
    admin(n1, {"op": "endpoint.delete", "name": "x"})
    wait_until(lambda: "x" not in n0.endpoints(), 10, msg="x gone on n0 too")

    # ... or the file's say with prune_endpoints = yes
    secs = {k: dict(v) for k, v in n1.sections.items()}
    secs["postgres"]["prune_endpoints"] = True
    n1.write_config(secs)
    n1.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: "b" not in n1.endpoints(), 10, msg="b pruned by n1's reload")
    wait_until(lambda: "b" not in n0.endpoints(), 10, msg="b gone on n0 too")
    assert "endpoint_removed" in n1.log()
