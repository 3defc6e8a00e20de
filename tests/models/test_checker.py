"""Tests of the independent LKC checker against known answers and a naive oracle."""

from __future__ import annotations

import json
from collections import Counter
from fractions import Fraction
from itertools import combinations
from unittest.mock import patch

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedanon.errors import FedanonError
from fedanon.models import lkc as lkc_module
from fedanon.models.lkc import (
    CheckResult,
    Violation,
    _exact_argmax_ratio,
    check_lkc,
    parse_confidence,
)

QID3 = ["Job", "Sex", "Age"]
S_TRANS = {"Surgery": ["Transgender"]}

# Table I of the paper (raw data): violates (2, 2, 50%) in several ways.
TABLE_I = pd.DataFrame(
    [
        ("Janitor", "M", "34", "Y", "Transgender"),
        ("Lawyer", "F", "58", "N", "Plastic"),
        ("Mover", "M", "58", "N", "Urology"),
        ("Lawyer", "M", "24", "N", "Vascular"),
        ("Mover", "M", "34", "Y", "Transgender"),
        ("Janitor", "M", "44", "Y", "Plastic"),
        ("Doctor", "F", "44", "N", "Vascular"),
        ("Doctor", "M", "58", "N", "Plastic"),
        ("Doctor", "M", "24", "N", "Urology"),
        ("Carpenter", "F", "63", "Y", "Vascular"),
        ("Technician", "F", "63", "Y", "Plastic"),
    ],
    columns=[*QID3, "Transfuse", "Surgery"],
)

# Table II of the paper: the published (2, 2, 50%)-private release of Table I.
TABLE_II = pd.DataFrame(
    [
        ("ANY", "ANY", "[30-60)", "Y", "Transgender"),
        ("ANY", "ANY", "[30-60)", "N", "Plastic"),
        ("ANY", "ANY", "[30-60)", "N", "Urology"),
        ("Professional", "ANY", "[1-60)", "N", "Vascular"),
        ("Nontechnical", "M", "[30-60)", "Y", "Transgender"),
        ("Nontechnical", "M", "[30-60)", "Y", "Plastic"),
        ("Professional", "ANY", "[1-60)", "N", "Vascular"),
        ("Professional", "M", "[1-60)", "N", "Plastic"),
        ("Professional", "M", "[1-60)", "N", "Urology"),
        ("Technical", "F", "[60-99)", "Y", "Vascular"),
        ("Technical", "F", "[60-99)", "Y", "Plastic"),
    ],
    columns=[*QID3, "Transfuse", "Surgery"],
)


def planted_base() -> pd.DataFrame:
    """8 rows passing (L=2, K=2, C=1/2) with S={s=x}; every group has confidence exactly 1/2.

    b always equals c, so the pair (b, c) has only the combinations 00 and 11, while (a, b)
    and (a, c) see all four. Each combination appears twice, once with s=x and once with s=y.
    """
    rows = []
    for a, bc in [("0", "0"), ("0", "1"), ("1", "0"), ("1", "1")]:
        rows += [(a, bc, bc, "x"), (a, bc, bc, "y")]
    return pd.DataFrame(rows, columns=["a", "b", "c", "s"])


def check(df: pd.DataFrame, L: int, K: int, C: str, **kw) -> CheckResult:
    return check_lkc(df, ["a", "b", "c"], {"s": ["x"]}, L, K, C, **kw)


# ------------------------------------------------------------------ known answers


def test_paper_table_ii_satisfies_2_2_half() -> None:
    r = check_lkc(TABLE_II, QID3, S_TRANS, L=2, K=2, C="0.5")
    assert r.ok and r.worst is None
    assert r.subsets_checked == 6  # 3 singletons + 3 pairs
    assert r.min_group_size == 2
    assert r.max_confidence == {("Surgery", "Transgender"): Fraction(1, 2)}
    assert r.violating_groups == 0 and not r.stopped_early


def test_paper_table_ii_fails_k3_on_a_single_attribute() -> None:
    r = check_lkc(TABLE_II, QID3, S_TRANS, L=2, K=3, C="0.5")
    assert not r.ok
    # Smallest groups have 2 rows; among them the fewest attributes, then QID order, then the
    # group appearing first: Job=Nontechnical (rows 5-6 of the paper).
    assert r.worst == Violation("K", ("Job",), ("Nontechnical",), 2, 4)


def test_paper_table_i_worst_is_the_unique_carpenter() -> None:
    r = check_lkc(TABLE_I, QID3, S_TRANS, L=2, K=2, C="0.5")
    assert not r.ok
    assert r.worst == Violation("K", ("Job",), ("Carpenter",), 1, 9)
    assert r.min_group_size == 1
    assert r.max_confidence[("Surgery", "Transgender")] == 1


def test_paper_table_i_confidence_violation_age_34() -> None:
    # K=1 leaves only attribute linkage: <34> gives Transgender with 2/2 (paper, Example 1).
    r = check_lkc(TABLE_I, QID3, S_TRANS, L=2, K=1, C="0.5")
    assert r.worst == Violation("C", ("Age",), ("34",), 2, 0, ("Surgery", "Transgender"), 2)
    assert r.worst.confidence == 1


def test_l_above_qid_count_checks_every_subset_once() -> None:
    r = check_lkc(TABLE_II, QID3, S_TRANS, L=10, K=2, C="0.5")
    assert r.ok and r.subsets_checked == 7  # 2^3 - 1
    assert r.L == 10


def test_values_are_compared_as_strings() -> None:
    # "1" and "1.0" are different released values: two groups of one, not one group of two.
    df = pd.DataFrame({"a": ["1", "1.0"], "s": ["x", "y"]})
    r = check_lkc(df, ["a"], {"s": ["x"]}, L=1, K=2, C="1")
    assert not r.ok and r.worst is not None and r.worst.size == 1


# ------------------------------------------------------------------ planted violations


def test_planted_base_passes_on_exact_boundaries() -> None:
    r = check(planted_base(), L=2, K=2, C="0.5")
    assert r.ok
    assert r.min_group_size == 2  # groups of exactly K pass
    assert r.max_confidence == {("s", "x"): Fraction(1, 2)}  # confidence exactly C passes


def test_planted_k_violation_on_one_pair_only() -> None:
    df = pd.concat(
        [planted_base(), pd.DataFrame([("0", "0", "1", "y")], columns=list("abcs"))],
        ignore_index=True,
    )
    r = check(df, L=2, K=2, C="0.5")
    assert not r.ok
    assert r.worst == Violation("K", ("b", "c"), ("0", "1"), 1, 8)
    assert r.violating_groups == 1
    # Each single value is frequent, and the pairs containing `a` are fine: a checker that
    # looked only at single attributes or only at some pairs would wrongly pass this table.
    assert check(df, L=1, K=2, C="0.5").ok
    assert check_lkc(df, ["a", "b"], {"s": ["x"]}, 2, 2, "0.5").ok
    assert check_lkc(df, ["a", "c"], {"s": ["x"]}, 2, 2, "0.5").ok


def test_planted_c_violation() -> None:
    df = planted_base()
    df.loc[7, "s"] = "x"  # both (1, 1, 1) rows now sensitive
    r = check(df, L=2, K=2, C="0.5")
    assert not r.ok
    # (a,b)=(1,1) and (a,c)=(1,1) both reach 2/2; QID order picks (a, b); first row is 6.
    assert r.worst == Violation("C", ("a", "b"), ("1", "1"), 2, 6, ("s", "x"), 2)
    assert r.max_confidence == {("s", "x"): Fraction(1)}
    # a=1, b=1, c=1 and (b,c)=11 at 3/4; (a,b)=11 and (a,c)=11 at 2/2.
    assert r.violating_groups == 6
    assert check(df, L=2, K=2, C="1").ok


def test_k_violation_is_reported_before_a_worse_looking_c_violation() -> None:
    df = planted_base()
    df.loc[7, "s"] = "x"
    df = pd.concat([df, pd.DataFrame([("0", "0", "1", "y")], columns=list("abcs"))])
    r = check(df, L=2, K=2, C="0.5")
    assert r.worst is not None and r.worst.bound == "K"


def test_confidence_boundary_one_of_five() -> None:
    df = pd.DataFrame({"a": ["g"] * 5, "s": ["x", "y", "y", "y", "y"]})
    assert check_lkc(df, ["a"], {"s": ["x"]}, 1, 5, "0.2").ok
    assert check_lkc(df, ["a"], {"s": ["x"]}, 1, 5, Fraction(1, 5)).ok
    assert not check_lkc(df, ["a"], {"s": ["x"]}, 1, 6, "0.2").ok  # 5 < K=6
    r = check_lkc(df, ["a"], {"s": ["x"]}, 1, 5, "0.19")
    assert r.worst == Violation("C", ("a",), ("g",), 5, 0, ("s", "x"), 1)


def test_several_sensitive_columns_and_values() -> None:
    df = pd.DataFrame(
        {"a": ["g", "g", "g", "h", "h", "h"], "s": list("xyyyyy"), "t": list("pqqppp")}
    )
    r = check_lkc(df, ["a"], {"s": ["x", "y"], "t": ["p"]}, 1, 1, "0.9")
    assert r.max_confidence == {
        ("s", "x"): Fraction(1, 3),
        ("s", "y"): Fraction(1),
        ("t", "p"): Fraction(1),
    }
    # s=y and t=p both reach 1 on a=h; the order in which S was given decides.
    assert r.worst == Violation("C", ("a",), ("h",), 3, 3, ("s", "y"), 3)


def test_stop_at_first_ends_after_the_first_violating_subset() -> None:
    r = check_lkc(TABLE_I, QID3, S_TRANS, L=2, K=2, C="0.5", stop_at_first=True)
    assert not r.ok and r.stopped_early
    assert r.subsets_checked == 1
    assert r.worst == Violation("K", ("Job",), ("Carpenter",), 1, 9)


def test_stop_at_first_on_a_passing_table_checks_everything() -> None:
    r = check_lkc(TABLE_II, QID3, S_TRANS, L=2, K=2, C="0.5", stop_at_first=True)
    assert r.ok and not r.stopped_early and r.subsets_checked == 6


def test_to_dict_is_json_and_exact() -> None:
    r = check_lkc(TABLE_I, QID3, S_TRANS, L=2, K=1, C="1/3")
    data = json.loads(json.dumps(r.to_dict()))
    assert data["ok"] is False
    assert data["C"] == {"fraction": "1/3", "value": pytest.approx(1 / 3)}
    assert data["worst"]["qids"] == ["Age"] and data["worst"]["values"] == ["34"]
    assert data["worst"]["confidence"]["fraction"] == "1/1"
    assert data["max_confidence"] == [
        {
            "column": "Surgery",
            "value": "Transgender",
            "confidence": {"fraction": "1/1", "value": 1.0},
        }
    ]


def test_exact_argmax_does_not_trust_float_division() -> None:
    # 2^53/(2^53+1) < (2^53+1)/(2^53+2), but both divide to the float 1.0.
    big = 2**53
    num = np.array([big, big + 1], dtype=object)
    den = np.array([big + 1, big + 2], dtype=object)
    assert num[0] / den[0] == num[1] / den[1]
    assert _exact_argmax_ratio(num, den) == 1


def test_exact_argmax_returns_first_of_equal_ratios() -> None:
    assert _exact_argmax_ratio(np.array([1, 2, 1]), np.array([3, 4, 2])) == 1


# ------------------------------------------------------------------ input errors


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"L": 0}, "L must be"),
        ({"K": 0}, "K must be"),
        ({"K": True}, "K must be"),
        ({"C": "0"}, "C must be in"),
        ({"C": "1.5"}, "C must be in"),
        ({"C": "abc"}, "C must be a number"),
        ({"C": 0.2}, "C must be given exactly"),
        ({"qids": []}, "no QID"),
        ({"qids": ["Job", "Job"]}, "listed twice"),
        ({"qids": ["Job", "Salary"]}, "not in the table: Salary"),
        ({"sensitive": {"Disease": ["x"]}}, "not in the table: Disease"),
        ({"df": TABLE_I.iloc[:0]}, "no rows"),
    ],
)
def test_input_errors(kwargs: dict, message: str) -> None:
    args = {"df": TABLE_I, "qids": QID3, "sensitive": S_TRANS, "L": 2, "K": 2, "C": "0.5"}
    with pytest.raises(FedanonError, match=message):
        check_lkc(**{**args, **kwargs})


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0.2", Fraction(1, 5)), ("1/5", Fraction(1, 5)), ("20%", Fraction(1, 5)), (1, Fraction(1))],
)
def test_parse_confidence(text: str | int, expected: Fraction) -> None:
    assert parse_confidence(text) == expected


# ------------------------------------------------------------------ oracle


def naive_check(rows: list[tuple], qids: int, s_col: int, S: list[str], L: int, K: int, C):
    """Dict counting over itertools.combinations: the definition, nothing clever."""
    depth = min(L, qids)
    subsets = [q for size in range(1, depth + 1) for q in combinations(range(qids), size)]
    violations: list[tuple[tuple, tuple]] = []
    groups = violating = 0
    min_size: int | None = None
    max_conf: dict[str, Fraction | None] = {s: None for s in S}
    for q in subsets:
        size: Counter = Counter()
        hits: dict[str, Counter] = {s: Counter() for s in S}
        first: dict[tuple, int] = {}
        for i, row in enumerate(rows):
            key = tuple(row[j] for j in q)
            size[key] += 1
            first.setdefault(key, i)
            if row[s_col] in hits:
                hits[row[s_col]][key] += 1
        groups += len(size)
        for key, n in size.items():
            bad = False
            if n < K:
                bad = True
                violations.append(((0, n, len(q), q, 0, first[key]), ("K", q, key, n)))
            for si, s in enumerate(S):
                conf = Fraction(hits[s][key], n)
                highest = max_conf[s]
                if len(q) == depth and (highest is None or conf > highest):
                    max_conf[s] = conf
                if conf > C:
                    bad = True
                    violations.append(
                        ((1, -conf, len(q), q, si, first[key]), ("C", q, key, n, s, hits[s][key]))
                    )
            violating += bad
            if len(q) == depth and (min_size is None or n < min_size):
                min_size = n
    worst = min(violations)[1] if violations else None
    return len(subsets), groups, violating, min_size, max_conf, worst


tables = st.integers(1, 4).flatmap(
    lambda m: st.lists(
        st.tuples(*[st.sampled_from("abc")] * m, st.sampled_from("xyz")), min_size=1, max_size=25
    )
)


@settings(max_examples=300, deadline=None)
@given(
    rows=tables,
    S=st.lists(st.sampled_from("xyzw"), min_size=1, max_size=3, unique=True),
    L=st.integers(1, 5),
    K=st.integers(1, 6),
    C=st.fractions(min_value=Fraction(1, 7), max_value=1, max_denominator=7),
)
def test_matches_naive_oracle(rows: list[tuple], S: list[str], L: int, K: int, C) -> None:
    m = len(rows[0]) - 1
    columns = [f"q{i}" for i in range(m)]
    df = pd.DataFrame(rows, columns=[*columns, "s"])
    r = check_lkc(df, columns, {"s": S}, L, K, str(C))
    subsets, groups, violating, min_size, max_conf, worst = naive_check(rows, m, m, S, L, K, C)
    assert r.ok == (worst is None)
    assert (r.subsets_checked, r.groups_checked, r.violating_groups) == (
        subsets,
        groups,
        violating,
    )
    assert r.min_group_size == min_size
    assert r.max_confidence == {("s", s): max_conf[s] for s in S}
    if worst is None:
        assert r.worst is None
    else:
        bound, q, key, n, *rest = worst
        assert r.worst is not None
        got = (r.worst.bound, r.worst.qids, r.worst.values, r.worst.size)
        assert got == (bound, tuple(columns[j] for j in q), key, n)
        if bound == "C":
            assert (r.worst.sensitive, r.worst.sensitive_count) == (("s", rest[0]), rest[1])
        # The group's first row, as given (rows repeat: the checker collapses them first).
        first_row = next(i for i, row in enumerate(rows) if tuple(row[j] for j in q) == key)
        assert r.worst.first_row == first_row
    # Early exit never changes the verdict.
    assert check_lkc(df, columns, {"s": S}, L, K, C, stop_at_first=True).ok == r.ok
    # The same cells as Categoricals (what the engine hands over) or Arrow text, scanned in
    # batches of one subset each: the same result to the last figure.
    for dtype in ("category", "string[pyarrow]"):
        with patch.object(lkc_module, "_BATCH_CELLS", 1):
            coded = check_lkc(df.astype(dtype), columns, {"s": S}, L, K, str(C))
        assert coded.to_dict() == r.to_dict()


def test_cells_are_compared_as_text_not_as_numbers():
    # 1 and 1.0 are equal numbers but different released strings: two groups of one row each.
    df = pd.DataFrame({"q": pd.Series([1, 1.0], dtype=object), "s": ["a", "b"]})
    result = check_lkc(df, ["q"], {}, 1, 2, 1)
    assert not result.ok
    assert result.min_group_size == 1
    assert result.worst is not None and result.worst.values in (("1",), ("1.0",))
