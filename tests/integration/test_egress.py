"""Where deliveries leave from: [delivery] source_address, the local
address every connection is bound to (partners that admit senders by IP
allowlist)."""
import subprocess

from conftest import HOOKD_BIN, render_ini


def test_source_address_is_the_peer_the_receiver_sees(hookd, receiver):
    """With source_address = 127.0.0.2 the receiver's peer is 127.0.0.2
    (loopback answers from any 127/8 address); without it, 127.0.0.1."""
    recv = receiver(200)
    d = hookd(endpoints={"a": {"url": recv.url("/a")}},
              sections={"delivery": {"source_address": "127.0.0.2"}})
    r = d.enqueue("a", {"x": 1})
    assert d.wait_status(r["id"], ("delivered", "dead_letter"), timeout=15)["status"] == "delivered"
    plain = hookd(endpoints={"b": {"url": recv.url("/b")}})
    r = plain.enqueue("b", {"x": 2})
    assert plain.wait_status(r["id"], ("delivered", "dead_letter"), timeout=15)["status"] == "delivered"
    peers = {q.path: q.peer[0] for q in recv.requests}
    assert peers == {"/a": "127.0.0.2", "/b": "127.0.0.1"}, peers


def test_source_address_must_be_an_address(tmp_path):
    """A name (or anything but an IP literal) is refused at start-up:
    an interface or host name would be looked up on every connection."""
    ini = tmp_path / "hookd.ini"
    ini.write_text(render_ini({
        "storage": {"path": str(tmp_path / "hookd.db")},
        "server": {"socket": str(tmp_path / "hookd.sock")},
        "delivery": {"source_address": "eth0"},
    }))
    r = subprocess.run([HOOKD_BIN, "check-config", "-c", str(ini)], capture_output=True, text=True, timeout=30)
    assert r.returncode != 0
    assert "source_address" in r.stderr, r.stderr


def test_source_address_per_endpoint(hookd, receiver):
    """An endpoint's own source_address wins over [delivery]'s; the others
    inherit it; `hookd endpoints --json` shows the endpoint's."""
    recv = receiver(200)
    d = hookd(endpoints={"own": {"url": recv.url("/own"), "source_address": "127.0.0.3"},
                         "inherits": {"url": recv.url("/inherits")}},
              sections={"delivery": {"source_address": "127.0.0.2"}})
    for i, ep in enumerate(("own", "inherits", "own")):
        r = d.enqueue(ep, {"n": i})
        assert d.wait_status(r["id"], ("delivered", "dead_letter"), timeout=15)["status"] == "delivered"
    peers = sorted((q.path, q.peer[0]) for q in recv.requests)
    assert peers == [("/inherits", "127.0.0.2"), ("/own", "127.0.0.3"), ("/own", "127.0.0.3")], peers
    out = d.cli("endpoints", "--json")
    assert '"source_address":"127.0.0.3"' in out.stdout.replace(" ", ""), out.stdout


def test_endpoint_source_address_must_be_an_address(tmp_path):
    ini = tmp_path / "hookd.ini"
    ini.write_text(render_ini({
        "storage": {"path": str(tmp_path / "hookd.db")},
        "server": {"socket": str(tmp_path / "hookd.sock")},
        "endpoint.a": {"url": "https://example.com/hook", "source_address": "127.0.0.300"},
    }))
    r = subprocess.run([HOOKD_BIN, "check-config", "-c", str(ini)], capture_output=True, text=True, timeout=30)
    assert r.returncode != 0
    assert "source_address" in r.stderr, r.stderr
