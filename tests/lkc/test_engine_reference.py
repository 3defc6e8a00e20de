"""The engine makes exactly the choices of a naive record-level reference implementation."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fedanon.algorithms.tds.engine import LKCEngine
from fedanon.algorithms.tds.local_party import LocalParty
from fedanon.schema import LKCParams, Schema
from fedanon.taxonomy.tree import Spec, Taxonomy

from .reference_tds import reference_tds
from .strategies import lkc_case


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=lkc_case(), score=st.sampled_from(["infogain", "discernibility"]))
def test_engine_matches_reference(case, score):
    schema, table, L, K, C = case
    party = LocalParty(schema, table)
    steps = []
    engine = LKCEngine(
        schema,
        LKCParams.of(L, K, C),
        score=score,
        on_step=lambda s: steps.append((s.attribute, s.value)),
    )
    engine.run(party)
    expected, _ = reference_tds(
        schema.taxonomies,
        party.atoms,
        party.classes,
        list(party.sensitive),
        L,
        K,
        Fraction(C),
        score,
        2,
    )
    want = [(schema.taxonomies[a].attribute, schema.taxonomies[a].labels[x]) for a, x in expected]
    assert steps == want


def test_engine_specializes_until_no_valid_candidate():
    """With K=1, C=1 every value can be specialized down to the leaves."""
    tax = Taxonomy.categorical("a", Spec("*", [Spec("x", [Spec("x1"), Spec("x2")]), Spec("y")]))
    table = pd.DataFrame({"a": ["x1", "x2", "y", "y"], "c": ["p", "q", "p", "q"]})
    schema = Schema([tax], [], "c", ["p", "q"])
    party = LocalParty(schema, table)
    LKCEngine(schema, LKCParams.of(1, 1, 1)).run(party)
    assert list(party.generalized_table()["a"]) == ["x1", "x2", "y", "y"]
    assert np.all(party.record_partition >= 0)
