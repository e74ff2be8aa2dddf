#!/usr/bin/env python3
"""putmany.py SOCKET N: create N postback endpoints at run time through
endpoint.put (pipelined, 200 outstanding), one per affiliate, each with a
URL template, a map and a secret. Prints key=value: put_n, put_s,
put_rate, errors. Standard library only."""
import json
import socket
import sys
import time


def main():
    path, n = sys.argv[1], int(sys.argv[2])
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    f = s.makefile("rwb")
    window, sent, got, errors = 200, 0, 0, 0
    t0 = time.monotonic()
    while got < n:
        while sent < n and sent - got < window:
            req = {"op": "endpoint.put", "name": "aff%06d" % sent, "method": "GET",
                   "url": "http://127.0.0.1:9/pb?subid={click_id}&payout={payout}&st={status}&aff=%d" % sent,
                   "map.status": "approved:1, rejected:2", "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                   "paused": True}
            f.write(json.dumps(req).encode() + b"\n")
            sent += 1
        f.flush()
        line = f.readline()
        if not line:
            print("error=connection_closed", file=sys.stderr)
            return 1
        got += 1
        if not json.loads(line).get("ok"):
            errors += 1
    dt = time.monotonic() - t0
    print("put_n=%d put_s=%.2f put_rate=%.0f errors=%d" % (n, dt, n / dt, errors))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
