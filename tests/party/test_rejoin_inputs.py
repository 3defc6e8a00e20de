"""What a sealed session is bound to (#28, review): the digest of the party's inputs changes
with any byte of its table (or of any file of a Parquet dataset) or of its taxonomy, and with
its delimiter; not with where the same bytes lie."""

from __future__ import annotations

import hashlib
from pathlib import Path

from fedanon.party.inputs import read_inputs

TABLE = "age,sex,diagnosis\n30,Male,Flu\n41,Female,HIV\n"
TAXONOMY = '[attributes.sex]\nkind = "categorical"\ntree = """\nAny\n  Male\n  Female\n"""\n'


def inputs_digest(data: Path, taxonomy: Path | None, delimiter: str | None) -> bytes:
    """The digest the daemon seals its sessions with (a dataset: as a Dask party reads it)."""
    sharded = data.is_dir()
    return read_inputs(data, delimiter, taxonomy, sharded=sharded, digest=True).digest


def _files(root: Path, table: str = TABLE, taxonomy: str = TAXONOMY) -> tuple[Path, Path]:
    root.mkdir(parents=True, exist_ok=True)
    (root / "t.csv").write_text(table)
    (root / "tax.toml").write_text(taxonomy)
    return root / "t.csv", root / "tax.toml"


def test_the_same_bytes_elsewhere_have_the_same_digest(tmp_path: Path) -> None:
    assert inputs_digest(*_files(tmp_path / "a"), None) == inputs_digest(
        *_files(tmp_path / "b"), None
    )


def test_any_change_of_table_taxonomy_or_delimiter_changes_the_digest(tmp_path: Path) -> None:
    reference = inputs_digest(*_files(tmp_path / "ref"), None)
    changed = [
        inputs_digest(*_files(tmp_path / "value", TABLE.replace("Flu", "Flv")), None),
        inputs_digest(*_files(tmp_path / "row", TABLE + "52,Male,Flu\n"), None),
        inputs_digest(*_files(tmp_path / "tax", taxonomy=TAXONOMY + "# edited\n"), None),
        inputs_digest(*_files(tmp_path / "delim"), ";"),
        inputs_digest(_files(tmp_path / "none")[0], None, None),
    ]
    assert reference not in changed and len(set(changed)) == len(changed)


def test_a_parquet_datasets_files_are_all_bound(tmp_path: Path) -> None:
    dataset = tmp_path / "ds"
    dataset.mkdir()
    (dataset / "part-0.parquet").write_bytes(b"one")
    (dataset / "part-1.parquet").write_bytes(b"two")
    before = inputs_digest(dataset, None, None)
    (dataset / "part-1.parquet").write_bytes(b"tWo")
    after = inputs_digest(dataset, None, None)
    (dataset / "part-1.parquet").rename(dataset / "part-2.parquet")
    assert len({before, after, inputs_digest(dataset, None, None)}) == 3


def test_only_the_files_the_party_reads_count(tmp_path: Path) -> None:
    """A file the party does not read as its table (a writer's marker beside the dataset)
    changes nothing: the rejoin of an unchanged table is not refused for it."""
    dataset = tmp_path / "ds"
    dataset.mkdir()
    (dataset / "part-0.parquet").write_bytes(b"one")
    before = inputs_digest(dataset, None, None)
    (dataset / "_SUCCESS").write_bytes(b"")
    assert inputs_digest(dataset, None, None) == before


def test_the_digest_is_the_one_sessions_sealed_before_session_13_hold(tmp_path: Path) -> None:
    """Reading once changed how the bytes are read, not what is hashed: a session sealed by
    a daemon of the previous version still rejoins one of this version (the formula of
    main f8ee96f's `inputs_digest`, written out)."""
    table, taxonomy = _files(tmp_path)
    expected = hashlib.sha256(repr(";").encode())
    for name, content in (("", table.read_bytes()), ("taxonomy", taxonomy.read_bytes())):
        expected.update(len(name).to_bytes(8, "big") + name.encode())
        expected.update(hashlib.sha256(content).digest())
    assert inputs_digest(table, taxonomy, ";") == expected.digest()
