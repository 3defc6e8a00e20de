"""`fedanon --help` and argument errors answer without importing the heavy libraries.

Behaviour, not timing: the parser is built in a fresh interpreter and the test looks at which
top-level packages ended up in ``sys.modules``. Each heavy package costs 0.1-0.5 s of CPU to
import, so keeping them out is what keeps start-up fast (bench/bench_startup.py measures it).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("pandas", "numpy", "matplotlib", "grpc", "cryptography", "pyarrow", "sklearn", "rich")

PROBE = """
import contextlib, io, json, sys
from fedanon.cli.main import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules})))
"""


def _imported_by(*argv: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, check=True
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["anonymize", "lkc", "--help"],
        ["evaluate", "drbt", "--help"],
        ["party", "serve", "--help"],
        ["anonymize", "lkc", "--k", "x"],  # an argument error
        ["sim", "drbt"],  # required options missing
    ],
    ids=" ".join,
)
def test_help_and_argument_errors_import_no_heavy_library(argv):
    assert not _imported_by(*argv) & set(HEAVY)


def test_the_probe_sees_a_heavy_import_when_a_command_runs(tmp_path):
    """The probe itself works: a command that reads a table does import pandas."""
    table = tmp_path / "t.csv"
    table.write_text("a,b\n1,2\n", encoding="utf-8")
    imported = _imported_by("check", "k-anonymity", "--data", str(table), "--qid", "a", "--k", "1")
    assert "pandas" in imported
