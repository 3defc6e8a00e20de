"""Certificates the federation CA really signed but that are not what a member's must be.

Each entry of :data:`PROFILES` changes one thing of what `issue_identity` issues (no key usage,
CA=true, a wrong extended key usage, two role OUs, an intermediate CA certificate presented as
the leader's, ...): the CA's signature is valid, so only the profile checks can refuse them.
Shared by the unit tests and by the tests against real daemons.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from fedanon.crypto.identity import CertificateAuthority, certificate_pem

SERVER, CLIENT = ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH


def key_usage(signature: bool = True, cert_sign: bool = False) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=signature,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


@dataclass(frozen=True)
class Profile:
    """What goes into the certificate (None: the extension is left out)."""

    roles: tuple[str, ...] = ("leader",)
    ca: bool | None = False
    usage: x509.KeyUsage | None = field(default_factory=key_usage)
    extended: tuple[x509.ObjectIdentifier, ...] | None = (SERVER, CLIENT)
    names: tuple[str, ...] | None = None  # SAN DNS names; None: the certificate's name; (): no SAN


# A good leader certificate differs from each of these in one respect only.
PROFILES: dict[str, Profile] = {
    "no key usage": Profile(usage=None),
    "key usage without digitalSignature": Profile(usage=key_usage(signature=False)),
    "key usage keyCertSign": Profile(usage=key_usage(cert_sign=True)),
    "CA=true": Profile(ca=True),
    "no basic constraints": Profile(ca=None),
    "no extended key usage": Profile(extended=None),
    "extended key usage codeSigning": Profile(extended=(ExtendedKeyUsageOID.CODE_SIGNING,)),
    "serverAuth only": Profile(extended=(SERVER,)),
    "two role OUs": Profile(roles=("leader", "party")),
    "two role OUs, party first": Profile(roles=("party", "leader")),
    "intermediate CA as leader": Profile(ca=True, usage=key_usage(cert_sign=True)),
}
# A party must also be able to serve: clientAuth alone is not enough for that role.
PARTY_PROFILES = {"party with clientAuth only": Profile(roles=("party",), extended=(CLIENT,))}


def build(
    ca: CertificateAuthority, name: str, profile: Profile
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A certificate for `name` with `profile`, signed by `ca`, and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = [x509.NameAttribute(NameOID.COMMON_NAME, name)]
    subject += [x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, r) for r in profile.roles]
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(subject))
        .issuer_name(ca.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()),
            critical=False,
        )
    )
    names = (name,) if profile.names is None else profile.names
    san = x509.SubjectAlternativeName([x509.DNSName(n) for n in names]) if names else None
    extensions: list[tuple[x509.ExtensionType | None, bool]] = [
        (san, False),
        (None if profile.ca is None else x509.BasicConstraints(profile.ca, None), True),
        (profile.usage, True),
        (None if profile.extended is None else x509.ExtendedKeyUsage(profile.extended), False),
    ]
    for extension, critical in extensions:
        if extension is not None:
            builder = builder.add_extension(extension, critical=critical)
    return builder.sign(ca.key, hashes.SHA256()), key


def write(
    ca: CertificateAuthority, directory: Path, name: str, profile: Profile
) -> tuple[Path, Path]:
    """`build`, written as DIRECTORY/NAME.crt and NAME.key; returns both paths."""
    certificate, key = build(ca, name, profile)
    directory.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = directory / f"{name}.crt", directory / f"{name}.key"
    cert_path.write_bytes(certificate_pem(certificate))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def slug(label: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in label.lower())
