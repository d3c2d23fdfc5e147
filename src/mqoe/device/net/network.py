"""Hosts joined by links, static shortest-path routes, and TCP connections on them.

A :class:`Connection` carries data from a server to a client (the downlink every
studied setup cares about): a SYN / SYN-ACK handshake (the SYN-ACK queues behind the
downlink's traffic like any packet), then request messages up and data down.
:class:`HttpClient` issues request/response exchanges on one persistent connection or a
new connection per request; :class:`BulkFlow` is an iperf-like sender.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from mqoe.device.net.link import Link, Packet, send
from mqoe.device.net.stack import NetStack, Socket
from mqoe.device.net.tcp import TcpSender
from mqoe.device.net.tcp_config import TCP_TIMEOUT_INIT_NS, TcpConfig
from mqoe.device.net.tcp_receiver import TcpReceiver
from mqoe.device.net.wifi import WifiMedium
from mqoe.engine import NS_PER_S, Environment, Event

if TYPE_CHECKING:
    from mqoe.device.cpu import Thread
    from mqoe.device.process import Process

REQUEST_BYTES: Final = 300  # an HTTP GET with typical headers
# The process owning a client socket on a phone, and the thread that reads it.
Owner = tuple["Process", "Thread"]


def _then(event: Event, action: Callable[[], None]) -> None:
    """Run ``action`` when ``event`` fires (at once if it already has)."""
    if event.callbacks is None:
        action()
    else:
        event.callbacks.append(lambda _: action())


def _no_sink(packet: Packet) -> None:
    raise AssertionError("replaced by the sender's on_ack")


class Network:
    """A set of named hosts and directed links between them."""

    def __init__(self, env: Environment) -> None:
        self.env = env
        self.links: dict[tuple[str, str], Link] = {}
        self._adjacent: dict[str, list[str]] = {}
        self._routes: dict[tuple[str, str], tuple[Link, ...]] = {}
        self.connections: list[Connection] = []  # every connection made, in order
        # Hosts with a modelled receive path (a phone's NetStack), by name.
        self.stacks: dict[str, NetStack] = {}

    def add_link(
        self,
        a: str,
        b: str,
        rate_bps: float,
        delay_ns: int,
        queue_bytes: int,
        *,
        reverse_rate_bps: float | None = None,
        reverse_queue_bytes: int | None = None,
    ) -> tuple[Link, Link]:
        """A duplex link a ↔ b; the reverse direction defaults to the same parameters."""
        forward = Link(self.env, rate_bps, delay_ns, queue_bytes, f"{a}->{b}")
        backward = Link(
            self.env,
            reverse_rate_bps or rate_bps,
            delay_ns,
            queue_bytes if reverse_queue_bytes is None else reverse_queue_bytes,
            f"{b}->{a}",
        )
        self.links[(a, b)] = forward
        self.links[(b, a)] = backward
        self._adjacent.setdefault(a, []).append(b)
        self._adjacent.setdefault(b, []).append(a)
        self._routes.clear()
        return forward, backward

    def add_wifi(
        self,
        medium: WifiMedium,
        ap: str,
        stations: list[str],
        *,
        ap_queue_bytes: int,
        station_queue_bytes: int,
    ) -> None:
        """An access point ``ap`` and its ``stations`` on one shared channel: the AP's
        frames to every station share its single queue; each station has its own."""
        ap_iface = medium.interface(f"{ap}->*", ap_queue_bytes)
        for station in stations:
            self.links[(ap, station)] = ap_iface
            self.links[(station, ap)] = medium.interface(f"{station}->{ap}", station_queue_bytes)
            self._adjacent.setdefault(ap, []).append(station)
            self._adjacent.setdefault(station, []).append(ap)
        self._routes.clear()

    def route(self, src: str, dst: str) -> tuple[Link, ...]:
        """The links of the shortest path (fewest hops; ties by insertion order)."""
        key = (src, dst)
        if key not in self._routes:
            previous: dict[str, str] = {src: src}
            frontier = deque([src])
            while frontier:
                node = frontier.popleft()
                for nxt in self._adjacent.get(node, ()):
                    if nxt not in previous:
                        previous[nxt] = node
                        frontier.append(nxt)
            if dst not in previous or src == dst:
                raise ValueError(f"no route from {src!r} to {dst!r}")
            hops: list[Link] = []
            node = dst
            while node != src:
                hops.append(self.links[(previous[node], node)])
                node = previous[node]
            self._routes[key] = tuple(reversed(hops))
        return self._routes[key]

    def connect(
        self,
        server: str,
        client: str,
        cfg: TcpConfig,
        *,
        name: str = "",
        auto_read: bool = True,
    ) -> Connection:
        """A new (not yet open) connection; call :meth:`Connection.open`."""
        conn = Connection(self, server, client, cfg, name or f"{server}->{client}", auto_read)
        self.connections.append(conn)
        return conn

    def bind(self, conn: Connection, owner: Owner | None) -> None:
        """Give ``conn``'s client end to its owning process and reading thread when the
        client host is a phone with a receive path (:class:`NetStack`); otherwise the
        connection's data is taken as it arrives."""
        stack = self.stacks.get(conn.client)
        if stack is not None:
            if owner is None:
                raise ValueError(f"a connection to {conn.client!r} needs an owning process")
            stack.bind(conn, *owner)


class Connection:
    """One TCP connection: ``sender`` at the server, ``receiver`` at the client."""

    def __init__(
        self,
        net: Network,
        server: str,
        client: str,
        cfg: TcpConfig,
        name: str,
        auto_read: bool = True,
    ) -> None:
        self.env = net.env
        self.name = name
        self.cfg = cfg
        self.server, self.client = server, client
        self.socket: Socket | None = None  # the client end on a phone's stack (NetStack.bind)
        down, up = net.route(server, client), net.route(client, server)
        self.downlink, self.uplink = down, up
        # ACKs go straight to the sender, data straight to ``on_data``: no call through
        # this (interpreted) class per packet.
        self.receiver = TcpReceiver(self.env, cfg, up, _no_sink, self, None, auto_read)
        self.sender = TcpSender(self.env, cfg, down, self.receiver.on_segment, self)
        self.receiver.sink = self.sender.on_ack
        self.established = False
        self._opened: Event | None = None
        self._synack_sent_ns = 0
        self.syn_sent = 0
        self.on_request: Callable[[int], None] = self.sender.write
        self.owner_pid = -1  # the process owning the client socket (−1: none recorded)

    @property
    def on_data(self) -> Callable[[int], None] | None:
        """Told of in-order bytes as they arrive (with a phone's stack: as the app reads)."""
        return self.receiver.on_data

    @on_data.setter
    def on_data(self, consumer: Callable[[int], None] | None) -> None:
        self.receiver.on_data = consumer

    def open(self) -> Event:
        """Three-way handshake; the event fires at the client once the SYN-ACK is in.

        A lost SYN or SYN-ACK is retried after 1 s, doubling each time (RFC 6298 §5.7,
        Linux TCP_TIMEOUT_INIT and tcp_syn_retries backoff)."""
        if self._opened is None:
            self._opened = Event(self.env)
            self._send_syn(TCP_TIMEOUT_INIT_NS)
        return self._opened

    def _send_syn(self, timeout_ns: int) -> None:
        if self.established:
            return
        self.syn_sent += 1
        send(Packet(self, 0, 0, self.uplink, self._syn_at_server, self.env.now))
        self.env.schedule(timeout_ns, lambda _: self._send_syn(min(2 * timeout_ns, 60 * NS_PER_S)))

    def request(self, nbytes: int) -> None:
        """The client asks for ``nbytes``; the server writes them on arrival of the request."""
        packet = Packet(self, 0, REQUEST_BYTES, self.uplink, self._request_at_server, self.env.now)
        packet.ack = nbytes  # the requested size rides in the message
        send(packet)

    def _syn_at_server(self, _: Packet) -> None:
        self._synack_sent_ns = self.env.now
        synack = Packet(self, 0, 0, self.downlink, self._synack_at_client, self.env.now)
        send(synack)

    def _synack_at_client(self, _: Packet) -> None:
        if self.established:
            return  # a duplicate SYN-ACK after a retried SYN
        self.established = True
        assert self._opened is not None
        self._opened.succeed()

    def _request_at_server(self, packet: Packet) -> None:
        if self.sender.srtt_ns == 0.0 and self._synack_sent_ns:
            # The handshake's last leg gives the server its first RTT sample (as Linux).
            self.sender._rtt_sample(self.env.now - self._synack_sent_ns)
        self.on_request(packet.ack)


@dataclass(frozen=True, slots=True)
class Response:
    """Timing of one HTTP exchange, as the client saw it (ns)."""

    size_bytes: int
    requested_ns: int
    first_byte_ns: int
    done_ns: int
    new_connection: bool


class HttpClient:
    """GET-like exchanges from ``client`` to ``server``, one at a time.

    ``persistent=True`` reuses one connection (opened on first use); otherwise every
    request pays a handshake on a fresh connection, whose window starts from IW.
    """

    def __init__(
        self,
        net: Network,
        server: str,
        client: str,
        cfg: TcpConfig,
        persistent: bool = True,
        *,
        auto_read: bool = True,
        owner_pid: int = -1,
        owner: Owner | None = None,
    ) -> None:
        self.net = net
        self.auto_read = auto_read  # False: the app reads (``receiver.read``) on its own
        # On a phone with a receive path: the owning process and its reading thread.
        self.owner = owner
        self.owner_pid = owner[0].pid if owner is not None else owner_pid
        self.server = server
        self.client = client
        self.cfg = cfg
        self.persistent = persistent
        self.connection: Connection | None = None
        self.connections: list[Connection] = []
        self._pending: tuple[Event, int, int, bool] | None = None
        self._got = 0
        self._first_byte_ns = -1
        self.bytes_received = 0  # over all its connections

    def get(self, nbytes: int) -> Event:
        """Fetch ``nbytes``; the event fires with a :class:`Response` when all arrived."""
        if self._pending is not None:
            raise RuntimeError("one request at a time on an HttpClient")
        if nbytes <= 0:
            raise ValueError("a response needs at least one byte")
        done = Event(self.net.env)
        conn = self.connection
        fresh = conn is None or not self.persistent
        if conn is None or fresh:
            conn = self.net.connect(self.server, self.client, self.cfg, auto_read=self.auto_read)
            conn.owner_pid = self.owner_pid
            conn.on_data = self._on_data
            self.net.bind(conn, self.owner)
            self.connection = conn
            self.connections.append(conn)
        opened = conn
        self._pending = (done, nbytes, self.net.env.now, fresh)
        self._got = 0
        self._first_byte_ns = -1
        if conn.established:
            conn.request(nbytes)
        else:
            _then(opened.open(), lambda: opened.request(nbytes))
        return done

    def _on_data(self, nbytes: int) -> None:
        self.bytes_received += nbytes
        if self._pending is None:
            return
        done, size, requested, fresh = self._pending
        if self._first_byte_ns < 0:
            self._first_byte_ns = self.net.env.now
        self._got += nbytes
        if self._got >= size:
            self._pending = None
            now = self.net.env.now
            done.succeed(Response(size, requested, self._first_byte_ns, now, fresh))


class BulkFlow:
    """An iperf-like long-lived sender from ``server`` to ``client``."""

    def __init__(
        self,
        net: Network,
        server: str,
        client: str,
        cfg: TcpConfig,
        *,
        auto_read: bool = True,
        owner_pid: int = -1,
        owner: Owner | None = None,
    ) -> None:
        self.connection = net.connect(
            server, client, cfg, name=f"bulk {server}->{client}", auto_read=auto_read
        )
        self.connection.owner_pid = owner[0].pid if owner is not None else owner_pid
        net.bind(self.connection, owner)
        self.started = False

    def start(self, nbytes: int = 1 << 50) -> None:
        """Open and ask for ``nbytes`` (default: effectively endless data)."""
        conn = self.connection
        _then(conn.open(), lambda: conn.request(nbytes))
        self.started = True

    def stop(self) -> None:
        self.connection.sender.close()

    @property
    def bytes_received(self) -> int:
        return self.connection.receiver.bytes_received
