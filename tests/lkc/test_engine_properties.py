"""Properties of the engine's releases, judged by the independent checker."""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fedanon.algorithms.tds.engine import LKCEngine
from fedanon.algorithms.tds.local_party import LocalParty
from fedanon.models.lkc import check_lkc
from fedanon.schema import LKCParams

from .strategies import lkc_case

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _run(schema, table, L, K, C, score="infogain"):
    party = LocalParty(schema, table)
    result = LKCEngine(schema, LKCParams.of(L, K, C), score=score).run(party)
    return party.generalized_table(), result


def _sensitive(schema):
    out = defaultdict(list)
    for s in schema.sensitive:
        out[s.column].append(s.value)
    return dict(out)


@SETTINGS
@given(case=lkc_case(), score=st.sampled_from(["infogain", "discernibility"]))
def test_release_passes_independent_checker(case, score):
    schema, table, L, K, C = case
    release, result = _run(schema, table, L, K, C, score)
    check = check_lkc(release, schema.qids, _sensitive(schema), L, K, C)
    assert check.ok, check.worst
    assert result.extremes.min_size == check.min_group_size
    for s, conf in zip(schema.sensitive, result.extremes.max_confidence, strict=True):
        assert abs(conf - float(check.max_confidence[(s.column, s.value)])) < 1e-12


def _refines(fine: dict[str, list[str]], coarse: dict[str, list[str]], schema) -> bool:
    """True when cut `fine` is at least as specific as `coarse` on every attribute."""
    for tax in schema.taxonomies:
        index = {label: n for n, label in enumerate(tax.labels)}
        coarse_nodes = {index[x] for x in coarse[tax.attribute]}
        for label in fine[tax.attribute]:
            node = index[label]
            while node not in coarse_nodes:
                node = tax.parent[node]
                if node < 0:
                    return False
    return True


@SETTINGS
@given(case=lkc_case(), extra=st.integers(1, 10))
def test_larger_k_never_yields_a_strictly_finer_cut(case, extra):
    schema, table, L, K, C = case
    _, small = _run(schema, table, L, K, C)
    bigger = K + extra
    if bigger > len(table):
        return
    _, large = _run(schema, table, L, bigger, C)
    strictly_finer = _refines(large.cut, small.cut, schema) and large.cut != small.cut
    assert not strictly_finer


def test_exact_bounds_pass():
    """A group of exactly K and a confidence of exactly C are allowed (non-strict bounds)."""
    import pandas as pd

    from fedanon.schema import Schema
    from fedanon.taxonomy.files import SensitiveValue
    from fedanon.taxonomy.tree import Spec, Taxonomy

    tax = Taxonomy.categorical("a", Spec("*", [Spec("x"), Spec("y")]))
    table = pd.DataFrame(
        {
            "a": ["x"] * 5 + ["y"] * 5,
            "s": ["hit"] + ["no"] * 4 + ["hit"] + ["no"] * 4,
            "c": ["p", "q"] * 5,
        }
    )
    schema = Schema([tax], [SensitiveValue("s", "hit")], "c", ["p", "q"])
    release, _ = _run(schema, table, 1, 5, Fraction(1, 5))
    assert sorted(set(release["a"])) == ["x", "y"]
    release, _ = _run(schema, table, 1, 6, Fraction(1, 5))
    assert set(release["a"]) == {"*"}
