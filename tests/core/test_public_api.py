"""The contract every public function keeps (docs/api.md), family by family.

Only the data comes first, everything else is a keyword; a wrong type or value is one
`FedanonError` line; released columns hold no Categoricals; where a family has a model checker,
the report carries its verdict, the public `check_*` function returns the same verdict, and a
release the checker refuses is never handed out.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import fedanon
from fedanon.errors import FedanonError
from fedanon.synth import generate_hospital, hospital_taxonomy_path

DATA = generate_hospital(300, seed=8)
QIDS = ["age", "length_of_stay", "employment", "admission_type"]
ALPHA_QIDS = ["sex", "postcode", "marital_status"]
BASKETS = [[1, 2, 3], [1, 2], [2, 3], [1, 2, 4], [4]] * 8
OBJECTS = pd.DataFrame(
    np.random.default_rng(2).normal(size=(40, 5)), columns=["a", "b", "c", "d", "e"]
)

#: Public functions and the arguments they take by position (every other one is keyword-only).
POSITIONAL = {
    "anonymize_lkc": ["df"],
    "check_lkc": ["df"],
    "evaluate_lkc": ["raw", "released"],
    "anonymize_kactus": ["df"],
    "anonymize_mondrian": ["df"],
    "check_k_anonymity": ["df"],
    "evaluate_classification": ["df"],
    "anonymize_alpha_k": ["df"],
    "check_alpha_k": ["df"],
    "evaluate_queries": ["raw"],
    "anonymize_randomize": ["df"],
    "evaluate_randomization": ["df"],
    "sanitize": ["transactions"],
    "evaluate_sanitization": ["original"],
    "anonymize_drbt": ["df"],
    "evaluate_drbt": ["df"],
    "check_l_diversity": ["df"],
    "check_t_closeness": ["df"],
    "tidy": ["evaluation"],
}


def test_every_public_function_is_listed_here() -> None:
    functions = {n for n in fedanon.__all__ if n not in ("__version__", "Release", "load_taxonomy")}
    assert functions == set(POSITIONAL)


@pytest.mark.parametrize("name", sorted(POSITIONAL))
def test_only_the_data_is_positional(name: str) -> None:
    parameters = inspect.signature(getattr(fedanon, name)).parameters.values()
    positional = [p.name for p in parameters if p.kind is p.POSITIONAL_OR_KEYWORD]
    assert positional == POSITIONAL[name]
    assert all(p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in parameters)


def test_a_second_positional_argument_is_refused() -> None:
    with pytest.raises(TypeError):
        fedanon.anonymize_kactus(DATA, "readmitted")


def _taxonomy() -> Any:
    return fedanon.load_taxonomy(hospital_taxonomy_path())


def _alpha_k(method: str, **extra: Any) -> fedanon.Release:
    arguments: dict[str, Any] = {
        "qids": ALPHA_QIDS,
        "sensitive_column": "diagnosis",
        "alpha": "1/2",
        "k": 5,
        "method": method,
        "taxonomy": _taxonomy(),
        "seed": 3,
    }
    return fedanon.anonymize_alpha_k(DATA, **(arguments | extra))


KACTUS = {"class_column": "readmitted", "qids": QIDS, "k": 10, "seed": 1}

#: (call, the start of the one-line message) for a wrong type or a wrong value.
ERRORS: dict[str, tuple[Callable[[], Any], str]] = {
    "lkc: a list for the table": (
        lambda: fedanon.anonymize_lkc([1, 2], taxonomy=hospital_taxonomy_path()),
        "df must be a pandas DataFrame",
    ),
    "lkc: raw is not a table": (
        lambda: fedanon.evaluate_lkc(
            None, DATA, test=[True] * 300, class_column="readmitted", qids=QIDS
        ),
        "raw must be a pandas DataFrame",
    ),
    "kactus: one string for the QIDs": (
        lambda: fedanon.anonymize_kactus(DATA, **(KACTUS | {"qids": "age"})),
        "qids must be a list of column names",
    ),
    "kactus: k as text": (
        lambda: fedanon.anonymize_kactus(DATA, **(KACTUS | {"k": "10"})),
        "k must be an integer",
    ),
    "kactus: k too small": (
        lambda: fedanon.anonymize_kactus(DATA, **(KACTUS | {"k": 1})),
        "k must be between 2",
    ),
    "kactus: a seed that is no integer": (
        lambda: fedanon.anonymize_kactus(DATA, **(KACTUS | {"seed": "one"})),
        "seed must be an integer",
    ),
    "mondrian: orders as a list": (
        lambda: fedanon.anonymize_mondrian(DATA, **KACTUS, orders=["low", "high"]),
        "orders must be a mapping",
    ),
    "mondrian: unknown class column": (
        lambda: fedanon.anonymize_mondrian(DATA, **(KACTUS | {"class_column": "nope"})),
        "the table has no class column 'nope'",
    ),
    "check k-anonymity: k as a float": (
        lambda: fedanon.check_k_anonymity(DATA, qids=QIDS, k=2.5),
        "k must be an integer",
    ),
    "classification: one string for the methods": (
        lambda: fedanon.evaluate_classification(DATA, class_column="readmitted", methods="kactus"),
        "methods must be a list of method names",
    ),
    "alpha-k: alpha above 1": (
        lambda: _alpha_k("local", alpha=2),
        "alpha must be in (0, 1]",
    ),
    "alpha-k: unknown method": (lambda: _alpha_k("best"), "unknown method 'best'"),
    "alpha-k: a number for the taxonomy": (
        lambda: _alpha_k("local", taxonomy=42),
        "taxonomy must be a taxonomy file or its path",
    ),
    "check alpha-k: a table without QIDs": (
        lambda: fedanon.check_alpha_k(DATA, sensitive_column="diagnosis", alpha=0.5, k=2),
        "a generalized table needs qids",
    ),
    "queries: a release that is no table": (
        lambda: fedanon.evaluate_queries(
            DATA, releases={"x": [1]}, qids=ALPHA_QIDS, sensitive_column="diagnosis"
        ),
        "releases['x'] must be a pandas DataFrame",
    ),
    "randomize: probabilities that are no numbers": (
        lambda: fedanon.anonymize_randomize(DATA, qids=["sex", "postcode"], p=["a", "b"]),
        "p must be uniform, optimal or one number per QID",
    ),
    "randomize: unknown method": (
        lambda: fedanon.anonymize_randomize(DATA, qids=["sex", "postcode"], method="x"),
        "method 'x' unknown",
    ),
    "evaluate randomization: a release that is no table": (
        lambda: fedanon.evaluate_randomization(DATA, qids=["sex"], release=[1, 2]),
        "release must be a pandas DataFrame",
    ),
    "sanitize: a string for the log": (
        lambda: fedanon.sanitize("1 2 3", rules=["1 => 2"], algorithm="iga"),
        "transactions must be a log",
    ),
    "sanitize: a number for a rule": (
        lambda: fedanon.sanitize(BASKETS, rules=[12], algorithm="iga"),
        "a rule must be 'X => Y' text",
    ),
    "sanitize: psi above 1": (
        lambda: fedanon.sanitize(BASKETS, rules=["1 => 2"], algorithm="iga", psi=2),
        "psi must be in [0, 1]",
    ),
    "evaluate sanitization: a table that is no log": (
        lambda: fedanon.evaluate_sanitization(
            BASKETS, sanitized=pd.DataFrame({"x": [1]}), rules=["1 => 2"], min_support=0.1
        ),
        "sanitized: a log table needs the column 'items'",
    ),
    "drbt: n_components as a float": (
        lambda: fedanon.anonymize_drbt(OBJECTS, n_components=2.0),
        "n_components must be an integer",
    ),
    "drbt: as many dimensions as columns": (
        lambda: fedanon.anonymize_drbt(OBJECTS, n_components=5),
        "5 kept dimensions (n_components) with d = 5 attributes is a rotation",
    ),
    "evaluate drbt: one string for the columns": (
        lambda: fedanon.evaluate_drbt(OBJECTS, n_components=2, columns="a"),
        "columns must be a list of column names",
    ),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_a_user_error_is_one_fedanon_error_line(case: str) -> None:
    call, message = ERRORS[case]
    with pytest.raises(FedanonError) as caught:
        call()
    text = str(caught.value)
    assert text.startswith(message) or message in text
    assert "\n" not in text


def _releases() -> dict[str, fedanon.Release]:
    return {
        "kactus": fedanon.anonymize_kactus(DATA, **KACTUS),
        "mondrian": fedanon.anonymize_mondrian(DATA, **KACTUS),
        **{f"alpha-k {m}": _alpha_k(m) for m in ("global", "local", "lossy-join", "anatomy")},
        "randomize": fedanon.anonymize_randomize(DATA, qids=["age", "sex"], seed=2),
        "sanitize": fedanon.sanitize(BASKETS, rules=["1 => 2"], algorithm="rra"),
        "dsa": fedanon.sanitize(
            BASKETS, rules=["1 => 2"], algorithm="dsa", min_support=0.1, seed=1
        ),
        "drbt": fedanon.anonymize_drbt(OBJECTS, n_components=2, seed=4),
    }


@pytest.fixture(scope="module")
def releases() -> dict[str, fedanon.Release]:
    return _releases()


def test_released_columns_are_plain(releases: dict[str, fedanon.Release]) -> None:
    """Text cells are Python strings, never Categoricals (global recoding's engine makes them)."""
    for name, release in releases.items():
        assert isinstance(release, fedanon.Release), name
        assert release.table is next(iter(release.tables.values())), name
        for table in release.tables.values():
            for column in table.columns:
                dtype = table[column].dtype
                assert not isinstance(dtype, pd.CategoricalDtype), (name, column)
                if dtype is np.dtype(object):
                    assert all(isinstance(v, str) for v in table[column]), (name, column)


def test_release_shapes(releases: dict[str, fedanon.Release]) -> None:
    assert list(releases["alpha-k lossy-join"].tables) == ["nss", "ss"]
    assert list(releases["alpha-k anatomy"].tables) == ["nss", "ss"]
    assert list(releases["alpha-k local"].tables) == ["table"]
    assert list(releases["sanitize"].table.columns) == ["items"]
    assert list(releases["dsa"].table.columns) == ["itemset", "support"]
    assert list(releases["drbt"].tables) == ["table"]  # no id column, no id map
    with_ids = fedanon.anonymize_drbt(OBJECTS.assign(id=range(40)), n_components=2, id_column="id")
    assert list(with_ids.tables) == ["table", "id_map"]


def test_the_report_carries_the_checkers_verdict(releases: dict[str, fedanon.Release]) -> None:
    for name in ("kactus", "mondrian"):
        verdict = releases[name].report["privacy_check"]
        assert verdict["ok"] is True
        again = fedanon.check_k_anonymity(releases[name].table, qids=QIDS, k=10)
        assert again == verdict
        groups = releases[name].table[QIDS].astype(str).groupby(QIDS).size()
        assert verdict["min_group_size"] == groups.min() >= 10
    for method in ("global", "local"):
        release = releases[f"alpha-k {method}"]
        again = fedanon.check_alpha_k(
            release.table, qids=ALPHA_QIDS, sensitive_column="diagnosis", alpha="1/2", k=5
        )
        assert again == release.report["privacy_check"] and again["ok"] is True
    for method in ("lossy-join", "anatomy"):
        release = releases[f"alpha-k {method}"]
        pair = {"nss": release.tables["nss"], "ss": release.tables["ss"]}
        again = fedanon.check_alpha_k(**pair, sensitive_column="diagnosis", alpha="1/2", k=5)
        assert again == release.report["privacy_check"] and again["ok"] is True


def test_the_checkers_refuse_what_breaks_the_model(releases: dict[str, fedanon.Release]) -> None:
    assert not fedanon.check_k_anonymity(releases["kactus"].table, qids=QIDS, k=301)["ok"]
    local = releases["alpha-k local"].table
    strict = fedanon.check_alpha_k(
        local, qids=ALPHA_QIDS, sensitive_column="diagnosis", alpha=0.1, k=5
    )
    assert strict["ok"] is False


def test_a_release_that_fails_its_check_is_not_returned(monkeypatch: pytest.MonkeyPatch) -> None:
    """An algorithm bug that released raw cells is caught by the independent check."""
    from fedanon.algorithms.kactus import api as engine

    def raw_cells(df: pd.DataFrame, *_: Any) -> pd.DataFrame:
        return df.astype(str)  # (age, stay, employment, admission) single out some patients

    monkeypatch.setattr(engine, "release_table", raw_cells)
    with pytest.raises(FedanonError, match="fails 10-anonymity"):
        fedanon.anonymize_kactus(DATA, **KACTUS)


def test_the_cli_releases_what_the_api_releases(tmp_path: Path) -> None:
    """`anonymize kactus` runs the public function: same seed, same table, same verdict."""
    from tests.harness.cli import run_cli

    data = tmp_path / "data.csv"
    DATA.to_csv(data, index=False)
    out, report = tmp_path / "out.csv", tmp_path / "report.json"
    argv = ["anonymize", "kactus", "--data", str(data), "--class", "readmitted"]
    argv += ["--qid", ",".join(QIDS), "--k", "10", "--seed", "1", "--quiet"]
    done = run_cli(*argv, "--out", out, "--report", report)
    assert done.code == 0, done.err
    api = fedanon.anonymize_kactus(pd.read_csv(data), **KACTUS)
    written = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert written.equals(api.table.astype(str))
    assert json.loads(report.read_text())["privacy_check"] == api.report["privacy_check"]


def test_a_sanitized_log_table_reads_back_as_the_same_log() -> None:
    """Empty transactions survive (an all-deleted basket is a row ``""``), as do odd blanks."""
    from fedanon.algorithms.sanitization.tables import as_log, log_table
    from fedanon.utility.transactions import Transactions

    log = Transactions.from_lists([[], [3, 1], [], [7], []])
    table = log_table(log)
    assert table["items"].tolist() == ["", "1 3", "", "7", ""]
    assert as_log(table) == log
    assert as_log(pd.DataFrame({"items": [" 5  2 ", ""]})).to_lists() == [[2, 5], []]
    # Every basket emptied (a sanitization that deletes all of a tiny log's items).
    assert as_log(log_table(Transactions.from_lists([[], []]))).to_lists() == [[], []]
    for bad in ("1 -2", "1 x", "x 1"):
        with pytest.raises(FedanonError, match="non-negative item numbers"):
            as_log(pd.DataFrame({"items": [bad]}))
