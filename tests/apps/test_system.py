"""The phone's own processes: the packaged catalogue, what boot leaves in memory, the CPU
the services use over time, catalogue errors, and determinism."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqoe.apps.system import MB_PAGES, ServiceSpec, SystemService, boot_system, load_catalogue
from mqoe.device.cpu import Fair, ThreadState
from mqoe.device.phone import Phone
from mqoe.engine import seconds
from tests.conftest import make_profile

CORE_CYCLES_PER_NS = 1.0  # the test phone's cores: 1000 MHz × ipc 1.0
TABLES = ("go", "full")


def big_phone(low_ram: bool = False, seed: int = 1) -> Phone:
    """4 GB and nothing else running: boot allocates without any reclaim."""
    memory = {"ram_mb": 4096, "reserved_mb": 0}
    return Phone(make_profile([(4, 1000.0, 1.0)], memory=memory, low_ram=low_ram), seed)


def booted(table: str | None = None, low_ram: bool = False, seed: int = 1, run_s: float = 0.0
           ) -> tuple[Phone, list[SystemService]]:  # fmt: skip
    p = big_phone(low_ram, seed)
    services = boot_system(p, table)
    p.run(seconds(run_s) or 1)
    return p, services


def cpu_ns(services: list[SystemService]) -> dict[str, int]:
    return {t.name: t.state_ns[ThreadState.RUNNING] for s in services for t in s.threads}


def test_under_the_lists_model_zygote_preloads_an_image_the_java_processes_share() -> None:
    memory = {"ram_mb": 4096, "reserved_mb": 0, "lru": "lists", "kernel_version": "3.18"}
    p = Phone(make_profile([(4, 1000.0, 1.0)], memory=memory, low_ram=True), 1)
    services = boot_system(p)
    p.run(seconds(2))
    (zygote,) = [s for s in services if s.spec.preload]
    image = p.memory.preload
    assert image is zygote.process
    spec = zygote.spec
    assert image.code_ws_pages == round(spec.code_mb * 256)
    assert image.file_ws_pages == round((spec.code_mb + spec.file_mb) * 256)
    java = [s.process for s in services if s.spec.adj > -1000]
    native = [s.process for s in services if s.spec.adj == -1000 and not s.spec.preload]
    assert java and native
    assert all(p.memory.maps_preload(proc) for proc in java)
    assert not any(p.memory.maps_preload(proc) for proc in [*native, image])
    assert p.memory.preload_mappings() == 1 + len(java)
    p.memory.check()


# -- the packaged catalogue --------------------------------------------------------------
@pytest.mark.parametrize("table", TABLES)
def test_the_packaged_catalogue_has_each_table_with_distinct_names(table: str) -> None:
    specs = load_catalogue(table)
    names = [s.name for s in specs]
    assert names and len(set(names)) == len(names)


def test_the_go_table_is_smaller_than_the_full_one() -> None:
    go, full = (load_catalogue(t) for t in TABLES)
    assert sum(s.anon_mb + s.file_mb for s in go) < sum(s.anon_mb + s.file_mb for s in full)
    assert {s.name for s in go} != {s.name for s in full}


@pytest.mark.parametrize(("low_ram", "table"), [(True, "go"), (False, "full")])
def test_boot_picks_the_table_by_the_profiles_low_ram_flag(low_ram: bool, table: str) -> None:
    _, services = booted(low_ram=low_ram)
    # The recency LRU model keeps no shared mappings: zygote's preloaded image is not booted.
    expected = [s for s in load_catalogue(table) if not s.preload]
    assert [s.spec for s in services] == expected
    assert [s.process.name for s in services] == [s.name for s in expected]


def test_an_explicit_table_overrides_the_profile() -> None:
    _, services = booted("full", low_ram=True)
    assert [s.spec for s in services] == [s for s in load_catalogue("full") if not s.preload]


# -- boot: processes, threads, memory ----------------------------------------------------
@pytest.mark.parametrize("table", TABLES)
def test_after_boot_each_service_holds_its_catalogue_memory(table: str) -> None:
    p, services = booted(table, run_s=1.0)
    for service in services:
        spec, process = service.spec, service.process
        assert service.ready.triggered
        assert process.oom_score_adj == spec.adj
        assert process.anon_pages + process.anon_swapped == round(spec.anon_mb * MB_PAGES)
        assert process.file_ws_pages == round(spec.file_mb * MB_PAGES)
    assert p.memory.pgscan == 0  # nothing was reclaimed: every page is still resident
    assert all(s.process.file_resident == s.process.file_ws_pages for s in services)
    assert all(s.process.anon_swapped == 0 for s in services)
    p.memory.check()


def test_each_service_has_its_threads_at_its_nice() -> None:
    _, services = booted("go")
    for service in services:
        spec = service.spec
        assert len(service.threads) == spec.threads
        assert service.process.threads == service.threads
        assert service.threads[0].name == spec.name
        assert len({t.name for t in service.threads}) == spec.threads
        assert all(t.policy == Fair(spec.nice) for t in service.threads)


# -- CPU over time -----------------------------------------------------------------------
@pytest.mark.parametrize("table", TABLES)
def test_service_cpu_matches_the_catalogue_rate(table: str) -> None:
    duration_s = 20.0
    _, services = booted(table, run_s=duration_s)
    specs = [s.spec for s in services]
    # Each thread sleeps an exponential gap (mean wake_gap_s), then runs an exponential
    # burst: the nominal rate is mcycles_per_s, slowed a little because the gap starts
    # only after the burst has run.
    expected_ns = 0.0
    for spec in specs:
        burst_s = spec.burst_mcycles * 1e6 / CORE_CYCLES_PER_NS / 1e9
        duty = spec.wake_gap_s / (spec.wake_gap_s + burst_s)
        expected_ns += spec.mcycles_per_s * 1e6 * duration_s / CORE_CYCLES_PER_NS * duty
    # Total CPU is a compound Poisson sum of exponential bursts: variance = Σ rate × T ×
    # E[burst²] = Σ 2 × mcycles_per_s × burst × T (in Mcycles²). Allow 5 sigma.
    variance = sum(2 * s.mcycles_per_s * s.burst_mcycles * duration_s for s in specs)
    sigma_ns = math.sqrt(variance) * 1e6 / CORE_CYCLES_PER_NS
    total_ns = sum(cpu_ns(services).values())
    assert abs(total_ns - expected_ns) <= 5 * sigma_ns
    assert 5 * sigma_ns < 0.3 * expected_ns  # the check is tighter than ±30%


def test_every_service_thread_runs() -> None:
    _, services = booted("go", run_s=20.0)
    assert all(ns > 0 for ns in cpu_ns(services).values())


def test_a_killed_service_stops_running_and_gives_its_memory_back() -> None:
    p, services = booted("go", run_s=1.0)
    victim = next(s for s in services if s.spec.name == "com.android.launcher3")
    free_before = p.memory.free_pages
    p.lmkd.kill(victim.process, "test")
    p.run(seconds(1))
    spent = cpu_ns([victim])
    p.run(seconds(5))
    assert cpu_ns([victim]) == spent
    assert all(t.state == ThreadState.DEAD for t in victim.threads)
    anon = round(victim.spec.anon_mb * MB_PAGES)
    assert p.memory.free_pages == free_before + anon  # its file pages stay as page cache
    p.memory.check()


def test_the_same_seed_gives_the_same_cpu_and_another_seed_does_not() -> None:
    runs = [cpu_ns(booted("go", seed=seed, run_s=5.0)[1]) for seed in (7, 7, 8)]
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


# -- the catalogue parser ----------------------------------------------------------------
GOOD = """
name = "{name}"
adj = -900
anon_mb = 10.0
file_mb = 5.0
threads = 2
mcycles_per_s = 20.0
burst_mcycles = 1.0
touch_per_s = 0.1
"""


def catalogue(*entries: str, table: str = "go") -> str:
    return "".join(f"[[{table}]]{entry}\n" for entry in entries)


def test_a_valid_text_catalogue_parses() -> None:
    specs = load_catalogue("go", catalogue(GOOD.format(name="a"), GOOD.format(name="b")))
    assert [s.name for s in specs] == ["a", "b"]
    assert specs[0] == ServiceSpec("a", -900, 10.0, 5.0, 2, 20.0, 1.0, 0.1)


@pytest.mark.parametrize(
    ("bad_entry", "message"),
    [
        (GOOD.format(name="b") + "colour = 3\n", r"\[\[go\]\] #2: unknown keys \['colour'\]"),
        (GOOD.format(name="b").replace("anon_mb = 10.0", "anon_mb = -1.0"), r"\[\[go\]\] #2"),
        (GOOD.format(name="b").replace("threads = 2", "threads = 0"), r"\[\[go\]\] #2"),
        (GOOD.format(name="b").replace("touch_per_s = 0.1", "touch_per_s = 1.5"), r"#2"),
        (GOOD.format(name="b").replace("mcycles_per_s = 20.0", "mcycles_per_s = 0.0"), "#2"),
        (GOOD.format(name="b").replace('name = "b"', ""), r"\[\[go\]\] #2"),  # missing key
    ],
)
def test_a_bad_entry_is_a_value_error_naming_table_and_entry(bad_entry: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_catalogue("go", catalogue(GOOD.format(name="a"), bad_entry))


def test_a_missing_table_is_a_value_error_naming_it() -> None:
    with pytest.raises(ValueError, match=r"expected an array of tables \[\[full\]\]"):
        load_catalogue("full", catalogue(GOOD.format(name="a"), table="go"))


# -- properties --------------------------------------------------------------------------
positive = st.floats(min_value=1e-3, max_value=1e4, allow_nan=False)
specs = st.builds(
    ServiceSpec,
    name=st.text("abcdefghijklmnopqrstuvwxyz.:_-", min_size=1, max_size=20),
    adj=st.integers(-1000, 999),
    anon_mb=st.floats(0, 1e4),
    file_mb=st.floats(0, 1e4),
    threads=st.integers(1, 16),
    mcycles_per_s=positive,
    burst_mcycles=positive,
    touch_per_s=st.floats(0, 1),
    nice=st.integers(-20, 19),
)


@given(specs)
def test_wake_gap_gives_back_the_catalogue_cpu_rate(spec: ServiceSpec) -> None:
    # threads each waking once per gap with a mean burst: total = mcycles_per_s.
    assert spec.wake_gap_s > 0
    assert spec.threads * spec.burst_mcycles / spec.wake_gap_s == pytest.approx(spec.mcycles_per_s)


@given(specs)
def test_a_spec_written_as_toml_loads_back_unchanged(spec: ServiceSpec) -> None:
    body = "".join(
        f"{key} = {value!r}\n" if not isinstance(value, str) else f'{key} = "{value}"\n'
        for key, value in (
            ("name", spec.name), ("adj", spec.adj), ("anon_mb", spec.anon_mb),
            ("file_mb", spec.file_mb), ("threads", spec.threads),
            ("mcycles_per_s", spec.mcycles_per_s), ("burst_mcycles", spec.burst_mcycles),
            ("touch_per_s", spec.touch_per_s), ("nice", spec.nice),
        )
    )  # fmt: skip
    assert load_catalogue("full", f"[[full]]\n{body}") == (spec,)


@pytest.mark.parametrize(
    ("bad_entry", "message"),
    [
        (GOOD.format(name="b").replace("threads = 2", "threads = 2.5"), r"#2: threads must be int"),
        (
            GOOD.format(name="b").replace("threads = 2", "threads = true"),
            r"#2: threads must be int",
        ),
        (GOOD.format(name="b") + "nice = -40\n", r"#2: nice must be in -20\.\.19"),
        (GOOD.format(name="a"), r"#2: duplicate name 'a'"),
    ],
)
def test_wrong_types_ranges_and_duplicates_are_named(bad_entry: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_catalogue("go", catalogue(GOOD.format(name="a"), bad_entry))


def test_a_table_that_is_not_an_array_of_tables_is_a_clear_error() -> None:
    for text in ('[go]\nname = "a"\n', "go = 3\n"):
        with pytest.raises(ValueError, match=r"catalogue text: expected an array of tables"):
            load_catalogue("go", text)
