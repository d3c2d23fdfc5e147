"""Packet-level TCP: one data direction (server → client) with ACKs flowing back.

Sender: byte sequence numbers, MSS segments, ACK clocking, slow start and congestion
avoidance (NewReno, RFC 5681/6582; CUBIC, RFC 8312, as an option), fast retransmit and
NewReno recovery on three duplicate ACKs, with Limited Transmit (RFC 3042) and Early
Retransmit (RFC 5827) for small windows as Linux has them, RTO per RFC 6298 with
exponential backoff and go-back-N after a timeout (no SACK), restart after idle as
Linux's ``tcp_cwnd_restart`` (RFC 5681 §4.1 with RFC 2861's decay: ssthresh kept, cwnd
halved per idle RTO down to the initial window), a persist probe when the peer's window
is closed; chrono stats as Linux's ``tcp_info`` has them (``busy_ns``, ``rwnd_limited_ns``:
how long the receiver's window, not cwnd, held waiting data back).

Receiver: in-order delivery with an out-of-order store, a receive buffer whose free
space is the advertised window, delayed ACKs (every second full segment, or the ACK
timeout ``ato``), immediate ACKs for out-of-order data and for filling a hole, and a
window update when the application frees space after a closed window.

Receiver controls (those NetPIS uses), changeable while the connection runs, all defaulting to
the kernel's behaviour: the receive buffer (``set_rcvbuf``, SO_RCVBUF), a clamp on the
advertised window (``set_window_clamp``, TCP_WINDOW_CLAMP), and the delayed-ACK bounded
frame size and ACK timeout (``set_delayed_ack``). The window advertised is never more
than the free buffer space; a segment that arrives inside a window already advertised
but no longer fits the buffer (the buffer was shrunk too early) is counted in
``overruns`` — the event NetPIS's case-2 ordering exists to prevent.

RTT is measured with the timestamps option (each ACK echoes the send time of the
earliest segment it acknowledges first), so retransmissions never confuse it.
The client→server direction carries ACKs and small request messages only; a request is
assumed to arrive (the uplink is uncongested in every studied setup).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Literal, Protocol

from mqoe.device.net.link import Link, Packet, send
from mqoe.engine import Environment, Timer, ms

# Linux TCP constants (include/net/tcp.h).
TCP_RTO_MIN_NS = ms(200)  # TCP_RTO_MIN
TCP_RTO_MAX_NS = ms(120_000)  # TCP_RTO_MAX
TCP_TIMEOUT_INIT_NS = ms(1000)  # TCP_TIMEOUT_INIT (RFC 6298 §2.1)
TCP_ATO_MIN_NS = ms(40)  # TCP_ATO_MIN: delayed-ACK timeout
_INFINITE = 1 << 62
NO_TIMESTAMP = -1
_IDLE, _BUSY, _RWND_LIMITED = 0, 1, 2  # the sender's chrono states


@dataclass(frozen=True)
class TcpConfig:
    """Per-connection TCP parameters; defaults are Linux's unless noted."""

    mss_bytes: int = 1460  # Ethernet MTU 1500 − 40 bytes of headers
    initial_window_segments: int = 10  # RFC 6928 (Linux ≥ 2.6.39); 4 per RFC 3390
    # A name in CONGESTION_CONTROLS (net.ipv4.tcp_congestion_control); Linux's default
    # since 2.6.19 is cubic.
    congestion_control: str = "cubic"
    restart_after_idle: bool = True  # net.ipv4.tcp_slow_start_after_idle = 1
    sack: bool = True  # net.ipv4.tcp_sack = 1 (RFC 2018); False = NewReno recovery only
    hystart: bool = True  # CUBIC's HyStart delay-increase exit (Linux tcp_cubic hystart=1)
    # How an ACK grows the window: "bytes" = by the data it acknowledges (Linux ≥ 4.0,
    # RFC 3465); "per-ack" = by one segment per ACK, however many it acknowledges, as
    # Linux before 3.14 (slow start) and 4.0 (congestion avoidance) did — stretch ACKs,
    # e.g. from a receiver that delays its ACKs longer, slow such a sender down.
    ack_counting: Literal["bytes", "per-ack"] = "bytes"
    # Grow cwnd only while the sender uses it (Linux ≥ 4.x tcp_is_cwnd_limited /
    # tcp_cwnd_validate; RFC 7661 likewise): an ACK grows it if the window was full at
    # some point in the current round, or, in slow start, while cwnd is below twice the
    # most the round had in flight. A sender held back by the receiver's window or by the
    # application keeps its cwnd instead of inflating it. Linux always does this; it is
    # off by default here because turning it on moves the spiral's cross-check against
    # real Linux further apart (docs/guide/testbed.md): some other Linux mechanism the model
    # lacks evidently compensates, and until that is found the validated default stays.
    cwnd_validation: bool = False
    delayed_ack: bool = True
    ato_ns: int = TCP_ATO_MIN_NS
    rcvbuf_bytes: int = 1 << 20  # receive buffer; its free space is the advertised window
    rto_min_ns: int = TCP_RTO_MIN_NS
    cwnd_sample_ns: int = ms(10)  # spacing of the recorded cwnd/srtt series

    def __post_init__(self) -> None:
        if self.mss_bytes <= 0 or self.initial_window_segments <= 0 or self.rcvbuf_bytes <= 0:
            raise ValueError("mss, initial window and receive buffer must be positive")
        if self.ack_counting not in ("bytes", "per-ack"):
            raise ValueError(f"ack_counting must be bytes or per-ack, got {self.ack_counting!r}")
        if self.congestion_control not in CONGESTION_CONTROLS:
            names = ", ".join(sorted(CONGESTION_CONTROLS))
            raise ValueError(
                f"congestion_control must be one of {names}, got {self.congestion_control!r}"
            )


class CongestionControl(Protocol):
    """A congestion-control algorithm, as Linux's ``tcp_congestion_ops``: the sender
    does slow start, loss detection and recovery itself and asks the algorithm for what
    differs between them. One instance per connection (it may keep state)."""

    name: ClassVar[str]

    def ssthresh(self, sender: TcpSender) -> float:
        """The slow-start threshold (bytes) after a loss (fast retransmit or timeout)."""
        ...

    def cong_avoid(self, sender: TcpSender, acked: int, now_ns: int) -> None:
        """Grow ``sender.cwnd`` (bytes) for ``acked`` bytes in congestion avoidance."""
        ...

    def pkts_acked(self, sender: TcpSender, rtt_ns: int) -> None:
        """An RTT sample from an ACK (HyStart's hook)."""
        ...

    def restart(self, sender: TcpSender) -> None:
        """The window restarts after idle (CA_EVENT_CWND_RESTART)."""
        ...


class NewReno:
    """RFC 5681 / 6582 congestion avoidance: one MSS per window, half the flight on loss."""

    name: ClassVar[str] = "newreno"

    def ssthresh(self, sender: TcpSender) -> float:
        return max((sender.snd_max - sender.snd_una) / 2, 2.0 * sender.mss)

    def cong_avoid(self, sender: TcpSender, acked: int, now_ns: int) -> None:
        sender.cwnd += sender.mss * acked / sender.cwnd

    def pkts_acked(self, sender: TcpSender, rtt_ns: int) -> None:
        pass

    def restart(self, sender: TcpSender) -> None:
        pass


class Cubic:
    """CUBIC window growth (RFC 8312), in segments, with fast convergence, and HyStart's
    delay-increase exit from slow start (Linux tcp_cubic, ``hystart=1``)."""

    name: ClassVar[str] = "cubic"
    C = 0.4
    BETA = 0.7

    __slots__ = ("epoch_ns", "k", "min_rtt_ns", "origin", "round_end", "round_min_ns",
                 "round_samples", "w_last_max")  # fmt: skip

    def __init__(self) -> None:
        self.epoch_ns = -1
        self.w_last_max = 0.0
        self.origin = 0.0
        self.k = 0.0
        # HyStart (delay increase): per-round minimum RTT of the first 8 samples.
        self.min_rtt_ns = float(_INFINITE)
        self.round_end = 0
        self.round_min_ns = float(_INFINITE)
        self.round_samples = 0

    def ssthresh(self, sender: TcpSender) -> float:
        return self.on_loss(sender.cwnd / sender.mss) * sender.mss

    def on_loss(self, cwnd_segs: float) -> float:
        """New ssthresh (segments) after a loss; starts a new epoch."""
        if cwnd_segs < self.w_last_max:  # fast convergence (RFC 8312 §4.6)
            self.w_last_max = cwnd_segs * (1 + self.BETA) / 2
        else:
            self.w_last_max = cwnd_segs
        self.epoch_ns = -1
        return max(cwnd_segs * self.BETA, 2.0)

    def restart(self, sender: TcpSender) -> None:
        self.epoch_ns = -1

    def cong_avoid(self, sender: TcpSender, acked: int, now_ns: int) -> None:
        mss = sender.mss
        cwnd_segs = sender.cwnd / mss
        target = self.target(now_ns, cwnd_segs, sender.srtt_ns or 1e6)
        if target > cwnd_segs:
            sender.cwnd += mss * (target - cwnd_segs) / cwnd_segs * (acked / mss)
        else:
            sender.cwnd += mss * 0.01 * acked / sender.cwnd  # cubic's slow probe near W_max

    def target(self, now_ns: int, cwnd_segs: float, srtt_ns: float) -> float:
        """The window CUBIC aims for one RTT ahead (with the TCP-friendly floor)."""
        if self.epoch_ns < 0:
            self.epoch_ns = now_ns
            if cwnd_segs < self.w_last_max:
                self.k = ((self.w_last_max - cwnd_segs) / self.C) ** (1 / 3)
                self.origin = self.w_last_max
            else:
                self.k = 0.0
                self.origin = cwnd_segs
        t = (now_ns - self.epoch_ns + srtt_ns) / 1e9
        target = self.origin + self.C * (t - self.k) ** 3
        # TCP-friendly region (RFC 8312 §4.2): at least what Reno would have by now.
        reno = self.w_last_max * self.BETA + 3 * (1 - self.BETA) / (1 + self.BETA) * (
            (now_ns - self.epoch_ns) / max(srtt_ns, 1.0)
        )
        return max(target, reno)

    def pkts_acked(self, sender: TcpSender, rtt_ns: int) -> None:
        """Leave slow start when a round's RTT rises clearly above the minimum (Linux
        bictcp_hystart_update, HYSTART_DELAY: +clamp(min_rtt/8, 4 ms, 16 ms))."""
        if not (sender.cfg.hystart and sender.cwnd < sender.ssthresh):
            return
        self.min_rtt_ns = min(self.min_rtt_ns, rtt_ns)
        if sender.snd_una >= self.round_end:
            self.round_end = sender.snd_nxt
            self.round_min_ns = float(_INFINITE)
            self.round_samples = 0
        if self.round_samples >= 8:
            return
        self.round_samples += 1
        self.round_min_ns = min(self.round_min_ns, rtt_ns)
        if self.round_samples == 8 and sender.cwnd >= 16 * sender.mss:
            threshold = min(max(self.min_rtt_ns / 8, ms(4)), ms(16))
            if self.round_min_ns >= self.min_rtt_ns + threshold:
                sender.ssthresh = sender.cwnd


# The explicit registry (TcpConfig.congestion_control names one): a new algorithm is a
# class with the CongestionControl hooks and one line here.
CONGESTION_CONTROLS: dict[str, type[CongestionControl]] = {"newreno": NewReno, "cubic": Cubic}


class _Scoreboard:
    """SACKed byte ranges above snd_una (RFC 2018), merged and sorted."""

    __slots__ = ("sacked_bytes", "spans")

    def __init__(self) -> None:
        self.spans: list[tuple[int, int]] = []
        self.sacked_bytes = 0

    def update(self, blocks: tuple[tuple[int, int], ...] | None, snd_una: int) -> None:
        spans = [(max(s, snd_una), e) for s, e in self.spans if e > snd_una]
        if blocks:
            spans.extend((max(s, snd_una), e) for s, e in blocks if e > snd_una)
            spans.sort()
        merged: list[tuple[int, int]] = []
        for s, e in spans:
            if merged and s <= merged[-1][1]:
                if e > merged[-1][1]:
                    merged[-1] = (merged[-1][0], e)
            else:
                merged.append((s, e))
        self.spans = merged
        self.sacked_bytes = sum(e - s for s, e in merged)

    @property
    def highest(self) -> int:
        return self.spans[-1][1] if self.spans else 0

    def holes(self, start: int) -> list[tuple[int, int]]:
        """Un-SACKed ranges from ``start`` up to the highest SACKed byte."""
        out = []
        cursor = start
        for s, e in self.spans:
            if s > cursor:
                out.append((cursor, s))
            cursor = max(cursor, e)
        return out

    def skip(self, seq: int) -> int:
        """``seq``, moved past any SACKed range it falls in."""
        for s, e in self.spans:
            if s <= seq < e:
                return e
        return seq

    def next_sacked_start(self, seq: int) -> int:
        for s, _ in self.spans:
            if s > seq:
                return s
        return _INFINITE


class TcpSender:
    """The sending half (at the server). ``write(n)`` queues n bytes of application data."""

    def __init__(
        self,
        env: Environment,
        cfg: TcpConfig,
        route: tuple[Link, ...],
        sink: Callable[[Packet], None],
        flow: object,
    ) -> None:
        self.env = env
        self.cfg = cfg
        self.route = route
        self.sink = sink
        self.flow = flow
        self.mss = cfg.mss_bytes
        self.iw_bytes = cfg.initial_window_segments * cfg.mss_bytes
        self.cwnd = float(self.iw_bytes)
        self.ssthresh = float(_INFINITE)
        self.rwnd = cfg.rcvbuf_bytes
        self.snd_una = 0
        self.snd_nxt = 0
        self.snd_max = 0  # highest sequence ever sent (retransmissions stay below it)
        self.app_end = 0  # bytes the application has written
        self.dupacks = 0
        self.in_recovery = False
        self.recover = 0
        self.srtt_ns = 0.0
        self.rttvar_ns = 0.0
        self.rto_ns = TCP_TIMEOUT_INIT_NS
        self._rto_timer: Timer | None = None
        self._last_send_ns = -_INFINITE
        self.cc: CongestionControl = CONGESTION_CONTROLS[cfg.congestion_control]()
        self._per_ack = cfg.ack_counting == "per-ack"
        self._validate = cfg.cwnd_validation
        self._is_cwnd_limited = False  # tcp_cwnd_validate state for the current round
        self._max_flight = 0
        self._cwnd_usage_seq = 0
        self._board = _Scoreboard()
        self._retx_next = 0  # SACK recovery: holes below this were retransmitted (HighRxt)
        self._retx_marks: dict[int, int] = {}  # retransmitted seq → snd_nxt when resent
        self._recover_fs = 1  # PRR state (RFC 6937): flight at entry, delivered, sent
        self._prr_delivered = 0
        self._prr_out = 0
        self._prr_mark = 0
        # Counters and series.
        self.bytes_sent = 0
        self.segments_sent = 0
        self.retransmits = 0
        self.fast_retransmits = 0
        self.lost_retransmits = 0
        self.timeouts = 0
        self.idle_restarts = 0
        # Chrono stats (Linux tcp_chrono_*, tcp_info busy_time / rwnd_limited): how long
        # the sender had data outstanding or waiting, and how much of that time the
        # receiver's window, not cwnd, held it back.
        self._chrono_state = _IDLE
        self._chrono_since_ns = 0
        self._chrono_ns = [0, 0, 0]
        self.series_t_ns: list[int] = []
        self.series_cwnd: list[int] = []
        self.series_srtt_ns: list[int] = []
        self._next_sample_ns = 0

    # -- application side -------------------------------------------------------------
    def write(self, nbytes: int) -> None:
        """Queue ``nbytes`` more bytes for sending (``math.inf``-like: use a huge number)."""
        if nbytes <= 0:
            return
        self.app_end += nbytes
        self._send_available()

    def close(self) -> None:
        """Stop sending new data (bytes already in flight are still delivered)."""
        self.app_end = self.snd_max

    @property
    def in_flight(self) -> int:
        return self.snd_nxt - self.snd_una

    @property
    def unsent(self) -> int:
        return self.app_end - self.snd_nxt

    @property
    def busy_ns(self) -> int:
        """Time with data in flight or waiting to be sent (rwnd-limited time included)."""
        return self._chrono_total(_BUSY) + self._chrono_total(_RWND_LIMITED)

    @property
    def rwnd_limited_ns(self) -> int:
        """Time the peer's advertised window, not cwnd, kept waiting data from being sent."""
        return self._chrono_total(_RWND_LIMITED)

    def _chrono_total(self, state: int) -> int:
        total = self._chrono_ns[state]
        if self._chrono_state == state:
            total += self.env.now - self._chrono_since_ns
        return total

    def _chrono_update(self) -> None:
        if self.snd_nxt < self.app_end:
            length = min(self.mss, self.app_end - self.snd_nxt)
            fits_rwnd = self.snd_nxt - self.snd_una + length <= self.rwnd
            state = _BUSY if fits_rwnd or self.cwnd <= self.rwnd else _RWND_LIMITED
        else:
            state = _BUSY if self.snd_nxt > self.snd_una else _IDLE
        if state != self._chrono_state:
            now = self.env.now
            self._chrono_ns[self._chrono_state] += now - self._chrono_since_ns
            self._chrono_state = state
            self._chrono_since_ns = now

    # -- sending ----------------------------------------------------------------------
    def _send_available(self) -> None:
        self._send_now()
        self._chrono_update()
        if self._validate:
            self._cwnd_validate()

    def _cwnd_validate(self) -> None:
        """tcp_cwnd_validate: remember per round whether cwnd was ever full, else the
        most that was in flight."""
        flight = self.snd_nxt - self.snd_una
        if self.snd_nxt < self.app_end:
            limited = flight + min(self.mss, self.app_end - self.snd_nxt) > self.cwnd
        else:
            limited = flight >= self.cwnd
        if (
            self.snd_una >= self._cwnd_usage_seq
            or limited
            or (not self._is_cwnd_limited and flight > self._max_flight)
        ):
            self._is_cwnd_limited = limited
            self._max_flight = flight
            self._cwnd_usage_seq = self.snd_nxt

    def _cwnd_in_use(self) -> bool:
        """tcp_is_cwnd_limited: may this ACK grow cwnd?"""
        if not self._validate or self._is_cwnd_limited:
            return True
        return self.cwnd < self.ssthresh and self.cwnd < 2 * self._max_flight

    def _send_now(self) -> None:
        now = self.env.now
        if (
            self.cfg.restart_after_idle
            and self.segments_sent
            and self.snd_una == self.snd_max
            and now - self._last_send_ns > self.rto_ns
            and self.snd_nxt < self.app_end
        ):
            self._restart_after_idle(now - self._last_send_ns)
        if self.in_recovery and self.cfg.sack:
            self._sack_recover()
            return
        mss = self.mss
        window = min(self.cwnd, self.rwnd)
        board = self._board
        while self.snd_nxt < self.app_end:
            if board.spans:  # after a timeout: never resend what the peer SACKed
                self.snd_nxt = board.skip(self.snd_nxt)
                if self.snd_nxt >= self.app_end:
                    break
            length = min(mss, self.app_end - self.snd_nxt)
            if board.spans:
                length = min(length, board.next_sacked_start(self.snd_nxt) - self.snd_nxt)
            if self.snd_nxt - self.snd_una + length > window:
                break
            self._transmit(self.snd_nxt, length)
            self.snd_nxt += length
        if self.snd_nxt > self.snd_una:
            if self._rto_timer is None:
                self._arm_rto()
        elif self.snd_nxt < self.app_end and self.rwnd < min(mss, self.unsent):
            self._arm_rto()  # nothing in flight, window closed: the persist probe

    def _transmit(self, seq: int, length: int) -> None:
        now = self.env.now
        packet = Packet(self.flow, seq, length, self.route, self.sink, now)
        if seq < self.snd_max:
            self.retransmits += 1
        elif seq + length > self.snd_max:
            self.snd_max = seq + length
        self.bytes_sent += length
        self.segments_sent += 1
        self._last_send_ns = now
        send(packet)

    def _restart_after_idle(self, idle_ns: int) -> None:
        """tcp_cwnd_restart: keep ssthresh ≥ ¾ cwnd, halve cwnd per idle RTO, floor at IW."""
        self.idle_restarts += 1
        self.ssthresh = max(self.ssthresh, 0.75 * self.cwnd)
        restart = min(self.cwnd, self.iw_bytes)
        cwnd = self.cwnd
        idle = idle_ns - self.rto_ns
        while idle > 0 and cwnd > restart:
            cwnd /= 2
            idle -= self.rto_ns
        self.cwnd = max(cwnd, restart)
        self.cc.restart(self)
        self._sample(force=True)

    # -- timers -----------------------------------------------------------------------
    def _arm_rto(self) -> None:
        if self._rto_timer is not None:
            self._rto_timer.cancel()
        self._rto_timer = self.env.schedule(self.rto_ns, self._on_rto)

    def _on_rto(self, _: object) -> None:
        self._rto_timer = None
        if self.snd_una == self.snd_nxt:
            # Persist probe: one segment despite the closed window; its ACK reopens it.
            if self.snd_nxt < self.app_end:
                length = min(self.mss, self.app_end - self.snd_nxt)
                self._transmit(self.snd_nxt, length)
                self.snd_nxt += length
                self._arm_rto()
            return
        self.timeouts += 1
        self.ssthresh = self.cc.ssthresh(self)
        self.cwnd = float(self.mss)  # loss window (RFC 5681 §3.1)
        self.in_recovery = False
        self.dupacks = 0
        self.recover = self.snd_max
        self.snd_nxt = self.snd_una  # go-back-N (skipping what the peer SACKed)
        self.rto_ns = min(self.rto_ns * 2, TCP_RTO_MAX_NS)
        self._sample(force=True)
        self._send_available()
        if self._rto_timer is None:
            self._arm_rto()

    # -- ACK processing ---------------------------------------------------------------
    def on_ack(self, packet: Packet) -> None:
        ack = packet.ack
        self.rwnd = packet.rwnd
        if self.cfg.sack and (packet.sack or self._board.spans):
            self._board.update(packet.sack, max(ack, self.snd_una))
        if ack > self.snd_una:
            self._new_ack(ack, packet.tsecr)
        elif ack == self.snd_una and self.snd_nxt > self.snd_una:
            self._dupack()
        else:
            self._send_available()  # a window update

    def _new_ack(self, ack: int, tsecr: int) -> None:
        now = self.env.now
        acked = ack - self.snd_una
        self.snd_una = ack
        if self.snd_nxt < ack:  # after go-back-N, the peer already had these bytes
            self.snd_nxt = ack
        if tsecr != NO_TIMESTAMP:
            self._rtt_sample(now - tsecr)
            self.cc.pkts_acked(self, now - tsecr)
        if self.in_recovery:
            if ack >= self.recover:  # full ACK: leave recovery with cwnd = ssthresh
                self.in_recovery = False  # (Linux tcp_end_cwnd_reduction; RFC 6582 §3.2 5)
                self.cwnd = self.ssthresh
            elif not self.cfg.sack:  # NewReno partial ACK: resend the next hole, deflate
                self._transmit(ack, min(self.mss, self.snd_max - ack))
                self.cwnd = max(self.cwnd - acked + self.mss, float(self.mss))
        else:
            self.dupacks = 0
            if self._cwnd_in_use():
                self._grow(acked, now)
        if self.snd_una == self.snd_max:
            if self._rto_timer is not None:
                self._rto_timer.cancel()
                self._rto_timer = None
        else:
            self._arm_rto()
        self._sample()
        self._send_available()

    def _grow(self, acked: int, now: int) -> None:
        mss = self.mss
        if self._per_ack:  # tcp_slow_start / tcp_cong_avoid_ai before Linux 3.14 / 4.0
            acked = min(acked, mss)
        if self.cwnd < self.ssthresh:  # slow start: one MSS per MSS acked
            self.cwnd = min(self.cwnd + acked, max(self.ssthresh, self.cwnd))
            return
        self.cc.cong_avoid(self, acked, now)

    def _dupack(self) -> None:
        self.dupacks += 1
        if self.in_recovery:
            if not self.cfg.sack:
                self.cwnd += self.mss  # window inflation (RFC 6582 §3.2 step 4)
            self._send_available()
            return
        if self.snd_una < self.recover:
            return  # still within the window of an earlier loss (RFC 6582 §4.1)
        mss = self.mss
        outstanding = -(-(self.snd_max - self.snd_una) // mss)
        threshold = 3
        if outstanding < 4 and self.snd_nxt >= self.app_end:
            threshold = max(1, outstanding - 1)  # Early Retransmit (RFC 5827)
        if self.dupacks >= threshold or self._board.sacked_bytes >= 3 * mss:
            self._fast_retransmit()
        elif self.dupacks <= 2 and self.snd_nxt < self.app_end:
            # Limited Transmit (RFC 3042): each of the first two dupacks sends new data.
            length = min(mss, self.app_end - self.snd_nxt)
            if self.snd_nxt - self.snd_una + length <= min(self.cwnd + 2 * mss, self.rwnd):
                self._transmit(self.snd_nxt, length)
                self.snd_nxt += length

    def _fast_retransmit(self) -> None:
        self.fast_retransmits += 1
        flight = self.snd_max - self.snd_una
        self.ssthresh = self.cc.ssthresh(self)
        self.in_recovery = True
        self.recover = self.snd_max
        self._arm_rto()
        if self.cfg.sack:
            self._retx_next = self.snd_una
            self._retx_marks.clear()
            self._recover_fs = max(flight, 1)
            self._prr_delivered = 0
            self._prr_out = 0
            self._prr_mark = self.snd_una + self._board.sacked_bytes
            self._sample(force=True)
            self._sack_recover(first=True)
            return
        self._transmit(self.snd_una, min(self.mss, self.snd_max - self.snd_una))
        self.cwnd = self.ssthresh + 3 * self.mss
        self._sample(force=True)

    def _sack_recover(self, first: bool = False) -> None:
        """SACK loss recovery (RFC 6675) paced by Proportional Rate Reduction (RFC 6937,
        Linux since 3.2): each ACK lets out about as much as it reports delivered, scaled
        to ssthresh, so retransmissions follow the ACK clock instead of bursting. Lost
        holes go first (FACK: every un-SACKed byte below the highest SACK is lost), then
        new data. The entry retransmission goes out regardless (RFC 6675 §5 step 4.3)."""
        mss, board = self.mss, self._board
        self._retx_next = max(self._retx_next, self.snd_una)
        self._mark_lost_retransmissions()
        delivered_total = self.snd_una + board.sacked_bytes
        delivered = max(0, delivered_total - self._prr_mark)
        self._prr_mark = delivered_total
        self._prr_delivered += delivered
        holes = board.holes(self.snd_una)
        unsent_lost = sum(e - max(s, self._retx_next) for s, e in holes if e > self._retx_next)
        pipe = self.snd_max - self.snd_una - board.sacked_bytes - unsent_lost
        if pipe > self.ssthresh:  # proportional part
            budget = -(-self._prr_delivered * self.ssthresh // self._recover_fs) - self._prr_out
        else:  # slow-start reduction bound (PRR-SSRB)
            budget = min(
                self.ssthresh - pipe, max(self._prr_delivered - self._prr_out, delivered) + mss
            )
        if first:
            budget = max(budget, mss)
        sent = 0
        while sent < budget:
            hole = next(((s, e) for s, e in holes if e > self._retx_next), None)
            if hole is not None:
                start = max(hole[0], self._retx_next)
                length = min(mss, hole[1] - start)
                self._transmit(start, length)
                self._retx_next = start + length
                self._retx_marks[start] = self.snd_nxt  # data from here on is sent later
            elif self.snd_nxt < self.app_end:
                length = min(mss, self.app_end - self.snd_nxt)
                if self.snd_nxt - self.snd_una + length > self.rwnd:
                    break
                self._transmit(self.snd_nxt, length)
                self.snd_nxt += length
            else:
                break
            sent += length
        self._prr_out += sent
        self.cwnd = max(pipe + sent, float(mss))  # as Linux: cwnd = in flight + sndcnt

    def _mark_lost_retransmissions(self) -> None:
        """A retransmission is lost if data sent after it has been SACKed while its own
        range is still missing (Linux tcp_mark_lost_retrans; RACK generalises it)."""
        marks = self._retx_marks
        if not marks:
            return
        highest = self._board.highest
        for seq in list(marks):
            if seq < self.snd_una or self._board.skip(seq) != seq:
                del marks[seq]  # delivered
            elif highest > marks[seq]:
                del marks[seq]
                self._retx_next = min(self._retx_next, seq)
                self.lost_retransmits += 1

    def _rtt_sample(self, rtt_ns: int) -> None:
        """RFC 6298 §2: SRTT/RTTVAR with α = 1/8, β = 1/4; RTO ≥ the Linux minimum."""
        if self.srtt_ns == 0.0:
            self.srtt_ns = float(rtt_ns)
            self.rttvar_ns = rtt_ns / 2
        else:
            self.rttvar_ns = 0.75 * self.rttvar_ns + 0.25 * abs(self.srtt_ns - rtt_ns)
            self.srtt_ns = 0.875 * self.srtt_ns + 0.125 * rtt_ns
        rto = self.srtt_ns + max(4 * self.rttvar_ns, 1e6)  # G = 1 ms clock granularity
        self.rto_ns = int(min(max(rto, self.cfg.rto_min_ns), TCP_RTO_MAX_NS))

    def _sample(self, force: bool = False) -> None:
        now = self.env.now
        if force or now >= self._next_sample_ns:
            self._next_sample_ns = now + self.cfg.cwnd_sample_ns
            self.series_t_ns.append(now)
            self.series_cwnd.append(int(self.cwnd))
            self.series_srtt_ns.append(int(self.srtt_ns))


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
        self._delack_timer: Timer | None = None
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
        elif self._delack_timer is None:
            self._delack_timer = self.env.schedule(self.ato_ns, self._on_delack)

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
        self._delack_timer = None
        if self._pending_bytes:
            self._send_ack()

    def _send_ack(self, dup: bool = False) -> None:
        if self._delack_timer is not None:
            self._delack_timer.cancel()
            self._delack_timer = None
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
