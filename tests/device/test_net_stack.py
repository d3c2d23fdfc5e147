"""The phone's receive path: softirq CPU, socket memory, the app's reads (device/net/stack.py)."""

from __future__ import annotations

import math

import pytest

from mqoe.device.cpu import Fair, RealTime
from mqoe.device.net import BulkFlow, HttpClient, NetStackSpec, Network, TcpConfig
from mqoe.device.net.stack import POOL
from mqoe.device.phone import Phone
from mqoe.device.profiles import load_profile
from mqoe.engine import Environment, ms, seconds

MB = 1_000_000


def _phone(spec: NetStackSpec | None = None, rate_mbps: float = 20.0) -> Phone:
    phone = Phone(load_profile("nokia-1"), 1)
    phone.attach_network("phone", spec)
    phone.net.add_link("server", "phone", rate_mbps * 1e6, ms(20), 1 << 18)
    return phone


def _app(phone: Phone, name: str = "app", policy: Fair | RealTime | None = None):  # type: ignore[no-untyped-def]
    proc = phone.processes.spawn(name, 0, phone.env.now)
    thread = phone.cpu.thread("net", policy or Fair(0), process=name)
    phone.processes.add_threads(proc, [thread])
    return proc, thread


def _fetch(phone: Phone, http: HttpClient, nbytes: int) -> list[object]:
    got: list[object] = []

    def run():  # type: ignore[no-untyped-def]
        got.append((yield http.get(nbytes)))

    phone.env.process(run(), "fetch")
    return got


def _running_ns(phone: Phone, thread_name: str) -> int:
    return sum(t["running_ns"] for t in phone.cpu.thread_table() if t["thread"] == thread_name)


def test_a_download_costs_softirq_and_read_cpu_and_gives_its_memory_back() -> None:
    phone = _phone()
    proc, thread = _app(phone)
    http = HttpClient(phone.net, "server", "phone", TcpConfig(), owner=(proc, thread))
    got = _fetch(phone, http, 5 * MB)
    phone.run(seconds(10))
    stack = phone.stack
    assert stack is not None and got, "the response must complete"
    sock = stack.sockets[0]
    assert sock.bytes_read == 5 * MB  # the app read every byte
    assert stack.packets >= 5 * MB // 1460
    assert _running_ns(phone, "softirq/0") > 0 and _running_ns(phone, "net") > 0
    # Once read, nothing is charged; while it queued, something was.
    assert phone.memory.kernel_pools[POOL] == 0 and sock.charged_pages == 0
    assert sock.peak_pages > 0
    phone.memory.check()


def test_the_response_is_done_when_the_app_has_read_it_not_when_tcp_has_it() -> None:
    # A reader at nice 19 beside four nice −20 hogs reads late: TCP had everything long
    # before the response completed.
    slow = _phone()
    proc, thread = _app(slow, policy=Fair(19))
    for i in range(len(slow.cpu.cores)):
        hog = slow.cpu.thread(f"hog{i}", Fair(-20), process="hog")
        slow.cpu.run(hog, math.inf)
    http = HttpClient(slow.net, "server", "phone", TcpConfig(), owner=(proc, thread))
    got = _fetch(slow, http, 2 * MB)
    fast = _phone()
    proc2, thread2 = _app(fast)
    http2 = HttpClient(fast.net, "server", "phone", TcpConfig(), owner=(proc2, thread2))
    got2 = _fetch(fast, http2, 2 * MB)
    slow.run(seconds(20))
    fast.run(seconds(20))
    assert got and got2
    assert got[0].done_ns > got2[0].done_ns  # type: ignore[attr-defined]
    assert slow.stack is not None and slow.stack.sockets[0].peak_pages > (
        fast.stack.sockets[0].peak_pages  # type: ignore[union-attr]
    )


def test_a_starved_reader_closes_the_window_and_holds_the_sender_back() -> None:
    spec = NetStackSpec(copy_cycles_per_byte=200.0)  # reads that cost as much as a hog's turn
    phone = _phone(spec, rate_mbps=50.0)
    proc, thread = _app(phone, policy=Fair(19))
    for i in range(len(phone.cpu.cores)):
        phone.cpu.run(phone.cpu.thread(f"hog{i}", Fair(-20), process="hog"), math.inf)
    cfg = TcpConfig(rcvbuf_bytes=256 * 1024)
    flow = BulkFlow(phone.net, "server", "phone", cfg, owner=(proc, thread))
    flow.start()
    phone.run(seconds(10))
    sender = flow.connection.sender
    assert sender.rwnd_limited_ns > 0.5 * sender.busy_ns
    # What it got is what the starved reader could copy, far below the link's rate.
    assert flow.connection.socket is not None
    assert flow.connection.socket.bytes_read * 8 / 10 < 0.5 * 50e6


def test_atomic_allocation_failures_drop_packets_and_tcp_recovers() -> None:
    phone = _phone()
    proc, thread = _app(phone)
    memory = phone.memory
    # Take memory down to the atomic reserve: every buffer allocation fails.
    squeeze = memory.free_pages - memory.min_wmark * 3 // 8
    memory.kernel_pools["test"] = squeeze
    memory.free_pages -= squeeze
    http = HttpClient(phone.net, "server", "phone", TcpConfig(), owner=(proc, thread))
    got = _fetch(phone, http, 1 * MB)

    def release(_: object) -> None:
        memory.shrink_pool("test", squeeze)

    phone.env.schedule(seconds(3), release)
    phone.run(seconds(30))
    stack = phone.stack
    assert stack is not None
    assert stack.alloc_drops > 0 and memory.atomic_failures > 0
    assert got, "TCP retransmits what was dropped once memory is back"
    assert http.connections[0].sender.retransmits > 0
    assert got[0].done_ns > seconds(3)  # type: ignore[attr-defined]


def test_grow_pool_atomic_digs_to_three_eighths_of_min_and_no_further() -> None:
    phone = Phone(load_profile("nokia-1"), 1)
    memory = phone.memory
    floor = memory.min_wmark * 3 // 8
    take = memory.free_pages - floor - 1
    assert memory.grow_pool_atomic("x", take)
    assert memory.grow_pool_atomic("x", 1)  # exactly at the floor
    assert not memory.grow_pool_atomic("x", 1)
    assert memory.free_pages == floor and memory.atomic_failures == 1
    memory.check()
    with pytest.raises(ValueError):
        memory.grow_pool_atomic("x", -1)


def test_softirq_work_past_its_budget_goes_to_ksoftirqd() -> None:
    # A very expensive receive path: one NAPI poll outlasts MAX_SOFTIRQ_TIME.
    spec = NetStackSpec(rx_cycles_per_packet=2_000_000.0)
    phone = _phone(spec, rate_mbps=50.0)
    proc, thread = _app(phone)
    flow = BulkFlow(phone.net, "server", "phone", TcpConfig(), owner=(proc, thread))
    flow.start()
    phone.run(seconds(3))
    stack = phone.stack
    assert stack is not None
    assert stack.deferrals > 0
    assert _running_ns(phone, "ksoftirqd/0") > 0


def test_a_killed_owner_closes_its_sockets_and_frees_their_memory() -> None:
    phone = _phone()
    proc, thread = _app(phone, policy=Fair(19))
    for i in range(len(phone.cpu.cores)):
        phone.cpu.run(phone.cpu.thread(f"hog{i}", Fair(-20), process="hog"), math.inf)
    flow = BulkFlow(phone.net, "server", "phone", TcpConfig(), owner=(proc, thread))
    flow.start()

    def kill(_: object) -> None:
        assert phone.memory.kernel_pools.get(POOL, 0) > 0  # data was queued
        phone.processes.mark_killed(proc, phone.env.now, "test")  # runs its on_kill

    phone.env.schedule(seconds(2), kill)
    phone.run(seconds(4))
    sock = flow.connection.socket
    assert sock is not None and not sock.open
    assert phone.memory.kernel_pools[POOL] == 0
    phone.memory.check()


def test_a_connection_to_a_phone_with_a_stack_needs_an_owner() -> None:
    phone = _phone()
    with pytest.raises(ValueError, match="owning process"):
        BulkFlow(phone.net, "server", "phone", TcpConfig())


def test_hosts_without_a_stack_are_unchanged() -> None:
    env = Environment(1)
    net = Network(env)
    net.add_link("server", "client", 20e6, ms(20), 1 << 18)
    flow = BulkFlow(net, "server", "client", TcpConfig())
    flow.start()
    env.run(seconds(2))
    assert flow.connection.socket is None and flow.bytes_received > 0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"rx_cycles_per_packet": -1.0},
        {"napi_weight": 0},
        {"truesize_factor": 0.5},
        {"softirq_budget_ns": 0},
    ],
)
def test_spec_rejects_nonsense(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        NetStackSpec(**kwargs)  # type: ignore[arg-type]


def _bulk(phone: Phone, proc, thread, seconds_: float = 3.0):  # type: ignore[no-untyped-def]
    flow = BulkFlow(phone.net, "server", "phone", TcpConfig(), owner=(proc, thread))
    flow.start()
    phone.run(seconds(seconds_))
    assert flow.connection.socket is not None
    return flow.connection.socket


def test_a_polling_app_reads_once_a_period_so_data_waits_between_reads() -> None:
    epoll = _phone()
    sock_epoll = _bulk(epoll, *_app(epoll))
    polling = _phone()
    proc, thread = _app(polling)
    stack = polling.stack
    assert stack is not None
    reader = stack.read_periodically(proc, thread, ms(20))
    sock = _bulk(polling, proc, thread)
    assert not sock.wakes and sock_epoll.wakes
    assert sock.bytes_read > 0 and reader.bytes_read == sock.bytes_read
    assert _running_ns(polling, "net") > 0  # the reads ran on the app's thread
    # 20 ms of a 20 Mbit/s flow waits between reads; an epoll reader takes it as it comes.
    assert sock.peak_pages > 2 * sock_epoll.peak_pages
    # Each period's drain is a few 64 KB reads: far fewer calls than one per delivery.
    assert sock.reads < sock_epoll.reads
    polling.memory.check()


def test_a_socket_bound_before_polling_starts_stops_waking_and_a_stopped_poller_stops() -> None:
    phone = _phone()
    proc, thread = _app(phone)
    flow = BulkFlow(phone.net, "server", "phone", TcpConfig(), owner=(proc, thread))
    flow.start()
    phone.run(seconds(1))
    sock = flow.connection.socket
    assert sock is not None and sock.wakes
    stack = phone.stack
    assert stack is not None
    reader = stack.read_periodically(proc, thread, ms(50))
    assert not sock.wakes
    phone.run(seconds(2))
    reader.stopped = True
    phone.run(seconds(2.1))  # the reader's last sleep ends; nothing reads after it
    read = sock.bytes_read
    phone.run(seconds(4))
    assert sock.bytes_read == read
    assert flow.connection.sender.rwnd_limited_ns > 0  # the unread buffer closed the window


def test_a_polling_period_must_be_positive() -> None:
    phone = _phone()
    proc, thread = _app(phone)
    assert phone.stack is not None
    with pytest.raises(ValueError, match="period"):
        phone.stack.read_periodically(proc, thread, 0)
