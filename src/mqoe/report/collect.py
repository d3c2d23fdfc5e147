"""Read what ``mqoe reproduce`` wrote into plain data the HTML renderer formats.

A *reproduction folder* holds ``metrics.csv`` and/or ``comparison.csv`` or a Markdown
summary, its figures (``NAME.png``, ``NAME.svg``) and a results store in ``results/``.
``mqoe reproduce all`` writes one such folder per work under a parent folder; both
shapes are accepted. Nothing read here is trusted: every string ends up escaped by the
renderer, and a file that cannot be read becomes a *problem* shown in the report (and
printed by the CLI) rather than a crash half-way through.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from mqoe.errors import UserError
from mqoe.results.comparison import ComparisonRow, read_comparison_csv
from mqoe.results.store import ResultsStore

MARKERS: tuple[str, ...] = ("metrics.csv", "comparison.csv", "comparison.md", "summary.md")
SUMMARY_FILES: tuple[str, ...] = ("comparison.md", "summary.md")  # first found is shown
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_SVG_MIME = "image/svg+xml"


@dataclass(frozen=True)
class Figure:
    """One figure file: its name (the file stem), MIME type and bytes."""

    name: str
    mime: str
    data: bytes


@dataclass(frozen=True)
class ParamSet:
    """Runs of one scenario that share the same parameters."""

    params: dict[str, str]
    runs: int
    profiles: tuple[str, ...]
    seeds: tuple[int, ...]


@dataclass(frozen=True)
class ScenarioRuns:
    """The runs of one scenario: its constant parameters and its distinct varying ones."""

    scenario: str
    runs: int
    constant: dict[str, str]
    varying: tuple[str, ...]  # parameter names that differ between runs, sorted
    param_sets: tuple[ParamSet, ...]


@dataclass(frozen=True)
class RunsSummary:
    """What the results store says about how the numbers were made."""

    runs: int
    wall_time_total_s: float
    wall_time_median_s: float
    sim_time_total_s: float
    versions: tuple[str, ...]
    seeds: tuple[int, ...]
    profiles: tuple[str, ...]
    first_started_utc: str
    last_started_utc: str
    scenarios: tuple[ScenarioRuns, ...]


@dataclass(frozen=True)
class Reproduction:
    """Everything the report shows about one reproduction folder."""

    name: str
    path: Path
    figures: tuple[Figure, ...]
    comparison: tuple[ComparisonRow, ...] | None  # None: no comparison.csv
    summary: tuple[str, str] | None  # (file name, Markdown text)
    metrics_rows: int | None  # data rows in metrics.csv, None when absent
    runs: RunsSummary | None
    problems: tuple[str, ...] = field(default=())


# Studies that only an engine where every resource acts on the others can produce: shown
# first in the report, with this lead (folder name → text).
FEATURED: dict[str, str] = {
    "pressure-meets-network": (
        "Cross-resource study. The memory-pressure study's phone streams over the "
        "downward-spiral study's shared Wi-Fi/TCP bottleneck: the ABR rule's bitrate sets "
        "what decoding and buffering cost under memory pressure, and the CPU that reclaim "
        "keeps busy processes the packets and reads the socket. No published measurement "
        "exists for it; its checks are the expectations the two studies' findings carry "
        "over, tested on the simulated numbers."
    ),
}


def find_reproductions(out_dir: Path, works: Sequence[str] | None = None) -> list[Path]:
    """The reproduction folders under ``out_dir`` (itself, or its sub-folders: the
    :data:`FEATURED` studies first, then by name).

    ``works`` keeps only the named ones (folder names), in the order given. Raises
    :class:`UserError` for a missing folder, one without reproductions, or an unknown work.
    """
    if not out_dir.is_dir():
        raise UserError(f"{out_dir}: no such folder (run `mqoe reproduce WORK --out DIR` first)")
    if _is_reproduction(out_dir):
        found = [out_dir]
    else:
        found = sorted(
            (p for p in out_dir.iterdir() if p.is_dir() and _is_reproduction(p)),
            key=lambda p: (p.name not in FEATURED, p.name),
        )
    if not found:
        markers = ", ".join(MARKERS)
        raise UserError(f"{out_dir}: no reproduction found (a folder with one of {markers})")
    if not works:
        return found
    by_name = {p.name: p for p in found}
    missing = [w for w in works if w not in by_name]
    if missing:
        known = ", ".join(sorted(by_name))
        raise UserError(f"no reproduction {missing[0]!r} under {out_dir}; available: {known}")
    return [by_name[w] for w in dict.fromkeys(works)]


def _is_reproduction(folder: Path) -> bool:
    return any((folder / marker).is_file() for marker in MARKERS)


def load_reproduction(folder: Path) -> Reproduction:
    """Read one reproduction folder; unreadable parts become ``problems``."""
    problems: list[str] = []
    comparison: tuple[ComparisonRow, ...] | None = None
    if (folder / "comparison.csv").is_file():
        try:
            comparison = tuple(read_comparison_csv(folder / "comparison.csv"))
        except UserError as exc:
            problems.append(str(exc))
    return Reproduction(
        name=folder.name,
        path=folder,
        figures=tuple(_figures(folder, problems)),
        comparison=comparison,
        summary=_summary(folder, problems),
        metrics_rows=_metrics_rows(folder / "metrics.csv", problems),
        runs=_runs(folder / "results", problems),
        problems=tuple(problems),
    )


def _figures(folder: Path, problems: list[str]) -> list[Figure]:
    """PNG figures, or the SVG where a figure has no PNG; sorted by name."""
    figures = []
    stems = sorted({p.stem for p in folder.iterdir() if p.suffix in (".png", ".svg")})
    for stem in stems:
        png, svg = folder / f"{stem}.png", folder / f"{stem}.svg"
        try:
            if png.is_file():
                data = png.read_bytes()
                if not data.startswith(PNG_SIGNATURE):
                    problems.append(f"{png}: not a PNG file; figure left out")
                    continue
                figures.append(Figure(stem, "image/png", data))
            elif svg.is_file():
                figures.append(Figure(stem, _SVG_MIME, svg.read_bytes()))
        except OSError as exc:
            problems.append(f"{folder / stem}: cannot read the figure: {exc.strerror}")
    return figures


def _summary(folder: Path, problems: list[str]) -> tuple[str, str] | None:
    for name in SUMMARY_FILES:
        path = folder / name
        if path.is_file():
            try:
                return name, path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                problems.append(f"{path}: cannot read: {exc}")
    return None


def _metrics_rows(path: Path, problems: list[str]) -> int | None:
    if not path.is_file():
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(f"{path}: cannot read: {exc}")
        return None
    return max(0, sum(1 for line in text.splitlines() if line.strip()) - 1)


_RUN_COLUMNS = "scenario, profile, seed, params, mqoe_version, started_utc, wall_time_s"


def _runs(results: Path, problems: list[str]) -> RunsSummary | None:
    if not (results / "runs").is_dir():
        return None
    try:
        frame = ResultsStore(results).query(
            f"select {_RUN_COLUMNS}, sim_duration_s from runs order by started_utc, run_id"
        )
    except UserError as exc:
        problems.append(f"{results}: {exc}")
        return None
    if frame.empty:
        return None
    walls = [float(w) for w in frame["wall_time_s"]]
    started = sorted(str(s) for s in frame["started_utc"])
    return RunsSummary(
        runs=len(frame),
        wall_time_total_s=sum(walls),
        wall_time_median_s=statistics.median(walls),
        sim_time_total_s=float(frame["sim_duration_s"].sum()),
        versions=tuple(sorted({str(v) for v in frame["mqoe_version"]})),
        seeds=tuple(sorted({int(s) for s in frame["seed"]})),
        profiles=tuple(sorted({str(p) for p in frame["profile"]})),
        first_started_utc=started[0],
        last_started_utc=started[-1],
        scenarios=tuple(_scenario_runs(frame, problems)),
    )


def _scenario_runs(frame: pd.DataFrame, problems: list[str]) -> list[ScenarioRuns]:
    result = []
    for scenario, group in frame.groupby("scenario", sort=True):
        sets: dict[str, list[tuple[str, int]]] = {}
        decoded: dict[str, dict[str, str]] = {}
        for params, profile, seed in zip(
            group["params"], group["profile"], group["seed"], strict=True
        ):
            key = str(params)
            if key not in decoded:
                decoded[key] = _decode_params(key, str(scenario), problems)
            sets.setdefault(key, []).append((str(profile), int(seed)))
        names = sorted({name for params in decoded.values() for name in params})
        constant = {
            n: next(iter(values))
            for n in names
            if len(values := {p.get(n, "—") for p in decoded.values()}) == 1
        }
        varying = tuple(n for n in names if n not in constant)
        param_sets = tuple(
            ParamSet(
                params={n: decoded[key].get(n, "—") for n in varying},
                runs=len(members),
                profiles=tuple(sorted({p for p, _ in members})),
                seeds=tuple(sorted({s for _, s in members})),
            )
            for key, members in sets.items()
        )
        result.append(ScenarioRuns(str(scenario), len(group), constant, varying, param_sets))
    return result


def _decode_params(text: str, scenario: str, problems: list[str]) -> dict[str, str]:
    """The canonical JSON ``params`` column as ``{name: display text}``."""
    try:
        value = json.loads(text)
    except ValueError:
        problems.append(f"scenario {scenario}: a run's params are not JSON: {text[:60]!r}")
        return {"params": text}
    if not isinstance(value, dict):
        return {"params": text}
    return {str(k): _display(v) for k, v in value.items()}


def _display(value: object) -> str:
    if isinstance(value, str):
        return value or '""'  # an empty string stays visible
    return json.dumps(value, sort_keys=True, allow_nan=False)
