"""NetPIS: receiver-side network performance isolation for the foreground app
(the NetPIS study, 2015).

Three parts, none of which imports the simulator, so the same objects can drive real
Linux sockets (SO_RCVBUF / TCP_WINDOW_CLAMP) in a testbed:

* **NetPIS-D** (:class:`NeedTracer`): per socket, the receive buffer the process actually
  needs, ``2 × unread bytes`` (so the buffer never overflows), sampled by the caller;
  per process the average, minimum and maximum; :meth:`NeedTracer.maybe_persist` writes
  the whole trace to a file atomically every ``persist_every_ns`` so it survives a crash.
* **NetPIS-S** (:func:`classify`): user processes are zygote's children; the foreground
  process is the one with oom_adj 0; its sockets are those owned by it or by a child
  (ppid = its pid); sockets of processes named in the exception list are never touched.
* **NetPIS-R** (:class:`Allocator`): one decision per socket from a
  :class:`SocketObservation` to :class:`SocketSettings`.

Interpretation of the NetPIS study's "per packet, buffer × (1 + α)" (documented choice): the
*target* is the traced need scaled once — a foreground socket's target buffer is
``need × (1 + α)`` and a background socket's ``need × (1 − β)`` (both within
[``min_rcvbuf_bytes``, ``max_rcvbuf_bytes``]) — recomputed at every decision (the caller
decides how often: per packet in the paper, every ``control_period`` in mqoe), never a
factor compounded per packet. For a background socket ``need`` is the socket's recent
peak of ``2 × unread`` (:meth:`NeedTracer.socket_need`). A foreground socket is sized
for the larger of that and its process's maximum need (NetPIS-D's per-process ``max``),
and never below the kernel's default buffer: "buffer × (1 + α)" favours the foreground,
it never takes from it. (Sizing the foreground at ``need × (1 + α)`` alone was tried
and measured: with an app that drains its socket every 20 ms the need is a few tens of
KB, far below the flow's bandwidth-delay product, and the foreground starved itself.)
The advertised window's target equals the buffer's (Linux advertises from the buffer;
the clamp only matters while they move):

* case 1 (an increase): the buffer grows first; the window clamp follows at the next
  decision;
* case 2 (a decrease): the window clamp shrinks first; the buffer shrinks only once
  nothing already promised to the sender (``committed_bytes``: unread data plus the
  highest right edge advertised) exceeds the new size. So the sender can never overrun
  the buffer.

Delayed ACK (variant ``netpis``, background sockets, only while a foreground flow
exists): bounded frame size ``size_bf = γ × buffer`` (the buffer the sender can use:
while case 2 is in progress that is the already-shrunk window clamp — a bound larger than
the window would hold every ACK for the full ATO) and ATO
``(size_bf / size_obf) × ato_o``, with ``size_obf`` (one MSS: Linux ACKs once more than
one full frame is unacknowledged) and ``ato_o`` (40 ms, TCP_ATO_MIN) the kernel's; the
ATO is capped at TCP_DELACK_MAX (200 ms): Linux never delays an ACK longer than that on
the paths that matter here (``tcp_send_delayed_ack`` also bounds it by the RTT), and a
longer ATO would exceed the sender's minimum RTO and cause spurious timeouts.

"Background sockets unchanged when only background processes exist" is read as: NetPIS
hands the socket back as it was before NetPIS touched it — the buffer its app set with
SO_RCVBUF, or the kernel's default (``SocketObservation.own_rcvbuf_bytes``), no clamp,
the kernel's delayed ACK (``SocketSettings.released``) — with the same case-1/case-2
ordering on the way. A socket the variant does not control (the foreground under
``bg-only``) is left exactly so. A foreground process that has not received anything
for ``idle_ns`` does not count as a foreground flow.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from mqoe.engine.rounding import round_half_even
from mqoe.results.atomic import atomic_write_text

VARIANTS: Final = ("original", "fg-only", "bg-only", "both", "netpis")
ZYGOTE_PID: Final = 2  # every Android app is forked from zygote


@dataclass(frozen=True)
class NetPisParams:
    """NetPIS-R's weights and bounds."""

    alpha: float = 0.6  # foreground head-room (the NetPIS evaluation)
    beta: float = 0.3  # background cut (the NetPIS evaluation)
    gamma: float = 0.5  # background bounded frame size as a fraction of its buffer (NetPIS)
    min_rcvbuf_bytes: int = 8 * 1460  # floor: room for a few segments (calibration)
    max_rcvbuf_bytes: int = 2 << 20  # Android 4.x wifi tcp_rmem max (init.rc buffersize.wifi)
    kernel_rcvbuf_bytes: int = 1 << 20  # Android 4.x wifi tcp_rmem default (init.rc)
    size_obf_bytes: int = 1460  # kernel bounded frame: one rcv_mss (tcp __tcp_ack_snd_check)
    ato_o_ns: int = 40_000_000  # kernel ATO: TCP_ATO_MIN 40 ms
    max_ato_ns: int = 200_000_000  # TCP_DELACK_MAX (include/net/tcp.h)

    def __post_init__(self) -> None:
        for name in ("alpha", "beta", "gamma"):
            value = getattr(self, name)
            if not 0 < value < 1:
                raise ValueError(f"{name} must be in (0, 1), got {value}")
        if not 0 < self.min_rcvbuf_bytes <= self.max_rcvbuf_bytes:
            raise ValueError("need 0 < min_rcvbuf_bytes ≤ max_rcvbuf_bytes")
        if self.kernel_rcvbuf_bytes <= 0 or self.size_obf_bytes <= 0 or self.ato_o_ns <= 0:
            raise ValueError("kernel defaults must be positive")


@dataclass(frozen=True)
class Variant:
    """Which sockets NetPIS-R controls: foreground, background, delayed ACK."""

    name: str
    control_fg: bool
    control_bg: bool
    delayed_ack: bool

    @classmethod
    def named(cls, name: str) -> Variant:
        if name not in VARIANTS:
            raise ValueError(f"NetPIS variant must be one of {', '.join(VARIANTS)}, got {name!r}")
        fg = name in ("fg-only", "both", "netpis")
        bg = name in ("bg-only", "both", "netpis")
        return cls(name, fg, bg, name == "netpis")


# -- NetPIS-D -----------------------------------------------------------------------------
@dataclass
class ProcessNeed:
    """Per-process statistics of the traced need (bytes)."""

    samples: int = 0
    total: float = 0.0
    min_bytes: int = 0
    max_bytes: int = 0

    @property
    def avg_bytes(self) -> float:
        return self.total / self.samples if self.samples else 0.0

    def add(self, need: int) -> None:
        if not self.samples or need < self.min_bytes:
            self.min_bytes = need
        if need > self.max_bytes:
            self.max_bytes = need
        self.samples += 1
        self.total += need


@dataclass
class NeedTracer:
    """NetPIS-D: traces ``2 × unread`` per socket; per-process stats; crash-safe dumps.

    ``peak_samples``: how many recent samples make a socket's need (its peak); with the
    caller sampling every 10 ms, 50 samples is half a second of history.
    """

    path: Path | None = None
    persist_every_ns: int = 1_000_000_000
    peak_samples: int = 50
    processes: dict[int, ProcessNeed] = field(default_factory=dict)
    trace: list[tuple[int, int, int, int]] = field(default_factory=list)  # t, pid, sock, need
    _recent: dict[int, deque[int]] = field(default_factory=dict)
    _next_persist_ns: int = 0
    persists: int = 0

    def observe(self, now_ns: int, pid: int, sock: int, unread_bytes: int) -> int:
        """Record one sample; returns the socket's need (bytes)."""
        need = 2 * unread_bytes
        stats = self.processes.get(pid)
        if stats is None:  # (not setdefault: that would build a ProcessNeed per sample)
            stats = self.processes[pid] = ProcessNeed()
        stats.add(need)
        recent = self._recent.get(sock)
        if recent is None:
            recent = self._recent[sock] = deque(maxlen=self.peak_samples)
        recent.append(need)
        self.trace.append((now_ns, pid, sock, need))
        return need

    def socket_need(self, sock: int) -> int:
        """The socket's recent peak need (bytes); 0 if never sampled."""
        recent = self._recent.get(sock)
        return max(recent) if recent else 0

    def process_max(self, pid: int) -> int:
        """The process's maximum need so far (bytes; 0 if never sampled)."""
        stats = self.processes.get(pid)
        return stats.max_bytes if stats else 0

    def forget(self, sock: int) -> None:
        self._recent.pop(sock, None)

    def to_json(self) -> str:
        return json.dumps(
            {
                "processes": {
                    str(pid): {
                        "samples": s.samples,
                        "avg_bytes": s.avg_bytes,
                        "min_bytes": s.min_bytes,
                        "max_bytes": s.max_bytes,
                    }
                    for pid, s in sorted(self.processes.items())
                },
                "trace": self.trace,
            }
        )

    def maybe_persist(self, now_ns: int) -> bool:
        """Write the trace (atomically) if a period has passed; True if it wrote."""
        if self.path is None or now_ns < self._next_persist_ns:
            return False
        self._next_persist_ns = now_ns + self.persist_every_ns
        atomic_write_text(self.path, self.to_json())
        self.persists += 1
        return True

    @staticmethod
    def load(path: Path) -> dict[str, object]:
        """Read a persisted trace back (``processes`` and ``trace``)."""
        data = json.loads(path.read_text())
        assert isinstance(data, dict)
        return data


# -- NetPIS-S -----------------------------------------------------------------------------
@dataclass(frozen=True)
class ProcInfo:
    pid: int
    ppid: int
    name: str
    oom_adj: int


@dataclass(frozen=True)
class SocketRole:
    foreground: bool
    exempt: bool


def foreground_pid(processes: Iterable[ProcInfo]) -> int | None:
    """The foreground user process: a zygote child with oom_adj 0 (None if there is none)."""
    for proc in processes:
        if proc.ppid == ZYGOTE_PID and proc.oom_adj == 0:
            return proc.pid
    return None


def classify(
    processes: Iterable[ProcInfo],
    socket_owners: Mapping[int, int],
    exceptions: Iterable[str] = (),
) -> dict[int, SocketRole]:
    """NetPIS-S: each socket (id → owner pid) as foreground or background, and exempt."""
    procs = {p.pid: p for p in processes}
    fg = foreground_pid(procs.values())
    excepted = set(exceptions)
    roles = {}
    for sock, pid in socket_owners.items():
        proc = procs.get(pid)
        is_fg = fg is not None and (pid == fg or (proc is not None and proc.ppid == fg))
        exempt = proc is not None and proc.name in excepted
        roles[sock] = SocketRole(is_fg, exempt)
    return roles


# -- NetPIS-R -----------------------------------------------------------------------------
@dataclass(frozen=True)
class SocketObservation:
    """What NetPIS-R needs to know about one socket (bytes)."""

    need_bytes: int  # NetPIS-D's need
    rcvbuf_bytes: int  # current receive buffer
    window_clamp_bytes: int | None  # current clamp on the advertised window (None: none)
    committed_bytes: int  # unread + promised (highest advertised right edge − rcv_nxt)
    foreground: bool  # the socket belongs to the foreground process (or its child)
    foreground_exists: bool  # a foreground flow exists right now
    exempt: bool = False  # its process is on the exception list
    process_max_need_bytes: int = 0  # NetPIS-D's per-process maximum (foreground sizing)
    # The buffer the socket had before NetPIS touched it — the app's SO_RCVBUF, or the
    # kernel's default if it set none (None: the kernel's default). A socket NetPIS does
    # not control, or releases, goes back to it.
    own_rcvbuf_bytes: int | None = None


@dataclass(frozen=True)
class SocketSettings:
    """What to apply: buffer, window clamp (None: none), delayed ACK (None: kernel's)."""

    rcvbuf_bytes: int
    window_clamp_bytes: int | None
    delack_bytes: int | None = None
    ato_ns: int | None = None
    case1: bool = False  # an increase in progress (window still to follow)
    case2: bool = False  # a decrease in progress (buffer still to follow)

    @property
    def released(self) -> bool:
        return self.window_clamp_bytes is None and self.delack_bytes is None


# One decision as plain values, in :class:`SocketSettings`' field order: buffer, window
# clamp, delayed-ACK bound, ATO, case 1, case 2.
Decision = tuple[int, int | None, int | None, int | None, bool, bool]


class Allocator:
    """NetPIS-R for one variant: ``decide(observation) -> settings``.

    :meth:`decide_values` is the same decision on plain values, for a caller deciding
    every few milliseconds (no observation or settings object per decision)."""

    def __init__(self, variant: Variant | str, params: NetPisParams | None = None) -> None:
        self.variant = Variant.named(variant) if isinstance(variant, str) else variant
        self.params = params or NetPisParams()

    def decide(self, obs: SocketObservation) -> SocketSettings:
        return SocketSettings(
            *self.decide_values(
                obs.need_bytes,
                obs.rcvbuf_bytes,
                obs.window_clamp_bytes,
                obs.committed_bytes,
                obs.foreground,
                obs.foreground_exists,
                obs.exempt,
                obs.process_max_need_bytes,
                obs.own_rcvbuf_bytes,
            )
        )

    def decide_values(
        self,
        need_bytes: int,
        rcvbuf_bytes: int,
        window_clamp_bytes: int | None,
        committed_bytes: int,
        foreground: bool,
        foreground_exists: bool,
        exempt: bool = False,
        process_max_need_bytes: int = 0,
        own_rcvbuf_bytes: int | None = None,
    ) -> Decision:
        """:meth:`decide` on the fields of a :class:`SocketObservation` (same names)."""
        p, v = self.params, self.variant
        controlled = not exempt and (v.control_fg if foreground else v.control_bg)
        if not controlled or (not foreground and not foreground_exists):
            own = p.kernel_rcvbuf_bytes if own_rcvbuf_bytes is None else own_rcvbuf_bytes
            # left alone, or handed back as it was
            return _move(rcvbuf_bytes, window_clamp_bytes, committed_bytes, own, None)
        if foreground:  # favoured: never below the kernel's size, more if it needs it
            need = max(need_bytes, process_max_need_bytes)
            target = max(p.kernel_rcvbuf_bytes, round_half_even(need * (1 + p.alpha)))
        else:
            target = round_half_even(need_bytes * (1 - p.beta))
        target = min(max(target, p.min_rcvbuf_bytes), p.max_rcvbuf_bytes)
        settings = _move(rcvbuf_bytes, window_clamp_bytes, committed_bytes, target, target)
        if not (v.delayed_ack and not foreground):
            return settings
        buffer, clamp, _, _, case1, case2 = settings
        usable = buffer  # during case 2 the sender sees the clamp, not it
        if clamp is not None:
            usable = min(usable, clamp)
        bound = max(p.size_obf_bytes, round_half_even(p.gamma * usable))
        ato = min(p.max_ato_ns, round_half_even(bound / p.size_obf_bytes * p.ato_o_ns))
        return (buffer, clamp, bound, ato, case1, case2)


def _move(
    current: int, clamp: int | None, committed: int, buffer: int, window: int | None
) -> Decision:
    """One step from the socket's buffer ``current`` and window clamp ``clamp`` towards
    (``buffer``, ``window``) honouring the case-1 / case-2 ordering (``committed``: the
    observation's ``committed_bytes``)."""
    if buffer > current:  # case 1: the buffer first, the window clamp stays for now
        return (buffer, clamp, None, None, clamp is not None and clamp < buffer, False)
    if buffer == current:  # buffer in place: the window may follow
        return (buffer, window, None, None, False, False)
    # case 2: the window first; the buffer once nothing promised exceeds the new size
    effective = buffer if window is None else window
    if (clamp is None or clamp > effective) or committed > buffer:
        return (current, effective, None, None, False, True)
    return (buffer, window, None, None, False, False)


def settings_changed(obs: SocketObservation, settings: SocketSettings) -> bool:
    return (
        settings.rcvbuf_bytes != obs.rcvbuf_bytes
        or settings.window_clamp_bytes != obs.window_clamp_bytes
    )


__all__ = [
    "VARIANTS",
    "Allocator",
    "NeedTracer",
    "NetPisParams",
    "ProcInfo",
    "ProcessNeed",
    "SocketObservation",
    "SocketRole",
    "SocketSettings",
    "Variant",
    "classify",
    "foreground_pid",
]
