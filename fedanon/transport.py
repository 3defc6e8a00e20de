"""gRPC servers and channels with mutual TLS (or, when asked, none).

Certificates name their holder in the SAN; a channel checks the server's certificate against the
name the caller expects (``ssl_target_name_override``), so a party reached on 127.0.0.1 must still
prove it is ``hospital-b``. Servers require client certificates and handlers check the caller's
name with :func:`peer_name`.
"""

from __future__ import annotations

import logging
from concurrent import futures

import grpc

from fedanon.tls import TLSFiles

log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 1 << 30
_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
]


def make_server(listen: str, tls: TLSFiles | None, max_workers: int = 8) -> tuple[grpc.Server, int]:
    """A server bound to `listen`; returns it with the bound port (0 in `listen` picks one)."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers), options=_OPTIONS)
    if tls is None:
        port = server.add_insecure_port(listen)
    else:
        credentials = grpc.ssl_server_credentials(
            [(tls.key.read_bytes(), tls.cert.read_bytes())],
            root_certificates=tls.ca.read_bytes(),
            require_client_auth=True,
        )
        port = server.add_secure_port(listen, credentials)
    return server, port


def make_channel(address: str, expected_name: str, tls: TLSFiles | None) -> grpc.Channel:
    """A channel to `address` whose server must present a certificate for `expected_name`."""
    if tls is None:
        return grpc.insecure_channel(address, options=_OPTIONS)
    credentials = grpc.ssl_channel_credentials(
        root_certificates=tls.ca.read_bytes(),
        private_key=tls.key.read_bytes(),
        certificate_chain=tls.cert.read_bytes(),
    )
    options = [*_OPTIONS, ("grpc.ssl_target_name_override", expected_name)]
    return grpc.secure_channel(address, credentials, options=options)


def peer_name(context: grpc.ServicerContext) -> str | None:
    """The DNS name in the authenticated client certificate (None without TLS)."""
    auth = context.auth_context()
    names = auth.get("x509_subject_alternative_name") or auth.get("x509_common_name") or []
    return names[0].decode() if names else None
