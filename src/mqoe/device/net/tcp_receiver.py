"""The receiving half of packet-level TCP (at the client): in-order delivery with an
out-of-order store, a receive buffer whose free space is the advertised window, delayed
ACKs (every second full segment, or the ACK timeout ``ato``), immediate ACKs for
out-of-order data and for filling a hole, SACK blocks, and a window update when the
application frees space after a closed window.

Receiver controls (those NetPIS uses), changeable while the connection runs, all
defaulting to the kernel's behaviour: the receive buffer (``set_rcvbuf``, SO_RCVBUF), a
clamp on the advertised window (``set_window_clamp``, TCP_WINDOW_CLAMP), and the
delayed-ACK bounded frame size and ACK timeout (``set_delayed_ack``). The window
advertised is never more than the free buffer space; a segment that arrives inside a
window already advertised but no longer fits the buffer (the buffer was shrunk too
early) is counted in ``overruns`` — the event NetPIS's case-2 ordering exists to prevent.
"""

from __future__ import annotations

from collections.abc import Callable

from mqoe.device.net.link import Link, Packet, send
from mqoe.device.net.tcp_config import NO_TIMESTAMP, TcpConfig
from mqoe.engine import Deadline, Environment


class TcpReceiver:
    """The receiving half (at the client). ``on_data(nbytes)`` is told of in-order data."""

    def __init__(
        self,
        env: Environment,
        cfg: TcpConfig,
        route: tuple[Link, ...],
        sink: Callable[[Packet], None],
        flow: object,
        on_data: Callable[[int], None] | None = None,
        auto_read: bool = True,
    ) -> None:
        self.env = env
        self.cfg = cfg
        self.route = route  # back to the sender
        self.sink = sink
        self.flow = flow
        self.on_data = on_data
        self.auto_read = auto_read
        self.rcvbuf_bytes = cfg.rcvbuf_bytes
        self.rcv_nxt = 0
        self.unread = 0  # in-order bytes the application has not read yet
        self._ooo: list[tuple[int, int]] = []  # out-of-order [start, end) spans, sorted
        self.ooo_bytes = 0
        self._pending_bytes = 0  # in-order bytes received since the last ACK
        self._last_ooo_seq = -1  # the most recent out-of-order segment (first SACK block)
        self._ts_recent = NO_TIMESTAMP  # to echo: the earliest unacknowledged segment's
        self._delack = Deadline(env, self._on_delack)
        self._window_was_closed = False
        # Receiver controls (kernel defaults): window clamp (None = none), the bounded
        # frame size (ACK at once when more than this is unacknowledged) and ATO.
        self.window_clamp: int | None = None
        self.delack_bytes = cfg.mss_bytes
        self.ato_ns = cfg.ato_ns
        self.adv_edge = 0  # highest right edge ever advertised (rcv_nxt + window)
        self.overruns = 0  # in-window segments refused because the buffer had shrunk
        # Counters.
        self.bytes_received = 0  # delivered in order
        self.acks_sent = 0
        self.dupacks_sent = 0
        self.drops = 0  # segments refused for lack of receive buffer

    @property
    def window(self) -> int:
        """Advertised window: the free space of the receive buffer (at most the clamp)."""
        free = max(0, self.rcvbuf_bytes - self.unread - self.ooo_bytes)
        clamp = self.window_clamp
        return free if clamp is None or clamp >= free else clamp

    @property
    def committed_bytes(self) -> int:
        """Buffer the sender may legitimately fill: unread data plus everything up to the
        highest right edge already advertised. Shrinking the buffer below it risks an
        overrun."""
        return self.unread + max(0, self.adv_edge - self.rcv_nxt)

    # -- receiver controls (NetPIS) ----------------------------------------------------
    def set_rcvbuf(self, nbytes: int) -> None:
        """SO_RCVBUF: a new receive-buffer size (bytes, > 0)."""
        if nbytes <= 0:
            raise ValueError("the receive buffer must be positive")
        self.rcvbuf_bytes = nbytes
        self._maybe_window_update()

    def set_window_clamp(self, nbytes: int | None) -> None:
        """TCP_WINDOW_CLAMP: advertise at most ``nbytes``; None removes the clamp."""
        if nbytes is not None and nbytes < 0:
            raise ValueError("the window clamp must be ≥ 0")
        self.window_clamp = nbytes
        self._maybe_window_update()

    def set_delayed_ack(self, bound_bytes: int | None, ato_ns: int | None) -> None:
        """Delayed-ACK bounded frame size and ACK timeout; None restores the default."""
        self.delack_bytes = self.cfg.mss_bytes if bound_bytes is None else max(1, bound_bytes)
        self.ato_ns = self.cfg.ato_ns if ato_ns is None else max(1, ato_ns)

    def _maybe_window_update(self) -> None:
        if self._window_was_closed and self.window >= self.cfg.mss_bytes:
            self._window_was_closed = False
            self._send_ack()

    def read(self, nbytes: int | None = None) -> int:
        """The application reads up to ``nbytes`` (all if None); returns what it got."""
        got = self.unread if nbytes is None else min(nbytes, self.unread)
        self.unread -= got
        if got and self._window_was_closed and self.window >= self.cfg.mss_bytes:
            self._window_was_closed = False
            self._send_ack()  # window update
        return got

    def on_segment(self, packet: Packet) -> None:
        seq, end = packet.seq, packet.seq + packet.length
        if end <= self.rcv_nxt:  # a duplicate (e.g. after go-back-N): ACK at once
            self._ts_recent = packet.ts
            self._send_ack(dup=True)
            return
        if packet.length > self.rcvbuf_bytes - self.unread - self.ooo_bytes:
            # No room in the buffer (the clamp limits what is advertised, not what fits).
            self.drops += 1
            if end <= self.adv_edge:
                self.overruns += 1  # it was inside a window we advertised
            self._window_was_closed = True
            self._send_ack(dup=True)
            return
        if seq > self.rcv_nxt:  # out of order: hold it, duplicate-ACK at once (RFC 5681 §4.2)
            self._hold(seq, end)
            self._last_ooo_seq = seq
            self._send_ack(dup=True)
            return
        if self._pending_bytes == 0:
            self._ts_recent = packet.ts
        filled_hole = bool(self._ooo)
        self._advance(end)
        self._pending_bytes += packet.length
        # Linux __tcp_ack_snd_check: ACK at once when more than one full segment is
        # unacknowledged, after filling a hole, or without delayed ACKs; else wait ≤ ato.
        if filled_hole or not self.cfg.delayed_ack or self._pending_bytes > self.delack_bytes:
            self._send_ack()
        elif not self._delack.active:
            self._delack.set(self.ato_ns)

    def _hold(self, seq: int, end: int) -> None:
        """Keep an out-of-order segment; the store stays sorted and merged."""
        spans = sorted([*self._ooo, (seq, end)])
        merged: list[tuple[int, int]] = []
        for s, e in spans:
            if merged and s <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], e))
            else:
                merged.append((s, e))
        self._ooo = merged
        self.ooo_bytes = sum(e - s for s, e in merged)

    def _sack_blocks(self) -> tuple[tuple[int, int], ...]:
        """Up to 3 blocks (with timestamps, RFC 2018 §3): the one holding the most recent
        segment first, then the highest others."""
        recent = self._last_ooo_seq
        first = [sp for sp in self._ooo if sp[0] <= recent < sp[1]]
        rest = [sp for sp in reversed(self._ooo) if not sp[0] <= recent < sp[1]]
        return tuple((first + rest)[:3])

    def _advance(self, end: int) -> None:
        start = self.rcv_nxt
        rcv_nxt = end
        ooo = self._ooo
        while ooo and ooo[0][0] <= rcv_nxt:
            rcv_nxt = max(rcv_nxt, ooo.pop(0)[1])
        if ooo or self.ooo_bytes:
            self.ooo_bytes = sum(e - s for s, e in ooo)
        self.rcv_nxt = rcv_nxt
        delivered = rcv_nxt - start
        self.bytes_received += delivered
        if not self.auto_read:
            self.unread += delivered
        if self.on_data is not None:
            self.on_data(delivered)

    def _on_delack(self, _: object) -> None:
        if self._pending_bytes:
            self._send_ack()

    def _send_ack(self, dup: bool = False) -> None:
        self._delack.cancel()
        self._pending_bytes = 0
        packet = Packet(self.flow, 0, 0, self.route, self.sink, self.env.now)
        packet.ack = self.rcv_nxt
        window = self.window
        packet.rwnd = window
        if self.rcv_nxt + window > self.adv_edge:
            self.adv_edge = self.rcv_nxt + window
        packet.tsecr = self._ts_recent
        if self.cfg.sack and self._ooo:
            packet.sack = self._sack_blocks()
        self.acks_sent += 1
        if dup:
            self.dupacks_sent += 1
        send(packet)
