"""Topic clusters of negative cases: online assignment and re-clustering without a given k.

Vectors are unit embeddings (rows of an ``(n, d)`` float32 array). A cluster is represented by
its **centroid = the mean of its members' unit vectors, not renormalised**; then
``x · centroid`` is the *average cosine similarity* of ``x`` to the members — exactly the
affinity average-linkage clustering merges on. One rule therefore serves both paths:

- **Re-clustering** (:func:`recluster`): average-linkage agglomerative clustering on cosine
  distance, cut where the mean pairwise distance between two groups exceeds ``threshold``
  (no k needed; the cut is scale-free in n). Above ``sample_size`` cases it runs on a seeded
  sample, every other case joins the sample cluster it would have merged with
  (``x · centroid >= 1 - threshold``), and the cases that joined none are clustered in the
  next round (at most ``max_rounds``; what remains joins its nearest cluster). Finally
  clusters smaller than ``min_cluster_size`` join the nearest larger cluster when their
  average similarity to it is at least ``merge_similarity``.
- **Online assignment** (:func:`assign_online`): a new case joins the cluster with the highest
  ``x · centroid`` if that is at least ``1 - threshold``, else it starts a new provisional
  cluster; centroids and sizes are updated case by case.

Why this and not another (measured on FeedbackQA negatives, MiniLM of question + comment +
answer, 2 cores; benchmarks/triage.py): k-means given the true k scores V-measure 0.64-0.74
against the page title; silhouette-chosen k always picked the largest k tried; HDBSCAN (PCA to
16 dims) found about the true k at ``min_cluster_size=3`` but collapsed to 2 clusters on two of
four sources at 5; this rule scored 0.65-0.76 with no k given, and re-clusters 50,000 cases in a
few seconds because linkage only ever sees ``sample_size`` points (O(sample²) memory: 4,000 ->
64 MB of distances).

Pure: numpy, scipy and scikit-learn only. Every random choice takes ``seed``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.cluster.hierarchy import fcluster, linkage

__all__ = [
    "ClusterParams",
    "Clustering",
    "OnlineAssignment",
    "assign_online",
    "average_linkage",
    "case_text",
    "centroids_of",
    "condensed_cosine",
    "match_cluster_ids",
    "nearest_centroid",
    "recluster",
]

Vectors = npt.NDArray[np.float32]
Labels = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class ClusterParams:
    """Re-clustering parameters (defaults chosen on FeedbackQA negatives; module docstring).

    Attributes:
        threshold: cosine-distance cut of average linkage (0-2); two groups merge while their
            mean pairwise cosine distance is at most this. Online assignment uses
            ``1 - threshold`` as its minimum average similarity.
        min_cluster_size: clusters smaller than this try to join a larger one.
        merge_similarity: minimum average cosine similarity for such a join (else the small
            cluster stays on its own: a genuinely new topic).
        sample_size: at most this many points go into one linkage (memory O(sample_size²)).
        max_rounds: sample-and-assign rounds before the rest joins its nearest cluster.
        seed: seed of the sampling.
    """

    threshold: float = 0.35
    min_cluster_size: int = 3
    merge_similarity: float = 0.5
    sample_size: int = 4000
    max_rounds: int = 4
    seed: int = 7

    def __post_init__(self) -> None:
        """Reject values that cannot work (``ValueError`` naming the field)."""
        if not 0.0 < self.threshold < 2.0:
            raise ValueError(f"threshold: expected 0 < t < 2, got {self.threshold}")
        if self.sample_size < 2:
            raise ValueError(f"sample_size: expected >= 2, got {self.sample_size}")
        if self.min_cluster_size < 1 or self.max_rounds < 1:
            raise ValueError("min_cluster_size and max_rounds: expected >= 1")

    @property
    def min_similarity(self) -> float:
        """Minimum average cosine similarity to join a cluster (``1 - threshold``)."""
        return 1.0 - self.threshold


@dataclass(frozen=True, slots=True)
class Clustering:
    """Result of :func:`recluster`.

    Attributes:
        labels: ``(n,)`` int64 cluster index of each input row, in ``0..k-1``; clusters are
            numbered by size, largest first (ties: the one holding the lower row index first).
        centroids: ``(k, d)`` float32 mean of each cluster's unit vectors (not renormalised).
        sizes: ``(k,)`` int64 members per cluster.
    """

    labels: Labels
    centroids: Vectors
    sizes: Labels

    @property
    def k(self) -> int:
        """Number of clusters."""
        return int(self.sizes.shape[0])


def case_text(question: str | None, answer: str | None, comment: str | None) -> str:
    """The text a case is embedded from: question + answer + comment (``docs/rules.md#triage``).

    Ordered question, comment, answer and joined by newlines (blank parts left out): the
    model truncates at 256 word pieces and 33% of FeedbackQA negatives are longer, almost all
    by the answer passage, so the short, telling parts go first. On FeedbackQA negatives this
    order scored the same V-measure as question-answer-comment (0.65-0.76 vs 0.62-0.75).
    """
    parts = (question, comment, answer)
    return "\n".join(p.strip() for p in parts if p and p.strip())


def _check(x: npt.ArrayLike) -> Vectors:
    arr = np.asarray(x, dtype=np.float32)
    if arr.ndim != 2:
        raise ValueError(f"expected an (n, d) array of unit vectors, got shape {arr.shape}")
    return arr


def centroids_of(x: Vectors, labels: Labels, k: int) -> tuple[Vectors, Labels]:
    """Mean vector and size of clusters ``0..k-1`` (``labels`` shape ``(n,)``).

    Returns:
        ``(centroids (k, d) float32, sizes (k,) int64)``; an empty cluster has a zero centroid.
    """
    sizes = np.bincount(labels, minlength=k).astype(np.int64)
    sums = np.zeros((k, x.shape[1]), dtype=np.float64)
    np.add.at(sums, labels, x)
    cents = sums / np.maximum(sizes, 1)[:, None]
    return cents.astype(np.float32), sizes


#: Rows per block when distances or similarities are computed block by block (bounds the
#: transient memory of one block to ``_BLOCK x n`` values).
_BLOCK = 1024


def condensed_cosine(x: Vectors) -> npt.NDArray[np.float64]:
    """Condensed cosine distances of unit vectors, as :func:`scipy.spatial.distance.pdist`
    orders them (pair ``(i, j)``, ``i < j``, row by row), computed block by block.

    ``d(i, j) = 1 - x_i · x_j`` (float64 products), clipped to ``[0, 2]``. Each pair is
    computed once, so the result is exactly symmetric without averaging a square matrix.

    Args:
        x: ``(n, d)`` unit vectors.

    Returns:
        ``(n (n - 1) / 2,)`` float64 (8 bytes per pair: 64 MB at n = 4,000); the only other
        memory is one ``_BLOCK x n`` float64 block and a float64 copy of ``x``.
    """
    xs = np.asarray(x, dtype=np.float64)
    n = xs.shape[0]
    out = np.empty(n * (n - 1) // 2, dtype=np.float64)
    pos = 0
    for a in range(0, n, _BLOCK):
        b = min(n, a + _BLOCK)
        block = xs[a:b] @ xs[a:].T  # rows a..b-1 against columns a..n-1
        for i in range(a, b):
            row = block[i - a, i - a + 1:]
            out[pos:pos + row.size] = row
            pos += row.size
        del block
    np.subtract(1.0, out, out=out)
    np.clip(out, 0.0, 2.0, out=out)
    return out


def average_linkage(x: Vectors, threshold: float) -> Labels:
    """Average-linkage clustering on cosine distance, cut at ``threshold``.

    Memory: the condensed distances (:func:`condensed_cosine`, 8 bytes per pair) and
    SciPy's working copy of them: about ``8 n²`` bytes at most (128 MB at n = 4,000), never
    an ``(n, n)`` matrix.

    Args:
        x: ``(n, d)`` unit vectors, n >= 1.
        threshold: the cut: groups merge while their mean pairwise cosine distance <= it.

    Returns:
        ``(n,)`` int64 labels ``0..k-1`` (arbitrary order; :func:`recluster` renumbers).
    """
    x = _check(x)
    n = x.shape[0]
    if n == 1:
        return np.zeros(1, dtype=np.int64)
    dist = condensed_cosine(x)
    tree = linkage(dist, method="average")
    del dist
    flat: Labels = np.asarray(fcluster(tree, t=threshold, criterion="distance"), dtype=np.int64)
    return flat - 1


def nearest_centroid(
    x: Vectors, rows: npt.NDArray[np.int64], centroids: Vectors
) -> tuple[Labels, npt.NDArray[np.float32]]:
    """For each of ``x[rows]``: the centroid with the highest ``x · centroid`` and that value.

    Computed in blocks of ``_BLOCK`` rows, so the memory is ``_BLOCK x k`` similarities
    whatever the number of rows.

    Args:
        x: ``(n, d)`` unit vectors.
        rows: ``(m,)`` row indices into ``x``.
        centroids: ``(k, d)``, k >= 1.

    Returns:
        ``(best (m,) int64 index into centroids, similarity (m,) float32)``.
    """
    best = np.empty(rows.size, dtype=np.int64)
    sim = np.empty(rows.size, dtype=np.float32)
    cents_t = np.ascontiguousarray(centroids.T)
    for a in range(0, rows.size, _BLOCK):
        b = min(rows.size, a + _BLOCK)
        sims = x[rows[a:b]] @ cents_t
        best[a:b] = sims.argmax(axis=1)
        sim[a:b] = sims[np.arange(b - a), best[a:b]]
    return best, sim


def _renumber(labels: Labels) -> Labels:
    """Renumber so clusters are ordered by size desc, ties by lowest member index."""
    uniq, first, counts = np.unique(labels, return_index=True, return_counts=True)
    order = np.lexsort((first, -counts))
    remap = np.empty(int(uniq.max()) + 1, dtype=np.int64)
    remap[uniq[order]] = np.arange(len(uniq), dtype=np.int64)
    return remap[labels]


def _merge_small(x: Vectors, labels: Labels, p: ClusterParams) -> Labels:
    k = int(labels.max()) + 1
    cents, sizes = centroids_of(x, labels, k)
    big = np.flatnonzero(sizes >= p.min_cluster_size)
    small = np.flatnonzero((sizes > 0) & (sizes < p.min_cluster_size))
    if big.size == 0 or small.size == 0:
        return labels
    # centroid_a · centroid_b = mean cosine similarity between the two clusters' members
    affinity = cents[small] @ cents[big].T
    best = affinity.argmax(axis=1)
    remap = np.arange(k, dtype=np.int64)
    ok = affinity[np.arange(small.size), best] >= p.merge_similarity
    remap[small[ok]] = big[best[ok]]
    return remap[labels]


def recluster(x: npt.ArrayLike, params: ClusterParams | None = None) -> Clustering:
    """Cluster ``x`` without being told the number of clusters (algorithm: module docstring).

    Args:
        x: ``(n, d)`` unit vectors (float32), n >= 1.
        params: :class:`ClusterParams` (defaults if ``None``).

    Returns:
        :class:`Clustering` with labels, centroids and sizes; deterministic for a given seed.

    Raises:
        ValueError: ``x`` is not 2-d or is empty.
    """
    p = params or ClusterParams()
    xs = _check(x)
    n = xs.shape[0]
    if n == 0:
        raise ValueError("expected at least one vector to cluster, got 0")
    rng = np.random.default_rng(p.seed)
    labels = np.full(n, -1, dtype=np.int64)
    next_label = 0
    cents_all: list[Vectors] = []
    remaining = np.arange(n)
    for _ in range(p.max_rounds):
        if remaining.size == 0:
            break  # every point joined a cluster in an earlier round
        if remaining.size <= p.sample_size:
            sub = average_linkage(xs[remaining], p.threshold)
            labels[remaining] = sub + next_label
            remaining = remaining[:0]
            break
        sample = np.sort(rng.choice(remaining, size=p.sample_size, replace=False))
        sub = average_linkage(xs[sample], p.threshold)
        k = int(sub.max()) + 1
        cents, _ = centroids_of(xs[sample], sub, k)
        labels[sample] = sub + next_label
        rest = np.setdiff1d(remaining, sample, assume_unique=True)
        best, sim = nearest_centroid(xs, rest, cents)
        joined = sim >= p.min_similarity
        labels[rest[joined]] = best[joined] + next_label
        cents_all.append(cents)
        next_label += k
        remaining = rest[~joined]
    if remaining.size:
        # rounds exhausted: the rest joins its nearest cluster so far
        cents = np.concatenate(cents_all)
        labels[remaining] = nearest_centroid(xs, remaining, cents)[0]
    labels = _renumber(labels)
    labels = _renumber(_merge_small(xs, labels, p))
    k = int(labels.max()) + 1
    cents, sizes = centroids_of(xs, labels, k)
    return Clustering(labels=labels, centroids=cents, sizes=sizes)


@dataclass(frozen=True, slots=True)
class OnlineAssignment:
    """Result of :func:`assign_online`.

    Attributes:
        assignments: ``(m,)`` int64 cluster index of each new vector into ``centroids``
            (indices ``>= k_before`` are new provisional clusters).
        centroids: ``(k_after, d)`` updated centroids (means of member unit vectors).
        sizes: ``(k_after,)`` updated sizes.
        similarities: ``(m,)`` average similarity of each vector to the cluster it joined at
            the time it joined (1.0 for a vector that started a cluster).
    """

    assignments: Labels
    centroids: Vectors
    sizes: Labels
    similarities: npt.NDArray[np.float64]


def assign_online(
    x: npt.ArrayLike,
    centroids: npt.ArrayLike,
    sizes: Sequence[int] | npt.NDArray[np.int64],
    min_similarity: float,
) -> OnlineAssignment:
    """Assign new vectors one by one to the nearest cluster, or start a provisional cluster.

    A vector joins cluster ``c = argmax x · centroid_c`` when ``x · centroid_c >=
    min_similarity`` (an average cosine similarity to c's members, module docstring); then
    ``centroid_c <- (size_c · centroid_c + x) / (size_c + 1)``. Otherwise it becomes a new
    cluster of size 1. Order matters (a later vector may join an earlier one's new cluster).

    Args:
        x: ``(m, d)`` unit vectors.
        centroids: ``(k, d)`` current centroids (k may be 0: pass shape ``(0, d)``).
        sizes: ``(k,)`` current member counts (>= 1 each).
        min_similarity: ``1 - threshold`` of :class:`ClusterParams` (0-1).

    Returns:
        :class:`OnlineAssignment`.

    Raises:
        ValueError: shapes disagree.
    """
    xs = _check(x)
    cents: Vectors = (
        _check(centroids).copy() if np.size(centroids)
        else np.zeros((0, xs.shape[1]), dtype=np.float32)
    )
    sz = np.asarray(sizes, dtype=np.int64).copy()
    if cents.shape[0] != sz.shape[0] or (cents.shape[0] and cents.shape[1] != xs.shape[1]):
        raise ValueError(
            f"expected centroids (k, {xs.shape[1]}) and sizes (k,), got {cents.shape} and "
            f"{sz.shape}"
        )
    out = np.empty(xs.shape[0], dtype=np.int64)
    sims_out = np.empty(xs.shape[0], dtype=np.float64)
    for i, v in enumerate(xs):
        if cents.shape[0]:
            sims = cents @ v
            c = int(sims.argmax())
            if float(sims[c]) >= min_similarity:
                cents[c] = (cents[c] * sz[c] + v) / (sz[c] + 1)
                sz[c] += 1
                out[i], sims_out[i] = c, float(sims[c])
                continue
        cents = np.vstack([cents, v[None, :]])
        sz = np.append(sz, 1)
        out[i], sims_out[i] = cents.shape[0] - 1, 1.0
    return OnlineAssignment(assignments=out, centroids=cents, sizes=sz, similarities=sims_out)


def match_cluster_ids(
    previous: Sequence[str | None],
    labels: Labels,
    fresh_ids: Iterator[str],
) -> list[str]:
    """Carry cluster ids over a re-clustering, so a topic keeps its id (and its queue rows).

    New clusters are matched to previous ids greedily by overlap (the largest shared member
    count first; ties: lower new index, then the id's text); each previous id is used at most
    once; unmatched new clusters take ids from ``fresh_ids``.

    Args:
        previous: each row's cluster id before re-clustering (``None``: had none).
        labels: ``(n,)`` new cluster index of each row (same rows as ``previous``).
        fresh_ids: yields unused ids on demand.

    Returns:
        id of each new cluster ``0..k-1``.

    Raises:
        ValueError: lengths disagree.
    """
    if len(previous) != labels.shape[0]:
        raise ValueError(f"expected {labels.shape[0]} previous ids, got {len(previous)}")
    k = int(labels.max()) + 1 if labels.size else 0
    overlap: dict[tuple[int, str], int] = {}
    for old, new in zip(previous, labels.tolist(), strict=True):
        if old is not None:
            overlap[(new, old)] = overlap.get((new, old), 0) + 1
    ids: list[str | None] = [None] * k
    used: set[str] = set()
    for (new, old), _count in sorted(overlap.items(), key=lambda kv: (-kv[1], kv[0])):
        if ids[new] is None and old not in used:
            ids[new] = old
            used.add(old)
    return [i if i is not None else next(fresh_ids) for i in ids]
