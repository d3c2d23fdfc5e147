"""File churn: seeded creates/deletes that age the flash and feed the WAM policy."""

from __future__ import annotations

import numpy as np
import pytest

from mqoe.apps.file_churn import FileChurn, FileChurnParams, FileKind, history_pages
from mqoe.device.ftl import PAGE_BYTES
from mqoe.device.phone import Phone
from mqoe.engine import seconds
from mqoe.policies.wam import Practical, RealTime, Trimmer, WamPolicy
from tests.conftest import make_profile

HOUR = seconds(3600)


def churn(
    policy: WamPolicy, params: FileChurnParams | None = None, seed: int = 1
) -> tuple[Phone, Trimmer, FileChurn]:
    phone = Phone(make_profile([(2, 1000.0, 1.0)]), seed)
    trimmer = Trimmer(phone.storage, policy, screen_on=True)
    return phone, trimmer, FileChurn(phone, trimmer, params)


def test_files_are_written_through_the_ftl_and_deleted_with_real_time_discards() -> None:
    phone, _, app = churn(RealTime())
    phone.run(10 * HOUR)
    storage = phone.storage
    assert app.files_created > 200 and app.files_deleted > 100
    assert app.failed_creates == 0
    # Every delete queued exactly one discard; what is live is what the flash holds.
    assert storage.discards + storage.discards_pending == app.files_deleted
    live = sum(len(f.lpns) for f in app.files.values())
    assert storage.ftl.mapped_pages == live
    assert storage.fsyncs == app.files_created
    written = sum(-(-f.size_bytes // 4096) for f in app.files.values())
    assert storage.pages_written >= written


def test_under_practical_wam_deletes_accumulate_s_d_instead() -> None:
    phone, trimmer, app = churn(Practical())
    phone.run(10 * HOUR)
    assert app.files_deleted > 100
    assert phone.storage.discards == 0
    assert trimmer.deleted_bytes == app.bytes_deleted
    assert phone.storage.untrimmed_pages > 0


def test_churn_is_deterministic_for_a_seed() -> None:
    def run(seed: int) -> tuple[int, int, int, np.ndarray]:
        phone, _, app = churn(RealTime(), seed=seed)
        phone.run(5 * HOUR)
        return app.files_created, app.bytes_written, app.bytes_deleted, phone.storage.ftl.l2p

    a, b, c = run(7), run(7), run(8)
    assert a[:3] == b[:3] and np.array_equal(a[3], b[3])
    assert a[:3] != c[:3]


def test_rates_and_sizes_follow_the_parameters() -> None:
    kind = FileKind("blob", creates_per_hour=3600, mean_size_kb=64, size_sigma=0.5,
                    mean_lifetime_h=1000)  # fmt: skip
    phone, _, app = churn(RealTime(), FileChurnParams(kinds=(kind,), fsync=False))
    phone.run(HOUR)
    assert 3400 < app.files_created < 3800  # Poisson, 3600 expected
    mean_kb = app.bytes_written / app.files_created / 1024
    assert 60 < mean_kb < 68
    assert app.files_deleted == 0 and phone.storage.fsyncs == 0


def test_delete_bytes_removes_the_oldest_files_first() -> None:
    _, trimmer, app = churn(Practical(), FileChurnParams(kinds=()))
    old = app.preload(3, 1 << 20, kind="old")
    new = app.preload(2, 1 << 20, kind="new")
    assert app.delete_bytes(int(1.5 * (1 << 20))) == 2 << 20
    assert list(app.files.values()) == [old[2], *new]
    assert trimmer.deleted_bytes == 2 << 20 and app.files_deleted == 2


def test_a_full_file_system_fails_creations_instead_of_crashing() -> None:
    kind = FileKind("big", creates_per_hour=60, mean_size_kb=4096, size_sigma=0.0,
                    mean_lifetime_h=1000)  # fmt: skip
    phone, _, app = churn(RealTime(), FileChurnParams(kinds=(kind,)))
    phone.storage.preload(phone.storage.free_pages - 64)
    phone.run(HOUR)
    assert app.files_created == 0 and app.failed_creates > 40


def test_a_file_history_follows_the_kinds_rates_and_sizes() -> None:
    params = FileChurnParams()
    total = 1 << 22  # 16 GiB of 4 KB pages
    sizes, kinds = history_pages(params, np.random.default_rng(5), total)
    assert sizes.sum() >= total and sizes.min() >= 1 and len(kinds) == len(sizes)
    again = history_pages(params, np.random.default_rng(5), total)
    assert np.array_equal(sizes, again[0]) and np.array_equal(kinds, again[1])
    rates = {k.name: k.creates_per_hour for k in params.kinds}
    share = np.mean(kinds == "cache")
    assert share == pytest.approx(rates["cache"] / sum(rates.values()), abs=0.02)
    # The mean size is the rate-weighted mean of the kinds' means (log-normal, exact mean).
    rates = np.array([k.creates_per_hour for k in params.kinds])
    means = np.array([k.mean_size_kb * 1024 / PAGE_BYTES for k in params.kinds])
    assert sizes.mean() == pytest.approx((rates * means).sum() / rates.sum(), rel=0.1)
    with pytest.raises(ValueError, match="no file kind"):
        history_pages(FileChurnParams(kinds=()), np.random.default_rng(5), total)
