"""One party's side of vertical DRBT, driven directly (``DRBTSession``, no gRPC).

What a party must do (docs/drbt-vertical.md, "The protocol"): align its block with
the leader's id list (reporting how many ids it lacks), z-score every attribute over exactly the
common objects with the population standard deviation, project with its own secret matrix to
k_i = ceil(d_i / 2) dimensions by default, and refuse k_i = d_i. The secret matrix is recovered
with the in-process recorder of :mod:`tests.drbt_vertical.harness` so the result can be checked
against the formula D_i R_i itself.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedanon.errors import FedanonError
from fedanon.party.handlers.drbt_session import DRBTSession
from fedanon.protos import fedanon_v1_pb2 as pb
from tests.drbt_vertical.harness import (
    clustered_table,
    default_k,
    record_projections,
    zscore_population,
)


def session(table: pd.DataFrame, k: int = 0, matrix: str = "sparse") -> DRBTSession:
    return DRBTSession("ab" * 16, pb.DRBTJob(id_column="pid", matrix=matrix, k_dims=k), table)


@pytest.mark.parametrize("d", [2, 3, 4, 5, 8, 9])
def test_default_kept_dimensions_are_ceil_half(d: int) -> None:
    table, _ = clustered_table(m=40, d=d, seed=d)
    s = session(table)
    assert s.k == default_k(d)
    assert s.common_ids(list(table["pid"])) == 0
    assert s.project().shape == (40, default_k(d))


@pytest.mark.parametrize("k", [4, 5])
def test_k_not_below_d_is_refused(k: int) -> None:
    table, _ = clustered_table(m=30, d=4)
    s = session(table, k=k)
    s.common_ids(list(table["pid"]))
    with pytest.raises(FedanonError, match="choose fewer than 4"):
        s.project()
    ok = session(table, k=3)  # k = 3 < 4 is accepted and projects
    ok.common_ids(list(table["pid"]))
    assert ok.project().shape == (30, 3)


@pytest.mark.parametrize("matrix", ["sparse", "gaussian"])
def test_projection_is_zscore_over_common_ids_times_R(
    monkeypatch: pytest.MonkeyPatch, matrix: str
) -> None:
    """The party's block: rows in the leader's order, z-scored over the common ids only.

    The party holds 60 extra objects the leader never lists, with values 50 standard deviations
    off: a z-score over the whole table, or rows in the party's own order, would not give
    zscore(common rows) @ R.
    """
    projections = record_projections(monkeypatch)
    table, _ = clustered_table(m=200, d=7, seed=3)
    extra, _ = clustered_table(m=60, d=7, seed=4)
    extra["pid"] = [f"X{i}" for i in range(60)]
    extra.iloc[:, 1:] += 50.0
    rng = np.random.default_rng(9)
    held = pd.concat([table, extra]).iloc[rng.permutation(260)].reset_index(drop=True)
    leader_order = list(table["pid"].iloc[rng.permutation(200)])

    s = session(held, matrix=matrix)
    assert s.common_ids(leader_order) == 0
    released = s.project()

    (recorded,) = projections.items
    R = recorded.matrix
    assert R.shape == (7, 4)
    np.testing.assert_allclose(np.linalg.norm(R, axis=0), 1.0)
    assert (np.count_nonzero(R, axis=0) >= 2).all()
    D = table.set_index("pid").loc[leader_order].to_numpy()
    np.testing.assert_allclose(released, zscore_population(D) @ R, rtol=1e-10, atol=1e-12)
    # the same matrix applied to a z-score over all 260 rows gives something else
    everything = held.set_index("pid").loc[leader_order].to_numpy()
    wrong = (
        (everything - held.iloc[:, 1:].to_numpy().mean(0)) / held.iloc[:, 1:].to_numpy().std(0)
    ) @ R
    assert not np.allclose(released, wrong, atol=1e-3)


def test_sparse_matrix_entries_follow_achlioptas(monkeypatch: pytest.MonkeyPatch) -> None:
    """RP2 columns: entries 0 or +-1/sqrt(nnz) after normalization, at least two non-zeros."""
    projections = record_projections(monkeypatch)
    table, _ = clustered_table(m=50, d=9, seed=1)
    for _ in range(20):
        s = session(table)
        s.common_ids(list(table["pid"]))
        s.project()
    for recorded in projections.items:
        R = recorded.matrix
        nnz = np.count_nonzero(R, axis=0)
        assert (nnz >= 2).all()
        np.testing.assert_allclose(
            np.abs(R[R != 0]), np.broadcast_to(1 / np.sqrt(nnz), R.shape)[R != 0]
        )
    # fresh matrix every projection (from the cryptographic seed)
    assert len({r.matrix.tobytes() for r in projections.items}) == 20


def test_missing_ids_are_counted_and_block_projection() -> None:
    table, _ = clustered_table(m=100, d=4)
    s = session(table.iloc[7:])  # lacks the first 7 objects
    leader_ids = [*table["pid"], "nobody"]
    assert s.common_ids(leader_ids) == 8
    with pytest.raises(FedanonError, match="no complete common id list"):
        s.project()
    assert s.common_ids(list(table["pid"].iloc[7:])) == 0  # a complete list is accepted after
    assert s.project().shape == (93, 2)


def test_repeated_leader_id_refused() -> None:
    table, _ = clustered_table(m=20, d=3)
    s = session(table)
    with pytest.raises(FedanonError, match="repeats an id"):
        s.common_ids(["P00000", "P00000"])


def test_constant_over_common_ids_is_refused() -> None:
    """A column constant on the common objects cannot be z-scored there (spec: input error)."""
    table, _ = clustered_table(m=30, d=3)
    table.loc[:19, "a1"] = 5.0  # constant on the first 20 objects only
    s = session(table)
    s.common_ids(list(table["pid"].iloc[:20]))
    with pytest.raises(FedanonError, match="'a1' is constant"):
        s.project()


def test_assignment_is_written_in_id_order(tmp_path) -> None:
    table, _ = clustered_table(m=10, d=3)
    s = session(table.iloc[::-1])
    order = list(table["pid"])
    s.common_ids(order)
    path = s.save_assignment([i % 3 for i in range(10)], tmp_path)
    written = pd.read_csv(path, dtype={"pid": str})
    assert list(written.columns) == ["pid", "cluster"]
    assert list(written["pid"]) == order
    assert list(written["cluster"]) == [i % 3 for i in range(10)]
    with pytest.raises(FedanonError, match="does not match"):
        s.save_assignment([0] * 9, tmp_path)
