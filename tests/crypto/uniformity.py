"""Chi-square test that bytes look uniform, used to check what protocol roles see.

The statistic is computed separately for each byte position of the uint64 words, so a mask that
covers only some bytes (or leaves carries visible) fails even if the pooled bytes look fine. The
threshold is the 1 - 1e-6 quantile of chi-square with 255 degrees of freedom (Wilson-Hilferty
approximation), so a truly uniform view fails with probability about 8e-6 per call.
"""

from __future__ import annotations

import math

import numpy as np

_DOF = 255
_Z = 4.753424  # standard normal quantile for one-sided p = 1e-6
CRITICAL = _DOF * (1 - 2 / (9 * _DOF) + _Z * math.sqrt(2 / (9 * _DOF))) ** 3


def byte_position_chi2(words: np.ndarray) -> list[float]:
    """Chi-square statistic against uniform for each of the 8 byte positions of uint64 words."""
    as_bytes = np.ascontiguousarray(words, dtype="<u8").view(np.uint8).reshape(-1, 8)
    expected = as_bytes.shape[0] / 256
    stats = []
    for position in range(8):
        counts = np.bincount(as_bytes[:, position], minlength=256)
        stats.append(float(((counts - expected) ** 2 / expected).sum()))
    return stats


def looks_uniform(words: np.ndarray) -> bool:
    """Whether every byte position passes the chi-square test (needs >= ~50k words)."""
    return max(byte_position_chi2(words)) < CRITICAL
