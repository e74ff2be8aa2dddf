"""Mutual TLS and public-key pins per endpoint: client_cert + client_key
(the key file hookd's alone), pinned_pubkey, and the error classes
tls_client_auth and tls_pin, the same in both builds (`make static-test`
runs this file against the static binary).

The receiver is nginx with ssl_verify_client on and a test client CA;
certificates come from test CAs made with the openssl CLI (test_tls.py's
helpers). nginx answers a missing or untrusted client certificate with
HTTP 400 ("No required SSL certificate was sent" / "The SSL certificate
error") after a completed handshake, in both TLS versions: hookd counts
those answers as tls_client_auth."""
import base64
import hashlib
import json
import os
import shutil
import socket
import ssl
import subprocess
import threading

import pytest

from conftest import HOOKD_BIN, render_ini
from test_tls import DONE, LOCAL, Nginx, deliver_one, make_ca, make_leaf, tls_ep

pytestmark = pytest.mark.skipif(not (shutil.which("nginx") and shutil.which("openssl")),
                                reason="nginx or openssl not installed (make deps)")


def pin_of(crt):
    """libcurl's sha256// pin of a certificate's public key."""
    der = subprocess.run(["sh", "-c", "openssl x509 -in '%s' -pubkey -noout | openssl pkey -pubin -outform der"
                          % crt], check=True, capture_output=True).stdout
    return "sha256//" + base64.b64encode(hashlib.sha256(der).digest()).decode()


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("mpki")
    ca = make_ca(d, "ca")               # signs the servers
    client_ca = make_ca(d, "clientca")  # the receiver trusts clients it signed
    rogue_ca = make_ca(d, "rogueca")    # one it does not
    p = {
        "dir": d,
        "ca": ca[1],
        "client_ca": client_ca[1],
        "server": make_leaf(d, "server", ca, "DNS:localhost,IP:127.0.0.1"),
        "server2": make_leaf(d, "server2", ca, "DNS:localhost,IP:127.0.0.1"),
        "client": make_leaf(d, "client", client_ca, "DNS:hookd-client", cn="hookd client"),
        "rogue": make_leaf(d, "rogue", rogue_ca, "DNS:hookd-client", cn="hookd client"),
    }
    for k in ("client", "rogue"):
        os.chmod(p[k][0], 0o600)
    return p


class MtlsNginx(Nginx):
    """nginx demanding (verify "on"; "optional": asking for) a client
    certificate signed by client_ca; mtls.log holds, per request, the
    verification result and what `what` names (the client's subject)."""

    def __init__(self, d, pki, verify="on", what="$ssl_client_s_dn"):
        d.mkdir(parents=True, exist_ok=True)
        extra = ("ssl_verify_client %s; ssl_client_certificate %s; ssl_verify_depth 2;"
                 " log_format m '$request_uri $ssl_client_verify %s';"
                 " access_log %s/logs/mtls.log m;" % (verify, pki["client_ca"], what, d))
        super().__init__(d, pki["server"], extra=extra)

    def clients(self):
        f = self.dir / "logs" / "mtls.log"
        return f.read_text().splitlines() if f.exists() else []


@pytest.fixture
def mtls(tmp_path, pki):
    made = []

    def factory():
        n = MtlsNginx(tmp_path / ("mtls%d" % len(made)), pki)
        made.append(n)
        return n

    yield factory
    for n in made:
        n.stop()


def mtls_ep(url, pki, which="client"):
    return dict(tls_ep(url), client_cert=str(pki[which][1]), client_key=str(pki[which][0]))


def classes(msg):
    return [a["error_class"] for a in msg["attempts"]]


def tls_sections(pki, **more):
    return {"delivery": dict(LOCAL, ca_file=str(pki["ca"]), **more)}


def tls_column(d):
    """hookd endpoints' TLS column by endpoint name."""
    lines = d.cli("endpoints").stdout.splitlines()
    col = lines[0].split().index("TLS")
    return {l.split()[0]: l.split()[col] for l in lines[1:]}


def test_client_certificate_delivers(hookd, mtls, pki):
    """The right certificate: delivered, nginx saw it verified; without
    one and with one from a CA the receiver does not trust:
    tls_client_auth, dead-lettered after the endpoint's attempts (retried
    like any TLS failure). One delivery thread, one host: its handle
    switches certificates, and never sends one endpoint's request over a
    connection made with another's certificate."""
    srv = mtls()
    d = hookd(endpoints={"good": mtls_ep(srv.url("localhost", "/good"), pki),
                         "none": tls_ep(srv.url("localhost", "/none")),
                         "rogue": mtls_ep(srv.url("localhost", "/rogue"), pki, "rogue"),
                         "twice": dict(tls_ep(srv.url("localhost", "/twice")), max_attempts=2)},
              sections=tls_sections(pki, workers=1))
    row, _ = deliver_one(d, "good")
    assert row["status"] == "delivered", (row, d.log()[-2000:])
    assert srv.clients() == ["/good SUCCESS CN=hookd client"], srv.clients()
    for ep in ("none", "rogue"):
        row, msg = deliver_one(d, ep)
        assert row["status"] == "dead_letter", row
        assert classes(msg) == ["tls_client_auth"], msg["attempts"]
        assert row["last_error_class"] == "tls_client_auth", row
    row, msg = deliver_one(d, "twice")
    assert row["status"] == "dead_letter" and classes(msg) == ["tls_client_auth"] * 2, msg["attempts"]
    verdicts = [l.split()[:2] for l in srv.clients()]
    assert ["/none", "NONE"] in verdicts and ["/rogue", "FAILED:unable"] in [[v[0], v[1][:13]] for v in verdicts], \
        verdicts
    # and the good one again, after the others used the handles
    row, _ = deliver_one(d, "good")
    assert row["status"] == "delivered", row
    assert tls_column(d) == {"good": "mtls", "none": "-", "rogue": "mtls", "twice": "-"}
    assert [l.split()[:2] for l in srv.clients() if l.startswith("/good")] == [["/good", "SUCCESS"]] * 2


def test_key_file_gone_later(hookd, mtls, pki, tmp_path):
    """A key file checked at start-up and gone before the attempt: the
    attempt fails as tls_client_auth, the daemon keeps serving."""
    srv = mtls()
    key = tmp_path / "client.key"
    shutil.copy(pki["client"][0], key)
    os.chmod(key, 0o600)
    d = hookd(endpoints={"a": dict(tls_ep(srv.url("localhost")), client_cert=str(pki["client"][1]),
                                   client_key=str(key)),
                         "b": mtls_ep(srv.url("localhost", "/b"), pki)},
              sections=tls_sections(pki))
    key.unlink()
    row, msg = deliver_one(d, "a")
    assert row["status"] == "dead_letter" and classes(msg) == ["tls_client_auth"], (row, msg["attempts"])
    print("\nkey file gone: %s" % row["last_error"])
    row, _ = deliver_one(d, "b")
    assert row["status"] == "delivered", row


def check_config(tmp_path, ep):
    ini = tmp_path / "hookd.ini"
    ini.write_text(render_ini({
        "storage": {"path": str(tmp_path / "hookd.db")},
        "server": {"socket": str(tmp_path / "hookd.sock")},
        "endpoint.a": dict({"url": "https://example.com/hook"}, **ep),
    }))
    return subprocess.run([HOOKD_BIN, "check-config", "-c", str(ini)], capture_output=True, text=True, timeout=30)


def test_key_file_open_to_others_refused(tmp_path, pki):
    """A key file others may read (0644, 0640): refused by check-config
    (and so at start-up), naming the file and the fix; 0600 and 0400 pass."""
    key = tmp_path / "k.pem"
    shutil.copy(pki["client"][0], key)
    cert = str(pki["client"][1])
    for mode in (0o644, 0o640):
        os.chmod(key, mode)
        r = check_config(tmp_path, {"client_cert": cert, "client_key": str(key)})
        assert r.returncode != 0 and str(key) in r.stderr and "chmod 600" in r.stderr, (mode, r.stderr)
    for mode in (0o600, 0o400):
        os.chmod(key, mode)
        r = check_config(tmp_path, {"client_cert": cert, "client_key": str(key)})
        assert r.returncode == 0, (mode, r.stderr)


@pytest.mark.parametrize("ep, says", [
    ({"client_cert": "/etc/hookd/c.pem"}, "client_key"),
    ({"client_key": "/etc/hookd/k.pem"}, "client_cert"),
    ({"client_cert": "c.pem", "client_key": "/k.pem"}, "absolute"),
    ({"client_cert": "/nonexistent/c.pem", "client_key": "/nonexistent/k.pem"}, "/nonexistent/c.pem"),
    ({"pinned_pubkey": "sha256//abc"}, "pinned_pubkey"),
    ({"pinned_pubkey": "/etc/hookd/partner.pub"}, "sha256//"),
])
def test_bad_tls_identity_refused(tmp_path, ep, says):
    r = check_config(tmp_path, ep)
    assert r.returncode != 0 and says in r.stderr, r.stderr


def test_encrypted_key_refused(tmp_path, pki):
    enc = tmp_path / "enc.pem"
    subprocess.run(["openssl", "pkey", "-in", str(pki["client"][0]), "-aes256", "-passout", "pass:x",
                    "-out", str(enc)], check=True, capture_output=True)
    os.chmod(enc, 0o600)
    r = check_config(tmp_path, {"client_cert": str(pki["client"][1]), "client_key": str(enc)})
    assert r.returncode != 0 and "encrypted" in r.stderr, r.stderr


def test_endpoint_put_checks_the_key_file(hookd, pki, tmp_path):
    """endpoint.put applies the same rules; the settings come back in
    endpoints --json (paths only, never the key)."""
    d = hookd()
    key = tmp_path / "k.pem"
    shutil.copy(pki["client"][0], key)
    os.chmod(key, 0o644)
    put = {"op": "endpoint.put", "name": "p", "url": "https://127.0.0.1:9/p",
           "client_cert": str(pki["client"][1]), "client_key": str(key)}
    with d.client() as c:
        r = c.request(put)
        assert r.get("error", {}).get("code") == "bad_request" and "chmod 600" in r["error"]["message"], r
        r = c.request({k: v for k, v in put.items() if k != "client_key"})
        assert r.get("error", {}).get("code") == "bad_request" and "together" in r["error"]["message"], r
        os.chmod(key, 0o600)
        r = c.request(put)
        assert r.get("ok"), r
    out = d.cli("endpoints", "--json").stdout
    ep = {e["name"]: e for e in json.loads(out)["endpoints"]}["p"]
    assert ep["settings"]["client_cert"] == str(pki["client"][1]), ep
    assert ep["settings"]["client_key"] == str(key), ep
    assert "PRIVATE KEY" not in out, out
    assert tls_column(d) == {"p": "mtls"}


def test_pinned_pubkey(hookd, nginx_pair, pki):
    """A pin of the server's key delivers (several pins: any may match);
    a pin of another key fails as tls_pin, nothing sent; the endpoints
    listing shows the pins."""
    a, b = nginx_pair
    good, other = pin_of(pki["server"][1]), pin_of(pki["server2"][1])
    d = hookd(endpoints={"pinned": dict(tls_ep(a.url("localhost", "/pinned")), pinned_pubkey=other + ";" + good),
                         "wrong": dict(tls_ep(b.url("localhost", "/wrong")), pinned_pubkey=good)},
              sections=tls_sections(pki))
    row, _ = deliver_one(d, "pinned")
    assert row["status"] == "delivered", (row, d.log()[-2000:])
    row, msg = deliver_one(d, "wrong")
    assert row["status"] == "dead_letter" and classes(msg) == ["tls_pin"], (row, msg["attempts"])
    assert b.requests() == [], "a request went to a server whose key matches no pin"
    out = d.cli("endpoints", "--json").stdout
    assert good in out and other in out, out
    assert tls_column(d) == {"pinned": "pin", "wrong": "pin"}


@pytest.fixture
def nginx_pair(tmp_path, pki):
    """Two TLS receivers: one with the server key, one with server2's."""
    a = Nginx(tmp_path / "pin-a", pki["server"])
    b = Nginx(tmp_path / "pin-b", pki["server2"])
    yield a, b
    a.stop()
    b.stop()


def openssl_build():
    """Is HOOKD_BIN linked to libcurl on OpenSSL (the dynamic build)?
    The static one is on mbedTLS."""
    r = subprocess.run(["ldd", HOOKD_BIN], capture_output=True, text=True)
    return "libcurl" in r.stdout


class RefusingServer:
    """A TLS 1.2/1.3 server (Python's ssl, OpenSSL) that aborts the
    handshake when the client certificate is missing or untrusted (what
    most TLS stacks do, unlike nginx); counts the requests it read."""

    def __init__(self, pki):
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(str(pki["server"][1]), str(pki["server"][0]))
        self.ctx.verify_mode = ssl.CERT_REQUIRED
        self.ctx.load_verify_locations(str(pki["client_ca"]))
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.requests = 0
        self.stopping = False
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            # a second descriptor: the one wrap_socket takes is closed
            # when the handshake fails
            raw = conn.dup()
            try:
                conn.settimeout(5)
                s = self.ctx.wrap_socket(conn, server_side=True)
                data = s.recv(65536)
                if data:
                    self.requests += 1
                    s.sendall(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
                s.close()
            except (OSError, ssl.SSLError):
                # linger until the client closes (as nginx does): closing
                # at once with its request unread resets the connection,
                # and the client may report that instead of the alert
                try:
                    raw.settimeout(5)
                    while raw.recv(65536):
                        pass
                except OSError:
                    pass
            raw.close()

    def url(self, path="/"):
        return "https://localhost:%d%s" % (self.port, path)

    def stop(self):
        self.stopping = True
        self.sock.close()


def test_handshake_refusal(hookd, pki):
    """A receiver that refuses the handshake (a TLS alert) rather than
    answering 400: with the right certificate delivered; without one or
    with an untrusted one, tls_client_auth in both builds (OpenSSL, TLS
    1.3: certificate_required / unknown_ca; the static build on mbedTLS
    2.28, TLS 1.2 only: handshake_failure after the server's certificate
    request / unknown_ca, named in the error text by our libcurl patch).
    Nothing sent."""
    srv = RefusingServer(pki)
    try:
        d = hookd(endpoints={"good": mtls_ep(srv.url("/good"), pki), "none": tls_ep(srv.url("/none")),
                             "rogue": mtls_ep(srv.url("/rogue"), pki, "rogue")},
                  sections=tls_sections(pki))
        row, _ = deliver_one(d, "good")
        assert row["status"] == "delivered", (row, d.log()[-2000:])
        for ep in ("none", "rogue"):
            row, msg = deliver_one(d, ep)
            print("\n%s: %s" % (ep, row["last_error"]))
            assert row["status"] == "dead_letter" and classes(msg) == ["tls_client_auth"], (ep, msg["attempts"])
        assert srv.requests == 1
    finally:
        srv.stop()


def test_plain_http_400_is_not_a_client_certificate_refusal(hookd, receiver):
    """nginx's words for a missing client certificate in a 400 from a
    plain-HTTP receiver mean nothing about TLS (no certificate could have
    been sent): http_400, dead at once like any 400, not retried as
    tls_client_auth."""
    from conftest import Reply
    rcv = receiver(Reply(400, body="<html>400 No required SSL certificate was sent</html>"))
    d = hookd(endpoints={"a": {"url": rcv.url("/a"), "max_attempts": 3}})
    row, msg = deliver_one(d, "a")
    assert row["status"] == "dead_letter" and classes(msg) == ["http_400"], (row, msg["attempts"])
