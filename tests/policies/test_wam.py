"""WAM policies and the trimmer: real-time discards, lazy daily trims, practical pause/resume."""

from __future__ import annotations

from collections.abc import Generator
from itertools import pairwise

import numpy as np
import pytest

from mqoe.device.phone import Phone
from mqoe.device.storage import IoRequest
from mqoe.engine import Event, ms, seconds
from mqoe.errors import UserError
from mqoe.policies.wam import (
    GROUP_PAGES,
    WAM_POLICIES,
    Lazy,
    Practical,
    RealTime,
    Trimmer,
    WamPolicy,
    make_wam_policy,
)
from tests.conftest import make_profile

GIB = 1 << 30
HOUR = seconds(3600)
GROUP_BYTES = GROUP_PAGES * 4096  # 128 MB


def setup(
    policy: WamPolicy, *, screen_on: bool = False, charging: bool = False
) -> tuple[Phone, Trimmer, list[tuple[int, list[int]]]]:
    """An 8 GB phone (model scale 8: a 32 K-page group is 4096 model pages) and a spy
    that records every discard as (time, model pages)."""
    phone = Phone(make_profile([(2, 1000.0, 1.0)]), 1)
    storage = phone.storage
    trimmer = Trimmer(storage, policy, screen_on=screen_on, charging=charging)
    seen: list[tuple[int, list[int]]] = []

    def spy(request: IoRequest) -> None:
        if request.discard:
            seen.append((phone.env.now, np.asarray(request.lpns).tolist()))

    storage.request_listener = spy
    return phone, trimmer, seen


def delete_groups(phone: Phone, trimmer: Trimmer, groups: int) -> list[np.ndarray]:
    """Preload one 128 MB file per trim group (groups 0, 1, …) and delete them all."""
    files = [phone.storage.preload(GROUP_PAGES) for _ in range(groups)]
    for lpns in files:
        trimmer.delete(lpns, GROUP_BYTES)
    return files


def test_registry_and_parser() -> None:
    assert set(WAM_POLICIES) == {"realtime", "lazy", "practical"}
    assert make_wam_policy("practical:threshold_gb=4") == Practical(threshold_gb=4.0)
    assert make_wam_policy(" lazy : start_hour=2.5 ") == Lazy(start_hour=2.5)
    assert make_wam_policy("realtime").name == "realtime"
    for bad, message in (
        ("eager", "unknown WAM policy"),
        ("practical:threshold=4", "it has: group_pages, threshold_gb"),
        ("practical:threshold_gb", "expected key=value"),
        ("practical:threshold_gb=lots", "expected a number"),
        ("practical:threshold_gb=-1", "threshold_gb"),
        ("lazy:start_hour=24", "start_hour"),
        ("practical:group_pages=0", "group_pages"),
    ):
        with pytest.raises(UserError, match=message):
            make_wam_policy(bad)


def test_lazy_trims_once_a_day_after_its_hour_when_idle_and_charging() -> None:
    lazy = Lazy()  # 03:00
    three = 3 * HOUR
    assert not lazy.should_trim(three - 1, 0, False, True, -1)
    assert lazy.should_trim(three, 0, False, True, -1)
    assert not lazy.should_trim(three, 0, True, True, -1)  # in use
    assert not lazy.should_trim(three, 0, False, False, -1)  # on battery
    assert not lazy.should_trim(10 * HOUR, 0, False, True, three)  # done today
    assert lazy.should_trim(27 * HOUR, 0, False, True, three)  # next day
    assert lazy.should_trim(26 * HOUR, 0, False, True, -1)  # missed 03:00: any time later


def test_practical_triggers_on_s_d_with_the_screen_locked() -> None:
    practical = Practical(threshold_gb=6)
    assert not practical.should_trim(0, 6 * GIB - 1, False, False, -1)
    assert practical.should_trim(0, 6 * GIB, False, False, -1)
    assert not practical.should_trim(0, 6 * GIB, True, True, -1)
    assert practical.should_pause(True) and not practical.should_pause(False)
    assert practical.offset_after_kill(7) == 7 and Lazy().offset_after_kill(7) == 0


def test_realtime_discards_at_delete_and_never_batches() -> None:
    phone, trimmer, seen = setup(RealTime(), charging=True)
    lpns = phone.storage.preload(40960)  # 160 MB
    done = trimmer.delete(lpns, 40960 * 4096)
    assert done is not None and phone.storage.discards_pending == 1
    assert seen == [(0, lpns.tolist())]
    assert trimmer.deleted_bytes == 0
    phone.run(seconds(5))
    assert done.processed and phone.storage.ftl.mapped_pages == 0
    phone.run(HOUR)
    assert trimmer.rounds == [] and len(seen) == 1


def test_practical_pauses_on_unlock_and_resumes_from_the_recorded_offset() -> None:
    phone, trimmer, seen = setup(Practical(threshold_gb=0.25))
    files = delete_groups(phone, trimmer, 3)
    assert trimmer.deleted_bytes == 3 * GROUP_BYTES and seen == []
    phone.run(ms(100))
    trimmer.set_screen(True)  # unlocked while group 0 is being trimmed
    phone.run(seconds(5) - ms(100))
    assert trimmer.paused and trimmer.offset_groups == 1
    assert [lpns for _, lpns in seen] == [files[0].tolist()]
    # While paused, the next-fit allocator comes round to the freed groups (every other
    # free page taken first, then group 0's, trimmed already) and a new file takes pages
    # of group 1: they are in use, so the resumed round must not trim them.
    storage = phone.storage
    storage.allocate(storage.free_pages - 3 * GROUP_PAGES)
    storage.allocate(GROUP_PAGES)
    in_use = storage.allocate(80)
    assert set(in_use.tolist()) <= set(files[1].tolist())
    trimmer.set_screen(False)  # locked again: resume at group 1, not group 0
    phone.run(seconds(10))
    times = [t for t, _ in seen]
    assert times[1] == seconds(5)
    trimmed = [lpn for _, lpns in seen for lpn in lpns]
    assert len(trimmed) == len(set(trimmed))  # no page twice in the round
    assert set(trimmed) == set(np.concatenate(files).tolist()) - set(in_use.tolist())
    (trim_round,) = trimmer.rounds
    assert (trim_round.groups_done, trim_round.pauses, trim_round.killed) == (60, 1, False)
    assert trim_round.pages_trimmed == len(trimmed)
    assert trimmer.deleted_bytes == 0 and not trimmer.in_round
    # All deleted data is gone from the flash but the reused pages' (still stale) copies.
    assert phone.storage.ftl.mapped_pages == len(in_use)


def test_practical_never_starts_while_the_screen_is_on() -> None:
    phone, trimmer, seen = setup(Practical(threshold_gb=0.25), screen_on=True)
    delete_groups(phone, trimmer, 3)
    phone.run(HOUR)
    assert seen == [] and trimmer.rounds == []
    trimmer.set_screen(False)
    phone.run(seconds(10))
    assert len(seen) == 3 and len(trimmer.rounds) == 1


def test_lazy_is_uninterruptible_and_restarts_from_the_head_when_killed() -> None:
    phone, trimmer, seen = setup(Lazy(start_hour=0.0), charging=True)
    phone.storage.forget_trims()  # just booted: no block group counts as trimmed
    phone.run(ms(10))
    trimmer.set_screen(True)  # the user picks the phone up: lazy trims on
    phone.run(seconds(1) - ms(10))
    assert len(seen) == 2 and trimmer.offset_groups == 1  # group 1 in flight
    first_group = seen[0][1]
    assert first_group == list(range(4096))  # lazy trims all free space of a group
    trimmer.set_screen(False)
    trimmer.kill()
    assert trimmer.rounds[0].killed and trimmer.rounds[0].groups_done == 1
    assert trimmer.offset_groups == 0
    phone.run(seconds(1))
    # Restarted from the head; ext4 skips the groups trimmed before the kill (0, and 1
    # whose discard was in flight and completed), so the first discard is group 2's.
    assert seen[2] == (seconds(1), list(range(2 * 4096, 3 * 4096)))


def test_a_completed_lazy_round_waits_for_the_next_day() -> None:
    phone, trimmer, seen = setup(Lazy(start_hour=0.0), charging=True)
    phone.storage.forget_trims()  # just booted: no block group counts as trimmed
    phone.run(2 * HOUR)
    assert len(trimmer.rounds) == 1 and not trimmer.rounds[0].killed
    assert trimmer.last_trim_ns == 0
    assert len(seen) == trimmer.n_groups == 60  # every group of a fresh device is free
    phone.run(23 * HOUR)  # past 00:00 of day 1
    assert len(trimmer.rounds) == 2 and trimmer.rounds[1].start_ns == 24 * HOUR


def test_a_practical_round_killed_resumes_where_it_was() -> None:
    phone, trimmer, seen = setup(Practical(threshold_gb=0.25))
    files = delete_groups(phone, trimmer, 3)
    phone.run(ms(900))  # group 1 in flight
    trimmer.kill()
    assert trimmer.offset_groups == 1 and trimmer.in_round
    phone.run(seconds(10))
    # Group 1's discard had been issued (the device finishes it); the new job goes on
    # with group 2 at once instead of starting over.
    assert [(t, lpns[0]) for t, lpns in seen] == [(0, 0), (seen[1][0], 4096), (ms(900), 8192)]
    trimmed = [lpn for _, lpns in seen for lpn in lpns]
    assert sorted(trimmed) == np.concatenate(files).tolist()
    assert [r.killed for r in trimmer.rounds] == [True, False]


def test_trimming_is_deterministic() -> None:
    def run() -> list[object]:
        phone, trimmer, seen = setup(Practical(threshold_gb=0.1))
        delete_groups(phone, trimmer, 2)
        phone.run(seconds(3))
        return [trimmer.rounds, seen]

    assert run() == run()


def test_an_fsync_during_a_lazy_trim_waits_for_the_group_in_flight_only() -> None:
    # FITRIM goes group by group, each group's discard waited for before the next is
    # issued: an fsync queues behind the group in flight, not behind the whole trim.
    phone, trimmer, seen = setup(Lazy(start_hour=0.0), charging=True)
    phone.storage.forget_trims()  # just booted: no block group counts as trimmed
    app = phone.cpu.thread("app", process="app")
    waited: list[int] = []

    def writer() -> Generator[Event, object, None]:
        yield phone.env.timeout(ms(1500))
        start = phone.env.now
        yield from phone.storage.fsync(app, pages=1)
        waited.append(phone.env.now - start)

    phone.env.process(writer())
    phone.run(seconds(5))
    assert trimmer.in_round and len(seen) < trimmer.n_groups  # the trim goes on
    issued = [t for t, _ in seen]
    group_ns = max(b - a for a, b in pairwise(issued))
    assert waited and 0 < waited[0] <= group_ns + ms(5)  # one group, and its own write
    whole_ns = group_ns * (trimmer.n_groups - 2)
    assert waited[0] * 10 < whole_ns
