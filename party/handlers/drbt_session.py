"""A party's state for one DRBT session (vertical partitioning).

The party holds an attribute block for a set of objects (rows keyed by the id column). It
answers how many of the leader's common ids it lacks, then z-scores its block over exactly
those objects and projects it with a fresh secret matrix drawn from `secrets`. Only the m x k
result leaves the party; the matrix is dropped when `project` returns.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from fedanon.algorithms.drbt.matrices import secure_rng
from fedanon.algorithms.drbt.projection import project_block, zscore
from fedanon.atomic import atomic_path
from fedanon.errors import FedanonError
from fedanon.party.errors import NotExpected
from fedanon.party.session_base import SessionBase
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.text import as_numbers, as_text


class DRBTSession(SessionBase):
    """One DRBT session: ids, block, projection."""

    kind = "drbt"

    def __init__(self, session_id: str, job: pb.DRBTJob, table: pd.DataFrame) -> None:
        if job.id_column not in table.columns:
            raise FedanonError(f"the table has no id column '{job.id_column}'")
        super().__init__(session_id)
        self.job = job
        self.ids = as_text(table[job.id_column]).to_numpy(dtype=object)
        if len(set(self.ids)) != len(self.ids):
            raise FedanonError(f"id column '{job.id_column}' has duplicate ids")
        self.attributes = [c for c in table.columns if c != job.id_column]
        if len(self.attributes) < 2:
            raise FedanonError("a DRBT party needs at least 2 attributes besides the id")
        columns = []
        for name in self.attributes:
            values, bad = as_numbers(table[name])
            if bad is not None:
                raise FedanonError(
                    f"column '{name}': value '{table[name].iloc[bad]}' (first at "
                    f"row {bad + 1}) is not a number"
                )
            columns.append(values)
        self.block = np.column_stack(columns)
        self.k = job.k_dims or math.ceil(len(self.attributes) / 2)
        self.order: np.ndarray | None = None
        self.projected = False

    def common_ids(self, ids: list[str]) -> int:
        """Align the block with the leader's id list; return how many ids this party lacks."""
        index = {v: i for i, v in enumerate(self.ids)}
        positions = np.array([index.get(v, -1) for v in ids], dtype=np.int64)
        missing = int((positions < 0).sum())
        if len(set(ids)) != len(ids):
            raise FedanonError("the leader's id list repeats an id")
        self.order = positions if missing == 0 else None
        return missing

    def project(self) -> np.ndarray:
        """z-score over the common objects, then D R with a fresh secret R (never stored)."""
        if self.order is None:
            raise NotExpected("no complete common id list was agreed before the projection")
        if self.projected:
            raise NotExpected(
                "this session's block was already projected: a second, independent "
                "projection of the same data would reveal more of it"
            )
        self.projected = True
        block = zscore(self.block[self.order], self.attributes)
        return project_block(block, self.k, self.job.matrix, secure_rng(), rescale=self.job.rescale)

    def request_limit(self, method: str) -> int | None:
        """The largest ``AssignRequest``: a cluster (varint, at most 5 bytes) per common id."""
        return 5 * len(self.ids) + (1 << 16) if method == "Assign" else None

    def save_assignment(self, clusters: list[int], directory: Path) -> Path:
        """Write (id, cluster) for the common objects to the party's output directory."""
        if self.order is None or len(clusters) != len(self.order):
            raise FedanonError("cluster assignment does not match the common id list")
        path = directory / f"drbt-clusters-{self.session_id[:12]}.csv"
        frame = pd.DataFrame({self.job.id_column: self.ids[self.order], "cluster": clusters})
        with atomic_path(path) as tmp:
            frame.to_csv(tmp, index=False)
        return path
