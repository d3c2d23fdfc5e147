"""The unit of every metric, in one place: ``unit_of("rate_alone_kbps") == "kbit/s"``.

A metric's name says its unit by its suffix (``_kbps`` kbit/s, ``_s`` seconds, ``_pct``
percent, …: :data:`SUFFIXES`, longest first); the few names whose unit the suffix does
not give are listed in :data:`NAMED`. ``metrics.csv`` rows take their unit from here,
so the same metric has the same unit in every reproduction, the simulator's and the
testbed's alike.
"""

from __future__ import annotations

# Names whose unit their suffix does not say.
NAMED: dict[str, str] = {
    "jain_index": "ratio",
    "video_retransmits": "segments",
    "competitor_retransmits": "segments",
    "bottleneck_drops": "packets",
    "write_amplification": "x",
    "rcvbuf_mb": "MiB",  # SO_RCVBUF sizes are binary
    "fg_bytes_at_60s": "bytes",
    "fg_bytes_at_60s_sd": "bytes",
    "fg_bytes_total": "bytes",
    "bg_bytes_total": "bytes",
    "service_s_alone": "s",
    "service_s_netpis": "s",
    "trim_rounds": "rounds",
    "switch_count": "switches",
    "rebuffer_count": "stalls",
    "segments": "segments",
}

# Suffix → unit; the longest matching suffix wins.
SUFFIXES: dict[str, str] = {
    "_kbps": "kbit/s",
    "_mbps": "MB/s",
    "_bytes": "bytes",
    "_pct": "%",
    "_ms": "ms",
    "_ns": "ns",
    "_s": "s",
    "_kb": "KB",
    "_mb": "MB",
    "_gb": "GB",
    "_j": "J",
    "_mw": "mW",
    "_hz": "Hz",
    "_pages": "pages",
}


def unit_of(metric: str) -> str:
    """The unit of ``metric``; KeyError for a name no rule covers (add it to NAMED)."""
    if metric in NAMED:
        return NAMED[metric]
    for suffix in sorted(SUFFIXES, key=len, reverse=True):
        if metric.endswith(suffix):
            return SUFFIXES[suffix]
    raise KeyError(f"no unit known for metric {metric!r}: add it to mqoe.metrics.units.NAMED")
