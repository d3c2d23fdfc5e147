"""The shipped device-profile catalogue and the profile loader's errors for users."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqoe.device.profiles import (
    ClusterSpec,
    CpuSpec,
    DeviceProfile,
    catalog_names,
    core_ipc_factor,
    list_profiles,
    load_profile,
    load_profile_file,
)
from mqoe.device.profiles.loader import CATALOG_DIR
from mqoe.errors import InputFileError, UserError

# ---------------------------------------------------------------------------------------
# Expected data, written from the studies' tables (not read from the TOML files)
# ---------------------------------------------------------------------------------------

# The responsiveness study's fifteen phone models: (#, profile, SoC, table clock GHz,
# RAM GB, flash GB, Android).
SPEC04_TABLE = [
    (1, "redmi-5", "Snapdragon 450", 1.8, 3, 32, "7.0"),
    (2, "mi-a1", "Snapdragon 625", 2.0, 4, 64, "7.0"),
    (3, "mi-max-2", "Snapdragon 625", 2.0, 4, 64, "7.0"),
    (4, "mi-max-3", "Snapdragon 636", 1.8, 6, 64, "9.0"),
    (5, "redmi-note-5-pro", "Snapdragon 636", 1.8, 6, 64, "7.0"),
    (6, "mi-a2", "Snapdragon 660", 2.2, 6, 64, "8.0"),
    (7, "mi-8-lite", "Snapdragon 660", 2.2, 6, 64, "9.0"),
    (8, "redmi-note-7", "Snapdragon 660", 2.2, 6, 64, "7.0"),
    (9, "redmi-pro-2", "Snapdragon 660", 2.2, 6, 64, "8.0"),
    (10, "mi-note-3", "Snapdragon 660", 2.2, 6, 64, "7.0"),
    (11, "mi-6", "Snapdragon 835", 2.3, 6, 64, "8.0"),
    (12, "mi-mix-2s", "Snapdragon 845", 2.8, 6, 128, "8.0"),
    (13, "mi-8-pro", "Snapdragon 845", 2.8, 8, 128, "9.0"),
    (14, "mi-mix-3", "Snapdragon 845", 2.8, 8, 128, "9.0"),
    (15, "black-shark", "Snapdragon 845", 2.8, 8, 128, "9.0"),
]
# Where the public big-core clock differs from the table's, the profile uses the public one.
PUBLIC_MAX_MHZ = {"mi-6": 2450.0}  # Qualcomm SDM835: Kryo 280 Gold up to 2.45 GHz

# Public SoC specifications (Qualcomm product briefs): LITTLE then big (cores, type, MHz).
# SDM450/625 are eight A53s in two same-clock clusters of the kernel's CPU topology.
SOC_LAYOUT = {
    "Snapdragon 450": [(4, "Cortex-A53", 1800), (4, "Cortex-A53", 1800)],
    "Snapdragon 625": [(4, "Cortex-A53", 2000), (4, "Cortex-A53", 2000)],
    "Snapdragon 636": [(4, "Kryo 260 Silver", 1600), (4, "Kryo 260 Gold", 1800)],
    "Snapdragon 660": [(4, "Kryo 260 Silver", 1840), (4, "Kryo 260 Gold", 2200)],
    "Snapdragon 835": [(4, "Kryo 280 Silver", 1900), (4, "Kryo 280 Gold", 2450)],
    "Snapdragon 845": [(4, "Kryo 385 Silver", 1770), (4, "Kryo 385 Gold", 2800)],
}

# The memory-pressure study's phones: (profile, RAM GB, [(cores, core type, MHz) LITTLE first],
# screen (w, h), tier).
SPEC01_TABLE = [
    ("nokia-1", 1, [(4, "Cortex-A53", 1100)], (480, 854), "entry"),
    ("nexus-5", 2, [(4, "Krait 400", 2260)], (1080, 1920), "mid"),
    ("nexus-6p", 3, [(4, "Cortex-A53", 1550), (4, "Cortex-A57", 2000)], (1440, 2560), "high"),
]

SPEC_NAMES = {name for _, name, *_ in SPEC04_TABLE} | {
    "nokia-1",
    "nexus-5",
    "nexus-6p",
    "galaxy-nexus",  # the NetPIS study
}

MS = 1_000_000  # ns per ms


def _tier(model_number: int) -> str:
    # The responsiveness study: models 1-5 low-end, 6-10 middle, 11-15 high-end.
    return "low" if model_number <= 5 else "mid" if model_number <= 10 else "high"


# ---------------------------------------------------------------------------------------
# The catalogue
# ---------------------------------------------------------------------------------------


def test_catalogue_holds_all_spec_phones() -> None:
    names = catalog_names()
    assert len(SPEC_NAMES) == 19
    assert len(names) >= 19
    assert set(names) >= SPEC_NAMES
    assert [p.name for p in list_profiles()] == names


@pytest.mark.parametrize("path", sorted(CATALOG_DIR.glob("*.toml")), ids=lambda p: p.stem)
def test_catalogue_file_name_is_profile_name(path: Path) -> None:
    assert load_profile_file(path).name == path.stem


@pytest.mark.parametrize(
    ("number", "name", "soc", "table_ghz", "ram_gb", "flash_gb", "android"), SPEC04_TABLE
)
def test_spec04_phone_matches_spec_table(
    number: int,
    name: str,
    soc: str,
    table_ghz: float,
    ram_gb: int,
    flash_gb: int,
    android: str,
) -> None:
    profile = load_profile(name)
    assert profile.memory.ram_mb == 1024 * ram_gb
    assert profile.storage.capacity_gb == flash_gb
    assert profile.android_version == android
    assert profile.tier == _tier(number)
    assert soc in profile.soc
    assert profile.cpu.n_cores == 8  # "all octa-core Snapdragon"
    top_mhz = max(c.max_freq_mhz for c in profile.cpu.clusters)
    assert top_mhz == PUBLIC_MAX_MHZ.get(name, table_ghz * 1000)


@pytest.mark.parametrize(("name", "soc"), [(row[1], row[2]) for row in SPEC04_TABLE])
def test_spec04_cluster_layout_follows_public_soc_spec(name: str, soc: str) -> None:
    clusters = load_profile(name).cpu.clusters
    assert [(c.cores, c.core_type, c.max_freq_mhz) for c in clusters] == SOC_LAYOUT[soc]


@pytest.mark.parametrize(("name", "ram_gb", "clusters", "screen", "tier"), SPEC01_TABLE)
def test_spec01_phone_matches_spec_table(
    name: str,
    ram_gb: int,
    clusters: list[tuple[int, str, int]],
    screen: tuple[int, int],
    tier: str,
) -> None:
    profile = load_profile(name)
    assert profile.memory.ram_mb == 1024 * ram_gb
    got = [(c.cores, c.core_type, c.max_freq_mhz) for c in profile.cpu.clusters]
    assert got == clusters
    assert (profile.display.width_px, profile.display.height_px) == screen
    assert profile.tier == tier


def test_nokia_1_is_an_android_go_phone_and_the_others_are_not() -> None:
    assert load_profile("nokia-1").low_ram
    assert load_profile("nokia-1").android_version == "10"  # memory-pressure study: Android Go (10)
    assert load_profile("nokia-1").storage.type == "emmc"
    assert not any(p.low_ram for p in list_profiles() if p.name != "nokia-1")


def test_galaxy_nexus_matches_spec05() -> None:
    profile = load_profile("galaxy-nexus")
    assert profile.android_version == "4.3"
    assert profile.cpu.n_cores == 2
    assert profile.tier == "mid"


@pytest.mark.parametrize("profile", list_profiles(), ids=lambda p: p.name)
def test_every_core_type_resolves_to_an_ipc_factor(profile: DeviceProfile) -> None:
    for cluster in profile.cpu.clusters:
        assert 0 < core_ipc_factor(cluster) <= 10


@pytest.mark.parametrize("profile", list_profiles(), ids=lambda p: p.name)
def test_little_cluster_first_and_not_faster_than_big(profile: DeviceProfile) -> None:
    clusters = profile.cpu.clusters
    assert clusters[0].name == "little"
    if len(clusters) == 1:
        return
    assert [c.name for c in clusters] == ["little", "big"]
    little, big = clusters
    little_ipc, big_ipc = core_ipc_factor(little), core_ipc_factor(big)
    little_speed = little_ipc * little.max_freq_mhz
    big_speed = big_ipc * big.max_freq_mhz
    if little.core_type == big.core_type:  # e.g. SDM450/625: two A53 clusters
        assert little_speed <= big_speed
    else:
        assert little_ipc < big_ipc
        assert little_speed < big_speed


# ---------------------------------------------------------------------------------------
# Derived CFS tunables
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n_cores", "latency_ms", "min_granularity_ms", "wakeup_granularity_ms"),
    [
        (1, 6.0, 0.75, 1.0),
        (2, 12.0, 1.5, 2.0),
        (4, 18.0, 2.25, 3.0),
        (6, 18.0, 2.25, 3.0),  # 1 + ilog2(6) = 3
        (8, 24.0, 3.0, 4.0),
        (16, 24.0, 3.0, 4.0),  # the kernel caps the scaling at 8 CPUs
    ],
)
def test_cfs_tunables_scale_with_log2_of_core_count(
    n_cores: int, latency_ms: float, min_granularity_ms: float, wakeup_granularity_ms: float
) -> None:
    cpu = CpuSpec(
        clusters=(ClusterSpec(name="c", cores=n_cores, core_type="Cortex-A53", max_freq_mhz=1e3),)
    )
    assert cpu.sched_latency_ns == latency_ms * MS
    assert cpu.sched_min_granularity_ns == min_granularity_ms * MS
    assert cpu.sched_wakeup_granularity_ns == wakeup_granularity_ms * MS


@pytest.mark.parametrize(
    ("name", "latency_ms", "min_granularity_ms"),
    [("galaxy-nexus", 12.0, 1.5), ("nokia-1", 18.0, 2.25), ("black-shark", 24.0, 3.0)],
)
def test_catalogue_phones_get_kernel_default_cfs_tunables(
    name: str, latency_ms: float, min_granularity_ms: float
) -> None:
    cpu = load_profile(name).cpu
    assert cpu.sched_latency_ns == latency_ms * MS
    assert cpu.sched_min_granularity_ns == min_granularity_ms * MS


def test_explicit_sched_section_overrides_kernel_defaults(tmp_path: Path) -> None:
    text = _catalog_text("black-shark").replace(
        "[memory]", "[cpu.sched]\nlatency_ns = 10_000_000\nwakeup_granularity_ns = 0\n\n[memory]"
    )
    cpu = load_profile_file(_write(tmp_path / "p.toml", text)).cpu
    assert cpu.sched_latency_ns == 10 * MS
    assert cpu.sched_wakeup_granularity_ns == 0  # an explicit zero is not "unset"
    assert cpu.sched_min_granularity_ns == 3 * MS  # not overridden: 8-core default


# ---------------------------------------------------------------------------------------
# Errors for users
# ---------------------------------------------------------------------------------------


def _catalog_text(name: str) -> str:
    return (CATALOG_DIR / f"{name}.toml").read_text(encoding="utf-8")


def _write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("utf-8"))
    return path


def _line_of(text: str, needle: str, occurrence: int = 0) -> int:
    """1-based line of the ``occurrence``-th line of ``text`` that starts with ``needle``."""
    hits = [n for n, line in enumerate(text.splitlines(), 1) if line.startswith(needle)]
    return hits[occurrence]


def _replace_nth(text: str, old: str, new: str, occurrence: int) -> str:
    parts = text.split(old)
    assert len(parts) > occurrence + 1, f"{old!r} occurs fewer than {occurrence + 1} times"
    return old.join(parts[: occurrence + 1]) + new + old.join(parts[occurrence + 1 :])


# The base is nexus-6p: two clusters of different core types, `name`/`cpu`/`memory` keys in
# several tables. Each case: (mutation, message fragments, key path, acceptable lines).
# Lines are computed from the mutated text; None means the error has no file position.
Mutation = Callable[[str], str]
Lines = Callable[[str], set[int | None]]


def _at(needle: str, occurrence: int = 0) -> Lines:
    return lambda text: {_line_of(text, needle, occurrence)}


BAD_PROFILES: dict[str, tuple[Mutation, tuple[str, ...], str, Lines | None]] = {
    # id: (mutation, fragments, key path, expected lines)
    "negative-cores": (
        lambda t: _replace_nth(t, "cores = 4", "cores = -4", 0),
        ("greater than or equal to 1", "-4"),
        "cpu.clusters[0].cores",
        _at("cores = -4"),
    ),
    "negative-cores-second-cluster": (
        lambda t: _replace_nth(t, "cores = 4", "cores = -4", 1),
        ("greater than or equal to 1", "-4"),
        "cpu.clusters[1].cores",
        _at("cores = -4"),
    ),
    "unknown-core-type": (
        lambda t: t.replace('"Cortex-A53"', '"Mongoose M3"'),
        ("Mongoose M3", "ipc_factor"),
        "cpu.clusters[0].core_type",
        _at('core_type = "Mongoose M3"'),
    ),
    "unknown-core-type-second-cluster": (
        lambda t: t.replace('"Cortex-A57"', '"Mongoose M3"'),
        ("Mongoose M3", "ipc_factor"),
        "cpu.clusters[1].core_type",
        _at('core_type = "Mongoose M3"'),
    ),
    "misspelt-optional-cluster-key": (
        lambda t: t.replace("max_freq_mhz = 1550", "max_freq_mhz = 1550\nipc_factr = 1.1"),
        ("Extra inputs are not permitted",),
        "cpu.clusters[0].ipc_factr",
        _at("ipc_factr"),
    ),
    "misspelt-required-cluster-key": (
        lambda t: t.replace("max_freq_mhz = 1550", "max_freq_mzh = 1550"),
        ("max_freq_mhz",),
        "cpu.clusters[0].max_freq_mzh",
        _at("max_freq_mzh"),
    ),
    "unknown-top-level-key": (
        lambda t: t.replace("low_ram = false", "low_ram = false\nscreen_inches = 5.7"),
        ("Extra inputs are not permitted",),
        "screen_inches",
        _at("screen_inches"),
    ),
    "invalid-toml": (
        lambda t: t.replace("ram_mb = 3072", "ram_mb = = 3072"),
        ("not valid TOML",),
        "",
        _at("ram_mb = = 3072"),
    ),
    "missing-source": (
        lambda t: "\n".join(ln for ln in t.splitlines() if not ln.startswith("display = ")),
        ("[sources]", "display"),
        "",
        None,
    ),
    "blank-source": (
        lambda t: "\n".join(
            'storage = "  "' if ln.startswith("storage = ") else ln for ln in t.splitlines()
        ),
        ("[sources]", "storage"),
        "",
        None,
    ),
    "duplicate-cluster-names": (
        lambda t: t.replace('name = "big"', 'name = "little"'),
        ("cluster names must be unique",),
        "cpu",
        lambda t: {_line_of(t, "[cpu]"), _line_of(t, 'name = "little"', 1)},
    ),
    "bad-storage-type": (
        lambda t: t.replace('type = "emmc"', 'type = "sdcard"'),
        ("'emmc' or 'ufs'", "sdcard"),
        "storage.type",
        _at('type = "sdcard"'),
    ),
    "absurd-width": (
        lambda t: t.replace("width_px = 1440", "width_px = 99999999999999999999999"),
        ("less than or equal to 16384", "99999999999999999999999"),
        "display.width_px",
        _at("width_px = 99999"),
    ),
    "infinite-refresh": (
        lambda t: t.replace("refresh_hz = 60", "refresh_hz = inf"),
        ("finite number",),
        "display.refresh_hz",
        _at("refresh_hz = inf"),
    ),
    "nan-clock-second-cluster": (
        lambda t: t.replace("max_freq_mhz = 2000", "max_freq_mhz = nan"),
        ("finite number",),
        "cpu.clusters[1].max_freq_mhz",
        _at("max_freq_mhz = nan"),
    ),
    "reserved-above-ram": (
        lambda t: t.replace("ram_mb = 3072", "ram_mb = 3072\nreserved_mb = 4096"),
        ("reserved_mb (4096) must be below ram_mb",),
        "memory",
        lambda t: {_line_of(t, "[memory]")},
    ),
    "kernel-memory-above-memtotal": (
        lambda t: t.replace("ram_mb = 3072", "ram_mb = 3072\nkernel_mb = 3000"),
        ("kernel_mb (3000.0) must be below MemTotal",),
        "memory",
        lambda t: {_line_of(t, "[memory]")},
    ),
    "sched-latency-above-the-kernel-limit": (
        lambda t: t.replace("[memory]", "[cpu.sched]\nlatency_ns = 5_000_000_000\n\n[memory]"),
        ("less than or equal to 1000000000",),
        "cpu.sched.latency_ns",
        _at("latency_ns ="),
    ),
    "too-many-minfree-levels": (
        lambda t: t.replace("[sources]", "[lmk]\nminfree_kb = [1, 2, 3, 4, 5, 6, 7]\n\n[sources]"),
        ("at most 6",),
        "lmk.minfree_kb",
        _at("minfree_kb ="),
    ),
    "missing-cluster-name": (
        lambda t: t.replace('name = "big"\n', ""),
        ("Field required",),
        "cpu.clusters[1].name",
        # The key is absent: no line, or the second cluster's header, never the profile name.
        lambda t: {None, _line_of(t, "[[cpu.clusters]]", 1)},
    ),
}


def _bad_profile(tmp_path: Path, case: str) -> tuple[Path, str, InputFileError]:
    mutate = BAD_PROFILES[case][0]
    text = mutate(_catalog_text("nexus-6p"))
    path = _write(tmp_path / f"{case}.toml", text)
    with pytest.raises(InputFileError) as info:
        load_profile_file(path)
    return path, text, info.value


@pytest.mark.parametrize("case", sorted(BAD_PROFILES))
def test_bad_profile_raises_input_file_error_naming_the_file(tmp_path: Path, case: str) -> None:
    path, _, error = _bad_profile(tmp_path, case)
    message = str(error)
    assert error.path == str(path)
    assert message.startswith(str(path))
    for fragment in BAD_PROFILES[case][1]:
        assert fragment in message


@pytest.mark.parametrize("case", sorted(BAD_PROFILES))
def test_bad_profile_error_names_key_path_and_line(tmp_path: Path, case: str) -> None:
    path, text, error = _bad_profile(tmp_path, case)
    key_path, lines = BAD_PROFILES[case][2], BAD_PROFILES[case][3]
    message = str(error)
    if key_path:
        assert f"key {key_path}:" in message
    if lines is None:
        return
    expected = lines(text)
    assert error.line in expected
    if error.line is not None:
        assert message.startswith(f"{path}:{error.line}: ")


def test_unknown_core_type_with_explicit_ipc_factor_loads(tmp_path: Path) -> None:
    text = _catalog_text("nexus-6p").replace(
        'core_type = "Cortex-A57"', 'core_type = "Mongoose M3"\nipc_factor = 1.7'
    )
    profile = load_profile_file(_write(tmp_path / "p.toml", text))
    assert core_ipc_factor(profile.cpu.clusters[1]) == 1.7


def test_deeply_nested_toml_is_a_user_error(tmp_path: Path) -> None:
    path = _write(tmp_path / "deep.toml", "x = " + "[" * 5000 + "]" * 5000)
    with pytest.raises(UserError):
        load_profile_file(path)


def test_boolean_core_count_is_rejected(tmp_path: Path) -> None:
    text = _replace_nth(_catalog_text("nexus-6p"), "cores = 4", "cores = true", 0)
    with pytest.raises(InputFileError):
        load_profile_file(_write(tmp_path / "p.toml", text))


def test_unknown_profile_name_points_to_profiles_list() -> None:
    with pytest.raises(UserError, match="mqoe profiles list") as info:
        load_profile("no-such-phone")
    assert "no-such-phone" in str(info.value)


def test_missing_profile_file_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such profile file"):
        load_profile(tmp_path / "absent.toml")


def test_users_own_profile_file_loads_by_path(tmp_path: Path) -> None:
    text = _catalog_text("nokia-1").replace('name = "nokia-1"', 'name = "my-nokia"')
    path = _write(tmp_path / "my-nokia.toml", text)
    expected = load_profile("nokia-1").model_copy(update={"name": "my-nokia"})
    assert load_profile(str(path)) == expected
    assert load_profile(path) == expected
    assert "my-nokia" not in catalog_names()


def test_an_empty_profile_name_is_refused() -> None:
    for name in ("", "  "):
        with pytest.raises(UserError, match="empty profile name"):
            load_profile(name)


@pytest.mark.parametrize(
    ("data", "encoding"),
    [("\ufeff", "utf-8"), ("\ufeff", "utf-16-le"), ("\ufeff", "utf-16-be"), ("", "utf-8")],
)
def test_profiles_with_a_byte_order_mark_or_cr_line_ends_load(
    tmp_path: Path, data: str, encoding: str
) -> None:
    text = _catalog_text("nokia-1").replace('name = "nokia-1"', 'name = "mine"')
    path = tmp_path / "mine.toml"
    path.write_bytes((data + text.replace("\n", "\r")).encode(encoding))  # CR alone: old Macs
    assert load_profile(path) == load_profile("nokia-1").model_copy(update={"name": "mine"})


def test_a_latin1_byte_is_reported_at_its_line(tmp_path: Path) -> None:
    text = _catalog_text("nokia-1").replace('soc = "MediaTek MT6737M"', 'soc = "Médiatek"')
    path = tmp_path / "latin1.toml"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(InputFileError, match="not UTF-8 text") as info:
        load_profile_file(path)
    assert info.value.line == _line_of(text, "soc = ")


def _numeric_fields(model: type[Any], prefix: str = "") -> list[tuple[str, Any]]:
    """(dotted name, pydantic field info) of every int or float field, recursively."""
    import typing

    from pydantic import BaseModel

    found = []
    for name, info in model.model_fields.items():
        kinds = [info.annotation, *typing.get_args(info.annotation)]
        nested = [k for k in kinds if isinstance(k, type) and issubclass(k, BaseModel)]
        args = [a for k in kinds for a in (k, *typing.get_args(k))]
        if nested:
            found += _numeric_fields(nested[0], f"{prefix}{name}.")
        elif any(a in (int, float) for a in args) or "int" in str(info.annotation):
            found.append((f"{prefix}{name}", info))
    return found


def test_every_number_in_a_profile_has_an_upper_bound() -> None:
    """width_px = 10^23 once loaded and overflowed later: no number is unbounded now."""
    fields = _numeric_fields(DeviceProfile)
    assert len(fields) > 30
    unbounded = []
    for name, info in fields:
        text = repr(info.metadata) + repr(info.annotation)
        if "le=" not in text and "lt=" not in text and "Literal" not in text:
            unbounded.append(name)
    assert unbounded == []


_NUMBER_LINE = r"^(\w+) = (-?[0-9][0-9_.]*)$"


def _numeric_lines(text: str) -> list[tuple[int, str]]:
    import re

    return [
        (number, match.group(1))
        for number, line in enumerate(text.splitlines(), 1)
        if (match := re.match(_NUMBER_LINE, line))
    ]


_SHIPPED = _catalog_text("nexus-6p")


@pytest.mark.parametrize(("line", "key"), _numeric_lines(_SHIPPED))
@pytest.mark.parametrize("value", ["99999999999999999999999", "1e300", "-1e300", "nan", "-inf"])
def test_any_absurd_number_is_refused_at_its_line(
    tmp_path: Path, line: int, key: str, value: str
) -> None:
    lines = _SHIPPED.splitlines()
    lines[line - 1] = f"{key} = {value}"
    path = _write(tmp_path / "p.toml", "\n".join(lines) + "\n")
    with pytest.raises(InputFileError) as info:
        load_profile_file(path)
    assert info.value.line == line, str(info.value)
    assert f".{key}:" in str(info.value) or f"key {key}:" in str(info.value)


# ---------------------------------------------------------------------------------------
# Property tests
# ---------------------------------------------------------------------------------------

_KNOWN_CORE_TYPES = ["Cortex-A53", "Cortex-A9", "Krait 400", "Kryo 385 Gold"]
_names = st.from_regex(r"[a-z][a-z0-9_-]{0,11}", fullmatch=True)


@st.composite
def _clusters(draw: st.DrawFn) -> list[dict[str, Any]]:
    names = draw(st.lists(_names, min_size=1, max_size=4, unique=True))
    clusters: list[dict[str, Any]] = []
    for name in names:
        custom = draw(st.booleans())
        ipc = draw(st.floats(0.5, 3.0))
        cluster: dict[str, Any] = {
            "name": name,
            "cores": draw(st.integers(1, 8)),
            "core_type": "custom " + name if custom else draw(st.sampled_from(_KNOWN_CORE_TYPES)),
            "max_freq_mhz": draw(st.floats(300.0, 3500.0)),
        }
        if custom or draw(st.booleans()):
            cluster["ipc_factor"] = ipc
        clusters.append(cluster)
    return clusters


def _toml_value(value: object) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(value)


def _profile_with_clusters(clusters: list[dict[str, Any]]) -> str:
    head, _, tail = _catalog_text("nokia-1").partition("[cpu]")
    tail = tail[tail.index("[memory]") :]
    body = "".join(
        "[[cpu.clusters]]\n" + "".join(f"{k} = {_toml_value(v)}\n" for k, v in c.items())
        for c in clusters
    )
    return f"{head}[cpu]\n{body}\n{tail}"


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(clusters=_clusters())
def test_valid_clusters_round_trip_through_toml(
    tmp_path: Path, clusters: list[dict[str, Any]]
) -> None:
    path = _write(tmp_path / "p.toml", _profile_with_clusters(clusters))
    cpu = load_profile_file(path).cpu
    assert [c.model_dump(exclude_none=True) for c in cpu.clusters] == clusters
    for got, want in zip(cpu.clusters, clusters, strict=True):
        if "ipc_factor" in want:
            assert core_ipc_factor(got) == want["ipc_factor"]
    n_cores = sum(c["cores"] for c in clusters)
    assert cpu.n_cores == n_cores
    assert cpu.sched_latency_ns == 6 * MS * (1 + int(math.log2(min(n_cores, 8))))


def _assert_loads_or_user_error(path: Path) -> None:
    try:
        profile = load_profile_file(path)
    except UserError:
        return
    assert isinstance(profile, DeviceProfile)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(data=st.binary(max_size=400) | st.text(max_size=400).map(str.encode))
def test_garbage_file_loads_or_raises_user_error(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "garbage.toml"
    path.write_bytes(data)
    _assert_loads_or_user_error(path)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(
    where=st.floats(0.0, 1.0),
    cut=st.integers(0, 40),
    insert=st.text(alphabet=st.sampled_from('[]{}=".,#-_ \n0123456789abcxyz'), max_size=30),
)
def test_mutated_profile_loads_or_raises_user_error(
    tmp_path: Path, where: float, cut: int, insert: str
) -> None:
    text = _catalog_text("nexus-6p")
    start = int(where * len(text))
    path = _write(tmp_path / "mutated.toml", text[:start] + insert + text[start + cut :])
    _assert_loads_or_user_error(path)
