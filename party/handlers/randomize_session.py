"""The party's side of a federated randomization job: its session and the job on the wire.

Order inside one session (each step checks the session id and the iteration number):

* OpenSession (iteration -): the job names the QIDs and their agreed domains; the party codes
  its table over them and refuses, naming the column, if a value lies outside its domain.
* Sum (iteration 0, the session's ring or pairwise secure sum): the party contributes its
  per-QID histograms, concatenated; it never sends a count in the clear.
* Randomize (iteration 1): the global marginals and attribute probabilities. The party derives
  the plan itself from the job and the marginals, refuses probabilities that differ, and
  randomizes its own rows with a generator keyed from ``secrets``.
* Union (iteration 2, the ring's secure set union) of the randomized rows, or nothing when
  the job keeps the records at the parties: then the randomized table is written to the
  party's output directory and the Union is refused.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from fedanon.algorithms.randomization.jobspec import RandomizeSpec, check_probabilities
from fedanon.algorithms.randomization.leader_half import split_histograms
from fedanon.algorithms.randomization.party_half import LocalRecords
from fedanon.algorithms.randomization.sampler import make_rng
from fedanon.atomic import atomic_path
from fedanon.errors import FedanonError
from fedanon.federation.randomize_job import RANDOMIZE_ROUND, SUM_ROUND
from fedanon.federation.wire import from_vector
from fedanon.party.errors import NotExpected, ProtocolError
from fedanon.party.session_base import RingSession, carries_nothing
from fedanon.protos import fedanon_v1_pb2 as pb


class RandomizeSession(RingSession):
    """One party's state for one randomization session (a ring session like LKC's)."""

    kind = "randomize"

    def __init__(
        self,
        session_id: str,
        spec: RandomizeSpec,
        table: pd.DataFrame,
        ring: list[str],
        me: str,
        sum_mode: int,
    ) -> None:
        super().__init__(session_id, ring, me, sum_mode)
        self.spec = spec
        self.local = LocalRecords(table, spec.qids, spec.domains)
        self.released_columns = [str(c) for c in table.columns]
        self.randomized: pd.DataFrame | None = None

    def sum_request_limit(self) -> int:
        """The largest ``Sum`` (or ``Randomize``) request this job can need: one 8-byte count
        per value of every agreed domain (the histograms, or the global marginals), plus
        64 KiB for the rest of the message (bitmap, ids, probabilities)."""
        return 8 * sum(len(domain) for domain in self.spec.domains) + (1 << 16)

    def request_limit(self, method: str) -> int | None:
        return self.sum_request_limit() if method in ("Sum", "Randomize") else None

    def contribution(self, request: pb.SumRequest) -> np.ndarray:
        """The secure sum's input: this party's histograms (iteration 0 only, no instruction)."""
        self.check_ref(request.ref, SUM_ROUND)
        if self.next_iteration != SUM_ROUND:
            raise NotExpected("the histograms were already summed in this session")
        carries_nothing(request, "randomization")
        self.next_iteration += 1
        return self.local.histogram_vector()

    def randomize(self, request: pb.RandomizeRequest) -> pd.DataFrame:
        """Check the leader's plan against our own derivation, then randomize our rows."""
        self.check_ref(request.ref, RANDOMIZE_ROUND)
        if self.next_iteration != RANDOMIZE_ROUND:
            raise NotExpected("randomize comes once, after the histogram sum")
        total = from_vector(request.marginals, int(sum(self.local.sizes)))
        marginals = split_histograms(total, self.local.sizes)
        mine = self.local.histograms()
        for column, glob, own in zip(self.spec.qids, marginals, mine, strict=True):
            if np.any(glob < own):
                raise FedanonError(
                    f"column '{column}': the global marginal is smaller than "
                    "this party's own counts"
                )
        plan = self.spec.plan(marginals)
        check_probabilities(plan, request.p)
        self.randomized, _ = self.local.randomize(plan, make_rng(None))
        self.next_iteration += 1
        return self.randomized

    def release_table(self, suppressed: list[int] | None = None) -> pd.DataFrame:
        """What this party contributes to the union: its randomized rows, and only those."""
        if suppressed:
            raise ProtocolError("a randomization job has no suppression budget")
        if self.spec.keep_at_parties:
            raise NotExpected("this job keeps the randomized records at the parties; no union")
        if self.randomized is None:
            raise NotExpected("the records are not randomized yet; no union before Randomize")
        return self.randomized

    def save(self, directory: Path) -> Path:
        """Write the randomized table to the party's output directory (kept-at-parties jobs)."""
        assert self.randomized is not None
        path = directory / f"randomized-{self.session_id[:12]}.csv"
        with atomic_path(path) as tmp:
            self.randomized.to_csv(tmp, index=False)
        return path
