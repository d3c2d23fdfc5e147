"""Load and validate profile TOML files with errors that name the file, line and key."""

from __future__ import annotations

import codecs
import re
import tomllib
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from mqoe.device.profiles.cpu_schema import PER_CLUSTER_TABLES, ClusterSpec, CoreType, SocSpec
from mqoe.device.profiles.schema import DeviceProfile
from mqoe.errors import InputFileError, UserError

M = TypeVar("M", bound=BaseModel)

_HERE = Path(__file__).parent
CATALOG_DIR = _HERE / "catalog"
CORE_TYPES_FILE = _HERE / "core_types.toml"
SOCS_DIR = _HERE / "socs"


def _read_toml(path: Path) -> dict[str, Any]:
    text = _read_text(path)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = _toml_error_line(str(exc))
        raise InputFileError(path, f"not valid TOML: {exc}", line=line) from None
    except RecursionError:
        raise InputFileError(path, "not valid TOML: nested too deeply") from None


# Byte-order marks that editors write: Notepad's "UTF-8 with BOM" and "Unicode"
# (UTF-16LE); PowerShell's `>` redirection writes UTF-16LE with a BOM too.
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
MAX_PROFILE_BYTES = 1 << 20  # a profile is a few KB; more is not a profile


def _read_text(path: Path) -> str:
    """The file's text: UTF-8, or UTF-8/UTF-16 with a BOM; line ends as LF. One-line
    errors for a missing, unreadable, oversized or undecodable file."""
    if path.is_dir():
        raise InputFileError(path, "is a folder, expected a profile .toml file")
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_PROFILE_BYTES + 1)
    except FileNotFoundError:
        raise UserError(f"{path}: no such profile file") from None
    except PermissionError:
        raise InputFileError(path, "permission denied (cannot read it)") from None
    except OSError as exc:
        raise InputFileError(path, f"cannot read it: {exc.strerror or exc}") from None
    if len(data) > MAX_PROFILE_BYTES:
        raise InputFileError(path, f"larger than {MAX_PROFILE_BYTES} bytes; not a profile")
    codec, data = next(((c, data[len(b) :]) for b, c in _BOMS if data.startswith(b)), ("", data))
    try:
        text = data.decode(codec or "utf-8")
    except UnicodeDecodeError as exc:
        if codec.startswith("utf-16"):
            what = f"not UTF-16 text after its byte-order mark: {exc.reason}"
            raise InputFileError(path, what) from None
        line = data[: exc.start].count(b"\n") + 1
        what = f"not UTF-8 text (byte 0x{data[exc.start]:02x}); save the profile as UTF-8"
        raise InputFileError(path, what, line=line) from None
    # TOML takes LF and CRLF; a lone CR (old Mac editors) would be an "illegal character".
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _toml_error_line(message: str) -> int | None:
    match = re.search(r"line (\d+)", message)
    return int(match.group(1)) if match else None


_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"^\s*\"?([A-Za-z0-9_-]+)\"?\s*=")


def _key_lines(path: Path) -> dict[tuple[int | str, ...], int]:
    """Map each key path (as pydantic locates it) to its line, tracking [tables] and
    [[arrays of tables]] so the second cluster's key is not taken for the first's."""
    try:
        lines = _read_text(path).splitlines()
    except UserError:
        return {}
    where: dict[tuple[int | str, ...], int] = {}
    counts: dict[tuple[str, ...], int] = {}
    table: tuple[int | str, ...] = ()
    for number, line in enumerate(lines, start=1):
        header = _HEADER.match(line)
        if header:
            names = tuple(part.strip().strip('"') for part in header.group(2).split("."))
            if header.group(1) == "[[":
                counts[names] = counts.get(names, -1) + 1
                table = (*names, counts[names])
            else:
                table = names
            where.setdefault(table, number)
            continue
        key = _KEY.match(line)
        if key:
            where.setdefault((*table, key.group(1)), number)
    return where


def _key_line(path: Path, loc: tuple[int | str, ...]) -> int | None:
    """The line of the key an error points at, else of the nearest enclosing table."""
    where = _key_lines(path)
    for end in range(len(loc), 0, -1):
        if loc[:end] in where:
            return where[loc[:end]]
    return None


def _format_loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _toml_loc(loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """A validation error's location as TOML keys: without the per-cluster tables'
    ``clusters`` level (``[cpu.governor.little]`` is ``governor.clusters.little``)."""
    out: list[int | str] = []
    for part in loc:
        if not (part == "clusters" and out and out[-1] in PER_CLUSTER_TABLES):
            out.append(part)
    return tuple(out)


def _validate(model: type[M], data: dict[str, Any], path: Path) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        # A misspelt key shows up twice (extra + missing): name the misspelling first.
        errors = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
        first = errors[0]
        loc = _toml_loc(tuple(first["loc"]))
        got = first.get("input")
        got_text = "" if isinstance(got, dict) else f", got {got!r}"
        what = f"key {_format_loc(loc)}: {first['msg']}{got_text}"
        if first["type"] == "extra_forbidden":
            missing = [
                str(e["loc"][-1])
                for e in errors
                if e["type"] == "missing" and tuple(e["loc"][:-1]) == loc[:-1]
            ]
            if missing:
                what += f" (did you mean {' or '.join(missing)}?)"
        more = len(errors) - 1
        if more:
            what += f" (and {more} more problem{'s' if more > 1 else ''})"
        raise InputFileError(path, what, line=_key_line(path, loc)) from None


@cache
def _core_types() -> dict[str, CoreType]:
    raw = _read_toml(CORE_TYPES_FILE)
    return {name: _validate(CoreType, body, CORE_TYPES_FILE) for name, body in raw.items()}


def core_ipc_factor(cluster: ClusterSpec) -> float:
    """Reference cycles per clock of a cluster: its own override, else the core-type table."""
    if cluster.ipc_factor is not None:
        return cluster.ipc_factor
    known = _core_types()
    if cluster.core_type not in known:
        raise UserError(
            f"core_type {cluster.core_type!r} is not in the core-type table; give the cluster "
            f"an explicit ipc_factor or use one of: {', '.join(sorted(known))}"
        )
    return known[cluster.core_type].ipc_factor


def load_profile_file(path: str | Path) -> DeviceProfile:
    """Load one profile file and validate it, including that its core types are known."""
    path = Path(path)
    profile = _validate(DeviceProfile, _read_toml(path), path)
    for index, cluster in enumerate(profile.cpu.clusters):
        try:
            core_ipc_factor(cluster)
        except UserError as exc:
            loc = ("cpu", "clusters", index, "core_type")
            what = f"key {_format_loc(loc)}: {exc}"
            raise InputFileError(path, what, line=_key_line(path, loc)) from None
    _check_soc(profile, path)
    return profile


@cache
def load_soc(soc_id: str) -> SocSpec:
    """A SoC's sourced CPU tables (``profiles/socs/<id>.toml``)."""
    path = SOCS_DIR / f"{soc_id}.toml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in SOCS_DIR.glob("*.toml"))) or "none"
        raise UserError(f"unknown SoC {soc_id!r}; the SoC tables are: {known}")
    soc = _validate(SocSpec, _read_toml(path), path)
    if soc.id != path.stem:
        raise InputFileError(path, f"id {soc.id!r} must match the file name")
    return soc


def _check_soc(profile: DeviceProfile, path: Path) -> None:
    """The profile's clusters are its SoC's (same names and core counts)."""
    if profile.cpu.soc is None:
        return
    soc = load_soc(profile.cpu.soc.id)
    theirs = {c.name: c.cores for c in soc.clusters}
    ours = {c.name: c.cores for c in profile.cpu.clusters}
    if theirs != ours:
        loc = ("cpu", "soc", "id")
        what = f"key {_format_loc(loc)}: SoC {soc.id!r} has clusters {theirs}, the profile {ours}"
        raise InputFileError(path, what, line=_key_line(path, loc))


@cache
def _catalog() -> dict[str, DeviceProfile]:
    return {name: _catalog_profile(name) for name in _catalog_files()}


@cache
def _catalog_files() -> tuple[str, ...]:
    """Names of the catalogue's files (a listing: nothing is read or validated)."""
    return tuple(path.stem for path in sorted(CATALOG_DIR.glob("*.toml")))


@cache
def _catalog_profile(name: str) -> DeviceProfile:
    """One catalogue file, validated: a run on one phone reads only its own profile (the
    whole catalogue costs ~20× the TOML parsing and validation)."""
    path = CATALOG_DIR / f"{name}.toml"
    profile = load_profile_file(path)
    if profile.name != path.stem:
        raise InputFileError(path, f"name {profile.name!r} must match the file name")
    return profile


def catalog_names() -> list[str]:
    """Names of the shipped profiles, sorted."""
    return sorted(_catalog())


def list_profiles() -> list[DeviceProfile]:
    """The shipped profiles, sorted by name."""
    catalog = _catalog()
    return [catalog[name] for name in sorted(catalog)]


def load_profile(name_or_path: str | Path) -> DeviceProfile:
    """A catalogue profile by name, or a user's profile file by path (``*.toml``)."""
    text = str(name_or_path)
    if not text.strip():
        raise UserError(
            "an empty profile name; `mqoe profiles list` shows the shipped ones, or pass a "
            "path to your own .toml file"
        )
    if text.endswith(".toml") or Path(text).is_file():
        return load_profile_file(text)
    names = _catalog_files()
    if text not in names:
        raise UserError(
            f"unknown profile {text!r}; `mqoe profiles list` shows the {len(names)} shipped "
            "ones, or pass a path to your own .toml file"
        )
    return _catalog_profile(text)
