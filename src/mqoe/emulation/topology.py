"""The testbed's network: four namespaces, three veth pairs, a tbf bottleneck, a TUN hop.

::

    video server (srv) ──veth──┐
                                router (rtr) ──veth, tbf egress──> client (cli)
    competitor  (cmp) ──veth──┘      │
                                     └─ every packet entering the router is routed into a
                                        TUN device, held by the delay line, written back

Every namespace carries a per-run tag with its owner (pid and start time, see
:mod:`mqoe.emulation.owner`), and every veth the owner's pid and the run's number, so a
later run (or ``mqoe testbed cleanup``) can remove what a killed run left behind without
ever touching a live run's network or anything that is not ours. Only private addresses
inside these namespaces are used; nothing is routed to the host's interfaces.

Offloads are switched off on every veth (TSO, GSO, GRO, via the ethtool ioctl, since the
``ethtool`` program may be missing) so tbf sees MTU-sized packets, as on a real router.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import re
import shutil
import socket
import struct
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mqoe.emulation.owner import Owner, remove_dead_run_folders
from mqoe.errors import UserError

NS_PREFIX = "mqoe-tb-"  # every namespace of ours starts with this
LINK_PREFIX = "mtb"  # every veth of ours starts with this (15-character limit on names)
ROLES = ("cli", "rtr", "srv", "cmp")
TUN_NAME = "tbdelay0"  # lives only inside the router namespace
DELAY_TABLE = 100  # router policy-routing table that sends arriving packets to the TUN
MTU_BYTES = 1500
FRAME_BYTES = 1514  # an MTU packet with its Ethernet header, as tbf counts it

# Subnets inside our namespaces only (never routed anywhere else).
SUBNET = {"cli": "10.77.1", "srv": "10.77.2", "cmp": "10.77.3"}
CLIENT_ADDR = SUBNET["cli"] + ".2"
SERVER_ADDR = SUBNET["srv"] + ".2"
COMPETITOR_ADDR = SUBNET["cmp"] + ".2"

_LETTER = {"cli": "a", "srv": "s", "cmp": "k"}  # one letter per edge host in veth names
_COMMAND_TIMEOUT_S = 10.0
_counter = itertools.count()
# mqoe-tb-<owner>-<run>-<role>; the owner is <pid>.<start> (<pid> in older names)
_NS_PATTERN = re.compile(
    r"^mqoe-tb-(?P<owner>\d+(?:\.\d+)?)-(?:(?P<run>[0-9a-f]+)-(?:cli|rtr|srv|cmp)|probe)$"
)
_LINK_PATTERN = re.compile(r"^mtb([0-9a-f]{1,6})x([0-9a-f]{1,2})[a-z]{2}$")

# linux/sockios.h and linux/ethtool.h: legacy per-feature set commands.
_SIOCETHTOOL = 0x8946
_ETHTOOL_STSO, _ETHTOOL_SGSO, _ETHTOOL_SGRO = 0x1F, 0x24, 0x2C


@dataclass(frozen=True)
class BottleneckSpec:
    rate_mbps: float  # tbf rate (wire bits, Ethernet header included)
    limit_bytes: int  # drop-tail: tbf's queue limit in bytes
    burst_bytes: int = 2 * FRAME_BYTES  # bucket depth: ~2 packets (measured setup, issue 9)


def ip(*args: str, netns: str | None = None, check: bool = True) -> str:
    """Run ``ip`` (optionally inside a namespace); raise on failure with its message."""
    cmd = ["ip", *(["-n", netns] if netns else []), *args]
    return _run(cmd, check)


def in_ns(netns: str, *cmd: str, check: bool = True) -> str:
    return _run(["ip", "netns", "exec", netns, *cmd], check)


def _run(cmd: Sequence[str], check: bool) -> str:
    proc = subprocess.run(
        list(cmd), capture_output=True, text=True, timeout=_COMMAND_TIMEOUT_S, check=False
    )
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {proc.stderr.strip() or proc.returncode}")
    return proc.stdout


def require_testbed() -> None:
    """Raise one clear UserError unless we are root on Linux with ip, tc and namespaces."""
    why = _unavailable_reason()
    if why:
        raise UserError(f"mqoe testbed needs root on Linux with network namespaces: {why}")


def unavailable_reason() -> str:
    """Empty when the testbed can run here; otherwise why not (for skips and errors)."""
    return _unavailable_reason()


def _unavailable_reason() -> str:
    if not Path("/proc/self/ns/net").exists():
        return "this is not Linux (no /proc/self/ns/net)"
    if os.geteuid() != 0:
        return "not running as root"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return f"the {tool!r} program (iproute2) is not installed"
    if not Path("/dev/net/tun").exists():
        return "/dev/net/tun is missing (the delay line needs TUN)"
    probe = f"{NS_PREFIX}{Owner.current().tag}-probe"  # a kill here leaves a dead run's name
    proc = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True,
                          timeout=_COMMAND_TIMEOUT_S, check=False)  # fmt: skip
    if proc.returncode != 0:
        return f"cannot create a network namespace ({proc.stderr.strip()})"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True,
                   timeout=_COMMAND_TIMEOUT_S, check=False)  # fmt: skip
    return ""


def _disable_offloads(dev: str) -> None:
    """TSO, GSO and GRO off on a device of the current namespace (ethtool -K DEV … off)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for cmd in (_ETHTOOL_STSO, _ETHTOOL_SGSO, _ETHTOOL_SGRO):
            value = bytearray(struct.pack("II", cmd, 0))
            addr = struct.unpack("Q", struct.pack("P", _buffer_address(value)))[0]
            ifreq = struct.pack("16sQ", dev.encode(), addr)
            fcntl.ioctl(sock.fileno(), _SIOCETHTOOL, ifreq)


def _buffer_address(buf: bytearray) -> int:
    import ctypes

    return ctypes.addressof((ctypes.c_char * len(buf)).from_buffer(buf))


class Topology:
    """Create (``up``) and always remove (``down``) one run's namespaces and links.

    Use as a context manager; ``down`` is idempotent and also runs on errors and Ctrl-C.
    """

    def __init__(self, bottleneck: BottleneckSpec, *, owner: Owner | None = None) -> None:
        self.bottleneck = bottleneck
        self.owner = Owner.current() if owner is None else owner
        self.run_no = next(_counter) % 256
        self.tag = f"{self.owner.tag}-{self.run_no:x}"
        self.ns = {role: f"{NS_PREFIX}{self.tag}-{role}" for role in ROLES}
        link_tag = f"{LINK_PREFIX}{_link_key(self.owner.pid, self.run_no)}"
        # veth pair per edge host: "<tag>c?" in the host, "<tag>?r" in the router
        self.host_dev = {role: f"{link_tag}{_LETTER[role]}h" for role in _LETTER}
        self.router_dev = {role: f"{link_tag}{_LETTER[role]}r" for role in _LETTER}
        self._up = False

    def __enter__(self) -> Topology:
        self.up()
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()

    # --- lifecycle ---------------------------------------------------------------------

    def up(self) -> None:
        self._up = True  # from here on, down() must run whatever happens
        try:
            # All namespaces before any veth: cleanup() relies on it to tell a live
            # run's half-built veths from a dead run's.
            for role in ROLES:
                ip("netns", "add", self.ns[role])
                ip("link", "set", "lo", "up", netns=self.ns[role])
            for role in ("cli", "srv", "cmp"):
                self._edge(role)
            self._router()
        except BaseException:
            self.down()
            raise

    def _edge(self, role: str) -> None:
        host, rtr = self.host_dev[role], self.router_dev[role]
        ip("link", "add", host, "type", "veth", "peer", "name", rtr)
        for dev in (host, rtr):
            _disable_offloads(dev)  # features survive the move into the namespace
            ip("link", "set", dev, "mtu", str(MTU_BYTES))
        ip("link", "set", host, "netns", self.ns[role])
        ip("link", "set", rtr, "netns", self.ns["rtr"])
        net = SUBNET[role]
        ip("addr", "add", f"{net}.2/24", "dev", host, netns=self.ns[role])
        ip("link", "set", host, "up", netns=self.ns[role])
        ip("route", "add", "default", "via", f"{net}.1", netns=self.ns[role])
        ip("addr", "add", f"{net}.1/24", "dev", rtr, netns=self.ns["rtr"])
        ip("link", "set", rtr, "up", netns=self.ns["rtr"])

    def _router(self) -> None:
        ns = self.ns["rtr"]
        for key, value in (
            ("net.ipv4.ip_forward", "1"),
            ("net.ipv4.conf.all.rp_filter", "0"),
            ("net.ipv4.conf.default.rp_filter", "0"),
        ):
            self.sysctl("rtr", key, value)
        ip("tuntap", "add", "dev", TUN_NAME, "mode", "tun", netns=ns)
        ip("link", "set", TUN_NAME, "mtu", str(MTU_BYTES), "up", netns=ns)
        self.sysctl("rtr", f"net.ipv4.conf.{TUN_NAME}.rp_filter", "0")
        ip("route", "add", "default", "dev", TUN_NAME, "table", str(DELAY_TABLE), netns=ns)
        for role in ("cli", "srv", "cmp"):
            ip("rule", "add", "iif", self.router_dev[role], "lookup", str(DELAY_TABLE),
               "pref", "100", netns=ns)  # fmt: skip
        b = self.bottleneck
        _run(["tc", "-n", ns, "qdisc", "add", "dev", self.router_dev["cli"], "root", "tbf",
              "rate", f"{b.rate_mbps * 1000:.3f}kbit", "burst", str(b.burst_bytes),
              "limit", str(b.limit_bytes)], check=True)  # fmt: skip

    def down(self) -> None:
        if not self._up:
            return
        _remove_namespaces([self.ns[r] for r in ROLES])
        for dev in self.host_dev.values():  # only left in the root namespace mid-setup
            ip("link", "del", dev, check=False)
        self._up = False

    # --- per-namespace settings ---------------------------------------------------------

    def sysctl(self, role: str, key: str, value: str, *, check: bool = True) -> None:
        path = "/proc/sys/" + key.replace(".", "/")
        in_ns(self.ns[role], "sh", "-c", f"echo {value} > {path}", check=check)

    def set_route_options(self, role: str, **options: int) -> None:
        """Per-route TCP options on the default route (``initcwnd``, ``quickack`` …)."""
        net = SUBNET[role]
        extra = [str(x) for kv in options.items() for x in kv]
        ip("route", "replace", "default", "via", f"{net}.1", *extra, netns=self.ns[role])

    def tcp_counters(self, role: str) -> dict[str, int]:
        """The namespace's Linux TCP counters (``/proc/net/netstat`` TcpExt and
        ``/proc/net/snmp`` Tcp, as ``nstat`` shows them): timeouts, loss probes, …"""
        counters: dict[str, int] = {}
        for table in ("netstat", "snmp"):
            lines = in_ns(self.ns[role], "cat", f"/proc/net/{table}").splitlines()
            for names, values in zip(lines[::2], lines[1::2], strict=False):
                prefix, _, keys = names.partition(":")
                if prefix not in ("TcpExt", "Tcp"):
                    continue
                for key, value in zip(keys.split(), values.partition(":")[2].split(), strict=False):
                    counters[f"{prefix}{key}"] = int(value)
        return counters

    def qdisc_stats(self) -> dict[str, int]:
        """The bottleneck's counters: packets sent, dropped and overlimits."""
        text = _run(["tc", "-s", "-n", self.ns["rtr"], "qdisc", "show", "dev",
                     self.router_dev["cli"]], check=True)  # fmt: skip
        match = re.search(r"Sent (\d+) bytes (\d+) pkt \(dropped (\d+), overlimits (\d+)", text)
        if not match:
            return {}
        sent, pkts, dropped, over = (int(x) for x in match.groups())
        return {"sent_bytes": sent, "sent_packets": pkts, "dropped": dropped, "overlimits": over}


def _remove_namespaces(names: Sequence[str]) -> None:
    """Stop the processes inside each namespace (by pid: they are ours), then delete it."""
    existing = set(list_namespaces())
    for name in names:
        if name not in existing:
            continue
        for pid in ip("netns", "pids", name, check=False).split():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), 9)
        ip("netns", "del", name, check=False)


def list_namespaces() -> list[str]:
    return [line.split()[0] for line in ip("netns", "list", check=False).splitlines() if line]


def cleanup(*, include_live: bool = False) -> list[str]:
    """Remove what dead testbed runs left: namespaces (with the processes inside, and so
    their veths and qdiscs), veths left in this namespace mid-setup, and run folders.

    Only names with our prefixes are touched, and by default only those whose owner
    process is gone (see :mod:`mqoe.emulation.owner`); ``include_live`` also removes live
    runs'. Returns what was removed.
    """
    # Links first: a veth exists only after its run's namespaces (see Topology.up), so a
    # live run's veth seen here has its namespaces in the list taken after it.
    links = _our_links()
    live: set[str] = set()
    removed: list[str] = []
    for name in list_namespaces():
        match = _NS_PATTERN.match(name)
        owner = Owner.from_tag(match.group("owner")) if match else None
        if match is None or owner is None:
            continue
        if not include_live and owner.alive():
            live.add(_link_key(owner.pid, int(match.group("run") or "0", 16)))
            continue
        _remove_namespaces([name])
        removed.append(name)
    for dev, key in links.items():
        if include_live or key not in live:
            ip("link", "del", dev, check=False)
            removed.append(dev)
    return removed + remove_dead_run_folders(include_live=include_live)


def _link_key(pid: int, run_no: int) -> str:
    # veth names keep the pid's low 24 bits (pids above 2**22 do not occur on Linux)
    return f"{pid % (1 << 24):x}x{run_no:x}"


def _our_links() -> dict[str, str]:
    """Our veths in this namespace, with the key (owner pid, run number) in their name."""
    found = {}
    for line in ip("-o", "link", "show", check=False).splitlines():
        fields = line.split(":")
        if len(fields) < 2:
            continue
        dev = fields[1].strip().split("@")[0]
        match = _LINK_PATTERN.match(dev)
        if match:
            found[dev] = f"{match.group(1)}x{match.group(2)}"
    return found
