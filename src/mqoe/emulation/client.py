"""The real ABR video client: the simulator's client loop over real sockets.

The loop is :class:`mqoe.apps.stream_client.StreamingClient`'s, in wall-clock time: a
playback buffer of at most ``buffer_max_s`` drained at 1 s/s once the first segment has
arrived; the next 4 s segment is requested as soon as there is room for it; the rate is
chosen by the very same rule object the simulator uses
(:func:`mqoe.workloads.spiral.build_rule`) from the same :class:`AbrState`. A segment
is ``GET /<bytes>`` over HTTP/1.1 (one persistent connection, or one per segment), and
its throughput is what the client measures: bytes over the time from sending the
request to receiving the last byte. Bytes received are also counted per time bin (the
video's per-second throughput).
"""

from __future__ import annotations

import json
import math
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mqoe.apps.playback import PlaybackBuffer
from mqoe.emulation.agent import SERVER_PORT, BinCounter
from mqoe.emulation.receiver import ReceiverController, make_receiver_rule, observe
from mqoe.policies.abr.base import AbrState, Download, checked
from mqoe.results.atomic import atomic_write_text
from mqoe.workloads.base import parse_params
from mqoe.workloads.spiral import SpiralParams, build_rule

_CHUNK = 1 << 16


class _Connection:
    """An HTTP/1.1 connection that fetches ``size`` bytes per request."""

    def __init__(self, addr: str, controller: ReceiverController, t0_ns: int) -> None:
        self.controller = controller
        self.t0 = t0_ns
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        controller.before_connect(self.sock, self._now(), "video")
        self.sock.settimeout(5.0)
        self.sock.connect((addr, SERVER_PORT))
        self.buf = bytearray(_CHUNK)
        self.pending = b""

    def _now(self) -> float:
        return (time.monotonic_ns() - self.t0) / 1e9

    def get(self, size: int, close: bool, counter: BinCounter, deadline_ns: int) -> bool:
        """Fetch one segment; False if the run's deadline came first."""
        self.controller.update(self.sock, self._now(), "video")
        header = b"Connection: close\r\n" if close else b""
        self.sock.sendall(b"GET /%d HTTP/1.1\r\nHost: server\r\n%s\r\n" % (size, header))
        remaining: int | None = None
        data = self.pending
        while remaining is None:
            if b"\r\n\r\n" in data:
                head, _, body = data.partition(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                counter.add(len(body))
                remaining = length - len(body)
                break
            chunk = self._recv(deadline_ns)
            if chunk is None:
                return False
            data += chunk
        while remaining > 0:
            n = self._recv_into(deadline_ns)
            if n is None:
                return False
            counter.add(n)
            remaining -= n
        self.pending = b""
        return True

    def _recv(self, deadline_ns: int) -> bytes | None:
        n = self._recv_into(deadline_ns)
        return None if n is None else bytes(self.buf[:n])

    def _recv_into(self, deadline_ns: int) -> int | None:
        while True:  # a stalled download (RTO backoff) waits, up to the run's end
            left = (deadline_ns - time.monotonic_ns()) / 1e9
            if left <= 0:
                return None
            self.sock.settimeout(min(left, 1.0))
            try:
                n = self.sock.recv_into(self.buf)
                break
            except TimeoutError:
                continue
        if n == 0:
            raise ConnectionError("the server closed the connection mid-segment")
        self.controller.after_receive(self.sock)
        return n

    def close(self) -> None:
        self.sock.close()


def run_client(config: dict[str, Any], handshake: Callable[[], int]) -> None:
    """Stream until ``duration_s``; write segments and per-bin bytes to ``config["out"]``."""
    params: SpiralParams = parse_params(SpiralParams, config["params"], "spiral")
    rule = build_rule(params)
    receiver = make_receiver_rule(config["receiver"]) if config.get("receiver") else None
    controller = ReceiverController(receiver)
    ladder = params.ladder
    persistent = params.connection == "persistent"
    t0 = handshake()
    deadline = t0 + int(params.duration_s * 1e9)
    counter = BinCounter(t0, params.sample_s, params.duration_s)
    downloads: list[Download] = []
    segments: list[dict[str, Any]] = []
    playback = PlaybackBuffer(time.monotonic_ns)
    last: int | None = None
    conn: _Connection | None = None
    idle_rtt_ms = math.nan

    room_at = params.buffer_max_s - params.segment_s
    while time.monotonic_ns() < deadline:
        level = playback.level_s()
        if level > room_at:
            wake = time.monotonic_ns() + int((level - room_at) * 1e9)
            if wake >= deadline:
                break
            time.sleep(max(0.0, (wake - time.monotonic_ns()) / 1e9))
            level = playback.level_s()
        now_s = (time.monotonic_ns() - t0) / 1e9
        state = AbrState(now_s=now_s, ladder=ladder, segment_s=params.segment_s,
                         buffer_s=level, buffer_max_s=params.buffer_max_s,
                         downloads=downloads, last=last)  # fmt: skip
        decision = checked(rule.choose(state), ladder, rule)
        rate_kbps = decision.effective_kbps(ladder)
        size = max(1, round(rate_kbps * 1000 / 8 * params.segment_s))
        new_connection = conn is None
        if conn is None:
            conn = _Connection(config["server"], controller, t0)
            if math.isnan(idle_rtt_ms):  # the SYN / SYN-ACK round trip: an idle path
                idle_rtt_ms = observe(conn.sock, 0.0, "video").rtt_ms
        request_ns = time.monotonic_ns()
        request_s = (request_ns - t0) / 1e9
        if not conn.get(size, not persistent, counter, deadline):
            break  # the run ended mid-download: like the simulator, not recorded
        done_s = (time.monotonic_ns() - t0) / 1e9
        if not persistent:
            conn.close()
            conn = None
        downloads.append(Download(len(segments), decision.representation, rate_kbps, size,
                                  request_s, done_s))  # fmt: skip
        segments.append({
            "segment": len(segments), "representation": decision.representation,
            "rate_kbps": rate_kbps, "size_bytes": size, "request_s": request_s,
            "done_s": done_s, "buffer_s": level, "new_connection": new_connection,
        })  # fmt: skip
        playback.add(params.segment_s)
        playback.playing = True
        last = decision.representation
    if conn is not None:
        conn.close()
    result = {
        "segments": segments,
        "bins": counter.bins,
        "rebuffer_s": playback.rebuffer_s,
        "idle_rtt_ms": idle_rtt_ms,
        "receiver_applied": [(t, f, str(s)) for t, f, s in controller.applied],
    }
    atomic_write_text(Path(config["out"]), json.dumps(result))
