"""The party's side of a federated kACTUS job: its session and the order of its iterations.

Order inside one session (each step checks the session id and the iteration number):

* OpenSession (iteration -): the job names the QIDs, the class, k, the marker and kACTUS's
  options; the party checks its table has them (fedanon.algorithms.tabular's checks).
* Union (iteration 0, the ring's secure set union): this party's present QID texts, each an
  encoded (QID, text) item; the leader learns their union, not who holds a value.
* KactusStep (iteration r >= 1, one per step): the step runs over this party's own table
  (fedanon/algorithms/kactus/federated_party.py); a summed step's vector waits for the Sum.
* Sum (iteration r, the ring or pairwise secure sum): that vector is this party's
  contribution; it never leaves the party in the clear.
* Union at the iteration of the encode step (the C4.5 domains of its complete records) and at
  the iteration of the values step (its released rows: the integrated release).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from fedanon.algorithms.kactus.federated_party import ENCODE, SUMMED, VALUES, KactusParty
from fedanon.federation.kactus_job import QID_UNION_ROUND, KactusOptions, step_from_proto
from fedanon.party.errors import NotExpected, ProtocolError
from fedanon.party.session_base import PendingVectorSession
from fedanon.protos import fedanon_v1_pb2 as pb

#: The column of the item unions' one-column tables (an encoded item, as hex text).
ITEM_COLUMN = "item"


class KactusSession(PendingVectorSession):
    """One party's state for one federated kACTUS session (a ring session like LKC's)."""

    NOTHING_PENDING = "no summed step at this iteration"
    TITLE = "kACTUS"

    kind = "kactus"

    def __init__(
        self,
        session_id: str,
        options: KactusOptions,
        table: pd.DataFrame,
        ring: list[str],
        me: str,
        sum_mode: int,
    ) -> None:
        super().__init__(session_id, ring, me, sum_mode)
        # Tags are drawn from this daemon's own entropy: the leader never knows them.
        self.party = KactusParty(
            table,
            class_column=options.class_column,
            qids=options.qids,
            marker=options.marker,
            rng=np.random.default_rng(),
        )
        self.released_columns = [str(c) for c in table.columns]
        self.last: str | None = None  # the last step run

    def step(self, request: pb.KactusStepRequest) -> int:
        """Run the next step over this party's table; keep a summed step's vector."""
        self.check_ref(request.ref, self.next_iteration + 1)
        if self.pending is not None:
            raise NotExpected("the previous step's vector was not summed yet")
        if self.last == VALUES:
            raise NotExpected("the release is written: only its union remains")
        if (self.last is None) != (request.step == ENCODE):
            raise NotExpected("the encode step comes first, once")
        numeric = [c.numeric for c in self.party.columns]
        vector = self.party.answer(step_from_proto(request, numeric))
        self.next_iteration = request.ref.iteration
        self.last = request.step
        if request.step not in SUMMED or vector is None:
            return 0
        self.pending = vector.astype(np.uint64)
        return int(vector.size)

    def release_table(self, suppressed: list[int] | None = None) -> pd.DataFrame:
        """What this party puts into the union at this iteration: its QID texts (iteration
        0), its C4.5 domains (after the encode step) or its released rows (after values)."""
        if suppressed:
            raise ProtocolError("a kACTUS job has no suppression budget")
        if self.last is None and self.next_iteration == QID_UNION_ROUND:
            items = self.party.qid_items()
        elif self.last == ENCODE:
            items = self.party.domain_items()
        elif self.last == VALUES and self.party.release is not None:
            return self.party.release
        else:
            raise NotExpected("no union at this step")
        return pd.DataFrame({ITEM_COLUMN: [item.hex() for item in items]})
