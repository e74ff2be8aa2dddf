"""IPv6 end to end: endpoints at http://[::1]:PORT/ and https://[::1]:PORT/
(a certificate for IP:::1) are delivered, directly and through an
endpoint's proxy (which is asked to CONNECT [::1]:PORT), with
allow_networks admitting ::1/128; without it the guard refuses ::1.
`make static-test` runs this file against the static binary too."""
import shutil

import pytest

from connect_proxy import ConnectProxy

DONE = ("delivered", "dead_letter")
ALLOW = {"delivery": {"allow_networks": "127.0.0.0/8, ::1/128"}}


@pytest.fixture
def proxy():
    p = ConnectProxy()
    yield p
    p.stop()


@pytest.fixture
def v6recv(receiver):
    return receiver(200, host="::1")


def paths(rcv):
    return [(r.path, r.headers.get("host")) for r in rcv.requests]


def test_http_to_ipv6_literal(hookd, v6recv, proxy):
    url = "http://[::1]:%d" % v6recv.port
    d = hookd(endpoints={"direct": {"url": url + "/direct"},
                         "proxied": {"url": url + "/proxied", "proxy": proxy.url()}}, sections=ALLOW)
    for ep in ("direct", "proxied"):
        r = d.enqueue(ep, {"x": 1})
        row = d.wait_status(r["id"], DONE, timeout=15)
        assert row["status"] == "delivered", (ep, row["last_error"])
    assert sorted(p for p, _ in paths(v6recv)) == ["/direct", "/proxied"], paths(v6recv)
    assert {h for _, h in paths(v6recv)} == {"[::1]:%d" % v6recv.port}, paths(v6recv)
    assert proxy.lines == ["CONNECT [::1]:%d HTTP/1.1" % v6recv.port], proxy.lines


def test_ipv6_loopback_refused_without_allow(hookd, v6recv, proxy):
    url = "http://[::1]:%d" % v6recv.port
    d = hookd(endpoints={"direct": {"url": url + "/d"}, "proxied": {"url": url + "/p", "proxy": proxy.url()}},
              sections={"delivery": {"allow_networks": "127.0.0.0/8"}})
    for ep in ("direct", "proxied"):
        r = d.enqueue(ep, {"x": 1})
        row = d.wait_status(r["id"], "dead_letter", timeout=15)
        assert "SSRF" in row["last_error"] and "loopback" in row["last_error"], (ep, row["last_error"])
    assert v6recv.requests == [] and proxy.lines == []


@pytest.mark.skipif(not (shutil.which("nginx") and shutil.which("openssl")), reason="nginx or openssl missing")
def test_https_to_ipv6_literal(hookd, proxy, tmp_path):
    """nginx on [::1] with a certificate for IP:::1 only, directly and
    through the proxy: verified against the address in both builds."""
    from test_tls import Nginx, make_ca, make_leaf
    ca = make_ca(tmp_path, "ca")
    ngx = Nginx(tmp_path / "ngx", make_leaf(tmp_path, "v6", ca, "IP:::1", cn="v6-only"), host="::1")
    port = ngx.port
    try:
        url = "https://[::1]:%d" % port
        d = hookd(endpoints={"direct": {"url": url + "/direct", "ca_file": str(ca[1])},
                             "proxied": {"url": url + "/proxied", "ca_file": str(ca[1]), "proxy": proxy.url()}},
                  sections=ALLOW)
        for ep in ("direct", "proxied"):
            r = d.enqueue(ep, {"x": 1})
            row = d.wait_status(r["id"], DONE, timeout=20)
            assert row["status"] == "delivered", (ep, row["last_error"])
        uris = sorted(l.split()[0] for l in ngx.requests())
        assert uris == ["/direct", "/proxied"], ngx.requests()
        assert proxy.lines == ["CONNECT [::1]:%d HTTP/1.1" % port], proxy.lines
    finally:
        ngx.stop()
