"""UI apps: the catalogue, view hierarchies and overdraw, the RUIR trim, and the frame
pipeline (V-Sync pacing, back-pressure, waits and scheduling delay in the records)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqoe.analysis.layout import ViewNode
from mqoe.apps.cpu_load import BurstThread
from mqoe.apps.ui import (
    FRAME_COLUMNS,
    SATURATED_FRAME_FRACTION,
    BinderService,
    RenderCosts,
    UiApp,
    UiAppSpec,
    ViewHierarchy,
    draw_cycles,
    load_ui_apps,
    thread_policies,
    ui_app,
)
from mqoe.device.cpu import Fair, RealTime
from mqoe.device.display import Display, DisplayConfig
from mqoe.device.phone import Phone
from mqoe.device.profiles import DeviceProfile, load_profile
from mqoe.device.profiles.schema import DisplaySpec
from mqoe.engine import seconds
from mqoe.errors import UserError
from tests.conftest import make_profile

BENCHMARK = {
    "chrome", "clash-of-clans", "facebook", "gmail", "instagram",
    "messenger", "spotify", "subway-surf", "whatsapp", "youtube",
}  # fmt: skip
PERIOD_NS = 16_666_667


# -- the catalogue ------------------------------------------------------------------------


def test_catalogue_has_spec04_benchmark_apps_and_five_open_source_ones() -> None:
    apps = load_ui_apps()
    groups = {key: app.group for key, app in apps.items()}
    assert {k for k, g in groups.items() if g == "benchmark"} == BENCHMARK
    assert sum(g == "open-source" for g in groups.values()) == 5
    assert all(app.provenance.startswith("assumed from the app's UI") for app in apps.values())


def test_open_source_list_rows_are_redrawn_more_than_four_times() -> None:
    """Responsiveness study: the mail app's rows, nested 3-4 layers deep, are painted > 4 times."""
    apps = load_ui_apps()
    for key, app in apps.items():
        h = ViewHierarchy.from_specs(app.views, (1080, 2160))
        if app.group == "open-source":
            assert h.mean_overdraw > 4 and h.redundant_layers > 0, key
            row = h.copies(app.list_item)[0]
            assert h.depth[row + 3] - h.depth[row] == 3, key  # layers nested in a row
        assert h.node_count == len(h.nodes) > 0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"views": [{"id": "a"}, {"id": "a"}]}, "duplicate view id"),
        ({"views": [{"id": "a", "parent": "b"}, {"id": "b"}]}, "must come before"),
        ({"list_item": "nope"}, "list_item"),
        ({"views": [{"id": "a", "rect": [0.5, 0.0, 0.4, 1.0]}]}, "rect"),
        ({"script": [{"action": "fling", "items": 3}]}, "duration_ms"),
        ({"script": [{"action": "dance", "duration_ms": 5.0}]}, "action"),
        ({"package": "nodots"}, "package"),
    ],
)
def test_catalogue_errors_are_one_line_user_errors(change: dict[str, Any], message: str) -> None:
    app: dict[str, Any] = {
        "package": "com.example.app",
        "label": "Example",
        "category": "test",
        "group": "benchmark",
        "provenance": "assumed from the app's UI: a test",
        "views": [{"id": "root", "draws": True, "opaque": True}],
        "script": [{"action": "idle", "duration_ms": 10.0}],
        **change,
    }
    text = _toml({"apps": {"example": app}})
    with pytest.raises(UserError, match=message) as info:
        load_ui_apps(text)
    assert "\n" not in str(info.value)


def test_unknown_app_names_the_known_ones() -> None:
    with pytest.raises(UserError, match="gmail"):
        ui_app("snapchat")


def _toml(data: dict[str, Any]) -> str:
    """A tiny TOML writer for test catalogues (tables, arrays of inline tables)."""

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return '"' + v + '"'
        if isinstance(v, dict):
            return "{ " + ", ".join(k + " = " + value(x) for k, x in v.items()) + " }"
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return repr(v)

    lines = []
    for key, app in data["apps"].items():
        lines.append("[apps." + key + "]")
        lines += [k + " = " + value(v) for k, v in app.items()]
    return "\n".join(lines) + "\n"


# -- hierarchies and overdraw ---------------------------------------------------------------


def _spec(views: list[dict[str, Any]], **extra: Any) -> UiAppSpec:
    data: dict[str, Any] = {
        "key": "test-app",
        "package": "com.example.test",
        "label": "Test",
        "category": "test",
        "group": "open-source",
        "provenance": "assumed from the app's UI: a test hierarchy",
        "views": views,
        "script": [{"action": "idle", "duration_ms": 10.0}],
        **extra,
    }
    return UiAppSpec.model_validate(data)


def test_templates_expand_to_pixels_with_repeats_stacked() -> None:
    spec = _spec(
        [
            {"id": "root", "draws": True, "opaque": True},
            {"id": "list", "parent": "root", "rect": [0.0, 0.5, 1.0, 1.0]},
            {"id": "row", "parent": "list", "repeat": 2, "draws": True, "opaque": True},
            {"id": "icon", "parent": "row", "rect": [0.0, 0.0, 0.5, 1.0], "draws": True},
        ]
    )
    h = ViewHierarchy.from_specs(spec.views, (100, 200))
    assert [(n.cls, n.bounds, n.parent) for n in h.nodes] == [
        ("root", (0, 0, 100, 200), -1),
        ("list", (0, 100, 100, 200), 0),
        ("row", (0, 100, 100, 150), 1),
        ("icon", (0, 100, 50, 150), 2),
        ("row", (0, 150, 100, 200), 1),
        ("icon", (0, 150, 50, 200), 4),
    ]
    assert h.depth.tolist() == [1, 2, 3, 4, 3, 4]
    assert h.area_fraction.tolist() == [1.0, 0.5, 0.25, 0.125, 0.25, 0.125]
    # root 20,000 px + two rows 5,000 each + two icons 2,500 each
    assert h.pixels_painted == 35_000 and h.drawing_layers == 5
    assert h.subtree_size(2) == 2 and h.copies("row") == [2, 4]
    # The root is hidden only where the rows are: not a redundant layer.
    assert h.redundant_layers == 0


def test_draw_cost_is_linear_in_painted_pixels_and_layers() -> None:
    h = ViewHierarchy([ViewNode("a", (0, 0, 1000, 1000), draws=True)], (1000, 1000))
    costs = RenderCosts(draw_cycles_per_mpixel=2e6, draw_cycles_per_layer=1e3)
    assert draw_cycles(h, costs) == 2e6 + 1e3
    deeper = h.with_layer((0, 0, 500, 1000), opaque=True)
    assert draw_cycles(deeper, costs) == 3e6 + 2e3


_SCREEN = (24, 32)


@st.composite
def hierarchies(draw: st.DrawFn, max_nodes: int = 10) -> ViewHierarchy:
    n = draw(st.integers(1, max_nodes))
    nodes = []
    width, height = _SCREEN
    for i in range(n):
        parent = draw(st.integers(-1, i - 1))
        left = draw(st.integers(0, width - 1))
        top = draw(st.integers(0, height - 1))
        right = draw(st.integers(left + 1, width))
        bottom = draw(st.integers(top + 1, height))
        draws_, opaque = draw(st.booleans()), draw(st.booleans())
        nodes.append(
            ViewNode("v", (left, top, right, bottom), parent, draws_, opaque, resource_id=str(i))
        )
    return ViewHierarchy(nodes, _SCREEN)


def _rect(draw: st.DrawFn) -> tuple[int, int, int, int]:
    left = draw(st.integers(0, _SCREEN[0] - 1))
    top = draw(st.integers(0, _SCREEN[1] - 1))
    return (
        left,
        top,
        draw(st.integers(left + 1, _SCREEN[0])),
        draw(st.integers(top + 1, _SCREEN[1])),
    )


@settings(max_examples=150, deadline=None)
@given(hierarchies(), st.data(), st.booleans())
def test_adding_a_layer_never_lowers_painted_pixels_or_draw_cost(
    h: ViewHierarchy, data: st.DataObject, opaque: bool
) -> None:
    bounds = data.draw(st.composite(_rect)())
    more = h.with_layer(bounds, opaque=opaque)
    area = (bounds[2] - bounds[0]) * (bounds[3] - bounds[1])
    assert more.pixels_painted == h.pixels_painted + area
    assert draw_cycles(more, RenderCosts()) > draw_cycles(h, RenderCosts())


def _top_layer(h: ViewHierarchy) -> np.ndarray[Any, np.dtype[np.object_]]:
    """Brute-force painter: the id of the last layer painted at each pixel (clipped to
    the ancestors' bounds), independent of the overdraw code."""
    width, height = h.screen
    top = np.full((height, width), "", dtype=object)
    clip: list[tuple[int, int, int, int]] = []
    for node in h.nodes:
        pl, pt, pr, pb = clip[node.parent] if node.parent >= 0 else (0, 0, width, height)
        left, t, r, b = node.bounds
        box = (max(left, pl), max(t, pt), min(r, pr), min(b, pb))
        clip.append(box)
        if node.draws and box[2] > box[0] and box[3] > box[1]:
            top[box[1] : box[3], box[0] : box[2]] = node.resource_id
    return top


@settings(max_examples=200, deadline=None)
@given(hierarchies())
def test_trimming_never_adds_overdraw_and_keeps_what_is_visible(h: ViewHierarchy) -> None:
    trimmed, n = h.trim_redundant_layers()
    assert trimmed.pixels_painted <= h.pixels_painted
    assert (trimmed.pixels_painted < h.pixels_painted) == (n > 0)
    assert np.array_equal(_top_layer(trimmed), _top_layer(h))
    again, m = trimmed.trim_redundant_layers()
    assert m == 0 and again.pixels_painted == trimmed.pixels_painted  # a fixed point


def test_trimming_the_mail_app_removes_its_nested_row_backgrounds() -> None:
    app = ui_app("k9-mail")
    h = ViewHierarchy.from_specs(app.views, (1080, 2160))
    trimmed, n = h.trim_redundant_layers()
    # decor, content and list are covered; per row (8), two of its three stacked
    # backgrounds are covered by the next one.
    assert n == 3 + 8 * 2
    assert trimmed.node_count == h.node_count  # every trimmed view still has children
    assert trimmed.mean_overdraw < 2 < 4 < h.mean_overdraw


# -- the frame pipeline -----------------------------------------------------------------------


def _phone(seed: int = 1, clusters: list[tuple[int, float, float]] | None = None) -> Phone:
    base = make_profile(clusters or [(2, 1000.0, 1.0), (2, 2000.0, 1.0)])
    profile: DeviceProfile = base.model_copy(
        update={"display": DisplaySpec(width_px=480, height_px=800)}
    )
    return Phone(profile, seed)


_LIST_VIEWS: list[dict[str, Any]] = [
    {"id": "decor", "draws": True, "opaque": True},
    {"id": "root", "parent": "decor", "draws": True, "opaque": True},
    {"id": "list", "parent": "root", "rect": [0.0, 0.1, 1.0, 1.0]},
    {"id": "row", "parent": "list", "repeat": 8, "draws": True, "opaque": True},
    {"id": "inner", "parent": "row", "draws": True, "opaque": True},
    {"id": "text", "parent": "inner", "rect": [0.1, 0.2, 0.9, 0.8], "draws": True},
]


def _run(
    script: list[dict[str, Any]],
    *,
    duration_s: float = 2.0,
    buffers: int = 3,
    seed: int = 1,
    phone: Phone | None = None,
    **spec: Any,
) -> tuple[UiApp, pd.DataFrame, Display]:
    phone = phone or _phone(seed)
    display = Display(phone.env, phone.cpu, phone.profile, DisplayConfig(buffers=buffers))
    app_spec = _spec(_LIST_VIEWS, script=script, list_item="row", **spec)
    end = seconds(duration_s)
    app = UiApp(phone, display, app_spec, binder=BinderService(phone), end_ns=end)
    phone.run(end)
    return app, app.frames(), display


FLING = [
    {"action": "fling", "duration_ms": 1000.0, "items": 40},
    {"action": "idle", "duration_ms": 300.0},
]
HEAVY = [
    {"action": "fling", "duration_ms": 800.0, "items": 30},
    {"action": "open", "inflate_nodes": 150, "anim_ms": 300.0},
    {"action": "idle", "duration_ms": 200.0},
]


def test_frames_are_paced_by_vsync() -> None:
    _, frames, display = _run(HEAVY, duration_s=3.0)
    vsync = frames["intended_vsync_ns"].to_numpy()
    assert len(frames) > 100
    assert (vsync % display.period_ns == 0).all()
    assert (np.diff(vsync) > 0).all()  # never two frames from the same V-Sync
    assert (frames["main_start_ns"] >= frames["intended_vsync_ns"]).all()
    assert (frames["queue_ns"] > frames["draw_start_ns"]).all()
    assert (frames["duration_ns"] == frames["queue_ns"] - frames["intended_vsync_ns"]).all()


def test_an_app_never_holds_more_buffers_than_its_queue_has() -> None:
    """Back-pressure: when a frame starts drawing, the buffers queued and not latched,
    plus the one on screen, plus the one it draws into, never exceed N."""
    for buffers in (1, 2, 3):
        app, frames, _ = _run(HEAVY, duration_s=3.0, buffers=buffers)
        queue_log = app.surface.queue_times_ns
        latch_log = app.surface.latch_times_ns
        start = frames["draw_start_ns"].to_numpy()
        queued = np.searchsorted(queue_log, start, "left")
        latched = np.searchsorted(latch_log, start, "right")
        on_screen = (latched > 0) & (buffers > 1)
        assert (queued - latched + on_screen + 1 <= buffers).all(), buffers
        if buffers < 3:
            assert (frames["dequeue_wait_ns"] > 0).any()


def test_a_single_buffer_never_hides_a_slow_frame_and_three_can() -> None:
    """Big images uploaded as textures make some draws long; with a spare buffer the
    app runs ahead afterwards (buffer stuffing) and later slow frames are hidden."""
    images = {"image_mpx": 1.5, "workers": 2}
    _, one, _ = _run(HEAVY, duration_s=3.0, buffers=1, **images)
    _, three, _ = _run(HEAVY, duration_s=3.0, buffers=3, **images)
    assert (one["duration_ns"] > 16_670_000).sum() > 50
    assert not one["ready_buffer"].any()
    slow = three["duration_ns"] > 16_670_000
    assert (three["ready_buffer"] & slow).any()  # buffer stuffing after the heavy frame
    assert not (three["ready_buffer"] & (three["duration_ns"] <= PERIOD_NS)).any()


def test_an_open_waits_for_binder_and_storage_on_the_main_thread() -> None:
    script = [
        {"action": "open", "io_pages": 16, "binder_calls": 2, "binder_mcycles": 1.0},
        {"action": "idle", "duration_ms": 1000.0},
    ]
    _, frames, _ = _run(script, duration_s=0.5)
    assert len(frames) == 1
    first = frames.iloc[0]
    # Two calls of 1e6 + 5e4 reference cycles each on a core of at most 2 cycles/ns.
    assert first["binder_ns"] >= 2 * 1.05e6 / 2.0
    assert first["io_ns"] > 0
    assert first["main_start_ns"] + first["io_ns"] + first["binder_ns"] <= first["main_end_ns"]


def test_runnable_time_shows_cpu_contention() -> None:
    one_core = [(1, 1000.0, 1.0)]
    quiet = _run(FLING, duration_s=1.0, phone=_phone(clusters=one_core))[1]
    busy_phone = _phone(clusters=one_core)
    # A real-time burst thread (mmcqd-like) takes the core; CFS sleeper credit would let
    # the UI threads preempt a fair hog at once.
    BurstThread(busy_phone, "rt_io", RealTime(10), 200.0, 2e6)
    busy = _run(FLING, duration_s=1.0, phone=busy_phone)[1]
    waits = {
        name: (f["main_runnable_ns"] + f["render_runnable_ns"]).mean()
        for name, f in (("quiet", quiet), ("busy", busy))
    }
    assert waits["busy"] > 2 * waits["quiet"] + 1_000_000
    # Running time is the work itself: cycles at 1 cycle per ns.
    ratio = quiet["render_running_ns"] / quiet["draw_cycles"]
    assert np.allclose(ratio, 1.0, rtol=1e-6, atol=0)


def test_more_overdraw_means_slower_draws() -> None:
    base, flat, _ = _run(FLING, duration_s=1.0)
    views = [*_LIST_VIEWS, {"id": "veil", "parent": "root", "draws": True}]
    phone = _phone()
    display = Display(phone.env, phone.cpu, phone.profile, DisplayConfig())
    spec = _spec(views, script=FLING, list_item="row")
    app = UiApp(phone, display, spec, binder=BinderService(phone), end_ns=seconds(1.0))
    phone.run(seconds(1.0))
    assert app.draw_cycles > base.draw_cycles
    assert app.frames()["render_running_ns"].mean() > flat["render_running_ns"].mean()


def test_trim_flag_trims_and_marks_ruir() -> None:
    phone = _phone()
    display = Display(phone.env, phone.cpu, phone.profile, DisplayConfig())
    spec = _spec(_LIST_VIEWS, script=FLING, list_item="row")
    binder = BinderService(phone)
    plain = UiApp(phone, display, spec, binder=binder, end_ns=1)
    trimmed = UiApp(phone, display, spec, binder=binder, end_ns=1, trim=True)
    assert plain.ruir and not trimmed.ruir
    # decor (under root) and each row (under its inner); root shows above the list.
    assert trimmed.trimmed_layers == 1 + 8
    assert trimmed.draw_cycles < plain.draw_cycles


def test_same_seed_same_frames_other_seed_other_frames() -> None:
    a = _run(HEAVY, seed=5)[1]
    b = _run(HEAVY, seed=5)[1]
    c = _run(HEAVY, seed=6)[1]
    pd.testing.assert_frame_equal(a, b)
    assert not a["draw_cycles"].equals(c["draw_cycles"])


def _frames_from_rows(app: UiApp) -> pd.DataFrame:
    """The frame table built from the rows and converted column by column (how
    :meth:`UiApp.frames` once built it: its column-wise build must give the same)."""
    table = pd.DataFrame(app._records, columns=list(FRAME_COLUMNS))
    for column in FRAME_COLUMNS[3:]:
        table[column] = table[column].astype(np.int64 if column.endswith("_ns") else float)
    table["frame"] = table["frame"].astype(np.int64)
    table["duration_ns"] = table["queue_ns"] - table["intended_vsync_ns"]
    start = table["intended_vsync_ns"].to_numpy(np.int64)
    end = table["queue_ns"].to_numpy(np.int64)
    share = app.display.little_saturated_share(start, end)
    table["little_busy_share"] = share
    table["little_saturated"] = share >= SATURATED_FRAME_FRACTION
    idle_big = app.display.little_saturated_share(start, end, big_idle=True)
    table["big_idle_little_saturated"] = idle_big >= SATURATED_FRAME_FRACTION
    due = start + app.display.period_ns
    table["ready_buffer"] = (end > due) & app.surface.in_reserve(start, due)
    table["ruir"] = app.ruir
    return table


@pytest.mark.parametrize("duration_s", [0.0, 2.0])
def test_the_frame_table_is_the_row_wise_one(duration_s: float) -> None:
    app, frames, _ = _run(HEAVY, duration_s=duration_s, seed=4)
    assert (len(frames) > 50) == (duration_s > 0)
    expected = _frames_from_rows(app)
    pd.testing.assert_frame_equal(frames, expected, check_exact=True)
    assert frames.dtypes.to_dict() == expected.dtypes.to_dict()


def test_top_app_threads_follow_the_android_release() -> None:
    assert thread_policies(7) == (Fair(0), Fair(-4))
    assert thread_policies(9) == (Fair(-10), Fair(-10))


def test_every_catalogue_app_renders_frames_on_a_real_profile() -> None:
    for key in sorted(load_ui_apps()):
        phone = Phone(load_profile("mi-a2"), 3)
        display = Display(phone.env, phone.cpu, phone.profile, DisplayConfig())
        app = UiApp(phone, display, ui_app(key), binder=BinderService(phone), end_ns=seconds(1))
        phone.run(seconds(1))
        frames = app.frames()
        assert len(frames) > 5, key
        assert (frames["queue_ns"] <= seconds(1)).all()
