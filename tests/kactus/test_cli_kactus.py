"""The kACTUS command line: releases, the independent check, evaluation, one-line errors."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from tests.harness.cli import run_cli


def _write_table(path, n: int = 300, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "age": rng.integers(18, 80, n),
            "job": rng.choice(["a", "b", "c"], n),
            "city": rng.choice(["x", "y"], n),
            "note": rng.integers(0, 9, n),
        }
    )
    df["class"] = np.where((df["age"] > 45) ^ (df["job"] == "a"), "yes", "no")
    df.to_csv(path, index=False)


@pytest.mark.parametrize("method", ["kactus", "mondrian"])
def test_release_then_independent_check(tmp_path, method):
    data, out, report = tmp_path / "in.csv", tmp_path / "out.csv", tmp_path / "r.json"
    _write_table(data)
    done = run_cli(
        *("anonymize", method, "--data", data, "--class", "class", "--k", "20", "--seed", "3"),
        *("--out", out, "--report", report, "--json"),
    )
    assert done.code == 0, done.err
    printed = json.loads(done.out)
    assert printed["released"] + printed["dropped"] == 300
    assert json.loads(report.read_text())["method"] == method
    qids = "--qid=age,job,city,note"
    assert run_cli("check", "k-anonymity", "--data", out, qids, "--k", "20").code == 0
    violated = run_cli("check", "k-anonymity", "--data", out, qids, "--k", "301", "--json")
    assert violated.code == 1
    assert json.loads(violated.out)["ok"] is False


def test_evaluate_classification_writes_json_and_chart(tmp_path):
    data = tmp_path / "in.csv"
    _write_table(data, n=240)
    report, chart = tmp_path / "e.json", tmp_path / "e.png"
    done = run_cli(
        *("evaluate", "classification", "--data", data, "--class", "class"),
        *("--method", "kactus,mondrian", "--k", "5,20", "--inducer", "c45,naive-bayes"),
        *("--report", report, "--chart", chart, "--json"),
    )
    assert done.code == 0, done.err
    out = json.loads(done.out)
    cases = {(r["method"], r["k"], r["inducer"]) for r in out["results"]}
    assert ("original", 1, "c45") in cases and ("mondrian", 20, "naive-bayes") in cases
    assert all(len(r["accuracies"]) == 10 for r in out["results"])
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads(report.read_text())["ks"] == [5, 20]


@pytest.mark.parametrize(
    ("edit", "options", "message"),
    [
        (None, ["--class", "nope"], "no class column 'nope'"),
        ("constant", [], "single value"),
        (None, ["--k", "1"], "k must be between 2"),
        (None, ["--k", "301"], "k must be between 2"),
        (None, ["--qid", "age,ghost"], "no QID column 'ghost'"),
        ("empty_city", ["--qid", "age,city"], "'city' holds only missing values"),
    ],
)
@pytest.mark.parametrize("method", ["kactus", "mondrian"])
def test_bad_input_is_one_line_and_no_output_file(tmp_path, edit, options, message, method):
    data, out = tmp_path / "in.csv", tmp_path / "out.csv"
    _write_table(data)
    if edit:
        df = pd.read_csv(data)
        if edit == "constant":
            df["class"] = "same"
        else:
            df["city"] = ""
        df.to_csv(data, index=False)
    argv = [
        "anonymize",
        method,
        "--data",
        str(data),
        "--class",
        "class",
        "--k",
        "5",
        "--out",
        str(out),
        *options,
    ]
    done = run_cli(*argv)
    assert done.code == 2, done.err
    err = done.err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [data]  # no temporary file left either


@pytest.mark.parametrize("numeric", ["median", "mean"])
def test_numeric_option_picks_the_group_value(tmp_path, numeric):
    # one numeric QID deciding the class, skewed in the 'lo' group: median 22, mean 29.3
    ages = np.concatenate([np.tile([20, 21, 22, 23, 24], 20), [22], np.full(50, 44)])
    ages = np.concatenate([ages, np.arange(45, 195) % 25 + 45])
    data, out = tmp_path / "in.csv", tmp_path / "out.csv"
    pd.DataFrame({"age": ages, "class": np.where(ages > 44, "hi", "lo")}).to_csv(data, index=False)
    args = ["anonymize", "kactus", "--data", str(data), "--class", "class", "--k", "20"]
    done = run_cli(*args, "--seed", "1", "--out", out, "--numeric", numeric, "--json")
    assert done.code == 0, done.err
    assert json.loads(done.out)["parameters"]["numeric"] == numeric
    released = pd.read_csv(out)
    low = released.loc[released["class"] == "lo", "age"]
    raw_low = ages[ages <= 44]
    expected = np.median(raw_low) if numeric == "median" else np.mean(raw_low)
    assert set(low) == {round(expected)}
