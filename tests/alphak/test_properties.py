"""Properties every (alpha,k) release must have, on random tables (hypothesis)."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fedanon.algorithms.alphak.api import METHODS
from fedanon.errors import InfeasibleError
from fedanon.models.alpha_k import check_generalized, check_pair
from tests.alphak.example import QIDS, SENSITIVE, run, taxonomies

JOBS = ["clerk", "manager", "factory worker", "technical supporter"]
YEARS = ["1940", "1955", "1975"]
CODES = ["4350", "5432"]


@st.composite
def tables(draw: st.DrawFn) -> pd.DataFrame:
    n = draw(st.integers(1, 60))
    n_values = draw(st.integers(1, 6))
    pick = st.lists(st.integers(0, 10_000), min_size=n, max_size=n)
    return pd.DataFrame(
        {
            "job": [JOBS[i % 4] for i in draw(pick)],
            "birth": [YEARS[i % 3] for i in draw(pick)],
            "postcode": [CODES[i % 2] for i in draw(pick)],
            "illness": [f"s{i % n_values}" for i in draw(pick)],
            "note": [f"r{i}" for i in range(n)],
        }
    )


PARAMS = st.tuples(st.sampled_from(["1/3", "0.34", "0.5", "2/3", "1"]), st.integers(1, 4))


def _release_or_infeasible(table: pd.DataFrame, method: str, alpha: str, k: int, seed: int):
    try:
        return run(method, table, alpha=alpha, k=k, seed=seed)
    except InfeasibleError:
        counts = Counter(table[SENSITIVE])
        feasible_ak = len(table) >= k and max(counts.values()) <= Fraction(alpha) * len(table)
        # Only Anatomy may refuse a table that is (alpha,k) as a whole (its n/l condition).
        assert method == "anatomy" or not feasible_ak
        return None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), PARAMS, st.sampled_from(METHODS), st.integers(0, 2**32))
def test_every_release_passes_the_independent_check(table, params, method, seed) -> None:
    alpha, k = params
    release = _release_or_infeasible(table, method, alpha, k, seed)
    if release is None:
        return
    if "table" in release.tables:
        out = release.table
        assert check_generalized(out, QIDS, SENSITIVE, alpha, k).ok
        # Each record keeps its own non-QID values, in its own row.
        assert out["note"].tolist() == table["note"].tolist()
        assert out[SENSITIVE].tolist() == table[SENSITIVE].tolist()
        # Each released value is the raw value or one of its ancestors.
        for column in QIDS:
            tax = taxonomies()[column]
            for raw, shown in zip(table[column], out[column], strict=True):
                node = tax.labels.index(raw)
                path = {raw}
                while tax.parent[node] >= 0:
                    node = tax.parent[node]
                    path.add(tax.labels[node])
                assert shown in path
    else:
        nss, ss = release.tables["nss"], release.tables["ss"]
        assert check_pair(nss, ss, SENSITIVE, alpha, k).ok
        assert len(nss) == len(ss) == len(table)
        raw_tuples = Counter(map(tuple, table[QIDS].to_numpy().tolist()))
        assert Counter(map(tuple, nss[QIDS].to_numpy().tolist())) == raw_tuples
        assert Counter(ss[SENSITIVE]) == Counter(table[SENSITIVE])
        assert "note" not in nss.columns and "note" not in ss.columns


@settings(max_examples=25, deadline=None)
@given(tables(), PARAMS, st.integers(0, 2**32))
def test_lossy_join_classes_are_the_local_recoding_classes(table, params, seed) -> None:
    alpha, k = params
    local = _release_or_infeasible(table, "local", alpha, k, seed)
    if local is None:
        return
    lossy = run("lossy-join", table, alpha=alpha, k=k, seed=seed)
    local_bags = Counter(
        tuple(sorted(g[SENSITIVE])) for _, g in local.table.groupby(QIDS, sort=False)
    )
    lossy_ss = lossy.tables["ss"]
    lossy_bags = Counter(tuple(sorted(g[SENSITIVE])) for _, g in lossy_ss.groupby("ClassID"))
    assert local_bags == lossy_bags


def _rank_correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rho with tied values sharing their average rank."""
    ra, rb = pd.Series(a).rank().to_numpy(), pd.Series(b).rank().to_numpy()
    return float(np.corrcoef(ra, rb)[0, 1])


def test_class_ids_and_row_orders_reveal_nothing_about_input_order() -> None:
    """Tokens are fresh per run; neither their order nor either table's row order follows the
    input order (the input is sorted by job for NSS, by illness for SS, so an unshuffled table
    would show a rank correlation above 0.8)."""
    rng = np.random.default_rng(11)
    n = 400
    raw = pd.DataFrame(
        {
            "job": rng.choice(JOBS, n),
            "birth": rng.choice(YEARS, n),
            "postcode": rng.choice(CODES, n),
            "illness": rng.choice(["a", "b", "c", "d", "e"], n),
        }
    )
    job_code = {j: i for i, j in enumerate(sorted(JOBS))}
    correlations: dict[str, list[float]] = {"nss": [], "ss": [], "tokens": []}
    seen: set[str] = set()
    for method in ("lossy-join", "anatomy"):
        for order in ("job", "illness"):
            table = raw.sort_values(order, kind="stable").reset_index(drop=True)
            assert _rank_correlation(table[order].to_numpy(), np.arange(n)) > 0.8
            for _ in range(5):
                r = run(method, table, seed=3)
                nss, ss = r.tables["nss"], r.tables["ss"]
                ids = nss["ClassID"]
                assert ids.str.fullmatch("[0-9a-f]{16}").all()
                assert not seen & set(ids)  # the same seed still gives new tokens
                seen |= set(ids)
                if order == "job":
                    jobs = nss["job"].map(job_code).to_numpy()
                    correlations["nss"].append(_rank_correlation(jobs, np.arange(n)))
                    per_class = pd.Series(jobs).groupby(ids.to_numpy()).mean()
                    correlations["tokens"].append(
                        _rank_correlation(per_class.index.to_numpy(), per_class.to_numpy())
                    )
                else:
                    values = ss[SENSITIVE].to_numpy()
                    correlations["ss"].append(_rank_correlation(values, np.arange(n)))
    # Independent random orders: each row correlation has sd about 1/sqrt(n) = 0.05, a mean of
    # ten about 0.016, a token correlation about 1/sqrt(classes) <= 0.1. Bounds at 5-6 sd keep
    # the test from failing by chance while an unshuffled table (> 0.8) fails it at once.
    assert abs(np.mean(correlations["nss"])) < 0.1
    assert abs(np.mean(correlations["ss"])) < 0.1
    assert abs(np.mean(correlations["tokens"])) < 0.2
    assert max(abs(c) for c in correlations["nss"] + correlations["ss"]) < 0.3


def test_row_i_of_nss_and_row_i_of_ss_are_not_the_same_record_beyond_chance() -> None:
    """Each record is unique by its QIDs (all 24 combinations once) and by its sensitive value,
    so row i of NSS and row i of SS name one record each. With independent random orders the
    number of rows naming the same record in both tables is the number of fixed points of a
    random permutation (mean 1, Poisson); over ten runs the total is about 10 (P(>= 40) is
    below 1e-12), where SS written in NSS's order would give 24 per run."""
    combos = [(j, b, c) for j in JOBS for b in YEARS for c in CODES]
    table = pd.DataFrame(combos, columns=QIDS).assign(illness=[f"s{i}" for i in range(len(combos))])
    record_of_qids = {qids: i for i, qids in enumerate(combos)}
    same_record = 0
    for run_number in range(10):
        release = run("lossy-join", table, alpha="0.5", k=2, seed=run_number)
        nss, ss = release.tables["nss"], release.tables["ss"]
        from_nss = [record_of_qids[tuple(row)] for row in nss[QIDS].itertuples(index=False)]
        from_ss = [int(value[1:]) for value in ss[SENSITIVE]]
        same_record += sum(a == b for a, b in zip(from_nss, from_ss, strict=True))
    assert same_record < 40
