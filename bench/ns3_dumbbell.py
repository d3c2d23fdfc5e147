"""ns-3's side of the two-flow dumbbell (``peers.Dumbbell``), run by ``bench/peers.py``
with the optional bench environment's interpreter (``make bench-env``: ns-3 from PyPI,
whose Python bindings are cppyy's): ``.venv-bench/bin/python bench/ns3_dumbbell.py SPEC``.

SPEC is the dumbbell as JSON. Two BulkSend applications (servers b and c) send TCP CUBIC
through a router to packet sinks on the client; the bottleneck router → client is a
drop-tail queue of ``queue_bytes`` on the device (its traffic-control queue disc removed,
as mqoe's link has none). Prints one JSON line: simulated seconds per wall second of
``Simulator::Run`` (setup and cppyy's compilation excluded, as on mqoe's side) and the
flows' goodput. Exits with status 3 when ns-3 cannot be imported.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

NS3_MISSING_EXIT = 3  # peers.NS3_MISSING_EXIT
PORT = 5000


def _link(ns: Any, a: Any, b: Any, rate_mbps: float, delay_ms: float, queue_bytes: int) -> Any:
    helper = ns.PointToPointHelper()
    helper.SetDeviceAttribute("DataRate", ns.StringValue(f"{rate_mbps}Mbps"))
    helper.SetChannelAttribute("Delay", ns.StringValue(f"{delay_ms}ms"))
    helper.SetQueue("ns3::DropTailQueue", "MaxSize", ns.StringValue(f"{queue_bytes}B"))
    return helper.Install(a, b)


def run(spec: dict[str, Any]) -> dict[str, float]:
    from ns import ns

    segment = int(spec["mss_bytes"])
    ns.Config.SetDefault("ns3::TcpL4Protocol::SocketType", ns.StringValue("ns3::TcpCubic"))
    ns.Config.SetDefault("ns3::TcpSocket::SegmentSize", ns.UintegerValue(segment))
    ns.Config.SetDefault("ns3::TcpSocket::InitialCwnd", ns.UintegerValue(10))
    # No timestamp option: 12 more header bytes would take a 1460-byte segment past the
    # 1500-byte MTU (IP fragments), and mqoe's packets are 1460 + 40 bytes.
    ns.Config.SetDefault("ns3::TcpSocketBase::Timestamp", ns.BooleanValue(False))
    for buffer in ("SndBufSize", "RcvBufSize"):
        ns.Config.SetDefault(f"ns3::TcpSocket::{buffer}", ns.UintegerValue(spec["buffer_bytes"]))
    nodes = ns.NodeContainer()
    nodes.Create(4)
    b, c, router, client = (nodes.Get(i) for i in range(4))
    ns.InternetStackHelper().Install(nodes)
    hop_ms = spec["rtt_ms"] / 4
    access = [_link(ns, s, router, spec["access_mbps"], hop_ms, 1 << 24) for s in (b, c)]
    bottleneck = _link(ns, router, client, spec["rate_mbps"], hop_ms, spec["queue_bytes"])
    addresses = ns.Ipv4AddressHelper()
    for i, devices in enumerate([*access, bottleneck]):
        addresses.SetBase(ns.Ipv4Address(f"10.1.{i + 1}.0"), ns.Ipv4Mask("255.255.255.0"))
        interfaces = addresses.Assign(devices)
    client_address = interfaces.GetAddress(1)
    # Assign installed the default root queue disc (FqCoDel) on every device; the
    # bottleneck's queue is its device's drop-tail queue instead, as mqoe's link has.
    ns.TrafficControlHelper().Uninstall(bottleneck)
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()

    stop = ns.Seconds(spec["sim_seconds"])
    sinks = []
    for i, server in enumerate((b, c)):
        port = PORT + i
        any_address = ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port).ConvertTo()
        sink_apps = ns.PacketSinkHelper("ns3::TcpSocketFactory", any_address).Install(client)
        sinks.append(sink_apps.Get(0))
        remote = ns.InetSocketAddress(client_address, port).ConvertTo()
        send = ns.BulkSendHelper("ns3::TcpSocketFactory", remote)
        send.SetAttribute("MaxBytes", ns.UintegerValue(0))  # endless, as mqoe's BulkFlow
        send.SetAttribute("SendSize", ns.UintegerValue(segment))
        send.Install(server).Start(ns.Seconds(0))
    ns.Simulator.Stop(stop)
    start = time.perf_counter()
    ns.Simulator.Run()
    wall = time.perf_counter() - start
    received = sum(int(ns.DynamicCast[ns.PacketSink](s).GetTotalRx()) for s in sinks)
    ns.Simulator.Destroy()
    return {
        "sim_s_per_wall_s": spec["sim_seconds"] / wall,
        "goodput_mbps": received * 8 / spec["sim_seconds"] / 1e6,
    }


def main() -> None:
    spec = json.loads(sys.argv[1])
    try:
        import ns  # noqa: F401
    except ImportError:
        sys.exit(NS3_MISSING_EXIT)
    print(json.dumps(run(spec)))


if __name__ == "__main__":
    main()
