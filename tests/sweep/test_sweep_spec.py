"""Sweep files: validation with file:line errors, expansion into jobs, stable run ids."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqoe.errors import InputFileError, UserError
from mqoe.sweep import load_sweep

BASE = """\
[sweep]
name = "fd"
scenario = "frame-deadlines"
profiles = ["nokia-1"]
seeds = [0, 1]

[fixed]
duration_s = 0.5

[grid]
hogs = [0, 2, 4]
"""


def write(tmp_path: Path, text: str, name: str = "sweep.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def error_of(tmp_path: Path, text: str) -> InputFileError:
    with pytest.raises(InputFileError) as info:
        load_sweep(write(tmp_path, text))
    return info.value


def test_grid_times_seeds_gives_one_job_each(tmp_path: Path) -> None:
    sweep = load_sweep(write(tmp_path, BASE))
    assert len(sweep.jobs) == 6
    points = {(job.overrides["hogs"], job.seed) for job in sweep.jobs}
    assert points == {(h, s) for h in ("0", "2", "4") for s in (0, 1)}
    assert all(job.overrides["duration_s"] == "0.5" for job in sweep.jobs)
    assert sweep.varied == ("hogs",)


def test_run_ids_are_stable_across_loads_and_unique(tmp_path: Path) -> None:
    first = load_sweep(write(tmp_path, BASE))
    again = load_sweep(write(tmp_path, "# a comment changes nothing\n" + BASE, "copy.toml"))
    assert [j.run_id for j in first.jobs] == [j.run_id for j in again.jobs]
    assert first.sweep_id == again.sweep_id
    assert len({j.run_id for j in first.jobs}) == 6
    assert all(j.run_id.startswith("fd-nokia-1-s") for j in first.jobs)


def test_changing_a_fixed_value_changes_every_run_id(tmp_path: Path) -> None:
    first = load_sweep(write(tmp_path, BASE))
    other = load_sweep(write(tmp_path, BASE.replace("0.5", "0.25"), "other.toml"))
    assert not {j.run_id for j in first.jobs} & {j.run_id for j in other.jobs}
    assert first.sweep_id != other.sweep_id


def test_adding_a_seed_keeps_the_old_run_ids(tmp_path: Path) -> None:
    first = load_sweep(write(tmp_path, BASE))
    more = load_sweep(write(tmp_path, BASE.replace("[0, 1]", "[0, 1, 2]"), "more.toml"))
    assert {j.run_id for j in first.jobs} < {j.run_id for j in more.jobs}


def test_random_samples_are_seeded_and_per_parameter(tmp_path: Path) -> None:
    text = BASE + (
        "\n[random]\nsamples = 5\nseed = 11\nparams.frame_mcycles = { uniform = [5.0, 12.0] }\n"
    )
    one = load_sweep(write(tmp_path, text))
    two = load_sweep(write(tmp_path, text, "b.toml"))
    assert [dict(j.overrides) for j in one.jobs] == [dict(j.overrides) for j in two.jobs]
    assert len(one.jobs) == 3 * 5 * 2
    values = {float(j.overrides["frame_mcycles"]) for j in one.jobs}
    assert len(values) == 5 and all(5.0 <= v <= 12.0 for v in values)
    # Adding another random parameter, even one drawn first, leaves this one's draws
    # alone (own stream).
    extra = text.replace(
        "params.frame_mcycles",
        'params.rt_arrivals = { choice = ["poisson", "periodic"] }\nparams.frame_mcycles',
    )
    three = load_sweep(write(tmp_path, extra, "c.toml"))
    assert {float(j.overrides["frame_mcycles"]) for j in three.jobs} == values
    other_seed = load_sweep(write(tmp_path, text.replace("seed = 11", "seed = 12"), "d.toml"))
    assert {float(j.overrides["frame_mcycles"]) for j in other_seed.jobs} != values


def test_integer_samples_include_both_ends_and_duplicates_merge(tmp_path: Path) -> None:
    text = BASE.replace("hogs = [0, 2, 4]", "") + (
        "\n[random]\nsamples = 200\nseed = 1\nparams.hogs = { integers = [0, 1] }\n"
    )
    sweep = load_sweep(write(tmp_path, text))
    assert {j.overrides["hogs"] for j in sweep.jobs} == {"0", "1"}
    assert len(sweep.jobs) == 2 * 2  # 200 draws of two values × 2 seeds, merged
    assert sweep.merged_duplicates == 200 * 2 - 4


def test_seed_range_and_default_profile(tmp_path: Path) -> None:
    text = BASE.replace('profiles = ["nokia-1"]\n', "").replace(
        "seeds = [0, 1]", "seeds = { start = 5, count = 3 }"
    )
    sweep = load_sweep(write(tmp_path, text))
    assert sorted({j.seed for j in sweep.jobs}) == [5, 6, 7]
    assert {j.profile_name for j in sweep.jobs} == {"nokia-1"}


def test_profile_file_is_found_relative_to_the_sweep_file(tmp_path: Path) -> None:
    from mqoe.device.profiles.loader import CATALOG_DIR

    (tmp_path / "mine.toml").write_text((CATALOG_DIR / "nokia-1.toml").read_text())
    sweep = load_sweep(write(tmp_path, BASE.replace('["nokia-1"]', '["mine.toml"]')))
    assert {j.profile_name for j in sweep.jobs} == {"nokia-1"}


def test_population_scenario_takes_no_profile(tmp_path: Path) -> None:
    text = '[sweep]\nname = "f"\nscenario = "fleet"\nseeds = [1]\n[fixed]\nphones = 10\ndays = 1\n'
    sweep = load_sweep(write(tmp_path, text))
    assert len(sweep.jobs) == 1 and sweep.jobs[0].profile is None
    assert sweep.jobs[0].run_id.startswith("f-s1-")
    error = error_of(tmp_path, text.replace("seeds", 'profile = "nokia-1"\nseeds'))
    assert error.line == 4 and "draws its own phones" in str(error)


def test_a_scenario_without_a_phone_takes_no_profile(tmp_path: Path) -> None:
    text = '[sweep]\nname = "t"\nscenario = "trace-abr"\nseeds = [1, 2]\n'
    text += '[grid]\nrule = ["bba", "bola"]\n'
    sweep = load_sweep(write(tmp_path, text))
    assert len(sweep.jobs) == 4 and {j.profile for j in sweep.jobs} == {None}
    assert {j.profile_name for j in sweep.jobs} == {"none"}
    assert all(j.run_id.startswith(("t-s1-", "t-s2-")) for j in sweep.jobs)
    error = error_of(tmp_path, text.replace("seeds", 'profiles = ["nokia-1"]\nseeds'))
    assert error.line == 4 and "scenario 'trace-abr' models no phone; remove profiles" in str(error)


@pytest.mark.parametrize(
    ("edit", "line", "words"),
    [
        (("hogs = [0, 2, 4]", "hogz = [0, 2, 4]"), 11, "no parameter 'hogz'"),
        (("hogs = [0, 2, 4]", 'hogs = [0, "many"]'), 11, "expected an integer"),
        (("hogs = [0, 2, 4]", "hogs = []"), 11, "at least 1"),
        (("duration_s = 0.5", "duration_s = 0.5\nhogs = 1"), 12, "already set in [fixed]"),
        (('scenario = "frame-deadlines"', 'scenario = "nope"'), 3, "unknown scenario"),
        (('["nokia-1"]', '["nokia-1", "no-such-phone"]'), 4, "unknown profile"),
        (("seeds = [0, 1]", "seeds = [-1]"), 5, "greater than or equal to 0"),
        (('name = "fd"', 'name = "a b"'), 2, "should match pattern"),
        (('name = "fd"', 'name = "fd"\nnmae = "x"'), 3, "Extra inputs"),
        (("[fixed]", "[fixed\n"), 7, "not valid TOML"),
        (("duration_s = 0.5", "duration_s = nan"), 8, "finite number, got nan"),
        (("duration_s = 0.5", "duration_s = -inf"), 8, "finite number, got -inf"),
        (("duration_s = 0.5", 'duration_s = "inf"'), 8, "finite number, got inf"),
        (("hogs = [0, 2, 4]", "hogs = [0]\nframe_mcycles = [1.0, inf]"), 12, "got inf"),
        (("duration_s = 0.5", "duration_s = -0.5"), 8, "must be positive"),
        (("hogs = [0, 2, 4]", "hogs = [0]\nframe_mcycles = [2.0, -1.0]"), 12, "must be positive"),
    ],
)
def test_bad_files_name_file_and_line(
    tmp_path: Path, edit: tuple[str, str], line: int, words: str
) -> None:
    error = error_of(tmp_path, BASE.replace(*edit))
    assert error.line == line, str(error)
    assert words in str(error)
    assert str(error).startswith(f"{tmp_path / 'sweep.toml'}:{line}: ")
    assert "\n" not in str(error)


def test_bad_random_distribution_names_its_line(tmp_path: Path) -> None:
    text = BASE + "\n[random]\nsamples = 2\nparams.frame_mcycles = { uniform = [9.0, 1.0] }\n"
    error = error_of(tmp_path, text)
    assert error.line == 15 and "above high" in str(error)
    text = BASE + "\n[random]\nsamples = 2\nparams.rt_priority = { uniform = [1.0, 3.0] }\n"
    error = error_of(tmp_path, text)  # floats drawn for an integer parameter
    assert error.line == 15 and "expected an integer" in str(error)


@pytest.mark.parametrize("bounds", ["[nan, 1.0]", "[1.0, inf]", "[-inf, 2.0]"])
def test_random_bounds_must_be_finite(tmp_path: Path, bounds: str) -> None:
    text = BASE + f"\n[random]\nsamples = 2\nparams.frame_mcycles = {{ uniform = {bounds} }}\n"
    error = error_of(tmp_path, text)
    assert error.line == 15 and "finite" in str(error), str(error)


def test_random_choice_of_nan_names_its_line(tmp_path: Path) -> None:
    text = BASE + "\n[random]\nsamples = 3\nparams.frame_mcycles = { choice = [nan] }\n"
    error = error_of(tmp_path, text)
    assert error.line == 15 and "got nan" in str(error), str(error)


def test_missing_file_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such sweep file"):
        load_sweep(tmp_path / "absent.toml")


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_text_gives_a_user_error_or_a_sweep(text: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.toml"
        path.write_text(text, encoding="utf-8")
        try:
            load_sweep(path)
        except UserError as exc:
            assert "\n" not in str(exc)


@settings(max_examples=30, deadline=None)
@given(
    hogs=st.lists(st.integers(0, 8), min_size=1, max_size=4),
    seeds=st.lists(st.integers(0, 2**32), min_size=1, max_size=4),
)
def test_job_count_is_the_product_of_distinct_values(hogs: list[int], seeds: list[int]) -> None:
    import tempfile

    text = BASE.replace("seeds = [0, 1]", f"seeds = {seeds}")
    text = text.replace("hogs = [0, 2, 4]", f"hogs = {hogs}")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.toml"
        path.write_text(text, encoding="utf-8")
        sweep = load_sweep(path)
    assert len(sweep.jobs) == len(set(hogs)) * len(set(seeds))
    assert len({j.run_id for j in sweep.jobs}) == len(sweep.jobs)


def test_the_documented_example_file_loads() -> None:
    root = Path(__file__).resolve().parents[2]
    sweep = load_sweep(root / "examples" / "sweep-video.toml")
    assert len(sweep.jobs) == 48  # as its last comment says
    assert sweep.varied == ("apps", "boot_free_mb", "pressure", "resolution")


def test_two_parameters_with_one_distribution_get_independent_draws(tmp_path: Path) -> None:
    text = BASE + (
        "\n[random]\nsamples = 6\nseed = 3\n"
        "params.frame_mcycles = { uniform = [1.0, 2.0] }\n"
        "params.rt_burst_mcycles = { uniform = [1.0, 2.0] }\n"
    )
    sweep = load_sweep(write(tmp_path, text))
    pairs = {(j.overrides["frame_mcycles"], j.overrides["rt_burst_mcycles"]) for j in sweep.jobs}
    assert len(pairs) == 6 and all(a != b for a, b in pairs)


def test_a_sweep_too_big_to_plan_is_refused_at_once(tmp_path: Path) -> None:
    import time

    text = BASE.replace("seeds = [0, 1]", "seeds = { count = 5_000_000 }")
    start = time.perf_counter()
    error = error_of(tmp_path, text)
    assert time.perf_counter() - start < 5.0  # refused before expanding millions of jobs
    assert error.line == 1
    assert "15,000,000 runs (3 grid points × 1 sample × 1 profile × 5,000,000 seeds)" in str(error)
    assert "at most 1,000,000" in str(error)


def test_run_ids_are_the_digest_of_every_input(tmp_path: Path) -> None:
    """The id's digest is pinned to its documented inputs (so a faster way of computing
    it cannot silently change every stored sweep's ids)."""
    import hashlib
    import json

    from mqoe import __version__
    from mqoe.device.profiles import load_profile
    from mqoe.workloads import SCENARIOS
    from mqoe.workloads.base import params_dict, parse_params

    sweep = load_sweep(write(tmp_path, BASE))
    profile = load_profile("nokia-1").model_dump(mode="json")
    for job in sweep.jobs:
        params = params_dict(
            parse_params(SCENARIOS["frame-deadlines"].params_type, job.overrides, "x")
        )
        inputs = {
            "sweep": "fd",
            "scenario": "frame-deadlines",
            "profile": profile,
            "seed": job.seed,
            "params": params,
            "version": __version__,
        }
        payload = json.dumps(inputs, sort_keys=True, separators=(",", ":"))
        digest = hashlib.sha256(payload.encode()).hexdigest()[:12]
        assert job.run_id == f"fd-nokia-1-s{job.seed}-{digest}"
