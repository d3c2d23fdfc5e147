"""TCP congestion control behind the :class:`CongestionControl` protocol (Linux's
``tcp_congestion_ops``): NewReno (RFC 5681/6582), CUBIC (RFC 8312) with HyStart's
delay-increase exit, and the registry :data:`CONGESTION_CONTROLS` that
``TcpConfig.congestion_control`` names one of."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Final, Protocol

from mypy_extensions import mypyc_attr

from mqoe.engine import ms

if TYPE_CHECKING:
    from mqoe.device.net.tcp import TcpSender

# HyStart's minimum RTT before its first sample (the sender's "infinite", 1 << 62 ns).
_NO_RTT_SAMPLE_NS: Final = float(1 << 62)


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


# Compiled with mypyc (mqoe.native); a new algorithm may subclass these in plain Python.
@mypyc_attr(allow_interpreted_subclasses=True)
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


@mypyc_attr(allow_interpreted_subclasses=True)
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
        self.min_rtt_ns = _NO_RTT_SAMPLE_NS
        self.round_end = 0
        self.round_min_ns = _NO_RTT_SAMPLE_NS
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
            self.round_min_ns = _NO_RTT_SAMPLE_NS
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
CONGESTION_CONTROLS: Final[dict[str, type[CongestionControl]]] = {
    "newreno": NewReno,
    "cubic": Cubic,
}
