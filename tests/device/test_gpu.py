"""GPU buffers and their compression in the background (GPU-buffer study): the compress daemon
never loses or duplicates a page, it runs only on an idle core and nearest-eviction
first, background GPU work is deferred, a resume decompresses everything, and kills at
any moment give every page back."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqoe.device.cpu import Fair as Nice
from mqoe.device.gpu import POOL, Gpu, GpuState
from mqoe.device.gpu_content import (
    CONTENT_CLASSES,
    PAGE_BYTES,
    compress_page,
    decompress_page,
    load_table,
    make_pages,
)
from mqoe.device.phone import Phone
from mqoe.device.process import FOREGROUND_APP_ADJ, Process
from mqoe.engine import Event, ms, seconds
from mqoe.policies.gpu_compression import Fair, Full, Van
from tests.conftest import make_profile

MIX = (0.4, 0.2, 0.2, 0.1, 0.1)  # zero, flat, text, photo, noise


def make_phone(policy: Any, cores: int = 2, seed: int = 1) -> tuple[Phone, Gpu]:
    """512 MB, no carve-outs, ``cores`` equal cores at 1 GHz (1 reference cycle per ns)."""
    memory = {"ram_mb": 512, "reserved_mb": 0}
    phone = Phone(make_profile([(cores, 1000.0, 1.0)], memory=memory), seed)
    gpu = Gpu(phone.env, phone.cpu, phone.memory, phone.profile.gpu, policy, load_table())
    return phone, gpu


def finish(phone: Phone, generator: Generator[Event, Any, Any], limit_s: float = 60) -> Any:
    """Run the engine until ``generator`` has returned."""
    process = phone.env.process(generator)
    end = phone.env.now + seconds(limit_s)
    while not process.processed:
        assert phone.env.now < end, "did not finish in time"
        phone.env.run(phone.env.now + ms(1))
    return process.value


def spawn(phone: Phone, gpu: Gpu, name: str, pages: int, mix: tuple[float, ...] = MIX) -> Process:
    """An app process with ``pages`` GPU buffer pages, allocated and registered."""
    process = phone.processes.spawn(name, FOREGROUND_APP_ADJ, phone.env.now)
    thread = phone.cpu.thread(name, process=name)
    process.threads.append(thread)
    gpu.register(process, mix)
    finish(phone, gpu.resize(process, thread, pages))
    assert process.gpu_pages == pages
    return process


def settle(phone: Phone, gpu: Gpu, seconds_: float = 5.0) -> None:
    """Let the daemon work, checking the books at every quiescent 10 ms step."""
    end = phone.env.now + seconds(seconds_)
    while phone.env.now < end:
        phone.env.run(phone.env.now + ms(10))
        check_books(phone, gpu)


def check_books(phone: Phone, gpu: Gpu) -> None:
    """Every buffer page is resident or compressed (never both, never neither), the pool
    holds exactly one object per compressed page, and memory is conserved."""
    gpu.check()
    phone.memory.check()
    for app in gpu.apps.values():
        assert app.resident + app.compressed == app.pages
        assert app.process.gpu_pages == app.resident
        assert len(app.handles) == app.compressed == len(set(app.handles.tolist()))
    assert gpu.pool.objects == sum(a.compressed for a in gpu.apps.values())
    assert phone.memory.kernel_pools.get(POOL, 0) >= gpu.pool.pages


# -- compression conserves pages ------------------------------------------------------
def test_daemon_compresses_a_background_app_and_resume_restores_every_page() -> None:
    phone, gpu = make_phone(Full())
    n = 1001  # not a multiple of the batch
    process = spawn(phone, gpu, "app", n)
    app = gpu.apps[process.pid]
    gpu.set_cached([process], None)
    states = [app.state]
    settle(phone, gpu)
    states.append(app.state)
    assert states == [GpuState.S1, GpuState.S3]
    assert app.compressed == n and app.resident == 0 and process.gpu_pages == 0
    assert gpu.pool.objects == n
    assert gpu.compressed_pages == gpu.compressed_pages_total == n

    finish(phone, gpu.foreground(process))
    check_books(phone, gpu)
    assert app.compressed == 0 and process.gpu_pages == n
    assert gpu.apps[process.pid].state == GpuState.S0
    assert gpu.pool.objects == 0 and gpu.pool.pages == 0
    assert phone.memory.kernel_pools.get(POOL, 0) == 0
    assert [(d.pid, d.pages) for d in gpu.decompressions] == [(process.pid, n)]


def test_memory_saved_is_compressed_pages_minus_the_pool_holding_them() -> None:
    phone, gpu = make_phone(Full())
    process = spawn(phone, gpu, "app", 2048)
    free_before = phone.memory.free_pages
    gpu.set_cached([process], None)
    settle(phone, gpu)
    assert gpu.compressed_pages == 2048
    assert 0 < gpu.pool.pages < 2048  # the mix compresses well
    assert gpu.saved_pages == 2048 - gpu.pool.pages
    assert phone.memory.free_pages - free_before == gpu.saved_pages


def test_zero_pages_cost_the_pool_far_less_than_noise() -> None:
    pools = {}
    for content, mix in (("zero", (1, 0, 0, 0, 0)), ("noise", (0, 0, 0, 0, 1))):
        phone, gpu = make_phone(Full())
        process = spawn(phone, gpu, content, 1024, mix)
        gpu.set_cached([process], None)
        settle(phone, gpu, 10)
        assert gpu.compressed_pages == 1024
        pools[content] = gpu.pool.pages
    assert pools["noise"] == 1024  # stored raw, a page each
    assert pools["zero"] < 1024 / 20


def test_compress_daemon_runs_at_nice_19_and_only_on_an_idle_core() -> None:
    phone, gpu = make_phone(Full(), cores=2)
    assert gpu.daemon is not None and gpu.daemon.policy == Nice(19)
    process = spawn(phone, gpu, "app", 1024)
    hogs = [phone.cpu.thread(f"hog{i}", process="hog") for i in range(2)]
    for hog in hogs:
        phone.cpu.run(hog, 1e9)  # 1 s of work each: both cores busy
    gpu.set_cached([process], None)
    settle(phone, gpu, 0.9)
    assert gpu.compressed_pages == 0  # a nice-0 hog on every core: no idle core
    settle(phone, gpu, 2.0)
    assert gpu.compressed_pages == 1024


def test_pending_list_head_is_the_app_nearest_eviction() -> None:
    phone, gpu = make_phone(Full(), cores=1)
    a, b, c = (spawn(phone, gpu, name, 2048) for name in "abc")
    gpu.set_cached([a, b, c], None)  # MRU first: c is nearest eviction
    assert [x.process for x in gpu.pending] == [c, b, a]
    done: dict[str, int] = {}
    for _ in range(1000):
        phone.env.run(phone.env.now + ms(5))
        for process in (a, b, c):
            if gpu.apps[process.pid].state == GpuState.S3 and process.name not in done:
                done[process.name] = phone.env.now
        if len(done) == 3:
            break
    assert done["c"] < done["b"] < done["a"]


def test_van_runs_no_daemon_compresses_nothing_and_defers_nothing() -> None:
    phone, gpu = make_phone(Van())
    process = spawn(phone, gpu, "app", 1024)
    gpu.set_cached([process], None)
    settle(phone, gpu)
    assert gpu.daemon is None and gpu.worker is None
    assert not [t for t in phone.cpu.thread_table() if t["thread"].startswith("kgsl")]
    assert gpu.compressed_pages == 0 and process.gpu_pages == 1024
    assert gpu.submit(process) is True
    assert gpu.deferred_ops == 0 and gpu.dispatched_ops == 1


def test_resize_of_compressed_buffers_is_refused() -> None:
    phone, gpu = make_phone(Full())
    process = spawn(phone, gpu, "app", 512)
    gpu.set_cached([process], None)
    settle(phone, gpu)
    with pytest.raises(RuntimeError, match="compressed"):
        finish(phone, gpu.resize(process, process.threads[0], 100))


@pytest.mark.parametrize("mix", [(0.5, 0.5), (0.5, 0.5, 0.5, 0, 0), (0.2, 0.2, 0.2, 0.2, 0.1)])
def test_register_rejects_a_mix_that_is_not_a_distribution(mix: tuple[float, ...]) -> None:
    phone, gpu = make_phone(Full())
    process = phone.processes.spawn("app", 0, 0)
    with pytest.raises(ValueError, match="fractions"):
        gpu.register(process, mix)


# -- deferral of background GPU work --------------------------------------------------
@pytest.mark.parametrize("policy", [Full(), Fair(cap_step_mb=1.0, cap_max_mb=1.0)])
def test_background_gpu_work_is_deferred_in_s1_to_s3(policy: Any) -> None:
    phone, gpu = make_phone(policy)
    fg = spawn(phone, gpu, "fg", 256)
    bg = spawn(phone, gpu, "bg", 1024)
    gpu.set_cached([bg], fg)
    app = gpu.apps[bg.pid]
    states = [app.state]
    assert gpu.submit(bg) is False
    settle(phone, gpu)
    states.append(app.state)
    assert gpu.submit(bg) is False
    assert states == [GpuState.S1, GpuState.S3 if isinstance(policy, Full) else GpuState.S2]
    assert app.deferred_ops == gpu.deferred_ops == 2
    assert gpu.submit(fg) is True  # the foreground app's work goes to the GPU
    assert gpu.dispatched_ops == 1
    finish(phone, gpu.foreground(bg))
    assert gpu.submit(bg) is True
    assert gpu.deferred_ops == 2 and gpu.dispatched_ops == 2


def test_an_op_issued_during_resume_waits_for_the_decompression() -> None:
    phone, gpu = make_phone(Full())
    process = spawn(phone, gpu, "app", 4096)
    gpu.set_cached([process], None)
    settle(phone, gpu)
    resume = phone.env.process(gpu.foreground(process))
    phone.env.run(phone.env.now + ms(1))
    app = gpu.apps[process.pid]
    assert not resume.processed and app.state == GpuState.S4 and app.compressed > 0
    assert gpu.submit(process) is False  # the GPU cannot touch pages not yet restored


# -- kills at any moment ----------------------------------------------------------------
def test_killing_a_compressed_app_returns_its_pool_objects_at_once() -> None:
    phone, gpu = make_phone(Full())
    keep = spawn(phone, gpu, "keep", 700)
    victim = spawn(phone, gpu, "victim", 900)
    gpu.set_cached([victim, keep], None)
    settle(phone, gpu)
    assert gpu.compressed_pages == 1600
    phone.lmkd.kill(victim, "test")
    check_books(phone, gpu)
    assert victim.pid not in gpu.apps
    assert gpu.pool.objects == 700
    settle(phone, gpu, 0.2)  # past the teardown delay
    assert victim.gpu_pages == 0


@pytest.mark.parametrize("phase", ["compressing", "decompressing"])
def test_a_kill_mid_batch_leaks_no_page(phase: str) -> None:
    phone, gpu = make_phone(Full())
    total = phone.memory.free_pages
    process = spawn(phone, gpu, "app", 4096)
    gpu.set_cached([process], None)
    if phase == "decompressing":
        settle(phone, gpu)
        phone.env.process(gpu.foreground(process))
    for _ in range(1000):  # stop in the middle of the work
        phone.env.run(phone.env.now + ms(1))
        if 0 < gpu.apps[process.pid].compressed < 4096:
            break
    assert 0 < gpu.apps[process.pid].compressed < 4096
    phone.lmkd.kill(process, "test")
    settle(phone, gpu, 1.0)
    assert gpu.pool.objects == gpu.pool.pages == 0
    assert phone.memory.kernel_pools.get(POOL, 0) == 0
    assert process.gpu_pages == 0
    assert phone.memory.free_pages == total


def test_a_stale_batch_is_not_stored_over_resized_buffers() -> None:
    phone, gpu = make_phone(Full())
    process = spawn(phone, gpu, "app", 512)
    gpu.set_cached([process], None)
    phone.env.run(phone.env.now + ms(1))  # the daemon is compressing the first batch
    assert gpu.daemon is not None and gpu.daemon.busy and gpu.compressed_pages == 0
    gpu.set_cached([], process)  # the user comes back …
    finish(phone, gpu.foreground(process))  # … nothing compressed yet: S0 at once
    finish(phone, gpu.resize(process, process.threads[0], 100))  # a smaller window
    gpu.set_cached([process], None)  # … and leaves again
    settle(phone, gpu)  # check_books: resident + compressed == pages throughout


# -- property: any sequence of user actions keeps the books ---------------------------
APPS = 3
# (what the user does, to which app / how many pages, then ms of simulated time)
_ACTION = st.tuples(
    st.sampled_from(["launch", "launch", "launch", "home", "resize", "kill"]),
    st.integers(0, 1500),
    st.sampled_from([0, 1, 20, 60, 300]),
)


class _User:
    """A minimal ActivityManager over the Gpu API: a foreground app and an MRU list. As
    ActivityManager does, a paused app trims its buffers to its background size (here
    half its launch size) before it joins the list; in the foreground it may resize
    freely. (A batch made stale by a resume and a resize has its own test:
    test_a_stale_batch_is_not_stored_over_resized_buffers.)"""

    def __init__(self, phone: Phone, gpu: Gpu, sizes: list[int]) -> None:
        self.phone, self.gpu, self.sizes = phone, gpu, sizes
        self.procs: list[Process | None] = [None] * APPS
        self.fg: int | None = None
        self.cached: list[int] = []

    def alive(self, i: int) -> bool:
        process = self.procs[i]
        return process is not None and process.alive

    def proc(self, i: int) -> Process:
        process = self.procs[i]
        assert process is not None
        return process

    def hook(self) -> None:
        fg = self.proc(self.fg) if self.fg is not None else None
        self.gpu.set_cached([self.proc(i) for i in self.cached], fg)

    def home(self) -> None:
        if self.fg is not None:
            process = self.proc(self.fg)
            bg_pages = self.sizes[self.fg] // 2
            finish(self.phone, self.gpu.resize(process, process.threads[0], bg_pages))
            self.cached.insert(0, self.fg)
            self.fg = None
            self.hook()

    def launch(self, i: int) -> None:
        if self.fg != i:
            self.home()
        if i in self.cached:
            self.cached.remove(i)
        if not self.alive(i):
            self.procs[i] = spawn(self.phone, self.gpu, f"app{i}", self.sizes[i])
        self.fg = i
        self.hook()
        finish(self.phone, self.gpu.foreground(self.proc(i)))
        assert self.gpu.apps[self.proc(i).pid].compressed == 0

    def kill(self, i: int) -> None:
        if self.alive(i):
            self.phone.lmkd.kill(self.proc(i), "test")
            self.cached = [j for j in self.cached if j != i]
            self.fg = None if self.fg == i else self.fg
            self.hook()

    def act(self, action: str, arg: int, run_ms: int) -> None:
        if action == "launch":
            self.launch(arg % APPS)
        elif action == "home":
            self.home()
        elif action == "resize" and self.fg is not None:
            process = self.proc(self.fg)
            finish(self.phone, self.gpu.resize(process, process.threads[0], arg))
        elif action == "kill":
            self.kill(arg % APPS)
        self.phone.env.run(self.phone.env.now + ms(run_ms))


@settings(max_examples=25, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 1500), min_size=APPS, max_size=APPS),
    actions=st.lists(_ACTION, max_size=15),
)
def test_any_action_sequence_conserves_buffer_pages(
    sizes: list[int], actions: list[tuple[str, int, int]]
) -> None:
    phone, gpu = make_phone(Full())
    user = _User(phone, gpu, sizes)
    for action, arg, run_ms in actions:
        user.act(action, arg, run_ms)
        check_books(phone, gpu)
        if user.fg is not None:
            assert gpu.apps[user.proc(user.fg).pid].compressed == 0
    settle(phone, gpu, 3.0)
    for i in user.cached:  # FULL: every cached app ends fully compressed
        app = gpu.apps[user.proc(i).pid]
        assert app.compressed == app.pages
        assert app.state == (GpuState.S3 if app.pages else GpuState.S1)
    for i in range(APPS):  # and a resume brings every page back (launch checks it)
        if user.alive(i):
            user.launch(i)
            check_books(phone, gpu)


# -- the real bytes ---------------------------------------------------------------------
@pytest.mark.parametrize("content", CONTENT_CLASSES)
def test_a_buffer_survives_compression_byte_for_byte(content: str) -> None:
    data = make_pages(content, 16, np.random.default_rng(7))
    stored = [compress_page(data[i : i + PAGE_BYTES]) for i in range(0, len(data), PAGE_BYTES)]
    assert all(len(s) <= PAGE_BYTES for s in stored)
    assert b"".join(decompress_page(s) for s in stored) == data
