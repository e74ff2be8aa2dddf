"""Endpoint secrets at rest: sealed with AES-256-GCM under [storage]
key_file (seal.h), so the bytes of a signing secret or a header value are
in no file hookd writes: the database, its -wal, a backup, an export.

- a fresh database: config and API endpoints, while running and stopped;
- a database an older hookd wrote (plain secrets): sealed at the next
  start, the old bytes gone from the files, deliveries still signed;
- the key file: made 0600 at first start; one readable by others, or a
  database sealed under another key, stops hookd with a reason;
- everything hookd writes is its owner's alone (umask 077).
"""
import os
import sqlite3
import stat

import pytest

from conftest import verify_signature, wait_until

S_CFG = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
S_API = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
HEADER = "Authorization: Bearer tok-9f8e7d6c5b4a"
NEEDLES = [S_CFG, S_API, S_CFG[6:], S_API[6:], "tok-9f8e7d6c5b4a"]

pytestmark = pytest.mark.sqlite_only("reads the SQLite files byte by byte")


def files_of(d):
    return [p for p in d.db.parent.iterdir() if p.name.startswith(d.db.name)]


def assert_nowhere(paths):
    for p in paths:
        data = p.read_bytes()
        for n in NEEDLES:
            assert n.encode() not in data, "%s holds %s" % (p, n)


def test_secrets_are_sealed_in_the_database_backup_and_export(hookd, receiver, tmp_path):
    rcv = receiver(200)
    d = hookd(endpoints={"cfg": {"url": rcv.url("/cfg"), "secret": S_CFG}})
    r = d.request({"op": "endpoint.put", "name": "api", "url": rcv.url("/api"), "secret": S_API,
                   "header": [HEADER]})
    assert r["ok"] is True, r
    key = d.db.parent / "secret.key"
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600
    # delivery still signs with the secret and sends the header
    assert d.request({"op": "enqueue", "endpoint": "api", "event_id": "e1", "payload": {"a": 1}})["ok"] is True
    wait_until(lambda: len(rcv.requests) >= 1, 15, msg="one delivery")
    req = rcv.requests[0]
    assert verify_signature(S_API, req.headers, req.body)
    assert req.headers.get("authorization") == "Bearer tok-9f8e7d6c5b4a"
    # while running: the database and its -wal
    assert any(p.name.endswith("-wal") for p in files_of(d))
    assert_nowhere(files_of(d))
    backup = tmp_path / "b.db"
    p = d.cli("backup", backup)
    assert p.returncode == 0, p.stderr
    d.stop()
    out = tmp_path / "x.ndjson"
    p = d.cli("export", out)
    assert p.returncode == 0, p.stderr
    assert_nowhere(files_of(d) + [backup, out])
    # everything hookd wrote is its owner's alone
    for f in files_of(d) + [backup, out, key]:
        assert stat.S_IMODE(os.stat(f).st_mode) & 0o077 == 0, (f, oct(os.stat(f).st_mode))
    # what is stored is the sealed form; the header's name stays readable
    db = sqlite3.connect(str(d.db))
    rows = dict(db.execute("SELECT name, secrets FROM endpoints").fetchall())
    hdr = db.execute("SELECT headers FROM endpoints WHERE name = 'api'").fetchone()[0]
    db.close()
    assert rows["api"].startswith('["enc1:') and rows["cfg"].startswith('["enc1:'), rows
    assert hdr.startswith('["Authorization:enc1:'), hdr
    # listing still counts the secrets and names the headers
    d.start()
    r = d.request({"op": "endpoint.list"})
    ep = [e for e in r["endpoints"] if e["name"] == "api"][0]
    assert ep["secrets"] == 1 and ep["headers"] == ["Authorization"], ep


def test_plain_secrets_of_an_older_version_are_sealed_at_start(hookd, receiver):
    rcv = receiver(200)
    d = hookd(endpoints={"cfg": {"url": rcv.url("/cfg"), "secret": S_CFG}})
    assert d.request({"op": "endpoint.put", "name": "api", "url": rcv.url("/api"), "secret": S_API,
                      "header": [HEADER]})["ok"] is True
    d.stop()
    # what an older hookd stored: the columns in plain text
    db = sqlite3.connect(str(d.db))
    db.execute("UPDATE endpoints SET secrets = ?, headers = ? WHERE name = 'api'",
               ('["%s"]' % S_API, '["%s"]' % HEADER))
    db.commit()
    db.close()
    assert any(S_API.encode() in p.read_bytes() for p in files_of(d))
    d.start()
    wait_until(lambda: "event=secrets_sealed" in d.log(), 10, msg="secrets_sealed logged")
    assert d.request({"op": "enqueue", "endpoint": "api", "event_id": "m1", "payload": {"b": 2}})["ok"] is True
    wait_until(lambda: len(rcv.requests) >= 1, 15, msg="one delivery")
    assert verify_signature(S_API, rcv.requests[0].headers, rcv.requests[0].body)
    assert rcv.requests[0].headers.get("authorization") == "Bearer tok-9f8e7d6c5b4a"
    d.stop()
    assert_nowhere(files_of(d))


def test_key_file_problems_stop_hookd_with_a_reason(hookd, tmp_path):
    d = hookd(endpoints={"cfg": {"url": "http://127.0.0.1:9/x", "secret": S_CFG}})
    d.stop()
    key = d.db.parent / "secret.key"
    os.chmod(key, 0o640)
    p = d.cli("check-config")  # the config is fine; serving is not
    assert p.returncode == 0, p.stderr
    with pytest.raises(AssertionError):
        d.start(timeout=5)
    assert "readable by others" in d.log(), d.log()
    # another key: the sealed rows cannot be opened, and hookd says why
    os.unlink(key)
    key.write_text("ab" * 32 + "\n")
    os.chmod(key, 0o600)
    with pytest.raises(AssertionError):
        d.start(timeout=5)
    assert "another key" in d.log(), d.log()
