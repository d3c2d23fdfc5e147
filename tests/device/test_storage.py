"""The I/O path: mmcqd is a real-time thread that preempts fair ones; reads block; the
flash behind the queue: GC time, discards, fsync's wait for earlier discards, file space."""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Generator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqoe.device.cpu import PreemptKind, ThreadState
from mqoe.device.ftl import PAGE_BYTES, Ftl
from mqoe.device.phone import Phone
from mqoe.device.storage import FLASH_TIMING, IoRequest, Storage, StorageFull, write_speed
from mqoe.engine import Event, ms, seconds, us
from tests.conftest import make_profile


def test_mmcqd_preempts_a_busy_fair_thread_for_each_request() -> None:
    profile = make_profile([(1, 1000.0, 1.0)])  # one core: nowhere else to run
    phone = Phone(profile, 1)
    hog = phone.cpu.thread("video-decoder")
    phone.cpu.run(hog, math.inf)
    reader = phone.cpu.thread("reader")
    phone.env.process(phone.storage.read(reader, pages=8))
    phone.run(ms(5))
    log = phone.cpu.preemptions.rows()
    mmcqd = phone.storage.mmcqd.tid
    assert log["preemptor_tid"] == [mmcqd]
    assert log["victim_tid"] == [hog.tid]
    assert log["kind"] == [PreemptKind.RT]
    # mmcqd's CPU per request (eMMC: 200k reference cycles = 200 µs on a 1 GHz core).
    assert phone.profile.storage.type == "emmc"
    assert log["preemptor_run_ns"] == [us(200)]
    assert reader.state_ns[ThreadState.BLOCKED_IO] > 0
    assert phone.storage.reads == 1 and phone.storage.pages_read == 8


def test_a_read_takes_the_profiles_service_time() -> None:
    phone = Phone(make_profile([(2, 1000.0, 1.0)]), 1)
    reader = phone.cpu.thread("reader")
    done: list[int] = []

    def proc():  # type: ignore[no-untyped-def]
        yield from phone.storage.read(reader, pages=4)
        done.append(phone.env.now)

    phone.env.process(proc())
    phone.run(ms(10))
    spec = phone.profile.storage
    # mmcqd's CPU (200 µs at 1 GHz), then the device's service time.
    expected = us(200) + us(spec.read_us + 3 * spec.page_us)
    assert done == [expected]


def test_request_cpu_defaults_by_storage_type_and_a_profile_value_wins() -> None:
    emmc = make_profile([(1, 1000.0, 1.0)]).storage
    assert emmc.type == "emmc" and emmc.request_cycles == 200_000
    ufs = emmc.model_copy(update={"type": "ufs"})
    assert ufs.request_cycles == 50_000
    assert emmc.model_copy(update={"cycles_per_request": 7}).request_cycles == 7


# -- flash: FTL behind the queue, discard, fsync, file space, benchmark -------------------


MMCQD_NS = us(200)  # eMMC: 200k reference cycles of mmcqd CPU on a 1 GHz core


def fast_phone(cores: int = 2) -> Phone:
    return Phone(make_profile([(cores, 1000.0, 1.0)]), 1)


def completion_time(phone: Phone, event: Event) -> list[int]:
    """A list that receives the time ``event`` fires."""
    out: list[int] = []
    assert event.callbacks is not None
    event.callbacks.append(lambda _: out.append(phone.env.now))
    return out


def test_a_write_on_a_fresh_flash_costs_exactly_the_base_formula() -> None:
    phone = fast_phone()
    storage = phone.storage
    lpns = storage.allocate(16 * storage.scale)
    done = completion_time(phone, storage.submit(16, write=True, lpns=lpns))
    phone.run(ms(10))
    spec = phone.profile.storage
    assert done == [MMCQD_NS + us(spec.write_us + 15 * spec.page_us)]
    assert storage.ftl.host_pages_written == 16 and storage.ftl.gc_copies == 0
    assert storage.writes == 1 and storage.pages_written == 16


def test_a_write_that_makes_the_ftl_collect_pays_for_its_copies_and_erases() -> None:
    phone = fast_phone()
    ftl = Ftl(capacity_pages=32, pages_per_block=4, over_provisioning=0.5)
    spec = phone.profile.storage.model_copy(update={"capacity_gb": 1})
    storage = Storage(phone.env, phone.cpu, spec, ftl=ftl)
    assert storage.scale == 262144 // 32
    ftl.write(np.arange(16))
    ftl.write([0, 1, 2, 4, 5, 9, 12, 13])  # the GC case of test_ftl: next write copies 3, erases 2
    done = completion_time(phone, storage.submit(1, write=True, lpns=[6]))
    phone.run(seconds(100))
    timing = FLASH_TIMING["emmc"]
    # On a scaled model the write pays the collector's rate per page: GC work per free
    # page reclaimed (2 blocks erased − 3 pages copied), for its 1 model page.
    work_us = 3 * timing.gc_copy_us + 2 * timing.erase_us
    gc_us = storage.scale * 1 * work_us / (2 * 4 - 3)
    assert done == [MMCQD_NS + us(spec.write_us) + us(gc_us)]
    full = Storage(phone.env, phone.cpu, spec, ftl=Ftl(capacity_pages=262144))
    assert full.scale == 1 and full.gc_ns(ftl.write([6])) == 0


def test_over_many_writes_a_scaled_model_charges_the_gc_it_did() -> None:
    phone = fast_phone()
    storage = phone.storage
    storage.age(0.85, np.random.default_rng(1))
    mapped = np.flatnonzero(storage.ftl.l2p >= 0)
    picks = np.random.default_rng(2).choice(mapped, 4000)
    writer = phone.cpu.thread("writer")
    ended: list[int] = []

    def proc() -> Generator[Event, object, None]:
        for lpn in picks:  # one model page = 8 real ones per request
            yield from storage.write(writer, storage.scale, [lpn])
        ended.append(phone.env.now)

    phone.env.process(proc())
    phone.run(seconds(600))
    spec, timing, ftl = phone.profile.storage, FLASH_TIMING["emmc"], storage.ftl
    base_ns = len(picks) * (MMCQD_NS + us(spec.write_us + 7 * spec.page_us))
    charged_us = (ended[0] - base_ns) / 1000
    done_us = storage.scale * (ftl.gc_copies * timing.gc_copy_us + ftl.erases * timing.erase_us)
    assert ftl.erases > 30
    assert charged_us == pytest.approx(done_us, rel=0.1)


def test_writes_into_blocks_that_discards_emptied_pay_only_for_gc_that_was_done() -> None:
    phone = fast_phone()
    storage = phone.storage
    storage.age(0.85, np.random.default_rng(1))
    ftl, timing, spec = storage.ftl, FLASH_TIMING["emmc"], phone.profile.storage
    ppb, rng = ftl.pages_per_block, np.random.default_rng(2)
    writer = phone.cpu.thread("writer")
    requests: list[int] = []

    def proc() -> Generator[Event, object, None]:
        for _ in range(40):
            # A file that fills two blocks dies and is discarded (its blocks come back
            # erased, no GC); then as much is rewritten, and some pages at random.
            full = np.flatnonzero(ftl.valid == ppb)[:2]
            dead = np.concatenate([ftl.p2l[b * ppb : (b + 1) * ppb] for b in full])
            yield storage.discard(dead)
            for lpns in (dead, rng.choice(np.flatnonzero(ftl.l2p >= 0), ppb)):
                for part in np.array_split(lpns, len(lpns) // 16):
                    requests.append(len(part) * storage.scale)
                    yield from storage.write(writer, len(part) * storage.scale, part)

    phone.env.process(proc())
    phone.run(seconds(600))
    # The idle erases are free: no write waits for them.
    assert len(requests) == 40 * 3 * ppb // 16 and ftl.idle_erases >= 60
    base_ns = sum(us(spec.write_us + (pages - 1) * spec.page_us) for pages in requests)
    charged_us = (storage.flash_write_ns - base_ns) / 1000
    gc_erases = ftl.erases - ftl.idle_erases
    done_us = storage.scale * (ftl.gc_copies * timing.gc_copy_us + gc_erases * timing.erase_us)
    assert gc_erases > 30
    assert charged_us == pytest.approx(done_us, rel=0.05)


def test_a_discard_is_queued_without_waiting_and_unmaps_its_pages() -> None:
    phone = fast_phone()
    storage = phone.storage
    lpns = storage.preload(4096 * storage.scale)
    assert storage.ftl.mapped_pages == 4096
    storage.release(lpns, discard=False)
    done = completion_time(phone, storage.discard(lpns))
    assert storage.discards_pending == 1 and done == []  # the caller goes on
    phone.run(seconds(2))
    timing = FLASH_TIMING["emmc"]
    pages = 4096 * storage.scale
    assert done == [MMCQD_NS + us(timing.discard_us + pages * timing.discard_page_us)]
    assert storage.ftl.mapped_pages == 0 and storage.discards_pending == 0
    assert storage.discards == 1 and storage.pages_discarded == pages


def big_discard(storage: Storage, model_pages: int) -> Event:
    lpns = storage.preload(model_pages * storage.scale)
    done = storage.release(lpns, discard=True)
    assert done is not None
    return done


def test_fsync_waits_for_earlier_discards_in_d_state() -> None:
    phone = fast_phone()
    storage = phone.storage
    discarded = completion_time(phone, big_discard(storage, 8192))
    app = phone.cpu.thread("app-main")
    waits: list[tuple[str, str | None]] = []
    storage.wait_listener = lambda t, what: waits.append((t.name, what))
    ended: list[int] = []

    def app_proc() -> Generator[Event, object, None]:
        yield phone.env.timeout(ms(1))
        yield from storage.fsync(app, 4, storage.allocate(4 * storage.scale))
        ended.append(phone.env.now)

    phone.env.process(app_proc())
    phone.run(ms(500))
    assert app.state == ThreadState.BLOCKED_IO and ended == []
    phone.run(seconds(5))
    assert ended and ended[0] >= discarded[0] > ms(500)
    # The write was queued behind the discard (FIFO): it ran right after it.
    spec = phone.profile.storage
    assert ended == [discarded[0] + MMCQD_NS + us(spec.write_us + 3 * spec.page_us)]
    assert app.state == ThreadState.SLEEPING
    assert waits == [("app-main", "fsync"), ("app-main", None)]
    assert storage.fsyncs == 1


def test_an_fsync_is_not_delayed_by_discards_queued_after_it() -> None:
    phone = fast_phone()
    storage = phone.storage
    app = phone.cpu.thread("app-main")
    ended: list[int] = []
    later: list[Event] = []

    def app_proc() -> Generator[Event, object, None]:
        yield from storage.fsync(app, 4, storage.allocate(4 * storage.scale))
        ended.append(phone.env.now)

    def deleter() -> Generator[Event, object, None]:
        yield phone.env.timeout(1)
        later.append(big_discard(storage, 8192))

    phone.env.process(app_proc())
    phone.env.process(deleter())
    phone.run(seconds(5))
    spec = phone.profile.storage
    assert ended == [MMCQD_NS + us(spec.write_us + 3 * spec.page_us)]
    assert later[0].processed


def test_fsync_of_nothing_still_waits_for_the_barrier() -> None:
    phone = fast_phone()
    storage = phone.storage
    discarded = completion_time(phone, big_discard(storage, 1024))
    app = phone.cpu.thread("app")
    ended: list[int] = []

    def app_proc() -> Generator[Event, object, None]:
        yield from storage.fsync(app)
        ended.append(phone.env.now)

    phone.env.process(app_proc())
    phone.run(seconds(2))
    assert ended == discarded and storage.writes == 0


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 20_000),  # µs after the previous operation
            st.sampled_from(["discard", "fsync", "read"]),
            st.integers(1, 64),  # model pages (discard) or real pages (fsync, read)
        ),
        min_size=1,
        max_size=12,
    )
)
def test_no_fsync_returns_before_the_discards_queued_before_it(
    ops: list[tuple[int, str, int]],
) -> None:
    phone = fast_phone(cores=4)
    storage = phone.storage
    # (order of queueing, [completion time]): events at the same ns are ordered by when
    # they happened, not by their (equal) times.
    discards: list[tuple[int, list[int]]] = []
    fsyncs: list[tuple[int, list[int]]] = []
    order = itertools.count()
    threads = [phone.cpu.thread(f"t{i}") for i in range(len(ops))]

    def fsync_proc(i: int, pages: int) -> Generator[Event, object, None]:
        record: list[int] = []
        fsyncs.append((next(order), record))
        yield from storage.fsync(threads[i], pages, storage.allocate(pages * storage.scale))
        record.append(phone.env.now)

    def driver() -> Generator[Event, object, None]:
        for i, (gap_us, kind, pages) in enumerate(ops):
            yield phone.env.timeout(us(gap_us))
            if kind == "discard":
                done = completion_time(phone, big_discard(storage, pages))
                discards.append((next(order), done))
            elif kind == "fsync":
                phone.env.process(fsync_proc(i, pages))
            else:
                phone.env.process(storage.read(threads[i], pages))

    phone.env.process(driver())
    phone.run(seconds(60))
    for start, end in fsyncs:
        assert end, "every fsync finished"
        for queued, done in discards:
            if queued <= start:
                assert done and done[0] <= end[0]


def test_the_file_space_allocates_in_order_and_carries_partial_model_pages() -> None:
    phone = fast_phone()
    storage = phone.storage
    assert storage.scale == 8  # an 8 GB phone on a 1 GiB model
    assert storage.allocate(20).tolist() == [0, 1]  # 20 real pages = 2.5 model pages
    assert storage.allocate(4).tolist() == [2]  # 4 + the carried 4
    first = storage.allocate(16)
    storage.release(first, discard=False)
    assert storage.untrimmed_pages == 2
    # Next-fit: freed pages are not reused until the allocator comes round to them.
    assert storage.allocate(16).tolist() == [5, 6]
    with pytest.raises(ValueError, match="not allocated"):
        storage.release([100], discard=False)
    rest = storage.allocate(storage.free_pages - 16)
    assert rest[0] == 7 and rest[-1] == storage.ftl.logical_pages - 1
    assert storage.allocate(16).tolist() == first.tolist()  # wrapped round to them
    assert storage.untrimmed_pages == 0 and storage.free_pages == 0
    with pytest.raises(StorageFull):
        storage.allocate(storage.scale)


def fine_grained_phone() -> Phone:
    """A phone whose queue takes discards of any size (discard_granularity 4 KB)."""
    profile = make_profile([(2, 1000.0, 1.0)])
    storage = profile.storage.model_copy(update={"discard_granularity": 4})
    return Phone(profile.model_copy(update={"storage": storage}), 1)


def test_fitrim_discards_only_untrimmed_free_pages_of_its_range_once() -> None:
    phone = fine_grained_phone()
    storage = phone.storage
    lpns = storage.preload(100 * storage.scale)
    storage.release(lpns[10:20], discard=False)
    storage.release(lpns[60:70], discard=False)
    seen: list[list[int]] = []

    def spy(request: IoRequest) -> None:
        if request.discard:
            seen.append(np.asarray(request.lpns).tolist())

    storage.request_listener = spy
    assert storage.fitrim(0, 50) is not None
    assert storage.fitrim(0, 50) is None  # nothing freed there since
    assert storage.fitrim(50, 50) is not None
    assert seen == [list(range(10, 20)), list(range(60, 70))]
    everything = storage.fitrim(0, 200, all_free=True)  # an fstrim that remembers nothing
    assert everything is not None
    assert seen[-1] == [*range(10, 20), *range(60, 70), *range(100, 200)]


def test_a_group_freed_in_since_its_trim_is_trimmed_whole_again() -> None:
    """ext4_trim_all_free discards every free extent of a group whose WAS_TRIMMED flag a
    free has cleared — the ones trimmed before too; a group without one is skipped."""
    phone = fine_grained_phone()
    storage = phone.storage
    lpns = storage.preload(30 * storage.scale)
    storage.release(lpns[0:5], discard=False)
    first = storage.fitrim(0, 30)
    assert first is not None and storage.fitrim(0, 30) is None
    storage.release(lpns[20:22], discard=False)
    phone.run(seconds(1))
    discarded = storage.pages_discarded
    again = storage.fitrim(0, 30)
    assert again is not None
    phone.run(seconds(1))
    assert again.value == 7  # pages 0–4 again, and 20–21
    assert storage.pages_discarded - discarded == 7 * storage.scale
    storage.forget_trims()  # a reboot: every group counts as untrimmed
    assert storage.fitrim(0, 30) is not None


def test_fitrim_skips_free_extents_shorter_than_the_discard_granularity() -> None:
    """eMMC: discard_granularity = pref_erase, 4 MiB on a card of 1 GiB or more, and
    ext4 raises FITRIM's minlen to it; a real-time discard knows no minimum."""
    storage = fast_phone().storage
    assert storage.spec.type == "emmc" and storage.spec.discard_granularity_kb == 4096
    minlen = 4096 * 1024 // PAGE_BYTES // storage.scale  # model pages in 4 MiB
    assert minlen > 2
    lpns = storage.preload(4 * minlen * storage.scale)
    short = lpns[minlen : 2 * minlen - 1]  # one page short of minlen
    storage.release(short, discard=False)
    storage.release(lpns[3 * minlen :], discard=False)  # joins the free space behind
    assert storage.fitrim(0, 2 * minlen) is None  # the short extent stays untrimmed
    done = storage.fitrim(0, storage.ftl.logical_pages)
    assert done is not None and storage.untrimmed_pages == len(short)
    # A neighbour's free makes the extent long enough: the next FITRIM takes it.
    storage.release(lpns[2 * minlen - 1 : 2 * minlen], discard=False)
    assert storage.fitrim(0, 3 * minlen) is not None and storage.untrimmed_pages == 0
    # Real-time: a one-page discard goes out as it is.
    pending = storage.discards_pending
    storage.release(lpns[:1], discard=True)
    assert storage.discards_pending == pending + 1


def test_a_ufs_queue_trims_extents_of_any_length() -> None:
    profile = make_profile([(2, 1000.0, 1.0)])
    ufs = profile.model_copy(update={"storage": profile.storage.model_copy(update={"type": "ufs"})})
    storage = Phone(ufs, 1).storage
    assert storage.spec.discard_granularity_kb == 4
    lpns = storage.preload(8 * storage.scale)
    storage.release(lpns[3:4], discard=False)
    assert storage.fitrim(0, 8) is not None and storage.untrimmed_pages == 0


def test_a_file_takes_the_first_free_extent_that_holds_it_whole() -> None:
    storage = fast_phone().storage
    lpns = storage.preload(40 * storage.scale)
    storage.release(lpns[2:5], discard=True)  # a 3-page hole
    storage.release(lpns[10:20], discard=True)  # a 10-page hole
    storage.ftl  # noqa: B018
    storage._space().cursor = 0
    assert storage.allocate(6 * storage.scale).tolist() == list(range(10, 16))
    assert storage.allocate(3 * storage.scale).tolist() == list(range(16, 19))
    # None fits whole in what is left before the end: pieces, next-fit.
    storage._space().cursor = 0
    assert storage.allocate(2 * storage.scale).tolist() == [2, 3]


def test_files_of_one_goal_are_allocated_forward_from_their_own_cursor() -> None:
    storage = fast_phone().storage
    scale = storage.scale
    cache = storage.allocate(2 * scale, goal="cache")
    media = storage.allocate(3 * scale, goal="media")  # a new goal starts at the shared cursor
    assert cache.tolist() == [0, 1] and media.tolist() == [2, 3, 4]
    storage._space().cursors["media"] = 100  # as if media's directory lived further on
    assert storage.allocate(scale, goal="media").tolist() == [100]
    assert storage.allocate(scale, goal="cache").tolist() == [5]  # on from its own last file
    assert storage.allocate(scale).tolist() == [6]  # the shared cursor has not moved from 0


def test_aging_by_files_leaves_the_deleted_files_extents_free() -> None:
    storage = fast_phone().storage
    logical = storage.ftl.logical_pages
    sizes = np.full(logical // 8 + 1, 8 * storage.scale)  # files of 8 model pages
    storage.age(0.6, np.random.default_rng(3), file_pages=sizes)
    used = storage._space().used
    assert 0.55 < used.mean() < 0.65
    whole = used[: logical // 8 * 8].reshape(-1, 8)
    assert (whole.all(axis=1) | ~whole.any(axis=1)).all()  # files live or die whole
    assert np.array_equal(storage.ftl.l2p >= 0, used)
    storage.ftl.check()
    with pytest.raises(ValueError, match="fill the logical space"):
        fast_phone().storage.age(0.6, np.random.default_rng(3), file_pages=[8])


def test_aging_with_goals_puts_each_goals_files_together_and_its_cursor_there() -> None:
    storage = fast_phone().storage
    logical = storage.ftl.logical_pages
    n = -(-logical // 8)  # files of 8 model pages that fill the space, goals alternating
    sizes = np.full(n, 8 * storage.scale)
    goals = np.where(np.arange(n) % 2 == 0, "media", "cache")
    storage.age(1.0, np.random.default_rng(3), file_pages=sizes, file_goals=goals)
    space = storage._space()
    # media's files first (its first file was first), then cache's, each goal's cursor
    # where its files begin.
    assert space.cursors == {"media": 0, "cache": 8 * (-(-n // 2))}
    assert space.used.all()
    with pytest.raises(ValueError, match="a goal for every file"):
        fast_phone().storage.age(0.6, np.random.default_rng(3), file_pages=sizes,
                                 file_goals=goals[:3])  # fmt: skip


def test_write_speed_on_a_fresh_device_is_the_profiles_sequential_rate() -> None:
    spec = make_profile([(1, 1000.0, 1.0)]).storage
    ftl = Ftl(capacity_pages=1 << 16)
    mb_s = write_speed(ftl, spec, "sequential", np.random.default_rng(0), total_mb=32)
    # 512 KB requests: write_us + 127 × page_us each, no GC on fresh flash.
    assert mb_s == pytest.approx(0.5 / ((spec.write_us + 127 * spec.page_us) * 1e-6))
    assert ftl.gc_copies == 0


def test_aging_slows_writes_and_random_is_slower_than_sequential() -> None:
    spec = make_profile([(1, 1000.0, 1.0)]).storage
    fresh, aged = Ftl(capacity_pages=1 << 16), Ftl(capacity_pages=1 << 16)
    aged.fill(0.85, np.random.default_rng(1))
    speeds = {}
    for name, ftl in (("fresh", fresh), ("aged", aged)):
        for pattern in ("random", "sequential"):
            rng = np.random.default_rng(2)
            speeds[name, pattern] = write_speed(ftl.copy(), spec, pattern, rng, total_mb=16)
    assert speeds["aged", "sequential"] < 0.7 * speeds["fresh", "sequential"]
    assert speeds["aged", "random"] < speeds["fresh", "random"]
    assert speeds["aged", "random"] < speeds["aged", "sequential"]


def test_the_storage_benchmark_leaves_the_device_unchanged() -> None:
    phone = fast_phone()
    storage = phone.storage
    storage.age(0.7, np.random.default_rng(3))
    before = storage.ftl.l2p.copy()
    first = storage.write_speed("random", np.random.default_rng(4))
    assert np.array_equal(storage.ftl.l2p, before)
    assert storage.write_speed("random", np.random.default_rng(4)) == first


def test_64_mb_of_random_writes_on_an_aged_full_size_model_is_fast() -> None:
    spec = make_profile([(1, 1000.0, 1.0)]).storage
    ftl = Ftl()  # 1 GiB of 4 KB pages, scale 1
    ftl.fill(0.85, np.random.default_rng(1))
    start = time.perf_counter()
    mb_s = write_speed(ftl, spec, "random", np.random.default_rng(2), total_mb=64)
    elapsed = time.perf_counter() - start
    assert 0 < mb_s < 4 / (spec.write_us * 1e-6) / 1024  # below the no-GC 4 KB rate
    assert elapsed < 1.0


def test_a_scaled_model_measures_what_the_full_size_device_does() -> None:
    spec = make_profile([(1, 1000.0, 1.0)]).storage.model_copy(update={"capacity_gb": 1})
    full, sample = Ftl(capacity_pages=1 << 18), Ftl(capacity_pages=1 << 15)  # scale 8
    for ftl in (full, sample):
        ftl.fill(0.85, np.random.default_rng(1))
    for pattern in ("random", "sequential"):
        exact = write_speed(full.copy(), spec, pattern, np.random.default_rng(2))
        scaled = write_speed(sample.copy(), spec, pattern, np.random.default_rng(2), scale=8)
        assert scaled == pytest.approx(exact, rel=0.15)
    storage = Storage(fast_phone().env, fast_phone().cpu, spec, ftl=sample)
    assert storage.scale == 8


def test_a_small_benchmark_on_a_scaled_model_does_not_depend_on_the_gc_phase() -> None:
    # 64 MB at scale 128 is half a model block: whether it holds a block switch (and
    # so a lump of GC) depends on where the write frontier stands; the result must not.
    spec = make_profile([(1, 1000.0, 1.0)]).storage.model_copy(update={"capacity_gb": 128})
    ftl = Ftl()
    ftl.fill(0.85, np.random.default_rng(1))
    rng = np.random.default_rng(2)
    speeds = []
    for extra in (0, 60, 120, 180, 240):
        moved = ftl.copy()
        mapped = np.flatnonzero(moved.l2p >= 0)
        moved.write(mapped[rng.integers(0, len(mapped), extra)])
        speeds.append(write_speed(moved, spec, "sequential", rng, scale=128))
    assert max(speeds) < 1.05 * min(speeds)
    fresh = write_speed(Ftl(), spec, "sequential", rng, scale=128)
    assert max(speeds) < 0.5 * fresh


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["allocate", "release", "fitrim"]),
            st.integers(1, 40),
            st.sampled_from([None, "cache", "media"]),
        ),
        max_size=40,
    )
)
@settings(max_examples=50, deadline=None)
def test_allocation_never_hands_out_a_page_twice(ops: list[tuple[str, int, str | None]]) -> None:
    storage = Storage(
        fast_phone().env, fast_phone().cpu, make_profile([(1, 1000.0, 1.0)]).storage,
        ftl=Ftl(capacity_pages=1 << 10, pages_per_block=16),
    )  # fmt: skip
    files: list[np.ndarray] = []
    live: set[int] = set()
    for op, size, goal in ops:
        if op == "allocate":
            if size * storage.scale > storage.free_pages:
                with pytest.raises(StorageFull):
                    storage.allocate(size * storage.scale, goal)
                continue
            lpns = storage.allocate(size * storage.scale, goal)
            got = set(lpns.tolist())
            assert len(got) == size and not got & live
            live |= got
            files.append(lpns)
        elif op == "release" and files:
            lpns = files.pop(0)
            storage.release(lpns, discard=False)
            live -= set(lpns.tolist())
        elif op == "fitrim":
            storage.fitrim(size * 8, 64)
        space = storage._space()
        untrimmed = set(np.flatnonzero(space.untrimmed).tolist())
        assert not untrimmed & live  # only free pages wait for a trim
        total = storage.ftl.logical_pages
        assert storage.free_pages == (total - len(live)) * storage.scale
