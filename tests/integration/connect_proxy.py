"""A small HTTP CONNECT proxy for the tests: it records every request
line and its Proxy-Authorization header, relays the bytes of a tunnel,
and can be told to refuse (407, 403, 502...). Nothing but CONNECT is
served: a plain "GET http://..." is recorded and answered 405, so a test
sees it if hookd ever sends one.

Run standalone (python3 connect_proxy.py [PORT]) to watch what a client
asks for."""
import socket
import sys
import threading


class ConnectProxy:
    def __init__(self, host="127.0.0.1", refuse=None, require_auth=None):
        """refuse: a status answered to every CONNECT (None: tunnel).
        require_auth: the expected Proxy-Authorization value; anything
        else is answered 407."""
        self.lines = []        # every request line, in order
        self.auth = []         # the Proxy-Authorization values seen (None: absent)
        self.peers = []        # the client address of each request line
        self.refuse = refuse
        self.require_auth = require_auth
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        fam = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.socket(fam, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, 0))
        self.sock.listen(128)
        self.host = host
        self.port = self.sock.getsockname()[1]
        self.stopping = False
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def url(self, userinfo=""):
        h = "[%s]" % self.host if ":" in self.host else self.host
        return "http://%s%s:%d" % (userinfo + "@" if userinfo else "", h, self.port)

    def connects(self):
        with self.lock:
            return [l for l in self.lines if l.startswith("CONNECT ")]

    def stop(self):
        self.stopping = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)   # wakes the accept()
        except OSError:
            pass
        try:
            self.sock.close()
        except OSError:
            pass

    def _accept(self):
        while not self.stopping:
            try:
                c, peer = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c, peer[0]), daemon=True).start()

    def _head(self, c):
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = c.recv(4096)
            if not chunk:
                return None, b""
            data += chunk
            if len(data) > 65536:
                return None, b""
        head, rest = data.split(b"\r\n\r\n", 1)
        return head.decode("latin-1").split("\r\n"), rest

    def _serve(self, c, peer):
        try:
            lines, rest = self._head(c)
            if not lines:
                return
            auth = None
            for h in lines[1:]:
                k, _, v = h.partition(":")
                if k.strip().lower() == "proxy-authorization":
                    auth = v.strip()
            with self.cond:
                self.lines.append(lines[0])
                self.auth.append(auth)
                self.peers.append(peer)
                self.cond.notify_all()
            parts = lines[0].split()
            if len(parts) != 3 or parts[0] != "CONNECT":
                c.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            if self.refuse:
                c.sendall(b"HTTP/1.1 %d Refused\r\nContent-Length: 0\r\nConnection: close\r\n\r\n" % self.refuse)
                return
            if self.require_auth is not None and auth != self.require_auth:
                c.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                          b"Proxy-Authenticate: Basic realm=\"test\"\r\nContent-Length: 0\r\n\r\n")
                return
            host, _, port = parts[1].rpartition(":")
            host = host.strip("[]")
            try:
                up = socket.create_connection((host, int(port)), timeout=5)
            except (OSError, ValueError):
                c.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            up.settimeout(None)
            c.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            if rest:
                up.sendall(rest)
            t = threading.Thread(target=self._pipe, args=(up, c), daemon=True)
            t.start()
            self._pipe(c, up)
            t.join(30)
        except OSError:
            pass
        finally:
            c.close()

    @staticmethod
    def _pipe(a, b):
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    break
                b.sendall(d)
        except OSError:
            pass
        finally:
            try:
                b.shutdown(socket.SHUT_WR)
            except OSError:
                pass


if __name__ == "__main__":
    p = ConnectProxy()
    if len(sys.argv) > 1:
        p.stop()
    print("listening on", p.url(), flush=True)
    last = 0
    while True:
        with p.cond:
            p.cond.wait(1)
            for l, a in zip(p.lines[last:], p.auth[last:]):
                print(l, "auth=%s" % a, flush=True)
            last = len(p.lines)
