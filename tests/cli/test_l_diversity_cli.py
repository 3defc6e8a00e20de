"""`fedanon check l-diversity` / `t-closeness`: exit 0 holds, 1 violated, 2 a one-line error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harness.cli import run_cli

# Li et al.'s salaries: {3k,4k,5k} is 0.375 from Q = {3k..11k}, {6k,8k,11k} 0.167.
TABLE = "zip,salary,d\n" + "\n".join(
    f"{z},{s},{d}"
    for z, s, d in [
        ("476**", 3, "flu"), ("476**", 4, "flu"), ("476**", 5, "HIV"),
        ("4790*", 6, "flu"), ("4790*", 8, "HIV"), ("4790*", 11, "cold"),
        ("47**", 7, "flu"), ("47**", 9, "cold"), ("47**", 10, "HIV"),
    ]
)  # fmt: skip


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "release.csv"
    path.write_text(TABLE + "\n", encoding="utf-8")
    return path


def _check(*args: str | Path) -> tuple[int, dict]:
    result = run_cli("check", *args, "--json")
    return result.code, json.loads(result.out) if result.code in (0, 1) else {}


def test_t_closeness_exit_status_follows_the_bound(data: Path) -> None:
    common = ("t-closeness", "--data", data, "--qid", "zip", "--sensitive-column", "salary")
    code, result = _check(*common, "--t", "0.375")
    assert code == 0 and result["achieved_t"] == pytest.approx(0.375)
    assert result["distance"] == "ordered"
    code, result = _check(*common, "--t", "0.3")
    assert code == 1 and result["worst_class"] == {"zip": "476**"}


def test_l_diversity_distinct_and_entropy(data: Path) -> None:
    common = ("l-diversity", "--data", data, "--qid", "zip", "--sensitive-column", "d")
    code, result = _check(*common, "--l", "2")
    assert code == 0 and result["achieved_l"] == 2  # 476** holds flu twice and HIV
    code, result = _check(*common, "--l", "2", "--measure", "entropy")
    assert code == 1 and result["achieved_l"] == pytest.approx(1.8899, abs=1e-4)  # exp(H(2/3, 1/3))
    code, _ = _check(*common, "--l", "3")
    assert code == 1


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (("--sensitive-column", "nope", "--l", "2"), "no column 'nope'"),
        (("--sensitive-column", "d", "--l", "0"), "l must be a number >= 1"),
        (("--sensitive-column", "zip", "--l", "2"), "also a QID"),
    ],
)
def test_input_errors_are_one_line(data: Path, options: tuple[str, ...], message: str) -> None:
    result = run_cli("check", "l-diversity", "--data", data, "--qid", "zip", *options)
    assert result.code == 2 and message in result.err and result.err.count("\n") == 1
