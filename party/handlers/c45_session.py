"""The party's side of a federated C4.5 job: its session and the order of its iterations.

Order inside one session (each step checks the session id and the iteration number):

* OpenSession (iteration -): the job names the features, the numeric ones and the class
  column; the party checks its table has them.
* Union (iteration 0, the ring's secure set union): this party's distinct values of every
  feature and its classes, each an encoded (feature, value) item; the leader learns their
  union, not who holds a value.
* C45Count (iteration r >= 1): the count queries of round r (the first also carries the
  agreed domains, the union's items); the party counts them over its own table and keeps the
  vector (packed in ``count_bits``-bit fields when the leader asks), answering only its
  length.
* Sum (iteration r, the session's ring or pairwise secure sum): that vector is this party's
  contribution; it never leaves the party in the clear.
"""

from __future__ import annotations

import pandas as pd

from fedanon.errors import FedanonError
from fedanon.federation.c45_job import UNION_ROUND, queries_from_batch
from fedanon.packed_counts import pack_fields
from fedanon.party.errors import NotExpected, ProtocolError
from fedanon.party.session_base import PendingVectorSession
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.utility.c45_counts import (
    FeatureKinds,
    LocalDomains,
    LocalOracle,
    Schema,
    _encode,
    agree_schema,
    local_domains,
)

#: The column of the union's one-column table (an encoded item, as hex text).
ITEM_COLUMN = "item"


class C45Session(PendingVectorSession):
    """One party's state for one federated C4.5 session (a ring session like LKC's)."""

    NOTHING_PENDING = "no count queries for this iteration"
    TITLE = "C4.5"

    kind = "c45"

    def __init__(
        self,
        session_id: str,
        kinds: FeatureKinds,
        class_column: str,
        table: pd.DataFrame,
        ring: list[str],
        me: str,
        sum_mode: int,
    ) -> None:
        super().__init__(session_id, ring, me, sum_mode)
        missing = [c for c in (*kinds.features, class_column) if c not in table.columns]
        if missing:
            raise FedanonError(f"the table has no column '{missing[0]}'")
        self.kinds = kinds
        self.X = table[kinds.features]
        self.y = table[class_column]
        self.domains: LocalDomains = local_domains(self.X, self.y, kinds)
        self.released_columns = [ITEM_COLUMN]
        self.schema: Schema | None = None
        self.oracle: LocalOracle | None = None

    def count(self, request: pb.C45CountRequest) -> int:
        """Count round r's queries over this party's table; keep the vector for the Sum."""
        self.check_ref(request.ref, self.next_iteration + 1)
        if self.pending is not None:
            raise NotExpected("the previous round's counts were not summed yet")
        if self.schema is None or self.oracle is None:
            if not request.domain_items:
                raise ProtocolError("the first count round carries the agreed domains")
            self.schema = self._schema(list(request.domain_items))
            self.oracle = LocalOracle(self.X, self.y, self.schema)
        elif request.domain_items:
            raise ProtocolError("the agreed domains come once, with the first count round")
        schema = self.schema
        queries = queries_from_batch(
            request.batch, len(schema.features), [bool(b) for b in schema.is_numeric]
        )
        vector = self.oracle.count(queries)
        if vector.size != sum(schema.size(q) for q in queries):
            raise ProtocolError("a query's support does not fit the agreed domain")
        try:
            packed = pack_fields(vector, request.count_bits)
        except ValueError as exc:
            raise ProtocolError(f"count_bits {request.count_bits}: {exc}") from None
        self.next_iteration = request.ref.iteration
        self.pending = packed
        return int(packed.size)

    def _schema(self, items: list[bytes]) -> Schema:
        """The agreed schema from the union's items; it must hold every value of ours."""
        schema = agree_schema(self.kinds, [], lambda _sets: items)
        ours = set(self._items())
        if not ours <= set(items):
            raise ProtocolError("the agreed domains miss values of this party's table")
        return schema

    def _items(self) -> list[bytes]:
        return [
            *(_encode(j, v) for j, values in enumerate(self.domains.values) for v in values),
            *(_encode(-1, c) for c in self.domains.classes),
        ]

    def release_table(self, suppressed: list[int] | None = None) -> pd.DataFrame:
        """What this party puts into the union (iteration 0 only): its encoded values."""
        if suppressed:
            raise ProtocolError("a C4.5 job has no suppression budget")
        if self.next_iteration != UNION_ROUND:
            raise NotExpected("the domains' union comes before the first count round")
        return pd.DataFrame({ITEM_COLUMN: [item.hex() for item in self._items()]})
