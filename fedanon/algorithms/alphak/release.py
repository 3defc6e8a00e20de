"""Release shapes: the generalized table, and the lossy-join pair NSS + SS.

NSS holds the QIDs ungeneralized and a ClassID; SS holds the ClassID and the sensitive value;
each has one row per original record. ClassIDs are random opaque tokens from `secrets` and both
tables are shuffled independently with a generator seeded from `secrets`, never from the user's
seed, so neither the tokens nor the row orders carry anything about the input's order or about
the algorithm's run. The command line writes the pair, all or nothing, together with a note
(:data:`NOTE`) telling the reader that each row of each table is one original record (so that
nobody mistakes the join for the data).
"""

from __future__ import annotations

import secrets
from pathlib import Path

import numpy as np
import pandas as pd

from fedanon.algorithms.alphak.local_recoding import Partition
from fedanon.taxonomy.tree import Taxonomy

CLASS_COLUMN = "ClassID"

NOTE = """\
(alpha,k) lossy-join release
============================

This release is two tables that share the column {cls}:

- {nss}: the quasi-identifier columns ({qids}) exactly as in the original data, and {cls}.
- {ss}: {cls} and the sensitive column '{sensitive}'.

Each row of EACH table is one original record; the tables have {rows} rows each. Rows in the two
tables are in independent random orders: row i of one table has nothing to do with row i of the
other. {cls} values are random tokens that only say which rows belong to the same class.

Joining the two tables on {cls} does NOT give back the original table: every record of a class is
joined with every sensitive value of that class. A class X of |X| records stands for all pairings
equally, so count estimates weight each NSS row of X by (matching SS rows of X) / |X|.

Every class has at least k = {k} records and no sensitive value makes up more than alpha = {alpha}
of any class.
"""


def generalized_table(
    df: pd.DataFrame, qids: list[str], taxonomies: list[Taxonomy], partition: Partition
) -> pd.DataFrame:
    """The input with each QID replaced by its class's taxonomy label; other columns unchanged."""
    out = df.copy()
    for a, (column, tax) in enumerate(zip(qids, taxonomies, strict=True)):
        labels = np.asarray(tax.labels, dtype=object)
        out[column] = labels[partition.nodes[partition.class_of_row, a]]
    return out


def class_tokens(n_classes: int) -> np.ndarray:
    """Distinct random opaque ClassIDs (16 hex digits each) from `secrets`."""
    tokens: set[str] = set()
    while len(tokens) < n_classes:
        tokens.add(secrets.token_hex(8))
    ordered = list(tokens)
    secrets.SystemRandom().shuffle(ordered)
    return np.array(ordered, dtype=object)


def lossy_join_tables(
    df: pd.DataFrame, qids: list[str], sensitive: str, class_of_row: np.ndarray
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(NSS, SS) for a partition of the records, with fresh tokens and independent shuffles."""
    ids = class_tokens(int(class_of_row.max()) + 1)[class_of_row]
    shuffle = np.random.default_rng(secrets.randbits(128))
    nss_order = shuffle.permutation(len(df))
    ss_order = shuffle.permutation(len(df))
    nss = df[qids].iloc[nss_order].reset_index(drop=True)
    nss[CLASS_COLUMN] = ids[nss_order]
    ss = pd.DataFrame(
        {
            CLASS_COLUMN: ids[ss_order],
            sensitive: df[sensitive].iloc[ss_order].reset_index(drop=True),
        }
    )
    return nss, ss


def note_path(nss_path: str | Path) -> Path:
    """Where the reading note of a pair goes: beside NSS, named after it."""
    nss_path = Path(nss_path)
    return nss_path.with_name(nss_path.stem + ".README.txt")
