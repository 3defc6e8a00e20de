#!/usr/bin/env python3
"""Ask a fedanon party daemon's standard gRPC health service whether it is SERVING.

Exit 0 iff the answer is SERVING, 1 otherwise (one line on stderr says why). Used as the image's
HEALTHCHECK, as the Kubernetes readiness/liveness probe, and by the leader's init container to
wait for the parties.

The call uses mutual TLS with the caller's own files, as the daemon accepts no other client:

    FEDANON_TLS_CA    default /etc/fedanon/tls/ca.crt
    FEDANON_TLS_CERT  default /etc/fedanon/tls/tls.crt
    FEDANON_TLS_KEY   default /etc/fedanon/tls/tls.key
    FEDANON_PORT      default 50051 (the port probed on 127.0.0.1 when --address is not given)

The server must present a certificate for --name; by default that is the name in our own
certificate, which is right for a daemon probing itself. The leader probes another party with
--address hospital-b:50051 --name hospital-b. Only the grpcio packages fedanon depends on are
used, so the probe keeps working while fedanon's internals change.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import grpc
from cryptography import x509
from grpc_health.v1 import health_pb2, health_pb2_grpc

DEFAULT_DIR = "/etc/fedanon/tls"
SERVICE = "fedanon.v1.Party"


def own_name(cert_pem: bytes) -> str:
    """The first SAN DNS name of our certificate (fedanon puts the holder's name there)."""
    cert = x509.load_pem_x509_certificate(cert_pem)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return names.get_values_for_type(x509.DNSName)[0]


def _read(variable: str, default_file: str) -> bytes:
    return Path(os.environ.get(variable, f"{DEFAULT_DIR}/{default_file}")).read_bytes()


def check(address: str, name: str | None, service: str, timeout: float, insecure: bool) -> str:
    """The health status name reported by `address` (raises grpc.RpcError when unreachable)."""
    if insecure:
        channel = grpc.insecure_channel(address)
    else:
        ca, cert, key = (
            _read(var, file)
            for var, file in (
                ("FEDANON_TLS_CA", "ca.crt"),
                ("FEDANON_TLS_CERT", "tls.crt"),
                ("FEDANON_TLS_KEY", "tls.key"),
            )
        )
        credentials = grpc.ssl_channel_credentials(ca, key, cert)
        # Addresses are often 127.0.0.1 or a service name: TLS checks the party's name instead.
        options = [("grpc.ssl_target_name_override", name or own_name(cert))]
        channel = grpc.secure_channel(address, credentials, options=options)
    with channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=service), timeout=timeout
        )
    return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--address", help="host:port (default 127.0.0.1:$FEDANON_PORT)")
    parser.add_argument(
        "--name",
        help="certificate name the server must present (default: the name in our own certificate)",
    )
    parser.add_argument("--service", default=SERVICE, help=f"health service name ({SERVICE})")
    parser.add_argument("--timeout", type=float, default=3.0, help="seconds per attempt")
    parser.add_argument(
        "--wait",
        type=float,
        default=0.0,
        help="keep retrying for this many seconds before giving up",
    )
    parser.add_argument("--insecure", action="store_true", help="no TLS (daemon run --insecure)")
    args = parser.parse_args(argv)
    address = args.address or f"127.0.0.1:{os.environ.get('FEDANON_PORT', '50051')}"
    deadline = time.monotonic() + args.wait
    while True:
        try:
            status = check(address, args.name, args.service, args.timeout, args.insecure)
            problem = None if status == "SERVING" else f"status {status}"
        except grpc.RpcError as exc:
            problem = f"{exc.code().name}: {exc.details()}"
        except (OSError, ValueError, x509.ExtensionNotFound, IndexError) as exc:
            print(f"health probe: cannot read TLS files: {exc}", file=sys.stderr)
            return 1
        if problem is None:
            print(f"{args.name or address}: SERVING")
            return 0
        if time.monotonic() >= deadline:
            print(
                f"health probe: {address} ({args.service}) not serving: {problem}", file=sys.stderr
            )
            return 1
        time.sleep(2)


if __name__ == "__main__":
    sys.exit(main())
