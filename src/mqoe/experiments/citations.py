"""The works mqoe reproduces, cited once: what ``comparison.md``/``.csv`` name as the
source of a published value, figure legends, summaries and the documentation.

Only what is certain is given: where an author list or a title is not stated, the
citation says what the work is instead of inventing one.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Citation:
    short: str  # in a table's source column or a legend: "Huang et al., IMC 2012"
    full: str  # in a summary or on the work's documentation page


CITATIONS: dict[str, Citation] = {
    "coal-not-diamonds": Citation(
        "Coal Not Diamonds, CoNEXT 2022",
        '"Coal Not Diamonds: How Memory Pressure Falters Mobile Video QoE", ACM CoNEXT 2022',
    ),
    "gpu-buffers": Citation(
        "GPU-buffer compression, 2015",
        "compressing background apps' GPU buffers to cache more apps (an embedded-systems "
        "paper of 2015; Nexus 5, Android 4.4)",
    ),
    "downward-spiral": Citation(
        "Huang et al., IMC 2012",
        "Te-Yuan Huang, Nikhil Handigol, Brandon Heller, Nick McKeown and Ramesh Johari, "
        '"Confused, Timid, and Unstable: Picking a Video Streaming Rate is Hard", ACM IMC '
        "2012, and its Stanford CS244 reproduction in Mininet",
    ),
    "aging-glitching": Citation(
        "Li et al., MobiCom 2020",
        'Mingliang Li et al., "Experience: Aging or Glitching? Why Does Android Stop '
        'Responding and What Can We Do About It?", ACM MobiCom 2020 (extended in IEEE TMC)',
    ),
    "netpis": Citation(
        "NetPIS, 2015",
        "NetPIS: receiver-side network performance isolation for the foreground app of a "
        "smartphone (2015; Galaxy Nexus, Android 4.3)",
    ),
    "pressure-meets-network": Citation(
        "mqoe cross-resource study",
        "a study of mqoe's own, joining the set-ups of Coal Not Diamonds (ACM CoNEXT 2022) "
        "and Huang et al. (ACM IMC 2012); no published measurement exists",
    ),
}
