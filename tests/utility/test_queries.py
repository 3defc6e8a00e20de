"""The count-query workload and its three estimators, on tables small enough to count by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedanon.errors import FedanonError
from fedanon.taxonomy.tree import Spec, Taxonomy
from fedanon.utility.queries import (
    CountQuery,
    QueryWorkload,
    average_relative_error,
    predicate_size,
    relative_error,
)

QIDS = ("job", "age")
RAW = pd.DataFrame(
    {
        "job": ["clerk", "manager", "clerk", "worker", "tech", "worker"],
        "age": ["30", "40", "30", "50", "40", "30"],
        "ill": ["flu", "hiv", "flu", "flu", "cold", "hiv"],
    }
)


def _job_taxonomy() -> Taxonomy:
    return Taxonomy.categorical(
        "job",
        Spec(
            "ANY",
            [
                Spec("white", [Spec("clerk"), Spec("manager")]),
                Spec("blue", [Spec("tech"), Spec("worker")]),
            ],
        ),
    )


def _hand_workload(queries: list[CountQuery]) -> QueryWorkload:
    """A workload with predicates written by hand over RAW's sorted domains."""
    domains = {
        "job": np.array(["clerk", "manager", "tech", "worker"]),
        "age": np.array(["30", "40", "50"]),
        "ill": np.array(["cold", "flu", "hiv"]),
    }
    return QueryWorkload(QIDS, "ill", 2, 0.5, 0, domains, queries, np.ones(len(queries)))


def _query(job: list[int], age: list[int], ill: list[int]) -> CountQuery:
    return CountQuery(("job", "age"), (np.array(job), np.array(age)), np.array(ill))


def _brute_count(df: pd.DataFrame, wl: QueryWorkload, q: CountQuery) -> int:
    mask = df[wl.sensitive].isin(set(wl.domains[wl.sensitive][q.sensitive_indices]))
    for attr, idx in zip(q.attributes, q.value_indices, strict=True):
        mask &= df[attr].isin(set(wl.domains[attr][idx]))
    return int(mask.sum())


# ---------------------------------------------------------------- b and the drawing
def test_predicate_size_by_hand() -> None:
    # 0.05 ** (1/5) = 0.5493: 74 * 0.5493 = 40.6 -> 41; 14 * 0.5493 = 7.69 -> 8.
    assert predicate_size(74, 4, 0.05) == 41
    assert predicate_size(14, 4, 0.05) == 8
    # 0.25 ** (1/2) = 0.5 exactly: 4 * 0.5 = 2 is not rounded up to 3.
    assert predicate_size(4, 1, 0.25) == 2
    assert predicate_size(2, 4, 1.0) == 2
    assert predicate_size(100, 1, 1e-12) == 1


def test_generated_queries_have_the_stated_shape_and_true_counts() -> None:
    rng = np.random.default_rng(3)
    raw = pd.DataFrame(
        {f"q{i}": rng.integers(0, 6 + i, size=400).astype(str) for i in range(5)}
        | {"s": rng.choice(["a", "b", "c", "d"], size=400)}
    )
    qids = [f"q{i}" for i in range(5)]
    wl = QueryWorkload.generate(raw, qids, "s", qd=3, s=0.1, n_queries=60, seed=7)
    assert len(wl.queries) == 60
    for q, act in zip(wl.queries, wl.actual, strict=True):
        assert len(set(q.attributes)) == 3
        assert list(q.attributes) == [a for a in qids if a in q.attributes]
        for attr, idx in zip(q.attributes, q.value_indices, strict=True):
            assert len(set(idx.tolist())) == predicate_size(len(wl.domains[attr]), 3, 0.1)
        assert len(q.sensitive_indices) == predicate_size(4, 3, 0.1)
        assert act == _brute_count(raw, wl, q) > 0
    np.testing.assert_array_equal(wl.true_counts(raw), wl.actual)


def test_same_seed_same_workload_other_seed_other_workload() -> None:
    a = QueryWorkload.generate(RAW, QIDS, "ill", qd=2, s=0.1, n_queries=20, seed=1)
    b = QueryWorkload.generate(RAW, QIDS, "ill", qd=2, s=0.1, n_queries=20, seed=1)
    c = QueryWorkload.generate(RAW, QIDS, "ill", qd=2, s=0.1, n_queries=20, seed=2)
    key = [
        (q.attributes, [v.tolist() for v in q.value_indices], q.sensitive_indices.tolist())
        for q in a.queries
    ]
    assert key == [
        (q.attributes, [v.tolist() for v in q.value_indices], q.sensitive_indices.tolist())
        for q in b.queries
    ]
    assert key != [
        (q.attributes, [v.tolist() for v in q.value_indices], q.sensitive_indices.tolist())
        for q in c.queries
    ]
    assert QueryWorkload.generate(RAW, QIDS, "ill", 2, 0.5, 3).seed >= 0


def test_empty_queries_are_redrawn() -> None:
    # Only rows whose values agree in every column exist, so most draws count zero.
    values = [str(i) for i in range(30)]
    raw = pd.DataFrame({"x": values, "y": values, "s": values})
    wl = QueryWorkload.generate(raw, ["x", "y"], "s", qd=2, s=0.05, n_queries=25, seed=4)
    assert all(act > 0 for act in wl.actual)
    assert all(
        _brute_count(raw, wl, q) == act for q, act in zip(wl.queries, wl.actual, strict=True)
    )


def test_a_workload_that_cannot_be_drawn_is_a_one_line_error() -> None:
    values = [str(i) for i in range(300)]
    raw = pd.DataFrame({"x": values, "y": values, "z": values, "s": values})
    with pytest.raises(FedanonError, match="non-zero count"):
        QueryWorkload.generate(raw, ["x", "y", "z"], "s", qd=3, s=1e-9, n_queries=2, seed=0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"qd": 0}, "qd must be"),
        ({"qd": 3}, "qd must be"),
        ({"s": 0.0}, "selectivity"),
        ({"s": 1.5}, "selectivity"),
        ({"n_queries": 0}, "number of queries"),
        ({"sensitive": "job"}, "also a QID"),
        ({"sensitive": "nope"}, "no column 'nope'"),
    ],
)
def test_bad_workload_parameters(kwargs: dict, message: str) -> None:
    args = {"qd": 2, "s": 0.5, "n_queries": 5, "seed": 0, "sensitive": "ill"} | kwargs
    with pytest.raises(FedanonError, match=message):
        QueryWorkload.generate(RAW, QIDS, **args)


# ---------------------------------------------------------------- estimators by hand
def test_direct_estimate_counts_the_table_as_given() -> None:
    wl = _hand_workload([_query([0, 3], [0], [1, 2]), _query([1], [1, 2], [2])])
    # (clerk|worker, 30, flu|hiv): rows 0, 2, 5 -> 3; (manager, 40|50, hiv): row 1 -> 1.
    np.testing.assert_array_equal(wl.estimate_direct(RAW), [3, 1])
    shifted = RAW.assign(ill=["cold"] * 6)
    np.testing.assert_array_equal(wl.estimate_direct(shifted), [0, 0])


def test_generalized_estimate_is_uniform_within_released_values() -> None:
    release = pd.DataFrame(
        {
            "job": ["white", "white", "white", "blue", "blue", "blue"],
            "age": ["[30-45)", "[30-45)", "[30-45)", "*", "*", "*"],
            "ill": RAW["ill"],
        }
    )
    wl = _hand_workload([_query([0, 3], [0], [1, 2])])
    # Rows 0-2: job 'white' = {clerk, manager}, pred {clerk, worker} picks 1/2; age [30-45) =
    # {30, 40}, pred {30} picks 1/2; all three have ill in {flu, hiv}: 3 * 1/4 = 0.75.
    # Rows 3-5: 'blue' = {tech, worker}: 1/2; age '*' = {30, 40, 50}: 1/3; ill flu, cold, hiv:
    # two rows match -> 2 * 1/6. Total 0.75 + 1/3.
    est = wl.estimate_generalized(release, {"job": _job_taxonomy()})
    assert est[0] == pytest.approx(0.75 + 1 / 3)


def test_generalized_estimate_of_the_raw_table_is_exact() -> None:
    wl = QueryWorkload.generate(RAW, QIDS, "ill", qd=2, s=0.3, n_queries=30, seed=5)
    np.testing.assert_allclose(wl.estimate_generalized(RAW), wl.actual)


def test_generalized_estimate_with_closed_interval_and_root_label() -> None:
    release = RAW.assign(job="ANY", age="[30-50]")
    wl = _hand_workload([_query([2], [2], [0])])
    # Only row 4 has ill = cold: job ANY covers 4 jobs (pred {tech}: 1/4), age [30-50]
    # covers 30, 40, 50 (pred {50}: 1/3).
    assert wl.estimate_generalized(release, {"job": _job_taxonomy()})[0] == pytest.approx(1 / 12)


def test_unreadable_generalized_value_is_a_one_line_error() -> None:
    wl = _hand_workload([_query([0], [0], [0])])
    with pytest.raises(FedanonError, match="released value 'office'"):
        wl.estimate_generalized(RAW.assign(job="office"))


def test_lossy_join_estimate_by_hand() -> None:
    nss = pd.DataFrame({"job": RAW["job"], "age": RAW["age"], "ClassID": list("xxxyyy")})
    ss = pd.DataFrame(
        {"ClassID": list("yxyxyx"), "ill": ["flu", "flu", "hiv", "hiv", "cold", "flu"]}
    )
    wl = _hand_workload([_query([0, 3], [0], [1, 2])])
    # Class x (rows 0-2 in NSS): (clerk|worker, 30) matches rows 0 and 2 -> 2; SS of x:
    # flu, hiv, flu, all in {flu, hiv} -> 3; 2 * 3 / 3 = 2.
    # Class y (rows 3-5): row 5 (worker, 30) -> 1; SS of y: flu, hiv, cold -> 2; 1 * 2 / 3.
    assert wl.estimate_lossy_join(nss, ss)[0] == pytest.approx(2 + 2 / 3)


def test_lossy_join_of_singleton_classes_is_exact() -> None:
    wl = QueryWorkload.generate(RAW, QIDS, "ill", qd=2, s=0.3, n_queries=30, seed=8)
    ids = [f"c{i}" for i in range(6)]
    nss = RAW[list(QIDS)].assign(ClassID=ids)
    ss = pd.DataFrame({"ClassID": ids, "ill": RAW["ill"]}).iloc[::-1]
    np.testing.assert_allclose(wl.estimate_lossy_join(nss, ss), wl.actual)


def test_lossy_join_refuses_tables_of_different_class_sizes() -> None:
    wl = _hand_workload([_query([0], [0], [0])])
    nss = RAW[list(QIDS)].assign(ClassID=list("xxxyyy"))
    ss = pd.DataFrame({"ClassID": list("xxyyyy"), "ill": RAW["ill"]})
    with pytest.raises(FedanonError, match="disagree"):
        wl.estimate_lossy_join(nss, ss)


def test_relative_error() -> None:
    np.testing.assert_allclose(relative_error(np.array([4, 2]), np.array([3, 3])), [0.25, 0.5])
    assert average_relative_error(np.array([4, 2]), np.array([3, 3])) == pytest.approx(0.375)
    with pytest.raises(ValueError):
        relative_error(np.array([0]), np.array([1]))
