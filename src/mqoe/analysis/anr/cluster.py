"""Clustering of ANR events at a similarity threshold (steps 3–4 of the root-cause pipeline
of the Android responsiveness study, "Aging or Glitching?", MobiCom 2020).

**Definition.** The clusters are the connected components of the graph whose nodes are
the events and whose edges join two events with ``similarity ≥ threshold``
(:func:`~mqoe.analysis.anr.features.similarity`; single linkage). Cluster ids are
0, 1, … by decreasing size (events), ties broken by the smallest event index, so two
methods that find the same components give identical labels.

``method="exact"`` compares all pairs of events (O(n²): for samples and checks).

``method="fast"`` finds the same components without comparing all pairs:

1. **Duplicates.** Events with identical features have similarity exactly 1, so they
   collapse into one *unique vector* (most events of dominant clusters are duplicates
   after normalisation).
2. **Bounds.** ``sim ≥ t`` needs ``cosine ≥ c_min = (t(|F_p|+|F_c|) − |F_p|)/|F_c|``
   (the best case, Jaccard = 1). With unit-normalised count vectors, each unique vector
   *y* leaves its most frequent terms unindexed as long as their norm stays below
   ``c_min`` (prefix filtering, Bayardo et al. 2007); a vector *x* sharing none of *y*'s
   indexed terms has ``cos(x, y) ≤ ‖y_unindexed‖ < c_min`` (Cauchy–Schwarz), so every
   qualifying pair shares an indexed term.
3. **Inverted index.** For each vector x in turn, the candidates are the vectors y with a
   term of x among y's indexed terms; candidates already in x's component are dropped,
   and so are those whose generic Jaccard is below ``j_min = (t(|F_p|+|F_c|) − |F_c|)/|F_p|``
   (the best case, cosine = 1) — a bitmask popcount per pair.
4. **Verification, one component at a time.** Each candidate is checked with the same
   integer ingredients and the same float formula as the exact method
   (:func:`~mqoe.analysis.anr.features.combine`). For each other component among the
   candidates, one member is tried first; only if it fails are the component's other
   candidates tried. A component is merged as soon as one pair passes, so a dense
   cluster costs about one verification per vector instead of one per pair.

The pruning is exact (a margin of 1e-9 keeps float rounding on the safe side), so the
components equal the exact ones. When ``c_min ≤ 0`` (thresholds so low that vectors with
nothing in common can be similar) the fast method compares all pairs of unique vectors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mqoe.analysis.anr.features import Features, combine, required_bounds
from mqoe.errors import UserError

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

_MARGIN = 1e-9
_CANDIDATE_CHUNK = 2_000_000  # candidate pairs generated at once
_VERIFY_CHUNK = 200_000  # pairs verified at once (memory ~ pairs × terms per vector)
_EXACT_MAX_CELLS = 60_000_000  # dense events × terms cells the exact method may allocate


@dataclass(frozen=True)
class Clustering:
    """Cluster labels per event (0 = largest) and what the method did."""

    labels: IntArray
    sizes: IntArray  # events per cluster, by id
    method: str
    threshold: float
    n_unique: int  # distinct feature vectors
    candidate_pairs: int  # pairs whose similarity was computed
    similar_pairs: int  # of those, pairs with similarity ≥ threshold

    @property
    def n_clusters(self) -> int:
        return len(self.sizes)


@dataclass(frozen=True)
class EncodedFeatures:
    """Unique feature vectors as arrays, and each event's unique vector.

    Generic sets are bitmasks (``generic_bits``: one row of uint64 words per vector);
    specific vectors are CSR rows (``indptr``, ``terms`` sorted within a row, ``counts``).
    """

    unique: list[Features]
    event_uid: IntArray
    generic_bits: npt.NDArray[np.uint64]
    generic_size: IntArray
    indptr: IntArray
    terms: IntArray
    counts: IntArray
    norm2: IntArray
    n_terms: int
    n_generic: int
    keys: IntArray  # row * (n_terms + 1) + term per entry: sorted, for term look-ups

    @property
    def lengths(self) -> IntArray:
        return np.diff(self.indptr)


def encode(features: Sequence[Features], dedupe: bool = True) -> EncodedFeatures:
    """Vocabularies and arrays for ``features`` (one row per unique vector if ``dedupe``)."""
    index: dict[Features, int] = {}
    unique: list[Features] = []
    event_uid = np.empty(len(features), dtype=np.int64)
    for i, f in enumerate(features):
        uid = index.get(f) if dedupe else None
        if uid is None:
            uid = len(unique)
            unique.append(f)
            if dedupe:
                index[f] = uid
        event_uid[i] = uid
    generic_vocab: dict[str, int] = {}
    term_vocab: dict[str, int] = {}
    for f in unique:
        for item in f.generic:
            generic_vocab.setdefault(item, len(generic_vocab))
        for term, _ in f.specific:
            term_vocab.setdefault(term, len(term_vocab))
    words = max(1, (len(generic_vocab) + 63) // 64)
    bits = np.zeros((len(unique), words), dtype=np.uint64)
    gsize = np.zeros(len(unique), dtype=np.int64)
    indptr = np.zeros(len(unique) + 1, dtype=np.int64)
    terms_list: list[int] = []
    counts_list: list[int] = []
    for u, f in enumerate(unique):
        for item in f.generic:
            g = generic_vocab[item]
            bits[u, g >> 6] |= np.uint64(1 << (g & 63))
        gsize[u] = len(f.generic)
        row = sorted((term_vocab[t], c) for t, c in f.specific)
        terms_list.extend(t for t, _ in row)
        counts_list.extend(c for _, c in row)
        indptr[u + 1] = len(terms_list)
    terms = np.array(terms_list, dtype=np.int64)
    counts = np.array(counts_list, dtype=np.int64)
    rows = np.repeat(np.arange(len(unique)), np.diff(indptr))
    norm2 = np.bincount(rows, weights=counts * counts, minlength=len(unique)).astype(np.int64)
    keys = rows * np.int64(len(term_vocab) + 1) + terms
    return EncodedFeatures(
        unique, event_uid, bits, gsize, indptr, terms, counts, norm2,
        len(term_vocab), len(generic_vocab), keys,
    )  # fmt: skip


def pair_similarity(enc: EncodedFeatures, a: IntArray, b: IntArray) -> FloatArray:
    """Similarity of unique vectors ``a[i]`` and ``b[i]`` for every i (vectorised)."""
    out = np.empty(len(a), dtype=np.float64)
    for start in range(0, len(a), _VERIFY_CHUNK):
        sa, sb = a[start : start + _VERIFY_CHUNK], b[start : start + _VERIFY_CHUNK]
        out[start : start + len(sa)] = _pair_similarity(enc, sa, sb)
    return out


def _pair_similarity(enc: EncodedFeatures, a: IntArray, b: IntArray) -> FloatArray:
    inter = np.bitwise_count(enc.generic_bits[a] & enc.generic_bits[b]).sum(axis=1)
    inter = inter.astype(np.int64)
    union = enc.generic_size[a] + enc.generic_size[b] - inter
    lengths = enc.lengths
    swap = lengths[a] > lengths[b]  # walk the shorter row, look terms up in the longer
    short, long_ = np.where(swap, b, a), np.where(swap, a, b)
    n = lengths[short]
    pair = np.repeat(np.arange(len(a)), n)
    offsets = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
    pos = enc.indptr[short][pair] + offsets
    dot = np.zeros(len(a), dtype=np.float64)
    if len(pos):
        keys = enc.keys
        key_width = np.int64(enc.n_terms + 1)
        wanted = long_[pair] * key_width + enc.terms[pos]
        hit = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
        products = np.where(keys[hit] == wanted, enc.counts[pos] * enc.counts[hit], 0)
        dot = np.bincount(pair, weights=products, minlength=len(a)).astype(np.float64)
    return combine(inter, union, dot, enc.norm2[a], enc.norm2[b])


class _Components:
    """Disjoint sets with an always-exact ``label`` array (the root of each element):
    merging relabels the smaller set, O(n log n) in total, so look-ups are vectorised."""

    def __init__(self, n: int) -> None:
        self.label = np.arange(n, dtype=np.int64)
        self.members: dict[int, list[int]] = {}

    def union(self, x: int, y: int) -> None:
        a, b = int(self.label[x]), int(self.label[y])
        if a == b:
            return
        ma = self.members.setdefault(a, [a])
        mb = self.members.setdefault(b, [b])
        if len(ma) < len(mb):
            a, b, ma, mb = b, a, mb, ma
        self.label[mb] = a
        ma.extend(mb)
        del self.members[b]

    def union_pairs(self, a: IntArray, b: IntArray) -> None:
        for x, y in zip(a.tolist(), b.tolist(), strict=True):
            self.union(x, y)


def _check_threshold(threshold: float) -> None:
    if not 0.0 < threshold <= 1.0:
        raise UserError(f"similarity threshold must be in (0, 1], got {threshold}")


def canonical_labels(roots: IntArray) -> tuple[IntArray, IntArray]:
    """Component labels 0, 1, … by decreasing size, ties by first index; and the sizes."""
    if len(roots) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    comps, first, inverse, sizes = np.unique(
        roots, return_index=True, return_inverse=True, return_counts=True
    )
    order = np.lexsort((first, -sizes))
    rank = np.empty(len(comps), dtype=np.int64)
    rank[order] = np.arange(len(comps))
    return rank[inverse.reshape(-1)], sizes[order].astype(np.int64)


def cluster_events(
    features: Sequence[Features], threshold: float = 0.95, method: str = "fast"
) -> Clustering:
    """Cluster events by similarity (see the module docstring for both methods)."""
    _check_threshold(threshold)
    if method == "exact":
        return _exact(features, threshold)
    if method != "fast":
        raise UserError(f"unknown clustering method {method!r} (fast, exact)")
    enc = encode(features)
    comps = _Components(len(enc.unique))
    _, c_min = required_bounds(threshold)
    if c_min <= _MARGIN:
        everything = np.arange(len(enc.unique), dtype=np.int64)
        candidates, similar = _all_pairs(enc, everything, threshold, comps)
    else:
        candidates, similar = _prefix_join(enc, threshold, c_min, comps)
    labels, sizes = canonical_labels(comps.label[enc.event_uid])
    return Clustering(labels, sizes, "fast", threshold, len(enc.unique), candidates, similar)


def _verify_and_union(
    enc: EncodedFeatures, a: IntArray, b: IntArray, threshold: float, comps: _Components
) -> tuple[int, int]:
    sims = pair_similarity(enc, a, b)
    keep = sims >= threshold
    comps.union_pairs(a[keep], b[keep])
    return len(a), int(keep.sum())


def _all_pairs(
    enc: EncodedFeatures, index: IntArray, threshold: float, comps: _Components
) -> tuple[int, int]:
    """Compare every pair of the unique vectors ``index``, in blocks of rows."""
    n = len(index)
    total = [0, 0]
    block = max(1, _CANDIDATE_CHUNK // max(n, 1))
    for i0 in range(0, n, block):
        rows = np.arange(i0, min(n, i0 + block))
        a = np.repeat(rows, n)
        b = np.tile(np.arange(n), len(rows))
        keep = a < b
        done = _verify_and_union(enc, index[a[keep]], index[b[keep]], threshold, comps)
        total = [total[0] + done[0], total[1] + done[1]]
    return total[0], total[1]


def _prefix_join(
    enc: EncodedFeatures, threshold: float, c_min: float, comps: _Components
) -> tuple[int, int]:
    n = len(enc.unique)
    compared = similar = 0
    # Vectors with no specific term share no term with anything: cosine is 1 between two
    # of them and 0 with any other vector (< c_min), so they are compared among themselves.
    compared, similar = _all_pairs(enc, np.flatnonzero(enc.lengths == 0), threshold, comps)
    if n < 2 or len(enc.terms) == 0:
        return compared, similar
    post_rows, term_lo, term_hi = _prefix_index(enc, c_min)
    indptr, terms, label = enc.indptr, enc.terms, comps.label
    bits, gsize = enc.generic_bits, enc.generic_size
    j_min, _ = required_bounds(threshold)
    for u in range(n):
        mine = terms[indptr[u] : indptr[u + 1]]
        lo, hi = term_lo[mine], term_hi[mine]
        fan = hi - lo
        total = int(fan.sum())
        if total == 0:
            continue
        cand = np.unique(post_rows[np.repeat(lo - (np.cumsum(fan) - fan), fan) + np.arange(total)])
        cand = cand[label[cand] != label[u]]  # already connected: nothing to learn
        if len(cand) and j_min > 0:  # Jaccard bound: cheap, and it rules out most pairs
            inter = np.bitwise_count(bits[cand] & bits[u]).sum(axis=1).astype(np.int64)
            union = gsize[cand] + gsize[u] - inter
            cand = cand[inter >= (j_min - _MARGIN) * union]
        if len(cand) == 0:
            continue
        # One component at a time: its first candidate, then (if that one fails) the rest.
        roots, first = np.unique(label[cand], return_index=True)
        reps = cand[first]
        sims = pair_similarity(enc, np.full(len(reps), u), reps)
        compared += len(reps)
        hit = sims >= threshold
        similar += int(hit.sum())
        for v in reps[hit].tolist():
            comps.union(u, v)
        if hit.all():
            continue
        rest = np.isin(label[cand], roots[~hit])
        rest[first[~hit]] = False
        rest &= label[cand] != label[u]
        if rest.any():
            others = cand[rest]
            sims = pair_similarity(enc, np.full(len(others), u), others)
            compared += len(others)
            ok = sims >= threshold
            similar += int(ok.sum())
            for v in others[ok].tolist():
                comps.union(u, v)
    return compared, similar


def _prefix_index(enc: EncodedFeatures, c_min: float) -> tuple[IntArray, IntArray, IntArray]:
    """Postings of each vector's *indexed* terms (all but its most frequent ones whose
    norm stays below ``c_min``): rows sorted by term, and each term's [lo, hi) range."""
    n = len(enc.unique)
    lengths = enc.lengths
    rows = np.repeat(np.arange(n, dtype=np.int64), lengths)
    df = np.bincount(enc.terms, minlength=enc.n_terms)
    weight2 = enc.counts.astype(np.float64) ** 2 / enc.norm2[rows]
    order = np.lexsort((enc.terms, -df[enc.terms], rows))  # per row: frequent terms first
    w2 = weight2[order]
    csum = np.cumsum(w2)
    filled = lengths > 0
    starts = enc.indptr[:-1][filled]
    base = np.repeat(csum[starts] - w2[starts], lengths[filled])
    indexed = (csum - base) >= c_min * c_min * (1.0 - _MARGIN)
    post_terms = enc.terms[order][indexed]
    post_rows = rows[order][indexed]
    by_term = np.argsort(post_terms, kind="stable")
    post_terms, post_rows = post_terms[by_term], post_rows[by_term]
    vocabulary = np.arange(enc.n_terms)
    term_lo = np.searchsorted(post_terms, vocabulary, side="left")
    term_hi = np.searchsorted(post_terms, vocabulary, side="right")
    return post_rows, term_lo, term_hi


def _exact(features: Sequence[Features], threshold: float) -> Clustering:
    """All pairs of events with dense matrices (float64 products of small integers are
    exact), then the shared :func:`combine` formula."""
    enc = encode(features, dedupe=False)
    n = len(enc.unique)
    if n * max(enc.n_terms, 1) > _EXACT_MAX_CELLS:
        raise UserError(
            f"--exact compares all pairs of {n} events over {enc.n_terms} terms: too large; "
            "use the default fast method (same clusters)"
        )
    generic = np.zeros((n, max(enc.n_generic, 1)), dtype=np.float64)
    specific = np.zeros((n, max(enc.n_terms, 1)), dtype=np.float64)
    vocab: dict[str, int] = {}
    for i, f in enumerate(enc.unique):
        for item in f.generic:
            generic[i, vocab.setdefault(item, len(vocab))] = 1.0
    rows = np.repeat(np.arange(n), enc.lengths)
    specific[rows, enc.terms] = enc.counts
    gsize = generic.sum(axis=1).astype(np.int64)
    norm2 = np.einsum("ij,ij->i", specific, specific).astype(np.int64)
    comps = _Components(n)
    compared = similar = 0
    block = max(1, 4_000_000 // max(n, 1))
    for i0 in range(0, n, block):
        i1 = min(n, i0 + block)
        inter = np.rint(generic[i0:i1] @ generic.T).astype(np.int64)
        union = gsize[i0:i1, None] + gsize[None, :] - inter
        dot = specific[i0:i1] @ specific.T
        sims = combine(inter, union, dot, norm2[i0:i1, None], norm2[None, :])
        upper = np.arange(n)[None, :] > np.arange(i0, i1)[:, None]
        ii, jj = np.nonzero((sims >= threshold) & upper)
        compared += int(upper.sum())
        similar += len(ii)
        comps.union_pairs(ii + i0, jj)
    labels, sizes = canonical_labels(comps.label)
    return Clustering(labels, sizes, "exact", threshold, n, compared, similar)
