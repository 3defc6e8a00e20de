"""The paper's utility protocol (CE, BE, UE, DR) and the sweep chart."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedanon.errors import FedanonError
from fedanon.readers.datadir import data_dir, have_data
from fedanon.utility.charts import plot_sweep
from fedanon.utility.evaluation import baseline_errors, evaluate_release

QIDS = ["age", "job"]


def _raw(ages: np.ndarray) -> pd.DataFrame:
    """Class is '>50' from age 45 on; job and the sensitive column carry no signal."""
    n = len(ages)
    return pd.DataFrame(
        {
            "age": ages,
            "job": np.array(["clerk", "cook", "nurse"])[np.arange(n) % 3],
            "sens": np.array(["s1", "s2"])[np.arange(n) % 2],
            "class": np.where(ages >= 45, ">50", "<=50"),
        }
    )


@pytest.fixture
def raw() -> tuple[pd.DataFrame, pd.DataFrame]:
    # Training ages 20..59 (15 of 40 are '>50'); test ages 20, 22, ..., 58 (7 of 20).
    return _raw(np.arange(20, 60)), _raw(np.arange(20, 60, 2))


def _generalize(table: pd.DataFrame, age_labels: pd.Series | str) -> pd.DataFrame:
    out = table.copy()
    out["age"] = age_labels
    out["job"] = "ANY"
    return out


def test_informative_generalization_keeps_error_and_drops_discernibility(
    raw: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    train, test = raw

    def bucket(t: pd.DataFrame) -> pd.Series:
        return pd.Series(np.where(t["age"] < 45, "[20-45)", "[45-60)"))

    result = evaluate_release(
        train,
        test,
        _generalize(train, bucket(train)),
        _generalize(test, bucket(test)),
        "class",
        QIDS,
        numeric_qids=["age"],
    )
    assert result["BE"] == 0.0
    assert result["CE"] == 0.0
    # Without QIDs only 'sens' is left, which says nothing: predict the majority '<=50'.
    assert result["UE"] == pytest.approx(35.0)
    assert result["cost"] == 0.0
    assert result["benefit"] == pytest.approx(35.0)
    # Groups over train + test: [20-45) holds 25 + 13 rows, [45-60) 15 + 7 rows.
    assert result["DR"] == pytest.approx((38**2 + 22**2) / 60**2)
    assert (result["n_train"], result["n_test"]) == (40, 20)


def test_full_suppression_costs_as_much_as_dropping_qids(
    raw: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    train, test = raw
    result = evaluate_release(
        train, test, _generalize(train, "ANY"), _generalize(test, "ANY"), "class", QIDS, ["age"]
    )
    assert result["CE"] == pytest.approx(result["UE"]) == pytest.approx(35.0)
    assert result["DR"] == 1.0


def test_numeric_non_qid_attribute_stays_numeric(raw: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    # 'hours' (not a QID) alone predicts the class, and the test rows hold hour values never
    # seen in training: only a threshold test can use it.
    train, test = raw
    train = train.assign(hours=np.where(train["class"] == ">50", 50, 30) + 2 * (train.index % 5))
    test = test.assign(hours=np.where(test["class"] == ">50", 51, 31) + 2 * (test.index % 5))
    released = _generalize(train, "ANY"), _generalize(test, "ANY")
    inferred = evaluate_release(train, test, *released, "class", QIDS, ["age"])
    assert inferred["CE"] == 0.0
    assert inferred["UE"] == 0.0
    as_category = evaluate_release(train, test, *released, "class", QIDS, ["age"], numeric_other=[])
    assert as_category["CE"] > 20.0


def test_given_baseline_is_reused(raw: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    train, test = raw
    baseline = baseline_errors(train, test, "class", QIDS, ["age"])
    assert baseline == {"BE": 0.0, "UE": pytest.approx(35.0)}
    result = evaluate_release(
        train,
        test,
        _generalize(train, "ANY"),
        _generalize(test, "ANY"),
        "class",
        QIDS,
        ["age"],
        baseline={"BE": 1.5, "UE": 40.0},
    )
    assert (result["BE"], result["UE"]) == (1.5, 40.0)
    assert result["benefit"] == pytest.approx(40.0 - result["CE"])


def test_inconsistent_inputs_are_reported(raw: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    train, test = raw
    released_test = _generalize(test, "ANY")
    with pytest.raises(FedanonError, match="released training table lacks column\\(s\\): sens"):
        evaluate_release(
            train, test, train.drop(columns="sens"), released_test, "class", QIDS, ["age"]
        )
    with pytest.raises(FedanonError, match="released test table has 19 rows, the raw one 20"):
        evaluate_release(train, test, train, released_test.iloc[1:], "class", QIDS, ["age"])
    with pytest.raises(FedanonError, match="numeric QIDs that are not QIDs: sens"):
        baseline_errors(train, test, "class", QIDS, ["age", "sens"])
    with pytest.raises(FedanonError, match="raw training table lacks column\\(s\\): height"):
        baseline_errors(train, test, "class", [*QIDS, "height"], ["age"])


@pytest.mark.skipif(not have_data("adult"), reason="shared Adult data not present")
def test_adult_protocol_figures() -> None:
    folder = data_dir() / "adult"
    train = pd.read_csv(folder / "adult_train.csv")
    test = pd.read_csv(folder / "adult_test.csv")
    qids = [c for c in train.columns if c not in ("class", "martial-status")]
    numeric = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]

    def suppress(t: pd.DataFrame) -> pd.DataFrame:
        return t.assign(**{q: "ANY" for q in qids})

    result = evaluate_release(train, test, suppress(train), suppress(test), "class", qids, numeric)
    assert result["BE"] == pytest.approx(14.7, abs=1.0)
    assert result["UE"] == pytest.approx(24.5, abs=1.5)
    # A fully suppressed release keeps only martial-status, exactly what UE uses.
    assert result["CE"] == pytest.approx(result["UE"])
    assert result["DR"] == 1.0
    assert (result["n_train"], result["n_test"]) == (30162, 15060)


def _rows(c_values: tuple[float, ...] = (0.2,)) -> list[dict[str, object]]:
    """A sweep in the paper's shape; L='all' (k-anonymity) as the authors' scripts name it."""
    return [
        {"L": L, "K": K, "C": C, "CE": 15 + i + K / 100, "BE": 14.7, "UE": 24.5, "DR": K / 1000}
        for i, L in enumerate((2, 4, "all"))
        for K in (100, 20, 60)
        for C in c_values
    ]


@pytest.mark.parametrize("c_values", [(0.2,), (0.1, 0.3)])
def test_plot_sweep_writes_a_png(tmp_path: Path, c_values: tuple[float, ...]) -> None:
    target = tmp_path / "out" / "sweep.png"
    plot_sweep(_rows(c_values), target)
    data = target.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert width > height > 300
    assert [p.name for p in target.parent.iterdir()] == ["sweep.png"]


def test_plot_sweep_failure_leaves_previous_file(tmp_path: Path) -> None:
    target = tmp_path / "sweep.png"
    target.write_bytes(b"old")
    bad = [{"L": 2, "K": 20, "C": 0.2, "CE": 15.0, "BE": 14.7, "UE": 24.5}]
    with pytest.raises(ValueError, match="sweep row 0 lacks DR"):
        plot_sweep(bad, target)
    with pytest.raises(ValueError, match="at least one row"):
        plot_sweep([], target)
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["sweep.png"]
