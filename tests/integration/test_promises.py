"""The promises hookd makes, checked across what operators do to it:
restarts, reloads, secret changes, retention, admin ops run by a
non-root user, and a receiver's Retry-After date. Each test runs on both
backends (the `backend` parameter; under HOOKD_TEST_BACKEND=postgres the
sqlite parameter is skipped, the postgres one covers it).

Several of these are the kill tests of tests/mutants/mutants.txt: a
mutant there names the test here that must fail when its line breaks.
"""
import email.utils
import grp
import os
import pwd
import signal
import subprocess
import threading
import time

import pytest

from conftest import (BACKEND, HOOKD_BIN, SECRET_A, SECRET_B, Reply, Sequence, pg_test_database,
                      verify_signature, wait_until)

BACKENDS = ["sqlite", "postgres"]
DONE = ("delivered", "dead_letter")
FAST = {"base_delay": "50ms", "max_delay": "200ms"}


def storage(backend):
    """The [storage]/[postgres] sections for one backend parameter."""
    if backend == "sqlite":
        if BACKEND == "postgres":
            pytest.skip("HOOKD_TEST_BACKEND=postgres: the postgres parameter runs this")
        return {"storage": {"backend": "sqlite"}}
    return {"storage": {"backend": "postgres"}, "postgres": {"conninfo": pg_test_database()}}


def secs(backend, *extra):
    out = storage(backend)
    for e in extra:
        for name, kv in e.items():
            out.setdefault(name, {}).update(kv)
    return out


def reloaded(d, n):
    """Wait until the n-th `event=reload` line of this run is logged."""
    wait_until(lambda: d.log().count("event=reload ") >= n, 10, msg="reload #%d logged" % n)


def sighup(d, sections):
    n = d.log().count("event=reload ")
    d.write_config(sections)
    d.proc.send_signal(signal.SIGHUP)
    reloaded(d, n + 1)


def settled(d):
    """Wait until nothing is in flight or awaiting a retry (paused rows may
    stay pending)."""
    def quiet():
        s = d.stats()
        return s["in_flight"] == 0 and s["awaiting_retry"] == 0
    wait_until(quiet, 10, msg="nothing in flight or awaiting a retry")


def by_event(rcv):
    out = {}
    for r in rcv.snapshot():
        out.setdefault(r.event_id, []).append(r)
    return out


# ---------------------------------------------------------------- dedup

@pytest.mark.parametrize("backend", BACKENDS)
def test_dedup_across_restart(hookd, receiver, backend):
    """An event_id accepted before a restart is a duplicate after it, with
    the first id, whether the first was delivered or is still queued, and
    the receiver gets each event once."""
    rcv = receiver(200)
    d = hookd(endpoints={"a": {"url": rcv.url("/a")}, "p": {"url": rcv.url("/p"), "paused": "yes"}},
              sections=secs(backend))
    sent = d.enqueue("a", {"n": 1}, event_id="evt-sent")
    held = d.enqueue("p", {"n": 2}, event_id="evt-held")
    assert sent["ok"] and held["ok"], (sent, held)
    d.wait_status(sent["id"], "delivered")
    d.restart()
    again = d.enqueue("a", {"n": 99}, event_id="evt-sent")
    again_held = d.enqueue("p", {"n": 98}, event_id="evt-held")
    assert again.get("duplicate") is True and again["id"] == sent["id"], again
    assert again_held.get("duplicate") is True and again_held["id"] == held["id"], again_held
    settled(d)
    row = d.row(sent["id"])
    assert row["status"] == "delivered" and row["attempt_count"] == 1, row
    assert d.row(held["id"])["status"] == "pending"
    assert d.sql("SELECT count(*) FROM webhook_queue")[0][0] == 2
    # the stored payload is the first one
    assert '"n":1' in d.row(sent["id"])["payload"].replace(" ", "")
    assert [r.json() for r in rcv.snapshot()] == [{"n": 1}]


@pytest.mark.parametrize("backend", BACKENDS)
def test_duplicate_enqueue_is_not_sent_again(hookd, receiver, backend):
    """A duplicate of an event already delivered stores nothing and sends
    nothing, also when the endpoint is idle and an enqueue would be handed
    to a delivery thread at once. One delivery thread: the duplicate's
    round hands its jobs over before the next event's, so once that one has
    arrived and hookd has stopped (transfers finish within the grace),
    the receiver has seen everything the duplicate could have caused."""
    rcv = receiver(200)
    d = hookd(endpoints={"a": {"url": rcv.url("/a")}}, sections=secs(backend, {"delivery": {"workers": 1}}))
    first = d.enqueue("a", {"n": 1}, event_id="once")
    d.wait_status(first["id"], "delivered")
    d.idle()
    dup = d.enqueue("a", {"n": 2}, event_id="once")
    assert dup.get("duplicate") is True and dup["id"] == first["id"], dup
    after = d.enqueue("a", {"n": 3}, event_id="after")
    d.wait_status(after["id"], "delivered")
    rcv.wait_for(2)
    d.stop()
    got = by_event(rcv)
    assert len(got["once"]) == 1, "the duplicate was sent again: %r" % got["once"]
    assert len(got["after"]) == 1


# ---------------------------------------------------------------- retention

@pytest.mark.parametrize("backend", BACKENDS)
def test_retention_keeps_unsettled_rows(hookd, receiver, backend):
    """Retention deletes old delivered rows and old dead letters only: a
    row as old that is still pending (paused endpoint), awaiting a retry
    or in flight is kept, however old its created_at."""
    gate, arrived = threading.Event(), []

    def held(req):
        arrived.append(req)   # the receiver records a request once answered
        gate.wait(60)
        return Reply(200)

    rcv = receiver(200)
    rcv.set(503, "/retry")
    rcv.set(404, "/dead")
    rcv.set(held, "/slow")
    d = hookd(endpoints={"ok": {"url": rcv.url("/ok")},
                         "dead": {"url": rcv.url("/dead"), "max_attempts": 1},
                         "retry": {"url": rcv.url("/retry"), "base_delay": "1h", "max_delay": "1h",
                                   "max_attempts": 10, "failure_threshold": 1000},
                         "slow": {"url": rcv.url("/slow"), "timeout": "60s", "adaptive": "no", "max_in_flight": 8},
                         "paused": {"url": rcv.url("/paused"), "paused": "yes"}},
              sections=secs(backend, {"retention": {"delivered": "1m", "dead_letter": "1m",
                                                    "cleanup_interval": "200ms", "chunk": 10}}))
    ids = {}
    for name in ("ok", "dead", "retry", "slow", "paused"):
        ids[name] = [d.enqueue(name, {"i": i})["id"] for i in range(3)]
    for i in ids["ok"]:
        d.wait_status(i, "delivered")
    for i in ids["dead"]:
        d.wait_status(i, "dead_letter")
    for i in ids["retry"]:
        d.wait_status(i, "failed")
    wait_until(lambda: len(arrived) == 3, 10, msg="3 requests held by the receiver")
    for i in ids["slow"]:
        d.wait_status(i, "in_flight")
    day = 86400 * 1000
    everything = ",".join(str(i) for v in ids.values() for i in v)
    d.rw_sql("UPDATE webhook_queue SET created_at = created_at - 40 * %d WHERE id IN (%s)" % (day, everything))
    d.rw_sql("UPDATE webhook_queue SET delivered_at = delivered_at - 40 * %d WHERE id IN (%s)"
             % (day, ",".join(map(str, ids["ok"]))))
    old_settled = set(ids["ok"]) | set(ids["dead"])
    wait_until(lambda: not old_settled & {r[0] for r in d.sql("SELECT id FROM webhook_queue")}, 15,
               msg="old delivered rows and dead letters deleted")
    left = {r[0]: r[1] for r in d.sql("SELECT id, status FROM webhook_queue")}
    for name, want in (("retry", "failed"), ("slow", "in_flight"), ("paused", "pending")):
        for i in ids[name]:
            assert left.get(i) == want, "%s row %d: %r (retention took an unsettled row)" % (name, i, left.get(i))
    gate.set()
    for i in ids["slow"]:
        d.wait_status(i, "delivered")


# ---------------------------------------------------------------- Retry-After

@pytest.mark.parametrize("backend", BACKENDS)
def test_retry_after_http_date(hookd, receiver, backend):
    """A 503 with Retry-After as an HTTP-date (RFC 9110) holds the retry
    until that wall-clock time, not max_delay and not the plain backoff."""
    when = {}

    def answer(req):
        if "date" not in when:
            when["date"] = int(time.time()) + 4
            return Reply(503, {"Retry-After": email.utils.formatdate(when["date"], usegmt=True)}, b"later")
        return Reply(200)

    rcv = receiver(answer)
    d = hookd(endpoints={"a": {"url": rcv.url("/a"), "base_delay": "50ms", "max_delay": "60s",
                               "failure_threshold": 100}},
              sections=secs(backend))
    r = d.enqueue("a", {"x": 1})
    d.wait_status(r["id"], "delivered", timeout=20)
    first, second = rcv.snapshot()[:2]
    # the date has 1 s resolution and lies 3-4 s after the answer
    assert second.t_wall >= when["date"] - 1.0, "retried %.2fs before the Retry-After date" % (
        when["date"] - second.t_wall)
    assert second.t_wall - first.t_wall < 20, "the retry waited far past the date (max_delay 60s)"


# ---------------------------------------------------------------- ordering

@pytest.mark.parametrize("backend", BACKENDS)
def test_per_key_order_across_restart(hookd, receiver, backend):
    """Per-key order holds over a restart: with K1 failing before and
    after it, K2..K4 wait; once K1 is delivered they follow in order."""
    failing = threading.Event()
    failing.set()

    def answer(req):
        if "n=1" in req.path and failing.is_set():
            return 503
        return 200

    rcv = receiver(answer)
    eps = {"aff": {"url": rcv.url("/pb") + "?k={k}&n={n}", "method": "GET", "ordering_key": "{k}",
                   "failure_threshold": 1000, "max_attempts": 100}}
    d = hookd(endpoints=eps, sections=secs(backend, {"delivery": FAST}))
    ids = [d.enqueue("aff", {"k": "K", "n": n})["id"] for n in range(1, 5)]
    other = d.enqueue("aff", {"k": "L", "n": 7})["id"]
    d.wait_status(other, "delivered")
    wait_until(lambda: d.row(ids[0])["attempt_count"] >= 2, 10, msg="K1 failed twice")
    d.restart()
    wait_until(lambda: d.row(ids[0])["attempt_count"] >= 4, 10, msg="K1 failing after the restart")
    assert [d.status(i) for i in ids[1:]] == ["pending"] * 3
    failing.clear()
    for i in ids:
        d.wait_status(i, "delivered")
    seq = [int(r.path.split("n=")[1]) for r in rcv.snapshot() if "k=K" in r.path]
    ones = seq.count(1)
    assert ones >= 5 and seq == [1] * ones + [2, 3, 4], seq
    for a, b in zip(ids, ids[1:]):
        assert d.row(a)["delivered_at"] <= min(x["at"] for x in d.sql_dicts(
            "SELECT at FROM delivery_attempts WHERE message_id = ?", (b,))
            or [{"at": d.row(b)["delivered_at"]}])


# ---------------------------------------------------------------- reload

@pytest.mark.parametrize("backend", BACKENDS)
def test_sighup_with_deliveries_in_flight_and_an_endpoint_removed(hookd, receiver, backend):
    """SIGHUP while requests to `b` are in flight, with `b` removed from the
    file: hookd keeps serving, `a` keeps delivering, each of b's events
    reached the receiver at most once, and none of b's rows is left
    pending or in flight."""
    gate, arrived = threading.Event(), []

    def held(req):
        arrived.append(req)   # the receiver records a request once answered
        gate.wait(60)
        return Reply(200)

    rcv = receiver(200)
    rcv.set(held, "/b")
    d = hookd(endpoints={"a": {"url": rcv.url("/a")}, "b": {"url": rcv.url("/b"), "timeout": "60s",
                                                                    "adaptive": "no", "max_in_flight": 8}},
              sections=secs(backend))
    bids = [d.enqueue("b", {"i": i})["id"] for i in range(3)]
    wait_until(lambda: len(arrived) == 3, 10, msg="3 requests held by the receiver")
    aids = [d.enqueue("a", {"i": i})["id"] for i in range(3)]
    new = dict(d.sections)
    del new["endpoint.b"]
    sighup(d, new)
    later = [d.enqueue("a", {"j": i})["id"] for i in range(3)]
    for i in aids + later:
        d.wait_status(i, "delivered")
    gate.set()
    wait_until(lambda: all(d.status(i) in DONE for i in bids), 15, msg="b's rows settled")
    d.idle()
    assert d.running
    got = by_event(rcv)
    assert all(len(v) == 1 for v in got.values()), {k: len(v) for k, v in got.items()}
    assert d.stats()["in_flight"] == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_secret_change_reaches_pending_retries(hookd, receiver, backend):
    """Messages that failed under the old secret and await their retry are
    signed with the new one after a SIGHUP: the receiver accepts only the
    new key, and they all get delivered."""
    def answer(req):
        return Reply(200) if verify_signature(SECRET_B, req.headers, req.body) else Reply(503)

    rcv = receiver(answer)
    eps = {"a": {"url": rcv.url("/a"), "secret": SECRET_A, "base_delay": "100ms", "max_delay": "300ms",
                 "max_attempts": 200, "failure_threshold": 1000}}
    d = hookd(endpoints=eps, sections=secs(backend))
    ids = [d.enqueue("a", {"i": i})["id"] for i in range(3)]
    wait_until(lambda: all((d.row(i)["attempt_count"] or 0) >= 1 for i in ids), 10, msg="a first failed attempt each")
    new = dict(d.sections)
    new["endpoint.a"] = dict(new["endpoint.a"], secret=SECRET_B)
    sighup(d, new)
    for i in ids:
        d.wait_status(i, "delivered", timeout=20)
    ok = [r for r in rcv.snapshot() if r.reply is not None and r.reply.status == 200]
    assert len(ok) == 3 and all(verify_signature(SECRET_B, r.headers, r.body) for r in ok)
    assert not any(verify_signature(SECRET_A, r.headers, r.body) for r in ok)


# ---------------------------------------------------------------- admin ops, non-root

def _as_runner(d, runner_uid, runner_gid, *args):
    """`hookd ARGS` through the control socket as the given user (the CLI
    an operator in admin_uids runs), JSON output."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOOKD_SOCKET": str(d.sock)}
    kw = {}
    if os.geteuid() != runner_uid:
        kw = dict(user=runner_uid, group=runner_gid, extra_groups=[])
    return subprocess.run([HOOKD_BIN, *args, "--json"], capture_output=True, text=True, timeout=30, env=env,
                          cwd="/", **kw)


@pytest.mark.parametrize("backend", BACKENDS)
def test_requeue_and_purge_as_a_non_root_admin(hookd, receiver, backend):
    """requeue and purge as an operator runs them: the hookd CLI as a user
    who is not root (nobody, listed in admin_uids, when the tests run as
    root; the test runner's own user otherwise). A requeued dead letter is
    delivered; a purge removes only dead letters."""
    if os.geteuid() == 0:
        pw = pwd.getpwnam("nobody")
        uid, gid = pw.pw_uid, pw.pw_gid
        server = {"group": grp.getgrgid(gid).gr_name, "admin_uids": "nobody"}
    else:
        uid, gid, server = os.geteuid(), os.getegid(), {}
    flaky = {"fail": True}

    def answer(req):
        return 500 if flaky["fail"] else 200

    rcv = receiver(answer)
    d = hookd(endpoints={"a": {"url": rcv.url("/a"), "max_attempts": 1, "failure_threshold": 1000}},
              sections=secs(backend, {"server": server}))
    ids = [d.enqueue("a", {"i": i})["id"] for i in range(3)]
    for i in ids:
        d.wait_status(i, "dead_letter")
    flaky["fail"] = False
    p = _as_runner(d, uid, gid, "requeue", str(ids[0]))
    assert p.returncode == 0, (p.stdout, p.stderr)
    d.wait_status(ids[0], "delivered")
    pending = d.enqueue("a", {"keep": 1})   # delivered: purge must not touch it
    d.wait_status(pending["id"], "delivered")
    p = _as_runner(d, uid, gid, "purge", "--endpoint", "a")
    assert p.returncode == 0, (p.stdout, p.stderr)
    left = {r[0]: r[1] for r in d.sql("SELECT id, status FROM webhook_queue")}
    assert left == {ids[0]: "delivered", pending["id"]: "delivered"}, left
    assert "event=requeued" in d.log() and "event=purged" in d.log()
