"""A key share's certificate is chain-checked once per process (#28: the handshake's n^2
certificate checks), and what a verifier relies on stays checked on every share."""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

import pytest

import fedanon.crypto.identity
from fedanon.crypto.errors import IdentityError, IntegrityError
from fedanon.crypto.identity import create_ca, issue_identity
from fedanon.crypto.keyshare import ONION_UNION, PAIRWISE_SUM, create_key_share, verify_key_share
from fedanon.federation.keyshares import new_share, verified_peers
from tests.harness.wait import wait_until


@pytest.fixture
def chain_checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names whose certificate chain the key-share checks validated, in order."""
    seen: list[str] = []
    real = fedanon.crypto.identity.verify_certificate

    def counted(certificate: Any, ca: Any, *args: Any, **kwargs: Any) -> Any:
        peer = real(certificate, ca, *args, **kwargs)
        seen.append(peer.name)
        return peer

    monkeypatch.setattr("fedanon.crypto.keyshare.verify_certificate", counted)
    return seen


def test_each_certificate_is_chain_checked_once_across_purposes_and_sessions(
    chain_checks: list[str],
) -> None:
    """Two sessions (a job and its rerun), both purposes, every party's shares: each party's
    certificate is validated against the CA once (before: 2 purposes x 2 sessions x n)."""
    ca = create_ca()  # certificates no earlier test of this process has seen
    parties = [issue_identity(ca, f"h{i}", "party") for i in range(5)]
    for _session in range(2):
        sid = os.urandom(16)
        shares = [
            new_share(p, p.name, "party", sid, purpose)[1]
            for p in parties
            for purpose in (ONION_UNION, PAIRWISE_SUM)
        ]
        for purpose in (ONION_UNION, PAIRWISE_SUM):
            peers = verified_peers(shares, purpose, sid, ca.certificate)
            assert [peer.name for peer in peers] == [p.name for p in parties]
    assert sorted(chain_checks) == sorted(p.name for p in parties)


def test_a_certificate_checked_under_one_ca_is_refused_under_another() -> None:
    ours, theirs = create_ca(), create_ca()
    party = issue_identity(ours, "h1", "party")
    sid = os.urandom(16)
    _key, share = create_key_share(party, sid, PAIRWISE_SUM)
    assert verify_key_share(share, ours.certificate, sid, PAIRWISE_SUM).name == "h1"
    with pytest.raises(IdentityError, match="not issued by this federation's CA"):
        verify_key_share(share, theirs.certificate, sid, PAIRWISE_SUM)


def test_every_share_is_still_bound_to_its_signature_session_name_and_role() -> None:
    """Once its certificate is known, a share is still refused for a wrong session, purpose,
    holder name, role or signature."""
    ca = create_ca()
    party = issue_identity(ca, "h1", "party")
    sid = os.urandom(16)
    _key, share = create_key_share(party, sid, PAIRWISE_SUM)
    assert verify_key_share(share, ca.certificate, sid, PAIRWISE_SUM, "h1", "party").name == "h1"
    with pytest.raises(IntegrityError, match="another session"):
        verify_key_share(share, ca.certificate, os.urandom(16), PAIRWISE_SUM)
    with pytest.raises(IntegrityError, match="is for"):
        verify_key_share(share, ca.certificate, sid, ONION_UNION)
    with pytest.raises(IdentityError, match="expected 'h2'"):
        verify_key_share(share, ca.certificate, sid, PAIRWISE_SUM, expected_name="h2")
    with pytest.raises(IdentityError, match="expected 'leader'"):
        verify_key_share(share, ca.certificate, sid, PAIRWISE_SUM, expected_role="leader")
    forged = share[:-1] + bytes([share[-1] ^ 1])
    with pytest.raises((IdentityError, IntegrityError)):
        verify_key_share(forged, ca.certificate, sid, PAIRWISE_SUM)


def test_a_checked_certificate_is_refused_once_it_expired(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache does not stretch a certificate's validity: used after its end, it is
    validated again, and refused."""
    ca = create_ca()
    monkeypatch.setattr(fedanon.crypto.identity, "LEAF_VALIDITY", dt.timedelta(seconds=2))
    party = issue_identity(ca, "h1", "party")
    sid = os.urandom(16)
    _key, share = create_key_share(party, sid, PAIRWISE_SUM)
    assert verify_key_share(share, ca.certificate, sid, PAIRWISE_SUM).name == "h1"
    end = party.certificate.not_valid_after_utc
    # Until the certificate's validity is over.
    assert wait_until(lambda: dt.datetime.now(dt.UTC) > end + dt.timedelta(seconds=1), interval=0.1)
    with pytest.raises(IdentityError, match="not issued by this federation's CA"):
        verify_key_share(share, ca.certificate, sid, PAIRWISE_SUM)
