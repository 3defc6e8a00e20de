"""The Dask engine's cluster opens no port to the network (session 13, h-startup).

distributed starts an HTTP server in the scheduler and in every worker even with
``dashboard_address=None``: the scheduler's on port 8787 and, for an in-process cluster, on
every interface. A hospital's daemon must not listen unauthenticated on its network, so every
socket the cluster's processes (this one and its children) listen on must be loopback, and none
on 8787 (nor may it move elsewhere when 8787 is taken). Read from /proc/net/tcp{,6}: the
kernel's own table of listening sockets, matched to this process tree's descriptors.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from pathlib import Path

import pytest
from distributed import Client

from fedanon.algorithms.tds.engines.sharded import local_cluster
from tools.processes import descendants

#: The state of a listening socket in /proc/net/tcp.
LISTEN = "0A"
DASHBOARD_PORT = 8787


def _socket_inodes(pids: list[int]) -> set[str]:
    inodes = set()
    for pid in pids:
        try:
            descriptors = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            continue
        for fd in descriptors:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    return inodes


def _address(hex_address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """An address as /proc/net/tcp{,6} writes it: 32-bit words in host (little-endian) order."""
    raw = bytes.fromhex(hex_address)
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    family = socket.AF_INET if len(words) == 4 else socket.AF_INET6
    return ipaddress.ip_address(socket.inet_ntop(family, words))


def listening_sockets(root: int) -> list[tuple[str, int]]:
    """(address, port) of every TCP socket `root`'s process tree listens on."""
    inodes = _socket_inodes(descendants(root))
    found = []
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == LISTEN and fields[9] in inodes:
                address, port = fields[1].split(":")
                found.append((str(_address(address)), int(port, 16)))
    return found


def _is_loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
    return (mapped or ip).is_loopback


@pytest.mark.parametrize("workers", [0, 1], ids=["in-process", "processes"])
def test_the_engines_cluster_listens_on_loopback_only_and_not_on_8787(workers: int) -> None:
    before = set(listening_sockets(os.getpid()))
    with local_cluster(workers, shards=2) as cluster, Client(cluster) as client:
        client.wait_for_workers(1, timeout=60)
        opened = set(listening_sockets(os.getpid())) - before
    assert opened  # the scan sees the cluster's servers (at least its HTTP servers)
    public = [(a, p) for a, p in opened if not _is_loopback(a)]
    assert public == []
    assert [p for _, p in opened if p == DASHBOARD_PORT] == []
