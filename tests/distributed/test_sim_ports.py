"""The sim's listening ports are not raced (leader/ports.py; session 13, h-waits).

The sim chose a port by binding port 0 and closing it; its daemon bound the number a moment
later, exclusively. Meanwhile any outgoing connection on the machine could get that port as
its local port (the kernel picks those from the same ephemeral range) and another process
could choose it too: the daemon then failed start-up with "the port is in use". Ports are now
chosen outside the ephemeral range, and a federation whose daemon (or relay) found its port
taken starts again on fresh ports.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import grpc
import pytest

import fedanon.leader.sim as sim
from fedanon.federation.transport import make_channel
from fedanon.leader.ports import DEFAULT_EPHEMERAL, ephemeral_range, listen_candidates
from fedanon.leader.sim import federation, free_ports, split_table
from fedanon.synth import generate_hospital, hospital_taxonomy_path
from tests.harness import inprocess

RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")


@pytest.mark.skipif(not RANGE_FILE.exists(), reason="the kernel names no ephemeral range")
def test_free_ports_lie_outside_the_ephemeral_range() -> None:
    low, high = (int(word) for word in RANGE_FILE.read_text().split())
    for _ in range(20):  # a random choice: look at many
        ports = free_ports(8)
        assert len(set(ports)) == 8
        inside = [p for p in ports if low <= p <= high]
        assert inside == [], f"ports {inside} lie in the ephemeral range {low}-{high}"
        assert all(1024 <= p <= 65535 for p in ports)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (None, DEFAULT_EPHEMERAL),  # no file (not Linux)
        ("32768\t60999\n", (32768, 60999)),
        ("1024 65535", (1024, 65535)),
        ("garbage", DEFAULT_EPHEMERAL),
        ("60999 32768", DEFAULT_EPHEMERAL),
    ],
)
def test_the_ephemeral_range_is_read_or_a_safe_default(
    tmp_path: Path, text: str | None, expected: tuple[int, int]
) -> None:
    path = tmp_path / "ip_local_port_range"
    if text is not None:
        path.write_text(text)
    assert ephemeral_range(path) == expected
    candidates = listen_candidates(path)
    assert not any(expected[0] <= p <= expected[1] for p in candidates)
    assert all(1024 <= p <= 65535 for p in candidates)


def test_where_every_port_is_ephemeral_the_kernel_chooses(tmp_path: Path) -> None:
    """No port outside the range: the kernel's choice (bind port 0), distinct ports; the sim's
    retry covers a clash there."""
    whole = tmp_path / "ip_local_port_range"
    whole.write_text("1024 65535\n")
    ports = free_ports(6, whole)
    assert len(set(ports)) == 6 and all(1024 <= p <= 65535 for p in ports)


@pytest.mark.parametrize("transport", ["direct", "outbound"])
def test_the_sim_starts_on_fresh_ports_when_one_was_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, transport: str
) -> None:
    held: list[socket.socket] = []
    stolen: list[int] = []
    real = sim.free_ports

    def choose_then_steal(count: int) -> list[int]:
        ports = real(count)
        if not held:  # the first choice only: the retry's ports stay free
            which = ports[-1] if transport == "outbound" else ports[0]
            thief = socket.socket()
            thief.bind(("127.0.0.1", which))
            thief.listen(1)
            held.append(thief)
            stolen.append(which)
        return ports

    monkeypatch.setattr(sim, "free_ports", choose_then_steal)
    parts = split_table(generate_hospital(60, seed=3), 2, "random", 0)
    phases: list[str] = []
    try:
        with federation(
            parts,
            hospital_taxonomy_path(),
            secure=True,
            workdir=tmp_path,
            transport=transport,
            on_phase=phases.append,
        ) as fed:
            where = {d.address for d in fed.daemons} | {fed.relay_listen}
            assert f"127.0.0.1:{stolen[0]}" not in where
            assert all(d.process is not None and d.process.poll() is None for d in fed.daemons)
    finally:
        for s in held:
            s.close()
    assert stolen, "the race was not staged"
    assert any("again with fresh ports" in p for p in phases), phases


class _Through(grpc.ServerInterceptor):
    """Records nothing: the in-process harness wants a recorder per party."""

    def intercept_service(self, continuation: Any, handler_call_details: Any) -> Any:
        return continuation(handler_call_details)


def test_in_process_parties_start_on_fresh_ports_when_one_was_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same race for the tests' in-process daemons (tests/harness/inprocess.py)."""
    held: list[socket.socket] = []
    real = inprocess.free_ports

    def choose_then_steal(count: int) -> list[int]:
        ports = real(count)
        if not held:
            thief = socket.socket()
            thief.bind(("127.0.0.1", ports[1]))
            thief.listen(1)
            held.append(thief)
        return ports

    monkeypatch.setattr(inprocess, "free_ports", choose_then_steal)
    parts = split_table(generate_hospital(60, seed=3), 3, "random", 0)
    try:
        with inprocess.inprocess_parties(
            parts,
            tmp_path,
            monkeypatch,
            ca_name="ports test CA",
            server_interceptor=lambda _name: _Through(),
            hop_channel_factory=lambda _name: make_channel,
        ) as fed:
            stolen = held[0].getsockname()[1]
            assert [h.name for h in fed.hops] == ["hospital-1", "hospital-2", "hospital-3"]
            assert f"127.0.0.1:{stolen}" not in [h.address for h in fed.hops]
            for hop in fed.hops:  # each party listens where the ring says it does
                host, _, port = hop.address.rpartition(":")
                socket.create_connection((host, int(port)), timeout=5).close()
    finally:
        for s in held:
            s.close()
