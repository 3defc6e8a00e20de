"""``evaluate lkc`` pairs released rows with raw rows by content, not by position (defect 11).

A distributed release comes back shuffled; pairing it by position reported wrong utility numbers
with exit 0. The release is now rebuilt in raw order from the labels it uses, and what cannot be
rebuilt is refused with one line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from fedanon.errors import FedanonError
from fedanon.readers.table_io import read_table, write_table
from fedanon.taxonomy.loader import load_taxonomy
from fedanon.utility.pairing import release_in_raw_order
from tests.harness.cli import TAXONOMY, lkc_options, run_cli, small_table


def _without_pid(csv: str) -> str:
    return "".join(line.split(",", 1)[1] + "\n" for line in csv.splitlines())


@pytest.fixture
def job(tmp_path: Path) -> dict[str, Path]:
    """A raw table, its taxonomy and its centralized release (same row order as the raw)."""
    (tmp_path / "taxonomy.toml").write_text(TAXONOMY, encoding="utf-8")
    raw = tmp_path / "raw.csv"
    raw.write_text(_without_pid(small_table(60)), encoding="utf-8")
    release = tmp_path / "release.csv"
    options = lkc_options(raw, tmp_path / "taxonomy.toml", K=5)
    done = run_cli("anonymize", "lkc", *options, "--out", release, "--quiet")
    assert done.code == 0, done.err
    return {"raw": raw, "release": release, "taxonomy": tmp_path / "taxonomy.toml"}


def _shuffled(job: dict[str, Path], seed: int) -> Path:
    table = read_table(job["release"]).sample(frac=1.0, random_state=seed)
    path = job["release"].with_name(f"shuffled-{seed}.csv")
    write_table(table.reset_index(drop=True), path)
    return path


def _evaluate(job: dict[str, Path], release: Path):
    return run_cli(
        "evaluate",
        "lkc",
        "--data",
        job["raw"],
        "--release",
        release,
        "--taxonomy",
        job["taxonomy"],
        "--train-rows",
        "40",
        "--json",
    )


def test_shuffled_release_is_put_back_in_raw_order(job):
    raw = read_table(job["raw"])
    in_order = read_table(job["release"])  # the centralized release keeps the raw order
    shuffled = read_table(_shuffled(job, 3))
    assert not shuffled.equals(in_order)  # the shuffle moved rows
    taxonomies = [
        t
        for t in load_taxonomy(job["taxonomy"]).taxonomies.values()
        if t.attribute in ("age", "job")
    ]
    rebuilt = release_in_raw_order(raw, shuffled, taxonomies, "release")
    pd.testing.assert_frame_equal(rebuilt, in_order)


@pytest.mark.parametrize("seed", [1, 2])
def test_utility_numbers_do_not_depend_on_release_row_order(job, seed):
    reference = _evaluate(job, job["release"])
    assert reference.code == 0, reference.err
    again = _evaluate(job, _shuffled(job, seed))
    assert again.code == 0, again.err
    assert json.loads(again.out) == json.loads(reference.out)


def _edited(job: dict[str, Path], column: str, value: str) -> Path:
    table = read_table(job["release"]).astype(str)
    table.loc[7, column] = value
    path = job["release"].with_name(f"edited-{column}.csv")
    write_table(table, path)
    return path


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("outcome", "maybe", "1 of 60 released rows are not the release of any raw row"),
        ("disease", "Cold", "1 of 60 released rows are not the release of any raw row"),
        ("job", "Astronaut", "'Astronaut' in column 'job' is not in its taxonomy"),
        ("age", "old", "'old' in numerical column 'age' is neither an interval"),
        ("age", "[0-100)", "is covered by several released labels"),
    ],
)
def test_release_that_cannot_be_paired_is_one_line_error(job, column, value, message):
    done = _evaluate(job, _edited(job, column, value))
    assert done.code == 2
    assert len(done.err_lines) == 1 and "Traceback" not in done.err
    assert message in done.err


def test_release_of_another_table_is_refused(job, tmp_path):
    other = tmp_path / "other.csv"
    other.write_text(_without_pid(small_table(60)).replace(",Flu,", ",Cold,", 1), encoding="utf-8")
    with pytest.raises(FedanonError, match=re.escape("1 of 60 released rows")):
        release_in_raw_order(
            read_table(other),
            read_table(job["release"]),
            list(load_taxonomy(job["taxonomy"]).taxonomies.values()),
            "r",
        )
