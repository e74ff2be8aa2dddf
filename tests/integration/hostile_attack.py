#!/usr/bin/env python3
"""Hostile and well-behaved local clients of hookd's control socket, run
by tests/integration/test_hostile_clients.py as other users (it starts
this script with subprocess user=/group=, as root).

    hostile_attack.py attack SOCKET SECONDS [--idle N] [--half N] [--half-bytes B]
                      [--pipe N] [--worst N] [--reconnect]
    hostile_attack.py good SOCKET SECONDS --endpoint NAME --prefix P [--interval S]

attack: N idle connections (connect, say nothing), N half-sent lines (B
bytes without a newline, then silence), N pipeliners (endpoint.list
requests written until the socket blocks, replies never read) and N
connections sending worst-case request lines (reading their replies),
for SECONDS. With --reconnect a connection the daemon refused or closed
is opened again (refused ones after 5 s, closed ones after 0.1 s), so the
pressure lasts (10,000 refused connections retried every second would be
a connection flood: what it costs is the kernel's and the scheduler's). One selector loop, no busy waiting; every loop is bounded
by the deadline. Prints one JSON object of counts at the end.

good: enqueues one event at a time (event ids PREFIX-0, PREFIX-1, ...),
waiting for each ack, every --interval seconds, for SECONDS. Prints the
acked event ids, the ack latencies and any error.

Standard library only."""
import argparse
import errno
import json
import os
import resource
import selectors
import socket
import sys
import time


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def worst_lines(size):
    """Request lines of about `size` bytes shaped to be slow to parse (the
    shapes of tests/bench/worstline.c)."""
    def fill(head, tail, item):
        parts, n, i = [head], len(head) + len(tail), 0
        while n + 64 < size:
            s = item(i)
            parts.append(s)
            n += len(s)
            i += 1
        parts.append(tail)
        return "".join(parts).encode()
    p40 = "p" * 40
    return [
        fill('{"op":"ping"', "}", lambda i: ',"m%d":0' % i),
        fill('{"a":0', ',"op":"ping"}', lambda i: ',"m%d":0' % i),
        fill('{"op":"ping"', "}", lambda i: ',"m":0'),
        fill('{"op":"ping"', "}", lambda i: ',"%s%d":0' % (p40, i)),
        fill('{"op":"endpoint.put","name":"x"', "}", lambda i: ',"m%d":0' % i),
        fill('{"op":"ping","x":[', "]}", lambda i: ",0" if i else "0"),
        fill('{"op":"ping","x":[', "]}", lambda i: ",{}" if i else "{}"),
        fill('{"op":"ping","x":"', '"}', lambda i: "\\u00e9"),
        fill('{"op":"ping","x":[', "]}", lambda i: ",[[[[[[[[[[1]]]]]]]]]]" if i else "[[[[[[[[[[1]]]]]]]]]]"),
    ]


class Conn:
    def __init__(self, kind):
        self.kind = kind
        self.sock = None
        self.out = b""          # what is still to be written
        self.wrote = 0
        self.inbuf = b""
        self.retry_at = 0.0
        self.line_i = 0


class Attack:
    def __init__(self, args):
        self.a = args
        self.sel = selectors.DefaultSelector()
        self.stats = {"connects": 0, "connect_failed": 0, "refused": 0, "refused_messages": {},
                      "closed_by_hookd": 0, "worst_replies": 0, "worst_codes": {}, "pipe_requests": 0,
                      "half_bytes": 0, "open_max": 0}   # open_max: as this side sees them
        self.open = 0
        self.lines = worst_lines(args.worst_bytes) if args.worst else []
        self.pipe_chunk = b'{"op":"endpoint.list"}\n' * 400
        # pipeliners, half-lines and worst lines first, then the idle crowd
        self.conns = ([Conn("pipe") for _ in range(args.pipe)] + [Conn("half") for _ in range(args.half)] +
                      [Conn("worst") for _ in range(args.worst)] + [Conn("idle") for _ in range(args.idle)])

    def connect(self, c):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect(self.a.socket)
        except (BlockingIOError, InterruptedError):
            pass   # in the backlog; completes when accepted
        except OSError:
            s.close()
            self.stats["connect_failed"] += 1
            c.retry_at = time.monotonic() + 1.0
            return
        self.stats["connects"] += 1
        c.sock, c.wrote, c.inbuf = s, 0, b""
        self.open += 1
        self.stats["open_max"] = max(self.stats["open_max"], self.open)
        if c.kind == "half":
            c.out = b'{"op":"ping","pad":"' + b"x" * max(0, self.a.half_bytes - 20)
        elif c.kind == "pipe":
            c.out = self.pipe_chunk
        elif c.kind == "worst":
            c.out = self.lines[c.line_i % len(self.lines)] + b"\n"
            c.line_i += 1
        else:
            c.out = b""
        self.register(c)

    def register(self, c):
        ev = selectors.EVENT_READ if c.kind != "pipe" else 0
        if c.out:
            ev |= selectors.EVENT_WRITE
        if not ev:
            ev = selectors.EVENT_WRITE   # a pipeliner waits to write more (or for its end)
        try:
            self.sel.modify(c.sock, ev, c)
        except KeyError:
            self.sel.register(c.sock, ev, c)

    def drop(self, c, refused_line=None):
        """hookd refused or closed c: count it, and maybe open it again."""
        try:
            self.sel.unregister(c.sock)
        except (KeyError, ValueError):
            pass
        c.sock.close()
        c.sock = None
        self.open -= 1
        if refused_line is not None:
            self.stats["refused"] += 1
            try:
                msg = json.loads(refused_line)["error"]["message"]
            except (ValueError, KeyError, TypeError):
                msg = refused_line[:80].decode("utf-8", "replace")
            self.stats["refused_messages"][msg] = self.stats["refused_messages"].get(msg, 0) + 1
            delay = 5.0
        else:
            self.stats["closed_by_hookd"] += 1
            delay = 0.1
        c.retry_at = time.monotonic() + delay if self.a.reconnect else float("inf")

    def on_read(self, c):
        try:
            data = c.sock.recv(1 << 16)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            busy = c.inbuf if b'"busy"' in c.inbuf else None
            self.drop(c, busy)
            return
        c.inbuf += data
        if c.kind == "worst":
            while b"\n" in c.inbuf:
                line, _, c.inbuf = c.inbuf.partition(b"\n")
                self.stats["worst_replies"] += 1
                try:
                    code = json.loads(line)["error"]["code"]
                except (ValueError, KeyError, TypeError):
                    code = "ok"
                self.stats["worst_codes"][code] = self.stats["worst_codes"].get(code, 0) + 1
                if code == "busy":
                    self.drop(c, line)
                    return
                c.out = self.lines[c.line_i % len(self.lines)] + b"\n"
                c.line_i += 1
                self.register(c)
        elif b"\n" in c.inbuf:
            # an idle or half-sent connection gets a line only when refused
            # (busy) or when its line is over-long; it closes after
            line = c.inbuf.split(b"\n", 1)[0]
            self.drop(c, line if b'"busy"' in line else None)

    def on_write(self, c):
        if not c.out and c.kind == "pipe":
            c.out = self.pipe_chunk
        try:
            n = c.sock.send(c.out)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            if e.errno in (errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN):
                self.drop(c, None)
                return
            raise
        if c.kind == "pipe":
            self.stats["pipe_requests"] += (c.wrote + n) // 23 - c.wrote // 23
        elif c.kind == "half":
            self.stats["half_bytes"] += n
        c.wrote += n
        c.out = c.out[n:]
        if not c.out and c.kind != "pipe":
            self.register(c)

    def run(self):
        raise_nofile()
        start = time.monotonic()
        deadline = start + self.a.seconds
        for c in self.conns:
            if time.monotonic() > deadline:
                break
            self.connect(c)
        while True:
            now = time.monotonic()
            if now >= deadline:
                break
            for key, ev in self.sel.select(timeout=min(0.1, deadline - now)):
                c = key.data
                if c.sock is None:
                    continue
                if ev & selectors.EVENT_READ:
                    self.on_read(c)
                if c.sock is not None and ev & selectors.EVENT_WRITE:
                    self.on_write(c)
            now = time.monotonic()
            for c in self.conns:
                if c.sock is None and c.retry_at <= now:
                    self.connect(c)
        self.stats["open_at_end"] = self.open
        self.stats["seconds"] = round(time.monotonic() - start, 2)
        ru = resource.getrusage(resource.RUSAGE_SELF)
        self.stats["cpu_s"] = round(ru.ru_utime + ru.ru_stime, 2)
        for c in self.conns:
            if c.sock is not None:
                c.sock.close()
        print(json.dumps(self.stats))


def good(args):
    """One enqueue at a time, each waiting for its ack."""
    lat, acked, errors = [], [], []
    deadline = time.monotonic() + args.seconds
    s, f = None, None
    i = 0
    while time.monotonic() < deadline and len(errors) < 50:
        t_next = time.monotonic() + args.interval
        eid = "%s-%d" % (args.prefix, i)
        req = json.dumps({"op": "enqueue", "endpoint": args.endpoint, "event_id": eid,
                          "payload": {"i": i, "who": args.prefix}}).encode() + b"\n"
        try:
            if s is None:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.settimeout(10)
                s.connect(args.socket)
                f = s.makefile("rb")
            t0 = time.monotonic()
            s.sendall(req)
            line = f.readline()
            dt = time.monotonic() - t0
            if not line:
                raise OSError("connection closed by hookd")
            r = json.loads(line)
            if r.get("ok"):
                acked.append(eid)
                lat.append(dt)
                i += 1
            else:
                errors.append(r.get("error"))
                if r.get("error", {}).get("code") == "busy":
                    s.close()
                    s = None
        except OSError as e:
            errors.append(str(e))
            if s is not None:
                s.close()
            s = None
        time.sleep(max(0.0, t_next - time.monotonic()))
    if s is not None:
        s.close()
    print(json.dumps({"acked": acked, "lat": lat, "errors": errors}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["attack", "good"])
    ap.add_argument("socket")
    ap.add_argument("seconds", type=float)
    ap.add_argument("--idle", type=int, default=0)
    ap.add_argument("--half", type=int, default=0)
    ap.add_argument("--half-bytes", type=int, default=1 << 20)
    ap.add_argument("--pipe", type=int, default=0)
    ap.add_argument("--worst", type=int, default=0)
    ap.add_argument("--worst-bytes", type=int, default=1 << 20)
    ap.add_argument("--reconnect", action="store_true")
    ap.add_argument("--endpoint", default="a")
    ap.add_argument("--prefix", default="good")
    ap.add_argument("--interval", type=float, default=0.01)
    a = ap.parse_args()
    if a.seconds <= 0 or a.seconds > 3600:
        sys.exit("seconds must be in (0, 3600]")
    if a.mode == "attack":
        Attack(a).run()
    else:
        good(a)


if __name__ == "__main__":
    main()
