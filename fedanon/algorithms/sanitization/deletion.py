"""Apply victim deletions to a log: the second and last pass of every data-sharing algorithm."""

from __future__ import annotations

import numpy as np

from fedanon.utility.transactions import Transactions


def delete_items(tx: Transactions, tids: np.ndarray, items: np.ndarray) -> Transactions:
    """Remove item `items[k]` from transaction `tids[k]` for every k; no transaction is dropped.

    Rows are sorted and in order, so the key `tid * stride + item` is ascending over the whole
    log and one binary search finds every (transaction, item) entry. A victim the transaction no
    longer holds (two rules chose the same item) is simply deleted once.
    """
    if len(tids) == 0:
        return tx
    stride = int(max(tx.items.max(initial=0), np.max(items))) + 1
    keys = tx.row_ids() * stride + tx.items
    wanted = np.unique(np.asarray(tids, dtype=np.int64) * stride + np.asarray(items))
    positions = np.searchsorted(keys, wanted)
    found = positions < len(keys)
    found[found] = keys[positions[found]] == wanted[found]
    mask = np.zeros(len(keys), dtype=bool)
    mask[positions[found]] = True
    return tx.without(mask)
