"""What hookd's TLS client offers and trusts.

The TLS 1.2 cipher suites, the same in both builds: what
OpenSSL offers by default at security level 2 (the dynamic build), and the
explicit list the static build's libcurl patch gives mbedTLS
(packaging/patches/curl-mbedtls-policy.patch). Each receiver here accepts
one suite only (TLS 1.2, Python's ssl on OpenSSL): the forward-secret AEAD
suites, the ECDHE CBC ones, DHE with a 2048-bit group and RSA key exchange
(older receivers) deliver; DHE with a 1024-bit group is refused.

A ca_file replaced or rewritten while hookd runs is read again for the next
connection (the static build's libcurl keeps each parsed CA file, keyed on
its path and the file's identity: packaging/patches/curl-mbedtls-ca-cache.patch)."""
import os
import shutil
import socket
import ssl
import subprocess
import threading

import pytest

from test_mtls import openssl_build
from test_tls import LOCAL, deliver_one, make_ca, make_leaf, tls_ep

pytestmark = pytest.mark.skipif(not shutil.which("openssl"), reason="openssl not installed (make deps)")


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("spki")
    ca = make_ca(d, "ca")
    p = {"dir": d, "ca": ca[1], "server": make_leaf(d, "server", ca, "DNS:localhost,IP:127.0.0.1")}
    for bits, args in ((2048, ["genpkey", "-genparam", "-algorithm", "DH", "-pkeyopt", "dh_param:ffdhe2048"]),
                       (1024, ["dhparam", "1024"])):
        f = d / ("dh%d.pem" % bits)
        subprocess.run(["openssl", args[0], "-out", str(f), *args[1:]], check=True, capture_output=True)
        p["dh%d" % bits] = f
    return p


class OneSuiteServer:
    """A TLS 1.2 server accepting one cipher suite (OpenSSL name); answers
    each request 204 and closes; records the suites it negotiated."""

    def __init__(self, pki, suite, dh=None, curve=None):
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        self.ctx.set_ciphers(suite + ":@SECLEVEL=0")
        if curve:
            self.ctx.set_ecdh_curve(curve)
        self.ctx.load_cert_chain(str(pki["server"][1]), str(pki["server"][0]))
        if dh:
            self.ctx.load_dh_params(str(dh))
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.negotiated = []
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            try:
                conn.settimeout(5)
                s = self.ctx.wrap_socket(conn, server_side=True)
                self.negotiated.append(s.cipher()[0])
                if s.recv(65536):
                    s.sendall(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
                s.close()
            except (OSError, ssl.SSLError):
                conn.close()

    def url(self):
        return "https://localhost:%d/" % self.port

    def stop(self):
        self.sock.close()


DELIVERED = ["ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-RSA-CHACHA20-POLY1305",
             "ECDHE-RSA-AES256-SHA384", "ECDHE-RSA-AES128-SHA256", "ECDHE-RSA-AES256-SHA", "ECDHE-RSA-AES128-SHA",
             "DHE-RSA-AES128-GCM-SHA256", "DHE-RSA-AES256-SHA256", "AES128-GCM-SHA256", "AES256-SHA256",
             "AES128-SHA"]


def test_suites_offered(hookd, pki):
    servers = {s: OneSuiteServer(pki, s, pki["dh2048"] if s.startswith("DHE") else None) for s in DELIVERED}
    weak = OneSuiteServer(pki, "DHE-RSA-AES128-GCM-SHA256", pki["dh1024"])
    try:
        eps = {"s%d" % i: tls_ep(servers[s].url()) for i, s in enumerate(DELIVERED)}
        eps["weakdh"] = tls_ep(weak.url())
        d = hookd(endpoints=eps, sections={"delivery": dict(LOCAL, ca_file=str(pki["ca"]))})
        for i, s in enumerate(DELIVERED):
            row, msg = deliver_one(d, "s%d" % i)
            assert row["status"] == "delivered", (s, msg["attempts"])
            assert servers[s].negotiated == [s], (s, servers[s].negotiated)
        row, msg = deliver_one(d, "weakdh")
        assert row["status"] == "dead_letter" and [a["error_class"] for a in msg["attempts"]] == ["tls"], \
            msg["attempts"]
    finally:
        for s in servers.values():
            s.stop()
        weak.stop()


def test_key_exchange_groups(hookd, pki):
    """Receivers whose ECDHE accepts one group only: X25519 (OpenSSL's
    first choice; the static build computes it with Everest, see
    packaging/README.md), P-256 and P-384 all deliver."""
    servers = {c: OneSuiteServer(pki, "ECDHE-RSA-AES128-GCM-SHA256", curve=c)
               for c in (None, "prime256v1", "secp384r1")}
    try:
        eps = {"g%d" % i: tls_ep(srv.url()) for i, srv in enumerate(servers.values())}
        d = hookd(endpoints=eps, sections={"delivery": dict(LOCAL, ca_file=str(pki["ca"]))})
        for i, c in enumerate(servers):
            row, msg = deliver_one(d, "g%d" % i)
            assert row["status"] == "delivered", (c, msg["attempts"])
    finally:
        for srv in servers.values():
            srv.stop()


@pytest.mark.skipif(openssl_build(), reason="the dynamic build's libcurl (OpenSSL) keeps a CA store "
                    "for CURLOPT_CA_CACHE_TIMEOUT (a minute) whatever happens to the file")
def test_ca_file_changed_is_read_again(hookd, pki, tmp_path):
    """Two endpoints trust files that first hold another CA: refused. One
    file is then replaced (a new file renamed over it), the other rewritten
    in place: the next delivery to each verifies against the new contents.
    The receiver closes every connection and no session was established,
    so each delivery is a full handshake."""
    other = make_ca(tmp_path, "other")[1]
    srv = OneSuiteServer(pki, "ECDHE-RSA-AES128-GCM-SHA256")
    try:
        files = {"renamed": tmp_path / "renamed.pem", "rewritten": tmp_path / "rewritten.pem"}
        for f in files.values():
            shutil.copyfile(other, f)
        d = hookd(endpoints={n: dict(tls_ep(srv.url()), ca_file=str(f)) for n, f in files.items()},
                  sections={"delivery": LOCAL})
        for n in files:
            row, msg = deliver_one(d, n)
            assert row["status"] == "dead_letter" and [a["error_class"] for a in msg["attempts"]] == ["tls"], \
                (n, msg["attempts"])
        tmp = tmp_path / "renamed.pem.new"
        shutil.copyfile(pki["ca"], tmp)
        os.rename(tmp, files["renamed"])
        with open(files["rewritten"], "r+b") as f:
            data = open(pki["ca"], "rb").read()
            f.write(data)
            f.truncate(len(data))
        for n in files:
            row, msg = deliver_one(d, n)
            assert row["status"] == "delivered", (n, msg["attempts"])
    finally:
        srv.stop()
