"""The fake external tool service of the hostile cases: a tiny HTTP server on loopback
that applies "side effects" and counts them, honouring `Idempotency-Key` the way a
payment API does.

`POST /effects` with a JSON body `{"tool", "args", "thread"}`:

- with `Idempotency-Key: K`: the first request with K applies the effect and stores the
  answer; every later request with K gets the stored answer back (header
  `Idempotent-Replayed: true`) and applies nothing. Requests with one key are serialised,
  so two in flight at once still apply once.
- with `X-Effect-Key: K` (an at-most-once tool, which gets no de-duplication): every
  request applies the effect again, so a blind retry shows up as a count of 2.

`GET /effects` answers what happened: per key, `applied` (effects taken) and `requests`
(calls received), and the tool of each key. The tools reach it through
`bench.hostile.effects` (`BEAMWEAVER_EFFECTS=http://127.0.0.1:<port>`).

In a case's own process: `with ToolService() as service: ... service.applied()`. As a
process of its own (e.g. for the soak): `python -m bench.hostile.toolservice --port N`.
"""

from __future__ import annotations

import argparse
import json
import logging
import threading
import urllib.request
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

log = logging.getLogger(__name__)


class _Ledger:
    """What the service applied and received, per key (thread-safe)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.applied: Counter[str] = Counter()
        self.requests: Counter[str] = Counter()
        self.tools: dict[str, str] = {}
        self.answers: dict[str, dict[str, Any]] = {}

    def call(self, key: str, tool: str, idempotent: bool) -> tuple[dict[str, Any], bool]:
        """Apply (or replay) one call; the answer and whether it was a replay."""
        with self.lock:
            self.requests[key] += 1
            self.tools[key] = tool
            if idempotent and key in self.answers:
                return self.answers[key], True
            self.applied[key] += 1
            answer = {"result": f"{tool} done ({self.applied[key]})", "key": key}
            if idempotent:
                self.answers[key] = answer
            return answer, False

    def summary(self) -> dict[str, Any]:
        with self.lock:
            return {
                "applied": dict(self.applied),
                "requests": dict(self.requests),
                "tools": dict(self.tools),
            }


def _handler(ledger: _Ledger) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("toolservice: " + format, *args)

        def _answer(self, status: int, body: dict[str, Any], **headers: str) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name.replace("_", "-"), value)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.rstrip("/") != "/effects":
                self._answer(404, {"error": "not found"})
                return
            self._answer(200, ledger.summary())

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                self._answer(400, {"error": "body is not JSON"})
                return
            if self.path.rstrip("/") != "/effects":
                self._answer(404, {"error": "not found"})
                return
            idem = self.headers.get("Idempotency-Key")
            key = idem or self.headers.get("X-Effect-Key")
            if not key:
                self._answer(400, {"error": "Idempotency-Key or X-Effect-Key required"})
                return
            answer, replayed = ledger.call(key, str(body.get("tool", "?")), idem is not None)
            self._answer(200, answer, Idempotent_Replayed="true" if replayed else "false")

    return Handler


class ToolService:
    """The service on a thread of this process until `stop()` (port 0: any free one)."""

    def __init__(self, port: int = 0) -> None:
        self._ledger = _Ledger()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self._ledger))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="toolservice", daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> ToolService:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> ToolService:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def summary(self) -> dict[str, Any]:
        return self._ledger.summary()

    def applied(self) -> Counter[str]:
        """Effects taken per idempotency key (the ledger count of the checks)."""
        with self._ledger.lock:
            return Counter(self._ledger.applied)

    def requests(self) -> Counter[str]:
        with self._ledger.lock:
            return Counter(self._ledger.requests)


def fetch(url: str) -> dict[str, Any]:
    """`GET /effects` of a service running elsewhere."""
    with urllib.request.urlopen(url.rstrip("/") + "/effects", timeout=10) as response:
        return dict(json.loads(response.read()))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.hostile.toolservice")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    service = ToolService(args.port)
    log.info("tool service on %s", service.url)
    try:
        service._server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        service._server.server_close()


if __name__ == "__main__":
    main()


__all__ = ["ToolService", "fetch", "main"]
