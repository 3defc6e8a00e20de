"""Listening ports for a simulated federation, chosen where nothing else takes them meanwhile.

A port that is free when it is chosen must stay free until the daemon binds it a moment later,
and the daemon binds exclusively (federation/transport.py). Two things can take it in between:

* any outgoing connection on the machine: the kernel gives it a local port from the ephemeral
  range (Linux: ``/proc/sys/net/ipv4/ip_local_port_range``), and a test suite makes thousands.
  The old choice (bind port 0, close, hand the number on) picked from exactly that range. So
  ports are chosen OUTSIDE it, where no connection's local port ever lands;
* another process choosing ports the same way at the same time (xdist workers, two sims): the
  choice is random over some thirty thousand ports, so a clash is rare, and the sim
  (leader/sim.py) restarts a federation whose daemon found its port in use with fresh ports.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

#: Where Linux says which local ports outgoing connections get.
EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
#: Without that file (not Linux): avoid both Linux's default range and IANA's dynamic ports
#: (49152-65535: BSD, macOS, Windows) by avoiding their union.
DEFAULT_EPHEMERAL = (32768, 65535)
#: The lowest port chosen: below 1024 needs privileges.
LOWEST_PORT = 1024
#: What every "cannot listen" message of the daemon, its CLI and the relay says when the port is
#: taken (party/daemon.py, fedanon/cli/party.py, leader/relay.py): the one failure a fresh port
#: cures.
PORT_IN_USE = "the port is in use"


def ephemeral_range(path: Path = EPHEMERAL_RANGE_FILE) -> tuple[int, int]:
    """The local port range of outgoing connections (inclusive); a sensible default where the
    kernel does not say (no /proc, unreadable, malformed)."""
    try:
        low, high = (int(word) for word in path.read_text().split())
    except (OSError, ValueError):
        return DEFAULT_EPHEMERAL
    return (low, high) if low <= high else DEFAULT_EPHEMERAL


def listen_candidates(path: Path = EPHEMERAL_RANGE_FILE) -> list[int]:
    """Every unprivileged port outside the ephemeral range."""
    low, high = ephemeral_range(path)
    return [p for p in range(LOWEST_PORT, 65536) if not low <= p <= high]


def _free(port: int) -> bool:
    """Whether `port` can be bound exclusively on loopback right now (nobody listens on it)."""
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_ports(count: int, range_file: Path = EPHEMERAL_RANGE_FILE) -> list[int]:
    """`count` distinct ports free right now on 127.0.0.1, outside the ephemeral range that
    `range_file` names (the daemons bind them a moment later; the module docstring says why
    there)."""
    candidates = listen_candidates(range_file)
    if len(candidates) < count:  # the whole range is ephemeral: only the kernel's choice is left
        return _kernel_ports(count)
    chosen: list[int] = []
    for port in random.SystemRandom().sample(candidates, len(candidates)):
        if _free(port):
            chosen.append(port)
            if len(chosen) == count:
                return chosen
    return _kernel_ports(count)


def _kernel_ports(count: int) -> list[int]:
    """Ports the kernel picks (bind port 0): in the ephemeral range, so the sim's retry covers
    a clash. Used only where no port lies outside it."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()
