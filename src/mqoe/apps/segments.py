"""Where a player's media segments come from: a fast LAN, or HTTP over the phone's network.

A :class:`SegmentSource` is opened once by its player (it learns the process and the
thread that fetch) and then fetches one segment at a time:

* :class:`LanSegments` — a local server over a LAN that is never the bottleneck (the
  memory-pressure study's set-up): a segment takes ``size / lan_mbps``;
* :class:`HttpSegments` — GET requests to ``server`` over :attr:`Phone.net` on one
  persistent connection (HTTP/1.1 keep-alive, as dash.js and ExoPlayer use), owned by the
  player's process and read by its network thread through the phone's receive path
  (:meth:`Phone.attach_network`): the segment is there when the app has read it.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Protocol

from mqoe.device.net import HttpClient, TcpConfig
from mqoe.engine import Event

if TYPE_CHECKING:
    from mqoe.device.cpu import Thread
    from mqoe.device.phone import Phone
    from mqoe.device.process import Process


class SegmentSource(Protocol):
    def open(self, phone: Phone, process: Process, thread: Thread) -> None:
        """Bind to the fetching app (once, when the player starts)."""
        ...

    def fetch(self, nbytes: int) -> Generator[Event, object, object]:
        """Bring one segment of ``nbytes`` into the app (a process step); returns what
        the fetch learnt (an HTTP response) or None."""
        ...


class LanSegments:
    """A LAN that is never the bottleneck: ``nbytes`` arrive after ``nbytes / rate``."""

    def __init__(self, lan_mbps: float = 100.0) -> None:
        if not lan_mbps > 0:
            raise ValueError(f"lan_mbps must be positive, got {lan_mbps}")
        self.lan_mbps = lan_mbps
        self._phone: Phone | None = None

    def open(self, phone: Phone, process: Process, thread: Thread) -> None:
        self._phone = phone

    def fetch(self, nbytes: int) -> Generator[Event, object, None]:
        assert self._phone is not None, "open() the source first"
        yield self._phone.env.timeout(max(1, round(nbytes * 8 / (self.lan_mbps * 1e6) * 1e9)))


class HttpSegments:
    """HTTP GETs to ``server`` on the phone's network (module docstring)."""

    def __init__(self, server: str, cfg: TcpConfig | None = None, host: str = "phone") -> None:
        self.server = server
        self.cfg = cfg or TcpConfig()
        self.host = host
        self.http: HttpClient | None = None

    def open(self, phone: Phone, process: Process, thread: Thread) -> None:
        self.http = HttpClient(phone.net, self.server, self.host, self.cfg, owner=(process, thread))

    def fetch(self, nbytes: int) -> Generator[Event, object, object]:
        """The GET; returns its :class:`~mqoe.device.net.Response`."""
        assert self.http is not None, "open() the source first"
        response = yield self.http.get(nbytes)
        return response
