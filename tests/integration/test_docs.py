"""Documentation that cannot drift.

Each test compares a document with the thing it documents, both read
fresh: the keys `hookd check-config` prints against hookd.ini(5) and
conf/hookd.ini; the error codes of include/proto.h against
hookd-protocol(7), whose ERRORS section is the one source of "retryable";
the client snippets' retry sets against it; the commands of `hookd help`
against hookd(8); the metric families of src/metrics.c and the log events
of src/ against hookd-protocol(7)'s catalogues. The README's tour is run
against a live hookd with a local receiver in place of its example
endpoint.
"""
import re
import shutil
import subprocess

import pytest

from conftest import HOOKD_BIN, ROOT, SECRET_A, verify_signature, wait_until

PKG = ROOT / "packaging"
MAN_INI = PKG / "hookd.ini.5"
MAN_8 = PKG / "hookd.8"
MAN_PROTO = PKG / "hookd-protocol.7"
CONF = ROOT / "conf" / "hookd.ini"
README = ROOT / "README.md"
MANPAGES = [MAN_8, MAN_INI, MAN_PROTO]


# ---------------------------------------------------------------- parsers

def man_sections(path):
    """{".SH title": [lines]} of a man page."""
    out, cur = {}, None
    for line in path.read_text().splitlines():
        if line.startswith(".SH "):
            cur = line[4:].strip().strip('"')
            out[cur] = []
        elif cur is not None:
            out[cur].append(line)
    return out


def man_tags(lines):
    """The names a section's .TP tags document: `.B name`, `.BR name " = ..."`
    and `.BR a ", " b ", " c` (continued with a backslash) give their
    leading words up to the first that is not a name."""
    names, i = [], 0
    while i < len(lines):
        if lines[i].strip() == ".TP" and i + 1 < len(lines):
            tag = lines[i + 1]
            j = i + 1
            while tag.endswith("\\") and j + 1 < len(lines):
                j += 1
                tag = tag[:-1] + lines[j]
            m = re.match(r'^\.(?:B|BR|BI)\s+(.*)$', tag)
            if m:
                rest = m.group(1).replace("\\-", "-").replace('\\fINAME\\fR', "NAME")
                toks = re.findall(r'"[^"]*"|\S+', rest)
                expect_name = True
                for t in toks:
                    if expect_name and re.fullmatch(r'[a-z][a-z0-9_.-]*(?:NAME)?', t.replace("map. ", "map.")):
                        names.append(t)
                        expect_name = False
                    elif t in ('", "', '","'):
                        expect_name = True
                    else:
                        break
            i = j
        i += 1
    # "map. NAME" is written as two tokens
    return ["map.NAME" if n == "map." else n for n in names]


def check_config_keys(cfg):
    """{section: [keys]} that `hookd check-config -c cfg` prints."""
    out = subprocess.run([HOOKD_BIN, "check-config", "-c", str(cfg)], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return ini_keys_text(out.stdout)


def ini_keys_text(text):
    keys, sec = {}, None
    for line in text.splitlines():
        s = line.strip()
        if not s or s[0] in ";#":
            continue
        m = re.match(r'^\[([^\]]+)\]', s)
        if m:
            sec = m.group(1)
            keys.setdefault(sec, [])
            continue
        m = re.match(r'^([A-Za-z0-9_.]+)\s*=', s)
        if m and sec is not None and line[0] not in " \t":
            keys[sec].append(m.group(1))
    return keys


def proto_codes():
    text = (ROOT / "include" / "proto.h").read_text()
    return set(re.findall(r'#define\s+PERR_\w+\s+"([a-z_]+)"', text))


def man_errors():
    """{code: retryable} from hookd-protocol(7)'s ERRORS section."""
    lines = man_sections(MAN_PROTO)["ERRORS"]
    out = {}
    for i, line in enumerate(lines):
        if line.strip() == ".TP" and i + 2 < len(lines):
            m = re.match(r'^\.B\s+([a-z_]+)$', lines[i + 1])
            r = re.match(r'^Retry: (yes|no)\.', lines[i + 2])
            if m:
                assert r, "hookd-protocol.7: %s has no 'Retry: yes|no.' line" % m.group(1)
                out[m.group(1)] = r.group(1) == "yes"
    return out


def client_retry_sets():
    c = ROOT / "tests" / "clients"
    sets = {}
    py = re.search(r'^RETRYABLE\s*=\s*\{([^}]*)\}', (c / "hookd_client.py").read_text(), re.M)
    sets["hookd_client.py"] = set(re.findall(r'"([a-z_]+)"', py.group(1)))
    js = re.search(r'RETRYABLE\s*=\s*new Set\(\[([^\]]*)\]', (c / "hookd_client.js").read_text())
    sets["hookd_client.js"] = set(re.findall(r"'([a-z_]+)'", js.group(1)))
    php = re.search(r'const RETRYABLE\s*=\s*\[([^\]]*)\]', (c / "hookd_client.php").read_text())
    sets["hookd_client.php"] = set(re.findall(r"'([a-z_]+)'", php.group(1)))
    sh = (c / "hookd_send.sh").read_text()
    case = re.search(r'^\s*3:\*(.*)\)\s*;;\s*$', sh, re.M)
    sets["hookd_send.sh"] = set(re.findall(r'1:\*([a-z_]+):\*', case.group(1)))
    return sets


def src_log_events():
    names = set()
    for f in sorted((ROOT / "src").glob("*.c")):
        text = f.read_text()
        for m in re.finditer(r'\blog_(?:info|warn|error|debug)\s*\(\s*([^;]*?)\s*,\s*"', text, re.S):
            names.update(re.findall(r'"([a-z][a-z0-9_]*)"', m.group(1)))
    return names


def src_metrics():
    text = (ROOT / "src" / "metrics.c").read_text()
    fams = set(re.findall(r'family\(\s*b\s*,\s*"(hookd_[a-z0-9_]+)"', text, re.S))
    named = set(re.findall(r'"(hookd_[a-z0-9_]+)', text))
    return fams | {n for n in named if not re.search(r'_(bucket|sum|count)$', n)}


def help_commands():
    out = subprocess.run([HOOKD_BIN, "help"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0
    text = out.stdout.split("commands:", 1)[1]
    return [m.group(1) for m in re.finditer(r'^  ([a-z][a-z0-9-]*)\s', text, re.M)]


# ---------------------------------------------------------------- config keys

def test_every_printed_key_is_in_the_man_page_and_the_shipped_file():
    printed = check_config_keys(CONF)
    man = {sec[1:-1]: man_tags(lines) for sec, lines in man_sections(MAN_INI).items() if sec.startswith("[")}
    shipped = ini_keys_text(CONF.read_text())
    missing_man = ["[%s] %s" % (s, k) for s, ks in printed.items() for k in ks if k not in man.get(s, [])]
    missing_conf = ["[%s] %s" % (s, k) for s, ks in printed.items() for k in ks if k not in shipped.get(s, [])]
    assert not missing_man, "keys check-config prints but hookd.ini(5) lacks: %s" % missing_man
    assert not missing_conf, "keys check-config prints but conf/hookd.ini lacks: %s" % missing_conf
    assert sum(len(v) for v in printed.values()) > 50   # the parse found them


def test_every_documented_key_is_known(tmp_path):
    printed = check_config_keys(CONF)
    sections = {sec[1:-1]: man_tags(lines) for sec, lines in man_sections(MAN_INI).items() if sec.startswith("[")}
    ep_keys = sections.pop("endpoint.\\fINAME\\fP", None) or sections.pop("endpoint.NAME")
    unknown = ["[%s] %s" % (s, k) for s, ks in sections.items() for k in ks if k not in printed.get(s, [])]
    assert not unknown, "hookd.ini(5) documents keys check-config does not know: %s" % unknown
    unknown_shipped = ["[%s] %s" % (s, k) for s, ks in ini_keys_text(CONF.read_text()).items()
                       for k in ks if k not in printed.get(s, [])]
    assert not unknown_shipped, "conf/hookd.ini sets keys check-config does not know: %s" % unknown_shipped
    # Endpoint keys are printed only when set: a known key given a nonsense
    # value is refused for its value, an unknown one as an unknown key.
    assert len(ep_keys) > 20, ep_keys
    cfg = tmp_path / "ep.ini"
    for k in ep_keys + ["no_such_key"]:
        key = "map.status" if k == "map.NAME" else k
        body = "[endpoint.a]\n" + ("" if key == "url" else "url = https://x.example/\n") + "%s = @@@\n" % key
        cfg.write_text(body)
        out = subprocess.run([HOOKD_BIN, "check-config", "-c", str(cfg)], capture_output=True, text=True,
                             timeout=30)
        known = "unknown key" not in out.stderr
        assert known == (k != "no_such_key"), "[endpoint.NAME] %s: %s" % (k, out.stderr.strip())


def check_config_defaults(cfg):
    """{(section, key): default} as `hookd check-config` prints it."""
    out = subprocess.run([HOOKD_BIN, "check-config", "-c", str(cfg)], capture_output=True, text=True, timeout=30)
    got, sec = {}, None
    for line in out.stdout.splitlines():
        m = re.match(r'^\[([^\]]+)\]', line)
        if m:
            sec = m.group(1)
            continue
        m = re.match(r'^([a-z_0-9]+) = .*\(default (.*)\)$', line)
        if m and sec:
            got[(sec, m.group(1))] = m.group(2)
    return got


# keys conf/hookd.ini sets to something other than the default on purpose
# (its header says every setting is listed with its default)
CONF_NOT_DEFAULT = set()


def test_documented_and_shipped_defaults_are_the_real_ones():
    """hookd.ini(5) writes a default as `(default " VALUE` (quoted when it
    has blanks) or says `(default: ...)` / `(default empty`; conf/hookd.ini
    sets every key to its default."""
    real = check_config_defaults(CONF)
    assert len(real) > 50
    wrong = []
    sec = None
    lines = MAN_INI.read_text().splitlines()
    for i, line in enumerate(lines[:-1]):
        if line.startswith(".SH ["):
            sec = line[5:-1]
        if line != ".TP" or sec is None:
            continue
        tag = lines[i + 1]
        k = re.match(r'^\.BR? ([a-z_0-9]+)\b', tag)
        if not k or (sec, k.group(1)) not in real:
            continue
        want = real[(sec, k.group(1))]
        m = re.search(r'\(default " (?:"([^"]*)"|(\S+?))(?: "|\s|\)|$)', tag)
        if m:
            doc = (m.group(1) if m.group(1) is not None else m.group(2)).replace("\\-", "-")
        elif re.search(r'\(default(:| empty)', tag):
            doc = want if want == "" or "host name" in tag else "<empty>"
        else:
            doc = "<none>"
        if doc != want:
            wrong.append("hookd.ini(5) [%s] %s: %r, check-config %r" % (sec, k.group(1), doc, want))
    shipped, sec = {}, None
    for line in CONF.read_text().splitlines():
        m = re.match(r'^\[([^\]]+)\]', line)
        if m:
            sec = m.group(1)
        m = re.match(r'^([a-z_0-9]+)\s*=\s*(.*?)\s*$', line)
        if m and sec:
            shipped[(sec, m.group(1))] = m.group(2)
    for key, want in real.items():
        if key in shipped and shipped[key] != want and key not in CONF_NOT_DEFAULT:
            wrong.append("conf/hookd.ini [%s] %s = %r, default %r" % (key[0], key[1], shipped[key], want))
    assert not wrong, "\n".join(wrong)


# ---------------------------------------------------------------- errors and clients

def test_every_error_code_is_documented_with_its_retry_rule():
    codes, man = proto_codes(), man_errors()
    assert len(codes) >= 15
    assert not codes - set(man), "error codes hookd-protocol(7) lacks: %s" % sorted(codes - set(man))
    assert not set(man) - codes, "hookd-protocol(7) documents codes proto.h lacks: %s" % sorted(set(man) - codes)


def test_client_snippets_retry_exactly_the_retryable_codes():
    retryable = {c for c, r in man_errors().items() if r}
    assert "storage_unavailable" in retryable and "bad_request" not in retryable
    for name, got in client_retry_sets().items():
        assert got == retryable, "%s retries %s; hookd-protocol(7) says %s" % (name, sorted(got), sorted(retryable))


# ---------------------------------------------------------------- commands, metrics, log events

def test_every_command_is_in_hookd_8():
    cmds = help_commands()
    assert len(cmds) > 20
    text = "\n".join(man_sections(MAN_8)["COMMANDS"]).replace("\\-", "-")
    tags = set(re.findall(r'^\.(?:B|BI|BR)\s+"?([a-z][a-z0-9-]*)', text, re.M))
    missing = [c for c in cmds if c not in tags]
    assert not missing, "commands hookd(8) lacks: %s" % missing


def test_every_metric_is_in_the_catalogue():
    metrics = src_metrics()
    assert len(metrics) >= 10
    doc = set(man_tags(man_sections(MAN_PROTO)["METRICS"]))
    assert not metrics - doc, "metrics hookd-protocol(7) lacks: %s" % sorted(metrics - doc)
    assert not doc - metrics, "hookd-protocol(7) documents metrics src/metrics.c lacks: %s" % sorted(doc - metrics)


def test_every_log_event_is_in_the_catalogue():
    events = src_log_events()
    assert len(events) > 50 and "breaker_transition" in events and "endpoint_added" in events
    doc = set(man_tags(man_sections(MAN_PROTO)["LOG EVENTS"]))
    assert not events - doc, "log events hookd-protocol(7) lacks: %s" % sorted(events - doc)
    assert not doc - events, "hookd-protocol(7) documents log events src/ lacks: %s" % sorted(doc - events)


# ---------------------------------------------------------------- the documents themselves

DOCS = [README, ROOT / "src" / "README.md", ROOT / "schema" / "README.md", ROOT / "tests" / "bench" / "README.md",
        ROOT / "tests" / "fault" / "README.md", PKG / "README.md"] + sorted((PKG / "doc").glob("*.md")) + MANPAGES


def test_documents_hold_no_dates_hashes_or_tracker_numbers():
    bad = []
    for p in DOCS:
        generated = False   # the table make bench writes may name its run
        for n, line in enumerate(p.read_text().splitlines(), 1):
            if "bench-table:" in line:
                generated = "bench-table:begin" in line
                continue
            if generated:
                continue
            for rx, what in ((r'\b20\d\d-[01]\d-[0-3]\d\b', "date"),
                             (r'\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b', "commit hash"),
                             (r'\b[Ii]ssues? #?\d+|(?<![\w&])#\d+\b', "tracker number"),
                             (r'\.\./shared', "../shared")):
                if re.search(rx, line):
                    bad.append("%s:%d: %s: %s" % (p.relative_to(ROOT), n, what, line.strip()[:100]))
    assert not bad, "\n".join(bad)


def test_readme_is_short_and_its_links_exist():
    assert README.stat().st_size <= 20 * 1024
    text = README.read_text()
    for target in re.findall(r'\]\(([^)#]+)(?:#[^)]*)?\)', text):
        if not target.startswith("http"):
            assert (ROOT / target).exists(), "README links to a missing %s" % target


@pytest.mark.parametrize("page", MANPAGES, ids=lambda p: p.name)
def test_man_pages_render_without_warnings(page, tmp_path):
    src = tmp_path / page.name
    src.write_text(page.read_text().replace("@VERSION@", "0.0.0").replace("@DATE@", "2000-01-01"))
    if not shutil.which("groff"):
        pytest.skip("groff is not installed")
    out = subprocess.run(["groff", "-ww", "-man", "-z", str(src)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and not out.stderr, out.stderr
    if shutil.which("mandoc"):
        out = subprocess.run(["mandoc", "-T", "lint", "-W", "warning", str(src)], capture_output=True, text=True,
                             timeout=60)
        assert not out.stdout.strip() and not out.stderr.strip(), out.stdout + out.stderr


# ---------------------------------------------------------------- the tour, run

def tour_commands():
    text = README.read_text()
    m = re.search(r'<!-- tour:begin -->(.*?)<!-- tour:end -->', text, re.S)
    assert m, "README has no tour markers"
    blocks = re.findall(r'```sh\n(.*?)```', m.group(1), re.S)
    cmds = []
    for b in blocks:
        for cmd in b.replace("\\\n", " ").splitlines():
            cmd = re.sub(r'\s+#.*$', "", cmd).strip()
            if cmd and not cmd.startswith("#"):
                cmds.append(cmd)
    return cmds


def test_readme_tour_delivers_against_a_local_receiver(hookd, receiver):
    rx = receiver(200)
    d = hookd()
    cmds = tour_commands()
    assert any("https://hooks.example.com/in" in c for c in cmds), cmds
    for cmd in cmds:
        cmd = (cmd.replace("build/hookd", HOOKD_BIN).replace("var/hookd.ini", str(d.cfg))
               .replace("https://hooks.example.com/in", rx.url()))
        out = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, "tour step failed: %s\n%s%s" % (cmd, out.stdout, out.stderr)
    got = rx.wait_for(1)
    assert got[0].body == b'{"click_id":"c_1","amount":42}'
    assert verify_signature(SECRET_A, got[0].headers, got[0].body)
    wait_until(lambda: d.request({"op": "get", "id": 1})["message"]["status"] == "delivered",
               msg="the tour's message delivered")


# ---------------------------------------------------------------- logs an operator can follow

def test_failing_endpoint_is_visible_at_the_default_level(hookd, receiver):
    rx = receiver(503)
    d = hookd(endpoints={"p": {"url": rx.url(), "max_attempts": "2"}},
              sections={"log": {"level": "info"}, "delivery": {"base_delay": "10ms", "max_delay": "20ms"}})
    d.request({"op": "enqueue", "endpoint": "p", "event_id": "e1", "payload": {"secret_field": "do-not-log-me-42"}})
    wait_until(lambda: "event=dead_letter" in d.log(), msg="a dead_letter line")
    log = d.log()
    first = [ln for ln in log.splitlines() if "event=endpoint_failing" in ln]
    assert len(first) == 1 and "endpoint=p" in first[0] and "error_class=http_503" in first[0], log
    assert "do-not-log-me-42" not in log
    rx.set(200)
    d.request({"op": "enqueue", "endpoint": "p", "event_id": "e2", "payload": {}})
    wait_until(lambda: "event=endpoint_delivering endpoint=p" in d.log(), msg="an endpoint_delivering line")
