"""The randomization job at the party: a ring session plus one step of its own, ``Randomize``.

The histograms go through the ring's secure sum and the randomized rows through its secure set
union (unless the job keeps them at the parties); the session is
party/handlers/randomize_session.py's.
"""

from __future__ import annotations

import grpc

from fedanon.crypto.errors import CryptoError
from fedanon.errors import FedanonError
from fedanon.federation.randomize_job import spec_from_proto
from fedanon.party.handler import JobHandler, Opened, ring_opened
from fedanon.party.handlers.randomize_session import RandomizeSession
from fedanon.party.policy import randomize_request
from fedanon.party.shell import PartyShell
from fedanon.protos import fedanon_v1_pb2 as pb


def open_randomize(shell: PartyShell, request: pb.OpenSessionRequest) -> Opened:
    """Code the table over the job's agreed domains (refusing values outside them); join."""
    spec = spec_from_proto(request.randomize)
    session = RandomizeSession(
        request.ref.session_id,
        spec,
        shell.table,
        list(request.ring),
        shell.config.name,
        request.sum_mode,
    )
    return ring_opened(shell, session, spec.fingerprint_items())


def randomize(
    shell: PartyShell,
    session: RandomizeSession,
    request: pb.RandomizeRequest,
    context: grpc.ServicerContext,
) -> pb.RandomizeReply:
    """Randomize this party's rows with the global marginals; keep them if the job says so."""
    session.bytes_received += request.ByteSize()
    try:
        session.randomize(request)
        if session.spec.keep_at_parties:
            directory = shell.config.output_dir or shell.config.data.parent
            session.save(directory)
    except (FedanonError, CryptoError, ValueError) as exc:
        shell.reject(context, exc)
    reply = pb.RandomizeReply()
    session.bytes_sent += reply.ByteSize()
    return reply


HANDLER = JobHandler(
    "randomize", RandomizeSession, randomize_request, open_randomize, {"Randomize": randomize}
)
