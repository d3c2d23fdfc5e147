"""The network: links with drop-tail queues, packet-level TCP, HTTP exchanges, bulk flows.

See :mod:`mqoe.device.net.tcp` for what the TCP model does (and does not) implement.
"""

from mqoe.device.net.link import HEADER_BYTES, Link, Packet
from mqoe.device.net.network import BulkFlow, Connection, HttpClient, Network, Response
from mqoe.device.net.stack import NetStack, NetStackSpec, Socket
from mqoe.device.net.tcp import TcpSender
from mqoe.device.net.tcp_config import TcpConfig
from mqoe.device.net.tcp_receiver import TcpReceiver
from mqoe.device.net.wifi import WifiInterface, WifiMedium

__all__ = [
    "HEADER_BYTES",
    "BulkFlow",
    "Connection",
    "HttpClient",
    "Link",
    "NetStack",
    "NetStackSpec",
    "Network",
    "Packet",
    "Response",
    "Socket",
    "TcpConfig",
    "TcpReceiver",
    "TcpSender",
    "WifiInterface",
    "WifiMedium",
]
