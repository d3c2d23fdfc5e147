"""The Reproduction base: a plan run by the sweep engine, outputs from the stored records."""

from __future__ import annotations

from pathlib import Path

import pytest

import mqoe.workloads.runner as runner_module
from mqoe.device.profiles import load_profile
from mqoe.experiments.reproduction import (
    IncompleteReproduction,
    PlannedRun,
    Reproduction,
    plan_sweep,
    reproduce_works,
)
from mqoe.results import ResultsStore, RunRecord, atomic_write_text
from mqoe.sweep import Backend
from mqoe.workloads.runner import run_scenario

SHORT = {"duration_s": "0.5"}


class Tiny(Reproduction[str]):
    """Three frame-deadline runs, one planned twice (under two keys)."""

    name = "tiny"
    title = "a test reproduction"

    def __init__(self, hogs: tuple[str, ...] = ("0", "2")) -> None:
        super().__init__()
        self.hogs = hogs
        self.written: list[tuple[str, RunRecord]] = []

    def plan(self, quick: bool) -> list[PlannedRun[str]]:
        runs = [
            PlannedRun(f"hogs={h}", "frame-deadlines", "nokia-1", 1, {**SHORT, "hogs": h})
            for h in self.hogs
        ]
        again = PlannedRun("again", "frame-deadlines", "nokia-1", 1, {**SHORT, "hogs": "0"})
        return [*runs, again]

    def write(self, results: list[tuple[str, RunRecord]], out_dir: Path, quick: bool) -> Path:
        self.written = results
        lines = [f"{key},{record.metrics['missed_deadline_rate']}" for key, record in results]
        return atomic_write_text(out_dir / "metrics.csv", "\n".join(lines) + "\n")


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, str]]:
    """Every run the sweep simulates (in this process: one worker), by its overrides."""
    calls: list[dict[str, str]] = []
    real = runner_module.run_scenario

    def counting(name, profile, seed=0, overrides=None, **kw):  # type: ignore[no-untyped-def]
        calls.append(dict(overrides or {}))
        return real(name, profile, seed, overrides, **kw)

    monkeypatch.setattr(runner_module, "run_scenario", counting)
    return calls


def test_outputs_come_from_the_stored_records_in_plan_order(
    tmp_path: Path, counted: list[dict[str, str]]
) -> None:
    work = Tiny()
    path = work.reproduce(tmp_path, quick=True, backend=Backend(workers=1))
    assert path == tmp_path / "metrics.csv"
    assert [key for key, _ in work.written] == ["hogs=0", "hogs=2", "again"]
    assert len(counted) == 2  # the run planned twice ran once
    first, second, again = (record for _, record in work.written)
    assert again.run_id == first.run_id != second.run_id
    direct = run_scenario("frame-deadlines", load_profile("nokia-1"), 1, {**SHORT, "hogs": "2"})
    assert second.metrics == direct.metrics  # the store gave back what the run measured
    assert set(second.tables) == set(direct.tables)
    stored = ResultsStore(tmp_path / "results")
    assert stored.run_ids() == {first.run_id, second.run_id}
    sweeps = stored.query("select sweep, planned_runs from sweeps")
    assert sweeps.to_dict("records") == [{"sweep": "reproduce-tiny", "planned_runs": 2}]


def test_a_failed_run_stops_the_outputs_and_a_resume_retries_only_it(
    tmp_path: Path, counted: list[dict[str, str]]
) -> None:
    broken = Tiny(hogs=("0", "-3"))  # a negative hog count is refused when the run starts
    with pytest.raises(IncompleteReproduction, match=r"1 of 2 runs failed.*--resume"):
        broken.reproduce(tmp_path, quick=True, backend=Backend(workers=1))
    assert not (tmp_path / "metrics.csv").exists()
    store = ResultsStore(tmp_path / "results")
    assert len(store.run_ids()) == 1 and len(store.failure_ids()) == 1
    counted.clear()
    with pytest.raises(IncompleteReproduction):
        broken.reproduce(tmp_path, quick=True, backend=Backend(workers=1), resume=True)
    assert [c["hogs"] for c in counted] == ["-3"]  # the stored run was kept, not re-run


def test_resume_skips_stored_runs_and_a_plain_rerun_replaces_them(
    tmp_path: Path, counted: list[dict[str, str]]
) -> None:
    work = Tiny()
    work.reproduce(tmp_path, quick=True, backend=Backend(workers=1))
    first = (tmp_path / "metrics.csv").read_text()
    counted.clear()
    work.reproduce(tmp_path, quick=True, backend=Backend(workers=1), resume=True)
    assert counted == []
    assert (tmp_path / "metrics.csv").read_text() == first
    work.reproduce(tmp_path, quick=True, backend=Backend(workers=1))
    assert len(counted) == 2
    assert (tmp_path / "metrics.csv").read_text() == first  # deterministic


def test_run_ids_are_stable_and_change_with_any_input() -> None:
    _, ids = plan_sweep(Tiny(), quick=True)
    _, again = plan_sweep(Tiny(), quick=True)
    assert ids == again and ids[0] == ids[2] and len(set(ids)) == 2
    assert all(run_id.startswith("tiny-nokia-1-s1-") for run_id in ids)
    _, other = plan_sweep(Tiny(hogs=("0", "3")), quick=True)
    assert other[0] == ids[0] and other[1] != ids[1]


class Empty(Tiny):
    def plan(self, quick: bool) -> list[PlannedRun[str]]:
        return []


def test_an_empty_plan_is_refused() -> None:
    with pytest.raises(ValueError, match="empty"):
        plan_sweep(Empty(), quick=True)


class Named(Tiny):
    """Tiny under another name (its own run ids and sweep)."""

    def __init__(self, name: str, hogs: tuple[str, ...] = ("0", "2")) -> None:
        super().__init__(hogs)
        self.name = name
        self.written_at: list[str] = []


@pytest.mark.parametrize("workers", [1, 2])
def test_works_reproduced_together_write_what_each_alone_writes(
    tmp_path: Path, workers: int
) -> None:
    alone = Named("one")
    alone.reproduce(tmp_path / "alone", quick=True, backend=Backend(workers=1))
    works = [Named("one"), Named("two", hogs=("1", "3"))]
    seen: list[tuple[str, Path]] = []
    paths = reproduce_works(
        [(work, tmp_path / work.name) for work in works],
        quick=True,
        backend=Backend(workers=workers),
        on_written=lambda name, path: seen.append((name, path)),
    )
    assert paths == [tmp_path / "one" / "metrics.csv", tmp_path / "two" / "metrics.csv"]
    assert sorted(seen) == [("one", paths[0]), ("two", paths[1])]
    assert paths[0].read_text() == (tmp_path / "alone" / "metrics.csv").read_text()
    for work in works:  # each work's runs in its own store, and only those
        stored = ResultsStore(tmp_path / work.name / "results").run_ids()
        assert stored == {record.run_id for _, record in work.written}
        assert all(run_id.startswith(f"{work.name}-") for run_id in stored)


def test_a_work_with_failed_runs_does_not_stop_the_others(tmp_path: Path) -> None:
    good, broken = Named("good"), Named("broken", hogs=("0", "-3"))
    with pytest.raises(IncompleteReproduction, match=r"^broken: 1 of 2 runs failed"):
        reproduce_works(
            [(broken, tmp_path / "broken"), (good, tmp_path / "good")],
            quick=True,
            backend=Backend(workers=2),
        )
    assert (tmp_path / "good" / "metrics.csv").is_file()
    assert not (tmp_path / "broken" / "metrics.csv").exists()
    assert len(ResultsStore(tmp_path / "broken" / "results").failure_ids()) == 1


def test_two_incomplete_works_are_both_named(tmp_path: Path) -> None:
    works = [Named(name, hogs=("-1",)) for name in ("a", "b")]
    with pytest.raises(IncompleteReproduction, match=r"^2 works had failed runs \(a, b\)"):
        reproduce_works(
            [(w, tmp_path / w.name) for w in works], quick=True, backend=Backend(workers=1)
        )
