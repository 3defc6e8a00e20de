"""A daemon encodes its table once per job, not once per session (#28 session 11, h-exclcost).

Each LKC session opens the party's table through its counting engine; encoding it (every QID's
atoms, the class, the sensitive flags) was the largest fixed cost of a party's OpenSession, and
an exclusion's rerun paid it again at every survivor. The one-process engine keeps the last
encoding and reuses it for a run of the same table, columns and schema; anything the encoding
depends on that differs encodes again. Each run's counts equal a freshly built party's.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pyarrow as pa
import pytest

from fedanon.algorithms.tds.api import build_schema
from fedanon.algorithms.tds.engines import EngineSettings
from fedanon.algorithms.tds.engines.base import LocalEngine, PartyCounts
from fedanon.algorithms.tds.layout import Specialization
from fedanon.algorithms.tds.local_party import LocalParty
from fedanon.leader.sim import Federation, federation, split_table
from fedanon.party.handlers.lkc_session import LKCSession
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.readers.sources import ArrowSource, FrameSource
from fedanon.schema import Schema
from fedanon.taxonomy.files import SensitiveValue
from fedanon.taxonomy.loader import load_taxonomy
from tests.distributed.conftest import Dataset, hospital_dataset, run_matches_centralized

DATA = hospital_dataset(600, seed=11)
SPEC = DATA.spec(L=2, K=5, C="0.5")
COLUMNS = [c for c in DATA.table.columns if c not in SPEC.drop]


def _schema(**changes: Any) -> Schema:
    schema = build_schema(DATA.taxonomy, DATA.table, SPEC.qids, SPEC.sensitive, SPEC.class_column)
    for name, value in changes.items():
        setattr(schema, name, value)
    return schema


def _arrow(frame: Any) -> pa.Table:
    return pa.Table.from_pandas(frame.astype(str), preserve_index=False)


TABLE = _arrow(DATA.table)


@pytest.fixture
def encodings() -> Iterator[list[int]]:
    """Every ``LocalParty`` encoding made while the test runs (its row count)."""
    made: list[int] = []
    encode = LocalParty._encode

    def counted(self: LocalParty, schema: Schema, column: Any, names: Any, rows: int) -> None:
        made.append(rows)
        encode(self, schema, column, names, rows)

    with mock.patch.object(LocalParty, "_encode", counted):
        yield made


def _steps(party: PartyCounts, count: int) -> list[np.ndarray]:
    """`count` specializations of the first QID's root's children, each child kept."""
    out = [party.start().copy()]
    schema = party.schema
    for _ in range(count):
        tax = schema.taxonomies[0]
        table = party.partitions
        live = [int(n) for n in np.unique(table.keys[table.live_indices(), 0])]
        node = next((n for n in live if not tax.is_leaf(n)), None)
        if node is None:
            break
        link = table.link(0, node).size
        mask = np.ones((link, len(tax.children[node])), dtype=bool)
        out.append(party.specialize(Specialization(0, node, mask)).copy())
    return out


def _fresh(schema: Schema, table: pa.Table, columns: list[str]) -> list[np.ndarray]:
    return _steps(LocalParty(schema, table.select(columns)), 2)


def test_a_second_session_of_the_same_job_does_not_encode_the_table_again(
    encodings: list[int],
) -> None:
    engine = LocalEngine(EngineSettings())
    source = ArrowSource(TABLE)
    first = engine.open(_schema(), source, COLUMNS)
    first_counts = _steps(first, 2)  # the first session runs (a rerun's lost attempt)
    second = engine.open(_schema(), source, COLUMNS)  # the rerun: a new schema object
    assert encodings == [len(DATA.table)]
    # the second run starts at the roots, whatever the first did, and counts as a fresh party
    expected = _fresh(_schema(), TABLE, COLUMNS)
    for ours, theirs in zip(_steps(second, 2), expected, strict=True):
        assert np.array_equal(ours, theirs)
    for ours, theirs in zip(first_counts, expected, strict=True):
        assert np.array_equal(ours, theirs)
    assert encodings == [len(DATA.table)] * 2  # the check's own fresh party


def test_a_reruns_session_at_a_party_opens_on_the_first_attempts_encoding(
    encodings: list[int],
) -> None:
    """What a daemon does for an exclusion's rerun: a new session of the same job, its schema
    built again from the party's taxonomy (``spec.schema``, the same trees), on the daemon's
    engine. It counts as the first session did, without encoding the table again."""
    engine = LocalEngine(EngineSettings())
    source = ArrowSource(TABLE)

    def session(session_id: str, ring: list[str]) -> LKCSession:
        schema = SPEC.schema(DATA.taxonomy)
        return LKCSession(session_id, SPEC, schema, source, ring, "a", pb.SUM_MODE_PAIRWISE, engine)

    first = session("aa" * 16, ["a", "b", "c", "d"])
    first_counts = _steps(first.local, 2)
    rerun = session("bb" * 16, ["a", "b", "c"])
    assert encodings == [len(DATA.table)]
    for ours, theirs in zip(_steps(rerun.local, 2), first_counts, strict=True):
        assert np.array_equal(ours, theirs)


OTHER_TAXONOMY = Path(DATA.taxonomy_path)


def _other_sensitive() -> Schema:
    return _schema(sensitive=[SensitiveValue("diagnosis", "Schizophrenia")])


def _fewer_sensitive() -> Schema:
    return _schema(sensitive=[])


def _class_values_reordered() -> Schema:
    schema = _schema()
    schema.class_values = list(reversed(schema.class_values))
    return schema


def _no_class() -> Schema:
    return _schema(class_column=None, class_values=[])


def _trees_reloaded() -> Schema:
    """The same taxonomy file read again: other tree objects (a reloaded taxonomy)."""
    reloaded = load_taxonomy(OTHER_TAXONOMY, data_columns=list(DATA.table.columns))
    return build_schema(reloaded, DATA.table, SPEC.qids, SPEC.sensitive, SPEC.class_column)


def _fewer_qids() -> Schema:
    return build_schema(DATA.taxonomy, DATA.table, SPEC.qids[1:], SPEC.sensitive, SPEC.class_column)


# (what changes, the schema, the table, the released columns)
CHANGES: list[tuple[str, Callable[[], Schema], pa.Table, list[str]]] = [
    ("another sensitive value", _other_sensitive, TABLE, COLUMNS),
    ("no sensitive value", _fewer_sensitive, TABLE, COLUMNS),
    ("the class values in another order", _class_values_reordered, TABLE, COLUMNS),
    ("no class", _no_class, TABLE, COLUMNS),
    ("the taxonomy loaded again", _trees_reloaded, TABLE, COLUMNS),
    ("fewer QIDs", _fewer_qids, TABLE, COLUMNS),
    ("another table of the same content", _schema, copy.deepcopy(TABLE), COLUMNS),
    ("another table", _schema, _arrow(hospital_dataset(600, seed=12).table), COLUMNS),
]


@pytest.mark.parametrize("change", CHANGES, ids=[c[0] for c in CHANGES])
def test_a_job_that_differs_in_what_the_encoding_depends_on_encodes_again(
    encodings: list[int], change: tuple[str, Callable[[], Schema], pa.Table, list[str]]
) -> None:
    _, schema, table, columns = change
    engine = LocalEngine(EngineSettings())
    engine.open(_schema(), ArrowSource(TABLE), COLUMNS).start()
    other = schema()
    party = engine.open(other, ArrowSource(table), columns)
    assert len(encodings) == 2, "a stale encoding served another job"
    expected = _fresh(copy.deepcopy(other), table, columns)
    for ours, theirs in zip(_steps(party, 2), expected, strict=True):
        assert np.array_equal(ours, theirs)
    # one entry: the first job's encoding went, so coming back encodes again
    engine.open(_schema(), ArrowSource(TABLE), COLUMNS)
    assert len(encodings) == 4  # and the fresh party of the check


def test_other_released_columns_encode_again(encodings: list[int]) -> None:
    """A job that drops another column releases other columns: a new encoding."""
    engine = LocalEngine(EngineSettings())
    schema = _fewer_qids()  # its QIDs leave out the first, which the second job drops
    engine.open(schema, ArrowSource(TABLE), COLUMNS)
    fewer = [c for c in COLUMNS if c != SPEC.qids[0]]
    party = engine.open(_fewer_qids(), ArrowSource(TABLE), fewer)
    assert len(encodings) == 2
    assert list(party.generalized_table().column_names) == fewer


def test_a_table_that_may_change_in_place_is_encoded_for_every_session(
    encodings: list[int],
) -> None:
    """A DataFrame (the Python API's) can be changed between sessions: never reused."""
    engine = LocalEngine(EngineSettings())
    source = FrameSource(DATA.table.astype(str))
    engine.open(_schema(), source, COLUMNS)
    engine.open(_schema(), source, COLUMNS)
    assert len(encodings) == 2


# ------------------------------------------------------------------------------- real daemons
@pytest.fixture(scope="module")
def three_daemons() -> Iterator[tuple[Federation, Dataset]]:
    data = hospital_dataset(900, seed=13)
    parts = split_table(data.table, 3, "random", seed=2)
    with federation(parts, data.taxonomy_path, secure=True) as fed:
        yield fed, data


def test_daemons_serve_jobs_of_other_schemas_between_two_of_the_same_one(
    three_daemons: tuple[Federation, Dataset], tmp_path: Path
) -> None:
    """Each job's release equals its centralized one, whichever job the daemons served
    before it: the second job's encoding (other QIDs, another sensitive value) replaces the
    first's, and the first job again is counted over its own encoding, not the second's."""
    fed, data = three_daemons
    first = data.spec(L=2, K=10, C="0.5", sensitive={"diagnosis": ["HIV"]})
    other = data.spec(
        L=3,
        K=10,
        C="0.5",
        qids=SPEC.qids[1:],
        sensitive={"diagnosis": ["HIV", "Schizophrenia"]},
    )
    for i, spec in enumerate((first, other, first)):
        run_matches_centralized(fed, data, spec, tmp_path / f"release-{i}.csv")
