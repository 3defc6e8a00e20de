"""One vocabulary in the Python API (docs/api.md, "One vocabulary"): a concept has one keyword in
every family and the command line's option for it is the same word; the old keywords still work
for one release with one `FutureWarning` naming the new one, and give the same result."""

from __future__ import annotations

import argparse
import inspect
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

import fedanon
from fedanon.cli.main import build_parser
from fedanon.errors import FedanonError
from fedanon.leader.simulate import simulate
from fedanon.synth import generate_hospital, hospital_taxonomy_path

PUBLIC: dict[str, Callable[..., Any]] = {
    **{n: getattr(fedanon, n) for n in fedanon.__all__ if callable(getattr(fedanon, n))},
    "simulate": simulate,
}
PUBLIC.pop("Release")

#: The command line's option -> the API's keyword for the same concept.
OPTION_TO_KEYWORD = {
    "--qid": "qids",
    "--class": "class_column",
    "--k": "k",
    "--L": "L",
    "--C": "C",
    "--sensitive-values": "sensitive_values",
    "--sensitive-column": "sensitive_column",
    "--n-components": "n_components",
    "--id": "id_column",
}
#: Other words for those concepts, which no public function may take.
SYNONYMS = {
    *("K", "sensitive", "qid", "quasi_identifiers", "class_", "class_col", "target", "label"),
    *("k_dims", "dims", "n_dims", "components", "sensitive_col", "sensitive_attribute", "id"),
}
#: Which functions take each concept (by hand, from docs/api.md's table).
TAKERS = {
    "k": {
        *("anonymize_lkc", "check_lkc", "simulate", "anonymize_kactus", "anonymize_mondrian"),
        *("check_k_anonymity", "anonymize_alpha_k", "check_alpha_k"),
    },
    "sensitive_values": {"anonymize_lkc", "check_lkc", "simulate"},
    "sensitive_column": {
        *("anonymize_alpha_k", "check_alpha_k", "check_l_diversity", "check_t_closeness"),
        *("evaluate_queries", "evaluate_randomization"),
    },
    "n_components": {"anonymize_drbt", "evaluate_drbt"},
}
#: Public function -> the command running the same method.
COMMANDS = {
    "anonymize_lkc": ("anonymize", "lkc"),
    "check_lkc": ("check", "lkc"),
    "simulate": ("sim", "lkc"),
    "anonymize_kactus": ("anonymize", "kactus"),
    "anonymize_mondrian": ("anonymize", "mondrian"),
    "check_k_anonymity": ("check", "k-anonymity"),
    "evaluate_classification": ("evaluate", "classification"),
    "anonymize_alpha_k": ("anonymize", "alpha-k"),
    "check_alpha_k": ("check", "alpha-k"),
    "check_l_diversity": ("check", "l-diversity"),
    "check_t_closeness": ("check", "t-closeness"),
    "evaluate_queries": ("evaluate", "queries"),
    "anonymize_randomize": ("anonymize", "randomize"),
    "evaluate_randomization": ("evaluate", "randomization"),
    "anonymize_drbt": ("anonymize", "drbt"),
    "evaluate_drbt": ("evaluate", "drbt"),
}
#: (function, option) where the two differ on purpose: the command sweeps a list of k.
SWEEPS = {("evaluate_classification", "--k")}


def _keywords(name: str) -> set[str]:
    return set(inspect.signature(PUBLIC[name]).parameters)


def _leaf(words: tuple[str, ...]) -> argparse.ArgumentParser:
    parser = build_parser()
    for word in words:
        group = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = group.choices[word]
    return parser


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_no_public_function_names_a_concept_with_another_word(name: str) -> None:
    assert not _keywords(name) & SYNONYMS


@pytest.mark.parametrize("keyword", sorted(TAKERS))
def test_each_concept_keyword_is_taken_by_exactly_its_families(keyword: str) -> None:
    """`k` is the group size (never DRBT's dimensions); LKC's values and a column differ."""
    assert {name for name in PUBLIC if keyword in _keywords(name)} == TAKERS[keyword]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_api_keyword_and_the_cli_option_are_the_same_word(name: str) -> None:
    options = {s for a in _leaf(COMMANDS[name])._actions for s in a.option_strings}
    keywords = _keywords(name)
    for option, keyword in OPTION_TO_KEYWORD.items():
        if (name, option) in SWEEPS:
            continue
        assert (option in options) == (keyword in keywords), (name, option, keyword)


DATA = generate_hospital(300, seed=8)
ALPHA_QIDS = ["sex", "postcode", "marital_status"]
OBJECTS = pd.DataFrame(
    np.random.default_rng(2).normal(size=(40, 5)), columns=["a", "b", "c", "d", "e"]
)
TAXONOMY = fedanon.load_taxonomy(hospital_taxonomy_path())
VALUES = {"diagnosis": ["Depression"]}

#: name -> (function, arguments with the new keywords, {old keyword: new keyword}).
OLD_KEYWORDS: dict[str, tuple[Callable[..., Any], dict[str, Any], dict[str, str]]] = {
    "anonymize_lkc": (
        fedanon.anonymize_lkc,
        {"taxonomy": TAXONOMY, "L": 1, "k": 5, "C": 1, "sensitive_values": VALUES},
        {"K": "k", "sensitive": "sensitive_values"},
    ),
    "check_lkc": (
        fedanon.check_lkc,
        {"qids": ALPHA_QIDS, "L": 1, "k": 3, "C": "1/2", "sensitive_values": VALUES},
        {"K": "k", "sensitive": "sensitive_values"},
    ),
    "anonymize_alpha_k": (
        fedanon.anonymize_alpha_k,
        {"qids": ALPHA_QIDS, "sensitive_column": "diagnosis", "alpha": 1, "k": 3}
        | {"method": "local", "taxonomy": TAXONOMY, "seed": 2},
        {"sensitive": "sensitive_column"},
    ),
    "check_alpha_k": (
        fedanon.check_alpha_k,
        {"qids": ALPHA_QIDS, "sensitive_column": "diagnosis", "alpha": "1/2", "k": 2},
        {"sensitive": "sensitive_column"},
    ),
    "check_l_diversity": (
        fedanon.check_l_diversity,
        {"qids": ALPHA_QIDS, "sensitive_column": "diagnosis", "l": 2},
        {"sensitive": "sensitive_column"},
    ),
    "check_t_closeness": (
        fedanon.check_t_closeness,
        {"qids": ALPHA_QIDS, "sensitive_column": "diagnosis", "t": 0.5},
        {"sensitive": "sensitive_column"},
    ),
    "evaluate_queries": (
        fedanon.evaluate_queries,
        {"releases": {"raw": DATA}, "qids": ALPHA_QIDS, "sensitive_column": "diagnosis"}
        | {"qd": 1, "queries": 20},
        {"sensitive": "sensitive_column"},
    ),
    "evaluate_randomization": (
        fedanon.evaluate_randomization,
        {"qids": ["sex"], "seed": 1, "sensitive_column": "diagnosis", "qd": 1, "queries": 20}
        | {"rules": False},
        {"sensitive": "sensitive_column"},
    ),
    "anonymize_drbt": (
        fedanon.anonymize_drbt,
        {"n_components": 2, "seed": 4},
        {"k": "n_components"},
    ),
    "evaluate_drbt": (
        fedanon.evaluate_drbt,
        {"n_components": 2, "seed": 1, "clusters": (2,), "trials": 1, "projections": 1},
        {"k": "n_components"},
    ),
}


def _data(name: str) -> pd.DataFrame:
    return OBJECTS if "drbt" in name else DATA


def _comparable(result: Any) -> Any:
    """The result without its timings and the steward report's creation time (the only parts
    two equal runs may differ in: two calls can straddle a second on a loaded machine)."""
    if isinstance(result, fedanon.Release):
        return {k: v.to_dict("list") for k, v in result.tables.items()}, _comparable(result.report)
    if isinstance(result, dict):
        return {
            k: _comparable(v) for k, v in result.items() if "seconds" not in k and k != "created"
        }
    if isinstance(result, list):
        return [_comparable(v) for v in result]
    return result


def _future_warnings(call: Callable[[], Any]) -> tuple[Any, list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    return result, [w for w in caught if issubclass(w.category, FutureWarning)]


def test_every_renamed_keyword_is_covered_here() -> None:
    renamed = {
        name: getattr(PUBLIC[name], "__renamed_keywords__", None)
        for name in PUBLIC
        if hasattr(PUBLIC[name], "__renamed_keywords__")
    }
    assert renamed == {n: o for n, (_, _, o) in OLD_KEYWORDS.items()} | {
        "simulate": {"K": "k", "sensitive": "sensitive_values"}
    }


@pytest.mark.parametrize(
    ("name", "old"), [(n, old) for n, (_, _, olds) in OLD_KEYWORDS.items() for old in olds]
)
def test_an_old_keyword_gives_the_same_result_with_one_warning_naming_the_new(
    name: str, old: str
) -> None:
    function, arguments, olds = OLD_KEYWORDS[name]
    new = olds[old]
    spelled_old = {(old if key == new else key): value for key, value in arguments.items()}
    expected, none = _future_warnings(lambda: function(_data(name), **arguments))
    got, caught = _future_warnings(lambda: function(_data(name), **spelled_old))
    assert none == []
    assert [str(w.message) for w in caught] == [
        f"{name}: keyword {old}= is deprecated, use {new}= (it will be removed)"
    ]
    assert caught[0].filename == __file__  # points at the caller's line
    assert _comparable(got) == _comparable(expected)


@pytest.mark.parametrize("name", sorted(OLD_KEYWORDS))
def test_an_old_and_a_new_keyword_together_are_refused(name: str) -> None:
    function, arguments, olds = OLD_KEYWORDS[name]
    old, new = next(iter(olds.items()))
    with pytest.raises(FedanonError, match=f"give {new}= only"):
        function(_data(name), **arguments, **{old: arguments[new]})


def test_simulate_takes_the_old_keywords_too() -> None:
    """Checked before any daemon starts: the taxonomy must be a path, so this one fails fast."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(FedanonError, match="give the file's path"):
            simulate(DATA, taxonomy=TAXONOMY, K=5, sensitive=VALUES)  # type: ignore[call-arg]
    assert sorted(str(w.message) for w in caught if w.category is FutureWarning) == [
        "simulate: keyword K= is deprecated, use k= (it will be removed)",
        "simulate: keyword sensitive= is deprecated, use sensitive_values= (it will be removed)",
    ]
