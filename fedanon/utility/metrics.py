"""Utility measures of a table: the two figures the LKC paper reports.

- Discernibility ratio (DR, the paper's case 2, general analysis): every record is charged the
  size of its full-QID equivalence group, normalized by |T|^2 so that 0 < DR <= 1 (1 when all
  records are indistinguishable). Lower is better.
- Classification error (case 1, classification analysis): error on a test table of the
  C4.5-style tree trained on a training table (fedanon.utility.c45).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from fedanon.utility.c45 import C45


def discernibility_ratio(df: pd.DataFrame, qids: Sequence[str]) -> float:
    """sum over full-QID groups of |T[qid]|^2, divided by |T|^2.

    With no QID attribute every record is in one group, so the ratio is 1.
    """
    n = len(df)
    if n == 0:
        raise ValueError("discernibility ratio of an empty table is undefined")
    if not qids:
        return 1.0
    sizes = df.groupby(list(qids), sort=False, dropna=False, observed=True).size()
    squares = np.square(sizes.to_numpy(dtype=np.int64)).sum()
    return float(squares) / float(n * n)


def classification_error(
    train_df: pd.DataFrame,
    test_df: pd.DataFrame,
    class_col: str,
    features: Sequence[str],
    numeric: Iterable[str],
) -> float:
    """Share (0..1) of `test_df` rows the C4.5 tree trained on `train_df` misclassifies.

    Only `features` are used; those in `numeric` get threshold tests, the others are
    categorical. With no features the tree is one leaf, so the result is the error of always
    predicting the training majority class.
    """
    if len(test_df) == 0:
        raise ValueError("classification error on an empty test table is undefined")
    model = C45().fit(train_df[list(features)], train_df[class_col], numeric)
    predicted = model.predict(test_df[list(features)])
    return float(np.mean(predicted != test_df[class_col].to_numpy()))
