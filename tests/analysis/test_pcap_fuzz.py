"""The shared mutation fuzzer (``tests/fuzzing.py``) on ``read_capture`` and on the
command: generated pcap and pcapng seeds (Ethernet, SLL, SLL2, raw IP; IPv4 and IPv6;
cut by a snap length) must read or fail with one user error naming the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqoe.analysis.pcap.capture import read_capture
from mqoe.generators.pcap import synth_pcap
from tests.fuzzing import DEEP_INPUTS, QUICK_INPUTS, fuzz

_SEEDS = {
    ".pcap": [
        {"fmt": "pcap", "link": "ethernet"},
        {"fmt": "pcap-ns", "link": "sll", "ipv6": True},
        {"fmt": "pcap", "link": "raw", "snaplen": 90},
    ],
    ".pcapng": [
        {"fmt": "pcapng", "link": "sll2"},
        {"fmt": "pcapng", "link": "ethernet", "ipv6": True, "snaplen": 120},
    ],
}


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[bytes]]:
    folder = tmp_path_factory.mktemp("pcap-seeds")
    made: dict[str, list[bytes]] = {}
    for suffix, variants in _SEEDS.items():
        made[suffix] = []
        for i, kw in enumerate(variants):
            path = folder / f"seed{i}{suffix}"
            synth_pcap(path, seed=i, fg_bytes=2500, bg_bytes=4000, mss=500, **kw)  # type: ignore[arg-type]
            made[suffix].append(path.read_bytes())
    return made


def _target(path: Path) -> None:
    report = read_capture(path, bin_ms=50)
    flows = report.flows
    assert (flows["bytes_received"] >= 0).all()
    assert (flows["retransmitted_bytes"] <= flows["payload_bytes"]).all()
    assert (flows["last_s"] >= flows["first_s"]).all()
    report.summary()


@pytest.mark.parametrize("suffix", [".pcap", ".pcapng"])
def test_fuzz_quick(tmp_path: Path, seeds: dict[str, list[bytes]], suffix: str) -> None:
    counts = fuzz(_target, seeds[suffix], tmp_path, QUICK_INPUTS, seed=1, suffix=suffix)
    assert counts["accepted"] > 0
    assert counts["user_errors"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".pcap", ".pcapng"])
def test_fuzz_deep(tmp_path: Path, seeds: dict[str, list[bytes]], suffix: str) -> None:
    counts = fuzz(_target, seeds[suffix], tmp_path, DEEP_INPUTS, seed=2, suffix=suffix)
    assert counts["accepted"] > 0
    assert counts["user_errors"] > 0
