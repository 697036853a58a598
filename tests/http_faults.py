"""An HTTP proxy on 127.0.0.1, in front of an S3-protocol server (moto), that answers a
share of the requests itself as a busy or failing S3 does: 503 SlowDown or 500
InternalError, with S3's XML error body; the others are forwarded as they came.

What every client of the product (s3a, boto3, pyarrow) must retry with backoff, as AWS
asks of its clients, without failing a run.
"""

from __future__ import annotations

import http.client
import random
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FAULTS = (
    (503, "SlowDown", "Please reduce your request rate."),
    (500, "InternalError", "We encountered an internal error. Please try again."),
)
# Hop-by-hop headers: the proxy's own business on each side, never forwarded.
_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"}


class FaultyS3Proxy:
    def __init__(self, target_port: int, share: float = 0.05, seed: int = 7):
        self.target_port = target_port
        self.share = share
        self.answered = Counter()  # status -> requests the proxy answered itself
        self.forwarded = 0
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FaultyS3Proxy:
        proxy = self

        class Handler(_Forwarding):
            owner = proxy

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def fault(self) -> tuple[int, str, str] | None:
        """The fault to answer the next request with, if any."""
        with self._lock:
            if self._random.random() >= self.share:
                self.forwarded += 1
                return None
            found = FAULTS[self._random.randrange(len(FAULTS))]
            self.answered[found[0]] += 1
            return found


class _Forwarding(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, and `Expect: 100-continue` answered
    owner: FaultyS3Proxy

    def log_message(self, *args) -> None:
        pass

    @property
    def _chunked(self) -> bool:
        return self.headers.get("Transfer-Encoding", "").lower() == "chunked"

    def _body(self) -> bytes:
        """The request's body as it came: a chunked one (an SDK's aws-chunked upload, with
        its trailer) verbatim, framing included, so that it is forwarded unchanged."""
        if not self._chunked:
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))
        raw = []
        while True:
            line = self.rfile.readline()
            raw.append(line)
            size = int(line.split(b";")[0], 16)
            if size == 0:
                while True:  # the trailer, up to the empty line
                    trailer = self.rfile.readline()
                    raw.append(trailer)
                    if trailer in (b"\r\n", b"\n", b""):
                        return b"".join(raw)
            raw.append(self.rfile.read(size + 2))

    def _answer(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.send_response(status)
        head = self.command == "HEAD"  # its Content-Length is the object's, and it has no body
        for name, value in headers:
            if name.lower() not in _HOP and (head or name.lower() != "content-length"):
                self.send_header(name, value)
        if not head:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _handle(self) -> None:
        body = self._body()  # read whole, whatever the answer: the connection goes on
        fault = self.owner.fault()
        if fault is not None:
            status, code, message = fault
            xml = (
                f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code><Message>{message}</Message></Error>'
            )
            self._answer(status, [("Content-Type", "application/xml")], xml.encode())
            return
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP and k.lower() != "expect"}
        if self._chunked:
            headers["Transfer-Encoding"] = "chunked"  # the body carries its own framing
        else:
            headers["Content-Length"] = str(len(body))
        target = http.client.HTTPConnection("127.0.0.1", self.owner.target_port, timeout=60)
        try:
            target.request(self.command, self.path, body=body, headers=headers)
            answer = target.getresponse()
            content = answer.read()
            self._answer(answer.status, answer.getheaders(), content)
        finally:
            target.close()

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle
