"""The end-to-end sealing of relayed ring hops (federation/relay_crypto.py), without daemons:
the relay cannot swap a key, pose as another party, move a frame to another session, pair or
iteration, change a byte or play a frame twice."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives.serialization import Encoding

from fedanon.crypto.errors import CryptoError, IdentityError, IntegrityError
from fedanon.crypto.identity import CertificateAuthority, Identity, create_ca, issue_identity
from fedanon.federation import relay_crypto
from fedanon.federation.relay_crypto import HopKeys
from fedanon.protos import fedanon_v1_pb2 as pb

SID = "ab" * 16
#: The CA, the parties' identities by name, and the leader's identity.
Federation = tuple[CertificateAuthority, dict[str, Identity], Identity]


@pytest.fixture(scope="module")
def federation() -> Federation:
    ca = create_ca("relay crypto test CA")
    names = ("hospital-1", "hospital-2", "hospital-3")
    parties = {name: issue_identity(ca, name, "party") for name in names}
    return ca, parties, issue_identity(ca, "leader", "leader")


def _pair(federation: Federation) -> tuple[HopKeys, HopKeys]:
    ca, parties, _leader = federation
    a, b = parties["hospital-1"], parties["hospital-2"]
    private, offer = relay_crypto.offer(a, SID, b.name)
    receiver, answer = relay_crypto.answer(b, ca.certificate, SID, a.name, offer)
    sender = relay_crypto.accept(a, ca.certificate, SID, b.name, private, answer)
    return sender, receiver


def test_a_sealed_request_and_reply_round_trip_once(federation: Federation) -> None:
    sender, receiver = _pair(federation)
    header, sealed = sender.seal_request("Sum", 4, b"partial sum")
    assert b"partial sum" not in sealed and len(sealed) == len(b"partial sum") + 16
    assert receiver.open_request("Sum", header, sealed) == b"partial sum"
    reply = receiver.seal_reply("Sum", header, pb.TunnelReply(reply=b"sealed total"))
    assert sender.open_reply("Sum", header, reply).reply == b"sealed total"
    with pytest.raises(IntegrityError, match="counter 1 replayed"):
        receiver.open_request("Sum", header, sealed)


@pytest.mark.parametrize("change", ["byte", "method", "iteration", "counter", "session"])
def test_any_change_to_a_sealed_frame_is_refused(federation: Federation, change: str) -> None:
    sender, receiver = _pair(federation)
    header, sealed = sender.seal_request("Union", 7, b"a batch of sealed records")
    method = "Union"
    if change == "byte":
        sealed = sealed[:3] + bytes([sealed[3] ^ 1]) + sealed[4:]
    elif change == "method":
        method = "Sum"
    elif change == "iteration":
        header.iteration += 1
    elif change == "counter":
        header.counter += 1
    else:
        header.session_id = "cd" * 16
    with pytest.raises(IntegrityError, match="relayed frame refused"):
        receiver.open_request(method, header, sealed)


def test_another_pairs_keys_open_nothing(federation: Federation) -> None:
    sender, _receiver = _pair(federation)
    _other_sender, other_receiver = _pair(federation)  # same names, fresh handshake
    header, sealed = sender.seal_request("Sum", 0, b"x" * 64)
    with pytest.raises(IntegrityError, match="tampered or misrouted"):
        other_receiver.open_request("Sum", header, sealed)


def test_the_handshake_refuses_what_a_relay_could_forge(federation: Federation) -> None:
    ca, parties, leader = federation
    a, b, c = parties["hospital-1"], parties["hospital-2"], parties["hospital-3"]
    _private, offer = relay_crypto.offer(a, SID, b.name)
    # Another session, or a sender that is not this party's predecessor.
    with pytest.raises(IntegrityError, match="another session"):
        relay_crypto.answer(b, ca.certificate, "cd" * 16, a.name, offer)
    with pytest.raises(IntegrityError, match="takes hops from 'hospital-3' only"):
        relay_crypto.answer(b, ca.certificate, SID, c.name, offer)
    # A swapped key: the signature no longer verifies.
    hello = pb.HopHandshake.FromString(offer)
    hello.public_key = bytes(32)
    with pytest.raises(IdentityError, match="signature"):
        relay_crypto.answer(b, ca.certificate, SID, a.name, hello.SerializeToString())
    # The leader's certificate (or another party's) presented for hospital-1.
    forged = pb.HopHandshake.FromString(offer)
    forged.certificate = c.certificate.public_bytes(Encoding.DER)
    with pytest.raises(CryptoError):
        relay_crypto.answer(b, ca.certificate, SID, a.name, forged.SerializeToString())
    _p, leader_offer = relay_crypto.offer(leader, SID, b.name)
    with pytest.raises(CryptoError):
        relay_crypto.answer(b, ca.certificate, SID, "leader", leader_offer)
    # An answer signed by someone other than the expected next hop.
    private, offer = relay_crypto.offer(a, SID, b.name)
    _keys, answer = relay_crypto.answer(b, ca.certificate, SID, a.name, offer)
    with pytest.raises(CryptoError):
        relay_crypto.accept(a, ca.certificate, SID, c.name, private, answer)
