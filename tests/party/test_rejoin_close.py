"""A refused rejoin closes the session it reopened (party/rejoin.py ``_restore``; session 12
h-review's note): the sealed job is opened again before its keys are checked and its log is
replayed, so every refusal after that (a kind that cannot rejoin, key shares refused, a log
that does not replay) must end it, or its counting state and union workers outlive the call.
In-process with the fake shell of tests/party/test_handlers.py; the refusals are one line."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from fedanon.crypto.keyshare import ONION_UNION
from fedanon.federation.keyshares import new_share
from fedanon.party import rejoin
from fedanon.party.handler import JobHandler, Opened
from fedanon.party.handlers import HANDLERS
from fedanon.party.session_store import SealedSession
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.taxonomy.files import TaxonomyFile
from tests.party.test_handlers import (
    LEADER,
    SESSION,
    FakeShell,
    Refused,
    _lkc_job,
    _randomize_job,
    _request,
    hospital,
)

__all__ = ["hospital"]  # the module fixture, shared


class RestartedShell(FakeShell):
    """A restarted daemon as ``_restore`` sees it; its handlers note every session they open."""

    def __init__(self, table: pd.DataFrame, tmp_path: Path, taxonomy: TaxonomyFile) -> None:
        last = FakeShell("b", table, tmp_path, taxonomy)
        super().__init__("a", table, tmp_path, taxonomy, next_hop=last)
        self.store = SimpleNamespace(inputs=b"")
        self.secure = False
        self.opened: list[Any] = []
        self.handlers = {kind: self._noting(h) for kind, h in HANDLERS.items()}

    def _noting(self, handler: JobHandler) -> JobHandler:
        def open_(shell: Any, request: pb.OpenSessionRequest) -> Opened:
            opened = handler.open(shell, request)
            self.opened.append(opened.session)
            return opened

        return dataclasses.replace(handler, open=open_)


def _state(open_request: pb.OpenSessionRequest, keys: pb.ShareKeysRequest) -> SealedSession:
    return SealedSession(
        SESSION, open_request, keys, X25519PrivateKey.generate(), X25519PrivateKey.generate()
    )


def _rejoin(iteration: int, instructions: int = 0) -> pb.RejoinRequest:
    request = pb.RejoinRequest(ref=pb.SessionRef(session_id=SESSION, iteration=iteration))
    request.instructions.extend(pb.Instruction(attr=0, node=0) for _ in range(instructions))
    return request


@pytest.mark.parametrize("refusal", ["no rejoin for the kind", "key shares", "replay"])
def test_a_refused_rejoin_closes_the_session_it_reopened(
    tmp_path: Path, hospital: tuple[pd.DataFrame, TaxonomyFile], refusal: str
) -> None:
    table, taxonomy = hospital
    shell = RestartedShell(table, tmp_path, taxonomy)
    lkc = _request(["a", "b"], pb.SUM_MODE_RING, lkc=_lkc_job(taxonomy))
    if refusal == "no rejoin for the kind":  # randomize opens a session that cannot replay
        shell = RestartedShell(pd.DataFrame({"sex": ["F", "M"]}), tmp_path, taxonomy)
        state = _state(_request(["a"], randomize=_randomize_job()), pb.ShareKeysRequest())
        request, why = _rejoin(1), "a randomize session cannot rejoin"
    elif refusal == "key shares":  # the sealed shares hold no union key of b: no route
        state, request, why = _state(lkc, pb.ShareKeysRequest()), _rejoin(1), "key shares refused"
    else:  # the leader resumes at iteration 2 after an empty log
        assert shell.next_shell is not None
        keys = pb.ShareKeysRequest(keys=_shares(shell.next_shell, lkc))
        state, request, why = _state(lkc, keys), _rejoin(2), "but the leader resumes"
    with pytest.raises(Refused, match=why) as refused:
        rejoin._restore(shell, state, request, None)  # type: ignore[arg-type]
    assert "\n" not in str(refused.value)
    assert len(shell.opened) == 1 and shell.opened[0].ended


def _shares(shell: FakeShell, request: pb.OpenSessionRequest) -> list[pb.KeyShare]:
    """The session's key shares as the leader relays them: its own and both parties' (each
    opens the session to draw its keys, as at the handshake)."""
    table, taxonomy, where = shell.table, shell.taxonomy, shell.config.output_dir
    assert where is not None
    shares = [new_share(None, LEADER, "leader", bytes.fromhex(SESSION), ONION_UNION)[1]]
    for party in (FakeShell("a", table, where, taxonomy, shell), shell):
        opened = HANDLERS["lkc"].open(party, request)
        shares.extend(opened.reply.keys)
        opened.session.close()
    return shares
