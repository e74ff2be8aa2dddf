"""An endpoint's HTTP proxy (`proxy = http://[user:password@]host:port`).

hookd resolves the target itself, checks the address against the SSRF
guard and asks the proxy to CONNECT to that address (never the name; the
name stays in Host and SNI), always through a tunnel, also for http://
targets. So a target the guard refuses fails with ssrf_blocked before
anything reaches the proxy. The proxy's credentials travel as
Proxy-Authorization and are masked everywhere hookd shows the proxy.

The proxy is connect_proxy.py: it records every request line it gets."""
import base64
import shutil
import subprocess

import pytest

from conftest import HOOKD_BIN, free_port, render_ini
from connect_proxy import ConnectProxy

DONE = ("delivered", "dead_letter")
PASSWORD = "pw-7c1e9b42d"   # spelled so a leak is unmistakable
CREDS = "alice:" + PASSWORD


@pytest.fixture
def proxy():
    made = []

    def factory(**kw):
        p = ConnectProxy(**kw)
        made.append(p)
        return p

    yield factory
    for p in made:
        p.stop()


def basic(userpass):
    return "Basic " + base64.b64encode(userpass.encode()).decode()


def test_http_target_is_tunnelled_to_the_checked_address(hookd, receiver, proxy):
    """A name (localhost) in the URL: the proxy is asked for the address
    hookd resolved, in a CONNECT (an http:// target too), and the receiver
    still sees the name in Host."""
    rcv = receiver(200)
    px = proxy()
    d = hookd(endpoints={"a": {"url": "http://localhost:%d/a" % rcv.port, "proxy": px.url()}})
    r = d.enqueue("a", {"x": 1})
    assert d.wait_status(r["id"], DONE, timeout=15)["status"] == "delivered"
    assert px.lines == ["CONNECT 127.0.0.1:%d HTTP/1.1" % rcv.port], px.lines
    req = rcv.requests[0]
    assert req.path == "/a" and req.headers.get("host") == "localhost:%d" % rcv.port, req.headers
    # several deliveries: same tunnel or new ones, always by address
    for i in range(3):
        r = d.enqueue("a", {"n": i})
        assert d.wait_status(r["id"], DONE, timeout=15)["status"] == "delivered"
    assert set(px.lines) == {"CONNECT 127.0.0.1:%d HTTP/1.1" % rcv.port}, px.lines


@pytest.mark.skipif(not (shutil.which("nginx") and shutil.which("openssl")), reason="nginx or openssl missing")
def test_https_target_through_the_proxy_keeps_the_name_for_tls(hookd, proxy, tmp_path):
    """nginx with a certificate for DNS:localhost: verification (and SNI)
    use the name while the proxy only ever saw the address."""
    from test_tls import Nginx, make_ca, make_leaf
    ca = make_ca(tmp_path, "ca")
    leaf = make_leaf(tmp_path, "leaf", ca, "DNS:localhost")
    ngx = Nginx(tmp_path / "ngx", leaf)
    try:
        px = proxy()
        d = hookd(endpoints={"a": {"url": ngx.url("localhost", "/tls"), "proxy": px.url(), "ca_file": str(ca[1])}})
        r = d.enqueue("a", {"x": 1})
        row = d.wait_status(r["id"], DONE, timeout=20)
        assert row["status"] == "delivered", row["last_error"]
        assert px.lines == ["CONNECT 127.0.0.1:%d HTTP/1.1" % ngx.port], px.lines
        assert any(l.startswith("/tls ") for l in ngx.requests()), ngx.requests()
    finally:
        ngx.stop()


@pytest.mark.parametrize("host,rng", [("localhost", "loopback"), ("10.0.0.1", "private"),
                                      ("169.254.169.254", "link-local")])
def test_refused_target_never_reaches_the_proxy(hookd, proxy, host, rng):
    """Default guard (no allow_networks): the target is refused with the
    SSRF class and the proxy, itself on loopback, is never contacted."""
    px = proxy()
    d = hookd(endpoints={"a": {"url": "http://%s:8080/x" % host, "proxy": px.url()}},
              sections={"delivery": {"allow_networks": None}})
    r = d.enqueue("a", {"x": 1})
    row = d.wait_status(r["id"], "dead_letter", timeout=15)
    assert "SSRF" in row["last_error"] and rng in row["last_error"], row["last_error"]
    assert [a["error_class"] for a in d.get(r["id"])["attempts"]] == ["ssrf_blocked"]
    assert px.lines == [], px.lines


def test_credentials_sent_and_never_shown(hookd, receiver, proxy, tmp_path):
    """Proxy-Authorization carries them; endpoint listings, check-config,
    the attempt log, hookd's log, the database and an export do not.
    An endpoint.put one survives a restart (loaded from its sealed form)."""
    rcv = receiver(200)
    px = proxy(require_auth=basic(CREDS))
    purl = px.url(CREDS)
    d = hookd(endpoints={"cfg": {"url": rcv.url("/cfg"), "proxy": purl}})
    put = d.request({"op": "endpoint.put", "name": "api", "url": rcv.url("/api"), "proxy": purl})
    assert put["ok"] is True, put
    ids = [d.enqueue(ep, {"x": 1})["id"] for ep in ("cfg", "api")]
    for mid in ids:
        assert d.wait_status(mid, DONE, timeout=15)["status"] == "delivered"
    assert px.auth == [basic(CREDS)] * len(px.auth) and len(px.auth) >= 1, px.auth
    shown = "http://***@127.0.0.1:%d" % px.port
    eps = d.endpoints()
    assert eps["cfg"]["settings"]["proxy"] == shown and eps["api"]["settings"]["proxy"] == shown, eps
    texts = [d.cli("endpoints").stdout, d.cli("endpoints", "--json").stdout, d.cli("check-config").stdout,
             d.cli("check-config").stderr, str([d.get(m) for m in ids])]
    assert shown in texts[0] and shown in texts[1] and shown in texts[2], texts[:3]
    d.stop()
    out = tmp_path / "x.ndjson"
    p = d.cli("export", out)
    assert p.returncode == 0, p.stderr
    texts += [d.log(), out.read_text()]
    for i, t in enumerate(texts):
        assert PASSWORD not in t, (i, t)
    for f in d.db.parent.iterdir():
        if f.name.startswith(d.db.name):
            assert PASSWORD.encode() not in f.read_bytes(), f
    # the stored endpoint (credentials loaded from the sealed secrets)
    d.start()
    r = d.enqueue("api", {"x": 2})
    assert d.wait_status(r["id"], DONE, timeout=15)["status"] == "delivered"
    assert px.auth[-1] == basic(CREDS), px.auth
    # and imported elsewhere (under the same key)
    b = hookd(name="b", start=False)
    shutil.copy2(d.db.parent / "secret.key", b.db.parent / "secret.key")
    p = b.cli("import", out)
    assert p.returncode == 0, p.stderr
    b.start()
    n = len(px.auth)
    r = b.enqueue("api", {"x": 3})
    assert b.wait_status(r["id"], DONE, timeout=15)["status"] == "delivered"
    assert px.auth[n:] and set(px.auth[n:]) == {basic(CREDS)}, px.auth


def test_proxy_refusing_is_the_proxy_class_and_retried(hookd, receiver, proxy):
    """407 (no credentials), 403, and a proxy that is not there: class
    proxy, no HTTP status of the receiver's, retried until max_attempts."""
    rcv = receiver(200)
    need_auth = proxy(require_auth=basic(CREDS))
    forbids = proxy(refuse=403)
    gone_port = free_port()   # nothing listens there
    d = hookd(endpoints={
        "noauth": {"url": rcv.url("/n"), "proxy": need_auth.url(), "max_attempts": 2},
        "forbid": {"url": rcv.url("/f"), "proxy": forbids.url(), "max_attempts": 2},
        "absent": {"url": rcv.url("/g"), "proxy": "http://127.0.0.1:%d" % gone_port,
                   "max_attempts": 2},
    })
    want = {"noauth": "HTTP 407", "forbid": "HTTP 403", "absent": "proxy unreachable"}
    for ep, text in want.items():
        r = d.enqueue(ep, {"x": 1})
        row = d.wait_status(r["id"], "dead_letter", timeout=20)
        attempts = d.get(r["id"])["attempts"]
        assert [a["error_class"] for a in attempts] == ["proxy", "proxy"], (ep, attempts)
        assert row["last_status_code"] is None, (ep, row)
        assert text in row["last_error"], (ep, row["last_error"])
    assert rcv.count() == 0
    assert need_auth.lines and forbids.lines


@pytest.mark.parametrize("value,why", [
    ("https://proxy.example:3128", "http://"),
    ("socks5://proxy.example:1080", "http://"),
    ("http://proxy.example", "port"),
    ("http://proxy.example:3128/path", "path"),
    ("http://***@proxy.example:3128", "credentials"),
])
def test_bad_proxy_refused_at_load_put_and_check(hookd, tmp_path, value, why):
    ini = tmp_path / "hookd.ini"
    ini.write_text(render_ini({
        "storage": {"path": str(tmp_path / "hookd.db")},
        "server": {"socket": str(tmp_path / "hookd.sock")},
        "endpoint.a": {"url": "https://example.com/hook", "proxy": value},
    }))
    r = subprocess.run([HOOKD_BIN, "check-config", "-c", str(ini)], capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "proxy" in r.stderr and why in r.stderr, r.stderr
    d = hookd()
    put = d.request({"op": "endpoint.put", "name": "b", "url": "https://example.com/hook", "proxy": value})
    assert put["ok"] is False and "proxy" in put["error"]["message"] and why in put["error"]["message"], put


def test_secret_never_echoed_in_a_refusal(hookd):
    d = hookd()
    put = d.request({"op": "endpoint.put", "name": "b", "url": "https://example.com/hook",
                     "proxy": "http://%s@proxy.example:3128/x" % CREDS})
    assert put["ok"] is False and PASSWORD not in str(put), put
    assert PASSWORD not in d.log()


def test_removing_the_proxy(hookd, receiver, proxy):
    """endpoint.put without proxy: direct again (and through the guard's
    own connect-time check)."""
    rcv = receiver(200)
    px = proxy()
    d = hookd()
    assert d.request({"op": "endpoint.put", "name": "a", "url": rcv.url("/a"), "proxy": px.url(CREDS)})["ok"]
    r = d.enqueue("a", {"x": 1})
    assert d.wait_status(r["id"], DONE, timeout=15)["status"] == "delivered"
    assert d.request({"op": "endpoint.put", "name": "a", "url": rcv.url("/a")})["ok"]
    assert "proxy" not in d.endpoints()["a"]["settings"]
    n = len(px.lines)
    r = d.enqueue("a", {"x": 2})
    assert d.wait_status(r["id"], DONE, timeout=15)["status"] == "delivered"
    assert len(px.lines) == n and rcv.count() == 2


def test_environment_neither_adds_nor_skips_a_proxy(hookd, receiver, proxy, monkeypatch):
    """no_proxy=* does not send a proxied endpoint direct, and http_proxy
    does not proxy the others."""
    rcv = receiver(200)
    px = proxy()
    envpx = proxy()
    for k in ("no_proxy", "NO_PROXY"):
        monkeypatch.setenv(k, "*")
    for k in ("http_proxy", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.setenv(k, envpx.url())
    d = hookd(endpoints={"via": {"url": "http://localhost:%d/via" % rcv.port, "proxy": px.url()},
                         "direct": {"url": rcv.url("/direct")}})
    for ep in ("via", "direct"):
        r = d.enqueue(ep, {"x": 1})
        assert d.wait_status(r["id"], DONE, timeout=15)["status"] == "delivered"
    assert px.lines == ["CONNECT 127.0.0.1:%d HTTP/1.1" % rcv.port], px.lines
    assert envpx.lines == [], envpx.lines


def test_delivery_proxy_is_the_default_and_none_opts_out(hookd, receiver, proxy):
    """[delivery] proxy serves endpoints without their own; an endpoint's
    proxy wins; proxy = none goes direct. check-config masks the global
    one's credentials; a refused target never reaches it either."""
    rcv = receiver(200)
    glob = proxy(require_auth=basic(CREDS))
    own = proxy()
    d = hookd(endpoints={"inherits": {"url": "http://localhost:%d/i" % rcv.port},
                         "own": {"url": "http://localhost:%d/o" % rcv.port, "proxy": own.url()},
                         "direct": {"url": rcv.url("/d"), "proxy": "none"},
                         "refused": {"url": "http://10.0.0.1:8080/r"}},
              sections={"delivery": {"proxy": glob.url(CREDS)}})
    for ep in ("inherits", "own", "direct"):
        r = d.enqueue(ep, {"x": 1})
        row = d.wait_status(r["id"], DONE, timeout=15)
        assert row["status"] == "delivered", (ep, row["last_error"])
    r = d.enqueue("refused", {"x": 1})
    assert "SSRF" in d.wait_status(r["id"], "dead_letter", timeout=15)["last_error"]
    line = "CONNECT 127.0.0.1:%d HTTP/1.1" % rcv.port
    assert glob.lines == [line] and glob.auth == [basic(CREDS)], glob.lines
    assert own.lines == [line], own.lines
    assert sorted(q.path for q in rcv.requests) == ["/d", "/i", "/o"]
    assert d.endpoints()["direct"]["settings"]["proxy"] == "none"
    out = d.cli("check-config")
    assert out.returncode == 0, out.stderr
    assert "proxy = http://***@127.0.0.1:%d" % glob.port in out.stdout, out.stdout
    assert PASSWORD not in out.stdout + out.stderr + d.log()


def test_bad_delivery_proxy_stops_the_start(tmp_path):
    ini = tmp_path / "hookd.ini"
    ini.write_text(render_ini({
        "storage": {"path": str(tmp_path / "hookd.db")},
        "server": {"socket": str(tmp_path / "hookd.sock")},
        "delivery": {"proxy": "socks5://%s@proxy.example:1080" % CREDS},
    }))
    r = subprocess.run([HOOKD_BIN, "check-config", "-c", str(ini)], capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "[delivery] proxy" in r.stderr and "http://" in r.stderr, r.stderr
    assert PASSWORD not in r.stderr + r.stdout


def test_password_with_a_raw_at_sign(hookd, receiver, proxy):
    """proxy_parse ends the credentials at the last '@'; libcurl at the
    first: hookd hands libcurl the '@' percent-encoded, and the proxy gets
    the password as written."""
    rcv = receiver(200)
    creds = "carol:p@ss-" + PASSWORD
    px = proxy(require_auth=basic(creds))
    d = hookd(endpoints={"a": {"url": rcv.url("/a"), "proxy": px.url(creds)}})
    r = d.enqueue("a", {"x": 1})
    row = d.wait_status(r["id"], DONE, timeout=15)
    assert row["status"] == "delivered", row
    assert px.auth == [basic(creds)], px.auth
    assert PASSWORD not in d.log()
