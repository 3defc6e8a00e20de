"""Shared fixtures for the crypto tests: one federation (CA, 16 parties, a leader) per run."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from fedanon.crypto.identity import CertificateAuthority, Identity, create_ca, issue_identity

MAX_PARTIES = 16


@dataclass(frozen=True)
class Federation:
    ca: CertificateAuthority
    parties: tuple[Identity, ...]
    leader: Identity


@pytest.fixture(scope="session")
def federation() -> Federation:
    """Certificates are slow-ish to make, so every test shares these (they are immutable)."""
    ca = create_ca()
    parties = tuple(issue_identity(ca, f"p{i:02d}", "party") for i in range(MAX_PARTIES))
    return Federation(ca, parties, issue_identity(ca, "leader", "leader"))


@pytest.fixture(scope="session")
def other_federation() -> Federation:
    """A second, unrelated federation: its certificates must be refused by the first."""
    ca = create_ca()
    parties = tuple(issue_identity(ca, f"p{i:02d}", "party") for i in range(3))
    return Federation(ca, parties, issue_identity(ca, "leader", "leader"))
