"""The paper's running example (Tables 1 and 3) and its taxonomies, shared by the tests.

The extracted paper text lost the tables; it states that the first two records, (clerk, 1975,
4350) and (manager, 1955, 4350), form one class linked to the bag {HIV, flu}, and that Table 2
groups rows 1, 2, 5, 6 and rows 3, 4. The rows below are the example of Wong et al.'s
(alpha,k) paper that this paper reuses, which agrees with every one of those statements.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from fedanon.algorithms.alphak.api import anonymize_alpha_k
from fedanon.release import Release
from fedanon.taxonomy.tree import Spec, Taxonomy

QIDS = ["job", "birth", "postcode"]
SENSITIVE = "illness"

TABLE1 = pd.DataFrame(
    {
        "job": [
            "clerk",
            "manager",
            "clerk",
            "factory worker",
            "factory worker",
            "technical supporter",
        ],
        "birth": ["1975", "1955", "1955", "1955", "1975", "1940"],
        "postcode": ["4350", "4350", "5432", "5432", "4350", "4350"],
        "illness": ["HIV", "flu", "flu", "fever", "flu", "fever"],
    }
)


def taxonomies() -> dict[str, Taxonomy]:
    """Job as in the paper's Figure 1; birth year and postcode with one level under '*'."""
    return {
        "job": Taxonomy.categorical(
            "job",
            Spec(
                "*",
                [
                    Spec("white-collar", [Spec("clerk"), Spec("manager")]),
                    Spec("blue-collar", [Spec("factory worker"), Spec("technical supporter")]),
                ],
            ),
        ),
        "birth": Taxonomy.categorical(
            "birth", Spec("*", [Spec("1940"), Spec("1955"), Spec("1975")])
        ),
        "postcode": Taxonomy.categorical("postcode", Spec("*", [Spec("4350"), Spec("5432")])),
    }


def run(
    method: str,
    table: pd.DataFrame = TABLE1,
    *,
    alpha: str = "0.5",
    k: int = 2,
    seed: int = 1,
    taxonomy: Any = "example",
    sensitive: str = SENSITIVE,
) -> Release:
    """`anonymize_alpha_k` on the example's QIDs (and, unless given, the example's trees)."""
    trees = taxonomies() if taxonomy == "example" else taxonomy
    return anonymize_alpha_k(
        table, qids=QIDS, sensitive_column=sensitive, alpha=alpha, k=k, method=method,
        taxonomy=trees, seed=seed,
    )  # fmt: skip
