"""The LKC job at the party: its session is a ring session over the party's generalized table.

Everything after the handshake is the ring protocol (secure sums with the specialization
instructions, then the secure set union), so the handler has no RPCs of its own.
"""

from __future__ import annotations

import logging

from fedanon.errors import FedanonError
from fedanon.federation.lkc_job import lkc_job_from_proto
from fedanon.party.handler import JobHandler, Opened, ring_opened
from fedanon.party.handlers.lkc_session import LKCSession
from fedanon.party.policy import lkc_request
from fedanon.party.shell import PartyShell
from fedanon.protos import fedanon_v1_pb2 as pb

log = logging.getLogger(__name__)


def open_lkc(shell: PartyShell, request: pb.OpenSessionRequest) -> Opened:
    """Build the LKC session from the job and this party's taxonomy; join the ring."""
    if shell.taxonomy is None:
        raise FedanonError("this party has no taxonomy configured (LKC jobs need one)")
    spec = lkc_job_from_proto(request.lkc)
    schema = spec.schema(shell.taxonomy)
    session = LKCSession(
        request.ref.session_id,
        spec,
        schema,
        shell.source,
        list(request.ring),
        shell.config.name,
        request.sum_mode,
        shell.counting,
    )
    opened = ring_opened(shell, session, spec.fingerprint_items(schema))
    opened.reply.allow_exclusion = shell.config.policy.allow_exclusion
    log.info(
        "session opened (ring position %d of %d)",
        session.position + 1,
        len(session.ring),
        extra={"session": session.session_id[:12], "iteration": 0},
    )
    return opened


HANDLER = JobHandler("lkc", LKCSession, lkc_request, open_lkc)
