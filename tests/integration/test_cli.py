"""The hookd command line against a real daemon (HOOKD_BIN serve).

Self-contained: the module starts its own daemon in a temp dir so it does
not depend on fixture names from conftest.py.
"""
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

HOOKD = os.environ.get("HOOKD_BIN") or str(Path(__file__).resolve().parents[2] / "build" / "hookd")
ROOT = Path(__file__).resolve().parents[2]
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def clean_env():
    env = dict(os.environ)
    env.pop("HOOKD_SOCKET", None)
    env.pop("HOOKD_CONFIG", None)
    return env


def run(*args, input=None, timeout=30):
    return subprocess.run([HOOKD, *map(str, args)], input=input, capture_output=True,
                          text=True, timeout=timeout, env=clean_env())


def write_config(d):
    ini = d / "hookd.ini"
    ini.write_text(
        "[storage]\n"
        f"path = {d / 'hookd.db'}\n"
        "[server]\n"
        f"socket = {d / 'hookd.sock'}\n"
        "[delivery]\n"
        "allow_networks = 127.0.0.0/8\n"
        "[endpoint.a]\n"
        "url = http://127.0.0.1:9/hook\n"
        f"secret = {SECRET}\n"
    )
    return ini


@pytest.fixture(scope="module")
def cli_daemon(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    ini = write_config(d)
    sock = d / "hookd.sock"
    log = open(d / "hookd.log", "w")
    proc = subprocess.Popen([HOOKD, "serve", "-c", str(ini)], stdout=log, stderr=subprocess.STDOUT,
                            env=clean_env(), cwd=d)
    try:
        deadline = time.monotonic() + 15
        while not sock.exists():
            if proc.poll() is not None:
                pytest.fail("hookd exited with %d:\n%s" % (proc.returncode, (d / "hookd.log").read_text()))
            if time.monotonic() > deadline:
                pytest.fail("no control socket after 15s:\n" + (d / "hookd.log").read_text())
            time.sleep(0.05)
        yield {"dir": d, "ini": ini, "sock": sock}
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()


# ---- no daemon needed ----

def test_version():
    r = run("--version")
    assert r.returncode == 0
    want = (ROOT / "VERSION").read_text().strip() if (ROOT / "VERSION").exists() else None
    assert re.fullmatch(r"hookd \S+\n", r.stdout)
    if want:
        assert r.stdout == f"hookd {want}\n"
    assert run("version").stdout == r.stdout


def test_help():
    r = run("--help")
    assert r.returncode == 0
    assert "usage: hookd" in r.stdout
    for cmd in ("serve", "check-config", "ping", "send", "endpoints", "metrics"):
        assert cmd in r.stdout
    r = run("send", "--help")
    assert r.returncode == 0
    assert "usage: hookd send" in r.stdout and "--data" in r.stdout
    assert run("help", "get").returncode == 0


def test_unknown_command_and_option():
    r = run("frobnicate")
    assert r.returncode == 2
    assert "unknown command" in r.stderr and "usage:" in r.stderr
    r = run()
    assert r.returncode == 2 and "usage:" in r.stderr
    r = run("ping", "--bogus")
    assert r.returncode == 2 and "--bogus" in r.stderr


def test_check_config_good(tmp_path):
    ini = write_config(tmp_path)
    r = run("check-config", "-c", ini)
    assert r.returncode == 0, r.stderr
    assert "configuration OK" in r.stderr
    assert "[endpoint.a]" in r.stdout
    assert str(tmp_path / "hookd.sock") in r.stdout
    assert SECRET not in r.stdout and SECRET not in r.stderr
    r = run("check-config", "-c", ini, "--quiet")
    assert r.returncode == 0 and r.stdout == ""
    assert "configuration OK" in r.stderr


def test_check_config_bad(tmp_path):
    bad = tmp_path / "bad.ini"
    bad.write_text("[storage]\npath = x.db\n[server]\nno_such_key = 1\n")
    r = run("check-config", "-c", bad)
    assert r.returncode == 2
    assert f"{bad}:4" in r.stderr, r.stderr
    assert "configuration OK" not in r.stderr
    r = run("check-config", "-c", tmp_path / "missing.ini")
    assert r.returncode == 2
    assert "missing.ini" in r.stderr


def test_unreachable_socket(tmp_path):
    path = tmp_path / "nobody.sock"
    r = run("ping", "-s", path)
    assert r.returncode == 3
    assert str(path) in r.stderr
    assert "No such file" in r.stderr


def test_bad_payload_is_usage_error(tmp_path):
    # rejected before connecting, so no daemon needed
    r = run("send", "-s", tmp_path / "x.sock", "--endpoint", "a", "--data", "{not json")
    assert r.returncode == 2
    assert "JSON" in r.stderr


# ---- against the daemon ----

def test_ping(cli_daemon):
    r = run("ping", "-s", cli_daemon["sock"])
    assert r.returncode == 0, r.stderr
    assert re.fullmatch(r"pong \(hookd \S+\)\n", r.stdout)
    # the socket can also come from the config file
    r = run("ping", "-c", cli_daemon["ini"])
    assert r.returncode == 0, r.stderr
    r = run("ping", "--json", "-s", cli_daemon["sock"])
    assert json.loads(r.stdout)["pong"] is True


def test_send_data_then_get(cli_daemon):
    s = cli_daemon["sock"]
    r = run("send", "-s", s, "--endpoint", "a", "--event-id", "evt_cli_1",
              "--data", '{"order":12345678901234567890,"x":"y"}')
    assert r.returncode == 0, r.stderr
    m = re.fullmatch(r"queued id=(\d+) event_id=evt_cli_1\n", r.stdout)
    assert m, r.stdout
    mid = m.group(1)

    r = run("send", "-s", s, "--endpoint", "a", "--event-id", "evt_cli_1", "--data", '{"x":1}')
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"duplicate id={mid} event_id=evt_cli_1\n"

    r = run("get", "-s", s, mid)
    assert r.returncode == 0, r.stderr
    assert re.search(r"^event_id\s+evt_cli_1$", r.stdout, re.M)
    assert re.search(r"^endpoint\s+a$", r.stdout, re.M)

    r = run("get", "-s", s, mid, "--json")
    assert r.returncode == 0, r.stderr
    msg = json.loads(r.stdout)["message"]
    assert msg["id"] == int(mid)
    assert msg["payload_bytes"] == len('{"order":12345678901234567890,"x":"y"}')


def test_send_stdin(cli_daemon):
    payload = '{\n  "event": "lead",\n  "amount": 1.50\n}\n'
    r = run("send", "-s", cli_daemon["sock"], "--endpoint", "a", "--event-id", "evt_cli_stdin",
              input=payload)
    assert r.returncode == 0, r.stderr
    m = re.fullmatch(r"queued id=(\d+) event_id=evt_cli_stdin\n", r.stdout)
    assert m, r.stdout
    r = run("get", "-s", cli_daemon["sock"], m.group(1), "--json")
    # newlines between tokens became spaces; nothing else changed
    assert json.loads(r.stdout)["message"]["payload_bytes"] == len(payload.strip())


def test_daemon_error_exit_1(cli_daemon):
    r = run("send", "-s", cli_daemon["sock"], "--endpoint", "nosuch", "--data", "{}")
    assert r.returncode == 1
    assert "unknown_endpoint" in r.stderr
    r = run("get", "-s", cli_daemon["sock"], "999999999")
    assert r.returncode == 1
    assert r.stderr.startswith("hookd: ")


def test_stats_json(cli_daemon):
    r = run("stats", "--json", "-s", cli_daemon["sock"])
    assert r.returncode == 0, r.stderr
    reply = json.loads(r.stdout)
    assert reply["ok"] is True
    assert "pending" in reply["stats"]
    r = run("stats", "-s", cli_daemon["sock"])
    assert r.returncode == 0 and re.search(r"^pending\s+\d+$", r.stdout, re.M)


def test_endpoints(cli_daemon):
    r = run("endpoints", "-s", cli_daemon["sock"])
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["NAME", "STATE", "FAILS", "P50", "P95", "P99", "SAMPLES",
                                "PENDING", "RETRY", "INFLIGHT", "LIMIT", "DEAD", "STATUS", "TLS", "PROXY", "URL"]
    row = [l.split() for l in lines[1:] if l.split()[0] == "a"]
    assert row and row[0][-1] == "http://127.0.0.1:9/hook"
    # the adaptive concurrency limit: a whole number from 1 to the cap (64)
    # once the endpoint has a health row, "-" before
    limit = row[0][lines[0].split().index("LIMIT")]
    assert limit == "-" or 1 <= int(limit) <= 64, limit
    assert SECRET not in r.stdout


def test_client_needs_no_config_and_says_why(tmp_path):
    """Without -c or HOOKD_CONFIG a client reads no file and connects to the
    packaged socket; a config it cannot read is an error with the reason."""
    if not os.path.exists("/run/hookd/hookd.sock"):   # no packaged hookd running here
        r = run("ping", "--timeout", "1s")
        assert r.returncode == 3 and "/run/hookd/hookd.sock" in r.stderr, r.stderr
    ini = tmp_path / "hookd.ini"
    ini.write_text("[server]\nsocket = %s\n" % (tmp_path / "s.sock"))
    os.chmod(ini, 0)
    if os.geteuid() == 0:
        pw = __import__("pwd").getpwnam("nobody")
        p = subprocess.run([HOOKD, "ping", "-c", str(ini)], capture_output=True, text=True, timeout=30,
                           env=clean_env(), user=pw.pw_uid, group=pw.pw_gid, extra_groups=[], cwd="/")
    else:
        p = run("ping", "-c", ini)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert "cannot open: Permission denied" in p.stderr and "need no config" in p.stderr, p.stderr
    # the daemon's own config error says why too
    missing = run("check-config", "-c", tmp_path / "missing.ini")
    assert "cannot open: No such file or directory" in missing.stderr, missing.stderr
