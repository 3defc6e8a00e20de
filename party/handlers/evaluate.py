"""The federated utility protocol (BE/CE/UE) at the party: a ring session plus one step of its
own, ``EvaluateClassify``, and the C4.5 counting step ``C45Count`` for the raw trees.

The party's generalized training rows and raw C4.5 domains go through the ring's secure set
union, its count vectors and (errors, rows) pairs through the ring's secure sum; the session is
party/handlers/evaluate_session.py's.
"""

from __future__ import annotations

import grpc

from fedanon.federation.evaluate_job import fingerprint_items, task_from_proto
from fedanon.party.handler import JobHandler, Opened, ring_opened, vector_step
from fedanon.party.handlers.evaluate_session import EvaluateSession
from fedanon.party.policy import evaluate_request
from fedanon.party.shell import PartyShell
from fedanon.protos import fedanon_v1_pb2 as pb


def open_evaluate(shell: PartyShell, request: pb.OpenSessionRequest) -> Opened:
    """Split and generalize this party's table by the job; join the ring."""
    session = EvaluateSession(
        request.ref.session_id,
        task_from_proto(request.evaluate),
        shell.table,
        shell.taxonomy,
        list(request.ring),
        shell.config.name,
        request.sum_mode,
    )
    return ring_opened(shell, session, fingerprint_items(request.evaluate))


def evaluate_classify(
    shell: PartyShell,
    session: EvaluateSession,
    request: pb.EvaluateClassifyRequest,
    context: grpc.ServicerContext,
) -> pb.EvaluateClassifyReply:
    """Test one tree on this party's test rows, for the figure's secure sum."""
    length = vector_step(shell, session, request, context, session.classify)
    reply = pb.EvaluateClassifyReply(length=length)
    session.bytes_sent += reply.ByteSize()
    return reply


def evaluate_count(
    shell: PartyShell,
    session: EvaluateSession,
    request: pb.C45CountRequest,
    context: grpc.ServicerContext,
) -> pb.C45CountReply:
    """Count one round of BE's or UE's tree over this party's raw training rows."""
    reply = pb.C45CountReply(length=vector_step(shell, session, request, context, session.count))
    session.bytes_sent += reply.ByteSize()
    return reply


HANDLER = JobHandler(
    "evaluate",
    EvaluateSession,
    evaluate_request,
    open_evaluate,
    {"EvaluateClassify": evaluate_classify, "C45Count": evaluate_count},
)
