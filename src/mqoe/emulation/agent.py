"""The programs that run inside the testbed's namespaces (one process each).

``python -m mqoe.emulation.agent ROLE CONFIG_JSON``, started by the orchestrator with
``ip netns exec``. Every agent sets itself up, prints ``ready``, reads the common start
time (a ``CLOCK_MONOTONIC`` value in ns, shared by all namespaces) from stdin, does its
job until its own deadline, and writes its result as JSON to ``config["out"]``. Roles:

* ``delayline`` (router): the TUN delay line (:mod:`mqoe.emulation.delayline`).
* ``server`` (video server): HTTP/1.1, ``GET /<bytes>`` answers that many bytes, with
  keep-alive; one thread per connection.
* ``sender`` (competitor host): one bulk TCP flow to the client's sink between its
  start and stop times; samples srtt and cwnd once per second.
* ``sink`` (client): receives the bulk flow, bytes per time bin.
* ``client`` (client): the ABR video client (:mod:`mqoe.emulation.client`).

Every socket has a timeout and every agent a deadline, so nothing outlives its run; and
every agent dies with the orchestrator that started it (:func:`die_with_parent`), so
nothing outlives a killed orchestrator either.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import json
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

SERVER_PORT = 8080
SINK_PORT = 5001
_CHUNK = 1 << 16
_PAYLOAD = bytes(1 << 20)
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
ORPHANED_EXIT = 4  # exit status of an agent whose orchestrator died before it started


def die_with_parent(parent_pid: int) -> None:
    """Have the kernel SIGKILL this process when ``parent_pid`` (our parent) dies.

    PR_SET_PDEATHSIG, set by the agent itself rather than between fork and exec, so it
    holds whatever ``ip netns exec`` execs on the way (the setting is cleared on exec of
    a privileged binary). The signal comes when the thread that forked us ends: the
    orchestrator's main thread, which lives as long as the orchestrator. If the parent
    died before the prctl (Python's start-up is a wide window), we have already been
    re-parented and no signal will come: then exit now.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, ctypes.c_ulong(signal.SIGKILL), ctypes.c_ulong(0),
                  ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:  # fmt: skip
        errno = ctypes.get_errno()
        raise OSError(errno, f"prctl(PR_SET_PDEATHSIG): {os.strerror(errno)}")
    if os.getppid() != parent_pid:
        # stderr is the agent's log, whose tail the orchestrator reports (if it is alive)
        print(f"parent {parent_pid} is gone (parent now {os.getppid()})", file=sys.stderr)
        sys.stderr.flush()
        os._exit(ORPHANED_EXIT)


def _now_s(t0_ns: int) -> float:
    return (time.monotonic_ns() - t0_ns) / 1e9


def _set_cc(sock: socket.socket, cc: str) -> None:
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
    got = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0")
    if got != cc.encode():
        raise RuntimeError(f"congestion control {cc} refused (socket has {got.decode()})")


def _handshake() -> int:
    print("ready", flush=True)
    line = sys.stdin.readline()
    if not line.strip():
        raise SystemExit(0)  # the orchestrator gave up before the start
    t0 = int(line)
    _sleep_until(t0)  # everyone starts together
    return t0


def _write(config: dict[str, Any], result: dict[str, Any]) -> None:
    # Write-then-rename, so a killed agent leaves no torn result. Not mqoe.results.atomic:
    # it imports pandas and pyarrow (~1.3 s per agent start-up, five agents per run), and
    # its fsyncs guard against power cuts, which do not matter for a run's private folder.
    final = Path(config["out"])
    tmp = final.with_name(f".{final.name}.tmp")
    tmp.write_text(json.dumps(result))
    os.replace(tmp, final)


# --- delay line ------------------------------------------------------------------------


def run_delayline(config: dict[str, Any]) -> None:
    from mqoe.emulation.delayline import DelayLine, open_tun

    fd = open_tun(config["tun"])
    line = DelayLine(fd, int(config["delay_ms"] * 1e6))
    t0 = _handshake()
    cpu0, wall0 = time.process_time(), time.monotonic()
    line.run(t0 + int(config["until_s"] * 1e9), stop_fd=sys.stdin.fileno())
    stats = line.stats(time.process_time() - cpu0, time.monotonic() - wall0)
    _write(config, {**stats.__dict__, "cpu_fraction": stats.cpu_fraction})


# --- video server ----------------------------------------------------------------------


def run_server(config: dict[str, Any]) -> None:
    # Imported before the start, not on the first request: the module pulls in pandas
    # (via mqoe.policies.netpis), seconds of GIL-holding import that stalled the video
    # session's first segments and so the client's first rate choices.
    from mqoe.emulation.receiver import tcp_info_sender

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    _set_cc(listener, config["cc"])
    listener.bind((config["addr"], SERVER_PORT))
    listener.listen(16)
    t0 = _handshake()
    deadline = t0 + int(config["until_s"] * 1e9)
    retransmits: list[int] = []
    requests: list[tuple[float, int, int, int]] = []  # (t_s, size, cwnd, ssthresh) at request
    lock = threading.Lock()

    def serve(conn: socket.socket) -> None:
        conn.settimeout(max(1.0, (deadline - time.monotonic_ns()) / 1e9))
        _set_cc(conn, config["cc"])
        try:
            _serve_requests(conn, requests, t0)
        except OSError:
            pass
        finally:
            try:
                with lock:
                    retransmits.append(tcp_info_sender(conn)[2])
            except OSError:
                pass
            conn.close()

    listener.settimeout(0.2)
    while time.monotonic_ns() < deadline:
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            continue
        threading.Thread(target=serve, args=(conn,), daemon=True).start()
    time.sleep(0.2)  # let finished connections report
    with lock:
        _write(config, {"connections": len(retransmits), "retransmits": sum(retransmits),
                        "requests": requests})  # fmt: skip


def _serve_requests(conn: socket.socket, log: list[tuple[float, int, int, int]], t0: int) -> None:
    """Answer ``GET /<bytes>`` requests; log cwnd and ssthresh as each one arrives (what
    restart-after-idle leaves of the window after the client's idle period)."""
    from mqoe.emulation.receiver import tcp_info_cwnd

    pending = b""
    view = memoryview(_PAYLOAD)
    while True:
        while b"\r\n\r\n" not in pending:
            data = conn.recv(4096)
            if not data:
                return
            pending += data
        head, _, pending = pending.partition(b"\r\n\r\n")
        request = head.split(b"\r\n", 1)[0].split()
        size = int(request[1].lstrip(b"/")) if len(request) > 1 else 0
        close = b"connection: close" in head.lower()
        log.append((_now_s(t0), size, *tcp_info_cwnd(conn)))
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nContent-Type: "
                     b"application/octet-stream\r\n\r\n" % size)  # fmt: skip
        while size > 0:
            step = min(size, len(view))
            conn.sendall(view[:step])
            size -= step
        if close:
            return


# --- bulk competitor ----------------------------------------------------------------------


def run_sender(config: dict[str, Any]) -> None:
    from mqoe.emulation.receiver import tcp_info_sender

    t0 = _handshake()
    start, stop = t0 + int(config["start_s"] * 1e9), t0 + int(config["stop_s"] * 1e9)
    samples: list[tuple[float, float, int]] = []
    retransmits = 0
    _sleep_until(start)
    if time.monotonic_ns() < stop:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        _set_cc(sock, config["cc"])
        sock.settimeout(2.0)
        sock.connect((config["sink"], config.get("port", SINK_PORT)))
        view = memoryview(_PAYLOAD)[:_CHUNK]
        next_sample = time.monotonic_ns() + 1_000_000_000
        sock.settimeout(0.5)  # a send may wait out RTO backoff: keep trying until stop
        try:
            while (now := time.monotonic_ns()) < stop:
                with contextlib.suppress(TimeoutError):
                    sock.send(view)
                if now >= next_sample:
                    rtt, cwnd, retransmits = tcp_info_sender(sock)
                    samples.append((_now_s(t0), rtt, cwnd))
                    next_sample += 1_000_000_000
            retransmits = tcp_info_sender(sock)[2]
        except OSError:
            pass
        sock.close()
    _write(config, {"samples": samples, "retransmits": retransmits})


def run_sink(config: dict[str, Any]) -> None:
    from mqoe.emulation.receiver import ReceiverController, make_receiver_rule

    rule = make_receiver_rule(config["receiver"]) if config.get("receiver") else None
    controller = ReceiverController(rule)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    controller.before_connect(listener, 0.0, "competitor")  # accepted sockets inherit it
    listener.bind((config["addr"], config.get("port", SINK_PORT)))
    listener.listen(4)
    t0 = _handshake()
    until = t0 + int(config["until_s"] * 1e9)
    counter = BinCounter(t0, config["sample_s"], config["until_s"])
    listener.settimeout(0.2)
    while time.monotonic_ns() < until:
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            continue
        controller.update(conn, _now_s(t0), "competitor")
        _drain(conn, counter, until, functools.partial(controller.after_receive, conn))
        conn.close()
    applied = [(t, f, str(s)) for t, f, s in controller.applied]
    _write(config, {"bins": counter.bins, "receiver_applied": applied})


def _drain(
    conn: socket.socket, counter: BinCounter, until_ns: int, after: Callable[[], None]
) -> None:
    conn.settimeout(0.5)
    buf = bytearray(_CHUNK)
    while time.monotonic_ns() < until_ns:
        try:
            n = conn.recv_into(buf)
        except TimeoutError:
            continue
        except OSError:
            return
        if n == 0:
            return
        counter.add(n)
        after()


class BinCounter:
    """Bytes received per ``sample_s`` bin since ``t0`` (bin k covers [k, k+1) × sample)."""

    def __init__(self, t0_ns: int, sample_s: float, until_s: float) -> None:
        self.t0 = t0_ns
        self.bin_ns = int(sample_s * 1e9)
        self.bins = [0] * (int(until_s / sample_s) + 2)

    def add(self, n: int) -> None:
        k = (time.monotonic_ns() - self.t0) // self.bin_ns
        if 0 <= k < len(self.bins):
            self.bins[k] += n


def _sleep_until(deadline_ns: int) -> None:
    while (left := deadline_ns - time.monotonic_ns()) > 0:
        time.sleep(min(left / 1e9, 0.5))


# --- entry ----------------------------------------------------------------------------


def _client(config: dict[str, Any]) -> None:
    from mqoe.emulation.client import run_client

    run_client(config, _handshake)


ROLES: dict[str, Callable[[dict[str, Any]], None]] = {
    "delayline": run_delayline,
    "server": run_server,
    "sender": run_sender,
    "sink": run_sink,
    "client": _client,
}


def main(argv: list[str]) -> int:
    role, config = argv[0], json.loads(argv[1])
    if "parent_pid" in config:  # absent only when started by hand, for debugging
        die_with_parent(config["parent_pid"])
    signal.signal(signal.SIGTERM, lambda *_: os._exit(3))  # the orchestrator's hard stop
    signal.alarm(int(config["until_s"] + config.get("grace_s", 30)))  # never outlive the run
    ROLES[role](config)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
