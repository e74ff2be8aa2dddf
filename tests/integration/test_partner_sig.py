"""Partner signatures: the endpoint's own token and the hash macros
(md5, sha1, sha256, hmac_sha1, hmac_sha256) in the three macro styles,
each request verified by the partner's own code written from the networks'
documentation (partners/verify_postback.py and .php, the latter run by
php-cli); the token masked wherever hookd shows or logs, sealed at rest
and in exports; the hub scheme (X-Hub-Signature-256) verified with
Python's hmac, renamed by signature_header, and through a rotation."""
import base64
import os
import subprocess
import sys
from urllib.parse import urlsplit

from conftest import SECRET_A, SECRET_B, error_code

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "partners"))
import verify_postback  # noqa: E402

TOKEN = "p@rtner tok!9"
PAYLOAD = {"click_id": "c 42/\u00e9", "amount": 12.50, "status": "approved"}
PAYLOAD_JSON = '{"click_id": "c 42/\\u00e9", "amount": 12.50, "status": "approved"}'


def php_verifies(scheme, token, query, fields):
    p = subprocess.run(["php", os.path.join(HERE, "partners", "verify_postback.php"), scheme, token, query,
                        ",".join(fields)], capture_output=True, text=True, timeout=30)
    assert p.returncode in (0, 1), p.stderr
    return p.returncode == 0


def enqueue_raw(d, endpoint, event_id):
    with d.client() as c:
        c.send_line(('{"op":"enqueue","endpoint":"%s","event_id":"%s","event_type":"conv","payload":%s}'
                     % (endpoint, event_id, PAYLOAD_JSON)).encode())
        r = c.recv_json()
    assert r["ok"] is True, r
    return r["id"]


# endpoint -> (url query, macro style, scheme, fields the partner's doc lists)
CASES = {
    "braces": ("?click_id={click_id}&amount={amount}&sig={md5:click_id,token}", "braces", "md5",
               ["click_id", "@token"]),
    "hashes": ("?click_id=#click_id#&amount=#amount#&sig=#hmac_sha256:click_id,amount#", "hashes",
               "hmac_sha256", ["click_id", "amount"]),
    "brackets": ("?click_id=[click_id]&e=[event_id]&sig=[sha1:click_id,event_id,token]", "brackets", "sha1",
                 ["click_id", "e", "@token"]),
    "sha256": ("?click_id={click_id}&st={status}&sig={sha256:click_id,status}", "braces", "sha256",
               ["click_id", "st"]),
    "hsha1": ("?click_id={click_id}&amount={amount}&v={hmac_sha1:amount,click_id}&sig={hmac_sha1:click_id,amount}",
              "braces", "hmac_sha1", ["click_id", "amount"]),
}


def test_hash_macros_verified_by_partner_code(hookd, receiver, tmp_path):
    rcv = receiver(200)
    eps = {name: {"url": rcv.url("/" + name) + q, "macro_style": style, "method": "GET", "token": TOKEN}
           for name, (q, style, _, _) in CASES.items()}
    d = hookd(endpoints=eps)
    ids = {name: enqueue_raw(d, name, "evt_" + name) for name in CASES}
    got = {r.path.split("?")[0].lstrip("/"): r for r in rcv.wait_for(len(CASES))}
    for name, (_, _, scheme, fields) in CASES.items():
        query = urlsplit(got[name].path).query
        assert verify_postback.verify_query(scheme, TOKEN, query, fields), (name, query)
        assert php_verifies(scheme, TOKEN, query, fields), (name, query)
        # a wrong token or an altered value does not verify
        assert not verify_postback.verify_query(scheme, TOKEN + "x", query, fields) or "@token" not in fields \
            and not scheme.startswith("hmac"), name
        assert not php_verifies(scheme, TOKEN, query.replace("click_id=c", "click_id=d"), fields), name
        d.wait_status(ids[name], "delivered")
    # the attempt log masks every digest of the token (whatever the
    # parameter's name) and shows the others as sent
    a = d.request({"op": "attempts", "id": ids["hsha1"]})["attempts"][0]
    assert "&v=***&sig=***" in a["url"], a["url"]
    a = d.request({"op": "attempts", "id": ids["sha256"]})["attempts"][0]
    assert "st=approved&sig=***" in a["url"], a["url"]   # sig: a mask_params default
    # the token is nowhere hookd shows or logs
    listing = d.request({"op": "endpoint.list"})
    out = d.cli("check-config")
    assert out.returncode == 0 and "token = (hidden)" in out.stdout, out.stdout + out.stderr
    for text in (str(listing), out.stdout, d.log(), d.cli("attempts", str(ids["braces"])).stdout):
        assert TOKEN not in text and "tok!9" not in text
    # sealed at rest and in an export; an import brings it back
    d.stop()
    for p in d.db.parent.iterdir():
        if p.name.startswith(d.db.name):
            assert b"tok!9" not in p.read_bytes(), p
    x = tmp_path / "x.ndjson"
    assert d.cli("export", x).returncode == 0
    assert b"tok!9" not in x.read_bytes()
    d2 = hookd(start=False)
    d2.write_config()
    key = d2.db.parent / "secret.key"   # the export is sealed under d's key
    key.write_bytes((d.db.parent / "secret.key").read_bytes())
    os.chmod(key, 0o600)
    p = d2.cli("import", x)
    assert p.returncode == 0, p.stderr
    d2.start()
    rcv.requests.clear()
    enqueue_raw(d2, "braces", "evt_again")
    (req,) = rcv.wait_for(1)
    assert verify_postback.verify_query("md5", TOKEN, urlsplit(req.path).query, ["click_id", "@token"])


def test_bad_token_and_macros_refused(hookd):
    d = hookd()
    base = {"op": "endpoint.put", "name": "p", "method": "GET"}
    r = d.request(dict(base, url="http://t.example/pb?s={hmac_sha256:click_id}"))
    assert error_code(r) == "bad_request" and "token" in r["error"]["message"], r
    r = d.request(dict(base, url="http://t.example/pb?s={crc32:click_id}", token="t"))
    assert error_code(r) == "bad_request" and "unknown function at position 24" in r["error"]["message"], r
    r = d.request(dict(base, url="http://t.example/pb?s={md5:a,,b}", token="t"))
    assert error_code(r) == "bad_request" and "position" in r["error"]["message"], r
    r = d.request(dict(base, url="http://t.example/pb", token="bad\x01tok3n"))
    assert error_code(r) == "bad_request" and "tok3n" not in str(r), r
    r = d.request(dict(base, url="http://t.example/pb?s={hmac_sha1:a}", token="fine token"))
    assert r["ok"] is True, r


def hub_key(secret):
    return base64.b64decode(secret[len("whsec_"):])


def test_hub_scheme_verified_renamed_and_rotated(hookd, receiver):
    rcv = receiver(200)
    d = hookd(endpoints={
        "gh": {"url": rcv.url("/gh"), "sign": "hub", "secret": SECRET_A},
        "named": {"url": rcv.url("/named"), "sign": "hub", "secret": SECRET_A, "signature_header": "X-Signature"},
        "rot": {"url": rcv.url("/rot"), "sign": "hub", "secret": [SECRET_B, SECRET_A]},
    })
    for ep in ("gh", "named", "rot"):
        d.enqueue(ep, {"n": ep, "amount": 12.50})
    got = {r.path.lstrip("/"): r for r in rcv.wait_for(3)}
    gh = got["gh"]
    sig = gh.headers["x-hub-signature-256"]
    assert sig.startswith("sha256=") and len(sig) == 71 and "," not in sig
    assert verify_postback.verify_hub(hub_key(SECRET_A), gh.body, sig)
    assert not verify_postback.verify_hub(hub_key(SECRET_A), gh.body + b" ", sig)
    assert not any(k.startswith("webhook-") for k in gh.headers), gh.headers
    named = got["named"]
    assert "x-hub-signature-256" not in named.headers
    assert verify_postback.verify_hub(hub_key(SECRET_A), named.body, named.headers["x-signature"])
    # rotating: one value per secret, newest first; either secret verifies
    rot = got["rot"].headers["x-hub-signature-256"]
    assert len(rot.split(",")) == 2
    assert verify_postback.verify_hub(hub_key(SECRET_B), got["rot"].body, rot)
    assert verify_postback.verify_hub(hub_key(SECRET_A), got["rot"].body, rot)
    assert SECRET_A[6:] not in d.log()
    # refused: hub without a secret, a renamed header without hub, a
    # header hookd sets itself
    r = d.request({"op": "endpoint.put", "name": "x", "url": rcv.url("/x"), "sign": "hub"})
    assert error_code(r) == "bad_request" and "secret" in r["error"]["message"], r
    r = d.request({"op": "endpoint.put", "name": "x", "url": rcv.url("/x"), "signature_header": "X-Sig"})
    assert error_code(r) == "bad_request" and "sign = hub" in r["error"]["message"], r
    r = d.request({"op": "endpoint.put", "name": "x", "url": rcv.url("/x"), "sign": "hub", "secret": SECRET_A,
                   "signature_header": "Content-Type"})
    assert error_code(r) == "bad_request", r
    r = d.request({"op": "endpoint.put", "name": "x", "url": rcv.url("/x"), "sign": "rsa"})
    assert error_code(r) == "bad_request" and "standard, none, hub" in r["error"]["message"], r
