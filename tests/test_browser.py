"""The HTML report in a real browser: headless Chromium (Debian's package; `.ci/run` installs it)
driven over the DevTools protocol on a pipe (--remote-debugging-pipe, standard library only).

It opens `check --format html` of the 8-GPU sample with no network, and checks that the page
raised no console error or exception (the Content-Security-Policy blocks nothing it needs), that
the filter script ran, that every SVG text is drawn at the width the layout computed for it, and
that a screenshot of the drawing is not blank and shows the findings' highlight colour (the PNG
decoded here with zlib). Without a browser it skips, except under CI=true, where that is a failure.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import struct
import subprocess
import time
import zlib

import pytest
from conftest import ROOT, run_cli

from topolint.drawing.svg import COLOURS

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def _browser() -> str | None:
    named = os.environ.get("TOPOLINT_BROWSER")
    if named:
        return named
    return next((found for found in map(shutil.which, BROWSERS) if found), None)


@pytest.fixture(scope="module")
def browser():
    found = _browser()
    if found is None:
        if os.environ.get("CI", "").lower() in ("true", "1"):
            pytest.fail("CI=true but no Chromium found (.ci/run installs Debian's chromium package)")
        pytest.skip("no Chromium on this machine (apt-get install chromium, or TOPOLINT_BROWSER=PATH); "
                    "CI installs it and runs this test")
    return found


class DevTools:
    """The DevTools protocol over --remote-debugging-pipe: JSON messages, NUL-terminated, written
    to the browser's fd 3 and read from its fd 4."""

    def __init__(self, binary: str, profile: str):
        import fcntl

        # The browser reads fd 3 and writes fd 4. subprocess keeps only the descriptors it is given
        # (after anything a preexec_fn does), so bash (dash takes single-digit descriptors only)
        # puts the pipe ends there; they are moved above 9 first, so neither end can be one the
        # other is about to be copied over.
        ends = [os.pipe(), os.pipe()]
        high = [[fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in pair] for pair in ends]
        for fd in (fd for pair in ends for fd in pair):
            os.close(fd)
        (to_browser_r, self.to_browser), (self.from_browser, from_browser_w) = high
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-extensions", "--disable-default-apps", "--mute-audio", "--hide-scrollbars",
                 f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"]
        self.process = subprocess.Popen(
            [shutil.which("bash") or "/bin/bash", "-c",
             f'exec "$0" "$@" 3<&{to_browser_r} 4>&{from_browser_w} {to_browser_r}<&- {from_browser_w}>&-',
             binary, *flags],
            pass_fds=(to_browser_r, from_browser_w), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.buffer = b""
        self.next_id = 0
        self.events: list[dict] = []

    def send(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 30) -> dict:
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise AssertionError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, timeout: float = 30) -> dict:
        deadline = time.monotonic() + timeout
        for event in self.events:
            if event.get("method") == method:
                return event
        while True:
            event = self._read(deadline)
            self.events.append(event)
            if event.get("method") == method:
                return event

    def _read(self, deadline: float) -> dict:
        import select

        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.from_browser], [], [], left)[0]:
                raise TimeoutError("the browser did not answer")
            chunk = os.read(self.from_browser, 1 << 20)
            if not chunk:
                raise EOFError("the browser closed the pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=5)
        except (TimeoutError, EOFError, OSError, AssertionError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self.to_browser)
        os.close(self.from_browser)


def _adder(size: int):
    """Bytewise addition mod 256 of two equal-length byte strings, as one big-integer operation."""
    low, high = int.from_bytes(b"\x7f" * size, "big"), int.from_bytes(b"\x80" * size, "big")
    return lambda a, b: ((a & low) + (b & low)) ^ ((a ^ b) & high)


def png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, RGB pixels) of an 8-bit truecolour PNG, its rows unfiltered (PNG spec 9.2):
    Up and Sub rows as big-integer bytewise sums (Sub by doubling shifts), Average and Paeth byte by byte."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    position, idat, header = 8, b"", None
    while position < len(data):
        length, kind = struct.unpack(">I4s", data[position:position + 8])
        body = data[position + 8:position + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        position += 12 + length
    width, height, depth, colour = header[:4]
    assert depth == 8 and colour in (2, 6) and header[6] == 0, header  # truecolour, not interlaced
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    add = _adder(stride)
    rows, previous = [], bytes(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], raw[start + 1:start + 1 + stride]
        if kind == 2:
            line = add(int.from_bytes(line, "big"), int.from_bytes(previous, "big")).to_bytes(stride, "big")
        elif kind == 1:
            value, shift = int.from_bytes(line, "big"), 8 * channels
            while shift < 8 * stride:
                value = add(value, value >> shift)
                shift *= 2
            line = value.to_bytes(stride, "big")
        elif kind in (3, 4):
            out = bytearray(line)
            for i in range(stride):
                left = out[i - channels] if i >= channels else 0
                up = previous[i]
                if kind == 3:
                    out[i] = (out[i] + (left + up) // 2) & 0xFF
                    continue
                corner = previous[i - channels] if i >= channels else 0
                guess = left + up - corner
                pa, pb, pc = abs(guess - left), abs(guess - up), abs(guess - corner)
                out[i] = (out[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF
            line = bytes(out)
        rows.append(line)
        previous = line
    return width, height, [row[i:i + 3] for row in rows for i in range(0, stride, channels)]


def _rgb(colour: str) -> tuple[int, int, int]:
    return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))


def _count_near(pixels: list[bytes], colour: str, tolerance: int = 12) -> int:
    want = _rgb(colour)
    return sum(1 for p in pixels if abs(p[0] - want[0]) <= tolerance and abs(p[1] - want[1]) <= tolerance
               and abs(p[2] - want[2]) <= tolerance)


MEASURE = """(() => {
  const texts = Array.from(document.querySelectorAll("svg.tl-drawing text"));
  const drawn = t => Math.abs(t.getComputedTextLength() - parseFloat(t.getAttribute("textLength")));
  const worst = Math.max(...texts.map(drawn));
  const svg = document.querySelector("svg.tl-drawing").getBoundingClientRect();
  return JSON.stringify({count: texts.length, worst: worst, filter: !document.getElementById("tl-filter").hidden,
                         shown: document.getElementById("tl-shown").textContent,
                         x: svg.left + window.scrollX, y: svg.top + window.scrollY, w: svg.width, h: svg.height});
})()"""


def test_report_renders_in_a_real_browser_without_console_errors(browser, tmp_path):
    report = tmp_path / "report.html"
    run_cli("check", "fixtures/samples/dgx-like-2socket-dump.xml", "--isolated", "--no-cache", "--format", "html",
            "-o", report, cwd=ROOT)
    tools = DevTools(browser, str(tmp_path / "profile"))
    try:
        targets = tools.send("Target.getTargets")["targetInfos"]
        page = next(t["targetId"] for t in targets if t["type"] == "page")
        session = tools.send("Target.attachToTarget", {"targetId": page, "flatten": True})["sessionId"]
        for domain in ("Runtime.enable", "Log.enable", "Page.enable"):
            tools.send(domain, session=session)
        tools.send("Emulation.setDeviceMetricsOverride", {"width": 1400, "height": 1000, "deviceScaleFactor": 1,
                                                           "mobile": False}, session=session)
        tools.send("Page.navigate", {"url": report.as_uri()}, session=session)
        tools.wait_for("Page.loadEventFired")
        measured = json.loads(tools.send("Runtime.evaluate", {"expression": MEASURE, "returnByValue": True},
                                         session=session)["result"]["value"])
        shot = tools.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": {
            "x": measured["x"], "y": measured["y"], "width": measured["w"], "height": measured["h"], "scale": 0.5}},
            session=session)
    finally:
        tools.close()
    errors = [e for e in tools.events if e.get("method") == "Runtime.exceptionThrown"
              or (e.get("method") == "Runtime.consoleAPICalled" and e["params"].get("type") in ("error", "assert"))
              or (e.get("method") == "Log.entryAdded" and e["params"]["entry"].get("level") == "error")]
    assert not errors, errors
    assert measured["filter"] and measured["shown"] == "4 of 4 shown"  # the inline script ran (CSP allowed it)
    assert measured["count"] > 80
    assert measured["worst"] < 0.5  # every text at the width the layout computed (textLength)
    width, height, pixels = png_pixels(base64.b64decode(shot["data"]))  # the drawing at half size
    assert width >= 300 and height >= 200
    white = sum(1 for p in pixels if p == b"\xff\xff\xff")
    assert white < 0.97 * len(pixels)  # drawn, not blank
    assert _count_near(pixels, COLOURS["warning"]) > 300  # the NUMA001 findings' highlight and paths
    assert _count_near(pixels, COLOURS["bottleneck"]) > 30  # the estimate's bottleneck
