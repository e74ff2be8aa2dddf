"""`hookd top`: one plain-text frame (--once) with the right figures per
endpoint and a totals line, sorting by any column, and the full-screen
view driven through a real pseudo-terminal at 80x24 (ncurses draws it,
a digit re-sorts, q quits)."""
import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import termios
import time

from conftest import HOOKD_BIN, wait_until


def top_once(d, *args, columns=80):
    env = dict(os.environ, COLUMNS=str(columns))
    env.pop("HOOKD_SOCKET", None)
    return subprocess.run([HOOKD_BIN, "top", "--once", "-s", str(d.sock), *args], capture_output=True,
                          text=True, timeout=30, env=env)


def rows(out):
    lines = out.splitlines()
    head = lines[1].split()
    return {l.split()[0]: dict(zip(head, l.split())) for l in lines[2:-2]}, lines


def test_once_shows_each_endpoint_and_totals(hookd, receiver):
    rcv = receiver(200)
    rcv.set(503, "/bad")
    d = hookd(endpoints={"good": {"url": rcv.url("/good")},
                         "bad": {"url": rcv.url("/bad"), "failure_threshold": "2", "max_attempts": "50",
                                 "cooldown": "1h"},
                         "held": {"url": rcv.url("/held"), "paused": "yes"}})
    for i in range(20):
        d.enqueue("good", {"i": i})
    d.enqueue("bad", {"i": 1})
    d.enqueue("held", {"i": 1})
    d.enqueue("held", {"i": 2})
    wait_until(lambda: rcv.count("/good") == 20 and d.endpoints()["bad"]["state"] == "open", 10,
               msg="deliveries and an open breaker")
    wait_until(lambda: d.endpoints()["good"]["last_10s"]["delivered"] == 20, 5, msg="the window counted")
    p = top_once(d)
    assert p.returncode == 0, p.stderr
    r, lines = rows(p.stdout)
    assert all(len(l) <= 80 for l in lines), lines
    assert lines[1].split() == ["NAME", "STATE", "INFL/LIM", "DLV/s", "FAIL/s<", "P50", "P95", "P99", "QUEUE",
                                "OLDEST"], lines[1]
    assert r["good"]["STATE"] == "closed" and r["good"]["DLV/s"] == "2.0" and r["good"]["FAIL/s<"] == "0", r
    assert r["bad"]["STATE"] == "OPEN" and float(r["bad"]["FAIL/s<"]) >= 0.2 and r["bad"]["QUEUE"] == "1", r
    assert r["held"]["STATE"] == "paused" and r["held"]["QUEUE"] == "2" and r["held"]["OLDEST"].endswith("s"), r
    # sorted by failures, worst first; the totals add up
    names = [l.split()[0] for l in lines[2:-2]]
    assert names[0] == "bad", names
    total = lines[-2].split()
    assert total[0] == "TOTAL" and total[1] == "(3)" and total[-2] == "3", total
    assert lines[-1].startswith("sort:")
    # any column; names ascending
    p = top_once(d, "--sort", "name", columns=120)
    r, lines = rows(p.stdout)
    assert [l.split()[0] for l in lines[2:-2]] == ["bad", "good", "held"]
    assert lines[1].split()[0] == "NAME>"
    p = top_once(d, "--sort", "queue")
    assert [l.split()[0] for l in p.stdout.splitlines()[2:-2]][0] == "held"
    p = top_once(d, "--sort", "bogus")
    assert p.returncode == 2 and "--sort wants one of" in p.stderr


def test_once_without_daemon_says_so(tmp_path):
    p = subprocess.run([HOOKD_BIN, "top", "--once", "-s", str(tmp_path / "nope.sock")], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 3 and "hookd top:" in p.stderr, (p.returncode, p.stderr)


def test_full_screen_needs_a_terminal(hookd, tmp_path):
    d = hookd(endpoints={"a": {"url": "http://127.0.0.1:9/x"}})
    env = dict(os.environ)
    env.pop("HOOKD_SOCKET", None)
    p = subprocess.run([HOOKD_BIN, "top", "-s", str(d.sock)], capture_output=True, text=True, timeout=30,
                       stdin=subprocess.DEVNULL, env=env)
    assert p.returncode == 2 and "--once" in p.stderr, (p.returncode, p.stderr)
    # a terminal ncurses does not know: said, not a bare "Error opening terminal"
    with PtyTop(d, "no-such-terminal-type") as t:
        assert b"cannot use this terminal" in t.read_until(b"--once")
        status = t.wait_exit()
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 2, status


def read_until(fd, want, timeout=10.0):
    """Read the terminal until `want` (bytes) appeared; return all read."""
    buf = b""
    deadline = time.monotonic() + timeout
    while want not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError("terminal never showed %r; got %r" % (want, buf[-2000:]))
        r, _, _ = select.select([fd], [], [], min(left, 0.2))
        if r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
    return buf


class PtyTop:
    """`hookd top` on a pseudo-terminal with TERM=term; killed at the end
    if it is still running."""

    def __init__(self, d, term):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.environ["TERM"] = term
            os.environ.pop("HOOKD_SOCKET", None)
            os.execv(HOOKD_BIN, [HOOKD_BIN, "top", "-s", str(d.sock)])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.pid:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        os.close(self.fd)

    def read_until(self, want, timeout=10.0):
        return read_until(self.fd, want, timeout)

    def wait_exit(self, timeout=10.0):
        """Its exit status, reading what it still writes meanwhile."""
        deadline = time.monotonic() + timeout
        while True:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.pid = None
                return status
            assert time.monotonic() < deadline, "hookd top did not exit"
            try:
                os.read(self.fd, 65536)
            except OSError:
                pass
            time.sleep(0.02)


def test_full_screen_in_a_terminal_sorts_and_quits(hookd, receiver):
    rcv = receiver(200)
    d = hookd(endpoints={"zeta": {"url": rcv.url("/z")}, "alpha": {"url": rcv.url("/a")}})
    d.wait_status(d.enqueue("zeta", {"i": 1})["id"], "delivered")
    with PtyTop(d, "xterm") as t:
        fcntl.ioctl(t.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        os.kill(t.pid, signal.SIGWINCH)
        out = t.read_until(b"sort: 1-9,0")   # the first frame is drawn whole
        assert b"alpha" in out and b"zeta" in out and b"FAIL/s<" in out, out[-1500:]
        os.write(t.fd, b"1")   # sort by name
        t.read_until(b"NAME>")
        os.write(t.fd, b"r")   # and reverse it
        t.read_until(b"NAME<")
        os.write(t.fd, b"q")
        status = t.wait_exit()
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
