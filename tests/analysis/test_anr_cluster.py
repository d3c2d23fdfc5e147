"""Clustering (fast == exact all-pairs), the cluster report and the Zipf fit."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqoe.analysis.anr import (
    EventSummary,
    Features,
    analyze,
    cluster_events,
    parse_anr_text,
    similarity,
    summarize,
)
from mqoe.analysis.anr.cluster import canonical_labels
from mqoe.errors import UserError
from mqoe.generators.anr.event import synth_anr
from mqoe.generators.anr.fleet import app_names
from mqoe.generators.anr.scenarios import FAMILY_VARIANTS


def _components_by_hand(features: list[Features], threshold: float) -> list[set[int]]:
    """Connected components of "similarity ≥ threshold", by plain Python (the definition)."""
    n = len(features)
    seen: set[int] = set()
    comps = []
    for start in range(n):
        if start in seen:
            continue
        comp, todo = {start}, [start]
        while todo:
            i = todo.pop()
            for j in range(n):
                if j not in comp and similarity(features[i], features[j]) >= threshold:
                    comp.add(j)
                    todo.append(j)
        seen |= comp
        comps.append(comp)
    return comps


def _as_sets(labels: np.ndarray) -> set[frozenset[int]]:
    return {frozenset(np.flatnonzero(labels == c).tolist()) for c in np.unique(labels)}


@pytest.fixture(scope="module")
def pool() -> list[EventSummary]:
    """~200 generated events: every family and variant, several apps, random details."""
    rng = np.random.default_rng(2024)
    apps = app_names(4)
    events = []
    for _, (family, variants) in itertools.product(range(3), sorted(FAMILY_VARIANTS.items())):
        for variant in variants:
            for app in apps:
                text, _ = synth_anr(
                    rng, family, app, variant=variant, noise_threads=1, cpu_noise=0.2
                )
                events.append(summarize(parse_anr_text(text, f"synth{len(events)}")))
    return events


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    threshold=st.one_of(
        st.sampled_from([0.6, 0.8, 0.9, 0.95, 0.97, 0.99, 1.0]), st.floats(0.3, 1.0)
    ),
)
def test_fast_equals_exact_on_generated_mixtures(
    pool: list[EventSummary], data: st.DataObject, threshold: float
) -> None:
    families = sorted(FAMILY_VARIANTS)
    weights = data.draw(st.lists(st.integers(0, 5), min_size=4, max_size=4).filter(any))
    allowed = [e for e in pool if weights[families.index(e.family)] > 0]
    p = np.array([weights[families.index(e.family)] for e in allowed], dtype=float)
    size = data.draw(st.integers(50, 400))
    seed = data.draw(st.integers(0, 2**32 - 1))
    picks = np.random.default_rng(seed).choice(len(allowed), size=size, p=p / p.sum())
    features = [allowed[i].features for i in picks]  # repeats: duplicates, as in real data
    fast = cluster_events(features, threshold, "fast")
    exact = cluster_events(features, threshold, "exact")
    assert np.array_equal(fast.labels, exact.labels)
    assert np.array_equal(fast.sizes, exact.sizes)
    assert fast.candidate_pairs <= exact.candidate_pairs


@st.composite
def _near_threshold_features(draw: st.DrawFn) -> list[Features]:
    """Few generic items and terms, small counts: many pairs land near any threshold."""
    base = [
        Features.make(
            draw(st.sets(st.sampled_from("abcd"), max_size=3)),
            draw(st.dictionaries(st.sampled_from("uvwxyz"), st.integers(1, 4), max_size=5)),
        )
        for _ in range(draw(st.integers(1, 12)))
    ]
    return [base[i] for i in draw(st.lists(st.integers(0, len(base) - 1), min_size=1, max_size=40))]


@settings(max_examples=150, deadline=None)
@given(features=_near_threshold_features(), threshold=st.floats(0.05, 1.0))
def test_fast_and_exact_equal_the_definition(features: list[Features], threshold: float) -> None:
    by_hand = _components_by_hand(features, threshold)
    for method in ("fast", "exact"):
        result = cluster_events(features, threshold, method)
        assert _as_sets(result.labels) == {frozenset(c) for c in by_hand}
        assert result.n_clusters == len(by_hand)


def test_labels_are_ordered_by_size_then_first_event() -> None:
    labels, sizes = canonical_labels(np.array([7, 3, 3, 9, 7, 3, 9]))
    assert labels.tolist() == [1, 0, 0, 2, 1, 0, 2]
    assert sizes.tolist() == [3, 2, 2]


def test_duplicates_always_cluster_and_threshold_is_checked() -> None:
    a = Features.make({"x"}, {"t": 1})
    b = Features.make({"y"}, {"u": 2})
    result = cluster_events([a, b, a, a, b], 1.0)
    assert result.labels.tolist() == [0, 1, 0, 0, 1]
    assert result.n_unique == 2
    for bad in (0.0, -1.0, 1.5):
        with pytest.raises(UserError, match="threshold"):
            cluster_events([a], bad)
    with pytest.raises(UserError, match="method"):
        cluster_events([a], 0.9, "magic")


def test_report_clusters_representatives_and_samples(pool: list[EventSummary]) -> None:
    report = analyze(pool, k=2)
    clusters = report.tables["clusters"]
    events = report.tables["events"]
    assert clusters["size_events"].sum() == len(pool)
    assert list(clusters["size_events"]) == sorted(clusters["size_events"], reverse=True)
    by_file = {e.file: e for e in pool}
    for row in clusters.itertuples(index=False):
        members = events[events["cluster"] == row.cluster]
        assert len(members) == row.size_events
        assert (members["family"] == row.family).sum() == members["family"].value_counts().max()
        rep = by_file[row.representative_file]
        assert report.representatives[row.cluster] == rep.stack
        same = [f for f in members["file"] if by_file[f].features == rep.features]
        assert set(members[members["file"].isin(same)]["similarity_to_representative"]) == {1.0}
    samples = report.tables["samples"]
    assert set(samples["role"]) <= {"nearest", "furthest"}
    assert samples.groupby(["cluster", "role"]).size().max() <= 2
    for (_, role), group in samples.groupby(["cluster", "role"]):
        steps = np.diff(group.sort_values("rank")["similarity"].to_numpy())
        assert np.all(steps <= 1e-12 if role == "nearest" else steps >= -1e-12)
    payload = report.to_json()
    assert {"events", "clusters", "zipf"} <= set(payload)
    assert set(payload["events"][0]) >= {
        "file", "pid", "process", "blocked_thread", "critical_threads", "family", "cluster"
    }  # fmt: skip
    assert set(payload["clusters"][0]) >= {"id", "size", "family", "representative"}
