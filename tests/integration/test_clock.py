"""Wall-clock steps: the times hookd waits on (a row's next_attempt_at, a
breaker's cooldown, a 429's hold) keep their length when the wall clock
is stepped an hour back or forward under a running hookd: due rows go,
the queue's age stays true, a breaker's cooldown and a retry's delay keep
their length while a deliver_at time stays on the clock, and two nodes of one PostgreSQL store on one host
move each row once.

The clock is stepped with tests/fault/timeshift.c, an LD_PRELOAD shim
that adds an offset read from a file to CLOCK_REALTIME, gettimeofday and
time (the monotonic and boot clocks go on as they were, as under an NTP
step). A static HOOKD_BIN ignores LD_PRELOAD: those runs skip, saying so.
"""
import os
import time
from pathlib import Path

import pytest

from conftest import HOOKD_BIN, Reply, Sequence, wait_until
from test_cluster import node_sections
from test_faults import shim_path

# each holds a bound of a few seconds against an hour's error: run alone
pytestmark = pytest.mark.serial

HOUR_MS = 3600 * 1000


class Clock:
    """The wall clock of one hookd: step(ms) moves it by ms (cumulative)."""

    def __init__(self, directory):
        self.path = Path(directory) / "timeshift"
        self.offset = 0
        self._write()

    def _write(self):
        # rewritten in place: the shim maps the file, a rename would not be seen
        mode = "r+b" if self.path.exists() else "wb"
        with open(self.path, mode) as f:
            f.write(b"%-63d\n" % self.offset)

    def step(self, ms):
        self.offset += ms
        self._write()

    def now_ms(self):
        """hookd's wall clock now."""
        return int(time.time() * 1000) + self.offset

    def loaded_by(self, pid):
        p = Path(str(self.path) + ".loaded")
        return p.exists() and p.read_text().strip() == str(pid)


def start_shifted(d, clock=None):
    """Start d with its wall clock under the test's control (clock: one
    shared with other daemons, as on one host); skip (with the reason)
    when the binary does not load LD_PRELOAD libraries."""
    clock = clock or Clock(d.dir)
    saved = {k: os.environ.get(k) for k in ("LD_PRELOAD", "TIMESHIFT_FILE", "ASAN_OPTIONS")}
    os.environ["LD_PRELOAD"] = str(shim_path("timeshift"))
    os.environ["TIMESHIFT_FILE"] = str(clock.path)
    asan = os.environ.get("ASAN_OPTIONS", "")
    os.environ["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "verify_asan_link_order=0"
    try:
        d.start()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    if not clock.loaded_by(d.proc.pid):
        d.stop()
        pytest.skip("%s does not load LD_PRELOAD libraries (static binary?): the wall clock cannot be "
                    "stepped under it without root" % HOOKD_BIN)
    return clock


def ep(rcv, path="/hook", **kw):
    d = {"url": rcv.url(path)}
    d.update(kw)
    return d


def step_seen(d):
    return "event=clock_step " in d.log()


def test_backward_step_due_messages_still_go(hookd, receiver):
    """Three due rows waiting (their endpoint paused) when the clock goes
    back an hour: the queue's age stays what it really is, and once the
    endpoint resumes they go at once, not an hour later behind a new one."""
    rcv = receiver(200)
    d = hookd(endpoints={"a": ep(rcv)}, start=False)
    clock = start_shifted(d)
    assert d.request({"op": "pause", "endpoint": "a"})["ok"] is True
    ids = [d.enqueue("a", {"i": i}, event_id="due-%d" % i)["id"] for i in range(3)]
    t_enq = time.monotonic()
    # rows old enough that an age of 0 cannot pass for theirs
    wait_until(lambda: (d.stats()["oldest_pending_age_ms"] or 0) >= 1000, 5, msg="rows a second old")
    clock.step(-HOUR_MS)

    # the queue's age as hookd reports it: the rows' real age once the
    # writer has looked at the clock (at most a second apart), never 0
    def age_sane():
        age = d.stats()["oldest_pending_age_ms"]
        real = (time.monotonic() - t_enq) * 1000
        return age is not None and 1000 <= age and real - 1500 <= age <= real + 1500
    wait_until(age_sane, 5, msg="oldest_pending_age_ms to be the rows' real age after a 1 h backward step")
    t_resume = time.monotonic()
    assert d.request({"op": "resume", "endpoint": "a"})["ok"] is True
    late = d.enqueue("a", {"i": "late"}, event_id="after-step")["id"]
    reqs = rcv.wait_for(4, timeout=10)
    got = {r.event_id for r in reqs}
    assert {"due-0", "due-1", "due-2", "after-step"} <= got, got
    assert max(r.t for r in reqs) - t_resume < 5.0
    for i in ids + [late]:
        d.wait_status(i, "delivered")
    assert step_seen(d), "no event=clock_step logged"


def test_backward_step_breaker_cooldown(hookd, receiver):
    """A breaker with a 2 s cooldown opened just before the clock went back
    an hour half-opens about 2 s after it opened, not an hour later."""
    rcv = receiver(Sequence(500, 500, 500, 200))
    d = hookd(endpoints={"a": ep(rcv, max_in_flight=1, max_attempts=100, base_delay="1ms", max_delay="10ms")},
              sections={"breaker": {"failure_threshold": 3, "cooldown": "2s", "max_cooldown": "10s"}}, start=False)
    clock = start_shifted(d)
    mid = d.enqueue("a", {"x": 1})["id"]
    reqs = rcv.wait_for(3, timeout=10)
    t_open = reqs[2].t
    wait_until(lambda: d.endpoints()["a"]["state"] == "open", 5, msg="breaker open")
    clock.step(-HOUR_MS)
    probe = rcv.wait_for(4, timeout=15)[3]
    gap = probe.t - t_open
    assert 1.5 <= gap <= 8.0, "probe %.2fs after the breaker opened (cooldown 2s, clock stepped back 1 h)" % gap
    d.wait_status(mid, "delivered")
    wait_until(lambda: d.endpoints()["a"]["state"] == "closed", 5, msg="breaker closed")
    assert step_seen(d)


def test_forward_step_retry_not_early(hookd, receiver):
    """A retry scheduled about a minute out (Retry-After: 60) does not go
    when the clock jumps an hour ahead; a new message still goes at once."""
    rcv = receiver(200)
    rcv.set(Reply(503, headers={"Retry-After": "60"}), path="/slow")
    d = hookd(endpoints={"slow": ep(rcv, "/slow", max_attempts=5, base_delay="1s", max_delay="2m"),
                         "fast": ep(rcv, "/fast")}, start=False)
    clock = start_shifted(d)
    mid = d.enqueue("slow", {"x": 1})["id"]
    rcv.wait_for(1, timeout=10, path="/slow")
    d.wait_status(mid, "failed")
    due = d.get(mid)["next_attempt_at"]
    assert due - clock.now_ms() >= 50000, due - clock.now_ms()
    clock.step(HOUR_MS)
    wait_until(lambda: step_seen(d) or rcv.count("/slow") > 1, 5, msg="hookd did not notice the clock step")
    # a round after the step: a new message goes out, the retry stays put
    fresh = d.enqueue("fast", {"y": 1})["id"]
    d.wait_status(fresh, "delivered")
    assert rcv.count("/slow") == 1, "after a 1 h forward step the retry went %.1fs after its first attempt " \
        "(Retry-After: 60)" % (rcv.snapshot("/slow")[-1].t - rcv.snapshot("/slow")[0].t)
    left = d.get(mid)["next_attempt_at"] - clock.now_ms()
    assert 45000 <= left <= 125000, "retry due in %d ms after a 1 h forward step" % left
    assert d.status(mid) == "failed"


def test_forward_step_keeps_deliver_at_moves_delays(hookd, receiver):
    """A due time given as deliver_at is a time on the wall clock
    (hookd-protocol(7), enqueue): after an hour's forward step it is past,
    and the message goes at once. A delay, the request's or the
    endpoint's, is a wait: it moves an hour on, the same elapsed time
    after its enqueue."""
    rcv = receiver(200)
    d = hookd(endpoints={"a": ep(rcv, "/a"), "b": ep(rcv, "/b", delay="10m")}, start=False)
    clock = start_shifted(d)
    at = clock.now_ms() + 10 * 60 * 1000
    fixed = d.request({"op": "enqueue", "endpoint": "a", "payload": {"x": 1}, "deliver_at": at})
    rel = d.request({"op": "enqueue", "endpoint": "a", "payload": {"x": 2}, "delay": "10m"})
    epd = d.request({"op": "enqueue", "endpoint": "b", "payload": {"x": 3}})
    assert fixed["deliver_at"] == at, fixed
    due_rel, due_ep = rel["deliver_at"], epd["deliver_at"]
    clock.step(HOUR_MS)
    wait_until(lambda: step_seen(d), 5, msg="hookd did not notice the clock step")
    d.wait_status(fixed["id"], "delivered")
    assert d.get(fixed["id"])["next_attempt_at"] == at
    # moved by the step as measured (to a few ms)
    assert abs(d.get(rel["id"])["next_attempt_at"] - (due_rel + HOUR_MS)) < 1000
    assert abs(d.get(epd["id"])["next_attempt_at"] - (due_ep + HOUR_MS)) < 1000
    assert d.status(rel["id"]) == "pending" and d.status(epd["id"]) == "pending"
    assert rcv.count("/a") == 1 and rcv.count("/b") == 0


def test_backward_step_keeps_deliver_at_moves_delays(hookd, receiver):
    """After an hour's backward step, a message asked for 8 s ahead with
    deliver_at waits for that time on the clock, an hour and 8 s away by
    the stepped clock; one put off 8 s by a delay still goes about 8 s
    after its enqueue."""
    rcv = receiver(200)
    d = hookd(endpoints={"a": ep(rcv)}, start=False)
    clock = start_shifted(d)
    at = clock.now_ms() + 8000
    fixed = d.request({"op": "enqueue", "endpoint": "a", "payload": {"x": 1}, "deliver_at": at})
    rel = d.request({"op": "enqueue", "endpoint": "a", "payload": {"x": 2}, "delay": "8s"})
    t_enq = time.monotonic()
    due_rel = rel["deliver_at"]
    clock.step(-HOUR_MS)
    wait_until(lambda: step_seen(d), 5, msg="hookd did not notice the clock step")
    assert time.monotonic() - t_enq < 7, "the step was seen too late for this test to tell anything"
    assert d.get(fixed["id"])["next_attempt_at"] == at
    assert abs(d.get(rel["id"])["next_attempt_at"] - (due_rel - HOUR_MS)) < 1000
    d.wait_status(rel["id"], "delivered", timeout=20)
    assert 7.0 <= rcv.snapshot()[0].t - t_enq < 15.0
    assert rcv.count() == 1 and d.status(fixed["id"]) == "pending"
    left = d.get(fixed["id"])["next_attempt_at"] - clock.now_ms()
    assert HOUR_MS - 10000 <= left <= HOUR_MS + 8000, left


def test_backward_step_two_nodes_one_host(hookd, receiver, pgdb):
    """Two nodes of one PostgreSQL store on one host see the same step:
    each moves the rows its own clock wrote (enqueued or claimed by it),
    so every row moves once and none stays an hour behind."""
    ci, sql = pgdb
    rcv = receiver(200)
    nodes = [hookd(name="node%d" % i, endpoints={"a": ep(rcv)}, sections=node_sections(ci, "n%d" % i), start=False)
             for i in range(2)]
    clock = start_shifted(nodes[0])
    start_shifted(nodes[1], clock)
    assert nodes[0].request({"op": "pause", "endpoint": "a"})["ok"] is True
    wait_until(lambda: nodes[1].endpoints()["a"]["paused"], 5, msg="the pause reached node 1")
    for i in range(4):
        assert nodes[i % 2].enqueue("a", {"i": i}, event_id="n-%d" % i)["ok"] is True
    wait_until(lambda: (nodes[0].stats()["oldest_pending_age_ms"] or 0) >= 1000, 5, msg="rows a second old")
    clock.step(-HOUR_MS)
    assert nodes[1].request({"op": "resume", "endpoint": "a"})["ok"] is True
    got = {r.event_id for r in rcv.wait_for(4, timeout=10)}
    assert got == {"n-0", "n-1", "n-2", "n-3"}, got
    for d in nodes:
        line = [x for x in d.log().splitlines() if "event=clock_step " in x][0]
        assert "scope=this_node" in line and "rows_moved=2" in line, line


def test_backward_step_two_nodes_shared_breaker(hookd, receiver, pgdb):
    """The cluster's breaker (2 s cooldown) opened just before both nodes'
    clock went back an hour: it half-opens about 2 s after it opened."""
    ci, sql = pgdb
    rcv = receiver(Sequence(500, 500, 500, 200))
    nodes = [hookd(name="node%d" % i, sections=node_sections(
        ci, "n%d" % i, {"breaker": {"failure_threshold": 3, "cooldown": "2s", "max_cooldown": "10s"}}),
        endpoints={"a": ep(rcv, max_in_flight=1, max_attempts=100, base_delay="1ms", max_delay="10ms")},
        start=False) for i in range(2)]
    clock = start_shifted(nodes[0])
    start_shifted(nodes[1], clock)
    mid = nodes[0].enqueue("a", {"x": 1})["id"]
    reqs = rcv.wait_for(3, timeout=10)
    t_open = reqs[2].t
    wait_until(lambda: nodes[1].endpoints()["a"]["state"] == "open", 5, msg="breaker open")
    clock.step(-HOUR_MS)
    probe = rcv.wait_for(4, timeout=15)[3]
    gap = probe.t - t_open
    assert 1.5 <= gap <= 8.0, "probe %.2fs after the breaker opened (cooldown 2s, clock stepped back 1 h)" % gap
    nodes[0].wait_status(mid, "delivered")
