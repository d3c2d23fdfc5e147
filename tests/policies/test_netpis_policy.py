"""NetPIS-D/S/R as pure objects (no simulator)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqoe.policies.netpis import (
    Allocator,
    NeedTracer,
    NetPisParams,
    ProcInfo,
    SocketObservation,
    Variant,
    classify,
)

KB = 1024
DEFAULT = NetPisParams().kernel_rcvbuf_bytes


def obs(**kw: object) -> SocketObservation:
    base: dict[str, object] = dict(
        need_bytes=40 * KB,
        rcvbuf_bytes=DEFAULT,
        window_clamp_bytes=None,
        committed_bytes=0,
        foreground=False,
        foreground_exists=True,
    )
    base.update(kw)
    return SocketObservation(**base)  # type: ignore[arg-type]


def test_variants_control_the_documented_sides() -> None:
    assert Variant.named("original") == Variant("original", False, False, False)
    assert Variant.named("fg-only") == Variant("fg-only", True, False, False)
    assert Variant.named("bg-only") == Variant("bg-only", False, True, False)
    assert Variant.named("both") == Variant("both", True, True, False)
    assert Variant.named("netpis") == Variant("netpis", True, True, True)
    with pytest.raises(ValueError):
        Variant.named("fancy")
    with pytest.raises(ValueError):
        NetPisParams(alpha=1.0)


def test_classifier_finds_foreground_children_and_exceptions() -> None:
    procs = [
        ProcInfo(101, 2, "com.video", 0),  # zygote child, oom_adj 0: foreground
        ProcInfo(102, 101, "com.video:remote", 100),  # its child
        ProcInfo(103, 2, "com.store", 500),
        ProcInfo(104, 2, "com.voip", 500),
        ProcInfo(50, 1, "system_daemon", 0),  # adj 0 but not a zygote child
    ]
    owners = {1: 101, 2: 102, 3: 103, 4: 104, 5: 50}
    roles = classify(procs, owners, exceptions=["com.voip"])
    assert [roles[s].foreground for s in (1, 2, 3, 4, 5)] == [True, True, False, False, False]
    assert [roles[s].exempt for s in (1, 2, 3, 4, 5)] == [False, False, False, True, False]
    assert not any(r.foreground for r in classify(procs[2:], owners).values())


def test_background_untouched_without_a_foreground_flow() -> None:
    s = Allocator("netpis").decide(obs(foreground_exists=False))
    assert (s.rcvbuf_bytes, s.window_clamp_bytes, s.delack_bytes, s.ato_ns) == (
        DEFAULT, None, None, None,
    )  # fmt: skip


def test_uncontrolled_sockets_keep_the_buffer_their_app_set() -> None:
    # bg-only leaves the foreground alone: an app's own 64 KB SO_RCVBUF stays 64 KB, while
    # the same socket under fg control is lifted to at least the kernel's default.
    own = 64 * KB
    fg = obs(foreground=True, rcvbuf_bytes=own, own_rcvbuf_bytes=own, need_bytes=20 * KB)
    kept = Allocator("bg-only").decide(fg)
    assert (kept.rcvbuf_bytes, kept.window_clamp_bytes) == (own, None)
    assert Allocator("both").decide(fg).rcvbuf_bytes == DEFAULT
    # A background socket released when the foreground goes returns to its own buffer.
    bg = obs(rcvbuf_bytes=DEFAULT, own_rcvbuf_bytes=own, foreground_exists=False)
    released = Allocator("both").decide(bg)
    assert released.window_clamp_bytes == own and released.case2  # the window first
    done = Allocator("both").decide(obs(rcvbuf_bytes=DEFAULT, window_clamp_bytes=own,
                                        own_rcvbuf_bytes=own, foreground_exists=False))  # fmt: skip
    assert (done.rcvbuf_bytes, done.window_clamp_bytes) == (own, None)


def test_exempt_background_socket_is_never_throttled() -> None:
    s = Allocator("netpis").decide(obs(exempt=True))
    assert s.released and s.rcvbuf_bytes == DEFAULT


def test_case2_window_shrinks_first_then_buffer_once_nothing_promised() -> None:
    a = Allocator("both")
    target = round(40 * KB * 0.7)
    first = a.decide(obs(committed_bytes=600 * KB))
    assert (first.rcvbuf_bytes, first.window_clamp_bytes, first.case2) == (DEFAULT, target, True)
    waiting = a.decide(obs(window_clamp_bytes=target, committed_bytes=600 * KB))
    assert (waiting.rcvbuf_bytes, waiting.case2) == (DEFAULT, True)
    done = a.decide(obs(window_clamp_bytes=target, committed_bytes=target - 1))
    assert (done.rcvbuf_bytes, done.window_clamp_bytes, done.case2) == (target, target, False)


def test_case1_buffer_grows_first_then_window() -> None:
    a = Allocator("fg-only")
    need = 1500 * KB
    target = min(round(need * 1.6), NetPisParams().max_rcvbuf_bytes)
    first = a.decide(obs(foreground=True, need_bytes=need, window_clamp_bytes=DEFAULT))
    assert (first.rcvbuf_bytes, first.window_clamp_bytes, first.case1) == (target, DEFAULT, True)
    then = a.decide(
        obs(foreground=True, need_bytes=need, rcvbuf_bytes=target, window_clamp_bytes=DEFAULT)
    )
    assert (then.rcvbuf_bytes, then.window_clamp_bytes, then.case1) == (target, target, False)


def test_delayed_ack_settings_for_background_only_while_foreground_exists() -> None:
    a = Allocator("netpis")
    buf = 4 * 1460  # bound γ × 5840 = 2920 = 2 × size_obf → ATO 2 × 40 ms
    s = a.decide(obs(need_bytes=10**6, rcvbuf_bytes=buf, window_clamp_bytes=buf,
                     committed_bytes=0))  # fmt: skip
    # need × 0.7 > buf: an increase (case 1); the sender still sees the old clamp, so the
    # bound is γ × the usable 5840 bytes.
    assert s.case1 and s.rcvbuf_bytes == 700_000
    assert (s.delack_bytes, s.ato_ns) == (2920, 80_000_000)
    small = a.decide(obs(need_bytes=8340, rcvbuf_bytes=11_680, window_clamp_bytes=11_680))
    assert small.rcvbuf_bytes == 11_680  # floored at min_rcvbuf (8 MSS)
    assert small.delack_bytes == 5840 and small.ato_ns == 160_000_000  # 4 × 40 ms
    huge = a.decide(obs(need_bytes=400 * KB, rcvbuf_bytes=280 * KB, window_clamp_bytes=280 * KB))
    assert huge.ato_ns == 200_000_000  # capped at TCP_DELACK_MAX
    assert Allocator("both").decide(obs()).delack_bytes is None
    assert a.decide(obs(foreground=True)).delack_bytes is None


@given(
    need=st.integers(0, 4 << 20),
    buf=st.integers(4096, 3 << 20),
    clamp=st.one_of(st.none(), st.integers(0, 3 << 20)),
    committed=st.integers(0, 3 << 20),
    fg=st.booleans(),
    fg_exists=st.booleans(),
    variant=st.sampled_from(["fg-only", "bg-only", "both", "netpis"]),
)
def test_ordering_invariants(
    need: int, buf: int, clamp: int | None, committed: int, fg: bool, fg_exists: bool,
    variant: str,
) -> None:  # fmt: skip
    o = obs(need_bytes=need, rcvbuf_bytes=buf, window_clamp_bytes=clamp,
            committed_bytes=committed, foreground=fg, foreground_exists=fg_exists)  # fmt: skip
    s = Allocator(variant).decide(o)
    if s.rcvbuf_bytes > buf:  # buffer increases precede window increases
        assert s.window_clamp_bytes == clamp
    if s.rcvbuf_bytes < buf:  # window decreases precede buffer decreases
        assert clamp is not None and clamp <= s.rcvbuf_bytes
        assert committed <= s.rcvbuf_bytes  # nothing promised is lost: no overrun
    if s.window_clamp_bytes is not None and s.rcvbuf_bytes >= buf:
        assert s.window_clamp_bytes <= max(s.rcvbuf_bytes, clamp or 0)


def test_tracer_need_is_twice_unread_with_process_stats(tmp_path: Path) -> None:
    tracer = NeedTracer(tmp_path / "trace.json", persist_every_ns=100)
    assert tracer.observe(0, 7, 1, 1000) == 2000
    tracer.observe(10, 7, 1, 3000)
    tracer.observe(20, 7, 2, 0)
    stats = tracer.processes[7]
    assert (stats.min_bytes, stats.max_bytes, stats.avg_bytes) == (0, 6000, 8000 / 3)
    assert tracer.socket_need(1) == 6000 and tracer.process_max(7) == 6000
    assert tracer.maybe_persist(50) and not tracer.maybe_persist(120)
    assert tracer.maybe_persist(150)
    data = NeedTracer.load(tmp_path / "trace.json")
    assert data["processes"]["7"]["max_bytes"] == 6000  # type: ignore[index]
    assert len(data["trace"]) == 3  # type: ignore[arg-type]
