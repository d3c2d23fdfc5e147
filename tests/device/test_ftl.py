"""The flash translation layer: writes, GC and its frontier, discard, aging, invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqoe.device.ftl import GC_POLICIES, FlashCost, Ftl, GcPolicy


def tiny(gc_policy: GcPolicy = "greedy") -> Ftl:
    """8 blocks × 4 pages, half spare: 16 logical pages, GC at 2 free blocks."""
    return Ftl(capacity_pages=32, pages_per_block=4, over_provisioning=0.5, gc_policy=gc_policy)


def page_states(ftl: Ftl) -> tuple[int, int, int]:
    """(valid, invalid, free) physical pages, recomputed from the maps alone."""
    ppb = ftl.pages_per_block
    offset = np.arange(ftl.physical_pages) % ppb
    programmed = offset < np.repeat(ftl.written, ppb)
    valid = ftl.p2l >= 0
    return (
        int(np.count_nonzero(valid)),
        int(np.count_nonzero(programmed & ~valid)),
        int(np.count_nonzero(~programmed)),
    )


def test_geometry_and_over_provisioning() -> None:
    ftl = Ftl()
    assert ftl.pages_per_block == 256 and ftl.blocks == 1024
    assert ftl.logical_pages == int(ftl.physical_pages * 0.93)
    assert ftl.free_blocks == ftl.blocks - 1  # one block is open
    small = tiny()
    assert (small.logical_pages, small.gc_low_blocks) == (16, 2)


def test_configurations_where_gc_could_not_progress_are_refused() -> None:
    with pytest.raises(ValueError, match="over-provisioning"):
        Ftl(capacity_pages=32, pages_per_block=4, over_provisioning=0.3)
    with pytest.raises(ValueError, match="pages_per_block"):
        Ftl(pages_per_block=1)
    with pytest.raises(ValueError, match="over_provisioning"):
        Ftl(over_provisioning=0.0)


def test_writes_append_to_the_open_block_and_overwrites_invalidate() -> None:
    ftl = tiny()
    assert ftl.write([0, 1, 2, 3]) == FlashCost(4, 0, 0)
    assert ftl.l2p[:4].tolist() == [0, 1, 2, 3]
    ftl.write([1])  # block 0 is full: the next free block (1) is opened
    assert ftl.l2p[1] == 4 and ftl.p2l[1] == -1
    assert ftl.valid[:2].tolist() == [3, 1]
    assert page_states(ftl) == (4, 1, 27)
    assert ftl.write_amplification == 1.0


def test_a_page_written_twice_in_one_request_leaves_its_first_copy_invalid() -> None:
    ftl = tiny()
    assert ftl.write([5, 5, 5]) == FlashCost(3, 0, 0)
    assert ftl.l2p[5] == 2 and page_states(ftl) == (1, 2, 29)
    ftl.check()


def test_greedy_gc_copies_the_fewest_valid_pages_and_erases() -> None:
    ftl = tiny()
    ftl.write(np.arange(16))  # blocks 0–3 full
    ftl.write([0, 1, 2, 4, 5, 9])  # block 4 full, block 5 holds 5 and 9
    ftl.write([12, 13])  # block 5 full; free blocks: 6, 7 (= the low-water mark)
    assert ftl.valid[:6].tolist() == [1, 2, 3, 2, 4, 4]
    cost = ftl.write([6])
    # GC: block 0 (1 valid: page 3) goes to block 6, GC's frontier; still at the mark,
    # so block 1 (2 valid, the lowest index among the 2s) too; then the host page goes
    # to a host block of its own (7).
    assert cost == FlashCost(programmed_pages=4, gc_copies=3, erases=2)
    assert (ftl.l2p[3], ftl.l2p[7], ftl.l2p[6]) == (24, 26, 28)
    assert ftl.erase_counts[:2].tolist() == [1, 1]
    assert ftl.host_pages_written == 25 and ftl.programmed_pages == 28
    assert ftl.write_amplification == pytest.approx(28 / 25)
    ftl.check()


def test_with_one_frontier_gc_copies_share_the_host_block() -> None:
    ftl = Ftl(32, 4, 0.5, gc_policy="greedy", gc_frontier=False)
    ftl.write(np.arange(16))
    ftl.write([0, 1, 2, 4, 5, 9])
    ftl.write([12, 13])
    ftl.write([6])
    assert (ftl.l2p[3], ftl.l2p[7], ftl.l2p[6]) == (24, 26, 27)  # page 6 right after
    ftl.check()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_deleted_files_blocks_empty_out_when_gc_has_its_own_frontier(seed: int) -> None:
    """A 256-page file written while GC runs fills 16 host blocks (one shared with the
    previous host data at most); once it is discarded they hold nothing, so the idle
    erase reclaims them without a copy. With one frontier GC's copies sit among them."""
    empty = {}
    for frontier in (True, False):
        ftl = Ftl(4096, 16, 0.1, gc_policy="greedy", gc_frontier=frontier)
        ftl.fill(0.8, np.random.default_rng(seed))
        ftl.erase_invalid_blocks()
        file = np.flatnonzero(ftl.l2p < 0)[:256]
        assert ftl.write(file).gc_copies > 0  # GC ran during the write
        ftl.discard(file)
        empty[frontier] = ftl.erase_invalid_blocks()
        ftl.check()
    assert empty[True] >= 15 > empty[False]


def test_discard_invalidates_mapped_pages_once() -> None:
    ftl = tiny()
    ftl.write([0, 1, 2])
    assert ftl.discard([1, 1, 2, 7]) == 2
    assert ftl.discard([1, 2]) == 0
    assert ftl.l2p[:3].tolist() == [0, -1, -1]
    assert page_states(ftl) == (1, 2, 29) and ftl.discarded_pages == 2
    with pytest.raises(ValueError, match="logical pages"):
        ftl.discard([16])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.booleans(), st.lists(st.integers(0, 15), min_size=1, max_size=12)),
        max_size=40,
    ),
    st.sampled_from(GC_POLICIES),
)
def test_invariants_hold_through_any_writes_discards_and_gcs(
    ops: list[tuple[bool, list[int]]], gc_policy: GcPolicy
) -> None:
    ftl = tiny(gc_policy)
    host = 0
    for is_write, lpns in ops:
        if is_write:
            cost = ftl.write(lpns)
            host += len(lpns)
            assert cost.programmed_pages == len(lpns) + cost.gc_copies
        else:
            ftl.discard(lpns)
        valid, invalid, free = page_states(ftl)
        assert valid + invalid + free == ftl.physical_pages
        mapped = np.flatnonzero(ftl.l2p >= 0)
        # Every mapped logical page owns exactly one valid physical page, and back.
        assert valid == len(mapped)
        assert np.array_equal(ftl.p2l[ftl.l2p[mapped]], mapped)
        assert len(np.unique(ftl.l2p[mapped])) == len(mapped)
        assert (valid, invalid, free) == (ftl.valid_pages, ftl.invalid_pages, ftl.free_pages)
        ftl.check()
    assert ftl.host_pages_written == host
    assert ftl.write_amplification >= 1.0


def random_write_wa(fraction: float, fragmented: bool, seed: int = 3) -> float:
    ftl = Ftl(capacity_pages=1 << 16)
    ftl.fill(fraction, np.random.default_rng(seed), fragmented=fragmented)
    rng = np.random.default_rng(seed + 1)
    ftl.write(rng.integers(0, ftl.logical_pages, 8192))
    ftl.check()
    return ftl.write_amplification


def test_write_amplification_grows_with_utilisation() -> None:
    low, mid, high = (random_write_wa(f, True) for f in (0.3, 0.7, 0.9))
    assert 1.0 <= low < mid < high
    assert high > 2.0  # greedy GC on a 90%-full device copies more than it writes


def test_a_fragmented_device_amplifies_more_than_one_written_in_order() -> None:
    assert random_write_wa(0.8, fragmented=False) == 1.0  # free blocks still absorb it
    assert random_write_wa(0.8, fragmented=True) > 1.5


def test_discards_let_gc_skip_deleted_data() -> None:
    aged = Ftl(capacity_pages=1 << 16)
    aged.fill(0.9, np.random.default_rng(5))
    trimmed = aged.copy()
    mapped = np.flatnonzero(trimmed.l2p >= 0)
    deleted = mapped[: len(mapped) // 3]
    assert trimmed.discard(deleted) == len(deleted)
    keep = mapped[len(mapped) // 3 :]
    writes = np.random.default_rng(6).choice(keep, 8192)
    aged.write(writes)
    trimmed.write(writes)
    assert trimmed.write_amplification < aged.write_amplification
    assert aged.mapped_pages == len(mapped)  # the copy did not share state


def test_fill_maps_the_fraction_and_resets_the_counters() -> None:
    ftl = Ftl(capacity_pages=1 << 14, pages_per_block=128)
    ftl.fill(0.5, np.random.default_rng(1))
    assert ftl.mapped_pages == round(0.5 * ftl.logical_pages)
    assert ftl.host_pages_written == ftl.programmed_pages == ftl.erases == 0
    assert ftl.erase_counts.sum() > 0  # aging did wear the blocks
    with pytest.raises(ValueError, match="fresh"):
        ftl.fill(0.5, np.random.default_rng(1))


def test_aging_is_deterministic_for_a_seed() -> None:
    a, b = Ftl(capacity_pages=1 << 14), Ftl(capacity_pages=1 << 14)
    a.fill(0.8, np.random.default_rng(9))
    b.fill(0.8, np.random.default_rng(9))
    assert np.array_equal(a.l2p, b.l2p) and np.array_equal(a.valid, b.valid)


def test_idle_gc_erases_only_closed_blocks_without_valid_pages() -> None:
    ftl = tiny()
    ftl.write(np.arange(12))  # blocks 0, 1, 2 full; block 3 open
    ftl.discard(np.arange(4))  # block 0: nothing valid left
    ftl.discard([4, 5])  # block 1: half valid
    free_before, erases_before = ftl.free_blocks, ftl.erases
    assert ftl.erase_invalid_blocks() == 1
    assert ftl.free_blocks == free_before + 1 and ftl.erases == erases_before + 1
    assert ftl.written[0] == 0 and ftl.written[1] == 4  # the half-valid block stays
    assert ftl.gc_copies == 0
    ftl.check()
    assert page_states(ftl) == (6, 2, ftl.physical_pages - 8)
    assert ftl.erase_invalid_blocks() == 0  # nothing more to do


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 15), st.integers(1, 6)), max_size=60))
@settings(max_examples=60, deadline=None)
def test_idle_gc_between_writes_and_discards_keeps_the_maps_consistent(
    ops: list[tuple[bool, int, int]],
) -> None:
    ftl = tiny()
    for write, start, length in ops:
        lpns = np.arange(start, min(16, start + length))
        if write:
            ftl.write(lpns)
        else:
            ftl.discard(lpns)
        ftl.erase_invalid_blocks()
        ftl.check()
        valid, invalid, free = page_states(ftl)
        assert valid == ftl.mapped_pages and valid + invalid + free == ftl.physical_pages


def aged_blocks(gc_policy: GcPolicy) -> Ftl:
    """Block 1 lost a page long ago (3 valid, unchanged for 17 host pages); block 0 lost
    two just now (2 valid)."""
    ftl = Ftl(capacity_pages=128, pages_per_block=4, over_provisioning=0.5, gc_policy=gc_policy)
    ftl.write(range(12))  # blocks 0–2
    ftl.discard([4])  # block 1, at clock 12
    ftl.write(range(16, 32))  # new data: the clock runs on
    ftl.discard([0, 1])  # block 0, at clock 28
    ftl.check()
    assert ftl.clock == 28
    assert ftl.valid[:3].tolist() == [2, 3, 4]
    return ftl


def test_cost_benefit_leaves_a_block_that_is_still_emptying_for_an_old_one() -> None:
    greedy, cost_benefit = aged_blocks("greedy"), aged_blocks("cost-benefit")
    # Greedy takes the fewest valid pages; cost-benefit weighs age:
    # block 0: (1 − 0.5) × 1 / (2 × 0.5) = 0.5; block 1: 0.25 × 17 / 1.5 ≈ 2.8.
    assert greedy.victims(5).tolist() == [0, 1]  # only these hold an invalid page
    assert cost_benefit.victims(5).tolist() == [1, 0]
    assert greedy.victim_cost(1) == (2, 1)
    assert cost_benefit.victim_cost(1) == (3, 1)


def test_an_empty_block_comes_first_under_cost_benefit() -> None:
    ftl = aged_blocks("cost-benefit")
    ftl.discard([8, 9, 10, 11])  # block 2 empties now: age 1, but nothing to copy
    assert ftl.victims(3).tolist() == [2, 1, 0]
    assert ftl.victim_cost(1) == (0, 1)


def test_an_unknown_gc_policy_is_refused() -> None:
    with pytest.raises(ValueError, match="gc_policy must be one of greedy, cost-benefit"):
        Ftl(gc_policy="lru")  # type: ignore[arg-type]


@pytest.mark.parametrize("gc_policy", GC_POLICIES)
def test_a_discard_of_a_whole_block_makes_its_gc_free(gc_policy: GcPolicy) -> None:
    copies = []
    for discard in (False, True):
        ftl = tiny(gc_policy)
        ftl.write(range(16))  # blocks 0–3, in order
        if discard:
            assert ftl.discard([0, 1, 2, 3]) == 4  # block 0 holds nothing now
            assert ftl.victim_cost(1) == (0, 1)
        ftl.write([4, 8, 12, 5])  # overwrites leave blocks 1–3 partly valid
        ftl.write([9, 13, 6, 10])
        ftl.write([14, 7, 11, 15])  # the third new block needs a GC
        assert ftl.erases >= 1
        copies.append(ftl.gc_copies)
        ftl.check()
    assert copies[0] > 0  # without the discard GC moves a still-valid page
    assert copies[1] == 0  # with it, the empty block is erased without a copy


@pytest.mark.parametrize("gc_policy", GC_POLICIES)
def test_a_partial_block_discard_spares_exactly_the_discarded_pages(gc_policy: GcPolicy) -> None:
    """eMMC DISCARD and UFS UNMAP name 512-byte / 4 KB sectors, not erase blocks (Linux
    rounds only ERASE to erase groups; docs/sources/discard-paths.md), and a page-mapped
    FTL unmaps each named page: GC then copies the block's other pages and no more."""
    ftl = tiny(gc_policy)
    ftl.write(range(16))  # blocks 0–3 in order: block 0 holds pages 0–3
    assert ftl.discard([1, 2]) == 2
    assert ftl.valid[0] == 2 and ftl.l2p[[0, 3]].tolist() == [0, 3]
    assert ftl.victims(1).tolist() == [0] and ftl.victim_cost(1) == (2, 1)
    ftl._collect()  # one GC pass (as when a write finds free blocks at the mark)
    assert ftl.erase_counts[0] == 1 and ftl.gc_copies == 2  # the two others, no more
    assert ftl.p2l[ftl.l2p[[0, 3]]].tolist() == [0, 3] and ftl.l2p[[1, 2]].tolist() == [-1, -1]
    ftl.check()
