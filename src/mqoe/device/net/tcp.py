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

RTT is measured with the timestamps option (each ACK echoes the send time of the
earliest segment it acknowledges first), so retransmissions never confuse it.
The client→server direction carries ACKs and small request messages only; a request is
assumed to arrive (the uplink is uncongested in every studied setup).

The receiving half is :mod:`mqoe.device.net.tcp_receiver`, the congestion-control
algorithms and their registry :mod:`mqoe.device.net.tcp_cc`, and :class:`TcpConfig` with
the Linux constants :mod:`mqoe.device.net.tcp_config`; all are importable from here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from mqoe.device.net.link import Link, Packet, send
from mqoe.device.net.tcp_cc import CONGESTION_CONTROLS, CongestionControl, Cubic, NewReno
from mqoe.device.net.tcp_config import (
    _INFINITE,
    NO_TIMESTAMP,
    TCP_ATO_MIN_NS,
    TCP_RTO_MAX_NS,
    TCP_RTO_MIN_NS,
    TCP_TIMEOUT_INIT_NS,
    TcpConfig,
)
from mqoe.device.net.tcp_receiver import TcpReceiver
from mqoe.engine import Deadline, Environment

__all__ = [
    "CONGESTION_CONTROLS",
    "NO_TIMESTAMP",
    "TCP_ATO_MIN_NS",
    "TCP_RTO_MAX_NS",
    "TCP_RTO_MIN_NS",
    "TCP_TIMEOUT_INIT_NS",
    "CongestionControl",
    "Cubic",
    "NewReno",
    "TcpConfig",
    "TcpReceiver",
    "TcpSender",
]

# The sender's chrono states (Final: compiled code reads them as constants).
_IDLE: Final = 0
_BUSY: Final = 1
_RWND_LIMITED: Final = 2


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
        self._rto = Deadline(env, self._on_rto)
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
            if not self._rto.active:
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
        self._rto.set(self.rto_ns)

    def _on_rto(self, _: object) -> None:
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
        if not self._rto.active:
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
            self._rto.cancel()
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
