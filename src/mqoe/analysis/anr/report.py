"""From files to a cluster report: per-event summaries, root-cause families, clusters,
nearest/furthest samples and the Zipf fit of events per app (steps 1–5 of the root-cause
pipeline of the Android responsiveness study, "Aging or Glitching?", MobiCom 2020)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from mqoe.analysis.anr.cluster import Clustering, cluster_events, encode, pair_similarity
from mqoe.analysis.anr.events import FAMILIES, EventSummary, FloatArray
from mqoe.errors import UserError
from mqoe.metrics.zipf import ZipfFit, fit_zipf

# -- the report ------------------------------------------------------------------------


@dataclass
class AnrReport:
    """Tables of the analysis (tidy DataFrames) plus the clustering and the Zipf fit.

    ``tables``: ``events`` (one row per file), ``clusters`` (one row per cluster),
    ``samples`` (nearest/furthest samples per cluster), ``apps`` (ANR events per app,
    ranked; watchdog kills — SNRs of ``system_server`` — are left out, as is the Zipf
    fit, which is over this table).
    """

    tables: dict[str, pd.DataFrame]
    events: Sequence[EventSummary]
    clustering: Clustering
    zipf: ZipfFit
    representatives: dict[int, tuple[str, ...]]

    def to_json(self) -> dict[str, Any]:
        clusters = self.tables["clusters"]
        return {
            "events": [
                {
                    "file": e.file,
                    "pid": e.pid,
                    "process": e.process,
                    "blocked_thread": e.blocked_thread,
                    "critical_threads": list(e.critical_threads),
                    "critical_processes": list(e.critical_processes),
                    "deadlock": e.deadlock,
                    "wait_for_length": e.wait_for_length,
                    "path": e.path,
                    "family": e.family,
                    "source": e.source,
                    "stacks_missing": e.stacks_missing,
                    "threads_without_stack": e.threads_without_stack,
                    "cluster": label,
                }
                for e, label in zip(self.events, self.clustering.labels.tolist(), strict=True)
            ],
            "clusters": [
                {
                    "id": int(r["cluster"]),
                    "size": int(r["size_events"]),
                    "family": r["family"],
                    "representative": list(self.representatives[int(r["cluster"])]),
                    "representative_file": r["representative_file"],
                    "unique_vectors": int(r["unique_vectors"]),
                    "apps": int(r["apps"]),
                }
                for r in clusters.to_dict("records")
            ],
            "zipf": {
                "a": _finite(self.zipf.a),
                "b": _finite(self.zipf.b),
                "r2": _finite(self.zipf.r2),
                "apps": self.zipf.n,
            },
            "method": self.clustering.method,
            "threshold": self.clustering.threshold,
        }


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _majority(families: list[str]) -> str:
    counts = Counter(families)
    return max(FAMILIES, key=lambda f: (counts.get(f, 0), -FAMILIES.index(f)))


def analyze(
    events: Sequence[EventSummary],
    *,
    threshold: float = 0.95,
    method: str = "fast",
    k: int = 5,
) -> AnrReport:
    """Cluster ``events`` and build the report tables (see :class:`AnrReport`).

    Each cluster's representative is its most common feature vector (ties: the first
    seen), shown as the normalised critical stack of its first event. The ``k`` nearest
    and ``k`` furthest samples are the cluster's other distinct feature vectors ranked by
    similarity to the representative (each shown by its first event's file, with how
    many events share it).
    """
    if k < 0:
        raise UserError(f"k must be ≥ 0, got {k}")
    features = [e.features for e in events]
    clustering = cluster_events(features, threshold, method)
    enc = encode(features)
    uid = enc.event_uid
    labels = clustering.labels
    first_event: dict[int, int] = {}
    for i, u in enumerate(uid.tolist()):
        first_event.setdefault(u, i)
    cluster_rows: list[dict[str, Any]] = []
    sample_rows: list[dict[str, Any]] = []
    representatives: dict[int, tuple[str, ...]] = {}
    rep_similarity = np.ones(len(events), dtype=np.float64)
    members_of = np.argsort(labels, kind="stable")
    bounds = np.searchsorted(labels[members_of], np.arange(clustering.n_clusters + 1))
    for c in range(clustering.n_clusters):
        members = members_of[bounds[c] : bounds[c + 1]]
        uids, first_index, mult = np.unique(uid[members], return_index=True, return_counts=True)
        best = np.lexsort((first_index, -mult))[0]
        rep = int(uids[best])
        sims = pair_similarity(enc, np.full(len(uids), rep), uids)
        by_uid = dict(zip(uids.tolist(), sims.tolist(), strict=True))
        rep_similarity[members] = [by_uid[u] for u in uid[members].tolist()]
        rep_event = events[first_event[rep]]
        representatives[c] = rep_event.stack
        others = [j for j in range(len(uids)) if j != best]
        near = sorted(others, key=lambda j: (-sims[j], first_index[j]))[:k]
        far = sorted(others, key=lambda j: (sims[j], first_index[j]))[:k]
        for role, chosen in (("nearest", near), ("furthest", far)):
            for rank, j in enumerate(chosen, start=1):
                sample = events[first_event[int(uids[j])]]
                sample_rows.append(
                    {
                        "cluster": c,
                        "role": role,
                        "rank": rank,
                        "file": sample.file,
                        "process": sample.process,
                        "similarity": float(sims[j]),
                        "events_with_vector": int(mult[j]),
                    }
                )
        member_events = [events[i] for i in members.tolist()]
        member_apps = Counter(e.process for e in member_events)
        cluster_rows.append(
            {
                "cluster": c,
                "size_events": len(members),
                "share": len(members) / len(events),
                "family": _majority([e.family for e in member_events]),
                "unique_vectors": len(uids),
                "apps": len(member_apps),
                "top_app": member_apps.most_common(1)[0][0],
                "representative_file": rep_event.file,
                "representative_stack": "\n".join(rep_event.stack),
            }
        )
    events_frame = _events_frame(events, labels, rep_similarity)
    app_counts = Counter(e.process for e in events if not e.watchdog)  # SNRs are no app's ANR
    apps = sorted(app_counts.items(), key=lambda kv: (-kv[1], kv[0]))
    apps_frame = pd.DataFrame(
        {
            "app": [a for a, _ in apps],
            "events": [n for _, n in apps],
            "rank": np.arange(1, len(apps) + 1),
        }
    )
    tables = {
        "events": events_frame,
        "clusters": pd.DataFrame(cluster_rows, columns=_CLUSTER_COLUMNS),
        "samples": pd.DataFrame(sample_rows, columns=_SAMPLE_COLUMNS),
        "apps": apps_frame,
    }
    return AnrReport(tables, events, clustering, fit_zipf([n for _, n in apps]), representatives)


_CLUSTER_COLUMNS = [
    "cluster", "size_events", "share", "family", "unique_vectors", "apps", "top_app",
    "representative_file", "representative_stack",
]  # fmt: skip
_SAMPLE_COLUMNS = [
    "cluster", "role", "rank", "file", "process", "similarity", "events_with_vector",
]  # fmt: skip


def _events_frame(
    events: Sequence[EventSummary], labels: npt.NDArray[np.int64], rep_similarity: FloatArray
) -> pd.DataFrame:
    frame = pd.DataFrame(
        {
            "file": [e.file for e in events],
            "pid": [e.pid for e in events],
            "process": [e.process for e in events],
            "time": [e.time for e in events],
            "blocked_thread": [e.blocked_thread for e in events],
            "critical_threads": [";".join(e.critical_threads) for e in events],
            "critical_processes": [";".join(e.critical_processes) for e in events],
            "critical_state": [e.critical_state for e in events],
            "deadlock": [e.deadlock for e in events],
            "wait_for_length": [e.wait_for_length for e in events],
            "path": [e.path for e in events],
            "watchdog": [e.watchdog for e in events],
            "family": [e.family for e in events],
            "cluster": labels,
            "similarity_to_representative": rep_similarity,
            "parse_warnings": [sum(n for _, n in e.warnings) for e in events],
            "source": [e.source for e in events],
            "stacks_missing": [e.stacks_missing for e in events],
            "threads_without_stack": [e.threads_without_stack for e in events],
        }
    )
    return frame
