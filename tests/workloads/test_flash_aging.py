"""flash-aging: file churn under each WAM policy, the daily benchmark, trims by mechanism."""

from __future__ import annotations

import pandas as pd
import pytest

from mqoe.device.profiles import load_profile
from mqoe.errors import UserError
from mqoe.results import RunRecord
from mqoe.workloads.flash_aging import churn_params
from mqoe.workloads.runner import run_scenario

_GIB = float(1 << 30)


def run(**overrides: str) -> RunRecord:
    params = {"days": "2", "warmup_days": "0", **overrides}
    return run_scenario("flash-aging", load_profile("mi-a2"), 3, params)


def test_churn_kinds_are_scaled_to_the_daily_volume() -> None:
    params = churn_params(3.0)
    per_hour = sum(k.creates_per_hour * k.mean_size_kb * 1024 for k in params.kinds)
    assert per_hour * 24 == pytest.approx(3.0 * _GIB)
    assert [k.mean_lifetime_h for k in params.kinds] == [6.0, 72.0, 96.0]  # unchanged


def test_realtime_discards_every_delete_and_never_batches() -> None:
    record = run(wam="realtime")
    m = record.metrics
    assert m["trim_rounds"] == 0 and m["trim_busy_s"] == 0
    assert m["discards"] > 100 and m["untrimmed_gb_mean"] == 0
    # what was written comes from the churn rate (lognormal sizes: a loose bound)
    assert 0.5 * 2 * 1.5 < float(m["written_gb"]) < 1.5 * 2 * 1.5
    bench = record.tables["bench"]
    assert list(bench["day"]) == [0.0, 1.0]
    assert (bench["random_mbps"] > 0).all() and (
        bench["sequential_mbps"] > bench["random_mbps"]
    ).all()


def test_practical_trims_only_once_s_d_crosses_the_threshold() -> None:
    record = run(wam="practical:threshold_gb=0.25", churn_gb_per_day="3")
    m = record.metrics
    rounds = record.tables["trim_rounds"]
    deleted = float(m["deleted_gb"])
    assert deleted > 0.5
    # No discard at delete time: every discard belongs to a trim round.
    assert m["discards"] > 0 and int(rounds["groups_done"].sum()) > 0
    assert 1 <= m["trim_rounds"] <= deleted / 0.25 + 1
    assert m["untrimmed_gb_mean"] > 0


def test_lazy_trims_at_most_once_a_night_while_the_phone_charges() -> None:
    record = run(wam="lazy", days="3", charge_prob="1")
    rounds: pd.DataFrame = record.tables["trim_rounds"]
    assert 1 <= len(rounds) <= 3
    hours = (rounds["start_ns"] / 3.6e12) % 24
    # Plugged in at bedtime (23:30 + 15 min), unplugged at 07:00: a day's round starts at
    # 03:00, or later when 03:00 was missed (day 0: the first charge).
    assert ((hours >= 23.75) | (hours < 7.0)).all()
    assert (hours[1:] == 3.0).all()
    assert record.metrics["trim_busy_s"] > 0


def test_a_phone_that_never_charges_never_runs_the_lazy_trim() -> None:
    assert run(wam="lazy", charge_prob="0").metrics["trim_rounds"] == 0


def test_bad_parameters_are_user_errors() -> None:
    with pytest.raises(UserError, match="WAM policy 'sometimes'"):
        run(wam="sometimes")
    with pytest.raises(UserError, match="fill"):
        run(fill="0.99")


def test_a_benchmark_file_larger_than_the_free_space_is_a_user_error() -> None:
    # Was a ValueError traceback from deep inside the storage model.
    with pytest.raises(UserError, match=r"bench_mb=1e\+06: the phone has only \d+ MB free"):
        run(bench_mb="1000000", days="1")


def test_benchmarks_at_several_times_of_day_give_the_days_average_and_spread() -> None:
    record = run(wam="lazy", days="3", charge_prob="1", bench_hours="12,5,2.5")
    bench = record.tables["bench"]
    m = record.metrics
    # Three a day, in time order: before the night's trim, after it, midday.
    assert list(bench["hour"]) == [2.5, 5.0, 12.0] * 3
    assert list(bench["day"]) == [0.0] * 3 + [1.0] * 3 + [2.0] * 3
    assert m["sequential_mbps"] == pytest.approx(bench["sequential_mbps"].mean())
    by_hour = bench.groupby("hour")["sequential_mbps"].mean()
    assert m["sequential_mbps_spread"] == pytest.approx(by_hour.max() - by_hour.min())
    assert m["sequential_mbps_spread"] > 0  # the day's reservoir of trimmed blocks runs down
    one = run(wam="lazy", days="3", charge_prob="1", bench_hours="12")
    assert one.metrics["sequential_mbps_spread"] == 0


@pytest.mark.parametrize("hours", ["", "12,x", "24", "-1,3"])
def test_bad_benchmark_hours_are_refused(hours: str) -> None:
    with pytest.raises(UserError, match="bench_hours"):
        run(bench_hours=hours)


def test_the_benchmarks_are_deterministic_per_seed() -> None:
    params = {"days": "2", "warmup_days": "0", "wam": "lazy", "bench_hours": "5,12"}
    profile = load_profile("mi-a2")
    first, again, other = (run_scenario("flash-aging", profile, seed, params) for seed in (3, 3, 4))
    pd.testing.assert_frame_equal(first.tables["bench"], again.tables["bench"])
    assert first.metrics == again.metrics
    # Another seed is another phone's churn and benchmark offsets.
    assert not first.tables["bench"].equals(other.tables["bench"])


def test_the_phones_own_writes_pay_for_the_gc_the_untrimmed_backlog_makes() -> None:
    def own(wam: str, fill: str) -> tuple[float, float]:
        m = run(wam=wam, fill=fill, days="3", warmup_days="1", charge_prob="1").metrics
        return m["own_write_mbps"], m["write_amplification"]

    fresh, fresh_wa = own("realtime", "0.1")
    realtime, realtime_wa = own("realtime", "0.85")
    lazy, lazy_wa = own("lazy", "0.85")
    assert fresh_wa == 1.0 and fresh > 2 * realtime  # no GC on a nearly empty flash
    assert lazy_wa > realtime_wa and lazy < 0.95 * realtime
