"""The published values as data: one file per work, its loader, and the experiments
that read it (no published number left in their code)."""

from __future__ import annotations

import ast
import math
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from mqoe import experiments
from mqoe.errors import InputFileError, UserError
from mqoe.experiments import EXPERIMENTS, aging_glitching, coal_not_diamonds
from mqoe.experiments import published as pub
from mqoe.experiments.aging_glitching import comparison as aging_comparison
from mqoe.experiments.citations import CITATIONS
from mqoe.experiments.coal_not_diamonds import checks as coal_checks
from mqoe.experiments.published import Published, PublishedValues, UnknownKey
from mqoe.results import MetricRow, read_metrics_csv

EXPERIMENT_MODULES = (
    "coal_not_diamonds",
    "aging_glitching",
    "netpis",
    "gpu_buffers",
    "downward_spiral",
    "pressure_meets_network",
)
SRC = Path(experiments.__file__).parent

GOOD = """\
[citation]
authors = ["Ada Lovelace", "Charles Babbage"]
title = "Notes"
venue = "Scientific Memoirs"
year = 1843
short = "Lovelace, 1843"
full = "Ada Lovelace and Charles Babbage, \\"Notes\\", Scientific Memoirs 1843"

[[value]]
key = "bernoulli/b8"
value = -0.0333
unit = "ratio"
where = "Note G, table"
source = "Lovelace, 1843 (Note G)"

[[value]]
key = "engine/columns"
value = 40
unit = "columns"
where = "Note A"
source = "Lovelace, 1843 (Note A)"
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "work.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_file_round_trips_into_citation_and_values_by_key(tmp_path: Path) -> None:
    data = pub.read(_write(tmp_path, GOOD))
    cited = data.citation
    assert (cited.short, cited.year, cited.venue) == ("Lovelace, 1843", 1843, "Scientific Memoirs")
    assert cited.authors == ("Ada Lovelace", "Charles Babbage") and not cited.et_al
    assert cited.full == 'Ada Lovelace and Charles Babbage, "Notes", Scientific Memoirs 1843'
    assert list(data.values) == ["bernoulli/b8", "engine/columns"]  # the file's order
    assert data.values["bernoulli/b8"] == Published(
        -0.0333, "ratio", "Lovelace, 1843 (Note G)", "Note G, table"
    )
    assert data.values["engine/columns"].value == 40.0
    assert isinstance(data.values["engine/columns"].value, float)


def test_a_missing_key_names_the_file_and_the_key(tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD)
    values = pub.read(path).values
    with pytest.raises(UnknownKey) as caught:
        values["bernoulli/b9"]
    assert str(caught.value) == f"{path}: no [[value]] with key 'bernoulli/b9'"
    assert isinstance(caught.value, UserError)
    assert "bernoulli/b9" not in values and values.get("bernoulli/b9") is None  # still a Mapping


def test_a_citation_may_omit_what_is_not_known(tmp_path: Path) -> None:
    data = pub.read(_write(tmp_path, '[citation]\nshort = "X, 2015"\nfull = "a paper of 2015"\n'))
    assert data.citation == pub.Citation("X, 2015", "a paper of 2015")
    assert len(data.values) == 0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("value = 40\n", 'value = "forty"\n'),
         "[[value]] #2 ('engine/columns'): value: Input should be a valid number"),
        (("value = 40\n", "value = nan\n"),
         "[[value]] #2 ('engine/columns'): value: Input should be a finite number"),
        (('where = "Note A"\n', ""), "[[value]] #2 ('engine/columns'): where: Field required"),
        (("unit = \"columns\"", "units = \"columns\""),
         "[[value]] #2 ('engine/columns'): units: Extra inputs are not permitted"),
        (('key = "engine/columns"', 'key = "bernoulli/b8"'),
         "[[value]] #2 ('bernoulli/b8'): key repeats an earlier [[value]]"),
        (("year = 1843", 'year = "1843"'), "[citation]: year: Input should be a valid integer"),
        (('short = "Lovelace, 1843"\n', ""), "[citation]: short: Field required"),
        (("[citation]", "[cite]"), "unknown top-level keys ['cite']"),
        (("[[value]]\nkey = \"engine", "[[value]\nkey = \"engine"), ":16: not valid TOML"),
    ],
)  # fmt: skip
def test_a_broken_file_is_one_line_naming_the_file_and_the_entry(
    tmp_path: Path, change: tuple[str, str], message: str
) -> None:
    old, new = change
    assert old in GOOD
    path = _write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(InputFileError) as caught:
        pub.read(path)
    text = str(caught.value)
    assert text.startswith(str(path)) and message in text and "\n" not in text


def test_every_work_has_a_file_that_loads_and_cites_it() -> None:
    assert set(pub.works()) == set(EXPERIMENTS)
    for work in pub.works():
        cited = pub.citation(work)
        assert cited == CITATIONS[work]
        assert cited.short and cited.full
        for key, value in pub.load(work).items():
            assert math.isfinite(value.value), (work, key)
            assert value.source and value.where and value.unit, (work, key)


def test_the_files_are_packaged_data() -> None:
    pyproject = (SRC.parents[2] / "pyproject.toml").read_text(encoding="utf-8")
    assert '"experiments/published/*.toml"' in pyproject


def test_works_without_published_numbers_hold_their_citation_only() -> None:
    for work in ("gpu-buffers", "netpis", "pressure-meets-network"):
        assert len(pub.load(work)) == 0, work


def _calls(module: str) -> Iterator[tuple[str, ast.Call]]:
    """Every call in a work's module, or in every module of its package, with its place."""
    package = SRC / module
    paths = sorted(package.glob("*.py")) if package.is_dir() else [SRC / f"{module}.py"]
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = path.relative_to(SRC).as_posix()
        yield from ((where, node) for node in ast.walk(tree) if isinstance(node, ast.Call))


def _name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _is_number(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, int | float)


@pytest.mark.parametrize("module", EXPERIMENT_MODULES)
def test_no_published_number_is_written_in_an_experiment(module: str) -> None:
    """No ``Published(...)`` built in code, and no number literal in the published slot
    of a comparison row (``ComparisonRow.numeric``'s third argument, ``Check``'s second)."""
    for where, call in _calls(module):
        name = _name(call)
        assert name != "Published", f"{where}:{call.lineno} builds a Published"
        slot = {"numeric": 2, "Check": 1}.get(name)
        if slot is not None and len(call.args) > slot:
            assert not _is_number(call.args[slot]), f"{where}:{call.lineno}: a number"


class _Recording(Mapping[str, Published]):
    """A work's values that note every key looked up."""

    def __init__(self, values: PublishedValues) -> None:
        self.values = values
        self.used: set[str] = set()

    def __getitem__(self, key: str) -> Published:
        self.used.add(key)
        return self.values[key]  # UnknownKey if the file lacks it

    def __iter__(self) -> Iterator[str]:
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)


def test_coal_looks_up_every_value_of_its_file_and_nothing_else(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.experiments.test_coal_not_diamonds import _flat, _results

    recording = _Recording(pub.load("coal-not-diamonds"))
    monkeypatch.setattr(coal_checks, "PUBLISHED", recording)  # where the checks read it
    coal_not_diamonds.comparison_sections(_results(False, _flat), quick=False)
    assert recording.used == set(recording.values)


def test_aging_looks_up_every_value_of_its_file_and_nothing_else(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    recording = _Recording(pub.load("aging-glitching"))
    monkeypatch.setattr(aging_comparison, "PUBLISHED", recording)
    golden = Path(__file__).parents[1] / "golden" / "aging-glitching.metrics.csv"
    # The quick run's slow frames are all ui_complex: add the other causes' rows.
    causes = [
        MetricRow("root-causes", "15-models", {"kind": "srff", "cause": c}, "share_pct", 1.0, "%")
        for c in ("io_binder", "sched_delay")
    ]
    rows = aging_glitching.comparison_rows(read_metrics_csv(golden) + causes)
    assert recording.used == set(recording.values)
    knee = next(r for r in rows if r.section == "sd-threshold" and r.published != "holds")
    assert knee.what.endswith("(GB; the study chose 6)") and knee.published == "6"


def test_the_spiral_reads_its_top_rate_from_its_file() -> None:
    from mqoe.experiments import downward_spiral

    values = pub.load("downward-spiral")
    assert set(values) == {"top_rate_kbps"}
    assert downward_spiral.TOP_RATE_KBPS == values["top_rate_kbps"].value == 1750.0
