"""Hypothesis strategies for random small tables with random taxonomies."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import strategies as st

from fedanon.schema import Schema
from fedanon.taxonomy.files import SensitiveValue
from fedanon.taxonomy.tree import Spec, Taxonomy


@st.composite
def categorical_tree(draw, name: str, max_depth: int = 3) -> Spec:
    counter = iter(range(10_000))

    def node(depth: int) -> Spec:
        label = f"{name}{next(counter)}"
        if depth >= max_depth or (not draw(st.booleans()) and depth > 0):
            return Spec(label)
        k = draw(st.integers(2, 3))
        return Spec(label, [node(depth + 1) for _ in range(k)])

    return node(0)


@st.composite
def lkc_case(draw, max_rows: int = 60):
    """(schema, table, L, K, C) with 2-4 QIDs, one class, one sensitive value."""
    n_q = draw(st.integers(2, 4))
    taxonomies = []
    for q in range(n_q):
        if draw(st.booleans()):
            spec = draw(categorical_tree(f"q{q}_"))
            taxonomies.append(Taxonomy.categorical(f"q{q}", spec))
        else:
            taxonomies.append(
                Taxonomy.numeric(
                    f"q{q}",
                    Spec(
                        "r",
                        [
                            Spec("a", [Spec("a1", lo=0, hi=3), Spec("a2", lo=3, hi=5)], lo=0, hi=5),
                            Spec("b", lo=5, hi=10),
                        ],
                        lo=0,
                        hi=10,
                    ),
                )
            )
    n = draw(st.integers(4, max_rows))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    data = {}
    for tax in taxonomies:
        if tax.kind == "categorical":
            data[tax.attribute] = rng.choice(tax.atom_labels, n)
        else:
            data[tax.attribute] = rng.integers(0, 10, n)
    data["cls"] = rng.choice(["n", "y"], n)
    data["sens"] = rng.choice(["s", "t", "u"], n, p=[0.15, 0.45, 0.4])
    table = pd.DataFrame(data)
    schema = Schema(taxonomies, [SensitiveValue("sens", "s")], "cls", ["n", "y"])
    L = draw(st.integers(1, n_q + 1))
    K = draw(st.integers(1, max(1, n // 3)))
    share = (table["sens"] == "s").mean()
    C = draw(st.sampled_from(["1", "0.5", "0.4", "0.3"]))
    if float(C) < share:
        C = "1"
    return schema, table, L, K, C
