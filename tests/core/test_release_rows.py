"""One rule for rows and index across every method family (fedanon.release.Release).

The expected behaviour per family is the documented one (docs/api.md, "Rows and index"), written
here by hand: families that release each input row in place keep the input's order and index;
families that shuffle (or release something other than input rows) say so and give a fresh
RangeIndex, never the input's labels.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fedanon
from fedanon.errors import FedanonError
from fedanon.readers.datadir import data_dir

ADULT = data_dir() / "adult"
QIDS = ["age", "workclass", "education", "sex"]


@pytest.fixture(scope="module")
def adult() -> pd.DataFrame:
    """400 Adult rows under a scrambled, non-default index, with a row id to follow them."""
    path = ADULT / "adult_all.csv"
    if not path.exists():
        pytest.skip(f"needs the shared Adult data ({path})")
    df = pd.read_csv(path).head(400)
    df.index = pd.Index(np.random.default_rng(5).permutation(400) * 3 + 1000, name="pid")
    return df.assign(rid=[f"r{i}" for i in range(400)])


def _families(df: pd.DataFrame) -> dict[str, tuple[bool, fedanon.Release]]:
    """family -> (documented preserves_order, its release of `df`)."""
    tax = ADULT / "lkc_paper_taxonomy.hchy"
    alpha = {"qids": QIDS, "sensitive_column": "occupation", "alpha": 0.5, "k": 2, "seed": 1}
    numeric = df[["rid", "age", "fnlwgt", "education-num", "hours-per-week"]]
    return {
        "lkc": (True, fedanon.anonymize_lkc(df, taxonomy=tax, L=2, k=5, C=1)),
        "alpha-k global": (
            True,
            fedanon.anonymize_alpha_k(df, method="global", taxonomy=tax, **alpha),
        ),
        "alpha-k local": (
            True,
            fedanon.anonymize_alpha_k(df, method="local", taxonomy=tax, **alpha),
        ),
        "randomize": (True, fedanon.anonymize_randomize(df, qids=QIDS, seed=1)),
        "kactus": (
            False,
            fedanon.anonymize_kactus(df, class_column="class", qids=QIDS, k=5, seed=1),
        ),
        "mondrian": (
            False,
            fedanon.anonymize_mondrian(df, class_column="class", qids=QIDS, k=5, seed=1),
        ),
        "alpha-k lossy-join": (
            False,
            fedanon.anonymize_alpha_k(df, method="lossy-join", taxonomy=tax, **alpha),
        ),
        "alpha-k anatomy": (False, fedanon.anonymize_alpha_k(df, method="anatomy", **alpha)),
        "drbt": (False, fedanon.anonymize_drbt(numeric, n_components=2, id_column="rid", seed=1)),
    }


def test_every_family_states_and_keeps_the_rows_and_index_rule(adult: pd.DataFrame) -> None:
    for family, (in_place, release) in _families(adult).items():
        assert release.preserves_order is in_place, family
        for name, table in release.tables.items():
            if in_place:
                assert table.index.equals(adult.index), (family, name)
                assert table["rid"].tolist() == adult["rid"].tolist(), (family, name)
            else:
                assert table.index.equals(pd.RangeIndex(len(table))), (family, name)
    # A shuffling family really reorders (the rule is not vacuous): kACTUS with a fixed seed.
    kactus = _families(adult)["kactus"][1].table
    assert kactus["rid"].tolist() != adult["rid"].tolist()


def test_sanitization_keeps_each_transaction_in_place_under_its_label() -> None:
    log = pd.DataFrame({"items": ["1 2 3", "1 2", "2 3", "1 2 4", "1 3"]}, index=[9, 7, 5, 3, 1])
    release = fedanon.sanitize(log, rules=["1 => 2"], algorithm="iga")
    assert release.preserves_order is True
    assert release.table.index.tolist() == [9, 7, 5, 3, 1]
    assert release.table.loc[1, "items"] == "1 3"  # untouched transaction, same label
    itemsets = fedanon.sanitize(log, rules=["1 => 2"], algorithm="dsa", min_support=0.2)
    assert itemsets.preserves_order is False


def test_a_reordered_release_that_keeps_input_labels_is_refused() -> None:
    shuffled = pd.DataFrame({"a": [1, 2]}, index=[5, 3])
    with pytest.raises(ValueError, match="release table 'table' is reordered but keeps"):
        fedanon.Release(shuffled, {})
    assert fedanon.Release(shuffled, {}, preserves_order=True).table is shuffled


@pytest.mark.parametrize("method", ["anonymize_kactus", "anonymize_mondrian"])
def test_the_suppression_marker_never_collides_with_the_datas_own_values(method: str) -> None:
    df = pd.DataFrame(
        {
            "workclass": ["Private", "?", "State-gov", "Private"] * 3,  # Adult's missing marker
            "age": [30, 40, 50, 60] * 3,
            "class": ["<=50K", ">50K"] * 6,
        }
    )
    run = getattr(fedanon, method)
    with pytest.raises(FedanonError) as caught:
        run(df, class_column="class", k=2, seed=1)
    assert str(caught.value) == (
        "QID column 'workclass' already holds the suppression marker '?' (row 2): choose "
        "another marker (marker= / --marker) so suppressed cells stay distinct from the data's "
        "own values"
    )
    released = run(df, class_column="class", k=2, seed=1, marker="*").table
    # The data's own '?' survives only as a value of its own, never as the marker.
    assert "?" not in set(released["age"]) and "*" not in set(df["workclass"])


def test_kactus_cli_names_the_collision_in_one_line(tmp_path: Path) -> None:
    from tests.harness.cli import run_cli

    data = tmp_path / "in.csv"
    data.write_text("workclass,age,class\nPrivate,30,a\n?,40,b\nPrivate,50,a\nState-gov,60,b\n")
    done = run_cli(
        "anonymize",
        "kactus",
        "--data",
        data,
        "--class",
        "class",
        "--k",
        "2",
        "--out",
        tmp_path / "out.csv",
    )
    assert done.code != 0 and len(done.err_lines) == 1
    assert "QID column 'workclass' already holds the suppression marker '?' (row 2)" in done.err
    assert not (tmp_path / "out.csv").exists()
