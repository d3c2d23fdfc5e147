"""Real throughput traces and video manifests, parsed by content into one shape
(formats: :mod:`mqoe.analysis.throughput_traces.parse`)."""

from mqoe.analysis.throughput_traces.model import (
    FORMATS,
    MAHIMAHI_PACKET_BITS,
    ThroughputTrace,
    TraceFormat,
    VideoManifest,
)
from mqoe.analysis.throughput_traces.read import load_manifest, load_trace
from mqoe.analysis.throughput_traces.write import write_trace

__all__ = [
    "FORMATS",
    "MAHIMAHI_PACKET_BITS",
    "ThroughputTrace",
    "TraceFormat",
    "VideoManifest",
    "load_manifest",
    "load_trace",
    "write_trace",
]
