"""The public Python API (docs/api.md): the page's worked example runs, and what it shows holds."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import fedanon
from fedanon.errors import FedanonError

API_PAGE = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def _run_page() -> dict[str, Any]:
    blocks = re.findall(r"```python\n(.*?)```", API_PAGE.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 4, "the worked example lost its code blocks"
    namespace: dict[str, Any] = {}
    for block in blocks:
        exec(compile(block, str(API_PAGE), "exec"), namespace)
    return namespace


@pytest.fixture(scope="module")
def page() -> dict[str, Any]:
    return _run_page()


def test_the_worked_example_releases_a_checked_table(page: dict[str, Any]) -> None:
    release = page["release"]
    assert isinstance(release, fedanon.Release)
    assert len(release.table) == len(page["df"]) == 1500
    assert release.report["privacy_check"]["ok"] is True
    assert page["as_released"]["ok"] is True
    assert page["stricter"]["ok"] is False  # 1500 rows cannot form a group of 10 000


def test_released_columns_are_plain_strings(page: dict[str, Any]) -> None:
    table = page["release"].table
    assert not any(isinstance(t, pd.CategoricalDtype) for t in table.dtypes)
    counts = table["age"].value_counts()
    assert (counts > 0).all()  # no empty taxonomy nodes listed (Categoricals would list them)
    assert all(isinstance(v, str) for v in table["age"])


def test_the_utility_figures_are_percentages(page: dict[str, Any]) -> None:
    utility = page["utility"]
    for key in ("CE", "BE", "UE"):
        assert 0.0 <= utility[key] <= 100.0
    assert 0.0 < utility["DR"] <= 1.0


def test_sensitive_values_in_the_command_line_form_give_the_same_release(
    page: dict[str, Any],
) -> None:
    again = fedanon.anonymize_lkc(
        page["df"],
        taxonomy=page["taxonomy"],
        L=2,
        k=20,
        C="1/2",
        sensitive_values=["diagnosis=HIV,Schizophrenia"],
    )
    assert again.table.equals(page["release"].table)


def test_a_user_error_is_a_fedanon_error(page: dict[str, Any]) -> None:
    with pytest.raises(FedanonError, match="C must be"):
        fedanon.anonymize_lkc(page["df"], taxonomy=page["taxonomy"], C=2)
    with pytest.raises(AttributeError):
        _ = fedanon.no_such_function


def test_import_fedanon_loads_no_heavy_module() -> None:
    code = (
        "import sys, fedanon; heavy = {'pandas', 'numpy', 'grpc', 'matplotlib'}; "
        "print(sorted(heavy & set(sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(out.replace("'", '"')) == []


def test_the_cli_report_carries_the_privacy_check(tmp_path: Path) -> None:
    """Centralized `anonymize lkc` reports `privacy_check` like the distributed run."""
    from fedanon.synth import generate_hospital, hospital_taxonomy_path
    from tests.harness.cli import run_cli

    data = tmp_path / "data.csv"
    generate_hospital(600, seed=5).to_csv(data, index=False)
    report = tmp_path / "report.json"
    done = run_cli(
        *("anonymize", "lkc", "--data", data, "--taxonomy", hospital_taxonomy_path()),
        *("--out", tmp_path / "out.csv", "--report", report),
        *("--L", "2", "--k", "10", "--C", "0.5", "--quiet"),
    )
    assert done.code == 0, done.err
    check = json.loads(report.read_text(encoding="utf-8"))["privacy_check"]
    assert check["ok"] is True and check["L"] == 2 and check["K"] == 10


# ---------------------------------------------------------------- the other families' examples
# Every figure below is recomputed from the cells with plain pandas, not by the library.


def _group_sizes(table: pd.DataFrame, columns: list[str]) -> pd.Series:
    return table[columns].astype(str).groupby(columns).size()


def _no_categoricals(table: pd.DataFrame) -> bool:
    return not any(isinstance(t, pd.CategoricalDtype) for t in table.dtypes)


def test_kactus_and_mondrian_release_k_anonymous_tables(page: dict[str, Any]) -> None:
    qids = page["hospital_qids"]
    for name in ("kactus", "mondrian"):
        release = page[name]
        sizes = _group_sizes(release.table, qids)
        assert sizes.min() >= 25, name
        assert len(release.table) + release.report["dropped"] == 1500
        assert release.report["privacy_check"]["min_group_size"] == sizes.min()
        assert _no_categoricals(release.table)
    # Two partitions may release equal cells (a suppressed category), never the reverse.
    assert page["mondrian"].report["groups"]["count"] >= len(
        _group_sizes(page["mondrian"].table, qids)
    )


def test_released_cells_tell_the_truth_about_each_record(page: dict[str, Any]) -> None:
    """Rows are shuffled; the untouched patient id pairs each released row with its original."""
    df = page["df"]
    mondrian = page["mondrian"].table.merge(df, on="patient_id", suffixes=("", "_raw"))
    ranged = mondrian["age"].str.fullmatch(r"\[\d+, \d+\]")
    bounds = mondrian.loc[ranged, "age"].str.strip("[]").str.split(", ", expand=True).astype(int)
    raw_age = mondrian.loc[ranged, "age_raw"]
    assert ((bounds[0] <= raw_age) & (raw_age <= bounds[1])).all()
    assert (mondrian.loc[~ranged, "age"] == mondrian.loc[~ranged, "age_raw"].astype(str)).all()
    kactus = page["kactus"].table.merge(df, on="patient_id", suffixes=("", "_raw"))
    for column in ("employment", "admission_type"):  # categorical: kept or suppressed
        kept = kactus[column] != "?"
        assert (kactus.loc[kept, column] == kactus.loc[kept, f"{column}_raw"]).all()


def test_the_k_anonymity_checker_examples(page: dict[str, Any]) -> None:
    blocks = re.findall(r"```python\n(.*?)```", API_PAGE.read_text(encoding="utf-8"), re.S)
    checks = next(b for b in blocks if "check_k_anonymity" in b)
    assert "k=25)" in checks and "k=2_000)" in checks  # the page shows a pass and a failure
    mondrian = page["mondrian"].table
    assert fedanon.check_k_anonymity(mondrian, qids=page["hospital_qids"], k=25)["ok"]
    assert not fedanon.check_k_anonymity(mondrian, qids=page["hospital_qids"], k=2_000)["ok"]


def test_the_classification_protocol_trains_on_half_the_rows(page: dict[str, Any]) -> None:
    results = {row["method"]: row for row in page["accuracy"]["results"]}
    assert set(results) == {"original", "kactus", "mondrian"}
    for row in results.values():
        assert len(row["accuracies"]) == 10  # 5 x 2 folds
        assert all(0.0 <= a <= 100.0 for a in row["accuracies"])
    assert results["kactus"]["released_mean"] == 750  # a training half of 1500, none dropped


def test_alpha_k_releases_hold_the_bound(page: dict[str, Any]) -> None:
    df, qids = page["df"], page["alpha_qids"]
    local = page["local"].table
    assert _no_categoricals(local)
    assert _group_sizes(local, qids).min() >= 10
    share = local.groupby(qids)["diagnosis"].agg(lambda s: s.value_counts(normalize=True).max())
    assert share.max() <= 0.5
    assert local.drop(columns=qids).equals(df.drop(columns=qids))  # only the QIDs generalized

    nss, ss = page["nss"], page["ss"]
    assert page["lossy"].table is nss
    assert nss.groupby("ClassID").size().min() >= 10
    share = ss.groupby("ClassID")["diagnosis"].agg(lambda s: s.value_counts(normalize=True).max())
    assert share.max() <= 0.5
    raw_qids = sorted(map(tuple, df[qids].to_numpy().tolist()))
    assert sorted(map(tuple, nss[qids].to_numpy().tolist())) == raw_qids  # QIDs kept raw
    assert sorted(ss["diagnosis"]) == sorted(df["diagnosis"])
    assert set(nss["ClassID"]) == set(ss["ClassID"])


def test_query_errors_favour_the_lossy_join(page: dict[str, Any]) -> None:
    """The (alpha,k) paper's finding: raw QIDs answer COUNT queries better than generalized."""
    default = page["queries"]["default"]
    assert default["lossy-join"]["average_relative_error"] >= 0
    assert (
        default["lossy-join"]["average_relative_error"] < default["local"]["average_relative_error"]
    )


def test_randomization_redraws_one_qid_per_record(page: dict[str, Any]) -> None:
    df, released = page["df"], page["randomized"].table
    qids = ["age", "sex", "postcode"]
    assert released.drop(columns=qids).equals(df.drop(columns=qids))
    raw = df[qids].astype(str)  # a redrawn cell is released as text, as a file would hold it
    changed = released[qids].ne(raw)
    assert changed.sum(axis=1).max() <= 1  # RA: one attribute per record
    for q in qids:
        assert set(released[q]) <= set(raw[q])  # drawn from the column's own values
    assert page["randomized"].report["changed_cell_fraction"] == pytest.approx(
        changed.to_numpy().mean(), abs=1e-6
    )
    assert 0 <= page["bias"]["rules"]["recovery"] <= 1


def test_sanitization_deletes_items_until_the_rule_is_gone(page: dict[str, Any]) -> None:
    baskets, table = page["baskets"], page["hidden"].table
    assert list(table.columns) == ["items"] and len(table) == len(baskets)
    released = [{int(i) for i in line.split()} for line in table["items"]]
    assert all(after <= set(before) for after, before in zip(released, baskets, strict=True))
    assert not any({1, 2} <= after for after in released)  # psi = 0: no basket keeps the rule
    deleted = sum(len(b) for b in baskets) - sum(len(r) for r in released)
    assert page["hidden"].report["deletions"] == deleted
    assert page["rule_metrics"]["hf"] == 0.0


def test_drbt_release_keeps_distances_as_its_report_says(page: dict[str, Any]) -> None:
    objects, projected = page["objects"], page["projected"]
    table, id_map = projected.tables["table"], projected.tables["id_map"]
    assert list(table.columns) == ["id", "att1", "att2", "att3"]
    assert sorted(id_map["id"]) == sorted(objects["id"])
    assert set(id_map["token"]) == set(table["id"])
    assert not set(table["id"]) & set(objects["id"])
    aligned = table.merge(id_map, left_on="id", right_on="token", suffixes=("", "_raw"))
    raw = objects.set_index("id").loc[aligned["id_raw"]]
    z = ((raw - raw.mean()) / raw.std(ddof=0)).to_numpy()
    low = aligned[["att1", "att2", "att3"]].to_numpy()

    def distances(x: np.ndarray) -> np.ndarray:
        d = np.sqrt(((x[:, None, :] - x[None, :, :]) ** 2).sum(axis=2))
        return d[np.triu_indices(len(x), 1)]

    d, dhat = distances(z), distances(low)
    assert projected.report["stress_exact"] is True
    assert projected.report["stress"] == pytest.approx(((dhat - d) ** 2).sum() / (d**2).sum())
    for row in page["clustering"]["f_measure"]["by_clusters"]:
        assert 0.0 <= row["mean"] <= 1.0


def test_the_page_shows_the_steward_report_a_simulated_federation_and_tidy_frames(
    page: dict[str, Any],
) -> None:
    release = page["release"]
    assert release.preserves_order is True and release.table.index.equals(page["df"].index)
    written = page["report_page"].read_text(encoding="utf-8")
    assert written == release._repr_html_()
    assert "<h1>fedanon release report: LKC-privacy" in written
    assert "fedanon.anonymize_lkc" in written  # the job as run from Python
    distributed = page["distributed"]
    assert distributed.preserves_order is False
    assert page["as_rows"](distributed.table) == page["as_rows"](release.table)
    folds = page["folds"]
    # One row per fold: 5x2 cross-validation gives 10 accuracies per method and k.
    assert folds.groupby(["method", "k"]).size().tolist() == [10] * len(page["accuracy"]["results"])
    errors = page["errors"]
    average = errors[errors["measure"] == "default.average_relative_error"]
    assert average.set_index("release")["value"].to_dict() == {
        name: page["queries"]["default"][name]["average_relative_error"]
        for name in page["queries"]["releases"]
    }


def test_a_release_without_a_steward_report_says_so_in_one_line(tmp_path: Path) -> None:
    release = fedanon.Release(pd.DataFrame({"a": [1]}), {"method": "drbt"})
    with pytest.raises(FedanonError, match=r"^no steward report for a drbt release"):
        release.to_html(tmp_path / "r.html")
    assert not (tmp_path / "r.html").exists()
