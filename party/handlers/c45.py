"""The federated C4.5 job at the party: a ring session plus one step of its own, ``C45Count``.

The party's distinct values go through the ring's secure set union (the agreed domains) and
its count vectors through the ring's secure sum; the session is party/handlers/c45_session.py's.
"""

from __future__ import annotations

import grpc

from fedanon.federation.c45_job import c45_job_from_proto, fingerprint_items
from fedanon.party.handler import JobHandler, Opened, ring_opened, vector_step
from fedanon.party.handlers.c45_session import C45Session
from fedanon.party.policy import c45_request
from fedanon.party.shell import PartyShell
from fedanon.protos import fedanon_v1_pb2 as pb


def open_c45(shell: PartyShell, request: pb.OpenSessionRequest) -> Opened:
    """Check the table has the task's columns and values C4.5 accepts; join the ring."""
    kinds, class_column = c45_job_from_proto(request.c45)
    session = C45Session(
        request.ref.session_id,
        kinds,
        class_column,
        shell.table,
        list(request.ring),
        shell.config.name,
        request.sum_mode,
    )
    return ring_opened(shell, session, fingerprint_items(request.c45))


def c45_count(
    shell: PartyShell,
    session: C45Session,
    request: pb.C45CountRequest,
    context: grpc.ServicerContext,
) -> pb.C45CountReply:
    """Count one round's queries over this party's table, for the round's secure sum."""
    reply = pb.C45CountReply(length=vector_step(shell, session, request, context, session.count))
    session.bytes_sent += reply.ByteSize()
    return reply


HANDLER = JobHandler("c45", C45Session, c45_request, open_c45, {"C45Count": c45_count})
