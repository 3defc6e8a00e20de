"""The DRBT job at the party (vertical partitioning): ids, one projection, the assignment.

The leader agrees the common id list (``Ids``), collects every party's projected block once
(``Project``) and may send back the cluster of every object (``Assign``), which the party writes
to its output directory. The session is party/handlers/drbt_session.py's.
"""

from __future__ import annotations

import logging

import grpc
import numpy as np

from fedanon.crypto.errors import CryptoError
from fedanon.errors import FedanonError
from fedanon.federation.drbt_job import fingerprint_items
from fedanon.party.handler import JobHandler, Opened
from fedanon.party.handlers.drbt_session import DRBTSession
from fedanon.party.policy import drbt_request
from fedanon.party.shell import PartyShell
from fedanon.protos import fedanon_v1_pb2 as pb

log = logging.getLogger(__name__)


def open_drbt(shell: PartyShell, request: pb.OpenSessionRequest) -> Opened:
    """Build the DRBT session: the id column and the numeric block."""
    session = DRBTSession(request.ref.session_id, request.drbt, shell.table)
    log.info(
        "DRBT session opened (%d attributes)",
        len(session.attributes),
        extra={"session": session.session_id[:12]},
    )
    return Opened(
        session,
        fingerprint_items(request.drbt),
        pb.OpenSessionReply(attributes=session.attributes),
    )


def ids(
    shell: PartyShell, session: DRBTSession, request: pb.IdsRequest, context: grpc.ServicerContext
) -> pb.IdsReply:
    """Send this party's ids, or align with the leader's list and say how many it lacks."""
    session.bytes_received += request.ByteSize()
    if request.send_yours:
        reply = pb.IdsReply(ids=list(session.ids))
    else:
        try:
            reply = pb.IdsReply(missing=session.common_ids(list(request.ids)))
        except (FedanonError, CryptoError) as exc:
            shell.reject(context, exc, grpc.StatusCode.INVALID_ARGUMENT)
    session.bytes_sent += reply.ByteSize()
    return reply


def project(
    shell: PartyShell,
    session: DRBTSession,
    request: pb.ProjectRequest,
    context: grpc.ServicerContext,
) -> pb.ProjectReply:
    """The block of the common objects, z-scored and projected with a fresh secret matrix."""
    try:
        block = session.project()
    except (FedanonError, CryptoError) as exc:
        shell.reject(context, exc, grpc.StatusCode.FAILED_PRECONDITION)
    data = np.ascontiguousarray(block, dtype="<f8")
    reply = pb.ProjectReply(
        block=pb.Matrix(data=data.tobytes(), rows=data.shape[0], cols=data.shape[1], dtype="<f8")
    )
    session.bytes_sent += reply.ByteSize()
    return reply


def assign(
    shell: PartyShell,
    session: DRBTSession,
    request: pb.AssignRequest,
    context: grpc.ServicerContext,
) -> pb.AssignReply:
    """Write the leader's cluster of every common object to the party's output directory."""
    directory = shell.config.output_dir or shell.config.data.parent
    try:
        session.bytes_received += request.ByteSize()
        path = session.save_assignment(list(request.clusters), directory)
    except (FedanonError, CryptoError) as exc:
        shell.reject(context, exc, grpc.StatusCode.INVALID_ARGUMENT)
    log.info("cluster assignment written to %s", path, extra={"session": session.session_id[:12]})
    return pb.AssignReply()


HANDLER = JobHandler(
    "drbt",
    DRBTSession,
    drbt_request,
    open_drbt,
    {"Ids": ids, "Project": project, "Assign": assign},
)
