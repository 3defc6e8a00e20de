"""Federation identities: a CA, party and leader certificates, and their key files.

One CA per federation signs a certificate for each party daemon and for the leader. A
certificate carries the holder's name as its only SAN DNS name (what TLS checks) and its role in
the subject's organizational unit (what servers and key-share verifiers check), and is an end
entity fit for that role (`check_member_profile`, run wherever a certificate is read). The same
certificate keys sign the per-session X25519 keys of the secure protocols
(`fedanon.crypto.keyshare`),
so the relaying leader cannot substitute a party's key.

Keys are EC P-256: every TLS stack gRPC ships with accepts them for both server and client
authentication, which is not yet true of Ed25519 certificates.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, TypeVar

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from cryptography.x509.verification import PolicyBuilder, Store, VerificationError

from fedanon.crypto.errors import IdentityError
from fedanon.crypto.files import atomic_path

ROLES = ("party", "leader")
# Extended key usages each role's certificate must carry: a party daemon serves its neighbours
# and the leader and calls its successor; the leader only calls (it is issued both all the same).
_SERVER_AUTH = ("serverAuth", ExtendedKeyUsageOID.SERVER_AUTH)
_CLIENT_AUTH = ("clientAuth", ExtendedKeyUsageOID.CLIENT_AUTH)
ROLE_USAGES = {"party": (_SERVER_AUTH, _CLIENT_AUTH), "leader": (_CLIENT_AUTH,)}
CA_STEM = "ca"
CA_VALIDITY = dt.timedelta(days=3650)
LEAF_VALIDITY = dt.timedelta(days=825)
# Certificates start a little in the past so that hosts with slightly slow clocks accept them.
_BACKDATE = dt.timedelta(minutes=5)
_NAME_RE = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
_SIGNATURE = ec.ECDSA(hashes.SHA256())
_E = TypeVar("_E", bound=x509.ExtensionType)


class PeerIdentity(NamedTuple):
    """Who a certificate names: its SAN DNS name and its federation role."""

    name: str
    role: str


@dataclass(frozen=True)
class CertificateAuthority:
    """The federation's signing key and self-signed certificate."""

    key: ec.EllipticCurvePrivateKey
    certificate: x509.Certificate


@dataclass(frozen=True)
class Identity:
    """A party's or the leader's key and CA-signed certificate."""

    name: str
    role: str
    key: ec.EllipticCurvePrivateKey
    certificate: x509.Certificate

    def key_pem(self) -> bytes:
        """Unencrypted PKCS#8 PEM, the form gRPC's TLS credentials take."""
        return _key_pem(self.key)

    def certificate_pem(self) -> bytes:
        """PEM certificate, the form gRPC's TLS credentials take."""
        return certificate_pem(self.certificate)

    def sign(self, data: bytes) -> bytes:
        """ECDSA-SHA256 signature with the certificate key."""
        return self.key.sign(data, _SIGNATURE)


def validate_name(name: str) -> str:
    """Accept a party or leader name usable as a DNS label (it goes into the SAN).

    Lower-case letters, digits and inner hyphens, at most 63 characters; `ca` is reserved for the
    CA's own files.
    """
    if not _NAME_RE.fullmatch(name) or name == CA_STEM:
        raise IdentityError(
            f"invalid name {name!r}: names are DNS labels (1-63 lower-case letters, digits or "
            f"inner hyphens) and {CA_STEM!r} is reserved"
        )
    return name


def create_ca(common_name: str = "fedanon federation CA") -> CertificateAuthority:
    """A new CA key and self-signed certificate that may sign leaf certificates only."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = dt.datetime.now(dt.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        .not_valid_after(now + CA_VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return CertificateAuthority(key, certificate)


def issue_identity(ca: CertificateAuthority, name: str, role: str) -> Identity:
    """A new key and a CA-signed certificate for `name` acting as `role` (party or leader).

    Both server and client authentication are allowed: party daemons serve their neighbours and
    call them, so the same certificate is used in both directions of mutual TLS.
    """
    validate_name(name)
    if role not in ROLES:
        raise IdentityError(f"invalid role {role!r}: expected one of {', '.join(ROLES)}")
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, name),
            x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, role),
        ]
    )
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        .not_valid_after(min(now + LEAF_VALIDITY, ca.certificate.not_valid_after_utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()),
            critical=False,
        )
        .sign(ca.key, hashes.SHA256())
    )
    return Identity(name, role, key, certificate)


def certificate_identity(certificate: x509.Certificate) -> PeerIdentity:
    """Read name (the single SAN DNS name) and role (subject OU) from a certificate.

    This makes no trust decision: call it on certificates already verified, by TLS or by
    `verify_certificate`.
    """
    try:
        san = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        raise IdentityError("certificate has no subject alternative name") from None
    names = san.value.get_values_for_type(x509.DNSName)
    if len(names) != 1:
        raise IdentityError(f"certificate names {len(names)} DNS names, expected exactly one")
    roles = certificate.subject.get_attributes_for_oid(NameOID.ORGANIZATIONAL_UNIT_NAME)
    role = roles[0].value if len(roles) == 1 else None
    if role not in ROLES:
        raise IdentityError(
            f"certificate for {names[0]!r} carries no federation role (one OU, one of "
            f"{', '.join(ROLES)}; it has {len(roles)})"
        )
    check_member_profile(certificate, names[0], str(role))
    return PeerIdentity(names[0], str(role))


def _extension(certificate: x509.Certificate, kind: type[_E], what: str, name: str) -> _E:
    try:
        return certificate.extensions.get_extension_for_class(kind).value
    except x509.ExtensionNotFound:
        raise IdentityError(f"certificate for {name!r} has no {what} extension") from None


def check_member_profile(certificate: x509.Certificate, name: str, role: str) -> None:
    """Refuse a certificate that is not a federation member's end-entity certificate.

    gRPC's TLS accepts as a client certificate a CA certificate the federation CA signed, and
    one without basic constraints or extended key usage (measured), so a certificate issued for
    another purpose must be refused here, wherever a certificate is loaded or presented:
    basic constraints CA=false, key usage digitalSignature (what TLS 1.3 and the key-share
    signatures use) and never keyCertSign or cRLSign, and the extended key usages the role
    needs (`ROLE_USAGES`).
    """
    if _extension(certificate, x509.BasicConstraints, "basic constraints", name).ca:
        raise IdentityError(f"certificate for {name!r} is a CA certificate (CA=true)")
    usage = _extension(certificate, x509.KeyUsage, "key usage", name)
    if not usage.digital_signature or usage.key_cert_sign or usage.crl_sign:
        raise IdentityError(
            f"certificate for {name!r} must have key usage digitalSignature and neither "
            "keyCertSign nor cRLSign"
        )
    extended = _extension(certificate, x509.ExtendedKeyUsage, "extended key usage", name)
    missing = [label for label, oid in ROLE_USAGES[role] if oid not in extended]
    if missing:
        raise IdentityError(
            f"certificate for {name!r} ({role}) lacks extended key usage {', '.join(missing)}"
        )


def verify_certificate(
    certificate: x509.Certificate,
    ca_certificate: x509.Certificate,
    expected_name: str | None = None,
    expected_role: str | None = None,
) -> PeerIdentity:
    """Check that the federation CA issued `certificate` (path, validity, EKU) and who it names.

    Path validation is `cryptography`'s RFC 5280 verifier, not ours; the name and role checks
    stop a valid certificate of one party being presented as another's.
    """
    verifier = PolicyBuilder().store(Store([ca_certificate])).build_client_verifier()
    try:
        verifier.verify(certificate, [])
    except VerificationError as exc:
        raise IdentityError(f"certificate not issued by this federation's CA: {exc}") from None
    return check_expected(certificate_identity(certificate), expected_name, expected_role)


def check_expected(
    peer: PeerIdentity, expected_name: str | None = None, expected_role: str | None = None
) -> PeerIdentity:
    """`peer`, once it is the name and role expected (None: any)."""
    if expected_name is not None and peer.name != expected_name:
        raise IdentityError(f"certificate names {peer.name!r}, expected {expected_name!r}")
    if expected_role is not None and peer.role != expected_role:
        raise IdentityError(f"{peer.name!r} has role {peer.role!r}, expected {expected_role!r}")
    return peer


def verify_signature(certificate: x509.Certificate, signature: bytes, data: bytes) -> None:
    """Check an `Identity.sign` signature against the key in `certificate`."""
    public_key = certificate.public_key()
    if not isinstance(public_key, ec.EllipticCurvePublicKey):
        raise IdentityError("certificate key is not an EC key")
    try:
        public_key.verify(signature, data, _SIGNATURE)
    except InvalidSignature:
        raise IdentityError("signature does not verify with the certificate's key") from None


def certificate_pem(certificate: x509.Certificate) -> bytes:
    """PEM encoding of a certificate."""
    return certificate.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _write_pair(directory: Path, stem: str, key_pem: bytes, cert_pem: bytes) -> None:
    """Write STEM.key (0600) and STEM.crt (0644) atomically; never overwrite either."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    key_path, cert_path = directory / f"{stem}.key", directory / f"{stem}.crt"
    for path in (key_path, cert_path):
        if path.exists():
            raise IdentityError(f"{path} already exists; refusing to overwrite it")
    # atomic_path's temporary file is created 0600, so the key is never readable by others.
    with atomic_path(key_path) as key_tmp, atomic_path(cert_path) as cert_tmp:
        key_tmp.write_bytes(key_pem)
        cert_tmp.write_bytes(cert_pem)
        os.chmod(cert_tmp, 0o644)


def save_ca(ca: CertificateAuthority, directory: str | os.PathLike[str]) -> Path:
    """Write ca.key and ca.crt into `directory`; returns the certificate path."""
    directory = Path(directory)
    _write_pair(directory, CA_STEM, _key_pem(ca.key), certificate_pem(ca.certificate))
    return directory / f"{CA_STEM}.crt"


def save_identity(identity: Identity, directory: str | os.PathLike[str]) -> Path:
    """Write NAME.key and NAME.crt into `directory`; returns the certificate path."""
    directory = Path(directory)
    _write_pair(directory, identity.name, identity.key_pem(), identity.certificate_pem())
    return directory / f"{identity.name}.crt"


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise IdentityError(f"{path} not found") from None


def _load_key(path: Path) -> ec.EllipticCurvePrivateKey:
    try:
        key = serialization.load_pem_private_key(_read(path), password=None)
    except (ValueError, TypeError) as exc:
        raise IdentityError(f"{path}: not an unencrypted PEM private key ({exc})") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise IdentityError(f"{path}: expected an EC private key")
    return key


def _load_certificate(path: Path) -> x509.Certificate:
    try:
        return x509.load_pem_x509_certificate(_read(path))
    except ValueError as exc:
        raise IdentityError(f"{path}: not a PEM certificate ({exc})") from None


def _check_key_matches(
    key: ec.EllipticCurvePrivateKey, certificate: x509.Certificate, what: str
) -> None:
    if key.public_key() != certificate.public_key():
        raise IdentityError(f"{what}: the key does not belong to the certificate")


def load_ca_certificate(directory: str | os.PathLike[str]) -> x509.Certificate:
    """The federation CA certificate from `directory`/ca.crt (all a verifier needs)."""
    return _load_certificate(Path(directory) / f"{CA_STEM}.crt")


def load_ca(directory: str | os.PathLike[str]) -> CertificateAuthority:
    """The CA key and certificate from `directory`, needed only to issue certificates."""
    directory = Path(directory)
    key = _load_key(directory / f"{CA_STEM}.key")
    certificate = load_ca_certificate(directory)
    _check_key_matches(key, certificate, str(directory / CA_STEM))
    return CertificateAuthority(key, certificate)


def load_identity_files(
    certificate_path: str | os.PathLike[str], key_path: str | os.PathLike[str]
) -> Identity:
    """An identity from explicit certificate and key files (e.g. a mounted tls.crt / tls.key).

    The key must belong to the certificate; name and role are read from the certificate.
    """
    certificate_path, key_path = Path(certificate_path), Path(key_path)
    key = _load_key(key_path)
    certificate = _load_certificate(certificate_path)
    _check_key_matches(key, certificate, f"{key_path} and {certificate_path}")
    peer = certificate_identity(certificate)
    return Identity(peer.name, peer.role, key, certificate)


def load_identity(directory: str | os.PathLike[str], name: str) -> Identity:
    """NAME.crt and NAME.key from `directory` (as written by `save_identity`), naming NAME."""
    directory = Path(directory)
    validate_name(name)
    identity = load_identity_files(directory / f"{name}.crt", directory / f"{name}.key")
    if identity.name != name:
        raise IdentityError(f"{directory / name}.crt names {identity.name!r}, not {name!r}")
    return identity
