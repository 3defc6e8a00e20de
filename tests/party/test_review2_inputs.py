"""Session 13 review (h-review2) of the read-once table reader against hostile tables.

A text table's first row is parsed from a head of the file grown until the row ends
(fedanon/readers/inputs.py, `ReadOnce.from_head`): a file without a line break (a binary
file named .csv, a dump on one line) grew that head without bound, held as bytes and as text
several times over. And a header field longer than the csv module's limit raised ``_csv.Error``
through every reader: a traceback where a one-line error was due. Both are one line naming
the file, from the daemon's reader, the CLI's, and a real ``fedanon party serve``.
"""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest

from fedanon.crypto.identity import create_ca, issue_identity, save_ca, save_identity
from fedanon.errors import FedanonError
from fedanon.leader.ports import free_ports
from fedanon.party.inputs import read_inputs
from fedanon.readers import inputs
from fedanon.readers.table_io import read_arrow
from fedanon.synth import generate_hospital, hospital_taxonomy_path
from tests.harness.cli import run_cli_process
from tests.party.test_party_startup import _config, _one_line_error, _serve

#: A header field past the csv module's field limit (131072 characters).
LONG_FIELD = "x" * 200_000


def _read_daemon(path: Path) -> object:
    return read_inputs(path, None, None, sharded=False, digest=True)


def test_a_first_row_longer_than_the_head_bound_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Distinct short column names, so nothing but the bound refuses the row."""
    monkeypatch.setattr(inputs, "MAX_HEAD_BYTES", 1 << 18, raising=False)
    table = tmp_path / "wide.csv"
    table.write_text(",".join(f"c{i}" for i in range(60_000)) + "\n" + "1\n")
    with pytest.raises(FedanonError) as caught:
        _read_daemon(table)
    message = str(caught.value)
    assert message.startswith(f"{table}: cannot read table (its first row is longer than")
    assert "\n" not in message


@pytest.mark.parametrize("reader", ["daemon", "cli"])
def test_a_header_field_past_the_csv_limit_is_one_error(tmp_path: Path, reader: str) -> None:
    table = tmp_path / "long.csv"
    table.write_text(f"age,{LONG_FIELD}\n30,M\n")
    with pytest.raises(FedanonError) as caught:
        _read_daemon(table) if reader == "daemon" else read_arrow(table)
    assert str(caught.value).startswith(f"{table}: cannot read table (field larger than")


def test_the_daemon_refuses_such_a_table_in_one_line_before_it_listens(tmp_path: Path) -> None:
    party_dir = tmp_path
    ca = create_ca("review2 test CA")
    save_ca(ca, party_dir / "certs")
    save_identity(issue_identity(ca, "hospital-a", "party"), party_dir / "certs")
    (party_dir / "a.csv").write_text(f"age,{LONG_FIELD}\n30,M\n", encoding="utf-8")
    done = _serve(_config(party_dir, free_ports(1)[0]))
    _one_line_error(done, "a.csv: cannot read table (field larger than field limit")


def _not_a_file(tmp_path: Path, kind: str, name: str) -> Path:
    """A path `name` that is a FIFO, a link to a device, or a link to a terminal's stdin."""
    path = tmp_path / name
    if kind == "fifo":
        os.mkfifo(path)
    else:
        # /dev/null, not /dev/zero: a reader that reads it anyway ends (and fails the test)
        # instead of filling the memory
        path.symlink_to("/dev/null" if kind == "device" else "/dev/stdin")
    return path


@pytest.mark.parametrize("kind", ["fifo", "device", "stdin"])
@pytest.mark.parametrize("name", ["t.csv", "tax.toml", "tax.hchy", "arx/sex.csv"])
def test_what_is_not_a_regular_file_is_one_error_never_a_hang(
    tmp_path: Path, kind: str, name: str
) -> None:
    """Read by the one-process CLI (``anonymize lkc``, its table or taxonomy), a FIFO blocks
    at its open, a device never ends, a terminal waits for a keyboard: each is one error line
    naming the file, at once (a bounded wait: the process is killed past it)."""
    (tmp_path / "arx").mkdir()
    table = tmp_path / "a.csv"
    generate_hospital(50, seed=3).to_csv(table, index=False)
    taxonomy: Path = Path(hospital_taxonomy_path())
    bad = _not_a_file(tmp_path, kind, name)
    if name == "t.csv":
        table = bad
    else:
        taxonomy = bad.parent if name.startswith("arx/") else bad
    try:
        done = run_cli_process(
            "anonymize", "lkc", "--data", table, "--taxonomy", taxonomy,
            "--k", "5", "--L", "2", "--C", "0.6", "--out", tmp_path / "out.csv",
            timeout=60,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"{bad} ({kind}) is read for ever")
    errors = [line for line in done.err.splitlines() if line.startswith("fedanon: error:")]
    assert done.code == 2 and len(errors) == 1, done.err
    assert f"{bad}: not a regular file" in errors[0]
    assert "Traceback" not in done.err
    assert not (tmp_path / "out.csv").exists()


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_the_daemons_reader_refuses_them_too(tmp_path: Path, kind: str) -> None:
    """Below party.toml's own check (a file swapped in after it), in this process: a reader
    blocked on the FIFO's open is released (a writer opens it) once the bounded wait ends."""
    bad = _not_a_file(tmp_path, kind, "t.csv")
    outcome: list[BaseException | None] = []

    def read() -> None:
        try:
            _read_daemon(bad)
            outcome.append(None)
        except BaseException as exc:  # reported by the test, whatever it is
            outcome.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(30)
    if reader.is_alive():
        with open(bad, "wb"):  # the blocked open returns; the reader then sees no rows
            pass
        reader.join(30)
        pytest.fail(f"{bad} ({kind}): the reader blocked")
    assert isinstance(outcome[0], FedanonError), outcome
    assert str(outcome[0]) == (
        f"{bad}: not a regular file (a FIFO, a device or a terminal is not read)"
    )
