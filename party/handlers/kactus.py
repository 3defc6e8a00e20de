"""The federated kACTUS job at the party: a ring session plus one step RPC, ``KactusStep``.

The party's QID texts and C4.5 domains go through the ring's secure set union, its vectors
through the ring's secure sum and its released rows through the union of the release; the
session is party/handlers/kactus_session.py's.
"""

from __future__ import annotations

import grpc

from fedanon.federation.kactus_job import fingerprint_items, kactus_job_from_proto
from fedanon.party.handler import JobHandler, Opened, ring_opened, vector_step
from fedanon.party.handlers.kactus_session import KactusSession
from fedanon.party.policy import kactus_request
from fedanon.party.shell import PartyShell
from fedanon.protos import fedanon_v1_pb2 as pb


def open_kactus(shell: PartyShell, request: pb.OpenSessionRequest) -> Opened:
    """Check the table has the job's columns and values kACTUS accepts; join the ring."""
    session = KactusSession(
        request.ref.session_id,
        kactus_job_from_proto(request.kactus),
        shell.table,
        list(request.ring),
        shell.config.name,
        request.sum_mode,
    )
    return ring_opened(shell, session, fingerprint_items(request.kactus))


def kactus_step(
    shell: PartyShell,
    session: KactusSession,
    request: pb.KactusStepRequest,
    context: grpc.ServicerContext,
) -> pb.KactusStepReply:
    """Run one step over this party's table (its vector waits for the step's secure sum)."""
    reply = pb.KactusStepReply(length=vector_step(shell, session, request, context, session.step))
    session.bytes_sent += reply.ByteSize()
    return reply


HANDLER = JobHandler(
    "kactus", KactusSession, kactus_request, open_kactus, {"KactusStep": kactus_step}
)
