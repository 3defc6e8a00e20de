"""Global recoding to (alpha,k): the LKC engine with L = |QID|, K = k, C = alpha, S = all values.

The LKC engine already implements top-down specialization of a full-domain cut; (alpha,k) is the
special case where every QID combination is an adversary's knowledge (L = |QID|) and every value
of the sensitive column is bounded by alpha. Generalization is chosen by the discernibility score
because the (alpha,k) setting has no class column to gain information about.
"""

from __future__ import annotations

import pandas as pd

from fedanon.algorithms.alphak.params import AlphaK
from fedanon.algorithms.tds.api import anonymize_lkc
from fedanon.schema import LKCParams, Schema
from fedanon.taxonomy.files import SensitiveValue
from fedanon.taxonomy.tree import Taxonomy
from fedanon.text import as_text


def global_recoding(
    df: pd.DataFrame, taxonomies: list[Taxonomy], sensitive: str, params: AlphaK
) -> pd.DataFrame:
    """The generalized table released by the LKC engine (rows in input order)."""
    values = sorted(as_text(df[sensitive]).unique())
    schema = Schema(taxonomies, [SensitiveValue(sensitive, str(v)) for v in values])
    lkc = LKCParams.of(len(taxonomies), params.k, params.alpha)
    return anonymize_lkc(df, schema, lkc, score="discernibility").table
