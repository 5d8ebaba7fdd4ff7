"""A headless Chromium driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`:
commands on fd 3, answers on fd 4, each a JSON message ended by NUL), so no websocket library.

    with Browser(chromium_path, tmp_path) as b:
        page = b.open_page(offline=True)             # network emulated offline, requests recorded
        page.goto("file:///.../report.html")
        page.eval("document.title")
        png = page.screenshot(1280, 800)             # bytes of a PNG
        page.requests                                # every URL the page asked for
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import subprocess
import time


class BrowserError(RuntimeError):
    pass


class Browser:
    def __init__(self, chromium: str, profile_dir: os.PathLike, timeout: float = 60):
        self.chromium, self.profile, self.timeout = chromium, str(profile_dir), timeout
        self.proc: subprocess.Popen | None = None
        self._next = 0
        self._buf = b""
        self.events: list[dict] = []

    def __enter__(self) -> Browser:
        cmd_r, cmd_w = os.pipe()
        res_r, res_w = os.pipe()

        def wire():              # in the child: the command pipe on fd 3, answers on fd 4
            a = fcntl.fcntl(cmd_r, fcntl.F_DUPFD, 10)     # above 4 first: no clobbering
            b = fcntl.fcntl(res_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [self.chromium, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             f"--user-data-dir={self.profile}", "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--disable-background-networking", "--disable-sync",
             "--disable-component-update", "--mute-audio", "--hide-scrollbars",
             # any real fetch would go to a closed local port: the page must not need one
             "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
             "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=wire, close_fds=False)
        os.close(cmd_r)
        os.close(res_w)
        self._w, self._r = cmd_w, res_r
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.send("Browser.close")
        except Exception:
            pass
        if self.proc is not None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for fd in (self._w, self._r):
            try:
                os.close(fd)
            except OSError:
                pass

    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("timed out waiting for Chromium")
            ready, _, _ = select.select([self._r], [], [], left)
            if ready:
                chunk = os.read(self._r, 1 << 20)
                if not chunk:
                    raise BrowserError("Chromium closed the DevTools pipe")
                self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self._next += 1
        msg = {"id": self._next, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            m = self._read_message(deadline)
            if m.get("id") == self._next:
                if "error" in m:
                    raise BrowserError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method: str, session: str | None, since: int = 0) -> dict:
        deadline = time.monotonic() + self.timeout
        i = since
        while True:
            while i < len(self.events):
                e = self.events[i]
                i += 1
                if e.get("method") == method and (session is None or e.get("sessionId") == session):
                    return e
            self.events.append(self._read_message(deadline))

    def open_page(self, *, offline: bool = True) -> Page:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        page.send("Page.enable")
        page.send("Runtime.enable")
        page.send("Network.enable")
        if offline:
            page.send("Network.emulateNetworkConditions", {
                "offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
        return page


class Page:
    def __init__(self, browser: Browser, session: str):
        self.browser, self.session = browser, session

    def send(self, method: str, params: dict | None = None) -> dict:
        return self.browser.send(method, params, self.session)

    def goto(self, url: str) -> None:
        since = len(self.browser.events)
        self.send("Page.navigate", {"url": url})
        self.browser.wait_event("Page.loadEventFired", self.session, since)

    def eval(self, expression: str):
        r = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in r:
            raise BrowserError(f"script failed: {r['exceptionDetails']}")
        return r["result"].get("value")

    def set_viewport(self, width: int, height: int, mobile: bool = False) -> None:
        self.send("Emulation.setDeviceMetricsOverride", {
            "width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile})

    def screenshot(self, width: int, height: int, mobile: bool = False) -> bytes:
        self.set_viewport(width, height, mobile)
        data = self.send("Page.captureScreenshot", {"format": "png"})["data"]
        return base64.b64decode(data)

    @property
    def requests(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.browser.events
                if e.get("method") == "Network.requestWillBeSent" and e.get("sessionId") == self.session]

    @property
    def console_errors(self) -> list[str]:
        out = []
        for e in self.browser.events:
            if e.get("sessionId") != self.session:
                continue
            if e.get("method") == "Runtime.exceptionThrown":
                out.append(str(e["params"]["exceptionDetails"].get("text")))
            if e.get("method") == "Runtime.consoleAPICalled" and e["params"].get("type") == "error":
                out.append(str(e["params"].get("args")))
        return out
