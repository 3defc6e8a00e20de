"""``fedanon anonymize lkc`` on one Arrow table from reading to writing (issue #30).

The command never imports pandas (its import alone cost more CPU than reading and writing the
table), and what it releases is what the DataFrame API releases for the same job, byte for
byte, in every output format, with and without a suppression budget and dynamic trees.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedanon.algorithms.tds.api import anonymize_lkc, build_schema, resolve_params
from fedanon.algorithms.tds.verified import verified_release
from fedanon.models.lkc import cell_text_codes
from fedanon.readers.table_io import read_table, write_table
from fedanon.synth import generate_hospital, hospital_taxonomy_path
from fedanon.tables import arrow_of, numbers_of, strings_of
from fedanon.taxonomy.loader import load_taxonomy
from fedanon.text import text_codes
from tests.harness.cli import run_cli

# Runs the CLI in a fresh interpreter, then says whether pandas was ever imported.
PROBE = """
import json, sys
from fedanon.cli.main import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "pandas": "pandas" in sys.modules}))
"""

LKC = ("--L", "3", "--k", "10", "--C", "0.6")
K_ANON = ("--preset", "k-anonymity", "--qid", "age,sex,postcode,employment", "--k", "10")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The synthetic hospital table as CSV, TSV and Parquet (all text, as the readers give)."""
    folder = tmp_path_factory.mktemp("hospital")
    csv_path = folder / "h.csv"
    generate_hospital(1500, 11).to_csv(csv_path, index=False)
    table = pa_csv.read_csv(csv_path)
    table = table.cast(pa.schema([(n, pa.string()) for n in table.column_names]))
    pa_csv.write_csv(table, folder / "h.tsv", pa_csv.WriteOptions(delimiter="\t"))
    pq.write_table(table, folder / "h.parquet")
    return {"csv": csv_path, "tsv": folder / "h.tsv", "parquet": folder / "h.parquet"}


JOBS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    # name: (input format, output suffix, options)
    "csv": ("csv", ".csv", LKC),
    "tsv-dynamic": ("tsv", ".tsv", (*LKC, "--dynamic", "length_of_stay")),
    "parquet-in-drop": (
        "parquet",
        ".csv",
        (*K_ANON, "--suppress", "0.05", "--suppressed", "drop", "--drop", "patient_id"),
    ),
    "best-of-budget": ("csv", ".csv", (*K_ANON, "--score", "discernibility", "--suppress", "0.05")),
    "semicolon-out": ("csv", ".csv", (*LKC, "--out-delimiter", ";", "--score", "discernibility")),
}


@pytest.mark.parametrize("name", sorted(JOBS))
def test_anonymize_lkc_never_imports_pandas(
    inputs: dict[str, Path], tmp_path: Path, name: str
) -> None:
    source, suffix, options = JOBS[name]
    argv = [
        *("anonymize", "lkc", "--data", str(inputs[source])),
        *("--taxonomy", str(hospital_taxonomy_path()), *options),
        *("--out", str(tmp_path / f"release{suffix}"), "--report", str(tmp_path / "r.json")),
        *("--html", str(tmp_path / "r.html"), "--json"),
    ]
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    probe = json.loads(done.stdout.strip().splitlines()[-1])
    assert probe == {"code": 0, "pandas": False}
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["privacy_check"]["ok"]
    assert report["release_report"]["privacy_check"]["verdict"] == "holds"
    assert (tmp_path / f"release{suffix}").stat().st_size > 0


RELEASES: dict[str, tuple[str, str, dict[str, object]]] = {
    # name: (input format, output suffix, job); job keys as in the API
    "csv": ("csv", ".csv", {}),
    "tsv": ("tsv", ".tsv", {}),
    "parquet": ("parquet", ".parquet", {}),
    "dynamic-parquet-in": ("parquet", ".csv", {"dynamic": ["age", "length_of_stay"]}),
    "root": ("csv", ".csv", {"k_anonymity": True, "suppress": "0.05"}),
    "drop-parquet-out": (
        "csv",
        ".parquet",
        {"k_anonymity": True, "suppress": "0.05", "suppressed": "drop"},
    ),
}


@pytest.mark.parametrize("name", sorted(RELEASES))
def test_the_command_releases_what_the_dataframe_api_releases(
    inputs: dict[str, Path], tmp_path: Path, name: str
) -> None:
    """The CLI's Arrow path against the DataFrame API, same job: the same bytes on disk."""
    source, suffix, job = RELEASES[name]
    dynamic = list(job.get("dynamic", []))  # type: ignore[call-overload]
    options = list(K_ANON) if job.get("k_anonymity") else list(LKC)
    if dynamic:
        options += ["--dynamic", ",".join(dynamic)]
    if "suppress" in job:
        options += ["--suppress", str(job["suppress"])]
        options += ["--suppressed", str(job.get("suppressed", "root"))]
    out = tmp_path / f"cli{suffix}"
    done = run_cli(
        "anonymize", "lkc", "--data", inputs[source], "--taxonomy", hospital_taxonomy_path(),
        *options, "--out", out, "--quiet",
    )  # fmt: skip
    assert done.code == 0, done.err

    table = read_table(inputs[source])
    taxonomy = load_taxonomy(hospital_taxonomy_path(), data_columns=list(table.columns))
    qids = ["age", "sex", "postcode", "employment"] if job.get("k_anonymity") else None
    schema = build_schema(taxonomy, table, qids, None, None, dynamic)
    if job.get("k_anonymity"):
        params = resolve_params("k-anonymity", len(schema.qids), None, 10, None)
    else:
        params = resolve_params("lkc", len(schema.qids), 3, 10, "0.6")
    score = "infogain" if schema.class_column else "discernibility"
    release = anonymize_lkc(
        table,
        schema,
        params,
        score,
        suppress=job.get("suppress"),  # type: ignore[arg-type]
        suppressed_mode=str(job.get("suppressed", "root")),
    )
    expected = tmp_path / f"api{suffix}"
    write_table(verified_release(release, schema, params).table, expected)
    assert out.read_bytes() == expected.read_bytes()


@settings(deadline=None)
@given(
    labels=st.lists(st.sampled_from(["a", "b", "[1-2)", "", "é"]), min_size=1, max_size=6),
    picks=st.lists(st.integers(0, 5), max_size=40),
    chunks=st.integers(1, 3),
)
def test_a_dictionary_column_encodes_as_its_text(labels, picks, chunks):
    """A release's QID (a dictionary column, labels possibly repeated or unused) gives the
    codes and distinct texts its cells' text gives, to the report and to the checker."""
    indices = np.array([p % len(labels) for p in picks], dtype=np.int32)
    dictionary = strings_of(labels)
    cut = np.array_split(indices, chunks)
    column = pa.chunked_array(
        [pa.DictionaryArray.from_arrays(arrow_of(part), dictionary) for part in cut]
    )
    text = pd.Series([labels[i] for i in indices], dtype=object)
    for encode in (text_codes, cell_text_codes):
        codes, distinct = encode(column)
        want_codes, want_distinct = encode(text)
        assert codes.tolist() == want_codes.tolist()
        assert distinct.tolist() == want_distinct.tolist()


@settings(deadline=None)
@given(values=st.lists(st.integers(-5, 5), max_size=50), offset=st.integers(0, 5))
def test_numbers_cross_between_arrow_and_numpy_unchanged(values, offset):
    """The buffer crossings the command uses instead of pyarrow's conversions (which load
    pandas): ints, floats, booleans, a sliced array (an offset into its buffer)."""
    ints = np.array(values, dtype=np.int64)
    for array in (ints, ints.astype(np.int32), ints.astype(np.float64), ints > 0):
        arrow = arrow_of(array)
        assert arrow.to_pylist() == array.tolist()
        assert numbers_of(arrow).tolist() == array.tolist()
        assert numbers_of(arrow.slice(offset)).tolist() == array[offset:].tolist()
