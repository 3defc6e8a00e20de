"""The multi-release query report: shared workloads, sweeps, naming rules, the chart."""

from __future__ import annotations

import pandas as pd
import pytest

from fedanon.algorithms.alphak.query_report import QueryRelease, evaluate_queries, plot_query_errors
from fedanon.errors import FedanonError

RAW = pd.DataFrame(
    {
        "a": list("xxyyzzxy"),
        "b": list("12121212"),
        "s": list("pqpqrrpq"),
    }
)


def test_raw_table_scores_zero_and_a_blank_release_does_not() -> None:
    blank = RAW.assign(a="*", b="*")
    pair_nss = RAW[["a", "b"]].assign(ClassID="c")
    pair_ss = RAW[["s"]].assign(ClassID="c")
    report = evaluate_queries(
        RAW,
        releases=[
            QueryRelease("raw", table=RAW),
            QueryRelease("blank", table=blank),
            QueryRelease("one class", nss=pair_nss, ss=pair_ss),
        ],
        qids=["a", "b"],
        sensitive_column="s",
        qd=1,
        s=0.3,
        queries=40,
        seed=2,
        qd_values=[1, 2],
        s_values=[0.3, 0.6],
    )
    assert report["releases"] == ["raw", "blank", "one class"]
    assert report["default"]["raw"]["average_relative_error"] == 0.0
    assert report["default"]["blank"]["average_relative_error"] > 0.0
    assert report["default"]["one class"]["average_relative_error"] > 0.0
    assert [p["qd"] for p in report["by_qd"]] == [1, 2]
    assert [p["s"] for p in report["by_s"]] == [0.3, 0.6]


def test_names_must_be_unique_and_releases_given() -> None:
    with pytest.raises(FedanonError, match="share a name"):
        evaluate_queries(
            RAW, releases=[QueryRelease("x", RAW)] * 2, qids=["a"], sensitive_column="s"
        )
    with pytest.raises(FedanonError, match="no release"):
        evaluate_queries(RAW, releases=[], qids=["a"], sensitive_column="s")


def test_chart_is_a_png_even_with_zero_errors(tmp_path) -> None:
    releases = {"raw": RAW, "blank": RAW.assign(a="*", b="*")}
    report = evaluate_queries(
        RAW, releases=releases, qids=["a", "b"], sensitive_column="s", qd=1, s=0.3, queries=10,
        qd_values=[1, 2],
    )  # fmt: skip
    plot_query_errors(report, tmp_path / "c.png")
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"
