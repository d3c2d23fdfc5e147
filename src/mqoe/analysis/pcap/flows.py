"""Flow tracking: per TCP flow direction, the sequence-number growth (bytes received),
retransmissions and holes, wrapped sequence numbers unwrapped."""

from __future__ import annotations

import bisect
import ipaddress
from collections import Counter

import numpy as np
import pandas as pd

from mqoe.analysis.pcap.model import _ACK, _SYN, MAX_OUT_OF_ORDER
from mqoe.analysis.pcap.parse import _Segment

_MAX_AHEAD = 1 << 30  # a segment further ahead than this is not part of the flow
_MASK = 0xFFFFFFFF
_HALF = 1 << 31


# -- flow tracking --------------------------------------------------------------------


class _Half:
    """One direction of a TCP connection, as its receiver sees it."""

    __slots__ = (
        "acked",
        "base",
        "bins",
        "cum",
        "ends",
        "first_t",
        "flow",
        "key",
        "last_t",
        "latest_t",
        "max_end",
        "missed",
        "nxt",
        "payload",
        "progress",
        "retrans",
        "starts",
        "syn",
    )

    def __init__(self, flow: int, key: tuple[bytes, int, bytes, int], t: float) -> None:
        self.flow, self.key = flow, key
        self.base: int | None = None  # 32-bit sequence number of relative byte 0
        self.syn = False
        self.nxt = 0  # next in-order byte (relative, unwrapped): bytes received
        self.max_end = 0  # highest byte seen + 1
        self.acked = 0  # highest byte the receiver acknowledged (relative, unwrapped)
        self.starts: list[int] = []  # out-of-order ranges beyond nxt, sorted, disjoint
        self.ends: list[int] = []
        self.payload = self.retrans = self.missed = 0
        self.first_t = t
        self.last_t = t  # when nxt (bytes received) last increased
        self.latest_t = t  # the latest packet that changed the flow
        self.bins: list[int] = []
        self.progress: list[int] = []
        self.cum: list[int] = []


class _Tracker:
    def __init__(self, bin_s: float) -> None:
        self.bin_s = bin_s
        self.t0 = 0.0  # the capture's first packet
        self.halves: dict[tuple[bytes, int, bytes, int], _Half] = {}
        self.closed: list[_Half] = []
        self.count = 0
        self.skipped: Counter[str] = Counter()
        self.time_reversed = 0

    def add(self, t: float, seg: _Segment) -> None:
        src, dst, sport, dport, seq, ack, flags, length, _cut = seg
        key = (src, sport, dst, dport)
        half = self.halves.get(key)
        if flags & _SYN:
            half = self._syn(half, key, t, seq)
            seq = (seq + 1) & _MASK
        if length > 0:
            if half is None:
                half = self._new(key, t)
            if half.base is None:
                half.base = seq
            if self._data(half, seq, length):
                half.payload += length
                self._record(half, t)
        if flags & _ACK:
            other = self.halves.get((dst, dport, src, sport))
            if other is not None and other.base is not None and self._acked(other, ack):
                self._record(other, t)

    def _new(self, key: tuple[bytes, int, bytes, int], t: float) -> _Half:
        half = _Half(self.count, key, t)
        self.count += 1
        self.halves[key] = half
        return half

    def _syn(
        self, half: _Half | None, key: tuple[bytes, int, bytes, int], t: float, seq: int
    ) -> _Half:
        base = (seq + 1) & _MASK
        if half is not None and half.base not in (None, base) and half.max_end > 0:
            self.closed.append(half)  # the 5-tuple is reused by a new connection
            half = None
        if half is None:
            half = self._new(key, t)
        if half.max_end == 0:
            half.base = base
        half.syn = True
        return half

    def _data(self, half: _Half, seq: int, length: int) -> bool:
        assert half.base is not None
        ahead = (seq - half.base - half.nxt) & _MASK
        if ahead >= _HALF:
            ahead -= 1 << 32
        if ahead > _MAX_AHEAD:
            self.skipped["out_of_window"] += 1
            return False
        start = half.nxt + ahead
        end = start + length
        half.max_end = max(half.max_end, end)
        if start == half.nxt and not half.starts:  # in order: the common case
            half.nxt = end
        else:
            seen = 0
            if start < half.nxt:
                seen = min(end, half.nxt) - start
                start = half.nxt
            if start < end:
                seen += self._hold(half, start, end)
            half.retrans += seen
        if half.acked > half.nxt:  # an earlier ACK vouches for bytes up to here
            self._cover(half)
        return True

    def _hold(self, half: _Half, start: int, end: int) -> int:
        """Add [start, end) beyond ``nxt``; returns the bytes already held, then lets
        ``nxt`` run over what is now contiguous."""
        starts, ends = half.starts, half.ends
        i = bisect.bisect_left(ends, start)
        j = bisect.bisect_right(starts, end)
        held = sum(max(0, min(ends[k], end) - max(starts[k], start)) for k in range(i, j))
        if i < j:
            start, end = min(start, starts[i]), max(end, ends[j - 1])
        starts[i:j] = [start]
        ends[i:j] = [end]
        if len(starts) > MAX_OUT_OF_ORDER:  # forget the furthest range; its bytes return
            starts.pop()
            ends.pop()
            self.skipped["out_of_order_overflow"] += 1
        while starts and starts[0] <= half.nxt:
            half.nxt = max(half.nxt, ends[0])
            del starts[0], ends[0]
        return held

    def _acked(self, half: _Half, ack: int) -> bool:
        """The receiver acknowledged up to ``ack``; True if that moved ``nxt`` on."""
        assert half.base is not None
        ahead = (ack - half.base - half.nxt) & _MASK
        if ahead == 0 or ahead > _MAX_AHEAD:  # an old ACK, or nonsense
            return False
        half.acked = max(half.acked, half.nxt + ahead)
        return self._cover(half)

    def _cover(self, half: _Half) -> bool:
        """Bytes below the receiver's ACK that the capture never showed were received
        all the same (the capture dropped them) — up to the highest byte seen, as the
        ACK of a FIN is one beyond the data."""
        target = min(half.acked, half.max_end)
        if target <= half.nxt:
            return False
        ahead = target - half.nxt
        held = self._hold(half, half.nxt, target)
        half.missed += ahead - held
        return True

    def _record(self, half: _Half, t: float) -> None:
        """The flow changed at ``t``: its progress, its payload count, or both."""
        if t < half.latest_t:
            self.time_reversed += 1
        half.latest_t = max(half.latest_t, t)
        if half.nxt > (half.progress[-1] if half.progress else 0):  # bytes received grew
            half.last_t = max(half.last_t, t)
        b = max(0, int((t - self.t0) // self.bin_s))
        if half.bins and b <= half.bins[-1]:
            half.progress[-1], half.cum[-1] = half.nxt, half.payload
        else:
            half.bins.append(b)
            half.progress.append(half.nxt)
            half.cum.append(half.payload)

    def finish(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        t0 = self.t0
        halves = sorted(self.closed + list(self.halves.values()), key=lambda h: h.flow)
        halves = [h for h in halves if h.payload > 0]
        rows, series = [], []
        for flow, h in enumerate(halves):
            src, sport, dst, dport = h.key
            assert h.base is not None
            duration = h.last_t - h.first_t
            rows.append(
                {
                    "flow": flow,
                    "src": _address(src),
                    "sport": sport,
                    "dst": _address(dst),
                    "dport": dport,
                    "label": f"{_endpoint(src, sport)} → {_endpoint(dst, dport)}",
                    "syn_seen": h.syn,
                    "first_s": h.first_t - t0,
                    "last_s": h.last_t - t0,
                    "duration_s": duration,
                    "bytes_received": h.nxt,
                    "payload_bytes": h.payload,
                    "retransmitted_bytes": h.retrans,
                    "missed_bytes": h.missed,
                    "seq_wraps": (h.base + max(h.max_end, 1) - 1) >> 32,
                    "mean_throughput_mbps": h.nxt * 8 / duration / 1e6 if duration > 0 else np.nan,
                }
            )
            series.append(
                pd.DataFrame(
                    {
                        "flow": flow,
                        "t_s": (np.asarray(h.bins, dtype=np.float64) + 1) * self.bin_s,
                        "bytes_received": np.asarray(h.progress, dtype=np.int64),
                        "payload_bytes": np.asarray(h.cum, dtype=np.int64),
                    }
                )
            )
        flows = pd.DataFrame(rows, columns=list(_FLOW_COLUMNS)).astype(_FLOW_COLUMNS)
        frames = [s for s in series if len(s)]
        empty = pd.DataFrame({c: pd.Series(dtype=d) for c, d in _SERIES_COLUMNS.items()})
        return flows, pd.concat(frames, ignore_index=True) if frames else empty


# Types given explicitly, so a capture without flows still has typed (empty) columns.
_FLOW_COLUMNS = {
    "flow": "int64",
    "src": "str",
    "sport": "int64",
    "dst": "str",
    "dport": "int64",
    "label": "str",
    "syn_seen": "bool",
    "first_s": "float64",
    "last_s": "float64",
    "duration_s": "float64",
    "bytes_received": "int64",
    "payload_bytes": "int64",
    "retransmitted_bytes": "int64",
    "missed_bytes": "int64",
    "seq_wraps": "int64",
    "mean_throughput_mbps": "float64",
}
_SERIES_COLUMNS = {
    "flow": "int64",
    "t_s": "float64",
    "bytes_received": "int64",
    "payload_bytes": "int64",
}


def _address(raw: bytes) -> str:
    return str(ipaddress.ip_address(raw))


def _endpoint(raw: bytes, port: int) -> str:
    return f"[{_address(raw)}]:{port}" if len(raw) == 16 else f"{_address(raw)}:{port}"
