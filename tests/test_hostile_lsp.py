"""Issue 10 item 8: the language server survives malformed framing and never blocks its event
loop on file I/O (a FIFO opened as a document). A raw stdio client, byte for byte."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest
from conftest import SCALE_100


class RawClient:
    """Speaks LSP over the server's stdio with hand-made frames; collects what comes back."""

    def __init__(self, cwd):
        self.proc = subprocess.Popen([sys.executable, "-m", "occlint", "server"], cwd=cwd,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.messages: list[dict] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
                if line in (b"\r\n", b"\n"):
                    break
            body = out.read(length)
            with self.lock:
                self.messages.append(json.loads(body))

    def raw(self, data: bytes):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: dict):
        body = json.dumps(message).encode()
        self.raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def request(self, id_, method, params=None):
        self.send({"jsonrpc": "2.0", "id": id_, "method": method, "params": params or {}})

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait_for(self, predicate, timeout=30.0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self.lock:
                for m in self.messages:
                    if predicate(m):
                        return m
            time.sleep(0.05)
        return None

    def response(self, id_, timeout=30.0):
        return self.wait_for(lambda m: m.get("id") == id_ and ("result" in m or "error" in m),
                             timeout)

    def close(self):
        try:
            self.request(999, "shutdown")
            self.response(999, timeout=5)
            self.notify("exit", {})
            self.proc.wait(timeout=3)
        except Exception:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def client(tmp_path):
    c = RawClient(tmp_path)
    c.request(1, "initialize", {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}})
    assert c.response(1, timeout=60), "no answer to initialize"
    c.notify("initialized", {})
    yield c
    c.close()


def _open(client, path, text):
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": path.as_uri(), "languageId": "cuda", "version": 1, "text": text}})


def _hover(client, id_, path):
    client.request(id_, "textDocument/hover", {"textDocument": {"uri": path.as_uri()},
                                               "position": {"line": 0, "character": 17}})


FRAMES = [
    b"Content-Length: abc\r\n\r\n",
    b"Content-Length: -5\r\n\r\n",
    b"Content-Length:\r\n\r\n",
    b"Content-Type: x\r\n\r\n",
    b"garbage without a header",
]


def test_malformed_framing_does_not_stop_the_server(client, tmp_path):
    path = tmp_path / "k.cu"
    path.write_text(SCALE_100)
    _open(client, path, SCALE_100)
    for n, frame in enumerate(FRAMES, 10):
        body = json.dumps({"jsonrpc": "2.0", "id": 5, "method": "textDocument/hover",
                           "params": {"textDocument": {"uri": path.as_uri()},
                                      "position": {"line": 0, "character": 0}}}).encode()
        client.raw(frame + body)
        _hover(client, n, path)
        assert client.response(n), f"the server stopped answering after {frame!r}"
    # a body that is not JSON, with a right length, is survived too
    client.raw(b"Content-Length: 5\r\n\r\n{oops")
    _hover(client, 3, path)
    assert client.response(3)


def test_a_fifo_document_never_blocks_the_loop(client, tmp_path):
    fifo = tmp_path / "pipe.cu"
    os.mkfifo(fifo)
    _open(client, fifo, SCALE_100)
    client.notify("textDocument/didSave", {"textDocument": {"uri": fifo.as_uri()}})
    real = tmp_path / "k.cu"
    real.write_text(SCALE_100)
    _open(client, real, SCALE_100)
    _hover(client, 2, real)
    assert client.response(2, timeout=30), "the event loop is blocked on the FIFO"
    diags = client.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                            and m["params"]["uri"] == real.as_uri(), timeout=30)
    assert diags and any(d["code"] == "OCC031" for d in diags["params"]["diagnostics"])


def test_a_fifo_config_never_blocks_the_loop(client, tmp_path):
    os.mkfifo(tmp_path / "occlint.toml")
    real = tmp_path / "k.cu"
    real.write_text(SCALE_100)
    _open(client, real, SCALE_100)
    _hover(client, 2, real)
    assert client.response(2, timeout=30), "the event loop is blocked on a FIFO config"
