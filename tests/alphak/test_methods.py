"""The four (alpha,k) methods on the paper's example and on hand-sized tables."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from fedanon.algorithms.alphak.anatomy import anatomy_groups, diversity_for
from fedanon.algorithms.alphak.api import anonymize_alpha_k
from fedanon.algorithms.alphak.local_recoding import plan_split
from fedanon.algorithms.alphak.params import AlphaK
from fedanon.errors import FedanonError, InfeasibleError
from fedanon.models.alpha_k import check_generalized, check_pair
from fedanon.taxonomy.tree import Spec, Taxonomy
from fedanon.utility.queries import CountQuery, QueryWorkload
from tests.alphak.example import QIDS, SENSITIVE, TABLE1, run, taxonomies


def _rows(table: pd.DataFrame) -> set[tuple[str, ...]]:
    return {tuple(r) for r in table[[*QIDS, SENSITIVE]].astype(str).itertuples(index=False)}


def test_local_recoding_reproduces_the_papers_table_3() -> None:
    # Worked by hand: the root splits on postcode (all 6 records stay in satisfying children;
    # job keeps 0, birth keeps 2); 4350 splits on job into white-/blue-collar pairs; 5432
    # splits on birth (both records born 1955); nothing can be specialized further.
    release = run("local")
    assert list(release.tables) == ["table"]
    assert _rows(release.table) == {
        ("white-collar", "*", "4350", "HIV"),
        ("white-collar", "*", "4350", "flu"),
        ("*", "1955", "5432", "flu"),
        ("*", "1955", "5432", "fever"),
        ("blue-collar", "*", "4350", "flu"),
        ("blue-collar", "*", "4350", "fever"),
    }
    # Each record keeps its own sensitive value and stays in its row.
    assert release.table[SENSITIVE].tolist() == TABLE1[SENSITIVE].tolist()
    assert release.report["classes"] == 3
    assert release.report["min_class_size"] == 2
    assert release.report["max_share"] == 0.5


def test_lossy_join_of_the_example_is_tables_5_and_6() -> None:
    release = run("lossy-join")
    nss, ss = release.tables["nss"], release.tables["ss"]
    assert nss is not None and ss is not None
    assert list(nss.columns) == [*QIDS, "ClassID"]
    assert list(ss.columns) == ["ClassID", SENSITIVE]
    bags = {
        frozenset(map(tuple, nss.loc[nss.ClassID == c, QIDS].to_numpy().tolist())): sorted(
            ss.loc[ss.ClassID == c, SENSITIVE]
        )
        for c in nss.ClassID.unique()
    }
    assert bags == {
        frozenset({("clerk", "1975", "4350"), ("manager", "1955", "4350")}): ["HIV", "flu"],
        frozenset({("clerk", "1955", "5432"), ("factory worker", "1955", "5432")}): [
            "fever",
            "flu",
        ],
        frozenset({("factory worker", "1975", "4350"), ("technical supporter", "1940", "4350")}): [
            "fever",
            "flu",
        ],
    }


def test_query_estimates_on_the_example_by_hand() -> None:
    """COUNT(job = clerk AND illness = HIV): act 1; lossy join 1/2; generalized table 1/2."""
    domains = {
        "job": np.array(["clerk", "factory worker", "manager", "technical supporter"]),
        "birth": np.array(["1940", "1955", "1975"]),
        "postcode": np.array(["4350", "5432"]),
        SENSITIVE: np.array(["HIV", "fever", "flu"]),
    }
    query = CountQuery(("job",), (np.array([0]),), np.array([0]))
    wl = QueryWorkload(tuple(QIDS), SENSITIVE, 1, 0.5, 0, domains, [query], np.array([1]))
    lossy = run("lossy-join")
    local = run("local")
    # Lossy join: class {clerk 1975, manager 1955} has 1 clerk and 1 HIV of 2 -> 1 * 1 / 2;
    # class {clerk 1955, factory worker 1955} has 1 clerk and no HIV -> 0.
    assert wl.estimate_lossy_join(lossy.tables["nss"], lossy.tables["ss"])[0] == pytest.approx(0.5)
    # Generalized: the HIV row is (white-collar, *, 4350): clerk is 1 of its 2 jobs -> 1/2.
    assert wl.estimate_generalized(local.table, taxonomies())[0] == pytest.approx(0.5)


def test_global_recoding_uses_one_cut_for_every_record() -> None:
    release = run("global")
    assert check_generalized(release.table, QIDS, SENSITIVE, "0.5", 2).ok
    # Full-domain recoding: a value generalized once is generalized in every record, so no raw
    # value shares a column with one of its own ancestors.
    for column in QIDS:
        tax = taxonomies()[column]
        released = set(release.table[column])
        for value in released:
            node = tax.labels.index(value)
            ancestors = set()
            while tax.parent[node] >= 0:
                node = tax.parent[node]
                ancestors.add(tax.labels[node])
            assert not ancestors & released


def test_plan_split_moves_back_the_value_the_parent_lacks() -> None:
    # Values (HIV, flu, fever, cold). Child 0 = {HIV} violates k = 2 and goes back; the parent
    # {HIV} then violates. The largest satisfying child (child 1: flu 2, fever 2, cold 1) can
    # spare any one record and stay (0.5, 2); flu, fever and cold are all absent at the parent,
    # so the first of them, flu, moves back. Child 2 (size 2) cannot spare a record.
    counts = np.array([[1, 0, 0, 0], [0, 2, 2, 1], [0, 1, 1, 0]])
    plan = plan_split(counts, AlphaK.of("0.5", 2))
    assert plan is not None
    satisfying, moved = plan
    assert satisfying.tolist() == [False, True, True]
    assert moved.tolist() == [[0, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0]]


def test_plan_split_gives_up_when_no_child_can_spare_a_record() -> None:
    counts = np.array([[1, 0], [1, 1]])
    assert plan_split(counts, AlphaK.of("0.5", 2)) is None


def test_anatomy_groups_by_hand() -> None:
    # alpha 1/2, k 2 -> l = 2. Buckets a:3, b:2, c:1 -> groups {a,b}, {a,b}, {a,c}.
    codes = np.array([0, 0, 0, 1, 1, 2])
    groups = anatomy_groups(codes, 3, AlphaK.of("0.5", 2), seed=3)
    members = sorted(sorted(codes[groups == g].tolist()) for g in np.unique(groups))
    assert members == [[0, 1], [0, 1], [0, 2]]


def test_anatomy_residue_joins_groups_without_its_value() -> None:
    # l = 3 on a:2, b:2, c:2, d:1 -> groups {a,b,c} twice, d left over joins one of them.
    codes = np.array([0, 0, 1, 1, 2, 2, 3])
    groups = anatomy_groups(codes, 4, AlphaK.of("1/3", 3), seed=0)
    sizes = sorted(np.bincount(groups).tolist())
    assert sizes == [3, 4]
    for g in np.unique(groups):
        assert len(set(codes[groups == g])) == int(np.sum(groups == g))


def test_anatomy_residue_never_joins_a_group_holding_its_value() -> None:
    # l = 3 on a:2, b:2, c:2, d:2 (ties between equal buckets: lower value first). Round 1
    # takes a, b, c; round 2 takes d (now the largest), a, b; c and d are left over. c is
    # already in group 0 and d in group 1, so c must join group 1 and d group 0: both
    # groups end as {a, b, c, d}, whatever the seed.
    codes = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    for seed in range(20):
        groups = anatomy_groups(codes, 4, AlphaK.of("1/3", 3), seed=seed)
        members = sorted(sorted(codes[groups == g].tolist()) for g in np.unique(groups))
        assert members == [[0, 1, 2, 3], [0, 1, 2, 3]], seed


def test_plan_split_takes_records_from_the_largest_satisfying_child_first() -> None:
    # Values v0..v4, (0.5, 2). Child 0 = {v0} violates and goes back: the parent {v0} is too
    # small. Children 1 (v1, v2, v3 twice each: 6 records) and 2 (v2, v3, v4 once: 3
    # records) can both spare any record. The largest, child 1, gives first: of v1, v2, v3
    # (all absent at the parent) the first, v1; the parent {v0, v1} then satisfies.
    counts = np.array([[1, 0, 0, 0, 0], [0, 2, 2, 2, 0], [0, 0, 1, 1, 1]])
    plan = plan_split(counts, AlphaK.of("0.5", 2))
    assert plan is not None
    satisfying, moved = plan
    assert satisfying.tolist() == [False, True, True]
    assert moved.tolist() == [[0] * 5, [0, 1, 0, 0, 0], [0] * 5]


def test_plan_split_moves_back_the_value_least_represented_at_the_parent() -> None:
    # (0.5, 2): child 0 = {v0, v0, v1} violates (2 of 3 > 1/2) and goes back; the parent
    # {v0:2, v1:1} violates too. Child 1 = {v0:2, v1:2, v2:2} can spare any value; the one
    # least represented at the parent is v2 (0 there): the parent becomes {2, 1, 1}, share
    # 2/4 = 1/2, and satisfies after one move. (Moving v0, the most represented, would make
    # the parent worse, and no child could then repair it.)
    counts = np.array([[2, 1, 0], [2, 2, 2]])
    plan = plan_split(counts, AlphaK.of("0.5", 2))
    assert plan is not None
    satisfying, moved = plan
    assert satisfying.tolist() == [False, True]
    assert moved.tolist() == [[0, 0, 0], [0, 0, 1]]


def test_local_recoding_ties_between_attributes_go_to_the_earlier_qid() -> None:
    # Two QIDs with a root and two leaves each; (1, 2). Splitting on u ({x, x} | {y, y}) and
    # on w ({p, p} | {q, q}) both keep all 4 records in satisfying children: the tie goes to
    # u, the earlier QID. Each child of u then holds one p and one q: splitting on w leaves
    # single records (k = 2 violated), so nothing is specialized further.
    trees = {
        "u": Taxonomy.categorical("u", Spec("*", [Spec("x"), Spec("y")])),
        "w": Taxonomy.categorical("w", Spec("*", [Spec("p"), Spec("q")])),
    }
    table = pd.DataFrame({"u": ["x", "x", "y", "y"], "w": ["p", "q", "p", "q"], "s": list("abab")})
    release = anonymize_alpha_k(
        table, qids=["u", "w"], sensitive_column="s", alpha="1", k=2, method="local",
        taxonomy=trees, seed=0,
    )  # fmt: skip
    assert release.table[["u", "w"]].values.tolist() == [
        ["x", "*"],
        ["x", "*"],
        ["y", "*"],
        ["y", "*"],
    ]


def test_anatomy_diversity_parameter() -> None:
    assert diversity_for(AlphaK.of("0.33", 2)) == 4
    assert diversity_for(AlphaK.of("1/3", 2)) == 3
    assert diversity_for(AlphaK.of("0.5", 5)) == 5


def test_anatomy_infeasible_beyond_n_over_l() -> None:
    # (1, 3) holds for the whole table, but 3 of 6 records share a value and 3 * l > 6.
    table = TABLE1.assign(illness=["a", "a", "a", "b", "c", "d"])
    with pytest.raises(InfeasibleError, match="Anatomy infeasible"):
        run("anatomy", table, alpha="1", k=3, seed=0, taxonomy=None)


def test_seed_makes_local_recoding_deterministic() -> None:
    rng = np.random.default_rng(0)
    table = pd.DataFrame(
        {
            "job": rng.choice(["clerk", "manager", "factory worker", "technical supporter"], 300),
            "birth": rng.choice(["1940", "1955", "1975"], 300),
            "postcode": rng.choice(["4350", "5432"], 300),
            "illness": rng.choice(["HIV", "flu", "fever", "cold"], 300),
        }
    )
    a = run("local", table, alpha="0.4", k=3, seed=5)
    b = run("local", table, alpha="0.4", k=3, seed=5)
    pd.testing.assert_frame_equal(a.table, b.table)
    assert a.report["seed"] == 5


@pytest.mark.parametrize(
    ("alpha", "k", "sensitive", "message"),
    [
        ("0", 2, SENSITIVE, "alpha must be in"),
        ("1.2", 2, SENSITIVE, "alpha must be in"),
        ("x", 2, SENSITIVE, "alpha must be a number"),
        ("0.5", 0, SENSITIVE, "k must be"),
        ("0.5", 2, "job", "also a QID"),
        ("0.3", 2, SENSITIVE, "infeasible"),
        ("0.5", 7, SENSITIVE, "fewer than k"),
    ],
)
def test_bad_parameters_are_one_line_errors(
    alpha: str, k: int, sensitive: str, message: str
) -> None:
    for method in ("global", "local", "lossy-join", "anatomy"):
        with pytest.raises(FedanonError, match=message) as info:
            run(method, alpha=alpha, k=k, seed=0, sensitive=sensitive)
        assert "\n" not in str(info.value)


def test_checks_find_the_breaking_class() -> None:
    table = TABLE1.assign(job="*", birth="*", postcode=["a", "a", "b", "b", "b", "c"])
    result = check_generalized(table, QIDS, SENSITIVE, "0.5", 2)
    assert not result.ok
    # Class b = {flu, fever, flu} breaks alpha (2/3), class c = {fever} breaks k.
    assert result.violations == 2 and result.min_class_size == 1
    assert result.first_violation == {
        "class": {"job": "*", "birth": "*", "postcode": "b"},
        "size": 3,
        "largest_share": "2/3",
        "breaks": "alpha",
    }
    assert check_generalized(table, QIDS, SENSITIVE, "1", 1).ok
    # Exactly at the bound passes: class b is {flu, fever, flu} -> 2/3, class a is now
    # {HIV, flu, fever} -> 1/3.
    merged = table.assign(postcode=["a", "a", "b", "b", "b", "a"])
    assert check_generalized(merged, QIDS, SENSITIVE, "2/3", 3).ok
    assert check_generalized(merged, QIDS, SENSITIVE, "2/3", 3).max_share == Fraction(2, 3)
    assert not check_generalized(merged, QIDS, SENSITIVE, "0.66", 3).ok
    assert not check_generalized(merged, QIDS, SENSITIVE, "2/3", 4).ok


def test_pair_check_refuses_tables_that_are_not_one_release() -> None:
    nss = pd.DataFrame({"job": ["a", "b", "c", "d"], "ClassID": ["x", "x", "y", "y"]})
    ss = pd.DataFrame({"ClassID": ["x", "y", "y", "y"], SENSITIVE: ["p", "q", "r", "s"]})
    with pytest.raises(FedanonError, match="disagree"):
        check_pair(nss, ss, SENSITIVE, "0.5", 2)
    ss_ok = ss.assign(ClassID=["x", "x", "y", "y"], illness=["p", "p", "q", "r"])
    result = check_pair(nss, ss_ok, SENSITIVE, "0.5", 2)
    assert not result.ok and result.first_violation is not None
    assert result.first_violation["breaks"] == "alpha"
    assert result.first_violation["class"] == {"ClassID": "x"}


def test_information_loss_of_the_example_by_hand() -> None:
    # Loss metric per cell (leaves covered - 1) / (leaves - 1): white-collar 1/3, birth '*' 1,
    # a leaf 0, job '*' 1. Classes (white,*,4350) and (blue,*,4350): 4/3 per row; (*,1955,5432):
    # 1 per row. Mean over 6 rows x 3 QIDs: (4 * 4/3 + 2 * 1) / 18 = 22/54.
    release = run("local")
    assert release.report["information_loss"] == round(22 / 54, 6)
    lossy = run("lossy-join")
    assert lossy.report["information_loss"] == 0.0


def test_a_pair_release_names_its_two_tables() -> None:
    """Lossy join releases NSS and SS by name (`table` is NSS); local recoding one table."""
    lossy = run("lossy-join")
    nss, ss = lossy.tables["nss"], lossy.tables["ss"]
    assert lossy.table is nss
    assert len(nss) == len(ss) == len(TABLE1) and SENSITIVE in ss.columns
    assert list(run("local").tables) == ["table"]
