"""A whole ``fedanon leader run`` of an LKC job loads only what that job needs (issue #30).

The leader process used to import every job kind's module when it read job.toml, and with them
pandas, whose import alone costs about as much CPU as a whole centralized ``anonymize lkc`` on
Adult: a third of the shuffle union's whole-process overhead. The leader of an LKC job with a
CSV or TSV release now never imports pandas nor another kind's module, in either union mode,
and its release still equals the centralized one (a Parquet release keeps the DataFrame it was
written from, so its file's recorded types are unchanged). A shuffle union starts no worker
process, so its leader does not import `multiprocessing` either (session 10).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from fedanon.errors import FedanonError
from fedanon.leader.kinds.lkc import _release_table
from fedanon.leader.sim import Federation
from fedanon.readers.table_io import write_table_to
from tests.distributed.conftest import Dataset, assert_same_release, centralized

# Runs the CLI in a fresh interpreter, then says which of the watched modules it imported.
PROBE = """
import json, sys
from fedanon.cli.main import main
code = main(sys.argv[1:])
watched = ["pandas", *(f"fedanon.leader.kinds.{k}" for k in ("c45", "drbt", "evaluate", "kactus",
           "randomize")), "multiprocessing"]
print(json.dumps({"code": code, "loaded": [m for m in watched if m in sys.modules]}))
"""


def _job(fed: Federation, dataset: Dataset, workdir: Path, out: Path, mode: str) -> Path:
    """A job.toml for `fed` as an operator writes it: LKC, the given union mode and release."""
    assert fed.leader_tls is not None
    parties = "\n".join(
        f'[[parties]]\nname = "{h.name}"\naddress = "{h.address}"' for h in fed.hops
    )
    job = workdir / "job.toml"
    job.write_text(
        f"""
name = "leader"
taxonomy = "{dataset.taxonomy_path}"
out = "{out}"
report = "{workdir / "report.json"}"
[lkc]
L = 3
K = 20
C = "0.2"
drop = {list(dataset.drop)}
[union]
mode = "{mode}"
{parties}
[tls]
ca = "{fed.leader_tls.ca}"
cert = "{fed.leader_tls.cert}"
key = "{fed.leader_tls.key}"
""",
        encoding="utf-8",
    )
    return job


@pytest.mark.parametrize(
    ("mode", "suffix"), [("layered", ".csv"), ("shuffle", ".tsv"), ("shuffle", ".parquet")]
)
def test_leader_run_loads_only_its_kind_and_releases_the_centralized_table(
    hospital_federation: Federation,
    hospital_data: Dataset,
    tmp_path: Path,
    mode: str,
    suffix: str,
) -> None:
    out = tmp_path / f"release{suffix}"
    job = _job(hospital_federation, hospital_data, tmp_path, out, mode)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "leader", "run", "--config", str(job), "--quiet"],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    probe = json.loads(done.stdout.strip().splitlines()[-1])
    # A Parquet release is written from a DataFrame (its file records pandas' types); only the
    # layered union starts worker processes (its fork server), so only it loads multiprocessing.
    expected = ["pandas"] if suffix == ".parquet" else []
    expected += ["multiprocessing"] if mode == "layered" else []
    assert probe == {"code": 0, "loaded": expected}
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert report["union_mode"] == mode
    assert report["release_report"]["privacy_check"]["verdict"] == "holds"
    reference = centralized(hospital_data, hospital_data.spec(3, 20, "0.2"))
    if suffix == ".parquet":
        csv = tmp_path / "release-as.csv"
        pd.read_parquet(out).to_csv(csv, index=False)
        out = csv
    elif suffix == ".tsv":
        csv = tmp_path / "release-as.csv"
        pd.read_csv(out, sep="\t", dtype=str, keep_default_na=False).to_csv(csv, index=False)
        out = csv
    assert_same_release(out, report, reference)


# Cells a CSV writer must quote or escape, repeats, an empty cell, non-ASCII text.
ROWS = [
    ["[30-40)", "a,b", 'say "hi"', ""],
    ["[30-40)", "a,b", 'say "hi"', ""],
    ["Any", "Zürich", "line\nbreak", "x"],
    ["[30-40)", "a,b", "plain", "y"],
]
COLUMNS = ["age", "place", "note", "flag"]


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".parquet"])
def test_the_release_file_is_the_one_a_dataframe_of_the_rows_gives(
    tmp_path: Path, suffix: str
) -> None:
    """What the leader writes from its release table is, byte for byte, what it wrote from
    ``pd.DataFrame(rows, columns=columns)`` before (the releases stay identical)."""
    theirs, ours = tmp_path / f"frame{suffix}", tmp_path / f"leader{suffix}"
    write_table_to(pd.DataFrame(ROWS, columns=COLUMNS), theirs, theirs)
    write_table_to(_release_table(ROWS, COLUMNS, ours), ours, ours)
    assert ours.read_bytes() == theirs.read_bytes()


def test_a_record_of_the_wrong_width_is_one_line_naming_the_union() -> None:
    with pytest.raises(FedanonError, match=r"^union: a released record has 3 values, not the 4"):
        _release_table([*ROWS, ["a", "b", "c"]], COLUMNS, Path("release.csv"))
