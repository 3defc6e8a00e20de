"""The public Python API (docs/api.md): the page's worked example runs, and what it shows holds."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import fedanon
from fedanon.errors import FedanonError

API_PAGE = Path(__file__).resolve().parents[1] / "docs" / "api.md"


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
        K=20,
        C="1/2",
        sensitive=["diagnosis=HIV,Schizophrenia"],
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
    from fedanon.cli.main import main
    from fedanon.synth import generate_hospital, hospital_taxonomy_path

    data = tmp_path / "data.csv"
    generate_hospital(600, seed=5).to_csv(data, index=False)
    report = tmp_path / "report.json"
    code = main(
        [
            "anonymize",
            "lkc",
            "--data",
            str(data),
            "--taxonomy",
            str(hospital_taxonomy_path()),
            "--out",
            str(tmp_path / "out.csv"),
            "--report",
            str(report),
            "--L",
            "2",
            "--K",
            "10",
            "--C",
            "0.5",
            "--quiet",
        ]
    )
    assert code == 0
    check = json.loads(report.read_text(encoding="utf-8"))["privacy_check"]
    assert check["ok"] is True and check["L"] == 2 and check["K"] == 10
