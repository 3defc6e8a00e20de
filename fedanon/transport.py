"""gRPC servers and channels for the daemons, from the TLS files a configuration names.

Credentials, peer-name checks and caller identities come from `crypto.tls`; this module only
adds what processes need around them: loading PEM files, message-size limits, binding the
server, and the --insecure variants (no TLS at all, for local experiments only).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent import futures

import grpc
from cryptography import x509

from crypto.identity import load_identity_files
from crypto.tls import channel_credentials, peer_identity, server_credentials, target_name_options
from fedanon.tls import TLSFiles

MAX_MESSAGE_BYTES = 1 << 30
_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
]


def _ca(tls: TLSFiles) -> x509.Certificate:
    return x509.load_pem_x509_certificate(tls.ca.read_bytes())


def make_server(
    listen: str,
    tls: TLSFiles | None,
    max_workers: int = 8,
    interceptors: Sequence[grpc.ServerInterceptor] = (),
) -> tuple[grpc.Server, int]:
    """A server bound to `listen` requiring client certificates; returns it with its port.

    `interceptors` see every call with the caller's verified certificate (the leakage tests
    record the wire with one; an operator could add metrics the same way).
    """
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=max_workers),
        options=_OPTIONS,
        interceptors=list(interceptors),
    )
    if tls is None:
        return server, server.add_insecure_port(listen)
    identity = load_identity_files(tls.cert, tls.key)
    return server, server.add_secure_port(listen, server_credentials(identity, _ca(tls)))


def make_channel(address: str, expected_name: str, tls: TLSFiles | None) -> grpc.Channel:
    """A channel to `address` whose server must present a certificate for `expected_name`."""
    if tls is None:
        return grpc.insecure_channel(address, options=_OPTIONS)
    identity = load_identity_files(tls.cert, tls.key)
    return grpc.secure_channel(address, channel_credentials(identity, _ca(tls)),
                               options=[*_OPTIONS, *target_name_options(expected_name)])


def peer_name(context: grpc.ServicerContext) -> str | None:
    """The certificate name of the (TLS-authenticated) caller."""
    return peer_identity(context).name
