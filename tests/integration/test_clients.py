"""The client snippets of tests/clients/ (Python, PHP, Node, shell), run
as a user would run them: against a real hookd, checking that every event
is delivered, and against a scripted fake hookd for the failure paths
(a connection cut mid-window, a retryable refusal) that a real one
cannot be made to produce on cue."""
import json
import os
import shutil
import socket
import subprocess
import sys
import threading

import pytest

from conftest import HOOKD_BIN, ROOT, Reply, wait_until

CLIENTS_DIR = ROOT / "tests" / "clients"
CLIENTS = {
    "python": [sys.executable, str(CLIENTS_DIR / "hookd_client.py")],
    "php": ["php", str(CLIENTS_DIR / "hookd_client.php")],
    "node": ["node", str(CLIENTS_DIR / "hookd_client.js")],
    "shell": ["sh", str(CLIENTS_DIR / "hookd_send.sh")],
}
# the shell client runs one process per event
COUNT = {"python": 400, "php": 400, "node": 400, "shell": 40}


def command(name):
    cmd = CLIENTS[name]
    if shutil.which(cmd[0]) is None:
        pytest.fail("%s is not installed (make test installs it: php-cli, nodejs)" % cmd[0])
    return cmd


def run_client(name, sock, endpoint, n, prefix, timeout=60, **popen):
    env = dict(os.environ, HOOKD=HOOKD_BIN)
    return subprocess.Popen(command(name) + [str(sock), endpoint, str(n), prefix], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def finish(p, timeout=60):
    out, err = p.communicate(timeout=timeout)
    return p.returncode, out, err


def delivered_ids(rcv):
    return {r.json()["i"] for r in rcv.snapshot()}


@pytest.mark.parametrize("name", sorted(CLIENTS))
def test_client_enqueues_and_hookd_delivers(name, hookd, receiver):
    rcv = receiver(Reply(200))
    d = hookd(endpoints={"a": {"url": rcv.url()}})
    n = COUNT[name]
    rc, out, err = finish(run_client(name, d.sock, "a", n, name))
    assert rc == 0, (rc, out, err)
    assert out.strip() == "acked=%d duplicates=0" % n, (out, err)
    wait_until(lambda: len(delivered_ids(rcv)) == n, 30, msg="%s: all %d delivered" % (name, n))
    d.idle(30)
    assert delivered_ids(rcv) == set(range(n))
    events = [r.headers.get("webhook-id") for r in rcv.snapshot()]
    assert len(events) == n and len(set(events)) == n, "%d requests for %d events" % (len(events), len(set(events)))
    # the same events again: all duplicates, nothing new delivered (the
    # last enqueue is answered before hookd could hand anything on; idle
    # then covers whatever it handed on)
    rc, out, err = finish(run_client(name, d.sock, "a", n, name))
    assert rc == 0 and out.strip() == "acked=%d duplicates=%d" % (n, n), (rc, out, err)
    d.idle(30)
    assert d.sql("SELECT count(*) FROM webhook_queue")[0][0] == n
    d.stop()   # transfers in flight finish before it exits
    assert rcv.count() == n, "the receiver got %d requests for %d events" % (rcv.count(), n)


@pytest.mark.parametrize("name", sorted(CLIENTS))
def test_client_waits_for_hookd_to_start(name, hookd, receiver):
    """Started while hookd is down: it retries, and delivers once hookd is up."""
    rcv = receiver(Reply(200))
    d = hookd(endpoints={"a": {"url": rcv.url()}}, start=False)
    n = min(COUNT[name], 50)
    p = run_client(name, d.sock, "a", n, "w")
    first = p.stderr.readline()             # it says so before it waits
    assert first.startswith("retrying in "), first
    d.start()
    rc, out, err = finish(p)
    assert rc == 0 and out.strip() == "acked=%d duplicates=0" % n, (rc, out, first + err)
    wait_until(lambda: len(delivered_ids(rcv)) == n, 30, msg="%s: all delivered after the wait" % name)
    d.idle(30)
    d.stop()
    assert rcv.count() == n, "the receiver got %d requests for %d events" % (rcv.count(), n)


@pytest.mark.parametrize("name", sorted(CLIENTS))
def test_client_gives_up_on_a_request_that_stays_bad(name, hookd, receiver):
    rcv = receiver(Reply(200))
    d = hookd(endpoints={"a": {"url": rcv.url()}})
    rc, out, err = finish(run_client(name, d.sock, "no-such-endpoint", 3, "x"))
    assert rc == 1, (rc, out, err)
    assert "unknown_endpoint" in err, err
    assert rcv.count() == 0


class FakeHookd:
    """A control socket that answers enqueues from a script of connections:
    each entry is a list of actions for that connection's requests in
    order: "ok", an error code, or "cut" (close without answering the
    rest). Requests past the script are answered "ok". Acked event ids
    answer "duplicate": true when sent again, as hookd does."""

    def __init__(self, path, script):
        self.path = str(path)
        self.script = list(script)
        self.acked = []            # event ids, in the order first acked
        self.seen = []             # every request's event id
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.conns = []
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(self.path)
        self.srv.listen(16)
        # a timeout, not close() from another thread, ends accept(): a
        # closed descriptor's number is reused by the next socket the test
        # process opens, and an accept() still looping on it would take
        # that socket's connections (a later test's HTTP receiver)
        self.srv.settimeout(0.05)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.srv.accept()
            except socket.timeout:
                continue
            conn.settimeout(30)
            with self.lock:
                actions = self.script.pop(0) if self.script else []
            t = threading.Thread(target=self._conn, args=(conn, actions), daemon=True)
            self.conns.append(t)
            t.start()

    def _conn(self, conn, actions):
        f = conn.makefile("rb")
        try:
            for k, line in enumerate(f):
                req = json.loads(line)
                act = actions[k] if k < len(actions) else "ok"
                with self.lock:
                    self.seen.append(req["event_id"])
                if act == "cut":
                    return
                if act == "ok":
                    with self.lock:
                        dup = req["event_id"] in self.acked
                        if not dup:
                            self.acked.append(req["event_id"])
                    rep = {"ok": True, "id": len(self.acked), "event_id": req["event_id"], "duplicate": dup}
                else:
                    rep = {"ok": False, "error": {"code": act, "message": "scripted"}}
                conn.sendall((json.dumps(rep) + "\n").encode())
        except OSError:
            pass
        finally:
            f.close()
            conn.close()

    def close(self):
        """After the client exited: its connections are at EOF."""
        self.stop.set()
        self.thread.join(10)
        for t in self.conns:
            t.join(10)
        assert not self.thread.is_alive() and not any(t.is_alive() for t in self.conns)
        self.srv.close()


@pytest.mark.parametrize("name", sorted(CLIENTS))
def test_client_resends_after_a_cut_and_a_retryable_refusal(name, tmp_path):
    """Connection 1 answers 5 requests and is cut; connection 2 refuses
    its first request with storage_full and answers the rest. Every event
    ends up acknowledged exactly once: the cut ones and the refused one
    are sent again, nothing acknowledged is (the fake answers a resent
    acknowledged event "duplicate", which the client would count)."""
    n = 12
    fake = FakeHookd(tmp_path / "fake.sock", [["ok"] * 5 + ["cut"], ["storage_full"]])
    try:
        rc, out, err = finish(run_client(name, fake.path, "a", n, "c"))
    finally:
        fake.close()
    assert rc == 0, (rc, out, err)
    assert out.strip() == "acked=%d duplicates=0" % n, (out, err)
    assert sorted(fake.acked) == sorted("c-%d" % i for i in range(n)), fake.acked
    assert len(fake.acked) == n
    assert "storage_full" in err, err
    if name != "shell":      # one connection per event: it has no window to cut
        assert "closed the connection" in err or "connection" in err, err
