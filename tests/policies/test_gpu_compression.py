"""GPU-buffer compression policies (GPU-buffer study): FAIR's cap grows with LRU distance and the
daemon never compresses past it; FULL compresses every background page, VAN none; the
policies are chosen by name with key=value parameters and one-line errors."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqoe.device.gpu import GpuState
from mqoe.engine import ms
from mqoe.errors import UserError
from mqoe.policies.gpu_compression import (
    COMPRESSION_POLICIES,
    Fair,
    Full,
    Van,
    make_compression_policy,
)
from tests.device.test_gpu import check_books, make_phone, settle, spawn

MB = 256  # pages per MiB


# -- the caps -----------------------------------------------------------------------------
def test_fair_defaults_follow_spec_02() -> None:
    fair = Fair()
    assert [fair.cap_pages(k, 10**6) / MB for k in range(10)] == [
        0, 12.5, 25, 37.5, 50, 62.5, 75, 87.5, 100, 100
    ]  # fmt: skip
    assert fair.cap_pages(3, 1000) == 1000  # never more than the app has


@settings(max_examples=200, deadline=None)
@given(
    step_mb=st.floats(0, 200, allow_nan=False),
    max_mb=st.floats(0, 500, allow_nan=False),
    position=st.integers(0, 40),
    pages=st.integers(0, 200_000),
)
def test_fair_cap_is_min_of_limit_and_step_times_position(
    step_mb: float, max_mb: float, position: int, pages: int
) -> None:
    cap = Fair(step_mb, max_mb).cap_pages(position, pages)
    assert 0 <= cap <= pages
    assert cap / MB <= min(max_mb, step_mb * position)
    assert cap >= min(pages, int(min(max_mb, step_mb * position) * MB))
    if position == 0:
        assert cap == 0  # the foreground app is never compressed


@given(position=st.integers(0, 40), pages=st.integers(0, 10**6))
def test_full_caps_every_background_page_and_van_none(position: int, pages: int) -> None:
    assert Full().cap_pages(position, pages) == (pages if position > 0 else 0)
    assert Van().cap_pages(position, pages) == 0


# -- the daemon under each policy ---------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(
    step_mb=st.sampled_from([0.0, 0.5, 1.0, 2.5]),
    max_mb=st.sampled_from([0.0, 1.0, 3.0, 100.0]),
    sizes=st.lists(st.integers(0, 1500), min_size=1, max_size=4),
    waits_ms=st.lists(st.integers(0, 200), min_size=4, max_size=4),
)
def test_fair_daemon_never_compresses_an_app_past_its_cap(
    step_mb: float, max_mb: float, sizes: list[int], waits_ms: list[int]
) -> None:
    policy = Fair(step_mb, max_mb)
    phone, gpu = make_phone(policy)
    env = phone.env
    cached: list[Any] = []

    def within_caps() -> None:
        for app in gpu.apps.values():
            cap_mb = min(max_mb, step_mb * app.position)
            assert app.compressed <= app.pages
            assert app.compressed / MB <= cap_mb, (app.position, app.compressed, cap_mb)

    # Apps leave the foreground one by one, each pushing the older ones a position down.
    for i, (pages, wait_ms) in enumerate(zip(sizes, waits_ms, strict=False)):
        process = spawn(phone, gpu, f"app{i}", pages)
        gpu.set_cached(cached, process)
        cached.insert(0, process)
        gpu.set_cached(cached, None)
        end = env.now + ms(wait_ms)
        while (nxt := env.peek()) is not None and nxt < end:  # event by event
            env.step()
            within_caps()
        env.run(end)
    settle(phone, gpu, 3.0)
    within_caps()
    for app in gpu.apps.values():  # and the daemon goes right up to each cap
        assert app.compressed == policy.cap_pages(app.position, app.pages)
    check_books(phone, gpu)


def test_full_compresses_every_page_of_every_background_app_and_van_none() -> None:
    for policy, expect in ((Full(), GpuState.S3), (Van(), GpuState.S1)):
        phone, gpu = make_phone(policy)
        fg = spawn(phone, gpu, "fg", 800)
        bg = [spawn(phone, gpu, f"bg{i}", 300 * (i + 1)) for i in range(3)]
        gpu.set_cached(bg, fg)
        settle(phone, gpu)
        for process in bg:
            app = gpu.apps[process.pid]
            assert app.state == expect
            assert app.compressed == (app.pages if isinstance(policy, Full) else 0)
        assert gpu.apps[fg.pid].compressed == 0


# -- choosing by name ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("van", Van()),
        ("full", Full()),
        ("fair", Fair(12.5, 100.0)),
        ("fair:cap_step_mb=25", Fair(25.0, 100.0)),
        (" fair : cap_step_mb = 25 , cap_max_mb = 150 ", Fair(25.0, 150.0)),
        ("fair:cap_max_mb=0", Fair(12.5, 0.0)),
    ],
)
def test_make_compression_policy_parses_names_and_parameters(spec: str, expected: Any) -> None:
    assert make_compression_policy(spec) == expected


def test_every_registered_policy_is_buildable_by_its_name() -> None:
    assert set(COMPRESSION_POLICIES) == {"van", "full", "fair"}
    for name in COMPRESSION_POLICIES:
        assert make_compression_policy(name).name == name


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("bogus", "unknown compression policy 'bogus'; available: fair, full, van"),
        ("", "unknown compression policy ''"),
        ("fair:cap_step=25", "has no parameter 'cap_step'; it has: cap_max_mb, cap_step_mb"),
        ("fair:cap_step_mb", "expected key=value, got 'cap_step_mb'"),
        ("full:cap_step_mb=25", "has no parameter 'cap_step_mb'; it has: none"),
        ("fair:cap_step_mb=lots", "expected a number"),
        ("fair:cap_step_mb=-1", "must not be negative"),
        ("fair:cap_max_mb=nan", "must not be negative"),
    ],
)
def test_bad_policy_specs_are_one_line_user_errors(spec: str, message: str) -> None:
    with pytest.raises(UserError) as info:
        make_compression_policy(spec)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("spec", ["fair:cap_step_mb=inf", "fair:cap_step_mb=inf,cap_max_mb=inf"])
def test_infinite_caps_are_refused(spec: str) -> None:
    with pytest.raises(UserError):
        make_compression_policy(spec)
