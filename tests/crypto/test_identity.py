"""Federation CA and certificates: the `fedanon certs` CLI, key files, verification."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from fedanon.crypto.errors import IdentityError
from fedanon.crypto.identity import (
    create_ca,
    issue_identity,
    load_ca,
    load_ca_certificate,
    load_identity,
    load_identity_files,
    save_identity,
    validate_name,
    verify_certificate,
    verify_signature,
)
from tests.harness.cli import run_cli


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_cli_init_and_issue_write_the_federation(tmp_path: Path) -> None:
    fed = tmp_path / "fed"
    assert run_cli("certs", "init", "--dir", fed).code == 0
    issued = run_cli("certs", "issue", "hospital-1", "--dir", fed)
    assert issued.code == 0 and "hospital-1.crt" in issued.out, issued.err
    assert run_cli("certs", "issue", "coordinator", "--dir", fed, "--role", "leader").code == 0
    for stem in ("ca", "hospital-1", "coordinator"):
        assert mode(fed / f"{stem}.key") == 0o600
        assert mode(fed / f"{stem}.crt") == 0o644
    ca = load_ca_certificate(fed)
    party = load_identity(fed, "hospital-1")
    leader = load_identity(fed, "coordinator")
    assert (party.name, party.role) == ("hospital-1", "party")
    assert (leader.name, leader.role) == ("coordinator", "leader")
    assert verify_certificate(party.certificate, ca, "hospital-1", "party").role == "party"
    san = party.certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    assert san.value.get_values_for_type(x509.DNSName) == ["hospital-1"]
    eku = party.certificate.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert set(eku) == {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH}
    assert load_ca(fed).certificate == ca


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["certs", "init", "--dir", "{fed}"], "already exists"),
        (["certs", "issue", "hospital-1", "--dir", "{fed}"], "already exists"),
        (["certs", "issue", "Bad_Name", "--dir", "{fed}"], "invalid name"),
        (["certs", "issue", "ca", "--dir", "{fed}"], "reserved"),
        (["certs", "issue", "x", "--dir", "{missing}"], "certs init"),
    ],
)
def test_cli_user_errors_are_one_line(tmp_path: Path, argv, message) -> None:
    fed = tmp_path / "fed"
    assert run_cli("certs", "init", "--dir", fed).code == 0
    assert run_cli("certs", "issue", "hospital-1", "--dir", fed).code == 0
    done = run_cli(*(a.format(fed=fed, missing=tmp_path / "missing") for a in argv))
    assert done.code == 2
    err = done.err
    assert err.count("\n") == 1 and err.startswith("fedanon: error:") and message in err


def test_cli_requires_an_action() -> None:
    done = run_cli("certs")
    assert done.code == 2 and "required: ACTION" in done.err, done.err


def test_foreign_ca_wrong_name_and_wrong_role_are_refused(federation, other_federation) -> None:
    ca = federation.ca.certificate
    with pytest.raises(IdentityError, match="CA"):
        verify_certificate(other_federation.parties[0].certificate, ca)
    with pytest.raises(IdentityError, match="expected 'p01'"):
        verify_certificate(federation.parties[0].certificate, ca, expected_name="p01")
    with pytest.raises(IdentityError, match="role"):
        verify_certificate(federation.leader.certificate, ca, expected_role="party")
    # A CA certificate is not a leaf.
    with pytest.raises(IdentityError):
        verify_certificate(ca, ca)


def test_signatures_verify_only_with_the_signers_certificate(federation) -> None:
    p0, p1 = federation.parties[:2]
    signature = p0.sign(b"statement")
    verify_signature(p0.certificate, signature, b"statement")
    with pytest.raises(IdentityError):
        verify_signature(p0.certificate, signature, b"other statement")
    with pytest.raises(IdentityError):
        verify_signature(p1.certificate, signature, b"statement")


def test_loading_detects_mismatched_or_missing_files(tmp_path: Path) -> None:
    ca = create_ca()
    save_identity(issue_identity(ca, "a", "party"), tmp_path)
    save_identity(issue_identity(ca, "b", "party"), tmp_path)
    assert load_identity_files(tmp_path / "b.crt", tmp_path / "b.key").name == "b"
    (tmp_path / "a.key").write_bytes((tmp_path / "b.key").read_bytes())
    with pytest.raises(IdentityError, match="does not belong"):
        load_identity(tmp_path, "a")
    (tmp_path / "c.crt").write_bytes((tmp_path / "b.crt").read_bytes())
    (tmp_path / "c.key").write_bytes((tmp_path / "b.key").read_bytes())
    with pytest.raises(IdentityError, match="names 'b'"):
        load_identity(tmp_path, "c")
    with pytest.raises(IdentityError, match="not found"):
        load_identity(tmp_path, "d")
    (tmp_path / "e.key").write_text("garbage")
    with pytest.raises(IdentityError, match="PEM"):
        load_identity(tmp_path, "e")


@pytest.mark.parametrize("name", ["", "-a", "a-", "A", "a.b", "x" * 64, "ca", "a_b"])
def test_invalid_names(name: str) -> None:
    with pytest.raises(IdentityError):
        validate_name(name)


def test_valid_names_and_roles() -> None:
    assert validate_name("hospital-12") == "hospital-12"
    with pytest.raises(IdentityError, match="role"):
        issue_identity(create_ca(), "a", "observer")
