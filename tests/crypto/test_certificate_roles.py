"""A certificate must be what its role needs, wherever it is loaded, verified or presented.

The CA signed every certificate of `badcerts.PROFILES`; each lacks one property of a member's
certificate (key usage, CA=false, extended key usage, exactly one role). They must be refused
when read for a peer (`certificate_identity`, what the gate uses), when verified
(`verify_certificate`, key shares) and when loaded as the process's own identity, with one line
that names what is wrong. `fedanon certs issue leader` must issue a leader certificate.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from fedanon.crypto.errors import IdentityError
from fedanon.crypto.identity import (
    certificate_identity,
    create_ca,
    issue_identity,
    load_ca,
    load_identity,
    load_identity_files,
    save_ca,
    verify_certificate,
)
from fedanon.leader.sim import free_ports, write_party_config
from fedanon.synth import generate_hospital
from tests.crypto import badcerts
from tests.harness.cli import run_cli, run_cli_process


@pytest.fixture(scope="module")
def ca():
    return create_ca("profile test CA")


BAD = {**badcerts.PROFILES, **badcerts.PARTY_PROFILES}


@pytest.mark.parametrize("label", list(BAD))
def test_a_certificate_not_fit_for_its_role_is_refused_everywhere(
    ca, label: str, tmp_path: Path
) -> None:
    profile = BAD[label]
    name = "leader" if "leader" in profile.roles else "hospital-1"
    certificate, _key = badcerts.build(ca, name, profile)
    with pytest.raises(IdentityError) as read:
        certificate_identity(certificate)
    assert "\n" not in str(read.value) and name in str(read.value), read.value
    with pytest.raises(IdentityError):
        verify_certificate(certificate, ca.certificate)
    cert_path, key_path = badcerts.write(ca, tmp_path, name, profile)
    with pytest.raises(IdentityError):
        load_identity_files(cert_path, key_path)


def test_the_good_profile_of_the_bad_ones_is_accepted(ca) -> None:
    """The builder is right apart from each profile's one change (or every refusal is vacuous)."""
    certificate, _key = badcerts.build(ca, "leader", badcerts.Profile())
    assert certificate_identity(certificate) == ("leader", "leader")
    assert verify_certificate(certificate, ca.certificate, "leader", "leader").role == "leader"
    party, _key = badcerts.build(ca, "hospital-1", badcerts.Profile(roles=("party",)))
    assert certificate_identity(party) == ("hospital-1", "party")
    client_only = badcerts.Profile(extended=(badcerts.CLIENT,))
    leader, _key = badcerts.build(ca, "leader", client_only)
    assert certificate_identity(leader) == ("leader", "leader")  # the leader never serves


@pytest.mark.parametrize(
    ("label", "reason"),
    [
        ("no key usage", "no key usage"),
        ("key usage keyCertSign", "keyCertSign"),
        ("CA=true", "CA certificate"),
        ("intermediate CA as leader", "CA certificate"),
        ("extended key usage codeSigning", "clientAuth"),
        ("party with clientAuth only", "serverAuth"),
        ("two role OUs", "it has 2"),
    ],
)
def test_refusals_name_what_is_wrong(ca, label: str, reason: str) -> None:
    profile = BAD[label]
    name = "leader" if "leader" in profile.roles else "hospital-1"
    with pytest.raises(IdentityError, match=reason):
        certificate_identity(badcerts.build(ca, name, profile)[0])


@pytest.mark.parametrize("role", ["party", "leader"])
def test_issued_certificates_have_the_member_profile(ca, role: str) -> None:
    certificate = issue_identity(ca, "member", role).certificate
    extensions = certificate.extensions
    assert extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    usage = extensions.get_extension_for_class(x509.KeyUsage).value
    assert usage.digital_signature and not usage.key_cert_sign and not usage.crl_sign
    extended = set(extensions.get_extension_for_class(x509.ExtendedKeyUsage).value)
    assert {ExtendedKeyUsageOID.CLIENT_AUTH, ExtendedKeyUsageOID.SERVER_AUTH} <= extended
    assert certificate_identity(certificate).role == role


def test_cli_issues_the_leader_role_for_the_name_leader(tmp_path: Path) -> None:
    """Without --role, `certs issue leader` used to issue a party certificate that every party
    then refused as its leader; other names stay parties, an explicit --role wins."""
    fed = tmp_path / "fed"
    assert run_cli("certs", "init", "--dir", fed).code == 0
    issued = run_cli("certs", "issue", "leader", "--dir", fed)
    assert issued.code == 0 and "issued leader certificate" in issued.out, issued.err
    assert run_cli("certs", "issue", "hospital-1", "--dir", fed).code == 0
    assert run_cli("certs", "issue", "coordinator", "--dir", fed, "--role", "leader").code == 0
    names = ("leader", "hospital-1", "coordinator")
    roles = {name: load_identity(fed, name).role for name in names}
    assert roles == {"leader": "leader", "hospital-1": "party", "coordinator": "leader"}
    assert load_ca(fed).certificate.extensions.get_extension_for_class(x509.BasicConstraints)


def test_a_daemon_refuses_to_start_with_a_ca_certificate_as_its_own(tmp_path: Path) -> None:
    """`party serve` with a CA-signed certificate that is a CA certificate: exit 2 and one line
    naming what is wrong, before anything listens."""
    ca = create_ca("startup profile CA")
    save_ca(ca, tmp_path / "certs")
    badcerts.write(
        ca, tmp_path / "certs", "hospital-1", badcerts.Profile(roles=("party",), ca=True)
    )
    generate_hospital(50, seed=1).to_csv(tmp_path / "a.csv", index=False)
    (port,) = free_ports(1)
    config = tmp_path / "party.toml"
    write_party_config(
        config, "hospital-1", port, tmp_path / "a.csv", None, None, tmp_path / "certs", 30.0
    )
    done = run_cli_process("party", "serve", "--config", config, timeout=120)
    assert done.code == 2, done.out + done.err
    assert "Traceback" not in done.err
    errors = [line for line in done.err.splitlines() if line.startswith("fedanon: error:")]
    assert len(errors) == 1 and "CA certificate" in errors[0], done.err
