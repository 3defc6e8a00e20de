"""Session 13 review (h-review2) of the read-once table reader against hostile tables.

A text table's first row is parsed from a head of the file grown until the row ends
(fedanon/readers/inputs.py, `ReadOnce.from_head`): a file without a line break (a binary
file named .csv, a dump on one line) grew that head without bound, held as bytes and as text
several times over. And a header field longer than the csv module's limit raised ``_csv.Error``
through every reader: a traceback where a one-line error was due. Both are one line naming
the file, from the daemon's reader, the CLI's, and a real ``fedanon party serve``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fedanon.crypto.identity import create_ca, issue_identity, save_ca, save_identity
from fedanon.errors import FedanonError
from fedanon.party.inputs import read_inputs
from fedanon.readers import inputs
from fedanon.readers.table_io import read_arrow
from tests.party.test_party_startup import _config, _free_port, _one_line_error, _serve

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
    done = _serve(_config(party_dir, _free_port()))
    _one_line_error(done, "a.csv: cannot read table (field larger than field limit")
