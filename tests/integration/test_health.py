"""Endpoint health against the real daemon: circuit breaker with the default
threshold, persistence across restarts, transition logging, rate limits and
429 holds, pause/resume, dead-letter analysis, slow endpoints and the
percentile rollup, health summary alerts, Prometheus metrics (promtool),
retention and the WAL bound.

Every daemon here runs its periodic jobs at short intervals (rollup 200 ms,
summary 300 ms, checkpoint 200 ms ...) so the whole module stays fast."""
import json
import math
import os
import re
import subprocess
import threading
import time

import pytest

from conftest import HOOKD_BIN, Reply, debian_tool, pct, wait_until

DONE = ("delivered", "dead_letter")

# Short periods for every scheduled job (see conf/hookd.ini for the minimums).
FAST_JOBS = {
    "latency": {"rollup_interval": "200ms", "slow_scan_interval": "300ms", "window": "1m"},
    "health": {"summary_interval": "300ms", "oldest_pending_alert": "1s"},
    "retention": {"checkpoint_interval": "200ms"},
    "metrics": {"interval": "1s"},
}


def sections(*extra):
    out = {k: dict(v) for k, v in FAST_JOBS.items()}
    for e in extra:
        for name, kv in e.items():
            out.setdefault(name, {}).update(kv)
    return out


def ep(rcv, path="/hook", **kw):
    d = {"url": rcv.url(path)}
    d.update(kw)
    return d


# ---------------------------------------------------------------- helpers

_KV = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S*)')


def parse_log_line(line):
    """key=value pairs of one log line; quoted values unquoted."""
    out = {}
    for k, v in _KV.findall(line):
        if v.startswith('"') and v.endswith('"') and len(v) >= 2:
            v = v[1:-1].replace('\\"', '"').replace("\\\\", "\\")
        out[k] = v
    return out


def events(d, event, run=None, **match):
    """Parsed log lines with event=EVENT (and every key=value in match),
    of all runs, or of run number `run` (1-based)."""
    text = d.logs[run - 1].read_text(errors="replace") if run else d.log()
    out = []
    for line in text.splitlines():
        if " event=%s " % event not in line + " ":
            continue
        kv = parse_log_line(line)
        if kv.get("event") == event and all(kv.get(k) == str(v) for k, v in match.items()):
            out.append(kv)
    return out


def transitions(d, endpoint, run=None):
    return [(t["from"], t["to"]) for t in events(d, "breaker_transition", run, endpoint=endpoint)]


def health(d, name):
    rows = d.sql_dicts("SELECT h.* FROM endpoint_health h JOIN endpoints e ON e.id = h.endpoint_id "
                       "WHERE e.name = ?", (name,))
    return rows[0] if rows else None


def state(d, name):
    h = health(d, name)
    return h and h["state"]


def cli(d, *args, timeout=30):
    """Run `hookd ARGS -c cfg`; returns CompletedProcess (text)."""
    env = dict(os.environ)
    env.pop("HOOKD_SOCKET", None)
    env.pop("HOOKD_CONFIG", None)
    return subprocess.run([HOOKD_BIN, *map(str, args), "-c", str(d.cfg)], capture_output=True, text=True,
                          timeout=timeout, env=env)


def cli_json(d, *args):
    p = cli(d, *args, "--json")
    assert p.returncode == 0, (args, p.returncode, p.stdout, p.stderr)
    return json.loads(p.stdout)


def rw_sql(d, query, args=()):
    """Write to hookd's database from the test (backdating rows only; hookd
    keeps running: WAL mode and busy_timeout make this safe)."""
    return d.rw_sql(query, args)


def round_half_away(x):
    return int(math.floor(abs(x) + 0.5)) * (1 if x >= 0 else -1)


def wait_all_done(d, ids, timeout=15):
    for i in ids:
        d.wait_status(i, DONE, timeout=timeout)


PROMTOOL = "/usr/bin/promtool"


def promtool():
    return debian_tool(PROMTOOL, "prometheus")


def promtool_check(text):
    p = subprocess.run([promtool(), "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, "promtool check metrics failed (%d):\n%s%s\n--- text ---\n%s" % (
        p.returncode, p.stdout, p.stderr, text)


def parse_prom(text):
    """{(name, frozenset(labels)): float} of every sample line."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$', line)
        assert m, "not a sample line: %r" % line
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        out[(m.group(1), labels)] = float(m.group(4))
    return out


def sample(samples, name, **labels):
    key = (name, frozenset((k, str(v)) for k, v in labels.items()))
    assert key in samples, "no sample %s%s; have %s" % (name, labels, sorted(k[0] for k in samples))
    return samples[key]


# ================================================================ breaker

def test_breaker_default_threshold_exactly_10_then_silent_then_one_probe(hookd, receiver):
    """Default failure_threshold (10): exactly 10 failed requests open the
    breaker; nothing is sent during the cooldown although 30 messages are
    due; after it exactly one probe goes out alone; its success closes the
    breaker and the backlog drains without having used attempts."""
    rcv = receiver(500)
    cooldown = 2.0
    d = hookd(endpoints={"a": ep(rcv, max_attempts=1000, base_delay="1ms", max_delay="10ms")},
              sections=sections({"breaker": {"cooldown": "2s", "max_cooldown": "8s"}}))
    first = d.enqueue("a", {"i": 0}, event_id="b-0")["id"]
    rcv.wait_for(10, timeout=10)
    wait_until(lambda: state(d, "a") == "open", 5, msg="breaker open")
    h = health(d, "a")
    assert h["consecutive_failures"] == 10 and h["cooldown_ms"] == 2000 and h["opened_at"], h
    opened = events(d, "breaker_transition", endpoint="a", to="open")
    assert len(opened) == 1 and opened[0]["from"] == "closed", opened
    assert opened[0]["failures"] == "10" and opened[0]["reason"] == "failure threshold reached", opened
    t_open_wall = h["opened_at"] / 1000.0
    # many messages due while open
    with d.client() as c:
        rs = c.pipeline([{"op": "enqueue", "endpoint": "a", "event_id": "b-%d" % i, "payload": {"i": i}}
                         for i in range(1, 30)])
    ids = [first] + [r["id"] for r in rs]
    assert all(r["ok"] for r in rs), rs
    assert d.endpoints()["a"]["state"] == "open"
    for i in ids[1:]:
        assert d.row(i)["attempt_count"] == 0, d.row(i)
    # silent until the cooldown ends: the 11th request is the probe, and
    # it leaves no sooner (no guessed wait: its time is the check). The
    # probe takes 400 ms; nothing else may go out meanwhile (the 12th
    # request starts after its answer, checked below)
    rcv.set(Reply(200, delay=0.4))
    probe = rcv.wait_for(11, timeout=5)[10]
    assert probe.t_wall >= t_open_wall + cooldown - 0.05, "probe %.3fs after opening (cooldown %.1fs)" % (
        probe.t_wall - t_open_wall, cooldown)
    wait_all_done(d, ids)
    reqs = rcv.snapshot()
    assert reqs[11].t >= probe.t_done - 0.01, "the backlog started before the probe answered"
    assert len(reqs) == 10 + 30, "requests: %d (10 failures + 30 deliveries expected)" % len(reqs)
    rows = [d.row(i) for i in ids]
    assert all(r["status"] == "delivered" for r in rows), [r["status"] for r in rows]
    # held messages used exactly one attempt; the first one 10 failures + 1
    assert sorted(r["attempt_count"] for r in rows) == [1] * 29 + [11], [r["attempt_count"] for r in rows]
    wait_until(lambda: state(d, "a") == "closed", 5, msg="breaker closed")
    h = health(d, "a")
    assert h["consecutive_failures"] == 0 and h["cooldown_ms"] == 2000, h
    ep_a = d.endpoints()["a"]
    assert ep_a["state"] == "closed" and ep_a["consecutive_failures"] == 0, ep_a
    assert transitions(d, "a") == [("closed", "open"), ("open", "half_open"), ("half_open", "closed")]
    t = events(d, "breaker_transition", endpoint="a")
    assert [x["reason"] for x in t] == ["failure threshold reached", "cooldown elapsed", "probe succeeded"], t
    assert all(x["level"] == "warn" for x in t), t


def test_dead_endpoint_gets_exactly_failure_threshold_requests(hookd, receiver):
    """With the defaults (adaptive concurrency, max_in_flight 64), 30 queued
    messages to an endpoint that fails: it sees exactly failure_threshold
    (10) requests, one at a time, before its breaker opens, as the seed's
    design does; not a burst of 64."""
    rcv = receiver(Reply(500, delay=0.05))
    d = hookd(endpoints={"a": ep(rcv, max_attempts=1000, base_delay="1ms", max_delay="10ms")},
              sections=sections({"breaker": {"cooldown": "30s"}}))
    with d.client() as c:
        c.pipeline([{"op": "enqueue", "endpoint": "a", "payload": {"i": i}} for i in range(30)])
    wait_until(lambda: state(d, "a") == "open", 10, msg="open")
    reqs = rcv.snapshot()
    assert len(reqs) == 10, "%d requests before the breaker opened" % len(reqs)
    # one at a time: each request left after the previous one was answered
    assert all(b.t >= a.t_done - 0.01 for a, b in zip(reqs, reqs[1:])), "requests overlapped"
    assert d.endpoints()["a"]["concurrency_limit"] == 1


def ahead_metric(d, result):
    return sample(parse_prom(d.request({"op": "metrics"})["text"]), "hookd_claimed_ahead_total", result=result)


def most_at_once(reqs, slack=0.003):
    """The most requests the receiver was answering at one time. An answer
    is stamped after it is written: the next request (hookd sends it the
    moment the answer arrives) may be stamped on arrival first, so each
    one counts until `slack` before its stamp."""
    marks = sorted([(r.t, 1) for r in reqs] + [(r.t_done - slack, -1) for r in reqs])
    now = top = 0
    for _, step in marks:
        now += step
        top = max(top, now)
    return top


def test_claims_ahead_start_after_successes_only_and_never_raise_concurrency(hookd, receiver):
    """A backlog to a healthy endpoint: jobs claimed ahead start in the
    place of requests that succeeded (the metric counts them), yet the
    receiver never sees more than max_in_flight at once and gets each
    message once. Then the endpoint fails: no job claimed ahead starts
    after that (they come back untried and use no attempt), and the
    breaker opens on failure_threshold failures as before. (On PostgreSQL
    nothing is claimed ahead: the other checks hold all the same.)"""
    rcv = receiver(Reply(200, delay=0.01))
    d = hookd(endpoints={"a": ep(rcv, max_attempts=1000, base_delay="1ms", max_delay="10ms", adaptive=False,
                                 max_in_flight=8, paused=True)},
              sections=sections({"breaker": {"cooldown": "60s"}}))
    with d.client() as c:
        ids = [r["id"] for r in c.pipeline([{"op": "enqueue", "endpoint": "a", "payload": {"i": i}}
                                            for i in range(600)])]
    assert cli(d, "resume", "a").returncode == 0
    wait_all_done(d, ids, timeout=60)
    reqs = rcv.snapshot()
    assert len(reqs) == 600 and len({r.event_id for r in reqs}) == 600, len(reqs)
    assert most_at_once(reqs) <= 8, "%d requests at once under max_in_flight 8" % most_at_once(reqs)
    started = ahead_metric(d, "started")
    if d.pg:   # PostgreSQL: nodes share the breaker, nothing is claimed ahead
        assert started == 0 and ahead_metric(d, "returned") == 0
    else:
        assert started >= 300, "only %d of 600 started ahead" % started
    assert d.sql("SELECT count(*) FROM webhook_queue WHERE attempt_count != 1") == [(0,)]
    # failing now: whatever was claimed ahead comes back untried
    rcv.set(Reply(500, delay=0.01))
    with d.client() as c:
        ids2 = [r["id"] for r in c.pipeline([{"op": "enqueue", "endpoint": "a", "payload": {"j": i}}
                                             for i in range(100)])]
    wait_until(lambda: state(d, "a") == "open", 10, msg="open")
    wait_until(lambda: all(r.t_done for r in rcv.snapshot()), 5, msg="the failed requests answered")
    failed = len(rcv.snapshot()) - 600
    assert ahead_metric(d, "started") == started, "a job claimed ahead started after a failure"
    attempts = sum(d.row(i)["attempt_count"] for i in ids2)
    assert attempts == failed, "%d attempts recorded for %d requests" % (attempts, failed)
    assert 10 <= failed <= 10 + 8, failed
    assert most_at_once(rcv.snapshot()) <= 8


@pytest.mark.serial  # a 10 ms window after the pause, and jobs ahead only when deliveries keep pace
def test_pause_sends_back_jobs_claimed_ahead(hookd, receiver):
    """Pausing an endpoint while it drains a backlog: the requests already
    on the wire finish, and nothing else leaves once the pause is
    acknowledged, although jobs were waiting ahead behind each request."""
    rcv = receiver(Reply(200, delay=0.05))
    d = hookd(endpoints={"a": ep(rcv, adaptive=False, max_in_flight=4)}, sections=sections())
    with d.client() as c:
        ids = [r["id"] for r in c.pipeline([{"op": "enqueue", "endpoint": "a", "payload": {"i": i}}
                                            for i in range(300)])]
    rcv.wait_for(40, timeout=10)
    assert cli(d, "pause", "a").returncode == 0
    paused_at = time.monotonic()
    wait_until(lambda: d.endpoints()["a"]["queue"]["in_flight"] == 0, 10, msg="nothing in flight")
    late = [r.t - paused_at for r in rcv.snapshot() if r.t > paused_at + 0.01]
    assert not late, "%d requests left after the pause (%s s)" % (len(late), ["%.3f" % x for x in late[:5]])
    n = rcv.count()
    if not d.pg:
        assert ahead_metric(d, "returned") >= 1, "no job was waiting ahead: the test shows nothing"
    assert cli(d, "resume", "a").returncode == 0
    wait_all_done(d, ids, timeout=30)
    assert rcv.count() == 300 and len({r.event_id for r in rcv.snapshot()}) == 300, (n, rcv.count())


@pytest.mark.serial  # holds a wall-clock bound (a request's arrival against the opening)
def test_breaker_trip_with_many_in_flight_logs_once_then_silent(hookd, receiver):
    """30 messages in flight at once (fixed concurrency, max_in_flight 64)
    all fail: the breaker opens at the 10th failure and the 20 late
    failures do not open it again (one transition logged); nothing more is
    sent during the cooldown; then one probe, alone."""
    rcv = receiver(Reply(500, delay=0.2))
    d = hookd(endpoints={"a": ep(rcv, max_attempts=1000, base_delay="1ms", max_delay="10ms", adaptive=False)},
              sections=sections({"breaker": {"cooldown": "1500ms", "max_cooldown": "8s"}}))
    with d.client() as c:
        ids = [r["id"] for r in c.pipeline([{"op": "enqueue", "endpoint": "a", "payload": {"i": i}}
                                            for i in range(30)])]
    rcv.wait_for(30, timeout=5)
    wait_until(lambda: state(d, "a") == "open", 5, msg="open")
    h = health(d, "a")
    opened = h["opened_at"] / 1000.0
    t = events(d, "breaker_transition", endpoint="a")
    assert [(x["from"], x["to"], x["failures"]) for x in t] == [("closed", "open", "10")], t
    # retries claimed while fewer than 10 results were in (zero backoff
    # is possible) may still be on the wire when it opens; nothing may
    # leave after that (the probe's time below shows it). The receiver
    # notes a request when it has read it: 250 ms of slack for one sent
    # before the opening and read late on a loaded machine (with 1-10 ms
    # retries a leaking breaker sends far more, and later, than that)
    wait_until(lambda: all(r.t_done for r in rcv.snapshot()), 5, msg="the requests sent before opening answered")
    before = rcv.snapshot()
    late = [r for r in before if r.t_wall > opened + 0.25]
    assert not late, "%d requests sent during the cooldown (%s s after opening)" % (
        len(late), ["%.3f" % (r.t_wall - opened) for r in late])
    assert all(r.t_done for r in before), "requests still unanswered"
    n = len(before)
    assert len(events(d, "breaker_transition", endpoint="a")) == 1, "late failures logged another transition"
    rcv.set(Reply(200, delay=0.4))
    probe = rcv.wait_for(n + 1, timeout=5)[n]
    assert probe.t_wall >= opened + 1.5 - 0.05, "a request %.3fs after opening, during the 1.5s cooldown" % (
        probe.t_wall - opened)
    wait_all_done(d, ids)
    # nothing went out beside the half-open probe
    assert rcv.count() == n + 30 and rcv.snapshot()[n + 1].t >= probe.t_done - 0.01
    assert transitions(d, "a") == [("closed", "open"), ("open", "half_open"), ("half_open", "closed")]


def test_breaker_storm_is_summarised_not_logged_line_by_line(hookd):
    """40 endpoints whose connections are refused open their breakers
    (failure_threshold 1) within a second: 20 breaker_transition lines,
    then one breaker_transitions line counting the other 20 when the 10 s
    window ends; their dead letters likewise (dead_letter, endpoint_failures).
    Every breaker is open all the same."""
    from conftest import free_port
    port = free_port()   # nothing listens there
    eps = {"p%02d" % i: {"url": "http://127.0.0.1:%d/p%d" % (port, i), "failure_threshold": 1,
                         "max_attempts": 1} for i in range(40)}
    d = hookd(endpoints=eps, sections=sections())
    with d.client() as c:
        ids = [r["id"] for r in c.pipeline([{"op": "enqueue", "endpoint": "p%02d" % i, "payload": {"i": i}}
                                            for i in range(40)])]
    wait_all_done(d, ids)
    wait_until(lambda: all(state(d, "p%02d" % i) == "open" for i in range(40)), 10, msg="40 breakers open")
    summary = wait_until(lambda: events(d, "breaker_transitions"), 15, msg="the summary line")
    lines = events(d, "breaker_transition")
    assert len(lines) == 20, len(lines)
    assert len(summary) == 1, summary
    assert summary[0]["held_back"] == "20" and summary[0]["to_open"] == "20", summary[0]
    assert summary[0]["to_closed"] == "0" and summary[0]["to_half_open"] == "0"
    # the 40 dead letters share a budget of their own, summarised the same way
    assert len(events(d, "dead_letter")) == 20
    fsum = events(d, "endpoint_failures")
    assert len(fsum) == 1 and fsum[0]["held_back"] == "20" and fsum[0]["dead_letters"] == "20", fsum


@pytest.mark.serial  # holds a wall-clock bound
def test_breaker_cooldown_doubles_caps_and_resets_each_transition_logged_once(hookd, receiver):
    """Failed probes double the cooldown up to max_cooldown; a success closes;
    a fresh trip starts again at the base cooldown. Every transition is
    logged exactly once with endpoint, from, to and reason."""
    rcv = receiver(500)
    d = hookd(endpoints={"a": ep(rcv, max_attempts=1000, base_delay="1ms", max_delay="10ms")},
              sections=sections({"breaker": {"cooldown": "500ms", "max_cooldown": "1s"}}))
    d.enqueue("a", {"i": 0})
    reqs = rcv.wait_for(11, timeout=10)             # 10 failures + probe 1 (fails)
    gaps = []
    wait_until(lambda: health(d, "a")["cooldown_ms"] == 1000, 5, msg="cooldown doubled to 1s")
    reqs = rcv.wait_for(12, timeout=5)              # probe 2 (fails): capped at 1s, not 2s
    wait_until(lambda: len(events(d, "breaker_transition", endpoint="a", to="open")) == 3, 5, msg="3rd open")
    assert health(d, "a")["cooldown_ms"] == 1000, health(d, "a")
    rcv.set(200)
    reqs = rcv.wait_for(13, timeout=5)              # probe 3 succeeds
    gaps = [reqs[10].t - reqs[9].t, reqs[11].t - reqs[10].t, reqs[12].t - reqs[11].t]
    assert 0.45 <= gaps[0] < 1.2, gaps
    assert 0.95 <= gaps[1] < 1.8, gaps
    assert 0.95 <= gaps[2] < 1.8, gaps             # capped: 1s, not 2s
    wait_until(lambda: state(d, "a") == "closed", 5, msg="closed")
    assert health(d, "a")["cooldown_ms"] == 500, health(d, "a")
    # a fresh trip starts at the base cooldown again
    rcv.set(500)
    d.enqueue("a", {"i": 1})
    rcv.wait_for(13 + 10, timeout=10)
    wait_until(lambda: state(d, "a") == "open", 5, msg="open again")
    h = health(d, "a")
    assert h["cooldown_ms"] == 500 and h["consecutive_failures"] == 10, h
    # one message, one request at a time: hookd's count of 10 failures
    # is the receiver's
    assert rcv.count() == 23
    assert transitions(d, "a") == [
        ("closed", "open"), ("open", "half_open"), ("half_open", "open"),
        ("open", "half_open"), ("half_open", "open"),
        ("open", "half_open"), ("half_open", "closed"),
        ("closed", "open")], transitions(d, "a")
    t = events(d, "breaker_transition", endpoint="a")
    assert [x["reason"] for x in t] == [
        "failure threshold reached", "cooldown elapsed", "probe failed", "cooldown elapsed", "probe failed",
        "cooldown elapsed", "probe succeeded", "failure threshold reached"], t
    assert [x["cooldown_ms"] for x in t if x["to"] == "open"] == ["500", "1000", "1000", "500"], t


def test_breaker_open_state_survives_restart(hookd, receiver):
    """Restart while open: endpoint_health and `endpoints` still say open,
    nothing goes out before opened_at + cooldown, then one probe closes it."""
    rcv = receiver(500)
    d = hookd(endpoints={"a": ep(rcv, max_attempts=1000, base_delay="1ms", max_delay="10ms")},
              sections=sections({"breaker": {"cooldown": "3s", "max_cooldown": "10s"}}))
    ids = [d.enqueue("a", {"i": 0})["id"]]
    rcv.wait_for(10, timeout=10)
    wait_until(lambda: state(d, "a") == "open", 5, msg="open")
    d.stop()
    h = health(d, "a")
    assert h["state"] == "open" and h["consecutive_failures"] == 10 and h["cooldown_ms"] == 3000, h
    opened_at = h["opened_at"] / 1000.0
    d.start()
    ids += [d.enqueue("a", {"i": i})["id"] for i in range(1, 5)]
    e = d.endpoints()["a"]
    assert e["state"] == "open" and e["consecutive_failures"] == 10, e
    out = cli_json(d, "endpoints")
    eps = {x["name"]: x for x in out["endpoints"]}
    assert eps["a"]["state"] == "open", out
    p = cli(d, "endpoints")
    assert p.returncode == 0 and re.search(r"^a\s.*\bopen\b", p.stdout, re.M), p.stdout
    # nothing before the persisted cooldown ended: the 11th request (the
    # probe) is the first after the restart, and it leaves no sooner
    rcv.set(200)
    probe = rcv.wait_for(11, timeout=5)[10]
    assert probe.t_wall >= opened_at + 3.0 - 0.05, "%.3fs after opening, cooldown 3s" % (probe.t_wall - opened_at)
    wait_all_done(d, ids)
    wait_until(lambda: state(d, "a") == "closed", 5, msg="closed")
    assert rcv.count() == 10 + 5
    # the second run did not trip again; it only logged the recovery
    assert transitions(d, "a", run=1) == [("closed", "open")]
    assert transitions(d, "a", run=2) == [("open", "half_open"), ("half_open", "closed")]


def test_critical_p95_halves_failure_threshold(hookd, receiver):
    """p95 above critical_p95 (with min_samples) halves the threshold: the
    breaker opens after 5 failures instead of 10."""
    rcv = receiver(Reply(200, delay=0.3))
    d = hookd(endpoints={"a": ep(rcv, max_attempts=1000, base_delay="1ms", max_delay="10ms")},
              sections=sections({"breaker": {"cooldown": "1m"},
                                 "latency": {"slow_p95": "100ms", "critical_p95": "200ms", "min_samples": 5}}))
    with d.client() as c:
        ids = [r["id"] for r in c.pipeline([{"op": "enqueue", "endpoint": "a", "payload": {"i": i}}
                                            for i in range(6)])]
    wait_all_done(d, ids)
    wait_until(lambda: (health(d, "a") or {}).get("sample_count") == 6, 5, msg="rollup of 6 samples")
    assert health(d, "a")["p95_ms"] >= 250
    wait_until(lambda: events(d, "endpoint_slow", endpoint="a"), 3, msg="endpoint_slow logged")
    assert "failure_threshold" in events(d, "endpoint_slow", endpoint="a")[-1], events(d, "endpoint_slow")
    rcv.set(500)
    d.enqueue("a", {"i": "fail"})
    rcv.wait_for(6 + 5, timeout=10)
    wait_until(lambda: state(d, "a") == "open", 5, msg="open after 5 failures")
    assert rcv.count() == 6 + 5, "%d failures before opening (halved threshold is 5)" % (rcv.count() - 6)
    t = events(d, "breaker_transition", endpoint="a", to="open")
    assert len(t) == 1 and t[0]["failures"] == "5", t


# ================================================================ rate limits

@pytest.mark.serial  # holds a wall-clock bound or loads the machine
def test_rate_limit_holds_at_the_receiver_without_using_attempts(hookd, receiver):
    """rate 5/s, burst 1: 20 messages take ~3.8 s at the receiver, never two
    within a token period; 120/m likewise at 0.5 s; an unlimited endpoint in
    the same daemon is not slowed; every message is delivered with one
    attempt."""
    rcv = receiver(200)
    d = hookd(endpoints={"lim": ep(rcv, "/lim", rate="5/s", burst=1),
                         "perm": ep(rcv, "/perm", rate="120/m", burst=1),
                         "free": ep(rcv, "/free")},
              sections=sections())
    reqs = [{"op": "enqueue", "endpoint": "lim", "payload": {"i": i}} for i in range(20)]
    reqs += [{"op": "enqueue", "endpoint": "perm", "payload": {"i": i}} for i in range(6)]
    reqs += [{"op": "enqueue", "endpoint": "free", "payload": {"i": i}} for i in range(20)]
    t0 = time.monotonic()
    with d.client() as c:
        rs = c.pipeline(reqs)
    assert all(r["ok"] for r in rs)
    free = rcv.wait_for(20, timeout=10, path="/free")
    assert free[-1].t - t0 < 1.5, "unlimited endpoint took %.2fs" % (free[-1].t - t0)
    lim = rcv.wait_for(20, timeout=15, path="/lim")
    perm = rcv.wait_for(6, timeout=15, path="/perm")
    wait_all_done(d, [r["id"] for r in rs])
    t = [r.t for r in lim]
    gaps = [b - a for a, b in zip(t, t[1:])]
    span = t[-1] - t[0]
    assert 3.6 <= span <= 5.0, "20 messages at 5/s burst 1 spanned %.2fs (expected ~3.8s)" % span
    assert min(gaps) >= 0.1, "inter-arrival gaps %s" % ["%.3f" % g for g in gaps]
    for i in range(len(t)):   # sliding 1 s window: burst 1 + 5 per second at most
        assert sum(1 for x in t if t[i] <= x < t[i] + 1.0) <= 6, "window at %d" % i
    pt = [r.t for r in perm]
    pg = [b - a for a, b in zip(pt, pt[1:])]
    assert min(pg) >= 0.3 and 2.3 <= pt[-1] - pt[0] <= 3.5, ["%.3f" % g for g in pg]
    rows = d.sql("SELECT e.name, q.attempt_count, q.status FROM webhook_queue q "
                 "JOIN endpoints e ON e.id = q.endpoint_id")
    assert len(rows) == 46 and all(a == 1 and s == "delivered" for _, a, s in rows), rows
    assert rcv.count() == 46


@pytest.mark.serial  # holds a wall-clock bound
def test_429_retry_after_holds_the_whole_endpoint(hookd, receiver):
    """A 429 with Retry-After: 2 holds every message of the endpoint (not
    only the one that got it) until then, without using their attempts."""
    first = threading.Event()

    def beh(req):
        if not first.is_set():
            first.set()
            return Reply(429, {"Retry-After": "2"}, b"slow down")
        return 200

    rcv = receiver(beh)
    other = receiver(200)
    d = hookd(endpoints={"a": ep(rcv, base_delay="1ms", max_delay="10s"), "b": ep(other)},
              sections=sections())
    m1 = d.enqueue("a", {"i": 0})["id"]
    t429 = rcv.wait_for(1, timeout=5)[0].t
    wait_until(lambda: d.row(m1)["last_status_code"] == 429, 5, msg="429 recorded")
    later = [d.enqueue("a", {"i": i})["id"] for i in range(1, 6)]
    mb = d.enqueue("b", {"i": 0})["id"]
    d.wait_status(mb, "delivered", timeout=5)       # other endpoints are not held
    assert other.wait_for(1)[0].t - t429 < 1.5
    wait_all_done(d, [m1] + later)
    reqs = rcv.snapshot()
    assert len(reqs) == 7, reqs   # m1 twice (429, then 200), five others once
    assert min(r.t for r in reqs[1:]) - t429 >= 1.9, "sent %.2fs after a 429 with Retry-After: 2" % (
        min(r.t for r in reqs[1:]) - t429)
    assert [d.row(i)["attempt_count"] for i in later] == [1] * 5
    assert d.row(m1)["attempt_count"] == 2


# ================================================================ pause / resume

def test_pause_resume_cli_and_socket_and_restart(hookd, receiver):
    rcv = receiver(200)
    d = hookd(endpoints={"a": ep(rcv, "/a"), "b": ep(rcv, "/b")}, sections=sections())
    p = cli(d, "pause", "a")
    assert p.returncode == 0 and p.stdout.strip() == "paused a", (p.returncode, p.stdout, p.stderr)
    assert d.sql("SELECT paused FROM endpoints WHERE name = 'a'") == [(1,)]
    with d.client() as c:
        ids = [r["id"] for r in c.pipeline([{"op": "enqueue", "endpoint": "a", "payload": {"i": i}}
                                            for i in range(5)])]
    # a fence: b's message, enqueued after a's, was delivered; a's would
    # have gone out with it had a not been paused
    mb = d.enqueue("b", {"x": 1})["id"]
    d.wait_status(mb, "delivered")
    assert rcv.count("/a") == 0
    e = d.endpoints()["a"]
    assert e["paused"] is True and e["queue"]["pending"] == 5, e
    assert cli_json(d, "endpoints")["endpoints"][0]["paused"] is True
    assert events(d, "endpoint_paused", endpoint="a", reason="operator")
    # paused survives a restart
    d.restart()
    ids.append(d.enqueue("a", {"i": 5})["id"])
    d.wait_status(d.enqueue("b", {"x": 2})["id"], "delivered")   # the fence again
    assert rcv.count("/a") == 0 and d.endpoints()["a"]["paused"] is True
    p = cli(d, "resume", "a")
    assert p.returncode == 0 and p.stdout.strip() == "resumed a", (p.returncode, p.stdout, p.stderr)
    wait_all_done(d, ids)
    assert rcv.count("/a") == 6
    # the socket ops
    r = d.request({"op": "pause", "endpoint": "a"})
    assert r == {"ok": True, "endpoint": "a", "paused": True}, r
    more = [d.enqueue("a", {"j": i})["id"] for i in range(3)]
    d.wait_status(d.enqueue("b", {"x": 3})["id"], "delivered")   # the fence
    assert rcv.count("/a") == 6 and all(d.status(i) == "pending" for i in more)
    r = d.request({"op": "resume", "endpoint": "a"})
    assert r == {"ok": True, "endpoint": "a", "paused": False}, r
    wait_all_done(d, more)
    assert rcv.count("/a") == 9 and all(d.row(i)["attempt_count"] == 1 for i in ids + more)
    assert d.sql("SELECT paused FROM endpoints WHERE name = 'a'") == [(0,)]
    assert len(events(d, "endpoint_resumed", endpoint="a")) == 2
    p = cli(d, "pause", "nope")
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)


# ================================================================ dead letters

def test_dead_letter_analysis_of_a_known_mix(hookd, receiver):
    """A: 3x404 + 1x400; B: 2x500 + 1 timeout (max_attempts 1); C: 2x503
    with 3 attempts each, one of them 2 h old; Z00..Z19: one 400 each.
    Per endpoint: count, most common error and status, first/last, average
    attempts, ordered by count, top 20; --hours filters."""
    def by_body(req):
        v = req.json().get("reply")
        if v == "hang":
            return Reply(200, delay=2.0)
        return int(v)

    rcv = receiver(by_body)
    eps = {"A": ep(rcv, "/A", max_attempts=1),
           "B": ep(rcv, "/B", max_attempts=1, timeout="300ms"),
           "C": ep(rcv, "/C", max_attempts=3, base_delay="1ms", max_delay="5ms")}
    for i in range(20):
        eps["Z%02d" % i] = ep(rcv, "/Z", max_attempts=1)
    d = hookd(endpoints=eps, sections=sections())
    mix = [("A", 404), ("A", 404), ("A", 400), ("A", 404), ("B", 500), ("B", "hang"), ("B", 500),
           ("C", 503), ("C", 503)] + [("Z%02d" % i, 400) for i in range(20)]
    t0 = int(time.time() * 1000)
    with d.client() as c:
        rs = c.pipeline([{"op": "enqueue", "endpoint": e, "payload": {"reply": str(v)}} for e, v in mix])
    ids = [r["id"] for r in rs]
    wait_all_done(d, ids)
    t1 = int(time.time() * 1000)
    assert all(d.status(i) == "dead_letter" for i in ids), [d.row(i) for i in ids if d.status(i) != "dead_letter"]
    c_old = ids[7]
    assert rw_sql(d, "UPDATE webhook_queue SET created_at = created_at - 7200000 WHERE id = ?", (c_old,)) == 1

    r = d.request({"op": "dead_letters"})
    assert r["ok"] is True and r["hours"] == 24, r
    got = r["endpoints"]
    assert len(got) == 20, "top 20 expected, got %d" % len(got)
    by = {x["endpoint"]: x for x in got}
    assert [x["endpoint"] for x in got[:3]] == ["A", "B", "C"], [x["endpoint"] for x in got[:4]]
    assert [x["dead_count"] for x in got[:3]] == [4, 3, 2]
    assert all(x["dead_count"] == 1 for x in got[3:])
    assert [x["endpoint"] for x in got[3:]] == ["Z%02d" % i for i in range(17)], "ties in endpoint order"
    a = by["A"]
    assert a["primary_status_code"] == 404 and a["primary_error"] == "http_404" and a["example_error"].startswith("HTTP 404"), a
    assert a["avg_attempts"] == 1 and t0 - 1000 <= a["first_dead"] <= a["last_dead"] <= t1, a
    b = by["B"]
    assert b["primary_status_code"] == 500 and b["primary_error"] == "http_500" and b["example_error"].startswith("HTTP 500"), b
    c = by["C"]
    assert c["primary_status_code"] == 503 and c["primary_error"] == "http_503" and c["example_error"].startswith("HTTP 503"), c
    assert c["avg_attempts"] == 3, c
    assert c["first_dead"] < t0 - 7000000 and t0 - 1000 <= c["last_dead"] <= t1, c
    # --hours 1 leaves out the old C letter
    out = cli_json(d, "dead-letters", "--hours", "1")
    by1 = {x["endpoint"]: x for x in out["endpoints"]}
    assert out["hours"] == 1 and by1["C"]["dead_count"] == 1 and by1["A"]["dead_count"] == 4, out
    p = cli(d, "dead-letters")
    assert p.returncode == 0 and re.search(r"^A\s+4\s+http_404", p.stdout, re.M), p.stdout


# ================================================================ latency: rollup, slow

def test_rollup_percentiles_and_slow_endpoints(hookd, receiver):
    """The rollup stores percentile_cont p50/p95/p99 (truncated to ms, as the
    seed's int() does) and the
    sample count of what is in endpoint_latency; `slow` lists the endpoint
    with p95 above slow_p95 and enough samples, not the fast one; the slow
    scan logs endpoint_slow."""
    delays = [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4]

    def slow(req):
        return Reply(200, delay=delays[req.json()["i"]])

    rcv = receiver(200)
    rcv.set(slow, "/slow")
    d = hookd(endpoints={"slow": ep(rcv, "/slow"), "fast": ep(rcv, "/fast"), "few": ep(rcv, "/few")},
              sections=sections({"latency": {"slow_p95": "100ms", "min_samples": 5}}))
    rcv.set(Reply(200, delay=0.3), "/few")
    reqs = [{"op": "enqueue", "endpoint": "slow", "payload": {"i": i}} for i in range(len(delays))]
    reqs += [{"op": "enqueue", "endpoint": "fast", "payload": {"i": i}} for i in range(8)]
    reqs += [{"op": "enqueue", "endpoint": "few", "payload": {"i": i}} for i in range(3)]
    with d.client() as c:
        ids = [r["id"] for r in c.pipeline(reqs)]
    wait_all_done(d, ids)
    for name, n in (("slow", 8), ("fast", 8), ("few", 3)):
        wait_until(lambda: (health(d, name) or {}).get("sample_count") == n, 5, msg="rollup of %s" % name)
    for name in ("slow", "fast", "few"):
        h = health(d, name)
        ms = [r[0] for r in d.sql("SELECT l.response_ms FROM endpoint_latency l JOIN endpoints e "
                                  "ON e.id = l.endpoint_id WHERE e.name = ? AND l.response_ms IS NOT NULL", (name,))]
        assert len(ms) == h["sample_count"], (name, ms, h)
        for col, p in (("p50_ms", 50), ("p95_ms", 95), ("p99_ms", 99)):
            want = pct(ms, p)
            assert 0 <= want - h[col] < 1, (name, col, h[col], want, sorted(ms))
            assert h[col] == int(want), (name, col, h[col], want, sorted(ms))
        assert h["rolled_up_at"], h
    p95 = health(d, "slow")["p95_ms"]
    assert p95 >= 350, p95
    r = d.request({"op": "slow"})
    assert r["ok"] is True and r["p95_ms"] == 100, r
    names = [x["name"] for x in r["endpoints"]]
    assert names == ["slow"], "few has 3 < min_samples samples, fast is fast: %r" % r
    s = r["endpoints"][0]
    assert s["sample_count"] == 8 and s["p95_ms"] == p95 and s["state"] == "closed", s
    out = cli_json(d, "slow")
    assert [x["name"] for x in out["endpoints"]] == ["slow"], out
    p = cli(d, "slow")
    assert p.returncode == 0 and re.search(r"^slow\s", p.stdout, re.M) and "fast" not in p.stdout, p.stdout
    assert cli_json(d, "slow", "--p95-ms", "5000")["endpoints"] == []
    # "p95 > N": strictly above the threshold
    assert [x["name"] for x in cli_json(d, "slow", "--p95-ms", p95 - 1)["endpoints"]] == ["slow"]
    assert cli_json(d, "slow", "--p95-ms", p95)["endpoints"] == [], "p95 == N is not above N"
    e = wait_until(lambda: events(d, "endpoint_slow", endpoint="slow", samples=8), 3, msg="endpoint_slow logged")[-1]
    assert e["p95_ms"] == str(p95) and e["threshold_ms"] == "100", e
    assert not events(d, "endpoint_slow", endpoint="fast") and not events(d, "endpoint_slow", endpoint="few")
    ep_list = d.endpoints()
    assert ep_list["slow"]["p95_ms"] == p95 and ep_list["slow"]["sample_count"] == 8, ep_list["slow"]


# ================================================================ health summary

@pytest.mark.serial  # holds a wall-clock bound or loads the machine
def test_health_summary_and_the_three_alerts(hookd, receiver):
    rcv = receiver(200)
    rcv.set(Reply(200, delay=0.25), "/slow")
    rcv.set(400, "/dead")
    d = hookd(endpoints={"slow": ep(rcv, "/slow"), "dead": ep(rcv, "/dead"), "held": ep(rcv, "/held", paused=True)},
              sections=sections({"latency": {"slow_p95": "100ms", "min_samples": 5}}))
    wait_until(lambda: events(d, "health_summary"), 3, msg="first health summary")
    with d.client() as c:
        ids = [r["id"] for r in c.pipeline([{"op": "enqueue", "endpoint": "slow", "payload": {"i": i}}
                                            for i in range(6)])]
        held = c.enqueue("held", {"h": 1})["id"]
    wait_all_done(d, ids)
    n = len(events(d, "health_summary"))   # a summary with dead_letter=0 in between
    wait_until(lambda: len(events(d, "health_summary")) > n, 5, msg="another health summary")
    assert not events(d, "alert_dead_letters_growing")
    with d.client() as c:
        dead = [r["id"] for r in c.pipeline([{"op": "enqueue", "endpoint": "dead", "payload": {"i": i}}
                                             for i in range(2)])]
    wait_all_done(d, dead)
    grow = wait_until(lambda: events(d, "alert_dead_letters_growing"), 3, msg="dead letters growing alert")
    assert grow[0]["previous"] == "0" and grow[0]["dead_letter"] in ("1", "2"), grow
    old = wait_until(lambda: events(d, "alert_oldest_pending"), 3, msg="oldest pending alert")
    assert int(old[0]["oldest_pending_age_ms"]) > 1000 and old[0]["threshold_ms"] == "1000", old
    assert d.status(held) == "pending"
    p95 = wait_until(lambda: events(d, "alert_p95", endpoint="slow"), 3, msg="p95 alert")
    assert int(p95[0]["p95_ms"]) >= 200 and p95[0]["threshold_ms"] == "100", p95
    assert not events(d, "alert_p95", endpoint="dead") and not events(d, "alert_p95", endpoint="held")
    n_grow = len(events(d, "alert_dead_letters_growing"))
    n = len(events(d, "health_summary"))   # three more summaries, no new dead letters
    wait_until(lambda: len(events(d, "health_summary")) >= n + 3, 5, msg="three more health summaries")
    assert len(events(d, "alert_dead_letters_growing")) == n_grow, "alert repeated without growth"
    s = events(d, "health_summary")[-1]
    assert s["level"] == "info", s
    assert (s["pending"], s["dead_letter"], s["in_flight"], s["endpoints"], s["open_breakers"]) == \
        ("1", "2", "0", "3", "0"), s
    assert int(s["delivered_last_hour"]) == 6 and int(s["oldest_pending_age_ms"]) > 1000, s
    # about one summary per 300 ms (one place, a monotonic period): five
    # more take about 1.5 s, neither a burst nor a stall
    n = len(events(d, "health_summary"))
    t0 = time.monotonic()
    wait_until(lambda: len(events(d, "health_summary")) >= n + 5, 10, msg="five more health summaries")
    took = time.monotonic() - t0
    assert 0.9 <= took <= 4.0, "five summaries in %.2fs with summary_interval 300ms" % took


# ================================================================ metrics

def test_metrics_pass_promtool_and_match(hookd, receiver, tmp_path):
    promtool()
    mfile = tmp_path / "prom" / "hookd.prom"
    mfile.parent.mkdir()
    rcv = receiver(200)
    rcv.set(400, "/bad")
    rcv.set(500, "/down")
    d = hookd(endpoints={"ok": ep(rcv, "/ok"), "bad": ep(rcv, "/bad"),
                         "down": ep(rcv, "/down", failure_threshold=2, max_attempts=100, base_delay="1ms",
                                    max_delay="5ms", cooldown="1m")},
              sections=sections({"metrics": {"file": str(mfile), "interval": "1s"}}))
    with d.client() as c:
        ids = [r["id"] for r in c.pipeline([{"op": "enqueue", "endpoint": "ok", "payload": {"i": i}}
                                            for i in range(3)])]
        ids.append(c.enqueue("bad", {"b": 1})["id"])
        c.enqueue("down", {"d": 1})
    wait_all_done(d, ids)
    rcv.wait_for(2, path="/down")
    wait_until(lambda: state(d, "down") == "open", 5, msg="down open")
    wait_until(lambda: (health(d, "ok") or {}).get("sample_count") == 3, 5, msg="rollup")
    p = cli(d, "metrics")
    assert p.returncode == 0, (p.stdout, p.stderr)
    text = p.stdout
    promtool_check(text)
    s = parse_prom(text)
    assert sample(s, "hookd_up") == 1
    assert sample(s, "hookd_queue_messages", status="delivered") == 3
    assert sample(s, "hookd_queue_messages", status="dead_letter") == 1
    assert sample(s, "hookd_queue_messages", status="failed") + sample(s, "hookd_queue_messages",
                                                                        status="pending") == 1
    assert sample(s, "hookd_dead_letters") == 1
    assert sample(s, "hookd_deliveries_total", outcome="delivered") == 3
    assert sample(s, "hookd_deliveries_total", outcome="dead_letter") == 1
    assert sample(s, "hookd_deliveries_total", outcome="retry") == 2
    assert sample(s, "hookd_attempt_duration_seconds_count") == 6
    assert sample(s, "hookd_attempt_duration_seconds_bucket", le="+Inf") == 6
    assert sample(s, "hookd_breaker_state", endpoint="down") == 2
    assert sample(s, "hookd_breaker_state", endpoint="ok") == 0
    assert sample(s, "hookd_breaker_state", endpoint="bad") == 0
    assert sample(s, "hookd_endpoint_latency_samples", endpoint="ok") == 3
    assert sample(s, "hookd_oldest_pending_age_seconds") > 0
    # same through the socket op
    r = d.request({"op": "metrics"})
    assert r["ok"] is True and "hookd_queue_messages" in r["text"]
    # the file: rewritten atomically every second, always complete
    wait_until(lambda: mfile.exists() and "hookd_deliveries_total{outcome=\"delivered\"} 3" in mfile.read_text(),
               5, msg="metrics file with the deliveries")
    inodes, reads = set(), 0
    deadline = time.monotonic() + 2.5
    while time.monotonic() < deadline:
        try:
            with open(mfile) as f:
                inodes.add(os.fstat(f.fileno()).st_ino)
                body = f.read()
        except FileNotFoundError:
            raise AssertionError("metrics file missing during a rewrite (not replaced atomically)")
        assert body.endswith("\n") and "hookd_breaker_state" in body, body[-200:]
        parse_prom(body)
        reads += 1
        time.sleep(0.005)
    assert len(inodes) >= 2, "the file was not rewritten (rename) within 2.5s at interval 1s"
    promtool_check(mfile.read_text())
    fs = parse_prom(mfile.read_text())
    assert sample(fs, "hookd_breaker_state", endpoint="down") == 2
    assert sample(fs, "hookd_queue_messages", status="delivered") == 3
    assert [x.name for x in mfile.parent.iterdir()] == ["hookd.prom"], list(mfile.parent.iterdir())
    d.stop()
    assert [x.name for x in mfile.parent.iterdir()] == ["hookd.prom"], list(mfile.parent.iterdir())


# ================================================================ retention, ring buffer

def _cleanup_interval_key(tmp_path):
    """The config key for the cleanup period, if this hookd has one."""
    for key in ("cleanup_interval",):
        ini = tmp_path / ("probe-%s.ini" % key)
        ini.write_text("[storage]\npath = %s\n[retention]\n%s = 200ms\n" % (tmp_path / "x.db", key))
        p = subprocess.run([HOOKD_BIN, "check-config", "-c", str(ini)], capture_output=True, text=True, timeout=30)
        if p.returncode == 0:
            return key
    return None


def test_retention_and_latency_ring_buffer_cleanup(hookd, receiver, tmp_path):
    """Delivered rows older than [retention] delivered and dead letters older
    than dead_letter are deleted in bounded chunks, their attempt log with
    them; younger rows stay. The latency ring keeps the newest [latency]
    samples per endpoint (no cleanup needed) and the rollup reads only the
    samples of the window. Rows are backdated from the test."""
    key = _cleanup_interval_key(tmp_path)
    slow_ok = os.environ.get("HOOKD_SLOW_TESTS") == "1"
    if not key and not slow_ok:
        pytest.skip("no [retention] cleanup_interval: set HOOKD_SLOW_TESTS=1 to run this with a 60 s wait")
    rcv = receiver(200)
    rcv.set(400, "/dead")
    extra = {"retention": {"delivered": "1m", "dead_letter": "1m", "chunk": 10},
             "latency": {"samples": 100}, "log": {"level": "debug"}}
    if key:
        extra["retention"][key] = "200ms"
    # the 400s would open dead's breaker at the 10th: not what this tests
    d = hookd(endpoints={"a": ep(rcv, "/a"), "dead": ep(rcv, "/dead", failure_threshold=1000)},
              sections=sections(extra))
    with d.client() as c:
        ids = [r["id"] for r in c.pipeline([{"op": "enqueue", "endpoint": "a", "payload": {"i": i}}
                                            for i in range(130)])]
        dead = [r["id"] for r in c.pipeline([{"op": "enqueue", "endpoint": "dead", "payload": {"i": i}}
                                             for i in range(30)])]
    wait_all_done(d, ids + dead)
    eid = {n: i for i, n in d.sql("SELECT id, name FROM endpoints")}

    def ring(name):
        return d.sql("SELECT slot, message_id FROM endpoint_latency WHERE endpoint_id = %d ORDER BY slot"
                     % eid[name])
    # a took 130 samples into 100 slots: the ring is full, each slot once,
    # and the 30 it dropped are the oldest ones by settle time
    ra = ring("a")
    assert [s for s, _ in ra] == list(range(100)), ra
    kept = {m for _, m in ra}
    assert len(kept) == 100 and kept <= set(ids)
    order = [m for (m,) in d.sql("SELECT message_id FROM delivery_attempts WHERE endpoint_id = %d "
                                 "ORDER BY at, message_id" % eid["a"])]
    assert len(order) == 130
    newest_dropped = max(d.sql("SELECT at FROM delivery_attempts WHERE message_id IN (%s)"
                               % ",".join(str(m) for m in set(ids) - kept)))[0]
    oldest_kept = min(d.sql("SELECT measured_at FROM endpoint_latency WHERE endpoint_id = %d" % eid["a"]))[0]
    assert newest_dropped <= oldest_kept
    assert len(ring("dead")) == 30
    assert d.sql("SELECT count(*) FROM delivery_attempts")[0][0] == 160

    day = 86400 * 1000
    old_ids, young_ids = ids[:120], ids[120:]
    rw_sql(d, "UPDATE webhook_queue SET delivered_at = delivered_at - 8 * %d WHERE id IN (%s)"
           % (day, ",".join(map(str, old_ids))))
    rw_sql(d, "UPDATE webhook_queue SET created_at = created_at - 31 * %d WHERE id IN (%s)"
           % (day, ",".join(map(str, dead[:25]))))
    # With the 60 s period rows made in the first second would be exactly
    # 1m old by the first cleanup and cross the cutoff while it runs: move
    # the young ones 20 s ahead.
    young = ",".join(map(str, young_ids + dead[25:]))
    rw_sql(d, "UPDATE webhook_queue SET created_at = created_at + 20000, delivered_at = delivered_at + 20000 "
              "WHERE id IN (%s)" % young)
    # out of the 24 h window: all but 10 of a's samples and 25 of dead's
    rw_sql(d, "UPDATE endpoint_latency SET measured_at = measured_at - 25 * 3600 * 1000 "
              "WHERE endpoint_id = %d AND slot >= 10" % eid["a"])
    rw_sql(d, "UPDATE endpoint_latency SET measured_at = measured_at - 25 * 3600 * 1000 "
              "WHERE endpoint_id = %d AND slot < 25" % eid["dead"])
    timeout = 10 if key else 75

    def counts():
        return (d.sql("SELECT count(*) FROM webhook_queue")[0][0],
                d.sql("SELECT count(*) FROM delivery_attempts")[0][0])

    try:
        wait_until(lambda: counts() == (15, 15), timeout, interval=0.2, msg="old rows deleted")
    except AssertionError:
        raise AssertionError("(queue rows, attempt rows) = %r, want (15, 15); log:\n%s"
                             % (counts(), "\n".join(l for l in d.log().splitlines()
                                                    if "event=rollup" not in l and "event=health_summary" not in l)))
    left = {r[0] for r in d.sql("SELECT id FROM webhook_queue")}
    assert left == set(young_ids) | set(dead[25:]), left
    assert {r[0] for r in d.sql("SELECT message_id FROM delivery_attempts")} == left
    # the ring is not cleaned up: it is bounded by its slots
    assert d.sql("SELECT count(*) FROM endpoint_latency")[0][0] == 130
    # the rollup only sees the window
    wait_until(lambda: sum(h[0] for h in d.sql("SELECT sample_count FROM endpoint_health")) == 15, 5,
               msg="rollup over the window")


# ================================================================ WAL bound

@pytest.mark.serial  # holds a wall-clock bound or loads the machine
@pytest.mark.sqlite_only("SQLite's -wal file")
def test_wal_stays_bounded_under_sustained_load(hookd, receiver):
    """~5 s of enqueues (1 KiB payloads) and deliveries with checkpoints every
    200 ms: the -wal file stays under 64 MiB and does not keep growing; after
    the load it is truncated or at least no larger."""
    rcv = receiver(200)
    d = hookd(endpoints={"a": ep(rcv, "/a")}, sections=sections({"storage": {"synchronous": "normal"}}))
    wal = d.db.with_name(d.db.name + "-wal")
    stop = threading.Event()
    sizes = []
    sent = [0]
    blob = "x" * 1000

    def load():
        with d.client(timeout=30) as c:
            i = 0
            while not stop.is_set():
                rs = c.pipeline([{"op": "enqueue", "endpoint": "a", "payload": {"i": i + k, "pad": blob}}
                                 for k in range(200)])
                assert all(r["ok"] for r in rs), [r for r in rs if not r["ok"]][:3]
                i += 200
                sent[0] = i

    th = threading.Thread(target=load, daemon=True)
    th.start()
    t_end = time.monotonic() + 5.0
    while time.monotonic() < t_end and th.is_alive():
        sizes.append(wal.stat().st_size if wal.exists() else 0)
        time.sleep(0.1)
    stop.set()
    th.join(30)
    assert not th.is_alive()
    sizes.append(wal.stat().st_size if wal.exists() else 0)
    assert sent[0] >= 2000, "load generator only sent %d" % sent[0]
    peak = max(sizes)
    assert peak < 64 << 20, "WAL reached %.1f MiB" % (peak / 2 ** 20)
    # not growing without bound: the second half's peak is not far above the first half's
    half = len(sizes) // 2
    assert max(sizes[half:]) <= max(sizes[:half]) * 2 + (4 << 20), ["%.1f" % (s / 2 ** 20) for s in sizes]
    # the deliveries of the backlog still write after the enqueues stop:
    # the bound is for the quiet daemon once they are all recorded
    wait_until(lambda: d.sql("SELECT count(*) FROM webhook_queue WHERE status = 'delivered'")[0][0] >= sent[0],
               60, interval=0.1, msg="the backlog delivered")
    at_stop = wal.stat().st_size if wal.exists() else 0
    assert at_stop < 64 << 20
    # a quiet daemon keeps checkpointing (every 200 ms here) into the same
    # file: over the next five periods it does not grow
    for _ in range(10):
        time.sleep(0.1)
        after = wal.stat().st_size if wal.exists() else 0
        assert after <= at_stop, (after, at_stop)
    if at_stop > 16 << 20:     # more than 4096 pages: hookd restarts the log with TRUNCATE
        wait_until(lambda: (wal.stat().st_size if wal.exists() else 0) < 16 << 20, 5, msg="WAL truncated")


# ================================================================ dead letters: kinds of error
# (last in the module: it fails until the bug it shows is fixed, and make
# integration runs pytest -x)

class TrickleServer:
    """A raw HTTP server: body {"reply": "500"} gets a 500 at once; any other
    request gets a 200 header announcing 1000 bytes, then body["bytes"]
    bytes, then nothing (the client times out having received exactly
    that many bytes)."""

    def __init__(self):
        import socket as so
        self.stop = threading.Event()
        self.sock = so.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.th = threading.Thread(target=self._loop, daemon=True)
        self.th.start()

    def url(self):
        return "http://127.0.0.1:%d/t" % self.port

    def _loop(self):
        import socket as so
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (so.timeout, OSError):
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        try:
            conn.settimeout(5)
            buf = b""
            while b"\r\n\r\n" not in buf:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                buf += chunk
            head, _, body = buf.partition(b"\r\n\r\n")
            n = int(re.search(rb"(?i)content-length:\s*(\d+)", head).group(1))
            while len(body) < n:
                body += conn.recv(65536)
            req = json.loads(body)
            if req.get("reply") == "500":
                conn.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\n"
                             b"Connection: close\r\n\r\nfail")
            else:
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + b"x" * int(req["bytes"]))
                self.stop.wait(5)
        except (OSError, ValueError):
            pass
        finally:
            conn.close()

    def close(self):
        self.stop.set()
        self.sock.close()


def test_dead_letter_primary_error_is_the_most_common_kind(hookd):
    """Three timeouts and two HTTP 500s: the most common error is the
    timeout. (curl's timeout text carries the elapsed milliseconds and the
    bytes received, so grouping on the exact last_error text never sees two
    timeouts as the same error; here the three texts differ by
    construction: 1, 2 and 3 bytes received.)"""
    srv = TrickleServer()
    try:
        d = hookd(endpoints={"B": {"url": srv.url(), "max_attempts": 1, "timeout": "300ms"}},
                  sections=sections())
        with d.client() as c:
            rs = c.pipeline([{"op": "enqueue", "endpoint": "B", "payload": p} for p in
                             ({"bytes": 1}, {"bytes": 2}, {"bytes": 3}, {"reply": "500"}, {"reply": "500"})])
        ids = [r["id"] for r in rs]
        wait_all_done(d, ids)
        errs = [d.row(i)["last_error"] for i in ids]
        assert all(d.status(i) == "dead_letter" for i in ids), errs
        assert all(e.startswith("timeout") for e in errs[:3]), errs
        r = d.request({"op": "dead_letters"})
        b = r["endpoints"][0]
        assert b["dead_count"] == 5 and b["primary_status_code"] == 500, b
        assert b["primary_error"].startswith("timeout"), (
            "primary_error %r: three timeouts outnumber two HTTP 500s, but each timeout's last_error "
            "differs (%r), so the exact-text mode picks the 500" % (b["primary_error"], errs[:3]))
    finally:
        srv.close()
