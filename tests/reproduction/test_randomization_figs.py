"""Yang and Qiao's experiment section (Figs. 6-8): the peer methods, and the shapes on Adult.

The fast tests check the baselines (fedanon.algorithms.randomization.baselines) and the paper's
query form (a random number of values per predicate) on small hand-made tables. The tests
marked `reproduce` (about 30 s together) assert the shapes the paper reports, on Adult's 30,162
rows, with reduced settings; bench/reproduce_randomization_figs.py prints the full numbers
(docs/reproduction.md, "Randomization: the experiment section").
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedanon.algorithms.randomization.adult import ADULT_QIDS
from fedanon.algorithms.randomization.api import anonymize_randomize
from fedanon.algorithms.randomization.baselines import (
    entropy_l_diverse_groups,
    estimate_groups,
    permuted,
)
from fedanon.algorithms.randomization.coding import observed_domain
from fedanon.algorithms.randomization.rules import MIN_SUPPORT, as_transactions
from fedanon.errors import FedanonError, InfeasibleError
from fedanon.models.l_diversity import check_l_diversity
from fedanon.readers.datadir import data_dir, have_data
from fedanon.readers.table_io import read_table
from fedanon.utility.miner import frequent_itemsets
from fedanon.utility.queries import CountQuery, QueryWorkload, relative_error


def _table(n: int = 400, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(20, 60, n).astype(str),
            "sex": rng.choice(["F", "M"], n),
            "job": rng.choice(["a", "b", "c", "d"], n),
            "ill": rng.choice(list("pqrstuvw"), n),
        }
    )


def test_random_predicate_sizes_vary_over_the_whole_domain():
    table = _table()
    workload = QueryWorkload.generate(
        table, ["age", "sex", "job"], "ill", qd=2, n_queries=300, seed=1, sizes="random"
    )
    age_sizes = {
        len(v)
        for q in workload.queries
        for a, v in zip(q.attributes, q.value_indices, strict=True)
        if a == "age"
    }
    sens_sizes = {len(q.sensitive_indices) for q in workload.queries}
    # 40 ages, 8 illnesses: random sizes cover small and large predicates alike.
    assert min(age_sizes) <= 5 and max(age_sizes) >= 35
    assert min(sens_sizes) == 1 and max(sens_sizes) == 8
    assert workload.to_dict()["predicate_sizes"] == "random"
    np.testing.assert_array_equal(workload.actual, workload.true_counts(table))
    fixed = QueryWorkload.generate(table, ["age", "sex", "job"], "ill", qd=2, n_queries=50, seed=1)
    assert {len(q.sensitive_indices) for q in fixed.queries} == {3}  # ceil(8 * 0.05^(1/3))


def test_unknown_predicate_size_mode_is_refused():
    with pytest.raises(FedanonError, match="'fixed' or 'random'"):
        QueryWorkload.generate(_table(), ["age", "sex"], "ill", qd=1, sizes="uniform")


def test_mondrian_groups_are_entropy_l_diverse_and_cut_the_table():
    table = _table(2000)
    group = entropy_l_diverse_groups(table, ["age", "sex", "job"], "ill", 5)
    assert group.max() + 1 >= 8
    released = table.assign(g=group.astype(str))
    assert check_l_diversity(released, ["g"], "ill", 5, measure="entropy").ok
    assert not check_l_diversity(released, ["g"], "ill", 7.9, measure="entropy").ok


def test_mondrian_refuses_a_table_that_is_not_l_diverse():
    table = _table().assign(ill="p")
    with pytest.raises(InfeasibleError, match="entropy 2-diverse"):
        entropy_l_diverse_groups(table, ["age"], "ill", 2)


def test_permutation_keeps_qids_and_each_groups_sensitive_multiset():
    table = _table()
    group = np.arange(len(table)) % 7
    out = permuted(table, group, "ill", seed=4)
    pd.testing.assert_frame_equal(out[["age", "sex", "job"]], table[["age", "sex", "job"]])
    for g in range(7):
        assert sorted(out["ill"][group == g]) == sorted(table["ill"][group == g])
    assert (out["ill"] != table["ill"]).mean() > 0.5


def test_estimate_12_by_hand():
    # Group 0: sex F, F, M; job a, a, b; ill p, q, p.  Group 1: sex M, M; job c, d; ill q, q.
    table = pd.DataFrame(
        {
            "sex": ["F", "F", "M", "M", "M"],
            "job": ["a", "a", "b", "c", "d"],
            "ill": ["p", "q", "p", "q", "q"],
        }
    )
    group = np.array([0, 0, 0, 1, 1])
    domains = {c: np.array(sorted(set(table[c]))) for c in table}
    # sex in {F}, job in {a, c}, ill in {q}
    query = CountQuery(("job", "sex"), (np.array([0, 2]), np.array([0])), np.array([1]))
    workload = QueryWorkload(("job", "sex"), "ill", 2, 0.5, 0, domains, [query], np.array([1]))
    # uniform: group 0 has 1 q, job {a, b} -> 1/2, sex {F, M} -> 1/2; group 1 sex {M} -> 0.
    assert estimate_groups(workload, table, group, "uniform")[0] == pytest.approx(0.25)
    # marginal: group 0 job 2/3 in {a, c}, sex 2/3 F -> 1 x 4/9; group 1 sex 0 of 2 F.
    assert estimate_groups(workload, table, group, "marginal")[0] == pytest.approx(4 / 9)
    with pytest.raises(FedanonError, match="'uniform' or 'marginal'"):
        estimate_groups(workload, table, group, "independent")


# ---------------------------------------------------------------- Adult, the paper's shapes
QIDS = ADULT_QIDS
COLUMNS = [*QIDS, "occupation"]


@pytest.fixture(scope="module")
def adult() -> pd.DataFrame:
    return read_table(data_dir() / "adult" / "adult_train.csv")


def _quasi_sensitive_itemsets(table: pd.DataFrame, domains: list[list[str]]) -> set:
    first_sensitive = sum(len(d) for d in domains[:-1])
    found = frequent_itemsets(as_transactions(table, COLUMNS, domains), MIN_SUPPORT)
    return {i for i in found if max(i) >= first_sensitive}


@pytest.mark.slow
@pytest.mark.reproduce
@pytest.mark.skipif(not have_data("adult", "adult_train.csv"), reason="needs Adult")
def test_fig6b_ra_answers_5_qid_queries_better_than_the_l_diverse_tables(adult):
    workload = QueryWorkload.generate(
        adult, QIDS, "occupation", qd=5, n_queries=300, seed=5, sizes="random"
    )
    ra = anonymize_randomize(adult, qids=QIDS, method="ra", p="uniform", seed=1000).table
    ra_error = np.median(relative_error(workload.actual, workload.estimate_direct(ra)))
    for ell in (10, 5):
        group = entropy_l_diverse_groups(adult, QIDS, "occupation", ell)
        for within in ("uniform", "marginal"):
            estimate = estimate_groups(workload, adult, group, within)
            assert ra_error < np.median(relative_error(workload.actual, estimate))
        nss = adult[QIDS].assign(ClassID=group)
        ss = pd.DataFrame({"ClassID": group, "occupation": adult["occupation"].to_numpy()})
        joined = workload.estimate_lossy_join(nss, ss)
        assert ra_error < np.median(relative_error(workload.actual, joined))


@pytest.mark.slow
@pytest.mark.reproduce
@pytest.mark.skipif(not have_data("adult", "adult_train.csv"), reason="needs Adult")
def test_fig7_and_8_recovery_shapes(adult):
    domains = [observed_domain(adult[c]) for c in COLUMNS]
    base = _quasi_sensitive_itemsets(adult, domains)
    assert len(base) > 50

    def recovered(table: pd.DataFrame) -> float:
        return len(base & _quasi_sensitive_itemsets(table, domains)) / len(base)

    # Fig. 7: RA recovers more quasi-sensitive associations than the permuted data.
    ra = anonymize_randomize(adult, qids=QIDS, method="ra", p="uniform", seed=1000).table
    group = entropy_l_diverse_groups(adult, QIDS, "occupation", 10)
    assert recovered(ra) > recovered(permuted(adult, group, "occupation", 0)) + 0.1
    # Fig. 8(a): more attributes redrawn (k), fewer original associations recovered.
    by_k = [
        recovered(anonymize_randomize(adult, qids=QIDS, method="enhanced", attrs=k, seed=7).table)
        for k in (1, 5, 9)
    ]
    assert by_k[0] > by_k[1] > by_k[2]
    # Fig. 8(b), k = 5: every frequent item survives; shorter associations survive more often.
    k5 = _quasi_sensitive_itemsets(
        anonymize_randomize(adult, qids=QIDS, method="enhanced", attrs=5, seed=7).table, domains
    )
    share = {
        n: len({i for i in base if len(i) == n} & k5) / len({i for i in base if len(i) == n})
        for n in (1, 2, 3, 4)
    }
    assert share[1] == 1.0
    assert share[1] >= share[2] >= share[3] > share[4]
