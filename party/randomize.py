"""The party's side of a federated randomization job: its session and its two handlers.

Order inside one session (each step checks the session id and the iteration number):

* OpenSession (iteration -): the job names the QIDs and their agreed domains; the party codes
  its table over them and refuses, naming the column, if a value lies outside its domain.
* Sum (iteration 0, the servicer's ring or pairwise secure sum): the party contributes its
  per-QID histograms, concatenated; it never sends a count in the clear.
* Randomize (iteration 1): the global marginals and attribute probabilities. The party derives
  the plan itself from the job and the marginals, refuses probabilities that differ, and
  randomizes its own rows with a generator keyed from ``secrets``.
* Union (iteration 2, the servicer's secure set union) of the randomized rows, or nothing when
  the job keeps the records at the parties: then the randomized table is written to the
  party's output directory and the Union is refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import grpc
import numpy as np
import pandas as pd
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from fedanon.algorithms.randomization.jobspec import RandomizeSpec, check_probabilities
from fedanon.algorithms.randomization.leader_half import split_histograms
from fedanon.algorithms.randomization.party_half import LocalRecords
from fedanon.algorithms.randomization.sampler import make_rng
from fedanon.atomic import atomic_path
from fedanon.crypto.errors import CryptoError
from fedanon.crypto.keyshare import ONION_UNION, PAIRWISE_SUM
from fedanon.crypto.pairwise import PairwiseMasker
from fedanon.crypto.sealed_total import SealedTotalChannel
from fedanon.errors import FedanonError
from fedanon.federation.keyshares import new_share
from fedanon.federation.wire import from_vector
from fedanon.fingerprint import fingerprint
from fedanon.party.replay import AnswerOnce
from fedanon.party.session import ProtocolError, SessionBase
from fedanon.party.union import UnionRole
from fedanon.protos import fedanon_v1_pb2 as pb

if TYPE_CHECKING:
    from fedanon.party.servicer import PartyServicer

# Iterations of a randomization session: the histogram sum, the randomization, the union.
SUM_ROUND, RANDOMIZE_ROUND, UNION_ROUND = 0, 1, 2


def spec_to_proto(spec: RandomizeSpec) -> pb.RandomizeJob:
    p_values = [] if isinstance(spec.p, str) else list(spec.p)
    return pb.RandomizeJob(
        qids=[
            pb.QIDDomain(column=c, values=list(d))
            for c, d in zip(spec.qids, spec.domains, strict=True)
        ],
        method=spec.method,
        attrs=spec.attrs or 0,
        p=spec.p_name,
        p_values=p_values,
        keep_at_parties=spec.keep_at_parties,
    )


def spec_from_proto(job: pb.RandomizeJob) -> RandomizeSpec:
    p: str | tuple[float, ...] = tuple(job.p_values) if job.p == "custom" else job.p
    spec = RandomizeSpec(
        tuple(q.column for q in job.qids),
        tuple(tuple(q.values) for q in job.qids),
        job.method,
        job.attrs or None,
        p,
        job.keep_at_parties,
    )
    spec.check()
    return spec


class RandomizeSession(SessionBase):
    """One party's state for one randomization session (a ring session like LKC's)."""

    def __init__(
        self,
        session_id: str,
        spec: RandomizeSpec,
        table: pd.DataFrame,
        ring: list[str],
        me: str,
        sum_mode: int,
    ) -> None:
        if me not in ring:
            raise FedanonError(f"this party ('{me}') is not in the session's ring {ring}")
        super().__init__(session_id)
        self.spec = spec
        self.local = LocalRecords(table, spec.qids, spec.domains)
        self.released_columns = [str(c) for c in table.columns]
        self.ring = ring
        self.position = ring.index(me)
        self.sum_mode = sum_mode
        self.union: UnionRole
        self.pairwise_key: X25519PrivateKey | None = None
        self.masker: PairwiseMasker | None = None
        self.answers = AnswerOnce(me)  # retried Sum and Union hops get the first answer
        self.sealed_totals: SealedTotalChannel | None = None  # the last party's, ring mode
        self.randomized: pd.DataFrame | None = None

    @property
    def successor(self) -> str | None:
        return self.ring[self.position + 1] if self.position + 1 < len(self.ring) else None

    @property
    def predecessor(self) -> str | None:
        return self.ring[self.position - 1] if self.position > 0 else None

    def sum_request_limit(self) -> int:
        """The largest ``Sum`` (or ``Randomize``) request this job can need: one 8-byte count
        per value of every agreed domain (the histograms, or the global marginals), plus
        64 KiB for the rest of the message (bitmap, ids, probabilities)."""
        return 8 * sum(len(domain) for domain in self.spec.domains) + (1 << 16)

    def contribution(self, request: pb.SumRequest) -> np.ndarray:
        """The secure sum's input: this party's histograms (iteration 0 only, no instruction)."""
        self.check_ref(request.ref, SUM_ROUND)
        if self.next_iteration != SUM_ROUND:
            raise ProtocolError("the histograms were already summed in this session")
        if request.HasField("instruction"):
            raise ProtocolError("a randomization sum carries no instruction")
        self.next_iteration += 1
        return self.local.histogram_vector()

    def randomize(self, request: pb.RandomizeRequest) -> pd.DataFrame:
        """Check the leader's plan against our own derivation, then randomize our rows."""
        self.check_ref(request.ref, RANDOMIZE_ROUND)
        if self.next_iteration != RANDOMIZE_ROUND:
            raise ProtocolError("randomize comes once, after the histogram sum")
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
            raise ProtocolError("this job keeps the randomized records at the parties; no union")
        if self.randomized is None:
            raise ProtocolError("the records are not randomized yet; no union before Randomize")
        return self.randomized

    def save(self, directory: Path) -> Path:
        """Write the randomized table to the party's output directory (kept-at-parties jobs)."""
        assert self.randomized is not None
        path = directory / f"randomized-{self.session_id[:12]}.csv"
        with atomic_path(path) as tmp:
            self.randomized.to_csv(tmp, index=False)
        return path


def open_session(
    servicer: PartyServicer, request: pb.OpenSessionRequest, context: grpc.ServicerContext
) -> pb.OpenSessionReply:
    """Open a randomization session (the servicer holds its lock and has authorized the leader)."""
    config = servicer.config
    try:
        spec = spec_from_proto(request.randomize)
        ring = list(request.ring)
        session = RandomizeSession(
            request.ref.session_id, spec, servicer.table, ring, config.name, request.sum_mode
        )
        configured = config.next_hop.name if config.next_hop else None
        if session.successor is not None and session.successor != configured:
            raise FedanonError(
                f"ring says the next hop is '{session.successor}' but this party "
                f"is configured to forward to '{configured}'"
            )
    except (FedanonError, CryptoError) as exc:
        servicer._fail(context, grpc.StatusCode.FAILED_PRECONDITION, str(exc))
    sid = bytes.fromhex(session.session_id)
    private, share = new_share(servicer.identity, config.name, "party", sid, ONION_UNION)
    session.union = UnionRole(private, session.position, config.union_parallelism)
    shares = [share]
    if session.sum_mode == pb.SUM_MODE_PAIRWISE:
        session.pairwise_key, pairwise = new_share(
            servicer.identity, config.name, "party", sid, PAIRWISE_SUM
        )
        shares.append(pairwise)
    servicer.session = session
    servicer.sessions_served += 1
    items = spec.fingerprint_items()
    reply = pb.OpenSessionReply(
        party=config.name,
        fingerprint=fingerprint(items),
        fingerprint_items=items,
        columns=session.released_columns,
        keys=shares,
    )
    session.bytes_received += request.ByteSize()
    session.bytes_sent += reply.ByteSize()
    return reply


def randomize(
    servicer: PartyServicer,
    session: RandomizeSession,
    request: pb.RandomizeRequest,
    context: grpc.ServicerContext,
) -> pb.RandomizeReply:
    """Randomize this party's rows with the global marginals; keep them if the job says so."""
    session.bytes_received += request.ByteSize()
    try:
        session.randomize(request)
        if session.spec.keep_at_parties:
            directory = servicer.config.output_dir or servicer.config.data.parent
            session.save(directory)
    except (FedanonError, CryptoError, ValueError) as exc:
        code = (
            grpc.StatusCode.FAILED_PRECONDITION
            if isinstance(exc, ProtocolError)
            else grpc.StatusCode.INVALID_ARGUMENT
        )
        servicer._fail(context, code, str(exc))
    reply = pb.RandomizeReply()
    session.bytes_sent += reply.ByteSize()
    return reply
