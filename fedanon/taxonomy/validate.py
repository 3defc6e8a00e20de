"""Check a table against its taxonomy file before any anonymization work starts.

A value missing from a tree would otherwise surface deep inside the engine (or, in a federation,
on one party only); checking up front gives the user one line naming the column, the value and
the first row at fault.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from fedanon.errors import FedanonError
from fedanon.taxonomy.files import TaxonomyFile
from fedanon.taxonomy.tree import Taxonomy


def validate_table(
    df: pd.DataFrame, taxonomy_file: TaxonomyFile, qids: Sequence[str] | None = None
) -> None:
    """Raise `FedanonError` unless `df` fits `taxonomy_file` for the QIDs `qids`.

    `qids` defaults to the file's QID list. Checked: every QID, sensitive and class column is
    present; every QID value is a leaf of its tree (inside a leaf interval for given numerical
    trees, a number for dynamic ones); every class value is a declared class value. Rows are
    reported 1-based, counting data rows only.
    """
    src = taxonomy_file.source
    names = list(qids) if qids is not None else taxonomy_file.qids
    if names is None:
        raise FedanonError(f"{src}: no QIDs given and the taxonomy file lists none")
    missing = [q for q in names if q not in df.columns]
    if missing:
        raise FedanonError(f"the table has no QID column {', '.join(repr(m) for m in missing)}")
    for qid in names:
        if qid in taxonomy_file.taxonomies:
            taxonomy_file.taxonomies[qid].encode(df[qid])
        elif qid in taxonomy_file.dynamic_attributes:
            Taxonomy.dynamic(qid, df[qid])
        else:
            raise FedanonError(f"{src}: QID '{qid}' has no taxonomy in the file")
    for s in taxonomy_file.sensitive or []:
        if s.column not in df.columns:
            raise FedanonError(f"the table has no sensitive column '{s.column}' (for {s})")
    _check_class(df, taxonomy_file)


def _check_class(df: pd.DataFrame, tf: TaxonomyFile) -> None:
    if tf.class_column is None:
        return
    if tf.class_column not in df.columns:
        raise FedanonError(f"the table has no class column '{tf.class_column}'")
    if tf.class_values is None:
        return
    values = df[tf.class_column].astype(str)
    bad = (~values.isin(tf.class_values)).to_numpy().nonzero()[0]
    if bad.size:
        row = int(bad[0])
        raise FedanonError(
            f"column '{tf.class_column}': value '{values.iloc[row]}' (first at row {row + 1}) "
            f"is not a class value ({', '.join(tf.class_values)})"
        )
