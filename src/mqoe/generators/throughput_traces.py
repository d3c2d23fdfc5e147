"""Synthetic video manifests (constant bitrate), for tests, demos and benchmarks."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mqoe.analysis.throughput_traces.model import VideoManifest
from mqoe.errors import UserError
from mqoe.policies.abr.base import Representation


def synthetic_manifest(
    bitrates_kbps: Sequence[float], segment_s: float, n_segments: int
) -> VideoManifest:
    """A constant-bitrate manifest: every segment is ``bitrate × segment_s`` bits."""
    if n_segments < 1:
        raise UserError(f"a manifest needs at least one segment, got {n_segments}")
    try:
        ladder = tuple(Representation(float(rate)) for rate in bitrates_kbps)
        row = [round(rep.bitrate_kbps * 1000 * segment_s) for rep in ladder]
        return VideoManifest(float(segment_s), ladder, np.tile(np.array(row), (n_segments, 1)))
    except (ValueError, OverflowError) as exc:
        raise UserError(f"synthetic manifest: {exc}") from None
