#!/usr/bin/env python3
"""Enqueue events into hookd from Python (standard library only).

    hookd_client.py SOCKET ENDPOINT COUNT [PREFIX]

Sends COUNT events ({"i": n}) with event ids PREFIX-n, pipelined. Every
event carries its own event_id, so sending one again after a lost
connection is safe: hookd answers "duplicate": true and stores nothing.
Exit 0 when all are acknowledged, 1 on an error a retry cannot fix, 2
when hookd stayed unreachable for RETRY_FOR seconds.
"""
import json
import socket
import sys
import time

WINDOW = 100                 # requests written before reading their replies
RETRY_FOR = 30.0             # seconds without progress before giving up
RETRYABLE = {"storage_full", "storage_error", "storage_unavailable", "shutting_down", "busy"}


class Fatal(Exception):
    pass


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(30)
        s.connect(path)
    except OSError:
        s.close()
        raise
    return s, s.makefile("rb")


def send_window(conn, reqs):
    """Send reqs pipelined. Returns (replies, why): the replies read, in
    order, and why the rest are missing (None: none is)."""
    s, f = conn
    replies = []
    try:
        s.sendall(b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in reqs))
        for _ in reqs:
            line = f.readline()
            if not line:
                return replies, "hookd closed the connection"
            replies.append(json.loads(line))
    except OSError as e:                      # restarting, reset
        return replies, "connection: %s" % e
    return replies, None


def enqueue_all(path, endpoint, events):
    """events: list of (event_id, payload). Returns the number of duplicates."""
    todo, dups, delay, last_progress, conn = list(events), 0, 0.1, time.monotonic(), None
    while todo:
        replies, why = [], None
        try:
            conn = conn or connect(path)
        except OSError as e:                  # not running yet, or restarting
            why = "connect: %s" % e
        if conn:
            reqs = [{"op": "enqueue", "endpoint": endpoint, "event_id": e, "payload": p}
                    for e, p in todo[:WINDOW]]
            replies, why = send_window(conn, reqs)
        broken = why is not None              # a transport problem, not a refusal
        done, again = 0, []
        for (ev, r) in zip(todo, replies):
            if r.get("ok"):
                dups += r.get("duplicate", False)
                done += 1
                continue
            code = r["error"]["code"]
            if code not in RETRYABLE:
                raise Fatal("%s: %s" % (code, r["error"]["message"]))
            again.append(ev)                  # refused, not stored: send again
            why = why or code
        todo = again + todo[len(replies):]    # and whatever got no reply
        if conn and broken:                   # start afresh
            conn[1].close()
            conn[0].close()
            conn = None
        if done:
            delay, last_progress = 0.1, time.monotonic()
        if why and todo:
            if time.monotonic() - last_progress > RETRY_FOR:
                raise TimeoutError("no progress for %.0f s (%s)" % (RETRY_FOR, why))
            print("retrying in %.1f s: %s" % (delay, why), file=sys.stderr, flush=True)
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
    if conn:
        conn[1].close()
        conn[0].close()
    return dups


def main(argv):
    path, endpoint, count = argv[1], argv[2], int(argv[3])
    prefix = argv[4] if len(argv) > 4 else "py"
    events = [("%s-%d" % (prefix, i), {"i": i}) for i in range(count)]
    try:
        dups = enqueue_all(path, endpoint, events)
    except Fatal as e:
        print("error %s" % e, file=sys.stderr)
        return 1
    except TimeoutError as e:
        print("error %s" % e, file=sys.stderr)
        return 2
    print("acked=%d duplicates=%d" % (count, dups))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
