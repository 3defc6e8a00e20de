"""What a party daemon reads at start-up, and the digest a sealed session is bound to.

A sealed session records :func:`inputs_digest` of the daemon's table, taxonomy and delimiter,
compared at its rejoin (party/rejoin.py). The digest must describe the bytes the daemon parsed:
so the table and the taxonomy are each read once, parsed and hashed from that one read
(fedanon/readers/inputs.py); a file replaced at any moment of the start-up gives either the old
bytes or the new ones to both, never one to each. A Parquet dataset a Dask engine's workers read
(docs/engines.md) is not parsed at start-up: its files are hashed as they are then.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from fedanon.readers.inputs import recording_inputs
from fedanon.readers.sources import ParquetSource, TableSource, open_source, read_source
from fedanon.taxonomy.files import TaxonomyFile
from fedanon.taxonomy.loader import load_taxonomy


@dataclass(frozen=True)
class PartyInputs:
    """A daemon's table and taxonomy, and their digest (empty unless asked for)."""

    source: TableSource
    taxonomy: TaxonomyFile | None
    digest: bytes


def read_inputs(
    data: Path, delimiter: str | None, taxonomy: Path | None, *, sharded: bool, digest: bool
) -> PartyInputs:
    """Read the party's table (`sharded`: a Parquet dataset stays on disk for the Dask
    workers) and taxonomy; with `digest`, hash exactly what was read (a daemon that seals
    sessions; the others pay nothing for it)."""

    def recording() -> contextlib.AbstractContextManager[list[tuple[Path, bytes]]]:
        return recording_inputs() if digest else contextlib.nullcontext([])

    with recording() as table_files:
        # A Dask-backed party leaves a Parquet dataset on disk for its workers
        # (docs/engines.md); a one-process party reads its table whole, as Arrow text: no
        # pandas before a job needs it.
        source = open_source(data, delimiter) if sharded else read_source(data, delimiter)
    with recording() as taxonomy_files:
        tree = None if taxonomy is None else load_taxonomy(taxonomy, data_columns=source.columns)
    if not digest:
        return PartyInputs(source, tree, b"")
    if isinstance(source, ParquetSource):  # its rows are read later, by the workers
        named = [(_name(data, f), _file_digest(f)) for f in source.files]
    else:
        named = [("", file_digest) for _, file_digest in table_files]
    named += [("taxonomy", file_digest) for _, file_digest in taxonomy_files]
    return PartyInputs(source, tree, inputs_digest(delimiter, named))


def inputs_digest(delimiter: str | None, files: Iterable[tuple[str, bytes]]) -> bytes:
    """SHA-256 of what a party's sessions are computed from: its delimiter and its files'
    SHA-256 digests, each under its name (a dataset's file: its relative name; the table
    file: ""; the taxonomy: "taxonomy"). Sealed with a session and compared at its rejoin:
    the replayed chain covers only the answers given before the restart, so a changed record
    whose counts those answers did not show (a non-sensitive value changed, a row whose group
    was not split yet) would otherwise rejoin silently and release another table."""
    digest = hashlib.sha256(repr(delimiter).encode())
    for name, file_digest in files:
        digest.update(len(name).to_bytes(8, "big") + name.encode())
        digest.update(file_digest)
    return digest.digest()


def _name(data: Path, file: Path) -> str:
    """A dataset file's name in the digest: relative to the dataset ("" for a single file)."""
    return str(file.relative_to(data)) if data.is_dir() else ""


def _file_digest(path: Path) -> bytes:
    """SHA-256 of a file read in blocks (a dataset's file can be larger than memory allows)."""
    with path.open("rb") as file:
        return hashlib.file_digest(file, "sha256").digest()
