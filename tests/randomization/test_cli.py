"""The randomization commands through the real `fedanon` entry point, and job.toml."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from fedanon.errors import FedanonError
from fedanon.leader.config import load_job
from fedanon.leader.kinds.randomize import RandomizeLeaderJob
from tests.harness.cli import run_cli
from tests.randomization.tables import correlated_table

QIDS = "a,b,c,d"


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "patients.csv"
    table = correlated_table(600)
    table["constant"] = "x"
    table.to_csv(path, index=False)
    return path


def test_anonymize_randomize_writes_release_and_report(data, tmp_path):
    out, report = tmp_path / "out.csv", tmp_path / "r.json"
    done = run_cli(
        "anonymize",
        "randomize",
        "--data",
        str(data),
        "--qid",
        QIDS,
        "--method",
        "enhanced",
        "--attrs",
        "2",
        "--seed",
        "4",
        "--out",
        str(out),
        "--report",
        str(report),
    )
    assert done.code == 0, done.err
    release, raw = pd.read_csv(out, dtype=str), pd.read_csv(data, dtype=str)
    pd.testing.assert_frame_equal(
        release[["id", "disease", "constant"]], raw[["id", "disease", "constant"]]
    )
    changed = (release[list("abcd")].to_numpy() != raw[list("abcd")].to_numpy()).sum(axis=1)
    assert changed.max() == 2
    written = json.loads(report.read_text())
    assert written["attrs"] == 2 and written["seeded"] and written["records"] == 600


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--qid", "a,constant"], "QID column 'constant' has only one value"),
        (["--qid", QIDS, "--p", "0.5,0.2,0.2,0.2"], "sum to 1.1, not 1"),
        (["--qid", QIDS, "--method", "enhanced", "--attrs", "5"], "number of QIDs (4), got 5"),
        (["--qid", QIDS, "--p", "half"], "--p 'half'"),
    ],
)
def test_bad_input_is_one_line_and_leaves_no_output(data, tmp_path, extra, message):
    out = tmp_path / "out.csv"
    done = run_cli("anonymize", "randomize", "--data", str(data), "--out", str(out), *extra)
    err = done.err
    assert done.code == 2, done.err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists()


def test_evaluate_randomization_reports_bias_and_query_error(data, tmp_path):
    report = tmp_path / "e.json"
    done = run_cli(
        "evaluate",
        "randomization",
        "--data",
        str(data),
        "--qid",
        QIDS,
        "--p",
        "optimal",
        "--seed",
        "3",
        "--sensitive-column",
        "disease",
        "--queries",
        "50",
        "--qd",
        "2",
        "--top",
        "3",
        "--report",
        str(report),
        "--json",
    )
    assert done.code == 0, done.err
    result = json.loads(report.read_text())
    assert json.loads(done.out) == result
    assert len(result["bias"]) == 6  # 3 pairs, 3 triples
    assert all(
        abs(b["measured_bias"] - b["predicted_bias"]) < 6 * b["predicted_sd"] + 1e-9
        for b in result["bias"]
    )
    assert result["count_queries"]["queries"] == 50
    assert 0 < result["count_queries"]["average_relative_error"] < 1


def _job_toml(tmp_path: Path, domains: str) -> Path:
    path = tmp_path / "job.toml"
    path.write_text(
        f"""
out = "release.csv"
sum_mode = "pairwise"
[randomize]
qids = ["sex", "age"]
method = "enhanced"
attrs = 2
keep_at_parties = false
[randomize.domains]
{domains}
[tls]
insecure = true
[[parties]]
name = "h1"
address = "127.0.0.1:1"
[[parties]]
name = "h2"
address = "127.0.0.1:2"
[[parties]]
name = "h3"
address = "127.0.0.1:3"
""",
        encoding="utf-8",
    )
    return path


def test_job_toml_randomize_section(tmp_path):
    job = load_job(_job_toml(tmp_path, 'sex = ["F", "M"]\nage = [17, 18, 19]'))
    assert isinstance(job, RandomizeLeaderJob)
    assert job.spec.qids == ("sex", "age") and job.spec.domains[1] == ("17", "18", "19")
    assert job.spec.method == "enhanced" and job.spec.attrs == 2
    assert job.sum_mode == "pairwise" and job.out == tmp_path / "release.csv"


def test_job_toml_without_a_domain_names_the_qid(tmp_path):
    with pytest.raises(FedanonError, match="no agreed domain for QID 'age'"):
        load_job(_job_toml(tmp_path, 'sex = ["F", "M"]'))
    with pytest.raises(FedanonError, match="QID column 'sex': the agreed domain has 1 value"):
        load_job(_job_toml(tmp_path, 'sex = ["F"]\nage = ["1", "2"]'))


def test_sim_randomize_three_daemons_matches_centralized(data, tmp_path):
    out, report = tmp_path / "fed.csv", tmp_path / "fed.json"
    done = run_cli(
        "sim",
        "randomize",
        "--parties",
        "3",
        "--data",
        str(data),
        "--qid",
        QIDS,
        "--p",
        "optimal",
        "--out",
        str(out),
        "--report",
        str(report),
        "--json",
    )
    assert done.code == 0, done.err
    result = json.loads(report.read_text())
    assert result["centralized"]["global_marginals_equal_union_marginals"] is True
    assert result["Pa"] == result["centralized"]["Pa"]
    release = pd.read_csv(out, dtype=str)
    assert sorted(release["id"]) == sorted(pd.read_csv(data, dtype=str)["id"])


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--keep-at-parties"], "--keep-at-parties needs --workdir"),
        ([], "--out is required unless --keep-at-parties"),
    ],
)
def test_sim_refuses_outputs_that_would_be_lost(data, extra, message):
    done = run_cli("sim", "randomize", "--data", str(data), "--qid", QIDS, *extra)
    assert done.code == 2, done.err
    assert message in done.err
