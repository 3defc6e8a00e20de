"""The overall F-measure of a clustering against a reference clustering (thesis Eq. 6.3-6.6).

The reference clusters c_i come from K-means on the original (z-scored) data, the produced
clusters c'_j from K-means on the released data. From freq_ij = |c_i ∩ c'_j| (the clustering
membership matrix, Table 6.6): P = freq_ij / |c'_j|, R = freq_ij / |c_i|, F_ij = 2PR / (P + R),
F(c_i) = max_j F_ij, and OF = sum_i |c_i| F(c_i) / sum_i |c_i|. Cluster labels are arbitrary
names: only the partition matters, so relabelling either side leaves OF unchanged.
"""

from __future__ import annotations

import numpy as np


def membership_matrix(reference: np.ndarray, produced: np.ndarray) -> np.ndarray:
    """freq[i, j] = number of objects in reference cluster i and produced cluster j."""
    ref = np.asarray(reference)
    out = np.asarray(produced)
    if ref.ndim != 1 or ref.shape != out.shape:
        raise ValueError(f"label arrays must be 1-D of equal length, got {ref.shape}, {out.shape}")
    if ref.size == 0:
        raise ValueError("cannot compare empty clusterings")
    _, ref_codes = np.unique(ref, return_inverse=True)
    _, out_codes = np.unique(out, return_inverse=True)
    shape = (ref_codes.max() + 1, out_codes.max() + 1)
    flat = np.bincount(ref_codes * shape[1] + out_codes, minlength=shape[0] * shape[1])
    return flat.reshape(shape)


def overall_f_measure(reference: np.ndarray, produced: np.ndarray) -> float:
    """OF of the `produced` labels against the `reference` labels, in [0, 1]; 1 = same partition."""
    freq = membership_matrix(reference, produced).astype(float)
    ref_sizes = freq.sum(axis=1, keepdims=True)
    out_sizes = freq.sum(axis=0, keepdims=True)
    # F_ij = 2 P R / (P + R) simplifies to 2 freq_ij / (|c_i| + |c'_j|), defined even when 0.
    f = 2.0 * freq / (ref_sizes + out_sizes)
    return float((ref_sizes[:, 0] * f.max(axis=1)).sum() / ref_sizes.sum())
