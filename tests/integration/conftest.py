"""Shared fixtures for the hookd integration tests.

Everything here is stdlib only. The pieces:

  hookd       fixture factory: hookd(endpoints=..., sections=...) writes a
              config into a temp dir, starts `$HOOKD_BIN serve -c cfg`, waits
              for the control socket and returns a Daemon. Teardown sends
              SIGTERM and asserts exit status 0 (unless the test killed it).
  Client      a control-socket client: request(dict) -> dict, raw send/recv
              of lines, pipeline(list) -> list.
  receiver    fixture factory of Receiver: a threaded HTTP server on
              127.0.0.1 that records every request and answers as told
              (status, sequence, delay, hang, Retry-After, redirect, reset).
  wait_until  poll a predicate until it is truthy or a timeout passes.
  backends    HOOKD_TEST_BACKEND=postgres runs the daemons on PostgreSQL:
              a private cluster per test process (tests/pg/cluster.sh), a
              database per daemon, and Daemon.sql()/row() read it through
              views that show times as epoch milliseconds, as SQLite keeps
              them, so the same assertions hold. Tests marked sqlite_only
              (the file itself: locks, checks, damage) are skipped there.
  sign / verify_signature   Standard Webhooks signatures, computed in Python.
"""
import base64
import hashlib
import hmac
import http.server
import json
import os
import resource
import shutil
import signal
import socket
import sqlite3
import struct
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HOOKD_BIN = os.environ.get("HOOKD_BIN") or str(ROOT / "build" / "hookd")
BACKEND = os.environ.get("HOOKD_TEST_BACKEND", "sqlite")

SECRET_A = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SECRET_B = "whsec_" + base64.b64encode(b"a second, rotated signing key!!!").decode()


def raise_nofile(want=8192):
    """Raise RLIMIT_NOFILE (soft) for this process and the daemons it starts."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = want if hard == resource.RLIM_INFINITY else min(want, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


# ---------------------------------------------------------------- waiting

def wait_until(pred, timeout=10.0, interval=0.02, msg=None):
    """Call pred() until it returns something truthy; return that value.
    Fails the test (AssertionError) after timeout seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = pred()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise AssertionError("timed out after %.1fs waiting for %s (last value %r)"
                                 % (timeout, msg or getattr(pred, "__name__", "condition"), last))
        time.sleep(interval)


# ---------------------------------------------------------------- percentiles

def debian_tool(path, package):
    """Path of a tool a test needs from Debian (promtool, chromium): the
    test target installs it; a run as root installs it when missing;
    otherwise the test is skipped, saying which package."""
    if not os.path.exists(path) and shutil.which("apt-get") and os.geteuid() == 0:
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "install", "-y", "-q", "--no-install-recommends", package],
                       env=env, capture_output=True, timeout=900)
    if not os.path.exists(path):
        pytest.skip("%s (Debian package %s) is not installed and could not be installed" % (path, package))
    return path


def pct(values, p):
    """The p-th percentile (0..100) by linear interpolation between the
    closest ranks: PostgreSQL's percentile_cont(p / 100), which is what
    the seed design and hookd's rollup compute. NaN for no values."""
    v = sorted(values)
    if not v:
        return float("nan")
    k = (len(v) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


# ---------------------------------------------------------------- signatures

def sign(secret, msg_id, ts, body):
    """The Standard Webhooks v1 signature for one secret ("v1,<base64>")."""
    key = base64.b64decode(secret[len("whsec_"):] if secret.startswith("whsec_") else secret)
    if isinstance(body, str):
        body = body.encode()
    mac = hmac.new(key, b"%s.%s.%s" % (msg_id.encode(), str(ts).encode(), body), hashlib.sha256)
    return "v1," + base64.b64encode(mac.digest()).decode()


def verify_signature(secret, headers, body):
    """True if one of the space-separated webhook-signature entries is the
    HMAC of this request under `secret`."""
    msg_id = headers.get("webhook-id")
    ts = headers.get("webhook-timestamp")
    sig = headers.get("webhook-signature")
    if not (msg_id and ts and sig):
        return False
    want = sign(secret, msg_id, ts, body)
    return any(hmac.compare_digest(want, s) for s in sig.split(" "))


# ---------------------------------------------------------------- client

class ProtocolError(Exception):
    pass


class Client:
    """One connection to the control socket. Lines are bytes on the wire;
    request()/pipeline() speak dicts."""

    def __init__(self, path, timeout=10.0):
        self.path = str(path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(self.path)
        self.buf = b""

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def settimeout(self, t):
        self.sock.settimeout(t)

    # raw
    def send(self, data):
        if isinstance(data, str):
            data = data.encode()
        self.sock.sendall(data)

    def send_line(self, data):
        if isinstance(data, str):
            data = data.encode()
        self.send(data + b"\n")

    def recv_line(self):
        """One reply line (bytes, without the newline). Raises EOFError if
        the daemon closed the connection."""
        while b"\n" not in self.buf:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise EOFError("connection closed by hookd; buffered %r" % self.buf[:200])
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line

    def recv_json(self):
        line = self.recv_line()
        try:
            return json.loads(line)
        except ValueError as e:
            raise ProtocolError("reply is not JSON: %r" % line[:300]) from e

    def recv_lines(self, n):
        return [self.recv_line() for _ in range(n)]

    # dicts
    def request(self, obj):
        self.send_line(json.dumps(obj))
        return self.recv_json()

    def pipeline(self, objs):
        """Send every request in one write, then read as many replies."""
        self.send(b"".join(json.dumps(o).encode() + b"\n" for o in objs))
        return [self.recv_json() for _ in objs]

    # conveniences
    def ping(self):
        r = self.request({"op": "ping"})
        assert r.get("ok") is True and r.get("pong") is True, r
        return r

    def enqueue(self, endpoint=None, payload=None, event_id=None, event_type=None):
        req = {"op": "enqueue", "payload": payload if payload is not None else {"n": 1}}
        if endpoint is not None:
            req["endpoint"] = endpoint
        if event_id is not None:
            req["event_id"] = event_id
        if event_type is not None:
            req["event_type"] = event_type
        return self.request(req)

    def get(self, mid):
        return self.request({"op": "get", "id": mid})


def error_code(reply):
    assert reply.get("ok") is False, "expected an error reply, got %r" % (reply,)
    err = reply.get("error")
    assert isinstance(err, dict) and isinstance(err.get("code"), str) and isinstance(err.get("message"), str), reply
    return err["code"]


# ---------------------------------------------------------------- daemon

def _ini_value(v):
    if isinstance(v, bool):
        return "yes" if v else "no"
    return str(v)


def render_ini(sections):
    """sections: {name: {key: value | [values] | None}}. A list repeats the
    key; None leaves the key out."""
    out = []
    for name, kv in sections.items():
        out.append("[%s]" % name)
        for k, v in kv.items():
            if v is None:
                continue
            for one in (v if isinstance(v, (list, tuple)) else [v]):
                line = "%s = %s" % (k, _ini_value(one))
                # inih's lines stop at 199 bytes: a long value goes on
                # indented continuation lines, which hookd joins
                while len(line) > 120 and k in ("url", "ordering_key", "event_types"):
                    out.append(line[:120])
                    line = "    " + line[120:]
                out.append(line)
        out.append("")
    return "\n".join(out)


class Daemon:
    """A hookd process and its files. start()/stop()/kill()/restart()."""

    def __init__(self, workdir, sockdir, sections):
        self.dir = Path(workdir)
        self.sockdir = Path(sockdir)
        self.sections = sections
        self.cfg = self.dir / "hookd.ini"
        self.db = Path(sections["storage"]["path"])
        self.pg = (sections.get("postgres", {}).get("conninfo")
                   if sections["storage"].get("backend") == "postgres" else None)
        self._compat = False
        self.sock = Path(sections["server"]["socket"])
        self.proc = None
        self.killed = False
        self.runs = 0
        self.logs = []          # one stderr file per start
        self._logf = None
        self.write_config()

    # files
    def write_config(self, sections=None):
        if sections is not None:
            self.sections = sections
        self.cfg.write_text(render_ini(self.sections))

    @property
    def log_path(self):
        return self.logs[-1] if self.logs else None

    def log(self):
        """stderr of every run so far."""
        return "".join(p.read_text(errors="replace") for p in self.logs if p.exists())

    # process
    def start(self, wait=True, timeout=15.0):
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self.runs += 1
        path = self.dir / ("hookd.%d.log" % self.runs)
        self.logs.append(path)
        self._logf = open(path, "wb")
        self.killed = False
        self.proc = subprocess.Popen([HOOKD_BIN, "serve", "-c", str(self.cfg)], stdin=subprocess.DEVNULL,
                                     stdout=self._logf, stderr=self._logf, cwd=str(self.dir))
        if wait:
            self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout=15.0):
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise AssertionError("hookd exited with %s during start:\n%s" % (self.proc.returncode, self.log()))
            if self.sock.exists():
                try:
                    with Client(self.sock, timeout=5) as c:
                        c.ping()
                    return
                except (ConnectionRefusedError, FileNotFoundError):
                    pass
            if time.monotonic() > deadline:
                raise AssertionError("no control socket after %.0fs:\n%s" % (timeout, self.log()))
            time.sleep(0.02)

    @property
    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def _closelog(self):
        if self._logf:
            self._logf.close()
            self._logf = None

    def terminate(self, timeout=30.0):
        """SIGTERM and wait; returns the exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            self._closelog()
            raise AssertionError("hookd did not exit within %.0fs of SIGTERM:\n%s" % (timeout, self.log()))
        self._closelog()
        return rc

    def stop(self, timeout=30.0):
        """SIGTERM, wait, assert a clean exit (status 0)."""
        rc = self.terminate(timeout)
        assert rc == 0, "hookd exited with %s after SIGTERM:\n%s" % (rc, self.log()[-4000:])
        return rc

    def kill(self):
        """SIGKILL: the test takes responsibility for the exit status."""
        self.killed = True
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
        self._closelog()

    def restart(self):
        if self.running:
            self.stop()
        return self.start()

    def cli(self, *args, timeout=30):
        """`hookd ARGS -c cfg` -> CompletedProcess (text); the environment
        names no other socket or configuration."""
        env = dict(os.environ)
        env.pop("HOOKD_SOCKET", None)
        env.pop("HOOKD_CONFIG", None)
        return subprocess.run([HOOKD_BIN, *map(str, args), "-c", str(self.cfg)], capture_output=True, text=True,
                              timeout=timeout, env=env)

    # talking to it
    def client(self, timeout=10.0):
        return Client(self.sock, timeout=timeout)

    def request(self, obj):
        with self.client() as c:
            return c.request(obj)

    def enqueue(self, endpoint=None, payload=None, event_id=None, event_type=None):
        with self.client() as c:
            return c.enqueue(endpoint, payload, event_id, event_type)

    def get(self, mid):
        r = self.request({"op": "get", "id": mid})
        assert r.get("ok") is True, r
        return r["message"]

    def stats(self):
        r = self.request({"op": "stats"})
        assert r.get("ok") is True, r
        return r["stats"]

    def endpoints(self):
        """endpoint.list as {name: entry}."""
        r = self.request({"op": "endpoint.list"})
        assert r.get("ok") is True, r
        eps = r.get("endpoints")
        assert isinstance(eps, list), r
        return {e["name"]: e for e in eps}

    # the database, read-only from Python
    def sql(self, query, args=()):
        if self.pg:
            return self._pg_query(query, args)
        con = sqlite3.connect("file:%s?mode=ro" % self.db, uri=True, timeout=10)
        try:
            return con.execute(query, args).fetchall()
        finally:
            con.close()

    def row(self, mid):
        rows = self.sql_dicts("SELECT * FROM webhook_queue WHERE id = ?", (mid,))
        return rows[0] if rows else None

    def sql_dicts(self, query, args=()):
        """Rows as dicts (column name -> value), either backend."""
        if self.pg:
            return self._pg_query(query, args, as_dict=True)
        con = sqlite3.connect("file:%s?mode=ro" % self.db, uri=True, timeout=10)
        con.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in con.execute(query, args).fetchall()]
        finally:
            con.close()

    def rw_sql(self, query, args=()):
        """Change hookd's database from the test (backdating rows; hookd keeps
        running). On PostgreSQL the statement's `col = col +/- ms` becomes an
        interval on hookd's own table. Returns the rows changed."""
        if not self.pg:
            con = sqlite3.connect(str(self.db), timeout=10)
            try:
                with con:
                    return con.execute(query, args).rowcount
            finally:
                con.close()
        import re
        import psycopg2
        q = query.replace("UPDATE webhook_queue", "UPDATE public.hookd_queue")
        q = q.replace("UPDATE endpoint_latency", "UPDATE public.endpoint_latency")
        def interval(m):
            ms = m.group(3)
            if re.fullmatch(r"[0-9 *+-]+", ms):   # plain arithmetic: its value (no int4 overflow)
                ms = str(eval(ms))  # noqa: S307 - digits and operators only
            return "%s = %s %s %s::bigint * interval '1 millisecond'" % (m.group(1), m.group(1), m.group(2), ms)
        q = re.sub(r"(\w+) = \1 ([-+]) (.+?)(?=, \w+ = | WHERE)", interval, q)
        con = psycopg2.connect(self.pg)
        try:
            con.autocommit = True
            cur = con.cursor()
            cur.execute(q.replace("%", "%%").replace("?", "%s"), tuple(args))
            return cur.rowcount
        finally:
            con.close()

    def _pg_query(self, query, args=(), as_dict=False):
        """The test's SQLite query on PostgreSQL, through the compat views
        (times in epoch ms, payload as text); ? placeholders."""
        import psycopg2
        import psycopg2.extras
        con = psycopg2.connect(self.pg)
        try:
            con.autocommit = True
            cur = con.cursor(cursor_factory=psycopg2.extras.RealDictCursor if as_dict else None)
            if not self._compat:
                cur.execute(PG_COMPAT_VIEWS)
                self._compat = True
            cur.execute("SET search_path = compat, public")
            cur.execute(query.replace("%", "%%").replace("?", "%s"), tuple(args))
            rows = cur.fetchall() if cur.description else []
            return [dict(r) for r in rows] if as_dict else [tuple(r) for r in rows]
        finally:
            con.close()

    def status(self, mid):
        r = self.row(mid)
        return r and r["status"]

    def statuses(self):
        return dict(self.sql("SELECT status, count(*) FROM webhook_queue GROUP BY status"))

    def idle(self, timeout=10.0):
        """Wait until hookd has nothing left to send: no message pending,
        awaiting a retry or in flight (its own counts). A negative check
        ("no 4th attempt", "never sent") holds from then on, without
        sleeping for a guessed time."""
        def quiet():
            s = self.stats()
            return s["pending"] == 0 and s["awaiting_retry"] == 0 and s["in_flight"] == 0
        wait_until(quiet, timeout, msg="hookd idle (nothing pending, retrying or in flight)")

    def wait_status(self, mid, want, timeout=10.0):
        want = (want,) if isinstance(want, str) else tuple(want)
        wait_until(lambda: self.status(mid) in want, timeout, msg="message %s status in %s (log tail:\n%s)"
                   % (mid, want, self.log()[-1500:]))
        return self.row(mid)


# The SQLite tables as the tests know them (times in epoch milliseconds),
# over hookd's PostgreSQL schema: the tests' queries run unchanged.
PG_COMPAT_VIEWS = """
CREATE SCHEMA IF NOT EXISTS compat;
CREATE OR REPLACE FUNCTION compat.ms(t timestamptz) RETURNS bigint LANGUAGE sql IMMUTABLE
    AS $$ SELECT (extract(epoch FROM t) * 1000)::bigint $$;
CREATE OR REPLACE VIEW compat.webhook_queue AS SELECT id, endpoint_id, event_id, event_type,
    convert_from(payload, 'UTF8') AS payload, status, attempt_count, max_attempts,
    compat.ms(created_at) AS created_at, compat.ms(next_attempt_at) AS next_attempt_at,
    compat.ms(claimed_at) AS claimed_at, compat.ms(delivered_at) AS delivered_at, last_error,
    last_status_code, last_response_ms, last_error_class, ordering_key, compat.ms(deliver_at) AS deliver_at
    FROM public.hookd_queue;
CREATE OR REPLACE VIEW compat.endpoints AS SELECT id, name, url, secrets, headers, event_types, settings,
    source, paused, compat.ms(created_at) AS created_at, compat.ms(updated_at) AS updated_at, pause_reason
    FROM public.endpoints;
CREATE OR REPLACE VIEW compat.endpoint_health AS SELECT endpoint_id, endpoint_url, state,
    consecutive_failures, failure_threshold, compat.ms(last_failure_at) AS last_failure_at,
    compat.ms(last_success_at) AS last_success_at, compat.ms(opened_at) AS opened_at, cooldown_ms,
    p50_ms, p95_ms, p99_ms, sample_count, compat.ms(rolled_up_at) AS rolled_up_at,
    compat.ms(slow_since) AS slow_since, ring_next, concurrency_limit,
    compat.ms(failing_since) AS failing_since FROM public.endpoint_health;
CREATE OR REPLACE VIEW compat.delivery_attempts AS SELECT message_id, attempt, endpoint_id,
    compat.ms(at) AS at, response_ms, status_code, error_class, detail, method, url, response
    FROM public.delivery_attempts;
CREATE OR REPLACE VIEW compat.endpoint_latency AS SELECT endpoint_id, slot, message_id, response_ms,
    status_code, compat.ms(measured_at) AS measured_at FROM public.endpoint_latency;
CREATE OR REPLACE VIEW compat.endpoint_history AS SELECT endpoint_id, compat.ms(bucket_at) AS bucket_at,
    delivered, failed, breaker_opens, p50_ms, p95_ms, p99_ms, sample_count FROM public.endpoint_history;
"""

class PgCluster:
    """A private PostgreSQL cluster (tests/pg/cluster.sh): start(), down()
    and up() (a server restart, data kept), stop() (gone), new_db(name) ->
    conninfo, psql(db, sql) -> rows of text fields."""
    SCRIPT = str(ROOT / "tests" / "pg" / "cluster.sh")

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="hookd-pg.")
        self.conninfo = None
        self.n = 0

    def _run(self, action):
        out = subprocess.run([self.SCRIPT, action, self.dir], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, "cluster.sh %s: %s" % (action, out.stderr)
        return out.stdout.strip()

    def start(self):
        self.conninfo = self._run("start")

    def down(self):
        self._run("down")

    def up(self):
        self._run("up")

    def stop(self):
        subprocess.run([self.SCRIPT, "stop", self.dir], capture_output=True, timeout=120)

    def new_db(self, name):
        self.psql("postgres", "CREATE DATABASE %s" % name)
        return self.conninfo.replace("dbname=postgres", "dbname=%s" % name)

    def psql(self, db, sql):
        ci = self.conninfo.replace("dbname=postgres", "dbname=%s" % db)
        out = subprocess.run(["psql", ci, "-AtX", "-F", "|", "-v", "ON_ERROR_STOP=1", "-c", sql],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, "psql: %s\n%s" % (sql, out.stderr)
        return [line.split("|") for line in out.stdout.splitlines()]


_pg = []   # this process's cluster for HOOKD_TEST_BACKEND=postgres


@pytest.fixture(scope="module")
def pg_cluster():
    """A private cluster for one test module (tests/pg/cluster.sh)."""
    c = PgCluster()
    c.start()
    yield c
    c.stop()


@pytest.fixture
def pgdb(pg_cluster, request):
    """A fresh database on the module's cluster; returns (conninfo, sql)
    with sql(query) -> rows."""
    pg_cluster.n += 1
    name = "t%d_%d" % (os.getpid(), pg_cluster.n)
    return pg_cluster.new_db(name), (lambda q: pg_cluster.psql(name, q))


def pg_test_database():
    """A new database on this process's private cluster (started on first
    use, stopped at exit); returns its conninfo."""
    import atexit
    if not _pg:
        c = PgCluster()
        c.start()
        _pg.append(c)
        atexit.register(c.stop)
    c = _pg[0]
    c.n += 1
    return c.new_db("d%d_%d" % (os.getpid(), c.n))


def base_sections(workdir, sockdir):
    return {
        "storage": {"path": str(Path(workdir) / "hookd.db")},
        "server": {"socket": str(Path(sockdir) / "run" / "hookd.sock")},
        "delivery": {
            "allow_networks": "127.0.0.0/8",
            "base_delay": "50ms",
            "max_delay": "200ms",
            "timeout": "5s",
            "connect_timeout": "2s",
            "shutdown_grace": "5s",
        },
        "log": {"level": "info"},
    }


def merge_sections(base, extra):
    out = {k: dict(v) for k, v in base.items()}
    for name, kv in (extra or {}).items():
        out.setdefault(name, {}).update(kv)
    return out


@pytest.fixture
def hookd(tmp_path, request):
    """Factory: hookd(endpoints={"a": {"url": ...}}, sections={"delivery": {...}},
    start=True) -> Daemon. Keys set to None are removed from the config.
    The control socket lives in a short /tmp dir (sun_path is 108 bytes)
    that other users can traverse (the socket dir itself is hookd's: 0750)."""
    made = []

    def factory(endpoints=None, sections=None, start=True, name=None):
        workdir = tmp_path / (name or "hookd%d" % len(made))
        workdir.mkdir()
        sockdir = tempfile.mkdtemp(prefix="hk")
        os.chmod(sockdir, 0o755)
        secs = merge_sections(base_sections(workdir, sockdir), sections)
        if BACKEND == "postgres" and "backend" not in secs["storage"]:
            if request.node.get_closest_marker("sqlite_only"):
                pytest.skip("sqlite only: " + request.node.get_closest_marker("sqlite_only").args[0])
            secs["storage"]["backend"] = "postgres"
            secs.setdefault("postgres", {})["conninfo"] = pg_test_database()
        for ep, kv in (endpoints or {}).items():
            secs["endpoint." + ep] = dict(kv)
        d = Daemon(workdir, sockdir, secs)
        made.append(d)
        if start:
            d.start()
        return d

    yield factory

    problems = []
    for d in made:
        try:
            if d.proc is not None and not d.killed and d.proc.returncode is None:
                rc = d.terminate()
                if rc != 0:
                    problems.append("hookd in %s exited with %s after SIGTERM:\n%s" % (d.dir, rc, d.log()[-3000:]))
            elif d.proc is not None and d.running:
                d.kill()
        finally:
            shutil.rmtree(d.sockdir, ignore_errors=True)
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------- receiver

class Reply:
    """How the receiver answers one request.
    status: HTTP status; headers: extra headers; body: response body;
    delay: seconds to wait before answering; hang: never answer (until the
    receiver stops); reset: close the connection with a TCP RST, no reply."""

    def __init__(self, status=200, headers=None, body=b"ok", delay=0.0, hang=False, reset=False):
        self.status = status
        self.headers = dict(headers or {})
        self.body = body.encode() if isinstance(body, str) else body
        self.delay = delay
        self.hang = hang
        self.reset = reset

    def __repr__(self):
        return "Reply(%r)" % self.__dict__


def redirect(location, status=302):
    return Reply(status, {"Location": location}, b"")


def retry_after(value, status=429):
    return Reply(status, {"Retry-After": str(value)}, b"slow down")


HANG = Reply(hang=True)
RESET = Reply(reset=True)


class Sequence:
    """Answers in order; the last one repeats."""

    def __init__(self, *replies):
        assert replies
        self.replies = list(replies)
        self.i = 0
        self.lock = threading.Lock()

    def __call__(self, req):
        with self.lock:
            r = self.replies[min(self.i, len(self.replies) - 1)]
            self.i += 1
        return r


def _as_reply(v, req):
    if callable(v) and not isinstance(v, Reply):
        v = v(req)
    if isinstance(v, int):
        v = Reply(v)
    assert isinstance(v, Reply), v
    return v


class Request:
    """One request the receiver saw."""

    def __init__(self, method, path, headers, body, t_wall, t_mono, peer):
        self.method = method
        self.path = path
        self.headers = headers        # lower-cased names -> value (last wins)
        self.body = body
        self.t_wall = t_wall          # time.time() when the body was read
        self.t = t_mono               # time.monotonic() likewise
        self.peer = peer
        self.t_done = None            # monotonic time the answer was sent (None: not answered)
        self.reply = None
        self.line = None              # the raw request line, "GET /pb?x=1 HTTP/1.1"

    @property
    def event_id(self):
        return self.headers.get("webhook-id")

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return "<%s %s id=%s %d bytes>" % (self.method, self.path, self.event_id, len(self.body))


class Receiver:
    """Threaded HTTP receiver. Behaviour per path prefix (longest wins) or
    the default: an int status, a Reply, a Sequence, or a callable
    taking the Request and returning one of those. host: the address it
    listens on ("::1" for IPv6)."""

    def __init__(self, host="127.0.0.1"):
        self.host = host
        self.requests = []
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.default = 200
        self.routes = {}
        self.stopping = threading.Event()
        recv = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # headers and body are two writes: with Nagle the body waits for
            # the ACK of the headers, which hookd's side delays by 40 ms, and
            # every reply on a kept-alive connection takes 40 ms
            disable_nagle_algorithm = True

            def log_message(self, *a):
                pass

            def do_POST(self):
                recv._handle(self)

            do_PUT = do_GET = do_POST

        class Server(http.server.ThreadingHTTPServer):
            address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
            daemon_threads = True
            request_queue_size = 1024
            allow_reuse_address = True

            def handle_error(self, request, client_address):
                # hookd killed or timing out mid-request: expected here
                import sys
                if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
                    super().handle_error(request, client_address)

        self.server = Server((host, 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)
        self.thread.start()

    def url(self, path="/hook"):
        return "http://%s:%d%s" % ("[%s]" % self.host if ":" in self.host else self.host, self.port, path)

    def set(self, behaviour, path=None):
        """Set the answer for requests whose path starts with `path`
        (all requests when path is None)."""
        with self.lock:
            if path is None:
                self.default = behaviour
            else:
                self.routes[path] = behaviour

    def _behaviour(self, path):
        best = None
        for p in self.routes:
            if path.startswith(p) and (best is None or len(p) > len(best)):
                best = p
        return self.routes[best] if best is not None else self.default

    def _handle(self, h):
        n = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(n) if n else b""
        headers = {k.lower(): v for k, v in h.headers.items()}
        req = Request(h.command, h.path, headers, body, time.time(), time.monotonic(), h.client_address)
        req.line = h.requestline
        with self.lock:
            beh = self._behaviour(h.path)
        rep = _as_reply(beh, req)
        req.reply = rep
        with self.cond:
            self.requests.append(req)
            self.cond.notify_all()
        if rep.hang:
            self.stopping.wait(120)
            rep = Reply(reset=True)
        if rep.delay:
            self.stopping.wait(rep.delay)
        if rep.reset:
            try:
                h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                h.connection.close()
            except OSError:
                pass
            h.close_connection = True
            return
        # taken before the answer goes: once it is out the client may send
        # its next request, which another thread can record while this one
        # waits for the GIL (a late t_done showed 5 in flight to a cap of 4)
        t_done = time.monotonic()
        try:
            h.send_response(rep.status)
            for k, v in rep.headers.items():
                h.send_header(k, v)
            h.send_header("Content-Length", str(len(rep.body)))
            h.end_headers()
            h.wfile.write(rep.body)
            h.wfile.flush()
        except OSError:
            h.close_connection = True
            return
        req.t_done = t_done

    # inspection
    def snapshot(self, path=None):
        with self.lock:
            return [r for r in self.requests if path is None or r.path.startswith(path)]

    def count(self, path=None):
        return len(self.snapshot(path))

    def wait_for(self, n, timeout=10.0, path=None):
        """Wait until at least n requests arrived; return them."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                got = [r for r in self.requests if path is None or r.path.startswith(path)]
                if len(got) >= n:
                    return got
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("receiver: %d of %d requests after %.1fs" % (len(got), n, timeout))
                self.cond.wait(min(left, 0.1))

    def event_ids(self, path=None):
        return [r.event_id for r in self.snapshot(path)]

    def close(self):
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver(hookd):
    """Factory: receiver() -> Receiver (any number per test). Depends on
    `hookd` so receivers close (releasing hung requests) before daemons
    are stopped."""
    made = []

    def factory(behaviour=200, host="127.0.0.1"):
        r = Receiver(host)
        r.set(behaviour)
        made.append(r)
        return r

    yield factory
    for r in made:
        r.close()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# ---------------------------------------------------------------- whole-suite log scan
# (added with tests/integration/test_security_logs.py; self-contained: only
# wraps Daemon.start and Receiver._handle to remember what to look for)
#
# At the end of the session every stderr log of every daemon any test
# started is searched for: the test secrets (whsec_ text, base64 part,
# decoded key), signature-shaped text ("v1,<44 base64>"), every signature a
# receiver saw, and every payload string value of 8+ varied characters the
# tests enqueued. A hit fails the session (exit status 1) with the lines.
# HOOKD_LOG_SCAN=0 turns it off.

_scan_logs = []
_scan_sigs = set()
_scan_payload_strings = set()
_SCAN_SIG_RE = __import__("re").compile(r"v1,[A-Za-z0-9+/]{43}=")


def _scan_wrap():
    orig_start = Daemon.start

    def start(self, *a, **kw):
        try:
            return orig_start(self, *a, **kw)
        finally:
            if self.logs:
                _scan_logs.append(self.logs[-1])

    Daemon.start = start

    orig_handle = Receiver._handle

    def handle(self, h):
        sig = h.headers.get("webhook-signature")
        if sig:
            _scan_sigs.update(s for s in sig.split(" ") if s)
        return orig_handle(self, h)

    Receiver._handle = handle

    orig_send = Client.send

    def send(self, data):
        try:
            text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
            for line in text.split("\n"):
                if '"payload"' not in line or len(line) > 100000:
                    continue
                try:
                    obj = json.loads(line)
                except ValueError:
                    continue
                stack = [obj.get("payload")] if isinstance(obj, dict) else []
                while stack:
                    v = stack.pop()
                    if isinstance(v, dict):
                        stack.extend(v.values())
                    elif isinstance(v, list):
                        stack.extend(v)
                    elif isinstance(v, str) and 8 <= len(v) <= 4096 and len(set(v)) >= 5:
                        _scan_payload_strings.add(v)
        except Exception:  # noqa: BLE001 - bookkeeping must never break a test
            pass
        return orig_send(self, data)

    Client.send = send


if os.environ.get("HOOKD_LOG_SCAN", "1") != "0":
    _scan_wrap()


def pytest_configure(config):
    config.addinivalue_line("markers", "sqlite_only(why): a test of the SQLite file itself, skipped when "
                            "HOOKD_TEST_BACKEND=postgres runs the suites on PostgreSQL")
    config.addinivalue_line("markers", "serial: run alone, not beside other tests (a wall-clock bound, a "
                            "latency comparison or a heavy load); the Makefile runs these after the parallel rest")
    # every process of this run (the xdist workers too) leaves its scan
    # result in one directory; the process that reports reads them all
    if not hasattr(config, "workerinput"):
        os.environ["HOOKD_LOG_SCAN_DIR"] = tempfile.mkdtemp(prefix="hookd-logscan-")


def _scan_own_logs():
    """Search this process's daemons' logs; returns the result as a dict."""
    needles = {}
    for name, sec in (("SECRET_A", SECRET_A), ("SECRET_B", SECRET_B)):
        b64 = sec[len("whsec_"):]
        needles[name] = sec
        needles[name + " base64"] = b64
        needles[name + " key"] = base64.b64decode(b64).decode("latin-1")
    for s in _scan_sigs:
        needles["signature " + s[:12]] = s[3:]
    for p in _scan_payload_strings:
        needles["payload string %r" % p[:30]] = p
    # Every needle is indexed by its first K characters: a line is tested
    # only against the needles whose prefix occurs in it (a test run
    # enqueues 100,000+ payload strings; testing each against each line
    # took a minute).
    K = 8
    by_prefix, short = {}, []
    for n, v in needles.items():
        if len(v) >= K:
            by_prefix.setdefault(v[:K], []).append((n, v))
        else:
            short.append((n, v))
    hits = []
    nlines = 0
    for path in _scan_logs:
        try:
            text = Path(path).read_text(errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            nlines += 1
            cand = set(short)
            for i in range(len(line) - K + 1):
                cand.update(by_prefix.get(line[i:i + K], ()))
            found = sorted(n for n, v in cand if v in line)
            if _SCAN_SIG_RE.search(line):
                found.append("signature-shaped text")
            if found:
                hits.append("%s: %s: %s" % (path, ", ".join(found), line[:300]))
    return {"files": len(_scan_logs), "lines": nlines, "needles": len(needles), "sigs": len(_scan_sigs),
            "payloads": len(_scan_payload_strings), "hits": hits}


def pytest_sessionfinish(session, exitstatus):
    d = os.environ.get("HOOKD_LOG_SCAN_DIR")
    if os.environ.get("HOOKD_LOG_SCAN", "1") == "0" or not d:
        return
    if _scan_logs:
        with open(os.path.join(d, "scan-%d.json" % os.getpid()), "w") as f:
            json.dump(_scan_own_logs(), f)
    if hasattr(session.config, "workerinput"):
        return   # the controller reports for every worker
    total = {"files": 0, "lines": 0, "needles": 0, "sigs": 0, "payloads": 0, "hits": []}
    for name in sorted(os.listdir(d)):
        with open(os.path.join(d, name)) as f:
            r = json.load(f)
        for k in total:
            total[k] = total[k] + r[k]
    shutil.rmtree(d, ignore_errors=True)
    if not total["files"]:
        return
    hits = total["hits"]
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    msg = ("log scan: %d log files, %d lines, %d needles (secrets, %d signatures, %d payload strings): %s"
           % (total["files"], total["lines"], total["needles"], total["sigs"], total["payloads"],
              "clean" if not hits else "%d LEAKS" % len(hits)))
    if tr is not None:
        tr.write_line("")
        tr.write_line(msg, red=bool(hits), green=not hits)
        for h in hits[:50]:
            tr.write_line("  " + h, red=True)
    if hits:
        session.exitstatus = 1
