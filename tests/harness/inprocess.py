"""Production party daemons started inside the test process, with recorders on the wire ends.

The leakage and privacy tests (distributed LKC, vertical DRBT) need to see every message a
party receives and sends, so they run the parties in-process. What is shared lives here: every
daemon is built by the real :func:`fedanon.party.daemon.build_server` from a real ``party.toml``
with real mutual TLS; the only substitutions are the ``make_server`` it calls (the production
:func:`fedanon.federation.transport.make_server` plus the test's server interceptor) and the
``make_channel`` for its next hop (the production channel wrapped by the test's client
interceptor). ``monkeypatch`` raises on a missing attribute, so a rename fails loudly instead of
silently recording nothing. The recorders are tests/harness/wire.py's; each test module brings
its own oracles.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pandas as pd
import pytest

import fedanon.party.daemon
from fedanon.federation.config import Hop
from fedanon.federation.tls import TLSFiles
from fedanon.federation.transport import make_server
from fedanon.leader.ports import PORT_IN_USE
from fedanon.leader.sim import (
    LEADER_NAME,
    PORT_ATTEMPTS,
    free_ports,
    issue_federation_certificates,
    write_party_config,
)
from fedanon.party.config import PartyConfig


def _recorded_server(
    listen: str,
    tls: TLSFiles | None,
    *,
    recorder: grpc.ServerInterceptor,
    interceptors: Sequence[grpc.ServerInterceptor] = (),
    **kwargs: Any,
) -> tuple[grpc.Server, int]:
    """The production ``make_server`` with the test's recorder inside the daemon's own
    interceptors (its gate), so the recorder sees exactly the requests the handlers see."""
    return make_server(listen, tls, interceptors=[*interceptors, recorder], **kwargs)


@dataclass
class InProcessParties:
    """The started parties: ring order, certificates, the leader's TLS files, the servicers."""

    hops: list[Hop]
    cert_dir: Path
    leader_tls: TLSFiles
    servicers: dict[str, Any]
    servers: dict[str, grpc.Server]  # a test may stop one for good (a party that dropped out)


@contextlib.contextmanager
def inprocess_parties(
    parts: list[pd.DataFrame],
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    ca_name: str,
    server_interceptor: Callable[[str], grpc.ServerInterceptor],
    hop_channel_factory: Callable[[str], Callable[..., grpc.Channel]],
    taxonomy_of: Callable[[int], Path | None] = lambda _index: None,
) -> Iterator[InProcessParties]:
    """One production daemon per part (names hospital-1..n, mutual TLS), stopped on exit.

    `server_interceptor(name)` and `hop_channel_factory(name)` (a drop-in ``make_channel``,
    usually the production one wrapped by ``grpc.intercept_channel``) give each party its
    recorders;
    `taxonomy_of(index)` its taxonomy file (LKC). Each party's output directory is
    ``<workdir>/<name>-out``.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    names = [f"hospital-{i + 1}" for i in range(len(parts))]
    cert_dir = workdir / "certs"
    issue_federation_certificates(cert_dir, names, ca_name)
    for attempt in range(1, PORT_ATTEMPTS + 1):
        ports = free_ports(len(parts))
        hops = [Hop(n, f"127.0.0.1:{p}") for n, p in zip(names, ports, strict=True)]
        servers: list[grpc.Server] = []
        servicers: dict[str, Any] = {}
        try:
            for i, (name, part) in enumerate(zip(names, parts, strict=True)):
                server, servicer = _start_party(
                    workdir, name, part, ports[i], hops[i + 1] if i + 1 < len(hops) else None,
                    cert_dir, taxonomy_of(i), monkeypatch, server_interceptor(name),
                    hop_channel_factory(name),
                )  # fmt: skip
                servers.append(server)
                servicers[name] = servicer
            break
        except BaseException as exc:
            _stop(servers, servicers)
            # A port taken between its choice and the bind (leader/ports.py): fresh ports.
            if PORT_IN_USE not in str(exc) or attempt == PORT_ATTEMPTS:
                raise
    try:
        tls = TLSFiles(
            cert_dir / "ca.crt", cert_dir / f"{LEADER_NAME}.crt", cert_dir / f"{LEADER_NAME}.key"
        )
        yield InProcessParties(
            hops, cert_dir, tls, servicers, dict(zip(names, servers, strict=True))
        )
    finally:
        _stop(servers, servicers)


def _start_party(
    workdir: Path,
    name: str,
    part: pd.DataFrame,
    port: int,
    next_hop: Hop | None,
    cert_dir: Path,
    taxonomy: Path | None,
    monkeypatch: pytest.MonkeyPatch,
    recorder: grpc.ServerInterceptor,
    make_hop_channel: Callable[..., grpc.Channel],
) -> tuple[grpc.Server, Any]:
    """One production daemon, started, with the test's recorders (see :func:`inprocess_parties`)."""
    data = workdir / f"{name}.csv"
    part.to_csv(data, index=False)
    config = workdir / f"{name}.toml"
    write_party_config(
        config,
        name,
        port,
        data,
        taxonomy.resolve() if taxonomy else None,
        next_hop,
        cert_dir,
        rpc_seconds=30.0,
    )
    with monkeypatch.context() as build:
        build.setattr(
            fedanon.party.daemon,
            "make_server",
            functools.partial(_recorded_server, recorder=recorder),
        )
        build.setattr(fedanon.party.daemon, "make_channel", make_hop_channel)
        server, _port, servicer = fedanon.party.daemon.build_server(PartyConfig.load(config))
    server.start()
    return server, servicer


def _stop(servers: list[grpc.Server], servicers: dict[str, Any]) -> None:
    # Waited for: a server still shutting down would serve on into the next test.
    for stopped in [server.stop(None) for server in servers]:
        stopped.wait()
    for servicer in servicers.values():
        servicer.close()
