"""Open a page in headless Chromium and report what a reader would see.

Chromium is driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``:
JSON messages separated by NUL bytes on file descriptors 3 and 4), with the standard
library only. One launch gives everything the report's browser test needs: console
messages and uncaught exceptions, JavaScript dialogs (an ``alert`` means injected code
ran), every network request the page made, whether each ``<img>`` decoded, and a
screenshot. Nothing leaves the machine: the page is a ``file://`` URL and background
networking is off.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mqoe.errors import UserError

CHROMIUM_NAMES: tuple[str, ...] = ("chromium", "chromium-browser", "google-chrome")
_FLAGS: tuple[str, ...] = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-dev-shm-usage",  # containers often have a tiny /dev/shm
    "--remote-debugging-pipe",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--disable-component-update",
    "--disable-sync",
    "--mute-audio",
    "--hide-scrollbars",
)
_IMAGES_JS = """
Promise.all(Array.from(document.images).map(img =>
  img.decode().then(() => true, () => false).then(ok => ({
    alt: img.alt, scheme: img.src.split(':')[0], decoded: ok,
    width: img.naturalWidth, height: img.naturalHeight }))))
"""


@dataclass
class PageCheck:
    """What loading a page showed."""

    console: list[tuple[str, str]] = field(default_factory=list)  # (level, text)
    dialogs: list[str] = field(default_factory=list)  # alert/confirm messages
    requests: list[str] = field(default_factory=list)  # every URL the page asked for
    images: list[dict[str, Any]] = field(default_factory=list)  # alt, scheme, decoded, size
    title: str = ""
    text: str = ""  # document.body.innerText
    page_height: int = 0

    @property
    def errors(self) -> list[str]:
        """Console errors and uncaught exceptions."""
        return [text for level, text in self.console if level in ("error", "assert")]


def find_chromium() -> str | None:
    """``$MQOE_CHROMIUM`` if set, else the first Chromium on ``PATH``; None if there is none."""
    explicit = os.environ.get("MQOE_CHROMIUM")
    if explicit:
        return explicit
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def check_page(
    page: Path,
    *,
    screenshot: Path | None = None,
    width: int = 1280,
    height: int = 900,
    full_page: bool = False,
    timeout_s: float = 30.0,
    chromium: str | None = None,
) -> PageCheck:
    """Load ``page`` in headless Chromium; optionally save a PNG screenshot.

    ``full_page`` captures the whole document instead of the ``width`` × ``height``
    viewport. Raises ``UserError`` when Chromium is missing or does not answer.
    """
    binary = chromium or find_chromium()
    if binary is None:
        raise UserError("no Chromium found (install Debian's `chromium` or set MQOE_CHROMIUM)")
    with (
        tempfile.TemporaryDirectory(prefix="mqoe-chromium-", ignore_cleanup_errors=True) as profile,
        _Browser(binary, profile, width, height, timeout_s) as browser,
    ):
        return browser.check(page.resolve(), screenshot, width, full_page)


class _Browser:
    def __init__(self, binary: str, profile: str, width: int, height: int, timeout: float):
        self._deadline = time.monotonic() + timeout
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        args = [binary, *_FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}"]

        def wire_fds() -> None:  # Chromium reads commands on fd 3, answers on fd 4
            # Move both ends above 4 first: a pipe end may itself be fd 3 or 4.
            high_r = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 10)
            high_w = fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 10)
            os.dup2(high_r, 3)  # dup2 makes them inheritable across exec
            os.dup2(high_w, 4)

        try:
            self._process = subprocess.Popen(
                [*args, "about:blank"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                preexec_fn=wire_fds,  # only dup2 between fork and exec
                close_fds=False,
            )
        except OSError as exc:
            os.close(self._to_child)
            os.close(self._from_child)
            raise UserError(f"cannot start Chromium ({binary}): {exc.strerror}") from None
        finally:
            os.close(to_child_r)
            os.close(from_child_w)
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []
        self._session: str | None = None

    def __enter__(self) -> _Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self._process.poll() is None:
                self._send("Browser.close", session=False)
                self._process.wait(timeout=5)
        except (OSError, UserError, subprocess.TimeoutExpired):
            self._process.kill()
            self._process.wait()
        finally:
            os.close(self._to_child)
            os.close(self._from_child)

    # -- protocol ---------------------------------------------------------------------
    def _send(self, method: str, params: dict[str, Any] | None = None, session: bool = True) -> int:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session and self._session is not None:
            message["sessionId"] = self._session
        os.write(self._to_child, json.dumps(message).encode() + b"\0")
        return self._next_id

    def _call(self, method: str, params: dict[str, Any] | None = None, session: bool = True) -> Any:
        wanted = self._send(method, params, session)
        while True:
            message = self._receive()
            if message.get("id") == wanted:
                if "error" in message:
                    raise UserError(f"Chromium: {method}: {message['error'].get('message')}")
                return message.get("result", {})
            self._event(message)

    def _event(self, message: dict[str, Any]) -> None:
        self._events.append(message)
        if message.get("method") == "Page.javascriptDialogOpening":
            # A dialog blocks the page until answered: it is recorded, then dismissed.
            self._send("Page.handleJavaScriptDialog", {"accept": False})

    def _receive(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = self._deadline - time.monotonic()
            if left <= 0:
                raise UserError("Chromium did not answer in time")
            ready, _, _ = select.select([self._from_child], [], [], left)
            if ready:
                chunk = os.read(self._from_child, 1 << 16)
                if not chunk:
                    raise UserError("Chromium exited before the page was checked")
                self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        result: dict[str, Any] = json.loads(raw)
        return result

    def _wait_for(self, method: str) -> None:
        while not any(e.get("method") == method for e in self._events):
            self._event(self._receive())

    # -- the check --------------------------------------------------------------------
    def check(self, url: Path, shot: Path | None, width: int, full_page: bool) -> PageCheck:
        targets = self._call("Target.getTargets", session=False)["targetInfos"]
        page_id = next(t["targetId"] for t in targets if t["type"] == "page")
        attached = self._call(
            "Target.attachToTarget", {"targetId": page_id, "flatten": True}, session=False
        )
        self._session = attached["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self._call(f"{domain}.enable")
        self._events.clear()
        self._call("Page.navigate", {"url": url.as_uri()})
        self._wait_for("Page.loadEventFired")
        images = self._evaluate(_IMAGES_JS)
        result = PageCheck(
            images=list(images),
            title=str(self._evaluate("document.title")),
            text=str(self._evaluate("document.body ? document.body.innerText : ''")),
            page_height=int(self._evaluate("document.documentElement.scrollHeight")),
        )
        if shot is not None:
            self._screenshot(shot, width, result.page_height if full_page else None)
        self._collect(result)
        return result

    def _evaluate(self, expression: str) -> Any:
        answer = self._call(
            "Runtime.evaluate",
            {"expression": expression, "awaitPromise": True, "returnByValue": True},
        )
        if "exceptionDetails" in answer:
            raise UserError(f"Chromium: evaluating the page failed: {answer['exceptionDetails']}")
        return answer["result"].get("value")

    def _screenshot(self, path: Path, width: int, full_height: int | None) -> None:
        params: dict[str, Any] = {"format": "png"}
        if full_height is not None:
            params["captureBeyondViewport"] = True
            params["clip"] = {"x": 0, "y": 0, "width": width, "height": full_height, "scale": 1}
        data = base64.b64decode(self._call("Page.captureScreenshot", params)["data"])
        from mqoe.results.atomic import atomic_write_bytes

        atomic_write_bytes(path, data)

    def _collect(self, result: PageCheck) -> None:
        for event in self._events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled":
                text = " ".join(
                    str(a.get("value", a.get("description", ""))) for a in params["args"]
                )
                result.console.append((params.get("type", "log"), text))
            elif method == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                text = details.get("exception", {}).get("description") or details.get("text", "")
                result.console.append(("error", str(text)))
            elif method == "Log.entryAdded":
                entry = params.get("entry", {})
                result.console.append((str(entry.get("level")), str(entry.get("text"))))
            elif method == "Page.javascriptDialogOpening":
                result.dialogs.append(str(params.get("message")))
            elif method == "Network.requestWillBeSent":
                result.requests.append(str(params.get("request", {}).get("url")))
