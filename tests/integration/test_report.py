"""`hookd report --html`: the history time series (one-second buckets
here) fills from real deliveries, failures, breaker openings and dead
letters; the page is self-contained (no script, no external reference)
and a real browser (Debian's chromium, headless) opens it without a
console message and draws every chart: the SVGs have a rendered size and
the screenshot holds the charts' colours."""
import os
import re
import struct
import subprocess
import zlib

import pytest

from conftest import Reply, debian_tool, wait_until
from test_health import cli, sections

CHROMIUM = "/usr/bin/chromium"


def chromium():
    return debian_tool(CHROMIUM, "chromium")


def headless(page, tmp_path, *extra):
    """Run headless chromium on a file; returns its stderr (the console
    messages are logged there as INFO:CONSOLE lines)."""
    home = tmp_path / "chromium-home"
    home.mkdir(exist_ok=True)
    p = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        "--disable-extensions", "--user-data-dir=%s" % home, "--enable-logging=stderr", "--v=0",
                        *extra, "file://%s" % page], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, HOME=str(home)))
    assert p.returncode == 0, p.stderr[-3000:]
    return p.stderr


def console_lines(stderr):
    return [l for l in stderr.splitlines() if ":CONSOLE" in l]


def png_pixels(path):
    """(width, height, rows of RGB(A) bytes) of an 8-bit, non-interlaced
    PNG, as chromium writes its screenshots."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = ihdr
    assert depth == 8 and interlace == 0 and ctype in (2, 6), ihdr
    bpp = 4 if ctype == 6 else 3
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(h):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def colour_counts(path, colours):
    w, h, bpp, rows = png_pixels(path)
    want = {bytes.fromhex(c.lstrip("#")): c for c in colours}
    out = dict.fromkeys(colours, 0)
    for row in rows:
        for x in range(0, w * bpp, bpp):
            c = want.get(row[x:x + 3])
            if c:
                out[c] += 1
    return out


@pytest.fixture
def busy_daemon(hookd, receiver):
    rcv = receiver(200)
    rcv.set(Reply(delay=0.02), "/slow")
    rcv.set(503, "/bad")
    rcv.set(500, "/dead")
    d = hookd(endpoints={"fast": {"url": rcv.url("/fast")},
                         "slow": {"url": rcv.url("/slow")},
                         "bad": {"url": rcv.url("/bad"), "failure_threshold": "2", "max_attempts": "3",
                                 "cooldown": "1h"},
                         "dead": {"url": rcv.url("/dead"), "max_attempts": "1"},
                         "quiet": {"url": rcv.url("/quiet")}},
              sections=sections({"history": {"bucket": "1s"},
                                 "latency": {"slow_p95": "10ms", "min_samples": "1"}}))
    ids = [d.enqueue("fast", {"i": i})["id"] for i in range(30)]
    ids += [d.enqueue("slow", {"i": i})["id"] for i in range(5)]
    ids += [d.enqueue("bad", {"i": i})["id"] for i in range(2)]
    ids += [d.enqueue("dead", {"i": i})["id"] for i in range(3)]
    for i in ids[:35] + ids[37:]:
        d.wait_status(i, ("delivered", "dead_letter"))
    wait_until(lambda: d.endpoints()["bad"]["state"] == "open", 10, msg="bad's breaker open")
    # the rollup wrote percentiles and the writer its counts into history
    wait_until(lambda: d.sql("SELECT count(*) FROM endpoint_history WHERE p95_ms IS NOT NULL AND "
                             "endpoint_id = (SELECT id FROM endpoints WHERE name = 'slow')")[0][0] > 0
               and d.sql("SELECT sum(delivered), sum(breaker_opens) FROM endpoint_history")[0] == (35, 1), 15,
               msg="history rows (%r)" % (d.sql("SELECT * FROM endpoint_history"),))
    return d


def test_history_and_report_page(busy_daemon, tmp_path):
    d = busy_daemon
    out = tmp_path / "report.html"
    p = cli(d, "report", "--html", out, "--since", "1h")
    assert p.returncode == 0, p.stderr
    assert "wrote %s" % out in p.stdout
    html = out.read_text()
    # self-contained: no script, no file or address to fetch
    assert "<script" not in html.lower()
    assert not re.search(r'\b(src|href)\s*=', html, re.I), re.findall(r'\b(?:src|href)\s*=\S+', html)
    assert not re.search(r'url\(', html), "css url() in the page"
    assert set(re.findall(r'https?://[^\s"\'<>]+', html)) <= {"http://www.w3.org/2000/svg"}
    for kind in ("hourly", "openings", "dead_letters", "latency"):
        assert 'data-chart="%s"' % kind in html, kind
    # the figures behind it
    assert html.count('data-chart="latency"') == 4   # fast, slow, bad, dead: the quiet one had no traffic
    assert "<h3>quiet</h3>" not in html and "<h3>slow</h3>" in html
    assert "http_500</text>" in html   # dead letters by class (bad's 503s wait behind its open breaker)
    assert re.search(r"<tr><td>slow</td><td>\d+ ms</td>", html), "slow endpoint table"
    assert "<title>1 opened</title>" in html             # bad's breaker on the timeline
    assert "<title>35 delivered</title>" in html          # all endpoints, this hour
    # bad input is refused before asking the daemon
    p = cli(d, "report", "--html", out, "--since", "10m")
    assert p.returncode == 2 and "--since" in p.stderr
    p = cli(d, "report")
    assert p.returncode == 2 and "--html" in p.stderr


def test_report_renders_in_headless_chromium(busy_daemon, tmp_path):
    d = busy_daemon
    page = tmp_path / "report.html"
    assert cli(d, "report", "--html", page).returncode == 0
    html = page.read_text()
    nsvg = html.count("<svg ")
    # the page as it is: no console message at all
    shot = tmp_path / "shot.png"
    err = headless(page, tmp_path, "--window-size=1000,5200", "--screenshot=%s" % shot)
    assert console_lines(err) == [], console_lines(err)
    # the charts drew: their colours are on the screenshot
    got = colour_counts(shot, ["#2ca02c", "#d62728", "#1f77b4", "#ff7f0e", "#9467bd"])
    assert got["#2ca02c"] > 500, got      # delivered bars
    assert got["#d62728"] > 200, got      # failures, dead letters, openings
    assert got["#ff7f0e"] > 30 and got["#1f77b4"] > 30 and got["#9467bd"] > 30, got   # percentile lines
    # and every SVG has a rendered size: the same page with a probe that
    # logs each chart's box (the report itself carries no script)
    probe = tmp_path / "probe.html"
    probe.write_text(html.replace("</body>", "<script>for (const s of document.querySelectorAll('svg')) {"
                                  "const r = s.getBoundingClientRect(); console.log('SVG ' + s.dataset.chart + "
                                  "' ' + Math.round(r.width) + ' ' + Math.round(r.height));}</script></body>"))
    err = headless(probe, tmp_path, "--window-size=1000,1000", "--dump-dom")
    boxes = [re.search(r'"SVG (\w+) (\d+) (\d+)"', l).groups() for l in console_lines(err) if '"SVG ' in l]
    assert len(boxes) == nsvg, (boxes, console_lines(err))
    assert all(int(w) >= 600 and int(h) >= 40 for _, w, h in boxes), boxes


def test_report_temp_file_never_follows_a_link(hookd, tmp_path):
    """FILE.tmp is created afresh (O_EXCL|O_NOFOLLOW), 0600: a link or file
    planted under that name in a shared directory gets nothing."""
    d = hookd(endpoints={"a": {"url": "http://127.0.0.1:9/x"}})
    out = tmp_path / "r.html"
    p = cli(d, "report", "--html", out)
    assert p.returncode == 0, p.stderr
    assert (os.stat(out).st_mode & 0o777) == 0o600
    assert not os.path.exists(str(out) + ".tmp")
    victim = tmp_path / "victim"
    victim.write_text("keep")
    os.symlink(victim, str(out) + ".tmp")
    before = out.read_text()
    p = cli(d, "report", "--html", out)
    assert p.returncode != 0 and "r.html.tmp" in p.stderr, (p.returncode, p.stderr)
    assert victim.read_text() == "keep" and out.read_text() == before
    assert os.path.islink(str(out) + ".tmp")   # not ours to remove
