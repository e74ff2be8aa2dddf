"""SSRF battery: every spelling of an internal address is refused at
connect time unless allow-listed, with the range named in last_error.

test_delivery.py already has 127.0.0.1, localhost, 127.0.0.2, 2130706433,
0x7f000001, 0.0.0.0 and [::ffff:7f00:1] by default, and 0.0.0.0 / [::1]
against allow_networks = 127.0.0.0/8. Here: 127.1, 0x7f.1, [::1],
[::ffff:127.0.0.1], localhost., 169.254.169.254, 10.0.0.1 (refused in the
open-socket callback, so no packet leaves), a 302 to an internal address,
and the same list against allow_networks = 127.0.0.0/8."""
import time

import pytest

from conftest import redirect, wait_until

DONE = ("delivered", "dead_letter")

LOOPBACK_SPELLINGS = ["127.1", "0x7f.1", "2130706433", "[::1]", "[::ffff:127.0.0.1]", "localhost", "localhost."]
NEVER_ALLOWED = [("169.254.169.254", "link-local"), ("10.0.0.1", "private"), ("[::ffff:169.254.169.254]", "link-local"),
                 ("[::ffff:10.0.0.1]", "private"), ("0xa9.0xfe.0xa9.0xfe", "link-local"), ("[fd00::1]", "unique-local")]


def assert_refused(d, mid, rng=None):
    row = d.wait_status(mid, "dead_letter", timeout=15)
    assert "SSRF" in (row["last_error"] or ""), row["last_error"]
    if rng:
        assert rng in row["last_error"], row["last_error"]
    assert row["attempt_count"] == 1 and row["last_status_code"] is None, row
    m = d.get(mid)
    assert [a["error_class"] for a in m["attempts"]] == ["ssrf_blocked"], m["attempts"]
    return row


@pytest.mark.parametrize("host", LOOPBACK_SPELLINGS)
def test_loopback_spellings_refused_by_default(hookd, receiver, host):
    rcv = receiver(200)
    d = hookd(endpoints={"a": {"url": "http://%s:%d/hook" % (host, rcv.port)}},
              sections={"delivery": {"allow_networks": None}})
    r = d.enqueue("a", {"x": 1})
    if host.endswith("."):
        # glibc does not match "localhost." against /etc/hosts: a DNS
        # failure (retried) is as good as a refusal, as long as nothing
        # is sent; where it resolves, the guard must refuse it
        row = d.wait_status(r["id"], DONE + ("failed", "pending"), timeout=15)
        wait_until(lambda: d.row(r["id"])["last_error"], 10)
        row = d.row(r["id"])
        assert "SSRF" in row["last_error"] or row["last_error"].startswith("dns"), row["last_error"]
    else:
        row = assert_refused(d, r["id"], "loopback")
    # refused at connect (hookd's own record says so): nothing was sent
    assert rcv.count() == 0, "request reached the receiver via %s" % host
    print("\n%s -> %s" % (host, row["last_error"]))


@pytest.mark.serial  # holds a wall-clock bound
@pytest.mark.parametrize("host,rng", NEVER_ALLOWED)
@pytest.mark.parametrize("allow", [None, "127.0.0.0/8"])
def test_internal_addresses_refused_before_connecting(hookd, host, rng, allow):
    """Refused in the open-socket callback: the attempt ends at once (no
    connect timeout elapses), class blocked, the range named."""
    d = hookd(endpoints={"a": {"url": "http://%s:80/latest/meta-data/" % host, "connect_timeout": "3s"}},
              sections={"delivery": {"allow_networks": allow, "connect_timeout": "3s"}})
    t0 = time.monotonic()
    r = d.enqueue("a", {"x": 1})
    row = assert_refused(d, r["id"], rng)
    took = time.monotonic() - t0
    m = d.get(r["id"])
    assert m["attempts"][0]["error_class"] == "ssrf_blocked", m["attempts"]
    assert took < 2.5, "refusal took %.1fs: it waited for a connect" % took


@pytest.mark.parametrize("host", ["127.1", "0x7f.1", "2130706433", "[::ffff:127.0.0.1]", "localhost"])
def test_allow_list_opens_loopback_spellings(hookd, receiver, host):
    """allow_networks = 127.0.0.0/8: every IPv4 loopback spelling (and its
    mapped IPv6 form) reaches the receiver."""
    rcv = receiver(200)
    d = hookd(endpoints={"a": {"url": "http://%s:%d/hook" % (host, rcv.port), "max_attempts": 1}})
    r = d.enqueue("a", {"x": 1})
    row = d.wait_status(r["id"], DONE, timeout=15)
    assert row["status"] == "delivered", row
    assert rcv.count() == 1


def test_allow_list_does_not_open_ipv6_loopback(hookd, receiver):
    rcv = receiver(200)
    d = hookd(endpoints={"a": {"url": "http://[::1]:%d/hook" % rcv.port, "max_attempts": 1}})
    r = d.enqueue("a", {"x": 1})
    assert_refused(d, r["id"], "loopback")


@pytest.mark.parametrize("target", ["http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/admin",
                                    "http://127.0.0.1:{port}/internal"])
def test_redirect_to_internal_address_is_not_followed(hookd, receiver, target):
    """A 302 to an internal address: dead letter at once with status 302
    (redirects are never followed), the target never contacted."""
    rcv = receiver()
    rcv.set(redirect(target.format(port=rcv.port)), "/hook")
    rcv.set(200, "/internal")
    d = hookd(endpoints={"a": {"url": rcv.url("/hook")}})
    r = d.enqueue("a", {"x": 1})
    row = d.wait_status(r["id"], "dead_letter", timeout=15)
    d.idle()
    assert row["last_status_code"] == 302 and row["attempt_count"] == 1, row
    assert rcv.count("/internal") == 0 and rcv.count("/hook") == 1
