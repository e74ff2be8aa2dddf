"""The egress options together: an endpoint with a proxy AND a client
certificate AND a pin over HTTPS, a proxy with a source address, and one
delivery thread whose handles go from a proxied endpoint with a
certificate to a direct one without and back. Nothing of one endpoint's
connection (tunnel, certificate, pin, CONNECT target) may carry over to
another's.

The receiver is nginx asking for a client certificate (optional, so a
request without one is answered 204 too) and logging, per request, the
verification result and nginx's connection serial number: the same
number means the same TCP (and TLS) connection."""
import base64
import shutil

import pytest

from connect_proxy import ConnectProxy
from test_mtls import MtlsNginx, pin_of
from test_tls import LOCAL, deliver_one, make_ca, make_leaf, tls_ep

pytestmark = pytest.mark.skipif(not (shutil.which("nginx") and shutil.which("openssl")),
                                reason="nginx or openssl not installed (make deps)")

PASSWORD = "pw-5d0c81e7f"   # spelled so a leak is unmistakable
CREDS = "bob:" + PASSWORD


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    import os
    d = tmp_path_factory.mktemp("xpki")
    ca, client_ca = make_ca(d, "ca"), make_ca(d, "clientca")
    p = {"ca": ca[1], "client_ca": client_ca[1],
         "server": make_leaf(d, "server", ca, "DNS:localhost,IP:127.0.0.1"),
         "server2": make_leaf(d, "server2", ca, "DNS:localhost,IP:127.0.0.1"),
         "client": make_leaf(d, "client", client_ca, "DNS:hookd-client", cn="hookd client")}
    os.chmod(p["client"][0], 0o600)
    return p


class AskingNginx(MtlsNginx):
    """nginx asking for (not requiring) a client certificate; per request
    [uri, verify result, connection serial]."""

    def __init__(self, d, pki):
        super().__init__(d, pki, verify="optional", what="$connection")

    def who(self):
        return [l.split() for l in self.clients()]


@pytest.fixture
def ngx(tmp_path, pki):
    n = AskingNginx(tmp_path / "ngx", pki)
    yield n
    n.stop()


@pytest.fixture
def px():
    p = ConnectProxy(require_auth="Basic " + base64.b64encode(CREDS.encode()).decode())
    yield p
    p.stop()


def classes(msg):
    return [a["error_class"] for a in msg["attempts"]]


def last(ngx, uri):
    rows = [r for r in ngx.who() if r[0] == uri]
    assert rows, (uri, ngx.who())
    return rows[-1]


def test_proxy_client_cert_and_pin_and_a_direct_neighbour(hookd, ngx, px, pki):
    """One delivery thread. Through the proxy with a certificate and the
    right pin: delivered, the proxy asked for the address with the
    credentials, nginx verified the certificate. Then a direct endpoint
    to the same host without certificate or pin: delivered on a
    connection of its own (not the tunnel), no certificate sent, the
    proxy not asked. Then the proxied one again, a direct one with the
    certificate, and a proxied one whose pin does not match (tls_pin,
    nothing sent)."""
    good, other = pin_of(pki["server"][1]), pin_of(pki["server2"][1])
    purl = px.url(CREDS)
    mtls = {"client_cert": str(pki["client"][1]), "client_key": str(pki["client"][0])}
    d = hookd(endpoints={
        "px": dict(tls_ep(ngx.url("localhost", "/px")), proxy=purl, pinned_pubkey=good, **mtls),
        "direct": tls_ep(ngx.url("localhost", "/direct")),
        "direct_cert": dict(tls_ep(ngx.url("localhost", "/direct_cert")), **mtls),
        "px_badpin": dict(tls_ep(ngx.url("localhost", "/px_badpin")), proxy=purl, pinned_pubkey=other, **mtls),
    }, sections={"delivery": dict(LOCAL, ca_file=str(pki["ca"]), workers=1)})

    row, _ = deliver_one(d, "px")
    assert row["status"] == "delivered", (row, d.log()[-2000:])
    assert px.connects() == ["CONNECT 127.0.0.1:%d HTTP/1.1" % ngx.port], px.lines
    _, verdict, c_px = last(ngx, "/px")
    assert verdict == "SUCCESS", ngx.who()

    row, _ = deliver_one(d, "direct")
    assert row["status"] == "delivered", row
    _, verdict, c_direct = last(ngx, "/direct")
    assert verdict == "NONE", ("the direct endpoint sent the other's certificate", ngx.who())
    assert c_direct != c_px, ("the direct request went down the proxied tunnel", ngx.who())
    assert len(px.lines) == 1, px.lines

    row, _ = deliver_one(d, "px")
    assert row["status"] == "delivered", row
    _, verdict, c_px2 = last(ngx, "/px")
    assert verdict == "SUCCESS" and c_px2 != c_direct, ngx.who()

    row, _ = deliver_one(d, "direct_cert")
    assert row["status"] == "delivered", row
    _, verdict, c_dc = last(ngx, "/direct_cert")
    assert verdict == "SUCCESS" and c_dc not in (c_direct, c_px, c_px2), ngx.who()

    n = len(ngx.who())
    row, msg = deliver_one(d, "px_badpin")
    assert row["status"] == "dead_letter" and classes(msg) == ["tls_pin"], (row, msg["attempts"])
    assert len(ngx.who()) == n, ("a request went to a server whose key matches no pin", ngx.who())
    assert px.connects()[-1] == "CONNECT 127.0.0.1:%d HTTP/1.1" % ngx.port, px.lines

    row, _ = deliver_one(d, "direct")
    assert row["status"] == "delivered", row
    assert last(ngx, "/direct")[1] == "NONE", ngx.who()
    assert all(a == px.auth[0] for a in px.auth) and px.auth[0], px.auth
    assert PASSWORD not in d.log()


def test_proxy_with_source_address(hookd, ngx, px, pki):
    """source_address on a proxied endpoint: the connection to the proxy
    leaves from that address (the partner sees the proxy's anyway);
    a direct neighbour on the same thread leaves from the default."""
    d = hookd(endpoints={
        "px": dict(tls_ep(ngx.url("localhost", "/px")), proxy=px.url(CREDS), source_address="127.0.0.2"),
        "direct": tls_ep(ngx.url("localhost", "/direct")),
    }, sections={"delivery": dict(LOCAL, ca_file=str(pki["ca"]), workers=1)})
    row, _ = deliver_one(d, "px")
    assert row["status"] == "delivered", (row, d.log()[-2000:])
    assert px.peers == ["127.0.0.2"], px.peers
    row, _ = deliver_one(d, "direct")
    assert row["status"] == "delivered", row
    assert len(px.lines) == 1, px.lines
