"""gRPC mutual TLS from federation identities, and who is calling.

The only module of `crypto` that touches gRPC: it turns an `Identity` and the federation CA
certificate into server credentials that demand a client certificate from the same CA, and into
client credentials whose peer check is pinned to an expected name rather than to the dialled
address (so `127.0.0.1` or a container IP still checks that the server is, say, `hospital-2`).
Servers call `peer_identity` or `authorize` to learn and check the caller's name and role.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import grpc
from cryptography import x509

from fedanon.crypto.errors import IdentityError
from fedanon.crypto.identity import Identity, PeerIdentity, certificate_identity, certificate_pem

TARGET_NAME_OPTION = "grpc.ssl_target_name_override"


def server_credentials(
    identity: Identity, ca_certificate: x509.Certificate
) -> grpc.ServerCredentials:
    """TLS server credentials that require and verify a client certificate from the CA."""
    return grpc.ssl_server_credentials(
        [(identity.key_pem(), identity.certificate_pem())],
        root_certificates=certificate_pem(ca_certificate),
        require_client_auth=True,
    )


def channel_credentials(
    identity: Identity, ca_certificate: x509.Certificate
) -> grpc.ChannelCredentials:
    """TLS client credentials: trust only the CA, present this identity's certificate."""
    return grpc.ssl_channel_credentials(
        root_certificates=certificate_pem(ca_certificate),
        private_key=identity.key_pem(),
        certificate_chain=identity.certificate_pem(),
    )


def target_name_options(expected_peer: str) -> list[tuple[str, str]]:
    """Channel options that make TLS check the server certificate against `expected_peer`."""
    return [(TARGET_NAME_OPTION, expected_peer)]


def secure_channel(
    target: str,
    identity: Identity,
    ca_certificate: x509.Certificate,
    expected_peer: str,
    options: Sequence[tuple[str, str | int]] = (),
) -> grpc.Channel:
    """A channel to `target` that only completes the handshake with `expected_peer`."""
    return grpc.secure_channel(
        target,
        channel_credentials(identity, ca_certificate),
        options=[*options, *target_name_options(expected_peer)],
    )


def peer_identity(context: grpc.ServicerContext) -> PeerIdentity:
    """Name and role of the caller, from the client certificate TLS already verified.

    With `server_credentials` the handshake has checked the chain to the federation CA, so the
    certificate in the auth context can be trusted for its name and role.
    """
    pems = context.auth_context().get("x509_pem_cert")
    if not pems:
        raise IdentityError("the caller presented no client certificate")
    return certificate_identity(x509.load_pem_x509_certificate(pems[0]))


def authorize(
    context: grpc.ServicerContext,
    roles: Collection[str],
    names: Collection[str] | None = None,
) -> PeerIdentity:
    """Return the caller's identity, or abort the RPC with PERMISSION_DENIED.

    Use in every servicer method: e.g. only the leader may open a session, only the ring
    predecessor may send a ring payload.
    """
    try:
        peer = peer_identity(context)
    except IdentityError as exc:
        context.abort(grpc.StatusCode.UNAUTHENTICATED, str(exc))
    if peer.role not in roles or (names is not None and peer.name not in names):
        context.abort(
            grpc.StatusCode.PERMISSION_DENIED,
            f"{peer.name!r} ({peer.role}) may not call this method",
        )
    return peer
