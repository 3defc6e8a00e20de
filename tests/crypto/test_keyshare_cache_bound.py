"""The key-share certificate cache (crypto/keyshare.py ``CheckedCertificates``, #28 session 11
review): bounded, keyed by the certificate's exact bytes (a second certificate with the same
subject is checked on its own and gives its own key), refusing bytes that are no certificate
every time."""

from __future__ import annotations

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from fedanon.crypto.errors import IntegrityError
from fedanon.crypto.identity import Identity, create_ca, issue_identity
from fedanon.crypto.keyshare import CheckedCertificates


def _der(identity: Identity) -> bytes:
    return identity.certificate.public_bytes(Encoding.DER)


def _key(certificate: x509.Certificate) -> bytes:
    return certificate.public_key().public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)


def test_the_cache_stays_within_its_capacity() -> None:
    ca = create_ca()
    cache = CheckedCertificates(capacity=2)
    parties = [issue_identity(ca, f"h{i}", "party") for i in range(5)]
    for party in parties:
        certificate, holder = cache.check(_der(party), ca.certificate)
        assert holder.name == party.name and len(cache.entries) <= 2
        assert _key(certificate) == _key(party.certificate)


def test_a_second_certificate_with_the_same_subject_gives_its_own_key() -> None:
    ca = create_ca()
    first, second = issue_identity(ca, "h1", "party"), issue_identity(ca, "h1", "party")
    cache = CheckedCertificates()
    assert _key(cache.check(_der(first), ca.certificate)[0]) == _key(first.certificate)
    assert _key(cache.check(_der(second), ca.certificate)[0]) == _key(second.certificate)
    assert _key(cache.check(_der(first), ca.certificate)[0]) == _key(first.certificate)


def test_bytes_that_are_no_certificate_are_refused_each_time() -> None:
    ca = create_ca()
    cache = CheckedCertificates()
    for _ in range(2):
        with pytest.raises(IntegrityError, match="unreadable certificate"):
            cache.check(b"\x30\x03junk", ca.certificate)
    assert cache.entries == {}
