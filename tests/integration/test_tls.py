"""TLS policy, the same in both builds (Debian's libcurl on OpenSSL and the
static one on mbedTLS; `make static-test` runs this file against the
static binary): TLS 1.2 or later, no SHA-1 signature and no RSA key under
2048 bits in a chain, certificates for IP addresses verified against their
subjectAltName IP entries, and ca_file replacing the system store.

The receivers are nginx (nginx-light, installed by make deps) with
certificates from a test CA made here with the openssl CLI."""
import os
import shutil
import socket
import subprocess

import pytest

import conftest
from conftest import wait_until

pytestmark = pytest.mark.skipif(not (shutil.which("nginx") and shutil.which("openssl")),
                                reason="nginx or openssl not installed (make deps)")

DONE = ("delivered", "dead_letter")


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def make_ca(d, name):
    key, crt = d / (name + ".key"), d / (name + ".pem")
    openssl("req", "-x509", "-newkey", "rsa:2048", "-sha256", "-nodes", "-keyout", str(key), "-out", str(crt),
            "-days", "2", "-subj", "/CN=hookd test " + name,
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")
    return key, crt


def make_leaf(d, name, ca, san, bits=2048, md="sha256", cn="hookd test server"):
    """A server certificate signed by ca (key, crt) for the subjectAltName san."""
    key, csr, crt, ext = (d / (name + s) for s in (".key", ".csr", ".pem", ".ext"))
    openssl("req", "-newkey", "rsa:%d" % bits, "-nodes", "-keyout", str(key), "-out", str(csr), "-subj", "/CN=" + cn)
    ext.write_text("subjectAltName=%s\nbasicConstraints=CA:FALSE\n" % san)
    openssl("x509", "-req", "-in", str(csr), "-CA", str(ca[1]), "-CAkey", str(ca[0]), "-CAcreateserial",
            "-out", str(crt), "-days", "2", "-" + md, "-extfile", str(ext))
    return key, crt


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    ca = make_ca(d, "ca")
    other = make_ca(d, "other")
    return {
        "dir": d,
        "ca": ca[1],
        "other_ca": other[1],
        # a certificate for an IP address only: no DNS name to fall back on
        "ip": make_leaf(d, "ip", ca, "IP:127.0.0.1", cn="ip-only"),
        "ip_wrong": make_leaf(d, "ipwrong", ca, "IP:127.0.0.2", cn="ip-only"),
        "good": make_leaf(d, "good", ca, "DNS:localhost,IP:127.0.0.1"),
        "sha1": make_leaf(d, "sha1", ca, "DNS:localhost,IP:127.0.0.1", md="sha1"),
        "rsa1024": make_leaf(d, "rsa1024", ca, "DNS:localhost,IP:127.0.0.1", bits=1024),
        "by_other": make_leaf(d, "byother", other, "DNS:localhost,IP:127.0.0.1"),
    }


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Nginx:
    """nginx on 127.0.0.1 over TLS with one certificate, answering 204 and
    logging every request (and whether its TLS session was resumed)."""

    def __init__(self, d, cert, protocols="TLSv1.2 TLSv1.3", extra="", listen="ssl", host="127.0.0.1"):
        self.dir = d
        self.host = host
        (d / "logs").mkdir(parents=True, exist_ok=True)
        (d / "tmp").mkdir(exist_ok=True)
        self.port = free_port()
        self.access = d / "logs" / "access.log"
        (d / "nginx.conf").write_text("""
worker_processes 1;
pid %(d)s/nginx.pid;
error_log %(d)s/logs/error.log warn;
events { worker_connections 256; }
http {
  log_format t '$request_uri $ssl_protocol $ssl_session_reused $server_protocol';
  access_log %(d)s/logs/access.log t;
  client_body_temp_path %(d)s/tmp;
  %(extra)s
  ssl_protocols %(proto)s;
  # lets the server offer what the test needs (TLS 1.1, SHA-1, 1024-bit
  # RSA): refusing it is the client's job here
  ssl_ciphers DEFAULT:@SECLEVEL=0;
  ssl_certificate %(crt)s;
  ssl_certificate_key %(key)s;
  server {
    listen %(host)s:%(port)d %(listen)s;
    location / { return 204; }
  }
}
""" % {"d": d, "proto": protocols, "crt": cert[1], "key": cert[0], "port": self.port, "extra": extra, "listen": listen,
       "host": "[%s]" % host if ":" in host else host})
        subprocess.run(["nginx", "-c", str(d / "nginx.conf"), "-p", str(d), "-e", str(d / "logs/error.log")],
                       check=True, capture_output=True)
        wait_until(lambda: (d / "nginx.pid").exists() and self._listening(), timeout=10, msg="nginx not up")

    def _listening(self):
        try:
            socket.create_connection((self.host, self.port), timeout=1).close()
            return True
        except OSError:
            return False

    def url(self, host="127.0.0.1", path="/hook"):
        return "https://%s:%d%s" % (host, self.port, path)

    def requests(self):
        return self.access.read_text().splitlines() if self.access.exists() else []

    def stop(self):
        try:
            os.kill(int((self.dir / "nginx.pid").read_text()), 15)
        except (OSError, ValueError):
            pass


@pytest.fixture
def nginx(tmp_path):
    made = []

    def factory(cert, protocols="TLSv1.2 TLSv1.3"):
        n = Nginx(tmp_path / ("nginx%d" % len(made)), cert, protocols)
        made.append(n)
        return n

    yield factory
    for n in made:
        n.stop()


def deliver_one(d, ep):
    r = d.enqueue(ep, {"tls": "test"})
    return d.wait_status(r["id"], DONE, timeout=20), d.get(r["id"])


# names, not addresses, where the IP certificate case is not the point
LOCAL = {"allow_networks": "127.0.0.0/8, ::1/128"}


def tls_ep(url):
    return {"url": url, "max_attempts": 1, "timeout": "3s"}


def assert_refused(row, msg, srv):
    assert row["status"] == "dead_letter", row
    assert [a["error_class"] for a in msg["attempts"]] == ["tls"], msg["attempts"]
    assert srv.requests() == [], "a request went over a connection the policy refuses"


def test_ip_certificate_verified(hookd, nginx, pki):
    """A certificate whose only name is subjectAltName IP:127.0.0.1, for
    https://127.0.0.1: delivered (mbedTLS 2.28 compared the address with
    DNS names only); one for 127.0.0.2 is refused, so the match is real."""
    good = nginx(pki["ip"])
    wrong = nginx(pki["ip_wrong"])
    d = hookd(endpoints={"good": tls_ep(good.url()), "wrong": tls_ep(wrong.url())},
              sections={"delivery": {"ca_file": str(pki["ca"])}})
    row, _ = deliver_one(d, "good")
    assert row["status"] == "delivered", (row, d.log()[-2000:])
    assert len(good.requests()) == 1
    row, msg = deliver_one(d, "wrong")
    assert_refused(row, msg, wrong)


def test_tls_1_1_server_refused(hookd, nginx, pki):
    """A server that speaks TLS 1.1 at most: refused (error class tls),
    nothing sent; the same certificate over TLS 1.2 delivers."""
    old = nginx(pki["good"], protocols="TLSv1.1")
    new = nginx(pki["good"], protocols="TLSv1.2")
    d = hookd(endpoints={"old": tls_ep(old.url("localhost")), "new": tls_ep(new.url("localhost"))},
              sections={"delivery": dict(LOCAL, ca_file=str(pki["ca"]))})
    row, msg = deliver_one(d, "old")
    assert_refused(row, msg, old)
    row, _ = deliver_one(d, "new")
    assert row["status"] == "delivered", row
    assert new.requests()[0].split()[1] == "TLSv1.2"


@pytest.mark.parametrize("cert", ["sha1", "rsa1024"])
def test_weak_certificate_refused(hookd, nginx, pki, cert):
    """A chain from a trusted CA whose server certificate is signed with
    SHA-1, or holds a 1024-bit RSA key: refused in both builds."""
    weak = nginx(pki[cert])
    d = hookd(endpoints={"weak": tls_ep(weak.url("localhost"))},
              sections={"delivery": dict(LOCAL, ca_file=str(pki["ca"]))})
    row, msg = deliver_one(d, "weak")
    assert_refused(row, msg, weak)
    print("\n%s certificate: %s" % (cert, row["last_error"]))


def test_weak_certificate_refused_whatever_openssl_cnf(hookd, nginx, pki, tmp_path, monkeypatch):
    """A host's openssl.cnf that lowers OpenSSL's security level (read by
    Debian's libcurl at each connection) does not lower hookd's: the
    1024-bit RSA chain is still refused."""
    weak = nginx(pki["rsa1024"])
    cnf = tmp_path / "openssl.cnf"
    cnf.write_text("openssl_conf = init\n[init]\nssl_conf = ssl\n[ssl]\nsystem_default = sys\n"
                   "[sys]\nCipherString = DEFAULT:@SECLEVEL=0\n")
    monkeypatch.setenv("OPENSSL_CONF", str(cnf))
    d = hookd(endpoints={"weak": tls_ep(weak.url("localhost"))},
              sections={"delivery": dict(LOCAL, ca_file=str(pki["ca"]))})
    row, msg = deliver_one(d, "weak")
    assert_refused(row, msg, weak)


def system_store_with(tmp_path, ca_pem):
    """A directory to mount over /etc/ssl/certs holding only ca_pem, as
    both a bundle (the static build's CAINFO) and a hashed file (Debian's
    libcurl's CAPATH)."""
    d = tmp_path / "certs"
    d.mkdir()
    shutil.copy(ca_pem, d / "ca-certificates.crt")
    h = subprocess.run(["openssl", "x509", "-hash", "-noout", "-in", str(ca_pem)], check=True,
                       capture_output=True, text=True).stdout.strip()
    shutil.copy(ca_pem, d / (h + ".0"))
    return d


def in_mount_namespace(monkeypatch, tmp_path, store):
    """hookd started in a mount namespace where /etc/ssl/certs is store."""
    if not shutil.which("unshare"):
        pytest.skip("unshare not installed")
    base = ["unshare", "-m"] if os.geteuid() == 0 else ["unshare", "-r", "-m"]
    probe = subprocess.run(base + ["sh", "-c", "mount --bind %s /etc/ssl/certs" % store], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("no mount namespace here: %r" % probe.stderr)
    wrap = tmp_path / "hookd-ns"
    wrap.write_text('#!/bin/sh\nexec %s sh -c \'mount --bind "$0" /etc/ssl/certs && exec "$@"\' %s %s "$@"\n'
                    % (" ".join(base), store, conftest.HOOKD_BIN))
    wrap.chmod(0o755)
    monkeypatch.setattr(conftest, "HOOKD_BIN", str(wrap))


def test_ca_file_replaces_system_store(hookd, nginx, pki, tmp_path, monkeypatch):
    """The system store trusts the server's CA, ca_file names another CA:
    refused (ca_file replaces the store; Debian's libcurl used to add its
    CA directory). Without ca_file the same daemon setup delivers, so the
    store really is the one the binary reads."""
    srv = nginx(pki["by_other"])
    in_mount_namespace(monkeypatch, tmp_path, system_store_with(tmp_path, pki["other_ca"]))
    d = hookd(endpoints={"a": tls_ep(srv.url("localhost"))},
              sections={"delivery": dict(LOCAL, ca_file=str(pki["ca"]))})
    row, msg = deliver_one(d, "a")
    assert_refused(row, msg, srv)
    d.stop()
    d2 = hookd(endpoints={"a": tls_ep(srv.url("localhost"))}, sections={"delivery": LOCAL})
    row, _ = deliver_one(d2, "a")
    assert row["status"] == "delivered", (row, d2.log()[-2000:])


def test_tls_sessions_resumed_across_connections(hookd, nginx, pki, tmp_path):
    """Every reconnect resumes its TLS session, whichever delivery thread
    and handle makes it: nginx closes each connection after one request
    (keepalive_requests 1), so each message is a new TLS connection."""
    n = Nginx(tmp_path / "ngx-resume", pki["good"], extra="keepalive_requests 1; ssl_session_cache shared:T:1m;")
    try:
        # several delivery threads: without a shared cache a reconnect on
        # another thread's handle has no session to offer
        d = hookd(endpoints={"a": tls_ep(n.url("localhost"))},
                  sections={"delivery": dict(LOCAL, ca_file=str(pki["ca"]), workers=4)})
        for i in range(12):
            deliver_one(d, "a")
        lines = n.requests()
        assert len(lines) == 12, lines
        resumed = [l for l in lines[1:] if l.split()[2] == "r"]
        print("\nresumed %d of %d reconnects" % (len(resumed), len(lines) - 1))
        assert len(resumed) == len(lines) - 1, lines
    finally:
        n.stop()


def close_wait(port):
    """hookd's connections to port that the server has closed and hookd
    has not (state CLOSE_WAIT), from /proc/net/tcp{,6}."""
    n = 0
    for f in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(f).read().splitlines()[1:]
        except OSError:
            continue
        for l in lines:
            p = l.split()
            if p[3] == "08" and int(p[2].rsplit(":", 1)[1], 16) == port:
                n += 1
    return n


def test_idle_closed_connections_fail_no_attempt(hookd, nginx, pki, tmp_path):
    """A server that closes idle connections (keepalive_timeout) makes
    libcurl find the next request's pooled connection dead and retry on a
    fresh one; libcurl 7.88 counted those retries per handle for its whole
    life and failed every sixth transfer. With one delivery thread (one
    handle, reused), eight messages each after the server closed the
    connection: all delivered at the first attempt."""
    n = Nginx(tmp_path / "ngx-idle", pki["good"], extra="keepalive_timeout 300ms;")
    try:
        d = hookd(endpoints={"a": tls_ep(n.url("localhost"))},
                  sections={"delivery": dict(LOCAL, ca_file=str(pki["ca"]), workers=1)})
        for i in range(8):
            row, msg = deliver_one(d, "a")
            assert row["status"] == "delivered" and row["attempt_count"] == 1, (i, row, msg["attempts"])
            # the next message goes out once the server closed this connection
            wait_until(lambda: close_wait(n.port) >= 1, timeout=10, msg="nginx closes the idle connection")
        assert len(n.requests()) == 8
    finally:
        n.stop()


def test_http2_offered_stays_on_http_1_1(hookd, pki, tmp_path):
    """A receiver offering HTTP/2 (ALPN) that answers before reading the
    body (nginx's return 204): libcurl 7.88 over HTTP/2 counted a third of
    such deliveries failed although the receiver had them (and sent them
    again). hookd speaks HTTP/1.1: every message delivered at the first
    attempt, each request seen once."""
    n = Nginx(tmp_path / "ngx-h2", pki["good"], listen="ssl http2")
    try:
        d = hookd(endpoints={"a": tls_ep(n.url("localhost"))},
                  sections={"delivery": dict(LOCAL, ca_file=str(pki["ca"]))})
        ids = [d.enqueue("a", {"i": i, "pad": "x" * 2000})["id"] for i in range(200)]
        rows = [d.wait_status(i, DONE, timeout=30) for i in ids]
        assert all(r["status"] == "delivered" and r["attempt_count"] == 1 for r in rows), \
            [r for r in rows if r["attempt_count"] != 1][:3]
        wait_until(lambda: len(n.requests()) >= 200, timeout=10)
        lines = n.requests()
        assert len(lines) == 200 and {l.split()[3] for l in lines} == {"HTTP/1.1"}, lines[:3]
    finally:
        n.stop()


def test_ca_file_per_endpoint(hookd, nginx, pki):
    """An endpoint's own ca_file replaces [delivery] ca_file (and the
    system store) for it alone: the endpoint trusting the other CA reaches
    the server it signed and is refused by the one the global CA signed;
    an endpoint without its own uses the global one."""
    ours = nginx(pki["good"])          # signed by ca ([delivery] ca_file)
    theirs = nginx(pki["by_other"])    # signed by other_ca
    other = str(pki["other_ca"])
    d = hookd(endpoints={"global": tls_ep(ours.url("localhost")),
                         "own": dict(tls_ep(theirs.url("localhost")), ca_file=other),
                         "own_wrong": dict(tls_ep(ours.url("localhost", "/wrong")), ca_file=other)},
              sections={"delivery": dict(LOCAL, ca_file=str(pki["ca"]))})
    for ep in ("global", "own"):
        row, _ = deliver_one(d, ep)
        assert row["status"] == "delivered", (ep, row)
    row, msg = deliver_one(d, "own_wrong")
    assert row["status"] == "dead_letter" and [a["error_class"] for a in msg["attempts"]] == ["tls"], msg
    assert not any("/wrong" in l for l in ours.requests())
    # and back: the handles that served "own" trust the global CA again
    row, _ = deliver_one(d, "global")
    assert row["status"] == "delivered", row
    out = d.cli("endpoints", "--json").stdout
    assert other in out, out
