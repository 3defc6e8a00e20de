"""The sealed session file of rejoin by replay (#28, party/session_store.py): only the party
that wrote it can read it, a changed byte is detected, and it outlives only its lease."""

from __future__ import annotations

import time
from pathlib import Path

import grpc
import pandas as pd
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from fedanon.crypto.identity import create_ca, issue_identity
from fedanon.party.servicer import PartyServicer
from fedanon.party.session_store import FILE_NAME, SealedSession, SessionStore
from fedanon.protos import fedanon_v1_pb2 as pb
from tests.party.fakes import Aborted, Context, party_config

SESSION = "ab" * 16


def raw(key: X25519PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )


def sealed_state() -> SealedSession:
    request = pb.OpenSessionRequest(ref=pb.SessionRef(session_id=SESSION), ring=["a", "b", "c"])
    keys = pb.ShareKeysRequest(ref=pb.SessionRef(session_id=SESSION), prepare_union=True)
    return SealedSession(
        SESSION, request, keys, X25519PrivateKey.generate(), X25519PrivateKey.generate()
    )


@pytest.fixture(scope="module")
def identities() -> tuple:
    ca = create_ca()
    return issue_identity(ca, "hospital-a", "party"), issue_identity(ca, "hospital-b", "party")


def test_a_restarted_daemon_reads_back_its_keys(identities: tuple, tmp_path: Path) -> None:
    me, _ = identities
    state = sealed_state()
    SessionStore(tmp_path, me, 30).save(state)
    data = (tmp_path / FILE_NAME).read_bytes()
    assert raw(state.union_key) not in data and SESSION.encode() not in data  # encrypted
    assert (tmp_path / FILE_NAME).stat().st_mode & 0o077 == 0
    again = SessionStore(tmp_path, me, 30).waiting(SESSION)
    assert again is not None
    assert raw(again.union_key) == raw(state.union_key)
    assert again.sum_key is not None and state.sum_key is not None
    assert raw(again.sum_key) == raw(state.sum_key)
    assert again.open_request == state.open_request and again.share_keys == state.share_keys


@pytest.mark.parametrize("tamper", ["other party", "flipped byte", "truncated"])
def test_a_file_this_party_did_not_seal_is_refused_and_deleted(
    identities: tuple, tmp_path: Path, tamper: str
) -> None:
    me, other = identities
    SessionStore(tmp_path, me, 30).save(sealed_state())
    path = tmp_path / FILE_NAME
    reader = me
    if tamper == "other party":
        reader = other
    elif tamper == "flipped byte":
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 1
        path.write_bytes(bytes(data))
    else:
        path.write_bytes(path.read_bytes()[:20])
    store = SessionStore(tmp_path, reader, 30)
    assert store.pending is None and store.waiting(SESSION) is None
    assert not path.exists()


def test_a_sealed_session_lapses_with_the_lease(identities: tuple, tmp_path: Path) -> None:
    me, _ = identities
    SessionStore(tmp_path, me, 30).save(sealed_state())
    store = SessionStore(tmp_path, me, 30)
    assert store.waiting("cd" * 16) is None  # another session's message
    store.started = time.monotonic() - 31
    assert store.waiting(SESSION) is None
    assert not (tmp_path / FILE_NAME).exists()


def test_end_of_another_session_keeps_the_file(identities: tuple, tmp_path: Path) -> None:
    me, _ = identities
    store = SessionStore(tmp_path, me, 30)
    store.save(sealed_state())
    store.clear("cd" * 16)
    assert (tmp_path / FILE_NAME).exists()
    store.clear(SESSION)
    assert not (tmp_path / FILE_NAME).exists()


def test_without_a_state_dir_or_identity_nothing_is_written(
    identities: tuple, tmp_path: Path
) -> None:
    me, _ = identities
    for store in (SessionStore(None, me, 30), SessionStore(tmp_path, None, 30)):
        assert not store.enabled
        store.save(sealed_state())
    assert not list(tmp_path.iterdir())


def test_a_restarted_party_lets_its_sessions_large_sums_through_to_be_told_to_rejoin(
    identities: tuple, tmp_path: Path
) -> None:
    """Found at 20 parties on all of Adult: the predecessor's forwarded Sum (120 kB) met the
    restarted party's gate, which without an open session bounds a Sum at 64 KiB and refused it
    (RESOURCE_EXHAUSTED): the job failed instead of rejoining. A party awaiting a rejoin lets
    it through to its UNAVAILABLE refusal."""
    me, _ = identities
    SessionStore(tmp_path, me, 30).save(sealed_state())
    config = party_config("hospital-a", state_dir=tmp_path)
    idle = PartyServicer(
        party_config("hospital-a"), pd.DataFrame({"a": ["1"]}), None, None, me, None
    )
    assert idle.request_limit("Sum") == 1 << 16
    restarted = PartyServicer(config, pd.DataFrame({"a": ["1"]}), None, None, me, None)
    assert restarted.store.pending is not None
    assert restarted.request_limit("Sum") == restarted.max_message_bytes
    assert restarted.request_limit("Status") == 1 << 16


def test_answers_of_another_session_leave_the_sealed_count_alone(
    identities: tuple, tmp_path: Path
) -> None:
    """`applied` rewrites the sealed count and chain of its own session only: another
    session's answers must not become the replay check of the sealed one."""
    me, _ = identities
    store = SessionStore(tmp_path, me, 30)
    store.save(sealed_state())
    store.applied("cd" * 16, 5, b"\x01" * 32)
    again = SessionStore(tmp_path, me, 30).waiting(SESSION)
    assert again is not None and (again.applied, again.chain) == (0, b"")
    store.applied(SESSION, 3, b"\x02" * 32)
    again = SessionStore(tmp_path, me, 30).waiting(SESSION)
    assert again is not None and (again.applied, again.chain) == (3, b"\x02" * 32)


def test_end_of_the_sealed_session_deletes_the_file(identities: tuple, tmp_path: Path) -> None:
    """The session's End (normal or abort) deletes its sealed keys from the disk, even when
    the restarted daemon had not rejoined it; another session's End keeps them."""
    me, _ = identities
    SessionStore(tmp_path, me, 30).save(sealed_state())
    config = party_config("hospital-a", state_dir=tmp_path)
    restarted = PartyServicer(config, pd.DataFrame({"a": ["1"]}), None, None, me, None)
    assert restarted.store.pending is not None
    restarted.secure = False  # the leader's End without a TLS context (authorization not tested)
    restarted.End(pb.EndRequest(ref=pb.SessionRef(session_id="cd" * 16)), Context())
    assert (tmp_path / FILE_NAME).exists()
    restarted.End(pb.EndRequest(ref=pb.SessionRef(session_id=SESSION), abort=True), Context())
    assert not (tmp_path / FILE_NAME).exists()
    assert restarted.store.pending is None


def test_a_restarted_party_answers_its_sealed_sessions_messages_as_missing(
    identities: tuple, tmp_path: Path
) -> None:
    """Until the leader's Rejoin, a message of the sealed session is refused UNAVAILABLE (the
    party is still missing: the leader then rejoins it); another session's message is refused
    as before (no open session), never as awaiting a rejoin; a Rejoin for a session this party
    did not seal is refused, and so is one after the lease lapsed (the file is then deleted)."""
    me, _ = identities
    SessionStore(tmp_path, me, 30).save(sealed_state())
    config = party_config("hospital-a", state_dir=tmp_path)
    restarted = PartyServicer(config, pd.DataFrame({"a": ["1"]}), None, None, me, None)
    restarted.secure = False  # the leader's calls without a TLS context (not tested here)

    def refusal(session_id: str) -> tuple[grpc.StatusCode, str]:
        with pytest.raises(Aborted) as refused:
            restarted.Renew(pb.RenewRequest(ref=pb.SessionRef(session_id=session_id)), Context())
        return refused.value.args

    code, details = refusal(SESSION)
    assert code == grpc.StatusCode.UNAVAILABLE and "awaits its leader's rejoin" in details
    code, details = refusal("cd" * 16)
    assert code == grpc.StatusCode.FAILED_PRECONDITION and "no open session" in details
    rejoin = pb.RejoinRequest(ref=pb.SessionRef(session_id="cd" * 16, iteration=1))
    with pytest.raises(Aborted) as refused:
        restarted.Rejoin(rejoin, Context())
    assert refused.value.args[0] == grpc.StatusCode.FAILED_PRECONDITION
    assert "no sealed state" in refused.value.args[1]
    assert (tmp_path / FILE_NAME).exists()
    restarted.store.started = time.monotonic() - 31  # the lease lapsed
    rejoin.ref.session_id = SESSION
    with pytest.raises(Aborted) as refused:
        restarted.Rejoin(rejoin, Context())
    assert refused.value.args[0] == grpc.StatusCode.FAILED_PRECONDITION
    assert not (tmp_path / FILE_NAME).exists()
    code, details = refusal(SESSION)
    assert code == grpc.StatusCode.FAILED_PRECONDITION and "no open session" in details
