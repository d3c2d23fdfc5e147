"""The phone's own receive path: a packet costs CPU in softirq, queued data costs the
owning app kernel memory, and the app's reads cost CPU on its own thread.

Linux's path for a TCP segment arriving at a phone, as modelled here:

1. **Softirq.** The NIC's interrupt schedules NAPI; ``net_rx_action`` (the NET_RX
   softirq) polls up to ``napi_weight`` packets a poll (NAPI_POLL_WEIGHT = 64), runs the
   IP and TCP receive code and sends the ACKs. It runs at interrupt exit on the core the
   interrupt is routed to, ahead of every thread there (modelled as a SCHED_FIFO 99
   thread ``softirq/N``), for at most ``softirq_budget_ns`` (MAX_SOFTIRQ_TIME, 2 ms,
   kernel/softirq.c). Work still pending then goes to ``ksoftirqd/N``, an ordinary
   SCHED_NORMAL nice-0 thread, and while ksoftirqd has work, interrupts leave all softirq
   processing to it (``ksoftirqd_running``, Linux 4.9, commit 4cd13c21b207 "softirq: Let
   ksoftirqd do its job"): from then on packets and ACKs wait for a fair share of a
   possibly busy core. A backlog of more than ``backlog_packets`` (netdev_max_backlog,
   1000) drops the packet.
2. **Socket memory.** A segment's buffer (its skb *truesize*: a 1500-byte frame in a
   driver's 2 KB buffer plus the sk_buff, about twice the payload — what
   ``tcp_adv_win_scale = 1`` assumes) is charged to the socket while it waits to be read,
   i.e. to the owning process's kernel memory (``/proc/net/sockstat``'s ``mem``; with
   cgroup v2, the app's memory cgroup), in pool ``"sock"`` of the phone's memory. It is
   not on any LRU: reclaim cannot take it; reading gives it back. The buffer is
   allocated in softirq context, GFP_ATOMIC (:meth:`Memory.grow_pool_atomic`): when free
   memory is below the atomic reserve, the allocation fails and the packet is dropped,
   which the sender sees as a loss.
3. **The app's reads.** Delivery wakes the owning app's network thread (epoll); it reads
   in ``read_chunk_bytes`` calls, each a syscall plus a copy per byte (``tcp_recvmsg``),
   and only a read frees buffer space — so a thread starved of CPU leaves data queued,
   the advertised window (the buffer's free space) shrinks, and the sender slows down.
   An app may instead poll (:meth:`NetStack.read_periodically`): its thread wakes every
   period and drains each of its sockets, so data waits up to a period between reads.

Only data segments take this path; handshake packets and the phone's requests cost
nothing here. A killed process's sockets close: their memory is freed, their senders
stop and what is still arriving is dropped.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mqoe.device.cpu import Fair, RealTime
from mqoe.engine import ms

if TYPE_CHECKING:
    from mqoe.device.cpu import Cpu, Thread
    from mqoe.device.memory import Memory
    from mqoe.device.net.link import Packet
    from mqoe.device.net.network import Connection
    from mqoe.device.process import Process
    from mqoe.engine import Environment, Event

POOL = "sock"  # the memory pool socket buffers are charged to
PAGE_BYTES = 4096


@dataclass(frozen=True, slots=True)
class NetStackSpec:
    """Costs and limits of the receive path (module docstring).

    The CPU costs are *assumed* (reference cycles, Cortex-A53 = 1 per clock; see the
    calibration ledger's last section): no public measurement gives a phone's per-packet
    receive cost. They are of the order of Linux's per-packet protocol processing and
    copy costs on server cores (a few µs per packet, under a cycle per byte copied). The
    limits are Linux's defaults.
    """

    rx_cycles_per_packet: float = 10_000.0  # driver + IP + TCP receive + ACK (assumed)
    read_cycles_per_call: float = 5_000.0  # one read()/recvmsg syscall (assumed)
    copy_cycles_per_byte: float = 0.5  # copy_to_user (assumed)
    read_chunk_bytes: int = 64 * 1024  # the app's read buffer (OkHttp/ExoPlayer-sized)
    napi_weight: int = 64  # NAPI_POLL_WEIGHT
    softirq_budget_ns: int = ms(2)  # MAX_SOFTIRQ_TIME
    backlog_packets: int = 1000  # net.core.netdev_max_backlog
    truesize_factor: float = 2.0  # skb truesize / payload (tcp_adv_win_scale = 1)
    irq_core: int = 0  # the Wi-Fi interrupt's core (smp_affinity)

    def __post_init__(self) -> None:
        costs = (self.rx_cycles_per_packet, self.read_cycles_per_call, self.copy_cycles_per_byte)
        if min(costs) < 0:
            raise ValueError("network stack CPU costs must not be negative")
        if min(self.read_chunk_bytes, self.napi_weight, self.backlog_packets) <= 0:
            raise ValueError("read_chunk_bytes, napi_weight and backlog_packets must be > 0")
        if self.softirq_budget_ns <= 0 or self.truesize_factor < 1 or self.irq_core < 0:
            raise ValueError("softirq_budget_ns > 0, truesize_factor ≥ 1, irq_core ≥ 0")


class Socket:
    """The phone's end of one connection, owned by ``process`` and read by ``thread``."""

    def __init__(self, stack: NetStack, conn: Connection, process: Process, thread: Thread) -> None:
        self.stack = stack
        self.conn = conn
        self.process = process
        self.thread = thread
        self.open = True
        self.charged_pages = 0
        self.peak_pages = 0
        self.bytes_read = 0
        self.reads = 0
        self.drops = 0  # segments dropped for want of memory
        # The application's consumer of what it reads (the HttpClient's byte counter).
        self.consumer: Callable[[int], None] | None = None
        self.wakes = True  # data wakes the reader (epoll); False: the app polls
        self._reading = False
        self._reader_name = "read " + conn.name

    # -- softirq side -----------------------------------------------------------------
    def receive(self, packet: Packet) -> None:
        """Deliver a processed segment to TCP; its buffer is charged first (atomic)."""
        if not self.open:
            return
        stack, rcv = self.stack, self.conn.receiver
        if packet.length:
            need = stack.pages_for(rcv.unread + rcv.ooo_bytes + packet.length)
            if need > self.charged_pages and not self._charge(need - self.charged_pages):
                self.drops += 1
                stack.alloc_drops += 1
                return
        rcv.on_segment(packet)
        self._settle()

    def _charge(self, pages: int) -> bool:
        if not self.stack.memory.grow_pool_atomic(POOL, pages):
            return False
        self.charged_pages += pages
        self.peak_pages = max(self.peak_pages, self.charged_pages)
        return True

    def _settle(self) -> None:
        """Charge exactly what the receive queue holds (TCP may have refused the segment
        or taken a duplicate)."""
        rcv = self.conn.receiver
        held = self.stack.pages_for(rcv.unread + rcv.ooo_bytes)
        if held < self.charged_pages:
            self.stack.memory.shrink_pool(POOL, self.charged_pages - held)
            self.charged_pages = held

    # -- the app's side ---------------------------------------------------------------
    def delivered(self, _: int) -> None:
        """TCP has in-order data for the app: wake its reader (epoll)."""
        if self.open and self.wakes and not self._reading:
            self._reading = True
            self.stack.env.process(self._read_loop(), self._reader_name)

    def _read_loop(self) -> Generator[Event, object, None]:
        try:
            yield from self.drain()
        finally:
            self._reading = False

    def drain(self) -> Generator[Event, object, None]:
        """Read on the owner's thread until nothing is queued: a syscall plus a copy per
        byte for each ``read_chunk_bytes`` chunk."""
        rcv, cpu, spec = self.conn.receiver, self.stack.cpu, self.stack.spec
        while self.open and rcv.unread and self.thread.alive:
            chunk = min(rcv.unread, spec.read_chunk_bytes)
            yield cpu.run(
                self.thread, spec.read_cycles_per_call + spec.copy_cycles_per_byte * chunk
            )
            if not self.open:
                return
            got = rcv.read(chunk)
            self._settle()
            self.bytes_read += got
            self.reads += 1
            if self.consumer is not None and got:
                self.consumer(got)

    def close(self) -> None:
        """The owner is gone: free the buffers, stop the sender, drop later arrivals."""
        if not self.open:
            return
        self.open = False
        if self.charged_pages:
            self.stack.memory.shrink_pool(POOL, self.charged_pages)
            self.charged_pages = 0
        self.conn.sender.close()


class NetStack:
    """The receive path of the phone's host ``host`` on its network (module docstring)."""

    def __init__(
        self,
        env: Environment,
        cpu: Cpu,
        memory: Memory,
        host: str,
        spec: NetStackSpec | None = None,
    ) -> None:
        self.env = env
        self.cpu = cpu
        self.memory = memory
        self.host = host
        self.spec = spec = spec or NetStackSpec()
        core = min(spec.irq_core, len(cpu.cores) - 1)
        self.softirq = cpu.thread(f"softirq/{core}", RealTime(99), process="kernel", cpus=(core,))
        self.ksoftirqd = cpu.thread(f"ksoftirqd/{core}", Fair(0), process="kernel", cpus=(core,))
        self.sockets: list[Socket] = []
        self._owners: set[int] = set()  # pids whose kill closes their sockets
        self._polling: set[int] = set()  # pids that read by polling (read_periodically)
        self._backlog: deque[tuple[Packet, Socket]] = deque()
        self._busy = False
        self._deferred = False  # pending work belongs to ksoftirqd
        self._inline_since_ns = 0
        # Counters.
        self.packets = 0  # processed
        self.backlog_drops = 0
        self.alloc_drops = 0
        self.deferrals = 0  # times the softirq handed its work to ksoftirqd

    def pages_for(self, nbytes: int) -> int:
        """Pages charged for ``nbytes`` of queued payload."""
        return -(-int(nbytes * self.spec.truesize_factor) // PAGE_BYTES)

    def bind(self, conn: Connection, process: Process, thread: Thread) -> Socket:
        """Make ``conn``'s client end a socket of ``process``, read by ``thread``: data
        segments go through the softirq, the receive queue is charged, and the app
        reads (the connection's ``on_data`` hears of bytes as the app reads them)."""
        if conn.client != self.host:
            raise ValueError(f"{conn.name} does not end at {self.host!r}")
        sock = Socket(self, conn, process, thread)
        sock.wakes = process.pid not in self._polling
        sock.consumer, conn.on_data = conn.on_data, sock.delivered
        conn.receiver.auto_read = False
        conn.sender.sink = lambda packet: self._ingress(packet, sock)
        conn.socket = sock
        self.sockets.append(sock)
        if process.pid not in self._owners:  # one hook per process, however many sockets
            self._owners.add(process.pid)
            process.on_kill.append(lambda _: self._close_of(process))
        return sock

    def read_periodically(self, process: Process, thread: Thread, period_ns: int) -> PollingReader:
        """``process`` reads its sockets by polling: every ``period_ns`` ``thread`` drains
        each of them (its sockets bound before or after this no longer wake a reader)."""
        if period_ns <= 0:
            raise ValueError("the read period must be positive")
        self._polling.add(process.pid)
        for sock in self.sockets:
            if sock.process is process:
                sock.wakes = False
        return PollingReader(self, process, thread, period_ns)

    def _close_of(self, process: Process) -> None:
        for sock in self.sockets:
            if sock.process is process:
                sock.close()

    @property
    def charged_pages(self) -> int:
        return sum(s.charged_pages for s in self.sockets)

    def pages_of(self, pid: int) -> int:
        """Socket-buffer pages charged to process ``pid`` now."""
        return sum(s.charged_pages for s in self.sockets if s.process.pid == pid)

    # -- NET_RX ------------------------------------------------------------------------
    def _ingress(self, packet: Packet, sock: Socket) -> None:
        if len(self._backlog) >= self.spec.backlog_packets:
            self.backlog_drops += 1
            return
        self._backlog.append((packet, sock))
        if not self._busy:
            self._busy = True
            self._inline_since_ns = self.env.now
            self._poll()

    def _poll(self) -> None:
        """One NAPI poll: up to ``napi_weight`` packets' processing as one run."""
        backlog = self._backlog
        batch = [backlog.popleft() for _ in range(min(len(backlog), self.spec.napi_weight))]
        thread = self.ksoftirqd if self._deferred else self.softirq
        done = self.cpu.run(thread, len(batch) * self.spec.rx_cycles_per_packet)
        if done.callbacks is None:  # no work (a zero cost): processed at once
            self._polled(batch)
        else:
            done.callbacks.append(lambda _: self._polled(batch))

    def _polled(self, batch: list[tuple[Packet, Socket]]) -> None:
        for packet, sock in batch:
            sock.receive(packet)
        self.packets += len(batch)
        if not self._backlog:
            self._busy = False
            self._deferred = False
            return
        inline_ns = self.env.now - self._inline_since_ns
        if not self._deferred and inline_ns >= self.spec.softirq_budget_ns:
            self._deferred = True  # wakeup_softirqd: the rest waits for ksoftirqd
            self.deferrals += 1
        self._poll()


class PollingReader:
    """An app's read loop on the phone: ``thread`` wakes every ``period_ns`` and drains
    each open socket of ``process`` (:meth:`Socket.drain`), then sleeps again."""

    def __init__(self, stack: NetStack, process: Process, thread: Thread, period_ns: int) -> None:
        self.stack = stack
        self.process = process
        self.thread = thread
        self.period_ns = period_ns
        self.stopped = False
        stack.env.process(self._run(), "poll " + process.name)

    @property
    def bytes_read(self) -> int:
        return sum(s.bytes_read for s in self.stack.sockets if s.process is self.process)

    def _run(self) -> Generator[Event, object, None]:
        env = self.stack.env
        while not self.stopped and self.thread.alive:
            yield env.timeout(self.period_ns)
            for sock in [s for s in self.stack.sockets if s.process is self.process and s.open]:
                yield from sock.drain()
