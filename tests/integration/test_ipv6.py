"""IPv6 end to end: endpoints at http://[::1]:PORT/ and https://[::1]:PORT/
(a certificate for IP:::1) are delivered, directly and through an
endpoint's proxy (which is asked to CONNECT [::1]:PORT), with
allow_networks admitting ::1/128; without it the guard refuses ::1.
`make static-test` runs this file against the static binary too."""
import http.server
import os
import shutil
import socket
import subprocess
import threading

import pytest

from conftest import wait_until
from connect_proxy import ConnectProxy

DONE = ("delivered", "dead_letter")
ALLOW = {"delivery": {"allow_networks": "127.0.0.0/8, ::1/128"}}


class V6Receiver:
    """A threaded HTTP server on [::1] answering 200, recording paths."""

    def __init__(self):
        self.paths = []
        rcv = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *a):
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(n)
                rcv.paths.append((self.path, self.headers.get("Host")))
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

        class Server(http.server.ThreadingHTTPServer):
            address_family = socket.AF_INET6
            daemon_threads = True

        self.server = Server(("::1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def v6recv():
    r = V6Receiver()
    yield r
    r.stop()


@pytest.fixture
def proxy():
    p = ConnectProxy()
    yield p
    p.stop()


def test_http_to_ipv6_literal(hookd, v6recv, proxy):
    url = "http://[::1]:%d" % v6recv.port
    d = hookd(endpoints={"direct": {"url": url + "/direct"},
                         "proxied": {"url": url + "/proxied", "proxy": proxy.url()}}, sections=ALLOW)
    for ep in ("direct", "proxied"):
        r = d.enqueue(ep, {"x": 1})
        row = d.wait_status(r["id"], DONE, timeout=15)
        assert row["status"] == "delivered", (ep, row["last_error"])
    assert sorted(p for p, _ in v6recv.paths) == ["/direct", "/proxied"], v6recv.paths
    assert {h for _, h in v6recv.paths} == {"[::1]:%d" % v6recv.port}, v6recv.paths
    assert proxy.lines == ["CONNECT [::1]:%d HTTP/1.1" % v6recv.port], proxy.lines


def test_ipv6_loopback_refused_without_allow(hookd, v6recv, proxy):
    url = "http://[::1]:%d" % v6recv.port
    d = hookd(endpoints={"direct": {"url": url + "/d"}, "proxied": {"url": url + "/p", "proxy": proxy.url()}},
              sections={"delivery": {"allow_networks": "127.0.0.0/8"}})
    for ep in ("direct", "proxied"):
        r = d.enqueue(ep, {"x": 1})
        row = d.wait_status(r["id"], "dead_letter", timeout=15)
        assert "SSRF" in row["last_error"] and "loopback" in row["last_error"], (ep, row["last_error"])
    assert v6recv.paths == [] and proxy.lines == []


@pytest.mark.skipif(not (shutil.which("nginx") and shutil.which("openssl")), reason="nginx or openssl missing")
def test_https_to_ipv6_literal(hookd, proxy, tmp_path):
    """nginx on [::1] with a certificate for IP:::1 only, directly and
    through the proxy: verified against the address in both builds."""
    from test_tls import free_port, make_ca, make_leaf
    ca = make_ca(tmp_path, "ca")
    key, crt = make_leaf(tmp_path, "v6", ca, "IP:::1", cn="v6-only")
    nd = tmp_path / "ngx"
    (nd / "logs").mkdir(parents=True)
    (nd / "tmp").mkdir()
    port = free_port()
    (nd / "nginx.conf").write_text("""
worker_processes 1;
pid %(d)s/nginx.pid;
error_log %(d)s/logs/error.log warn;
events { worker_connections 64; }
http {
  access_log %(d)s/logs/access.log;
  client_body_temp_path %(d)s/tmp;
  ssl_certificate %(crt)s;
  ssl_certificate_key %(key)s;
  server {
    listen [::1]:%(port)d ssl;
    location / { return 204; }
  }
}
""" % {"d": nd, "crt": crt, "key": key, "port": port})
    subprocess.run(["nginx", "-c", str(nd / "nginx.conf"), "-p", str(nd), "-e", str(nd / "logs/error.log")],
                   check=True, capture_output=True)

    def up():
        try:
            socket.create_connection(("::1", port), timeout=1).close()
            return True
        except OSError:
            return False
    try:
        wait_until(lambda: (nd / "nginx.pid").exists() and up(), timeout=10, msg="nginx on [::1]")
        url = "https://[::1]:%d" % port
        d = hookd(endpoints={"direct": {"url": url + "/direct", "ca_file": str(ca[1])},
                             "proxied": {"url": url + "/proxied", "ca_file": str(ca[1]), "proxy": proxy.url()}},
                  sections=ALLOW)
        for ep in ("direct", "proxied"):
            r = d.enqueue(ep, {"x": 1})
            row = d.wait_status(r["id"], DONE, timeout=20)
            assert row["status"] == "delivered", (ep, row["last_error"])
        log = (nd / "logs" / "access.log").read_text()
        assert "/direct" in log and "/proxied" in log, log
        assert proxy.lines == ["CONNECT [::1]:%d HTTP/1.1" % port], proxy.lines
    finally:
        try:
            os.kill(int((nd / "nginx.pid").read_text()), 15)
        except (OSError, ValueError):
            pass
