"""Hostile endpoints: Slowloris responses, an endless body, huge headers,
a bad TLS certificate, a reset in the middle of a response. Each attempt
is classified and recorded (error_class, last_error, status), retried or
dead-lettered as the README's outcome table says, and none holds its
delivery slot past the endpoint timeout while a second endpoint keeps
delivering. Then 100 hanging endpoints beside one healthy one: the healthy
endpoint's p99 with them, beside its p99 alone."""
import json
import select
import shutil
import socket
import ssl
import struct
import subprocess
import threading
import time

import pytest

from conftest import pct, wait_until

# compares latencies beside hostile endpoints: run on their own, not beside other tests (Makefile: integration)
pytestmark = pytest.mark.serial

DONE = ("delivered", "dead_letter")
TIMEOUT_S = 1.0
SLACK_S = 1.5          # scheduling on a shared 2-core box, curl's timer granularity


# ------------------------------------------------------------------ a raw HTTP server

class Conn:
    """One accepted connection as the hostile server saw it."""

    def __init__(self, sock, peer):
        self.sock = sock
        self.peer = peer
        self.t_accept = time.monotonic()
        self.t_request = None      # the request (headers + body) was read
        self.t_closed = None       # hookd closed (EOF/reset seen) or we gave up
        self.request = b""
        self.sent = 0


def read_request(sock, timeout=10.0):
    """Read one HTTP request (headers and a Content-Length body)."""
    sock.settimeout(timeout)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    n = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            n = int(v.strip())
    while len(body) < n:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def peer_closed(sock, wait):
    """Wait up to `wait` seconds; True if the peer closed or reset."""
    r, _, _ = select.select([sock], [], [], wait)
    if not r:
        return False
    try:
        return sock.recv(65536, socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


class RawServer:
    """A TCP server on 127.0.0.1 running `behave(conn)` per connection in a
    thread; `behave` reads the request itself (read_request) and does
    whatever it wants with the socket. Optionally TLS-wrapped."""

    def __init__(self, behave, tls=None, host="127.0.0.1"):
        self.behave = behave
        self.tls = tls
        self.conns = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.lsock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind((host, 0))
        self.lsock.listen(1024)
        self.port = self.lsock.getsockname()[1]
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def url(self, path="/hook", scheme="http", host="127.0.0.1"):
        return "%s://%s:%d%s" % (scheme, host, self.port, path)

    def _accept(self):
        self.lsock.settimeout(0.1)
        while not self.stopping.is_set():
            try:
                s, peer = self.lsock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            c = Conn(s, peer)
            with self.lock:
                self.conns.append(c)
            threading.Thread(target=self._run, args=(c,), daemon=True).start()

    def _run(self, c):
        try:
            if self.tls is not None:
                c.sock.settimeout(10)
                try:
                    c.sock = self.tls.wrap_socket(c.sock, server_side=True)
                except (ssl.SSLError, OSError):
                    c.t_closed = time.monotonic()   # the client refused our certificate
                    return
            self.behave(self, c)
        except (OSError, ValueError):
            pass
        finally:
            if c.t_closed is None:
                c.t_closed = time.monotonic()
            try:
                c.sock.close()
            except OSError:
                pass

    def requests(self):
        with self.lock:
            return [c for c in self.conns if c.t_request is not None]

    def close(self):
        self.stopping.set()
        try:
            self.lsock.close()
        except OSError:
            pass
        with self.lock:
            for c in self.conns:
                try:
                    c.sock.close()
                except OSError:
                    pass


@pytest.fixture
def raw_server(receiver):
    """Factory: raw_server(behave, tls=None) -> RawServer; closed before
    the daemons stop (depends on receiver, which depends on hookd)."""
    made = []

    def factory(behave, tls=None, host="127.0.0.1"):
        s = RawServer(behave, tls, host)
        made.append(s)
        return s

    yield factory
    for s in made:
        s.close()


# ------------------------------------------------------------------ behaviours

def slowloris(srv, c):
    """Status line, then one header byte per second, forever."""
    c.request = read_request(c.sock)
    c.t_request = time.monotonic()
    c.sock.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
    while not srv.stopping.is_set():
        if peer_closed(c.sock, 1.0):
            c.t_closed = time.monotonic()
            return
        c.sock.sendall(b"a")
        c.sent += 1


def slowloris_body(srv, c):
    """Complete headers, then the body one byte per second."""
    c.request = read_request(c.sock)
    c.t_request = time.monotonic()
    c.sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
    while not srv.stopping.is_set():
        if peer_closed(c.sock, 1.0):
            c.t_closed = time.monotonic()
            return
        c.sock.sendall(b"b")


def endless(status, chunked):
    def behave(srv, c):
        c.request = read_request(c.sock)
        c.t_request = time.monotonic()
        reason = b"OK" if status == 200 else b"Error"
        if chunked:
            c.sock.sendall(b"HTTP/1.1 %d %s\r\nTransfer-Encoding: chunked\r\n\r\n" % (status, reason))
            piece = b"%x\r\n%s\r\n" % (65536, b"e" * 65536)
        else:
            c.sock.sendall(b"HTTP/1.1 %d %s\r\nContent-Length: %d\r\n\r\n" % (status, reason, 10 << 30))
            piece = b"e" * 65536
        while not srv.stopping.is_set():
            c.sock.sendall(piece)
            c.sent += len(piece)
    return behave


def huge_headers(one_line):
    def behave(srv, c):
        c.request = read_request(c.sock)
        c.t_request = time.monotonic()
        c.sock.sendall(b"HTTP/1.1 200 OK\r\n")
        if one_line:
            c.sock.sendall(b"X-Huge: " + b"h" * (1 << 20) + b"\r\n")
        else:
            c.sock.sendall(b"".join(b"X-H%05d: %s\r\n" % (i, b"h" * 52) for i in range((1 << 20) // 64)))
        c.sock.sendall(b"Content-Length: 2\r\n\r\nok")
        c.sent = 1 << 20
        peer_closed(c.sock, 5.0)
    return behave


def reset_mid_response(srv, c):
    """Headers and part of the body, then a TCP RST."""
    c.request = read_request(c.sock)
    c.t_request = time.monotonic()
    c.sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + b"r" * 100)
    time.sleep(0.05)
    c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    c.sock.close()


def answer(status=200):
    def behave(srv, c):
        c.request = read_request(c.sock)
        if not c.request:
            # the client closed without a byte of HTTP (e.g. mbedTLS lets the
            # handshake finish, then curl refuses the certificate and closes)
            return
        c.t_request = time.monotonic()
        c.sock.sendall(b"HTTP/1.1 %d X\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok" % status)
    return behave


# ------------------------------------------------------------------ the battery

# name: (behaviour, outcome table row: final status with max_attempts 2,
#        allowed error classes of each attempt, allowed HTTP status)
# huge_headers_one_line fails today: libcurl 7.88 answers a header line over
# CURL_MAX_HTTP_HEADER (100 KB) with CURLE_OUT_OF_MEMORY, which
# outcome_errclass_from_curl (src/outcome.c) files as "internal" with
# last_error "internal: Out of memory": the receiver's fault recorded as
# hookd's own. Expected: "io", like the 300 KB total-header limit below.
CASES = {
    "slowloris_headers": (lambda: slowloris, "dead_letter", {"timeout"}, {None}),
    "slowloris_body": (lambda: slowloris_body, "dead_letter", {"timeout"}, {None, 200}),
    "endless_body_200_length": (lambda: endless(200, False), "delivered", {None, ""}, {200}),
    "endless_body_200_chunked": (lambda: endless(200, True), "delivered", {None, ""}, {200}),
    "endless_body_500_chunked": (lambda: endless(500, True), "dead_letter", {"http_500"}, {500}),
    "huge_headers_one_line": (lambda: huge_headers(True), None, {None, "", "io"}, {None, 200}),
    "huge_headers_many": (lambda: huge_headers(False), None, {None, "", "io"}, {None, 200}),
    "reset_mid_response": (lambda: reset_mid_response, "dead_letter", {"io"}, {None}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_hostile_endpoint_is_classified_and_frees_its_slot(hookd, receiver, raw_server, case, capsys):
    make, final, classes, statuses = CASES[case]
    srv = raw_server(make())
    good = receiver(200)
    d = hookd(endpoints={
        "hostile": {"url": srv.url(), "timeout": "1s", "max_attempts": 2, "max_in_flight": 1,
                    "base_delay": "10ms", "max_delay": "50ms"},
        "ok": {"url": good.url("/ok")},
    })
    n = 2
    t0 = time.monotonic()
    ids = [d.enqueue("hostile", {"i": i}, event_id="h-%d" % i)["id"] for i in range(n)]
    # the healthy endpoint keeps delivering meanwhile
    sent = {}
    for i in range(20):
        eid = "ok-%d" % i
        sent[eid] = time.monotonic()
        assert d.enqueue("ok", {"i": i}, event_id=eid)["ok"]
        time.sleep(0.05)
    got = good.wait_for(20, timeout=10)
    lat = [q.t - sent[q.event_id] for q in got]
    rows = [d.wait_status(i, DONE, timeout=n * 2 * (TIMEOUT_S + SLACK_S) + 10) for i in ids]
    took = time.monotonic() - t0

    msgs = [d.get(i) for i in ids]
    attempts = [a for m in msgs for a in m["attempts"]]
    holds = [c.t_closed - c.t_request for c in srv.requests() if c.t_closed is not None]
    with capsys.disabled():
        print("\n%s: %s; attempts %s; last_error %r; server-side hold max %.2fs; healthy p99 %.0f ms; %.1fs total"
              % (case, [r["status"] for r in rows],
                 [(a["error_class"], a["status_code"], a["response_ms"]) for a in attempts],
                 rows[0]["last_error"], max(holds) if holds else 0.0, pct(lat, 99) * 1e3, took))
    if final is not None:
        assert [r["status"] for r in rows] == [final] * n, rows
    for m in msgs:
        assert m["attempts"], m
        for a in m["attempts"]:
            assert a["error_class"] in classes, (case, a)
            assert a["status_code"] in statuses, (case, a)
            assert a["response_ms"] is not None and a["response_ms"] <= (TIMEOUT_S + SLACK_S) * 1000, (case, a)
    for r in rows:
        if r["status"] == "dead_letter":
            assert r["last_error"], r
            assert r["attempt_count"] <= 2, r
    # the slot was freed by the timeout: every connection hookd opened is
    # closed within timeout + slack of the request, and the attempts ran
    # one after another (max_in_flight 1) without waiting for the server
    assert holds, "the hostile server saw no request"
    assert max(holds) <= TIMEOUT_S + SLACK_S, "a connection was held %.2fs with timeout 1s" % max(holds)
    assert len(srv.requests()) == sum(len(m["attempts"]) for m in msgs)
    assert pct(lat, 99) < 1.0, "healthy endpoint p99 %.0f ms beside %s" % (pct(lat, 99) * 1e3, case)


# ------------------------------------------------------------------ TLS

@pytest.fixture(scope="module")
def self_signed(tmp_path_factory):
    if not shutil.which("openssl"):
        pytest.skip("openssl CLI not installed (make deps)")
    d = tmp_path_factory.mktemp("tls")
    key, crt = d / "key.pem", d / "crt.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
                    "-out", str(crt), "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(crt), str(key))
    return ctx, crt


def test_bad_tls_certificate_is_refused_as_tls_error(hookd, receiver, raw_server, self_signed):
    """A self-signed certificate for the right name: hookd verifies TLS,
    refuses it (error class tls, nothing sent), retries per the table
    and dead-letters after max_attempts; the healthy endpoint delivers."""
    ctx, _ = self_signed
    srv = raw_server(answer(200), tls=ctx)
    good = receiver(200)
    d = hookd(endpoints={
        "tls": {"url": srv.url(scheme="https", host="localhost"), "timeout": "1s", "max_attempts": 2,
                "base_delay": "10ms", "max_delay": "50ms"},
        "ok": {"url": good.url("/ok")},
    }, sections={"delivery": {"allow_networks": "127.0.0.0/8, ::1/128"}})
    r = d.enqueue("tls", {"secret": "not for a bad certificate"})
    for i in range(10):
        d.enqueue("ok", {"i": i})
    good.wait_for(10, timeout=10)
    row = d.wait_status(r["id"], "dead_letter", timeout=15)
    m = d.get(r["id"])
    print("\nbad TLS certificate: last_error %r, attempts %s" % (row["last_error"], m["attempts"]))
    assert row["attempt_count"] == 2 and row["last_status_code"] is None, row
    assert all(a["error_class"] == "tls" for a in m["attempts"]), m["attempts"]
    assert any(w in row["last_error"].lower() for w in ("certificate", "ssl", "tls")), row["last_error"]
    assert srv.requests() == [], "an HTTP request went over an unverified TLS connection"


def test_good_tls_with_ca_file_delivers(hookd, raw_server, self_signed):
    """The same server, its certificate given as ca_file: delivered (the
    refusal above is about trust, not about TLS not working)."""
    ctx, crt = self_signed
    srv = raw_server(answer(200), tls=ctx)
    d = hookd(endpoints={"tls": {"url": srv.url(scheme="https", host="localhost"), "timeout": "2s"}},
              sections={"delivery": {"allow_networks": "127.0.0.0/8, ::1/128", "ca_file": str(crt)}})
    r = d.enqueue("tls", {"x": 1})
    row = d.wait_status(r["id"], DONE, timeout=15)
    assert row["status"] == "delivered", row
    assert len(srv.requests()) == 1


# ------------------------------------------------------------------ 100 hanging endpoints

class HangServer:
    """Accepts any number of connections on one port, reads, never answers
    (answer=True: answers every request 204, keep-alive); one thread with
    a selector (no thread per connection). Counts connections open at
    once (peak) and in all (total)."""

    def __init__(self, answer=False):
        self.answer = answer
        self.bufs = {}
        self.requests = 0
        import selectors
        self.sel = selectors.DefaultSelector()
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(4096)
        self.lsock.setblocking(False)
        self.port = self.lsock.getsockname()[1]
        self.sel.register(self.lsock, selectors.EVENT_READ, None)
        self.open = 0
        self.total = 0
        self.peak = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        import selectors
        while not self.stopping.is_set():
            # closes before accepts: hookd closes a timed-out connection
            # before it opens the next one, and both can be ready in one
            # batch; counting the new one first would see a peak that
            # never was (41 with a cap of 40, once in a CI run)
            ready = sorted(self.sel.select(0.1), key=lambda kv: kv[0].data is None)
            for key, _ in ready:
                if key.data is None:
                    try:
                        s, _ = self.lsock.accept()
                    except OSError:
                        continue
                    s.setblocking(False)
                    self.sel.register(s, selectors.EVENT_READ, True)
                    self.open += 1
                    self.total += 1
                    self.peak = max(self.peak, self.open)
                else:
                    try:
                        data = key.fileobj.recv(65536)
                    except OSError:
                        data = b""
                    if not data:
                        self.sel.unregister(key.fileobj)
                        self.bufs.pop(key.fileobj, None)
                        key.fileobj.close()
                        self.open -= 1
                    elif self.answer:
                        self._reply(key.fileobj, data)

    def _reply(self, s, data):
        buf = self.bufs.get(s, b"") + data
        while True:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                break
            length = 0
            for line in buf[:end].split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            if len(buf) < end + 4 + length:
                break
            buf = buf[end + 4 + length:]
            self.requests += 1
            s.sendall(b"HTTP/1.1 204 No Content\r\n\r\n")
        self.bufs[s] = buf

    def close(self):
        self.stopping.set()
        self.thread.join(5)
        for key in list(self.sel.get_map().values()):
            key.fileobj.close()


def test_per_host_connection_limit(hookd, receiver):
    """100 endpoints on one host (fixed concurrency 2 each, 200 requests
    that all time out after 1 s) with max_host_connections = 40: the host
    never sees more than 40 connections, the ones over the limit wait in
    hookd (not in curl's queue, where their timeout would run while they
    wait): every one of the 200 reaches the host and times out there, in
    waves of 40. An endpoint on another host is not held up."""
    hang = HangServer()
    try:
        good = receiver(200)
        eps = {"p%03d" % i: {"url": "http://127.0.0.1:%d/pb%d" % (hang.port, i), "timeout": "1s",
                             "max_attempts": 1, "adaptive": False, "max_in_flight": 2}
               for i in range(100)}
        eps["ok"] = {"url": good.url("/ok")}
        d = hookd(endpoints=eps, sections={"delivery": {"max_host_connections": 40}})
        with d.client() as c:
            ids = [r["id"] for r in c.pipeline([{"op": "enqueue", "endpoint": "p%03d" % i, "payload": {"k": k}}
                                                for i in range(100) for k in range(2)])]
        wait_until(lambda: hang.open >= 40, 10, msg="40 connections to the host")
        t0 = time.monotonic()
        with d.client() as c:
            for i in range(20):
                assert c.enqueue("ok", {"i": i})["ok"]
        good.wait_for(20, timeout=10, path="/ok")
        ok_s = time.monotonic() - t0
        for i in ids:
            d.wait_status(i, DONE, timeout=30)
        assert hang.peak <= 40, "the host saw %d connections at once" % hang.peak
        assert hang.peak == 40
        # each of the 200 got its own connection and its own full second
        assert hang.total == 200, hang.total
        rows = d.sql("SELECT error_class, response_ms FROM delivery_attempts a JOIN webhook_queue q "
                     "ON q.id = a.message_id WHERE q.status = 'dead_letter'")
        assert len(rows) == 200
        assert {r[0] for r in rows} == {"timeout"}, {r[0] for r in rows}
        assert min(r[1] for r in rows) >= 900, min(r[1] for r in rows)
        assert ok_s < 5, "the other host's endpoint took %.1f s for 20 deliveries" % ok_s
    finally:
        hang.close()


def test_per_host_limit_counts_kept_alive_connections(hookd):
    """max_host_connections bounds the connections a host sees, idle
    keep-alive ones included, over every delivery thread: with two threads
    each keeping its own connections a limit of 256 let one nginx see 512
    (measured). A fast host, 4 endpoints on it with 16 in flight each,
    a limit of 4: never more than 4 connections open at once, and they
    are reused (far fewer connections than requests)."""
    srv = HangServer(answer=True)
    try:
        eps = {"f%d" % i: {"url": "http://127.0.0.1:%d/f%d" % (srv.port, i), "adaptive": False,
                           "max_in_flight": 16} for i in range(4)}
        d = hookd(endpoints=eps, sections={"delivery": {"max_host_connections": 4, "workers": 2}})
        n = 1200
        with d.client() as c:
            ids = [r["id"] for r in c.pipeline([{"op": "enqueue", "endpoint": "f%d" % (k % 4), "payload": {"k": k}}
                                                for k in range(n)])]
        wait_until(lambda: d.statuses().get("delivered", 0) == n, 60, msg="all delivered")
        assert srv.requests == n, srv.requests
        assert srv.peak <= 4, "the host saw %d connections at once" % srv.peak
        assert srv.total < n // 10, "%d connections for %d requests" % (srv.total, n)
        for i in ids[:5] + ids[-5:]:
            d.wait_status(i, DONE, timeout=10)
    finally:
        srv.close()


def test_100_hanging_endpoints_beside_one_healthy(hookd, receiver, capsys):
    hang = HangServer()
    try:
        good = receiver(200)
        # fixed concurrency, the worst case: 5 connections held per partner
        # (adaptive, each would get one request at a time)
        eps = {"hang%03d" % i: {"url": "http://127.0.0.1:%d/h%d" % (hang.port, i), "timeout": "20s",
                                "max_attempts": 1, "adaptive": False}
               for i in range(100)}
        eps["ok"] = {"url": good.url("/ok")}
        # all 100 share one host: lift its connection limit (default 256)
        d = hookd(endpoints=eps, sections={"delivery": {"max_host_connections": 1000}})

        def measure(tag, n=150):
            sent = {}
            with d.client() as c:
                for i in range(n):
                    eid = "%s-%d" % (tag, i)
                    sent[eid] = time.monotonic()
                    assert c.enqueue("ok", {"i": i}, event_id=eid)["ok"]
                    time.sleep(0.01)
            reqs = good.wait_for(n, timeout=30, path="/ok")
            return [(q.t - sent[q.event_id]) * 1000 for q in reqs if q.event_id in sent]

        alone = measure("alone")
        good.requests.clear()
        with d.client() as c:
            c.pipeline([{"op": "enqueue", "endpoint": "hang%03d" % i, "payload": {"k": k}}
                        for i in range(100) for k in range(5)])
        wait_until(lambda: hang.open >= 450, 20, msg="hanging connections (open %d)" % hang.open)
        held = hang.open
        busy = measure("busy")
        still = hang.open
        a99, b99 = pct(alone, 99), pct(busy, 99)
        with capsys.disabled():
            print("\nhealthy endpoint p50/p99: alone %.1f/%.1f ms; beside 100 hanging endpoints "
                  "(%d connections held, %d still at the end) %.1f/%.1f ms; ratio p99 %.2fx"
                  % (pct(alone, 50), a99, held, still, pct(busy, 50), b99, b99 / max(a99, 0.001)))
        assert still >= 450, "the hanging transfers ended before the measurement did"
        assert b99 < 10 * a99 + 50, "p99 %.1f ms beside 100 hanging endpoints, %.1f ms alone" % (b99, a99)
    finally:
        hang.close()
