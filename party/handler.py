"""What a job kind's party handler is, and what of the servicer shell it may use.

The servicer (party/servicer.py) is a shell: it authorizes the caller, finds the open session,
keeps the lease and the byte counts, and answers ``OpenSession``. What differs between job
kinds lives in one handler each (party/handlers/), registered in the table of
party/handlers/__init__.py under the name of its ``OpenSessionRequest`` job field:

* ``admission`` reads the request for the party's policy (what the job releases, and which
  columns raw; party/policy.py), before any session state is touched;
* ``open`` builds the kind's session from the request (or raises ``FedanonError`` /
  ``CryptoError``, which the shell turns into a refusal) and says what the reply carries;
* ``steps`` serves the kind's own RPCs (DRBT's ``Ids``, ``Project``, ``Assign``; randomization's
  ``Randomize``). The shell has authorized the leader and checked the session id first; a
  message for a kind that has no such step is refused naming the kinds that do.

The ring protocol's RPCs (``ShareKeys``, ``Sum``, ``Union``) are not job-specific: every ring
session serves them (party/ring.py, party/sums.py, party/union.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc

from fedanon.crypto.errors import CryptoError
from fedanon.errors import FedanonError
from fedanon.party.policy import JobRequest, RequestReader
from fedanon.party.ring import join_ring
from fedanon.party.session_base import RingSession, SessionBase
from fedanon.party.shell import PartyShell
from fedanon.protos import fedanon_v1_pb2 as pb

#: One job-specific RPC: (shell, the open session of the handler's kind, request, context).
Step = Callable[[PartyShell, Any, Any, grpc.ServicerContext], Any]


@dataclass(frozen=True)
class Opened:
    """A session a handler opened, and what its handshake reply carries besides the common
    fields (the shell adds the party's name, the fingerprint of `fingerprint_items` and the
    lease)."""

    session: SessionBase
    fingerprint_items: list[str]
    reply: pb.OpenSessionReply


@dataclass(frozen=True)
class JobHandler:
    """One job kind at the party: how to open its session and serve its own RPCs."""

    kind: str  # the OpenSessionRequest job field
    session_type: type[SessionBase]
    admission: Callable[[pb.OpenSessionRequest, Sequence[str]], JobRequest]
    open: Callable[[PartyShell, pb.OpenSessionRequest], Opened]
    steps: Mapping[str, Step] = field(default_factory=dict)

    @property
    def traits(self) -> KindTraits:
        """What its session serves besides the handshake."""
        return KindTraits(issubclass(self.session_type, RingSession), frozenset(self.steps))


@dataclass(frozen=True)
class KindTraits:
    """Which messages a kind's session serves besides the handshake's: the ring protocol's
    (`ring`: its session is a ``RingSession``) and the kind's own RPCs (`steps`). The registry
    declares them for a kind it has not imported (party/handlers/__init__.py), so that a
    message of the wrong kind is refused naming the kinds that serve it without importing any
    kind's module."""

    ring: bool
    steps: frozenset[str] = frozenset()


class Admissions(Mapping[str, RequestReader]):
    """The handlers' ``admission`` by kind, each looked up only when a request names its kind
    (the registry imports a kind's module at its first lookup: party/handlers/__init__.py)."""

    def __init__(self, handlers: Mapping[str, JobHandler]) -> None:
        self.handlers = handlers

    def __getitem__(self, kind: str) -> RequestReader:
        return self.handlers[kind].admission

    def __iter__(self) -> Iterator[str]:
        return iter(self.handlers)

    def __len__(self) -> int:
        return len(self.handlers)


@contextlib.contextmanager
def closed_on_failure(session: SessionBase) -> Iterator[SessionBase]:
    """Close `session` if what follows its construction in a handshake raises (whatever it
    raises): a job refused after its session was built (a ring naming another next hop, a key
    that cannot be drawn) must not leave its counting state, Dask shards or union workers
    behind, since the servicer never holds a session that did not open."""
    try:
        yield session
    except BaseException:
        session.close()
        raise


def ring_opened(shell: PartyShell, session: RingSession, fingerprint_items: list[str]) -> Opened:
    """A ring kind's opened session: the ring joined (its key shares in the reply) and the
    columns it releases; every ring kind's handshake ends this way (a join that fails closes
    the session it was given)."""
    with closed_on_failure(session):
        keys = join_ring(shell, session)
        reply = pb.OpenSessionReply(columns=session.released_columns, keys=keys)
    return Opened(session, fingerprint_items, reply)


def vector_step(
    shell: PartyShell,
    session: SessionBase,
    request: Any,
    context: grpc.ServicerContext,
    run: Callable[[Any], int],
) -> int:
    """Run one step whose vector waits for the round's secure sum; its length, the only
    thing the reply carries. Bytes are counted; a bad request is refused as one line."""
    session.bytes_received += request.ByteSize()
    try:
        return run(request)
    except (FedanonError, CryptoError, ValueError, IndexError) as exc:
        shell.reject(context, exc)
