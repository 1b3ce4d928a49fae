"""Ranking and binary-classification metrics of link scores (numpy only): :func:`roc_auc`,
:func:`average_precision`, :func:`ranks`, :func:`hits_at_k`, :func:`mean_reciprocal_rank`."""

from __future__ import annotations

from typing import Any

import numpy as np


def _binary(labels: Any, scores: Any) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(labels)
    s = np.asarray(scores, dtype=np.float64)
    if y.ndim != 1 or s.shape != y.shape:
        raise ValueError(
            f"labels, scores: expected two 1-D arrays of one length, got shapes {list(y.shape)} "
            f"and {list(s.shape)}"
        )
    if not np.isin(y, (0, 1)).all():
        raise ValueError(f"labels: expected 0 or 1, got {sorted(set(y.tolist()) - {0, 1})[:5]}")
    if not np.isfinite(s).all():
        raise ValueError(f"scores: expected finite numbers, got {s[~np.isfinite(s)][:5].tolist()}")
    y = y.astype(bool)
    if y.all() or not y.any():
        raise ValueError(
            f"labels: expected at least one positive and one negative, got {int(y.sum())} "
            f"positive(s) of {len(y)}"
        )
    return y, s


def _average_ranks(s: np.ndarray) -> np.ndarray:
    """1-based ranks of ``s`` in ascending order, tied values sharing their mean rank."""
    order = np.argsort(s, kind="stable")
    sorted_s = s[order]
    starts = np.flatnonzero(np.r_[True, sorted_s[1:] != sorted_s[:-1]])
    ends = np.r_[starts[1:], len(s)]
    ranks = np.empty(len(s))
    ranks[order] = np.repeat((starts + ends + 1) / 2.0, ends - starts)
    return ranks


def roc_auc(labels: Any, scores: Any) -> float:
    """Area under the ROC curve: the probability that a random positive scores above a random
    negative, a tie counting one half (the Mann-Whitney U statistic over ``P * N``).

    ``labels``: 0/1 ``[n]``; ``scores``: finite ``[n]`` (any monotone scale: logits or
    probabilities give the same value). ValueError without a positive or a negative."""
    y, s = _binary(labels, scores)
    ranks = _average_ranks(s)
    pos, neg = int(y.sum()), int((~y).sum())
    return float((ranks[y].sum() - pos * (pos + 1) / 2.0) / (pos * neg))


def average_precision(labels: Any, scores: Any) -> float:
    """Average precision: ``sum over thresholds t (R(t) - R(t_prev)) * P(t)``, the thresholds
    being the distinct scores in descending order, ``P(t)`` / ``R(t)`` the precision / recall of
    predicting positive every row scoring ``>= t`` (tied rows enter together, so the value does
    not depend on their order; the step-wise definition, without interpolation).

    ValueError without a positive or a negative."""
    y, s = _binary(labels, scores)
    order = np.argsort(-s, kind="stable")
    s, y = s[order], y[order]
    last = np.r_[s[1:] != s[:-1], True]  # the last row of each group of tied scores
    tp = np.cumsum(y)[last]
    predicted = np.flatnonzero(last) + 1
    precision = tp / predicted
    recall = tp / tp[-1]
    return float(np.sum(np.diff(np.r_[0.0, recall]) * precision))


def ranks(positive_scores: Any, negative_scores: Any) -> np.ndarray:
    """The rank of each positive among its negatives, ``[n]`` floats >= 1.

    ``negative_scores``: ``[n, m]`` (row ``i``: the candidates positive ``i`` is ranked against),
    or ``[m]`` (one set shared by every positive). The rank is the mean of the optimistic rank
    (``1 + #negatives scoring above``) and the pessimistic one (``1 + #negatives scoring above or
    equal``): a tie costs half a place."""
    pos = np.asarray(positive_scores, dtype=np.float64)
    neg = np.asarray(negative_scores, dtype=np.float64)
    if pos.ndim != 1:
        raise ValueError(f"positive_scores: expected a 1-D array, got shape {list(pos.shape)}")
    if neg.ndim == 1:
        neg = np.broadcast_to(neg, (len(pos), len(neg)))
    if neg.ndim != 2 or neg.shape[0] != len(pos) or neg.shape[1] == 0:
        raise ValueError(
            f"negative_scores: expected [m] or [{len(pos)}, m] with m >= 1, got shape "
            f"{list(np.shape(negative_scores))}"
        )
    if not (np.isfinite(pos).all() and np.isfinite(neg).all()):
        raise ValueError("scores: expected finite numbers, got a NaN or an infinity")
    above = (neg > pos[:, None]).sum(axis=1)
    ties = (neg == pos[:, None]).sum(axis=1)
    return 1.0 + above + ties / 2.0


def hits_at_k(positive_scores: Any, negative_scores: Any, k: int) -> float:
    """Hits@K: the fraction of positives whose :func:`ranks` rank is at most ``k``."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k: expected an integer >= 1, got {k!r}")
    return float(np.mean(ranks(positive_scores, negative_scores) <= k))


def mean_reciprocal_rank(positive_scores: Any, negative_scores: Any) -> float:
    """MRR: the mean over positives of ``1 / rank`` (:func:`ranks`)."""
    return float(np.mean(1.0 / ranks(positive_scores, negative_scores)))
