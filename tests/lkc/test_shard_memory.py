"""What a shard of a Dask party keeps: less than a one-process party, for the same release.

A shard's frame is its own, so it keeps only the columns the release copies (a QID is its atom
codes once encoded), and its partitions' statistics as their nonzero entries. The statistics
of partitions no longer live are freed, in either party.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from fedanon.algorithms.tds.api import build_schema
from fedanon.algorithms.tds.engine import LKCEngine
from fedanon.algorithms.tds.engines import sharded
from fedanon.algorithms.tds.engines.coded import CodedTable
from fedanon.algorithms.tds.engines.shard_stats import SparseBlock
from fedanon.algorithms.tds.local_party import LocalParty
from fedanon.party.records import encode_record
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.readers import sources
from fedanon.readers.sources import FilesShard, FrameShard, ParquetSource
from fedanon.schema import LKCParams, Schema
from fedanon.synth import generate_hospital, hospital_taxonomy_path
from fedanon.taxonomy.loader import load_taxonomy
from fedanon.taxonomy.tree import Spec, Taxonomy


def _parties(rows: int = 4000) -> tuple[LocalParty, LocalParty]:
    table = generate_hospital(rows, seed=5).drop(columns=["patient_id"])
    taxonomy = load_taxonomy(hospital_taxonomy_path(), data_columns=list(table.columns))
    schema = build_schema(taxonomy, table, dynamic=["length_of_stay"])
    whole, shard = copy.deepcopy(schema), copy.deepcopy(schema)
    columns = list(table.columns)
    parties = LocalParty(whole, table), LocalParty.from_shard(shard, FrameShard(table), columns)
    for party in parties:
        LKCEngine(party.schema, LKCParams.of(2, 10, "0.5")).run(party)
    return parties


def test_a_shard_keeps_less_and_releases_the_same() -> None:
    whole, shard = _parties()
    assert shard.partitions.size == whole.partitions.size > 100
    qids = {t.attribute for t in shard.schema.taxonomies}
    assert not qids & set(shard.table.columns) and qids <= set(whole.table.columns)
    dense = sum(b.nbytes for b in whole._blocks)
    sparse = sum(b.nbytes for b in shard._blocks)
    assert all(isinstance(b, SparseBlock) or b.size == 0 for b in shard._blocks)
    assert 0 < sparse < dense / 4
    assert whole.generalized_table().equals(shard.generalized_table())
    assert list(shard.generalized_table().columns) == list(whole.table.columns)


def test_statistics_of_dead_partitions_are_freed() -> None:
    """Once none of a step's partitions is live, its block goes (not an empty view that keeps
    the whole block's memory alive)."""
    whole, _ = _parties()
    dead = [b for b, live in zip(whole._blocks, whole._block_live, strict=True) if live == 0]
    assert dead
    assert all(isinstance(b, np.ndarray) and b.size == 0 and b.base is None for b in dead)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_sparse_block_restores_any_ascending_rows(seed: int) -> None:
    rng = np.random.default_rng(seed)
    stats = rng.integers(0, 300, size=(50, 7, 3)) * (rng.random((50, 7, 3)) < 0.1)
    stats[[3, 17]] = 0  # partitions with no entry at all
    block = SparseBlock.of(stats)
    assert block.nbytes < stats.nbytes / 3
    for rows in (np.arange(50), np.array([3]), np.array([0, 3, 17, 49]), np.array([], int)):
        out = np.full((rows.size, 7, 3), -1, dtype=np.int64)
        block.take(rows, out)
        np.testing.assert_array_equal(out, stats[rows])


def test_a_worker_reads_its_shard_column_by_column_and_keeps_codes_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Dask worker never holds its shard as a table (nor reads one whole): one column at a
    time from each file, each QID kept as its atoms and every other released column as codes,
    in the narrowest types; what it releases is the one-process party's, record for record."""
    table = generate_hospital(3000, seed=8).drop(columns=["patient_id"]).astype(str)
    files = []
    for n, (lo, hi) in enumerate([(0, 1000), (1000, 3000)]):
        files.append(tmp_path / f"part-{n}.parquet")
        table.iloc[lo:hi].to_parquet(files[-1], index=False)
    taxonomy = load_taxonomy(hospital_taxonomy_path(), data_columns=list(table.columns))
    schema = build_schema(taxonomy, table)
    whole = LocalParty(copy.deepcopy(schema), ParquetSource(tmp_path).frame())

    def whole_table(*args: object, **kwargs: object) -> None:
        raise AssertionError("a worker read its whole shard as a table")

    monkeypatch.setattr(sources, "read_table", whole_table)
    rows = sharded._open_shard("codes", FilesShard(tuple(files)), schema, list(table.columns))
    try:
        shard = sharded._SHARDS["codes"].party
        assert rows == len(table)
        per_row = _per_row_arrays(shard, rows)
        assert per_row["record_partition"] == 4  # a partition index: int32
        others = {name: size for name, size in per_row.items() if name != "record_partition"}
        assert others and max(others.values()) <= 2 * len(schema.taxonomies)
        assert sum(per_row.values()) <= 32  # bytes per row: 85 when a shard kept text
        assert not _holds_text(vars(shard))
        for party in (whole, shard):
            LKCEngine(party.schema, LKCParams.of(2, 10, "0.5")).run(party)
        assert _records(shard) == _records(whole)
    finally:
        sharded._drop("codes")


def _records(party: LocalParty) -> list[bytes]:
    """The party's released records, in order, each serialized for the union."""
    release = party.released(encode_record)
    whole = release.part(0, len(release))
    return [whole.rows[code] for code in whole.codes]


def _per_row_arrays(party: LocalParty, rows: int) -> dict[str, int]:
    """Bytes per row of each attribute holding per-row arrays (numpy, or lists of them)."""
    sizes: dict[str, int] = {}
    for name, value in vars(party).items():
        arrays = value if isinstance(value, list) else [value]
        if isinstance(value, CodedTable):
            arrays = [column.codes for column in value.columns.values()]
        per_row = [a for a in arrays if isinstance(a, np.ndarray) and a.shape[-1:] == (rows,)]
        if per_row:
            sizes[name] = sum(a.nbytes for a in per_row) // rows
    return sizes


def _holds_text(value: object) -> bool:
    """Whether `value` holds a table, a column, or an object array (text per row)."""
    if isinstance(value, pd.DataFrame | pd.Series | pa.Table | pa.ChunkedArray):
        return True
    if isinstance(value, np.ndarray):
        return value.dtype == object and value.size > 100
    if isinstance(value, dict):
        return any(_holds_text(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_holds_text(v) for v in value)
    if isinstance(value, CodedTable):
        return any(_holds_text(c.codes) for c in value.columns.values())
    return False


def test_coded_columns_give_back_the_values_and_the_text_the_union_serializes() -> None:
    """A shard's non-QID columns are codes over distinct values: the release has the column's
    own values and dtype, and each cell's text as ``astype(str)`` gives it, even for values
    that compare equal but print differently (1, 1.0, True) and for missing cells."""
    tax = Taxonomy.categorical("a", Spec("*", [Spec("x", [Spec("x1"), Spec("x2")]), Spec("y")]))
    n = 12
    table = pd.DataFrame(
        {
            "a": ["x1", "x2", "y", "y"] * 3,
            "mixed": [1, 1.0, "1", None, float("nan"), True, 1, 1.0, "x", None, 0.0, -0.0],
            "text": pd.Series(
                pd.arrays.ArrowExtensionArray(pa.array(["p", None, "q", "p"] * 3, pa.string()))
            ),
            "number": np.arange(n) % 5,
            "c": ["p", "q"] * 6,
        },
        index=pd.RangeIndex(100, 100 + n),
    )
    schema = Schema([tax], [], "c", ["p", "q"])
    whole = LocalParty(copy.deepcopy(schema), table)
    shard = LocalParty.from_shard(copy.deepcopy(schema), FrameShard(table), list(table.columns))
    for party in (whole, shard):
        LKCEngine(party.schema, LKCParams.of(1, 2, 1)).run(party)
    assert shard.generalized_table().equals(whole.generalized_table())
    assert _records(shard) == _records(whole)
    texts = {pb.ReleasedRecord.FromString(record).values[1] for record in _records(shard)}
    assert texts == {"1", "1.0", "None", "nan", "True", "x", "0.0", "-0.0"}
