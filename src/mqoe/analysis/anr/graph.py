"""The wait-for graph of one ANR event and its critical thread(s) (step 1 of the root-cause
pipeline of the Android responsiveness study, "Aging or Glitching?", MobiCom 2020).

Nodes are threads, named ``(process index, thread index)`` in file order. A thread has
at most one successor, chosen by the first rule that applies:

1. **Monitor.** The thread has a ``- waiting to lock <addr>`` line: the successor is the
   thread of the same process named by ``held by thread N`` (ART's ``tid``), or, when the
   line names no holder (or a tid that is not in the dump), the first other thread of the
   process with a ``- locked <addr>`` line. ``- waiting on`` (``Object.wait``) and
   ``- sleeping on`` are not edges: the monitor was released and whoever will notify is
   not recorded.
2. **Binder.** The thread is a Binder *client*: one of its top :data:`BINDER_TOP_FRAMES`
   frames is ``BinderProxy.transact``, ``BpBinder::transact``,
   ``IPCThreadState::transact`` or ``IPCThreadState::waitForResponse``, or
   ``IPCThreadState::talkWithDriver`` in a thread that is not parked in its binder pool
   loop (``getAndExecuteCommand``/``joinThreadPool`` without ``executeCommand``). Dumps
   do not say which thread serves a call, so the heuristic picks the first *busy* Binder
   thread (name ``Binder:…``, ``binder:…``, ``HwBinder:…``) of another process of the
   file, in file order. A Binder thread is busy when its stack holds
   ``Binder.execTransact``, ``onTransact``, ``BBinder::transact`` or
   ``IPCThreadState::executeCommand`` — it is serving a transaction; an idle pool thread
   shows only ``talkWithDriver``/``getAndExecuteCommand``/``joinThreadPool``. With no busy
   Binder thread in another process the client has no successor.

The walk starts at the *blocked thread* (:func:`blocked_thread`) and follows successors
until a thread without one — the **critical thread** — or until a thread repeats: a cycle
(deadlock), whose members are all critical.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mqoe.analysis.anr.model import AnrFile, ProcessDump, ThreadDump

Node = tuple[int, int]  # (process index in the file, thread index in the process)

BINDER_TOP_FRAMES = 12  # client frames sit above the app's own code; 12 covers JNI glue
_CLIENT = (
    "BinderProxy.transact",
    "BpBinder::transact",
    "IPCThreadState::transact",
    "IPCThreadState::waitForResponse",
)
_SERVING = ("execTransact", "onTransact", "BBinder::transact", "IPCThreadState::executeCommand")
_POOL = ("getAndExecuteCommand", "joinThreadPool")
_BINDER_NAME = ("binder:", "binder_", "hwbinder:")
_PARENS = re.compile(r"\(([^()]+)\)")


@dataclass(frozen=True)
class WaitEdge:
    """``source`` waits for ``target``: on the monitor ``address`` (``lock``) or in a
    Binder call (``binder``)."""

    source: Node
    target: Node
    kind: str
    address: str = ""


@dataclass(frozen=True)
class CriticalPath:
    """The walk from the blocked thread: visited nodes, edges, critical node(s)."""

    start: Node | None
    path: tuple[Node, ...]
    edges: tuple[WaitEdge, ...]
    critical: tuple[Node, ...]
    cycle: bool

    @property
    def length(self) -> int:
        """Wait-for length: the number of edges followed (a cycle counts its closing edge)."""
        return len(self.edges)


def is_binder_thread(thread: ThreadDump) -> bool:
    return thread.name.lower().startswith(_BINDER_NAME)


def _has(thread: ThreadDump, needles: tuple[str, ...], top: int | None = None) -> bool:
    frames = thread.frames if top is None else thread.frames[:top]
    return any(n in frame.function for frame in frames for n in needles)


def is_serving(thread: ThreadDump) -> bool:
    """A Binder thread busy with a transaction (see the module docstring)."""
    return is_binder_thread(thread) and _has(thread, _SERVING)


def is_binder_client(thread: ThreadDump) -> bool:
    """A thread waiting for the reply to its own Binder call (see the module docstring)."""
    top = thread.frames[:BINDER_TOP_FRAMES]
    if any(n in f.function for f in top for n in _CLIENT):
        return True
    if not any("talkWithDriver" in f.function for f in top):
        return False
    return not _has(thread, _POOL) or _has(thread, _SERVING)


@dataclass
class WaitForGraph:
    """Successors of the threads of one file, computed on demand and cached."""

    anr: AnrFile
    _succ: dict[Node, WaitEdge | None] = field(default_factory=dict, repr=False)
    _tids: dict[int, dict[int, int]] = field(default_factory=dict, repr=False)
    _holders: dict[int, dict[str, list[int]]] = field(default_factory=dict, repr=False)
    _servers: list[Node] | None = field(default=None, repr=False)

    def thread(self, node: Node) -> ThreadDump:
        return self.anr.processes[node[0]].threads[node[1]]

    def process(self, node: Node) -> ProcessDump:
        return self.anr.processes[node[0]]

    def successor(self, node: Node) -> WaitEdge | None:
        if node not in self._succ:
            self._succ[node] = self._compute(node)
        return self._succ[node]

    @property
    def edges(self) -> list[WaitEdge]:
        """Every edge of the graph, in file order."""
        found = []
        for p, proc in enumerate(self.anr.processes):
            for t in range(len(proc.threads)):
                edge = self.successor((p, t))
                if edge is not None:
                    found.append(edge)
        return found

    def _compute(self, node: Node) -> WaitEdge | None:
        thread = self.thread(node)
        for lock in thread.locks:
            if lock.kind == "waiting_to_lock":
                target = self._holder(node, lock.address, lock.held_by)
                if target is None:
                    return None
                return WaitEdge(node, target, "lock", lock.address)
        if is_binder_client(thread):
            for server in self._binder_servers():
                if server[0] != node[0]:
                    return WaitEdge(node, server, "binder")
        return None

    def _holder(self, node: Node, address: str, held_by: int | None) -> Node | None:
        p = node[0]
        if held_by is not None:
            if p not in self._tids:
                self._tids[p] = {}
                for i, t in enumerate(self.anr.processes[p].threads):
                    if t.tid is not None:
                        self._tids[p].setdefault(t.tid, i)
            index = self._tids[p].get(held_by)
            if index is not None and index != node[1]:
                return (p, index)
        if not address:
            return None
        if p not in self._holders:
            holders: dict[str, list[int]] = {}
            for i, t in enumerate(self.anr.processes[p].threads):
                for lock in t.locks:
                    if lock.kind == "locked" and lock.address:
                        holders.setdefault(lock.address, []).append(i)
            self._holders[p] = holders
        for index in self._holders[p].get(address, ()):
            if index != node[1]:
                return (p, index)
        return None

    def _binder_servers(self) -> list[Node]:
        if self._servers is None:
            self._servers = [
                (p, t)
                for p, proc in enumerate(self.anr.processes)
                for t, thread in enumerate(proc.threads)
                if is_serving(thread)
            ]
        return self._servers

    def walk(self, start: Node | None) -> CriticalPath:
        """Follow successors from ``start`` to the critical thread(s)."""
        if start is None:
            return CriticalPath(None, (), (), (), False)
        path = [start]
        seen = {start: 0}
        edges: list[WaitEdge] = []
        node = start
        while True:
            edge = self.successor(node)
            if edge is None:
                return CriticalPath(start, tuple(path), tuple(edges), (node,), False)
            edges.append(edge)
            nxt = edge.target
            if nxt in seen:
                cycle = tuple(path[seen[nxt] :])
                return CriticalPath(start, tuple(path), tuple(edges), cycle, True)
            seen[nxt] = len(path)
            path.append(nxt)
            node = nxt


def blocked_thread(anr: AnrFile) -> Node | None:
    """The thread the ANR (or watchdog kill) is about.

    For a watchdog kill, the first thread named in parentheses in the watchdog line
    (``… on foreground thread (android.fg)``) found in ``system_server`` (else the first
    process); otherwise the first process's ``main`` thread, else its ``tid=1`` (some
    releases name the main thread after the process), else the thread whose kernel id
    is the pid (the thread-group leader: how debuggerd's native dumps and Waiting
    Channels sections show the main thread), else its first thread. None when the first
    process has no threads.
    """
    if not anr.processes:
        return None
    if anr.watchdog:
        order = sorted(
            range(len(anr.processes)), key=lambda p: anr.processes[p].name != "system_server"
        )
        for name in _PARENS.findall(anr.watchdog):
            for p in order:
                for t, thread in enumerate(anr.processes[p].threads):
                    if thread.name == name.strip():
                        return (p, t)
    threads = anr.processes[0].threads
    for t, thread in enumerate(threads):
        if thread.name == "main":
            return (0, t)
    for t, thread in enumerate(threads):
        if thread.tid == 1:
            return (0, t)
    pid = anr.processes[0].pid
    for t, thread in enumerate(threads):
        if thread.sys_tid == pid:
            return (0, t)
    return (0, 0) if threads else None
