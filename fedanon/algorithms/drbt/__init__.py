"""DRBT (random projection) and OSBR (dissimilarity release) for privacy-preserving clustering.

The thesis's ch. 6.4-6.5 and 7.4 (our reading: docs/drbt.md). The names below are the public API; a
vertically partitioned party needs only `zscore`, `project_block` and `secure_rng`.
"""

from fedanon.algorithms.drbt.api import anonymize_drbt, evaluate_drbt
from fedanon.algorithms.drbt.fmeasure import membership_matrix, overall_f_measure
from fedanon.algorithms.drbt.kmeans import KMeansResult, kmeans
from fedanon.algorithms.drbt.matrices import MATRICES, random_matrix, secure_rng
from fedanon.algorithms.drbt.osbr import (
    euclidean_dissimilarity,
    gower_dissimilarity,
    jaccard_dissimilarity,
    lower_triangle,
)
from fedanon.algorithms.drbt.projection import check_projection, project_block, zscore
from fedanon.algorithms.drbt.stress import Stress, expected_stress, stress

__all__ = [
    "MATRICES",
    "KMeansResult",
    "Stress",
    "anonymize_drbt",
    "check_projection",
    "euclidean_dissimilarity",
    "evaluate_drbt",
    "expected_stress",
    "gower_dissimilarity",
    "jaccard_dissimilarity",
    "kmeans",
    "lower_triangle",
    "membership_matrix",
    "overall_f_measure",
    "project_block",
    "random_matrix",
    "secure_rng",
    "stress",
    "zscore",
]
