"""Affiliate postbacks against a receiver that records the raw request
line: URL templates in the three macro styles, GET/PUT/form requests,
success by status and by body, template_missing, attempt logs with masked
secrets (and nothing of them in the daemon's log), a macro in the host
refused, and per-key ordering with one key failing while others flow."""
import json
import os
import subprocess

from conftest import HOOKD_BIN, SECRET_A, Reply, Sequence, error_code, verify_signature, wait_until

DONE = ("delivered", "dead_letter")


def cli(d, *args):
    env = {k: v for k, v in os.environ.items() if k not in ("HOOKD_SOCKET", "HOOKD_CONFIG")}
    return subprocess.run([HOOKD_BIN, *args, "-c", str(d.cfg)], capture_output=True, text=True, timeout=30,
                          env=env)


def attempts(d, mid):
    r = d.request({"op": "attempts", "id": mid})
    assert r.get("ok") is True, r
    return r["attempts"]


def test_get_template_encoding_builtins_maps_raw(hookd, receiver):
    rcv = receiver(200)
    url = (rcv.url("/pb") + "?subid={click_id}&payout={payout}&st={status}&n={data.name}&sku={items.1.sku}"
           "&ok={flag}&miss={nothing}&nul={nul}&raw={code|raw}&ev={event_id}&t={event_type}&ep={endpoint}"
           "&a={attempt}")
    d = hookd(endpoints={"aff": {"url": url, "method": "GET", "map.status": "approved:1, rejected:2, pending:0",
                                 "secret": SECRET_A}})
    payload = ('{"click_id": "ab c/\u00e9?&=#", "payout": 12.50, "status": "approved", "flag": true, "nul": null,'
               ' "data": {"name": "x\\"y"}, "items": [{"sku": "s1"}, {"sku": 7e2}], "code": "A-1~b"}')
    with d.client() as c:
        c.send_line(('{"op":"enqueue","endpoint":"aff","event_id":"evt_1","event_type":"conv.ok",'
                     '"payload":%s}' % payload).encode())
        r = c.recv_json()
    assert r["ok"] is True, r
    req = rcv.wait_for(1)[0]
    assert req.line == ("GET /pb?subid=ab%20c%2F%C3%A9%3F%26%3D%23&payout=12.50&st=1&n=x%22y&sku=7e2&ok=true"
                        "&miss=&nul=&raw=A-1~b&ev=evt_1&t=conv.ok&ep=aff&a=1 HTTP/1.1"), req.line
    assert req.body == b"" and "content-type" not in req.headers
    # signed the Standard Webhooks way, over the empty body
    assert req.headers["webhook-id"] == "evt_1" and verify_signature(SECRET_A, req.headers, b"")
    assert d.wait_status(r["id"], "delivered")["attempt_count"] == 1


def test_cake_hashes_redtrack_brackets_and_secret_token(hookd, receiver):
    rcv = receiver(200)
    d = hookd(endpoints={
        "cake": {"url": rcv.url("/cake") + "?o=#offer_id#&r=#transaction_id#&tok=#secret#", "method": "GET",
                 "macro_style": "hashes", "secret": SECRET_A},
        "rt": {"url": rcv.url("/rt") + "/[CLICKID]?payout=[PAYOUT]&token=s3cr3tT0ken", "method": "GET",
               "macro_style": "brackets", "sign": "none"},
    })
    a = d.enqueue("cake", {"offer_id": 42, "transaction_id": "tx 9"})
    b = d.enqueue("rt", {"CLICKID": "c1", "PAYOUT": "3.5"})
    got = {r.path.split("?")[0].split("/")[1]: r for r in rcv.wait_for(2)}
    assert got["cake"].line == "GET /cake?o=42&r=tx%209&tok=" + SECRET_A + " HTTP/1.1"
    assert verify_signature(SECRET_A, got["cake"].headers, b"")
    assert got["rt"].line == "GET /rt/c1?payout=3.5&token=s3cr3tT0ken HTTP/1.1"
    assert not any(k.startswith("webhook-") for k in got["rt"].headers), got["rt"].headers
    for mid in (a["id"], b["id"]):
        d.wait_status(mid, "delivered")
    # the attempt log shows the URL with the secret and the token masked
    (ca,) = attempts(d, a["id"])
    assert ca["method"] == "GET" and ca["status_code"] == 200
    assert ca["url"] == rcv.url("/cake") + "?o=42&r=tx%209&tok=***"
    (ra,) = attempts(d, b["id"])
    assert ra["url"] == rcv.url("/rt") + "/c1?payout=3.5&token=***"
    out = cli(d, "attempts", str(a["id"]))
    assert out.returncode == 0 and "tok=***" in out.stdout and SECRET_A not in out.stdout, out
    out = cli(d, "get", str(b["id"]))
    assert out.returncode == 0 and "s3cr3tT0ken" not in out.stdout, out
    eps = d.endpoints()
    assert "s3cr3tT0ken" not in json.dumps(eps) and "token=***" in eps["rt"]["url"]
    log = d.log()
    assert SECRET_A[6:] not in log and "s3cr3tT0ken" not in log and "tx%209" not in log


def test_form_and_put_bodies(hookd, receiver):
    rcv = receiver(200)
    d = hookd(endpoints={
        "form": {"url": rcv.url("/form"), "body": "form", "secret": SECRET_A, "map.status": "approved:A"},
        "put": {"url": rcv.url("/put") + "/{id}", "method": "PUT"},
    })
    d.enqueue("form", {"click_id": "a b&c", "payout": 1.50, "status": "approved", "ok": False, "nil": None,
                       "o": {"k": [1]}})
    d.enqueue("put", {"id": "x1", "v": 1})
    got = {r.path.split("/")[1]: r for r in rcv.wait_for(2)}
    f = got["form"]
    assert f.line == "POST /form HTTP/1.1"
    assert f.headers["content-type"] == "application/x-www-form-urlencoded"
    assert f.body == b"click_id=a%20b%26c&payout=1.5&status=A&ok=false&nil=&o=%7B%22k%22%3A%20%5B1%5D%7D", f.body  # objects as written
    assert verify_signature(SECRET_A, f.headers, f.body)   # the signature covers the bytes sent
    p = got["put"]
    assert p.line == "PUT /put/x1 HTTP/1.1" and p.headers["content-type"] == "application/json"
    assert json.loads(p.body) == {"id": "x1", "v": 1}


def test_success_by_body_and_status(hookd, receiver):
    rcv = receiver(200)
    rcv.set(Sequence(Reply(200, body="success=false;"), Reply(200, body="success=true;")), path="/tune")
    rcv.set(302, path="/moved")
    rcv.set(201, path="/created")
    d = hookd(endpoints={
        "tune": {"url": rcv.url("/tune") + "?id={t}", "method": "GET", "success_body": "success=true"},
        "moved": {"url": rcv.url("/moved"), "success_status": "200,204,302"},
        "strict": {"url": rcv.url("/created"), "success_status": "200"},
    })
    t = d.enqueue("tune", {"t": 1})
    m = d.enqueue("moved", {"n": 1})
    s = d.enqueue("strict", {"n": 1})
    row = d.wait_status(t["id"], "delivered")
    assert row["attempt_count"] == 2
    first, second = attempts(d, t["id"])
    assert first["error_class"] == "body_mismatch" and first["status_code"] == 200
    assert first["response"] == "success=false;" and second["response"] == "success=true;"
    assert second["error_class"] == ""
    assert d.wait_status(m["id"], DONE)["status"] == "delivered"
    row = d.wait_status(s["id"], DONE)
    assert row["status"] == "dead_letter" and row["last_error_class"] == "http_201" and row["attempt_count"] == 1


def test_template_missing_dead_at_once_and_breaker_untouched(hookd, receiver):
    rcv = receiver(200)
    d = hookd(endpoints={"aff": {"url": rcv.url("/pb") + "?c={click_id}", "method": "GET",
                                 "on_missing": "fail", "failure_threshold": 2}})
    bad = [d.enqueue("aff", {"other": i})["id"] for i in range(3)]
    for mid in bad:
        row = d.wait_status(mid, DONE)
        assert row["status"] == "dead_letter" and row["last_error_class"] == "template_missing", row
        assert row["attempt_count"] == 1
        assert "click_id" in row["last_error"]
    (a,) = attempts(d, bad[0])
    assert a["error_class"] == "template_missing" and a["status_code"] is None and a["url"] is None
    assert rcv.count() == 0
    # three failures with a threshold of 2 did not open the breaker
    assert d.endpoints()["aff"]["state"] == "closed"
    good = d.enqueue("aff", {"click_id": "ok"})
    assert d.wait_status(good["id"], DONE)["status"] == "delivered"
    assert rcv.wait_for(1)[0].line == "GET /pb?c=ok HTTP/1.1"


def test_raw_value_with_blank_refused(hookd, receiver):
    rcv = receiver(200)
    d = hookd(endpoints={"aff": {"url": rcv.url("/pb") + "?c={click_id|raw}", "method": "GET"}})
    r = d.enqueue("aff", {"click_id": "a b"})
    row = d.wait_status(r["id"], DONE)
    assert row["status"] == "dead_letter" and row["last_error_class"] == "template_error", row
    assert rcv.count() == 0


def test_raw_value_with_url_syntax_refused_unless_allowed(hookd, receiver):
    """A raw value may not leave the template's path or add parameters:
    dead at once with template_unsafe, nothing sent. With raw_allow the
    value goes out, and the attempt log shows the URL curl requested
    (the dot segments it removed), masked."""
    rcv = receiver(200)
    d = hookd(endpoints={
        "aff": {"url": rcv.url("/pb") + "/{p|raw}?c={c|raw}", "method": "GET", "failure_threshold": 2},
        "open": {"url": rcv.url("/pb") + "/{p|raw}?c={c|raw}", "method": "GET", "raw_allow": "p, c"},
    })
    for p, c in (("../../admin/delete", "1"), ("x", "1&token=abc"), ("a%2F..", "1"), ("x", "a=b"), ("x", "q?#")):
        r = d.enqueue("aff", {"p": p, "c": c})
        row = d.wait_status(r["id"], DONE)
        assert row["status"] == "dead_letter" and row["last_error_class"] == "template_unsafe", row
        assert row["attempt_count"] == 1 and "raw_allow" in row["last_error"], row
        (a,) = attempts(d, r["id"])
        assert a["error_class"] == "template_unsafe" and a["url"] is None
    assert d.endpoints()["aff"]["state"] == "closed"   # never sent: says nothing of the endpoint
    ok = d.enqueue("aff", {"p": "v1.2", "c": "A-1~b"})
    assert d.wait_status(ok["id"], DONE)["status"] == "delivered"
    assert rcv.wait_for(1)[0].line == "GET /pb/v1.2?c=A-1~b HTTP/1.1"
    r = d.enqueue("open", {"p": "a/../../admin", "c": "1&token=abc"})
    assert d.wait_status(r["id"], DONE)["status"] == "delivered"
    assert rcv.wait_for(2)[1].line == "GET /admin?c=1&token=abc HTTP/1.1"
    (a,) = attempts(d, r["id"])
    assert a["url"] == rcv.url("/admin") + "?c=1&token=***", a


def test_response_excerpt_terminal_controls_escaped(hookd, receiver, tmp_path):
    """C1 controls (CSI, OSC) and bidi overrides from a receiver reach no
    terminal: escaped in the stored excerpt, in `hookd attempts` and its
    --json, whose class is said once."""
    body = "ok \u009b2J \u009d0;x\u0007 \u202eevil\u2066 \x1b[31m".encode()
    rcv = receiver(Reply(500, body=body))
    d = hookd(endpoints={"a": {"url": rcv.url("/x"), "max_attempts": 1}})
    r = d.enqueue("a", {"n": 1})
    d.wait_status(r["id"], DONE)
    (a,) = attempts(d, r["id"])
    assert a["response"] == "ok \\u009b2J \\u009d0;x\\x07 \\u202eevil\\u2066 \\x1b[31m", a["response"]
    bad = ["\x1b", "\x07", "\u009b", "\u009d", "\u202e", "\u2066"]
    for args in (["attempts", str(r["id"])], ["attempts", str(r["id"]), "--json"], ["get", str(r["id"])]):
        out = cli(d, *args)
        assert out.returncode == 0, out
        for ch in bad:
            assert ch not in out.stdout, (args, ch, out.stdout)
    assert "\\u202eevil" in cli(d, "attempts", str(r["id"])).stdout


def test_attempts_say_the_error_class_once(hookd):
    d = hookd(endpoints={"a": {"url": "http://127.0.0.1:1/x", "max_attempts": 1}})
    r = d.enqueue("a", {"n": 1})
    row = d.wait_status(r["id"], DONE)
    assert row["last_error"].startswith("connect_failed: "), row
    out = cli(d, "attempts", str(r["id"])).stdout
    assert "  error     connect_failed: " in out and "connect_failed: connect_failed" not in out, out
    out = cli(d, "get", str(r["id"])).stdout
    assert "connect_failed: connect_failed" not in out, out


def test_response_excerpt_capped_and_escaped(hookd, receiver):
    rcv = receiver(Reply(500, body=b"line1\nline2\t\x01" + b"z" * 3000))
    d = hookd(endpoints={"a": {"url": rcv.url("/x"), "max_attempts": 1}})
    r = d.enqueue("a", {"n": 1})
    d.wait_status(r["id"], DONE)
    (a,) = attempts(d, r["id"])
    assert a["response"].startswith("line1\\nline2\\t\\x01zzz"), a["response"][:40]
    assert len(a["response"]) == 1024 + 1 + 1 + 3   # 1 KiB of body; \\n \\t \\x01 widened
    assert a["method"] == "POST" and a["url"] == rcv.url("/x")


def test_macro_in_host_refused(hookd, receiver, tmp_path):
    d = hookd()
    for url, why in (("http://{host}.example.com/x", "position 8"), ("http://t.example:{port}/x", "position 18"),
                     ("http://t.example/x?a={b", "unterminated")):
        r = d.request({"op": "endpoint.put", "name": "bad", "url": url})
        assert error_code(r) == "bad_request" and why in r["error"]["message"], r
    r = d.request({"op": "endpoint.put", "name": "bad", "url": "http://t.example/x", "method": "GET",
                   "body": "form"})
    assert error_code(r) == "bad_request" and "body" in r["error"]["message"]
    r = d.request({"op": "endpoint.put", "name": "bad", "url": "http://t.example/x", "map.status": "a:1, b"})
    assert error_code(r) == "bad_request" and "map.status" in r["error"]["message"] and "position 5" in \
        r["error"]["message"], r
    # and at config load: check-config names the section and the key
    d.write_config({"endpoint.bad": {"url": "http://#h#.example/x", "macro_style": "hashes"}})
    out = cli(d, "check-config")
    assert out.returncode == 2 and "endpoint.bad" in out.stderr and "host" in out.stderr, out


def test_endpoint_put_round_trip_keeps_request_keys(hookd, receiver):
    rcv = receiver(200)
    d = hookd()
    r = d.request({"op": "endpoint.put", "name": "aff", "url": rcv.url("/pb") + "?c=#c#&s=#s#",
                   "macro_style": "hashes", "method": "GET", "map.s": "approved:1", "success_body": "OK",
                   "ordering_key": "#c#", "mask_params": "c"})
    assert r["ok"] is True, r
    rcv.set(Reply(200, body="OK"))
    e = d.endpoints()["aff"]
    assert e["settings"]["method"] == "GET" and e["settings"]["map.s"] == "approved:1"
    assert e["url"].endswith("?c=***&s=#s#")
    d.restart()   # read back from the database
    m = d.enqueue("aff", {"c": "z", "s": "approved"})
    assert d.wait_status(m["id"], DONE)["status"] == "delivered"
    assert rcv.wait_for(1)[0].line == "GET /pb?c=z&s=1 HTTP/1.1"
    assert attempts(d, m["id"])[0]["url"].endswith("?c=***&s=1")


def test_ordering_per_key_one_failing_key_does_not_block_others(hookd, receiver):
    rcv = receiver(200)
    # the first message of key A fails three times, then succeeds
    fails = {"n": 0}

    def answer(req):
        if "tx=A&seq=1" in req.path and fails["n"] < 3:
            fails["n"] += 1
            return 503
        return 200

    rcv.set(answer)
    d = hookd(endpoints={"aff": {"url": rcv.url("/pb") + "?tx={tx}&seq={seq}", "method": "GET",
                                 "ordering_key": "{tx}", "failure_threshold": 50}},
              sections={"delivery": {"base_delay": "150ms", "max_delay": "300ms"}})
    ids = {}
    with d.client() as c:
        for seq in (1, 2, 3):
            ids["A%d" % seq] = c.enqueue("aff", {"tx": "A", "seq": seq})["id"]
        for seq in range(1, 6):
            ids["B%d" % seq] = c.enqueue("aff", {"tx": "B", "seq": seq})["id"]
        ids["N"] = c.enqueue("aff", {"seq": 0})["id"]   # no key: not ordered
    for mid in ids.values():
        d.wait_status(mid, "delivered", timeout=20)
    reqs = rcv.snapshot()
    order = [(r.path.split("tx=")[1].split("&")[0], int(r.path.split("seq=")[1])) for r in reqs]
    a = [s for k, s in order if k == "A"]
    b = [s for k, s in order if k == "B"]
    assert a == [1, 1, 1, 1, 2, 3], order            # A2 waited for A1's four attempts
    assert b == [1, 2, 3, 4, 5], order
    # B was not held up by A's retries: all of B arrived before A1 succeeded
    a1_ok = max(i for i, (k, s) in enumerate(order) if (k, s) == ("A", 1))
    assert max(i for i, (k, s) in enumerate(order) if k == "B") < a1_ok, order
    # and each A message was attempted only after the one before was delivered
    d1 = d.row(ids["A1"])["delivered_at"]
    first_a2 = attempts(d, ids["A2"])[0]["at"]
    assert first_a2 >= d1


def test_ordering_dead_letter_releases_the_next(hookd, receiver):
    rcv = receiver(200)
    rcv.set(404, path="/pb?k=K&n=1")
    d = hookd(endpoints={"aff": {"url": rcv.url("/pb") + "?k={k}&n={n}", "method": "GET",
                                 "ordering_key": "{k}"}})
    one = d.enqueue("aff", {"k": "K", "n": 1})
    two = d.enqueue("aff", {"k": "K", "n": 2})
    assert d.wait_status(one["id"], DONE)["status"] == "dead_letter"
    assert d.wait_status(two["id"], DONE)["status"] == "delivered"
    assert [r.line for r in rcv.snapshot()] == ["GET /pb?k=K&n=1 HTTP/1.1", "GET /pb?k=K&n=2 HTTP/1.1"]


def test_credentials_in_urls_masked_for_readers(hookd, receiver):
    """Query parameters by name fragment and path credentials are masked
    in listings and attempt logs; the request itself carries them."""
    rcv = receiver(200)
    tok = "Zx81Kq02Lm93Np04Rs75Tu6v"
    url = rcv.url("/services/T01/B02/" + tok) + "?apiKey=K1&X-Auth-Token=K2&client_secret=K3&page=2"
    d = hookd(endpoints={"slack": {"url": url, "max_attempts": 1}})
    shown = rcv.url("/services/***/***/***") + "?apiKey=***&X-Auth-Token=***&client_secret=***&page=2"
    assert d.endpoints()["slack"]["url"] == shown
    r = d.enqueue("slack", {"n": 1})
    assert d.wait_status(r["id"], DONE)["status"] == "delivered"
    assert tok in rcv.wait_for(1)[0].line and "apiKey=K1" in rcv.wait_for(1)[0].line
    (a,) = attempts(d, r["id"])
    assert a["url"] == shown, a
    out = cli(d, "endpoints").stdout + cli(d, "attempts", str(r["id"])).stdout
    assert tok not in out and "K1" not in out and "K2" not in out and "K3" not in out, out
