"""Receiver controls on real sockets: a rule decides, a controller applies (issue 9 part 4).

A rule is any object with one decision method::

    decide(obs: SocketObservation) -> ReceiverSettings

It sees what a receiver can know about one of its own TCP sockets (from ``TCP_INFO``)
and returns the settings to apply; ``None`` in a field means "leave as is". The
:class:`ReceiverController` applies them with ``setsockopt``:

* ``rcvbuf_bytes`` → ``SO_RCVBUF`` (the kernel doubles it for bookkeeping and turns
  receive autotuning off for that socket). It shapes the advertised window only when set
  before ``connect`` (the window-scale factor is fixed at the handshake), so the
  controller applies it in :meth:`before_connect` as well as later.
* ``window_clamp_bytes`` → ``TCP_WINDOW_CLAMP``: a ceiling on the advertised window
  (Linux's floor is half of SOCK_MIN_RCVBUF, ~1.1 KiB). Receive-buffer autotuning
  (``tcp_rcv_space_adjust``) raises ``window_clamp`` whenever it grows the buffer, so
  unless ``SO_RCVBUF`` is also set (which locks autotuning) a clamp set once is undone
  within a few RTTs — measured: a 4 KiB clamp alone left a flow at ~2 Mbit/s, more
  than its competitor. The controller therefore re-applies the clamp after every
  receive (:meth:`after_receive`; a no-op in the kernel when unchanged).
* ``quickack`` → ``TCP_QUICKACK``. **What Linux can and cannot do for delayed ACKs:**
  the option is *not* sticky — it switches the socket into quick-ACK mode, which the
  stack leaves again on its own (after the interactive "pingpong" heuristics re-engage),
  so it must be re-set after every receive to keep ACKing every segment; the controller
  does that in :meth:`after_receive`. Setting it to 0 does not force delayed ACKs
  either. A per-route ``quickack 1`` (``ip route … quickack 1``) disables delayed ACKs
  for all connections over that route; the testbed uses it for ``delayed_ack=false``.
  There is no per-socket knob for the delayed-ACK timeout (the ``ato``; Linux adapts it
  between 40 ms and 200 ms) nor for ACKing every *n*-th segment: those are approximated
  (quick-ACK every segment, or Linux's default of every second full segment).

Rules: :class:`FixedReceiverRule` (the same settings throughout) and
:class:`NetpisReceiverRule` — NetPIS-R itself (:class:`mqoe.policies.netpis.Allocator`,
the object the simulator uses, not a copy) fed from the socket's unread bytes
(``FIONREAD``), re-decided every ``period_s`` while data arrives. A rule with a
``period_s`` attribute is re-asked that often from :meth:`ReceiverController.after_receive`.
"""

from __future__ import annotations

import fcntl
import socket
import struct
import termios
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

from mqoe.params import make_component
from mqoe.policies import netpis

# linux/tcp.h: struct tcp_info field offsets (bytes) of what observations use.
_TCPI_RTT, _TCPI_RCV_RTT, _TCPI_RCV_SPACE = 68, 92, 96
_TCPI_BYTES_RECEIVED, _TCPI_TOTAL_RETRANS, _TCPI_SND_CWND = 128, 100, 80
_TCP_INFO_LEN = 232


@dataclass(frozen=True, slots=True)
class SocketObservation:
    """What a receiver knows about one of its sockets (``TCP_INFO``), at ``now_s``."""

    now_s: float  # seconds since the run started
    flow: str  # "video" or "competitor"
    rtt_ms: float  # the socket's smoothed RTT (as a receiver measures it, from its data)
    rcv_rtt_ms: float  # the receiver-side RTT estimate (DRS), 0 until measured
    rcv_space_bytes: int  # the autotuner's current receive-space estimate
    bytes_received: int
    unread_bytes: int = 0  # data in the receive queue the application has not read yet


@dataclass(frozen=True, slots=True)
class ReceiverSettings:
    """What to apply; ``None`` = leave unchanged."""

    rcvbuf_bytes: int | None = None
    window_clamp_bytes: int | None = None
    quickack: bool | None = None


@runtime_checkable
class ReceiverRule(Protocol):
    def decide(self, obs: SocketObservation) -> ReceiverSettings: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class FixedReceiverRule:
    """The same settings for every socket and moment (0 = leave that setting alone)."""

    rcvbuf_bytes: int = 0
    window_clamp_bytes: int = 0
    quickack: bool = False

    def __post_init__(self) -> None:
        if self.rcvbuf_bytes < 0 or self.window_clamp_bytes < 0:
            raise ValueError("rcvbuf_bytes and window_clamp_bytes must be ≥ 0")

    def decide(self, obs: SocketObservation) -> ReceiverSettings:
        return ReceiverSettings(
            rcvbuf_bytes=self.rcvbuf_bytes or None,
            window_clamp_bytes=self.window_clamp_bytes or None,
            quickack=True if self.quickack else None,
        )


@dataclass(kw_only=True)
class NetpisReceiverRule:
    """NetPIS-R on the testbed's real sockets (the NetPIS rules on real sockets; an
    approximation).

    The flow named ``foreground_flow`` is the foreground app's, every other one is
    background, and a foreground flow is taken to exist throughout (the testbed's video
    client runs for the whole schedule). NetPIS-D's need is ``2 × unread`` from
    ``FIONREAD``; the allocator's buffer goes to ``SO_RCVBUF`` (capped by the
    namespace's ``net.core.rmem_max``) and its window to ``TCP_WINDOW_CLAMP`` (a
    released socket gets a clamp equal to its buffer). What a receiver cannot read from
    userland is estimated: the bytes already promised to the sender are taken as the
    unread data plus the current clamp (or half the buffer, Linux's window share at
    ``tcp_adv_win_scale`` 1) — conservative, so case 2 never shrinks early. The
    ``netpis`` variant's delayed-ACK part has no per-socket Linux knob (see the module
    docstring): on real sockets it acts as ``both``.
    """

    variant: str = "both"
    alpha: float = 0.6
    beta: float = 0.3
    gamma: float = 0.5
    min_rcvbuf_bytes: int = netpis.NetPisParams().min_rcvbuf_bytes  # the background's floor
    foreground_flow: str = "video"
    period_s: float = 0.01  # re-decide this often while data arrives (the paper: per packet)
    all_sockets: ClassVar[bool] = True  # phone-wide: the competitor's sink is ruled too
    _allocator: netpis.Allocator = field(init=False, repr=False)
    _tracer: netpis.NeedTracer = field(init=False, repr=False)
    _state: dict[str, tuple[int, int | None]] = field(init=False, repr=False)
    _keys: dict[str, int] = field(init=False, repr=False)  # flow → its "process" and socket

    def __post_init__(self) -> None:
        if self.period_s <= 0:
            raise ValueError("period_s must be positive")
        params = netpis.NetPisParams(alpha=self.alpha, beta=self.beta, gamma=self.gamma,
                                     min_rcvbuf_bytes=self.min_rcvbuf_bytes)  # fmt: skip
        self._allocator = netpis.Allocator(self.variant, params)
        self._tracer = netpis.NeedTracer()
        self._state = {}
        self._keys = {self.foreground_flow: 0}

    def decide(self, obs: SocketObservation) -> ReceiverSettings:
        fg = obs.flow == self.foreground_flow
        key = self._keys.setdefault(obs.flow, len(self._keys))  # one process, socket per flow
        self._tracer.observe(round(obs.now_s * 1e9), key, key, obs.unread_bytes)
        kernel = self._allocator.params.kernel_rcvbuf_bytes
        rcvbuf, clamp = self._state.get(obs.flow, (kernel, None))
        promised = clamp if clamp is not None else rcvbuf // 2
        decided = self._allocator.decide(
            netpis.SocketObservation(
                need_bytes=self._tracer.socket_need(key),
                rcvbuf_bytes=rcvbuf,
                window_clamp_bytes=clamp,
                committed_bytes=obs.unread_bytes + promised,
                foreground=fg,
                foreground_exists=True,
                process_max_need_bytes=self._tracer.process_max(key),
            )
        )
        self._state[obs.flow] = (decided.rcvbuf_bytes, decided.window_clamp_bytes)
        window = decided.window_clamp_bytes
        return ReceiverSettings(
            rcvbuf_bytes=decided.rcvbuf_bytes if decided.rcvbuf_bytes != rcvbuf else None,
            window_clamp_bytes=decided.rcvbuf_bytes if window is None else window,
        )


RECEIVER_RULES: dict[str, type[Any]] = {"fixed": FixedReceiverRule, "netpis": NetpisReceiverRule}


def make_receiver_rule(spec: str) -> ReceiverRule:
    """``"fixed:window_clamp_bytes=4096,quickack=true"`` or ``"netpis:variant=both"`` → a
    rule (UserError if bad)."""
    rule: ReceiverRule = make_component(spec, RECEIVER_RULES, "receiver rule")
    return rule


def observe(sock: socket.socket, now_s: float, flow: str) -> SocketObservation:
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_LEN)
    info = info.ljust(_TCP_INFO_LEN, b"\0")

    def u32(offset: int) -> int:
        return int(struct.unpack_from("I", info, offset)[0])

    return SocketObservation(
        now_s=now_s,
        flow=flow,
        rtt_ms=u32(_TCPI_RTT) / 1000,
        rcv_rtt_ms=u32(_TCPI_RCV_RTT) / 1000,
        rcv_space_bytes=u32(_TCPI_RCV_SPACE),
        bytes_received=int(struct.unpack_from("Q", info, _TCPI_BYTES_RECEIVED)[0]),
        unread_bytes=_unread(sock),
    )


def _unread(sock: socket.socket) -> int:
    """Bytes in the socket's receive queue (FIONREAD / SIOCINQ)."""
    raw = fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0\0\0\0")
    return int(struct.unpack("i", raw)[0])


_TCPI_SND_SSTHRESH = 76


def tcp_info_cwnd(sock: socket.socket) -> tuple[int, int]:
    """(cwnd, ssthresh) of a sending socket, in segments."""
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_LEN)
    info = info.ljust(_TCP_INFO_LEN, b"\0")
    cwnd, ssthresh = (struct.unpack_from("I", info, off)[0]
                      for off in (_TCPI_SND_CWND, _TCPI_SND_SSTHRESH))  # fmt: skip
    return int(cwnd), int(ssthresh)


def tcp_info_sender(sock: socket.socket) -> tuple[float, int, int]:
    """(srtt ms, cwnd segments, total retransmits) of a sending socket."""
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_LEN)
    info = info.ljust(_TCP_INFO_LEN, b"\0")
    rtt, cwnd, retrans = (
        struct.unpack_from("I", info, off)[0]
        for off in (_TCPI_RTT, _TCPI_SND_CWND, _TCPI_TOTAL_RETRANS)
    )
    return rtt / 1000, int(cwnd), int(retrans)


class ReceiverController:
    """Apply a rule's settings to a receiver's own sockets (see the module docstring)."""

    def __init__(self, rule: ReceiverRule | None) -> None:
        self.rule = rule
        self._quickack = False
        self._clamp = 0
        self.applied: list[tuple[float, str, ReceiverSettings]] = []
        # A rule with a period is re-asked from after_receive that often.
        period = getattr(rule, "period_s", None)
        self._period_ns = None if period is None else round(float(period) * 1e9)
        self._flow = ""
        self._offset_ns = 0  # monotonic clock − the run's clock
        self._next_ns = 0

    def before_connect(self, sock: socket.socket, now_s: float, flow: str) -> None:
        """Settings that must precede the handshake (SO_RCVBUF fixes the window scale)."""
        if self.rule is None:
            return
        empty = SocketObservation(now_s, flow, 0.0, 0.0, 0, 0)
        self._apply(sock, self.rule.decide(empty), now_s, flow)

    def update(self, sock: socket.socket, now_s: float, flow: str) -> None:
        """Observe the socket and apply the rule's current decision."""
        if self.rule is None:
            return
        mono = time.monotonic_ns()
        self._flow, self._offset_ns = flow, mono - round(now_s * 1e9)
        if self._period_ns is not None:
            self._next_ns = mono + self._period_ns
        self._apply(sock, self.rule.decide(observe(sock, now_s, flow)), now_s, flow)

    def after_receive(self, sock: socket.socket) -> None:
        """Re-arm quick-ACK mode (Linux leaves it on its own) and the window clamp
        (autotuning raises it); cheap, once per recv. A periodic rule is re-asked here."""
        if self._period_ns is not None and self._flow:
            mono = time.monotonic_ns()
            if mono >= self._next_ns:
                self.update(sock, (mono - self._offset_ns) / 1e9, self._flow)
        if self._quickack:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
        if self._clamp:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_WINDOW_CLAMP, self._clamp)

    def _apply(
        self, sock: socket.socket, settings: ReceiverSettings, now_s: float, flow: str
    ) -> None:
        if settings.rcvbuf_bytes is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, settings.rcvbuf_bytes)
        if settings.window_clamp_bytes is not None:
            self._clamp = settings.window_clamp_bytes
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_WINDOW_CLAMP,
                            settings.window_clamp_bytes)  # fmt: skip
        if settings.quickack is not None:
            self._quickack = settings.quickack
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, int(settings.quickack))
        if self.applied and self.applied[-1][1:] == (flow, settings):
            return
        self.applied.append((now_s, flow, settings))
