"""Hostile local clients (issue 30): an account with no admin rights
(`nobody`) opens idle connections, half-sends long lines, pipelines
endpoint.list without reading, and sends the most expensive request
lines, while a well-behaved client of another account keeps enqueueing.
hookd's memory stays bounded (peak RSS, /proc/PID/status VmHWM), the
well-behaved client's acks stay fast and none of its events is lost, and
an admin can still connect and pause an endpoint.

The clients run as other users (tests/integration/hostile_attack.py,
started with subprocess user=/group=), so these tests need root; the
suite is run as root in CI. test_hostile.py is about hostile *endpoints*.

The long variant (10,000 idle connections, 1,000 half-sent 1 MiB lines,
100 pipeliners) runs in `make chaos` (HOOKD_HOSTILE_LONG=1)."""
import grp
import json
import os
import pwd
import shutil
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from conftest import HOOKD_BIN, Client, pct, raise_nofile, wait_until

HERE = Path(__file__).resolve().parent
ATTACK = str(HERE / "hostile_attack.py")
PARKED = {"url": "http://127.0.0.1:9/parked", "paused": "yes"}
RSS_BOUND_MIB = 128          # peak RSS of the daemon (hookd.ini.5, [server] clients_memory)
ACK_P99_MS = 50              # the well-behaved client's ack p99
GOOD_UID = 65533             # the well-behaved account: neither nobody nor an admin
WORST_UID = 65532            # a second hostile account: the worst-case lines



def _sanitized():
    """A sanitizer build (make asan / make tsan): its memory and speed are
    the sanitizer's, so the RSS and latency bounds are not checked there
    (everything else is)."""
    try:
        with open(HOOKD_BIN, "rb") as f:
            data = f.read()
    except OSError:
        return False
    return b"__asan_init" in data or b"__tsan_init" in data


SANITIZED = _sanitized()

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the hostile clients run as nobody: needs root to switch users")


def nobody():
    pw = pwd.getpwnam("nobody")
    return pw.pw_uid, pw.pw_gid


def vm(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024.0
    raise AssertionError("no %s for pid %d" % (key, pid))


def cpu_seconds(pid):
    """utime + stime of a process (its threads included)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def spawn(uid, gid, *args):
    """hostile_attack.py ARGS as uid:gid (no supplementary groups)."""
    return subprocess.Popen([sys.executable, ATTACK, *map(str, args)], user=uid, group=gid, extra_groups=[],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd="/")


def result(proc, timeout):
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, "hostile_attack.py failed (%s): %s" % (proc.returncode, err.decode()[-2000:])
    return json.loads(out)


def endpoints(n_parked):
    eps = {"p%d" % i: dict(PARKED, url="http://127.0.0.1:9/parked/%d/with/a/longer/path" % i)
           for i in range(n_parked)}
    eps["ops"] = {"url": "http://127.0.0.1:9/ops"}
    return eps


def client_sections(extra=None):
    _, gid = nobody()
    s = {"server": {"group": grp.getgrgid(gid).gr_name}}
    for k, v in (extra or {}).items():
        s["server"][k] = v
    return s


class RssWatch(threading.Thread):
    """Samples the daemon's VmRSS and the connections it holds until
    stopped (the bound is checked on VmHWM, which the kernel keeps)."""

    def __init__(self, d):
        super().__init__(daemon=True)
        self.d = d
        self.stop = threading.Event()
        self.peak = 0.0
        self.conns = 0

    def run(self):
        while not self.stop.wait(0.2):
            try:
                self.peak = max(self.peak, vm(self.d.proc.pid, "VmRSS"))
                self.conns = max(self.conns, count_clients(self.d))
            except (OSError, AssertionError):
                return


def attack_while_enqueueing(hookd, receiver, seconds, attack_args, worst, sections, n_parked=12,
                            timeout_extra=120):
    """The common run: start hookd, the attack as nobody, `worst`
    connections of worst-case lines as WORST_UID (an account of its own:
    nobody's lines wait behind its own budget) and the well-behaved client
    as GOOD_UID for `seconds`; pause and resume an endpoint as root in the
    middle. Returns (daemon, receiver, attack stats, good-client result,
    admin round-trip seconds, watch)."""
    raise_nofile(20000)
    recv = receiver()
    eps = endpoints(n_parked)
    eps["a"] = {"url": recv.url("/good")}
    secs = client_sections(sections)
    shm = None
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        # the ack waits for an fsync: on a disk shared with other work its
        # latency is the other work's, not the attack's; in memory the
        # measure is what hookd's own loop does under attack
        shm = tempfile.mkdtemp(prefix="hookd-hostile.", dir="/dev/shm")
        secs["storage"] = {"path": os.path.join(shm, "hookd.db")}
    try:
        return _attack(hookd, recv, eps, secs, seconds, attack_args, worst, timeout_extra)
    finally:
        if shm:
            shutil.rmtree(shm, ignore_errors=True)   # the daemon has stopped (or failed)


def _attack(hookd, recv, eps, secs, seconds, attack_args, worst, timeout_extra):
    d = hookd(endpoints=eps, sections=secs)
    uid, gid = nobody()
    watch = RssWatch(d)
    watch.start()
    watch.cpu0 = cpu_seconds(d.proc.pid)
    att = spawn(uid, gid, "attack", d.sock, seconds, *attack_args)
    wst = spawn(WORST_UID, gid, "attack", d.sock, seconds, "--worst", worst, "--reconnect")
    time.sleep(min(2.0, seconds / 5))   # the attack gets its connections in first
    good = spawn(GOOD_UID, gid, "good", d.sock, seconds - 2, "--endpoint", "a", "--prefix", "good",
                 "--interval", "0.01")
    # the operator, in the middle of it
    time.sleep(seconds / 3)
    t0 = time.monotonic()
    with Client(d.sock, timeout=10) as c:
        r = c.request({"op": "pause", "endpoint": "ops"})
        assert r.get("ok") is True, r
        eps_now = {e["name"]: e for e in c.request({"op": "endpoint.list"})["endpoints"]}
        assert eps_now["ops"]["paused"] is True, eps_now["ops"]
        assert c.request({"op": "resume", "endpoint": "ops"}).get("ok") is True
    admin_s = time.monotonic() - t0
    g = result(good, seconds + timeout_extra)
    a = result(att, seconds + timeout_extra)
    w = result(wst, seconds + timeout_extra)
    for k in ("worst_replies", "worst_codes"):
        a[k] = w[k]
    a["worst_cpu_s"] = w["cpu_s"]
    watch.stop.set()
    watch.join(5)
    watch.cpu = cpu_seconds(d.proc.pid) - watch.cpu0
    assert d.running, d.log()[-3000:]
    # every acked event reaches the receiver
    want = set(g["acked"])
    try:
        wait_until(lambda: want <= set(recv.event_ids("/good")), timeout=120,
                   msg="all %d acked events delivered" % len(want))
        watch.hwm = vm(d.proc.pid, "VmHWM")
        d.stop()
    finally:
        if d.running:
            d.kill()
    return d, recv, a, g, admin_s, watch


def report(name, d, a, g, admin_s, watch):
    lat = g["lat"]
    hwm = watch.hwm
    delivered = len(g["acked"])
    print("\n%s%s: daemon peak RSS (VmHWM) %.1f MiB (sampled VmRSS peak %.1f MiB, bound %d MiB); well-behaved "
          "client: %d acks, p50 %.1f ms p99 %.1f ms max %.1f ms, 0 of %d lost, errors %d; admin pause+list+resume "
          "%.0f ms; hookd held at most %d connections and used %.1f s of CPU; load average %s; attack: %s"
          % (name, " (sanitizer build: bounds not checked)" if SANITIZED else "", hwm, watch.peak, RSS_BOUND_MIB, len(lat), pct(lat, 50) * 1e3, pct(lat, 99) * 1e3,
             max(lat) * 1e3, delivered, len(g["errors"]), admin_s * 1e3, watch.conns, watch.cpu,
             "%.1f %.1f %.1f" % os.getloadavg(), json.dumps(a, sort_keys=True)))
    return hwm


@pytest.mark.serial  # a heavy load and a latency bound
def test_hostile_clients_short(hookd, receiver):
    """1,000 idle connections, 100 half-sent 1 MiB lines, 20 pipeliners
    that never read, all as nobody, and 4 connections of worst-case lines
    (another account), reconnecting when refused or closed, for 14 s, with
    the default
    limits but short line and send timeouts so that both act during the
    run."""
    seconds = 14
    d, recv, a, g, admin_s, watch = attack_while_enqueueing(
        hookd, receiver, seconds,
        ["--idle", 1000, "--half", 100, "--half-bytes", 1 << 20, "--pipe", 20, "--reconnect"], 4,
        {"line_timeout": "3s", "send_timeout": "3s"})
    hwm = report("hostile short", d, a, g, admin_s, watch)
    lat = g["lat"]
    assert not g["errors"], g["errors"][:5]
    assert len(lat) > (20 if SANITIZED else 200), "the well-behaved client got only %d acks" % len(lat)
    if not SANITIZED:
        assert pct(lat, 99) * 1e3 < ACK_P99_MS, "ack p99 %.1f ms" % (pct(lat, 99) * 1e3)
        assert hwm < RSS_BOUND_MIB, "peak RSS %.1f MiB" % hwm
    # the defences acted: nobody was held to its share, and connections
    # that overstayed were closed
    assert a["refused"] > 0 and any("max_clients_per_user" in m for m in a["refused_messages"]), a
    # nobody's 256, the worst lines', the well-behaved client's, the
    # operator's, the listener and delivery connections
    assert watch.conns <= 256 + 4 + 1 + 1 + 1 + 16, "hookd held %d sockets" % watch.conns
    assert a["closed_by_hookd"] > 0, a
    assert a["worst_replies"] > 0 and set(a["worst_codes"]) <= {"bad_request"}, a
    assert a["pipe_requests"] > 0 and a["half_bytes"] > 0, a
    log = d.log()
    assert re.search(r"event=clients_dropped .*refused_user=[1-9]", log)


def test_admin_slots_and_per_user_share(hookd):
    """max_clients 40, admin_reserve 8, max_clients_per_user 20: nobody
    gets 20 connections, another account the 12 left below the reserve,
    root the last 8 -- and then nobody gets in. Each refusal says why."""
    uid, gid = nobody()
    d = hookd(endpoints={"ops": {"url": "http://127.0.0.1:9/ops"}},
              sections=client_sections({"max_clients": 40, "admin_reserve": 8, "max_clients_per_user": 20}))
    att = spawn(uid, gid, "attack", d.sock, 10, "--idle", 30)
    # nobody's 20, then the other account's 12 (each attack holds its
    # connections for its whole run)
    base = count_clients(d)
    wait_until(lambda: count_clients(d) >= base + 20, timeout=5, msg="nobody's 20 connections")
    other = spawn(GOOD_UID, gid, "attack", d.sock, 7, "--idle", 15)
    wait_until(lambda: count_clients(d) >= base + 32, timeout=5, msg="the other account's 12 connections")
    held = []
    try:
        for _ in range(8):
            c = Client(d.sock, timeout=5)
            held.append(c)
            c.ping()
        # the operator's connections work; a ninth is one too many
        assert held[0].request({"op": "pause", "endpoint": "ops"})["ok"] is True
        with Client(d.sock, timeout=5) as c:
            r = c.recv_json()
            assert r["error"]["code"] == "busy" and "max_clients" in r["error"]["message"], r
    finally:
        for c in held:
            c.close()
    o = result(other, 30)
    a = result(att, 30)
    assert a["refused"] == 10 and list(a["refused_messages"]) == [
        "too many connections from this user ([server] max_clients_per_user)"], a
    assert o["refused"] == 3 and list(o["refused_messages"]) == [
        "too many clients; the remaining connections are kept for admins ([server] admin_reserve)"], o


def count_clients(d):
    """Sockets hookd holds open: its clients, plus the listener and the
    few of the delivery threads."""
    n = 0
    fds = "/proc/%d/fd" % d.proc.pid
    for fd in os.listdir(fds):
        try:
            n += os.readlink(os.path.join(fds, fd)).startswith("socket:")
        except OSError:
            pass
    return n


def test_non_reading_pipeliner_is_bounded_then_closed(hookd):
    """The issue's first finding: a client pipelining endpoint.list and
    never reading grew hookd by 37 MiB per connection (13 endpoints). Now
    hookd stops reading at client_memory (1 MiB) per connection and closes
    it after send_timeout; other clients are answered meanwhile."""
    uid, gid = nobody()
    d = hookd(endpoints=endpoints(12), sections=client_sections({"send_timeout": "2s"}))
    pid = d.proc.pid
    rss0 = vm(pid, "VmRSS")
    att = spawn(uid, gid, "attack", d.sock, 5, "--pipe", 3)
    peak = rss0
    t_end = time.monotonic() + 5
    while time.monotonic() < t_end:
        peak = max(peak, vm(pid, "VmRSS"))
        with Client(d.sock, timeout=5) as c:
            c.ping()
        time.sleep(0.1)
    a = result(att, 30)
    grew = peak - rss0
    print("\n3 non-reading pipeliners: RSS +%.1f MiB; %s" % (grew, json.dumps(a, sort_keys=True)))
    if not SANITIZED:
        assert grew < 3 * 4, "RSS grew %.1f MiB for 3 non-reading connections" % grew
    # each was closed after send_timeout (the attack does not reconnect)
    assert a["closed_by_hookd"] == 3, a
    assert re.search(r"not_reading=[1-9]", d.log())


def test_idle_and_partial_line_timeouts(hookd):
    """idle_timeout and line_timeout close what overstays; a connection
    that keeps sending lines is not timed out."""
    d = hookd(sections={"server": {"idle_timeout": "1s", "line_timeout": "1s"}})
    idle = socket.socket(socket.AF_UNIX)
    idle.connect(str(d.sock))
    half = socket.socket(socket.AF_UNIX)
    half.connect(str(d.sock))
    half.sendall(b'{"op":"pi')
    t0 = time.monotonic()
    for s in (idle, half):
        s.settimeout(10)
        assert s.recv(100) == b"", "expected hookd to close the connection"
    took = time.monotonic() - t0
    busy = d.client(timeout=5)
    # the busy one: pings every 0.2 s for 2 s, each line sent in two
    # halves, 0.1 s apart
    for _ in range(10):
        busy.send(b'{"op":')
        time.sleep(0.1)
        busy.send(b'"ping"}\n')
        assert busy.recv_json()["pong"] is True
        time.sleep(0.1)
    busy.close()
    idle.close()
    half.close()
    assert 0.9 < took < 5, took
    log = d.log()
    assert re.search(r"\bidle=1\b", log) and re.search(r"partial_line=1\b", log), log[-2000:]


def test_input_buffer_shrinks_after_a_long_line(hookd):
    """40 connections each send a line of almost max_line bytes and then
    half of a short one, and stay: the buffers that held the long lines
    are given back (RSS ends near where it started, not 40 MiB up)."""
    d = hookd()
    pid = d.proc.pid
    rss0 = vm(pid, "VmRSS")
    conns = []
    try:
        for _ in range(40):
            c = d.client(timeout=10)
            c.send(b'{"op":"ping","pad":"' + b"x" * (1000 << 10) + b'"}\n{"op":')
            assert c.recv_json()["error"]["code"] == "bad_request"
            conns.append(c)
        grew = vm(pid, "VmRSS") - rss0
        for c in conns:
            c.send(b'"ping"}\n')
            assert c.recv_json()["pong"] is True
    finally:
        for c in conns:
            c.close()
    print("\n40 long lines, then half a line each: RSS +%.1f MiB" % grew)
    if not SANITIZED:
        assert grew < 16, "RSS +%.1f MiB: the long lines' buffers were kept" % grew


def test_long_lines_of_an_attacker_do_not_starve_anothers(hookd):
    """Lines over 64 KiB are parsed one per loop turn, the ones held back
    in the order they came: while another account floods max_line-sized
    worst-case lines, an admin's 200 KiB-payload enqueues are each acked
    (none waits for ever behind the flood)."""
    _, gid = nobody()
    d = hookd(endpoints={"a": PARKED}, sections=client_sections())
    wst = spawn(WORST_UID, gid, "attack", d.sock, 8, "--worst", 4, "--reconnect")
    time.sleep(1.0)   # the flood first
    waits = []
    with d.client(timeout=30) as c:
        for i in range(20):
            t0 = time.monotonic()
            r = c.enqueue("a", {"pad": "x" * (200 << 10), "i": i}, event_id="big-%d" % i)
            waits.append(time.monotonic() - t0)
            assert r.get("ok") is True, r
    w = result(wst, 60)
    print("\n200 KiB enqueues beside a worst-line flood: ack p50 %.1f ms max %.1f ms; flood: %d lines answered"
          % (pct(waits, 50) * 1e3, max(waits) * 1e3, w["worst_replies"]))
    assert w["worst_replies"] > 0, w
    assert d.sql("SELECT count(*) FROM webhook_queue WHERE event_id LIKE 'big-%'")[0][0] == 20


@pytest.mark.skipif(os.environ.get("HOOKD_HOSTILE_LONG") != "1", reason="the long run is part of make chaos")
def test_hostile_clients_long(hookd, receiver):
    """make chaos: 10,000 idle connections, 1,000 half-sent 1 MiB lines,
    100 pipeliners that never read, as nobody, and 8 connections of
    worst-case lines (another account), reconnecting, for HOOKD_HOSTILE_SECONDS (60), default limits
    and timeouts but line and send timeouts of 10 s."""
    seconds = int(os.environ.get("HOOKD_HOSTILE_SECONDS", "60"))
    d, recv, a, g, admin_s, watch = attack_while_enqueueing(
        hookd, receiver, seconds,
        ["--idle", 10000, "--half", 1000, "--half-bytes", 1 << 20, "--pipe", 100, "--reconnect"], 8,
        {"line_timeout": "10s", "send_timeout": "10s"}, timeout_extra=300)
    hwm = report("hostile long", d, a, g, admin_s, watch)
    lat = g["lat"]
    assert not g["errors"], g["errors"][:5]
    if not SANITIZED:
        assert pct(lat, 99) * 1e3 < ACK_P99_MS, "ack p99 %.1f ms" % (pct(lat, 99) * 1e3)
        assert hwm < RSS_BOUND_MIB, "peak RSS %.1f MiB" % hwm
    assert a["refused"] > 0 and a["closed_by_hookd"] > 0, a
