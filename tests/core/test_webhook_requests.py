"""The HTTP request of every webhook (`beamweaver_core.webhook_requests`): it connects to
the addresses the webhook URL rule checked, with the URL's host as the `Host` header and,
for https, as the name verified against the certificate; it resolves the name once and
never goes through a proxy. Found by review: urllib resolved the name again after the
check (DNS rebinding: public for the check, 127.0.0.1 for the connection) and sent the
request to whatever proxy the environment named, so the check did not hold for the
connection. Receivers are real local servers; only DNS is played by the test, for a name
whose answer changes (real DNS cannot be made to do that here)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.client import HTTPMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from beamweaver_core.webhook_requests import USER_AGENT, post

ROOT = Path(__file__).resolve().parents[2]
SECRET = "a-long-shared-webhook-secret"


class Receiver:
    """A local HTTP server: records each request as (path, headers, body), answers 204."""

    def __init__(self, address: str = "127.0.0.1", port: int = 0) -> None:
        self.requests: list[tuple[str, HTTPMessage, bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append((self.path, self.headers, body))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer((address, port), Handler)
        self.port = self.server.server_port

    def start(self) -> None:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def allow_local(settings: Any, port: int) -> None:
    """Let webhooks go to this machine, which the rule allows only when told: private
    addresses and the receiver's port."""
    settings.BEAMWEAVER = {
        **settings.BEAMWEAVER,
        "WEBHOOK_PRIVATE_ADDRESSES": True,
        "WEBHOOK_PORTS": [port],
    }


@pytest.fixture
def receiver(settings: Any) -> Iterator[Receiver]:
    """A receiver on 127.0.0.1, allowed (`allow_local`)."""
    hook = Receiver()
    hook.start()
    allow_local(settings, hook.port)
    yield hook
    hook.stop()


def send(url: str) -> int:
    return post(url, b'{"ok": true}', event="review.created", delivery="d-1", secret=SECRET)


def test_a_webhook_reaches_the_checked_address_under_the_url_s_host(receiver: Receiver) -> None:
    status = send(f"http://localhost:{receiver.port}/hook?source=test")

    assert status == 204
    [(path, headers, body)] = receiver.requests
    assert (path, body) == ("/hook?source=test", b'{"ok": true}')
    assert headers["Host"] == f"localhost:{receiver.port}"
    assert headers["User-Agent"] == USER_AGENT
    assert (headers["X-BeamWeaver-Event"], headers["X-BeamWeaver-Delivery"]) == (
        "review.created",
        "d-1",
    )


@pytest.fixture
def rebinding_dns(monkeypatch: pytest.MonkeyPatch) -> Callable[[list[str]], list[str]]:
    """The name `rebinding.example` answers each lookup with the next of the addresses
    given (the last one from then on), as a DNS server rebinding a name does; every other
    name is resolved as usual. Returns the list of the name's answers so far."""
    answered: list[str] = []
    real = socket.getaddrinfo

    def play(addresses: list[str]) -> list[str]:
        def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
            if host != "rebinding.example":
                return real(host, port, *args, **kwargs)
            address = addresses[min(len(answered), len(addresses) - 1)]
            answered.append(address)
            return real(address, port, *args, **kwargs)

        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
        return answered

    return play


def test_a_name_is_resolved_once_and_a_changed_answer_is_not_followed(
    receiver: Receiver, rebinding_dns: Callable[[list[str]], list[str]]
) -> None:
    """The first answer is the one checked and connected to: there is no second lookup,
    which would reach the other address."""
    elsewhere = Receiver("127.0.0.2", receiver.port)
    elsewhere.start()
    answered = rebinding_dns(["127.0.0.1", "127.0.0.2"])

    status = send(f"http://rebinding.example:{receiver.port}/hook")

    elsewhere.stop()
    assert (status, answered, elsewhere.requests) == (204, ["127.0.0.1"], [])
    [(_, headers, _)] = receiver.requests
    assert headers["Host"] == f"rebinding.example:{receiver.port}"


def test_a_name_that_does_not_resolve_is_a_network_failure(receiver: Receiver) -> None:
    with pytest.raises(OSError, match=r"^Webhook host 'hooks\.invalid' does not resolve\.$"):
        send(f"http://hooks.invalid:{receiver.port}/hook")


def test_an_answer_that_is_not_http_is_a_network_failure(settings: Any) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def answer_garbage() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")

    threading.Thread(target=answer_garbage, daemon=True).start()
    allow_local(settings, port)

    with listener, pytest.raises(OSError, match=r"^Webhook host '127\.0\.0\.1' did not answer"):
        send(f"http://127.0.0.1:{port}/hook")


def test_a_proxy_in_the_environment_is_not_used(receiver: Receiver) -> None:
    """In a process started with `http_proxy` set (urllib read it once, at import), the
    POST goes to the checked address; the proxy would resolve the name itself."""
    proxy = Receiver()
    proxy.start()
    env = {k: v for k, v in os.environ.items() if k.lower() not in {"no_proxy", "all_proxy"}}
    env.update(
        DJANGO_SETTINGS_MODULE="beamweaver_core.settings",
        PYTHONPATH=str(ROOT),
        BEAMWEAVER_WEBHOOK_PRIVATE_ADDRESSES="1",
        BEAMWEAVER_WEBHOOK_PORTS=str(receiver.port),
        http_proxy=f"http://127.0.0.1:{proxy.port}",
        HTTP_PROXY=f"http://127.0.0.1:{proxy.port}",
    )
    argv = [
        sys.executable,
        "-c",
        "import django; django.setup()\n"
        "from beamweaver_core.webhook_requests import post\n"
        f"print(post('http://127.0.0.1:{receiver.port}/hook', b'{{}}', event='e',"
        f" delivery='d', secret={SECRET!r}))\n",
    ]

    child = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)

    proxy.stop()
    assert (child.returncode, child.stdout, proxy.requests) == (0, "204\n", []), child.stderr
    assert [path for path, _, _ in receiver.requests] == ["/hook"]


@pytest.fixture
def tls_receiver(
    settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Receiver]:
    """A receiver on 127.0.0.1 over https, with a self-signed certificate for the name
    `localhost` only, which this process trusts (`SSL_CERT_FILE`)."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "1", "-subj", "/CN=localhost", "-addext",
         "subjectAltName=DNS:localhost", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=30,
    )  # fmt: skip
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    hook = Receiver()
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    hook.server.socket = tls.wrap_socket(hook.server.socket, server_side=True)
    hook.start()
    allow_local(settings, hook.port)
    yield hook
    hook.stop()


def test_https_verifies_the_url_s_host_while_connecting_to_the_checked_address(
    tls_receiver: Receiver,
) -> None:
    """`localhost` is connected to as 127.0.0.1, and its certificate is checked for the
    name `localhost` (sent in SNI); the same server reached as 127.0.0.1 is refused: the
    certificate does not name that address."""
    assert send(f"https://localhost:{tls_receiver.port}/hook") == 204
    [(_, headers, body)] = tls_receiver.requests
    assert (headers["Host"], json.loads(body)) == (f"localhost:{tls_receiver.port}", {"ok": True})

    with pytest.raises(ssl.SSLCertVerificationError, match="IP address mismatch"):
        send(f"https://127.0.0.1:{tls_receiver.port}/hook")
    assert len(tls_receiver.requests) == 1
