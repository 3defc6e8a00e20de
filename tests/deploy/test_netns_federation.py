"""A 3-hospital federation on separate hosts: one Linux network namespace per party and one for
the leader, joined by veth pairs to a bridge that lives in its own namespace.

Addresses come from the documentation range 192.0.2.0/24 and exist only inside these
namespaces: nothing is routed to or from the machine's own network. The test starts the party
daemons inside their namespaces, runs the leader from its namespace over mutual TLS, compares
the release with the centralized one, then cuts hospital-2's link in the middle of a second run
and checks the abort: non-zero exit naming the party, no output file. Everything is torn down.

Needs root and `ip netns` (CI runs as root); otherwise it is skipped with the reason printed.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from fedanon.algorithms.tds.api import anonymize_lkc, build_schema
from fedanon.crypto.identity import create_ca, issue_identity, save_ca, save_identity
from fedanon.leader.sim import split_table
from fedanon.readers.table_io import read_table
from fedanon.schema import LKCParams
from fedanon.synth import generate_hospital, hospital_taxonomy_path
from fedanon.taxonomy.loader import load_taxonomy


def _can_use_netns() -> str | None:
    """None when namespaces can be made here, else why not."""
    if os.geteuid() != 0:
        return "needs root to create network namespaces"
    if shutil.which("ip") is None:
        return "needs iproute2 (`ip`)"
    probe = f"fedprobe{secrets.token_hex(3)}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"cannot create a network namespace: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


WHY_NOT = _can_use_netns()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(WHY_NOT is not None, reason=str(WHY_NOT))]

HOSTS = ["leader", "hospital-1", "hospital-2", "hospital-3"]
PORT = 50051
L, K, C = 3, 10, "0.25"


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@dataclass
class Net:
    """The namespaces of one test run."""

    tag: str

    def ns(self, host: str) -> str:
        return f"fed{self.tag}{HOSTS.index(host)}"

    @property
    def switch(self) -> str:
        return f"fed{self.tag}sw"

    def address(self, host: str) -> str:
        return f"192.0.2.{10 + HOSTS.index(host)}"

    def switch_port(self, host: str) -> str:
        return f"f{self.tag}s{HOSTS.index(host)}"

    def create(self) -> None:
        _ip("netns", "add", self.switch)
        _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.switch, "link", "set", "br0", "up")
        for host in HOSTS:
            ns, inner, outer = self.ns(host), f"f{self.tag}h{HOSTS.index(host)}", \
                self.switch_port(host)
            _ip("netns", "add", ns)
            _ip("link", "add", inner, "netns", ns, "type", "veth", "peer", "name", outer,
                "netns", self.switch)
            _ip("-n", ns, "link", "set", inner, "name", "eth0")
            _ip("-n", ns, "addr", "add", f"{self.address(host)}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("-n", self.switch, "link", "set", outer, "master", "br0")
            _ip("-n", self.switch, "link", "set", outer, "up")

    def cut(self, host: str) -> None:
        _ip("-n", self.switch, "link", "set", self.switch_port(host), "down")

    def destroy(self) -> None:
        for ns in [self.switch, *(self.ns(h) for h in HOSTS)]:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


@pytest.fixture
def net() -> Iterator[Net]:
    network = Net(secrets.token_hex(2))
    try:
        network.create()
        yield network
    finally:
        network.destroy()


def _write_configs(net: Net, root: Path, parts: list, taxonomy: Path) -> None:
    certs = root / "certs"
    ca = create_ca("fedanon netns test CA")
    save_ca(ca, certs)
    for host in HOSTS:
        save_identity(issue_identity(ca, host, "leader" if host == "leader" else "party"), certs)
    parties = HOSTS[1:]
    for i, (name, part) in enumerate(zip(parties, parts, strict=True)):
        part.to_csv(root / f"{name}.csv", index=False)
        lines = [f'name = "{name}"', f'listen = "{net.address(name)}:{PORT}"',
                 f'data = "{name}.csv"', f'taxonomy = "{taxonomy}"', 'leader = "leader"']
        if i + 1 < len(parties):
            nxt = parties[i + 1]
            lines += ["[next_hop]", f'name = "{nxt}"', f'address = "{net.address(nxt)}:{PORT}"']
        lines += ["[tls]", 'ca = "certs/ca.crt"', f'cert = "certs/{name}.crt"',
                  f'key = "certs/{name}.key"', "[timeouts]", "rpc_seconds = 5",
                  "connect_retries = 2"]
        (root / f"{name}.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    job = [f'taxonomy = "{taxonomy}"', 'out = "release.csv"', 'report = "report.json"',
           "[lkc]", f"L = {L}", f"K = {K}", f'C = "{C}"', 'drop = ["patient_id"]']
    for name in parties:
        job += ["[[parties]]", f'name = "{name}"', f'address = "{net.address(name)}:{PORT}"']
    job += ["[tls]", 'ca = "certs/ca.crt"', 'cert = "certs/leader.crt"',
            'key = "certs/leader.key"', "[timeouts]", "rpc_seconds = 5"]
    (root / "job.toml").write_text("\n".join(job) + "\n", encoding="utf-8")


def _fedanon(net: Net, host: str, *args: str) -> list[str]:
    return ["ip", "netns", "exec", net.ns(host), sys.executable, "-m", "fedanon.cli.main", *args]


def _wait_for(path: Path, text: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text(errors="replace"):
            return True
        time.sleep(0.05)
    return False


def test_federation_on_separate_hosts(net: Net, tmp_path: Path) -> None:
    taxonomy = hospital_taxonomy_path()
    table = generate_hospital(40_000, seed=11).astype(str)
    _write_configs(net, tmp_path, split_table(table, 3, "random", 5), taxonomy)
    daemons: list[subprocess.Popen] = []
    try:
        for name in HOSTS[1:]:
            log = (tmp_path / f"{name}.log").open("wb")
            daemons.append(subprocess.Popen(
                _fedanon(net, name, "party", "serve", "--config", f"{name}.toml",
                         "--log-format", "json"),
                cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        for name in HOSTS[1:]:
            assert _wait_for(tmp_path / f"{name}.log", "listening on port", 60), \
                (tmp_path / f"{name}.log").read_text()

        # 1. A full run from the leader's host equals the centralized release.
        run = subprocess.run(_fedanon(net, "leader", "leader", "run", "--config", "job.toml",
                                      "--json", "--quiet"),
                             cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr
        report = json.loads(run.stdout)
        assert report["privacy_check"]["ok"]
        distributed = read_table(tmp_path / "release.csv")
        central = anonymize_lkc(
            table, build_schema(load_taxonomy(taxonomy), table.drop(columns=["patient_id"])),
            LKCParams.of(L, K, C), report["parameters"]["score"], drop=["patient_id"]).table
        rows = Counter(map(tuple, distributed.astype(str).to_numpy().tolist()))
        assert rows == Counter(map(tuple, central[distributed.columns].astype(str)
                                   .to_numpy().tolist()))
        print(f"\nrelease of {len(distributed)} rows equals the centralized release; "
              f"seconds {report['seconds']}")

        # 2. Cut hospital-2's link as soon as the second session computes its first sum.
        (tmp_path / "release.csv").unlink()
        log2 = tmp_path / "hospital-2.log"
        seen = log2.read_text().count('"secure sum"')
        began = time.monotonic()
        leader = subprocess.Popen(_fedanon(net, "leader", "leader", "run", "--config", "job.toml",
                                           "--quiet"),
                                  cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        deadline = time.monotonic() + 60
        while log2.read_text().count('"secure sum"') <= seen and time.monotonic() < deadline:
            time.sleep(0.02)
        net.cut("hospital-2")
        cut_at = time.monotonic() - began
        _, err = leader.communicate(timeout=120)
        elapsed = time.monotonic() - began
        print(f"link cut {cut_at:.1f} s into the run; leader exited {leader.returncode} after "
              f"{elapsed:.1f} s: {err.strip()}")
        assert leader.returncode not in (0, None)
        assert "hospital-2" in err
        assert not (tmp_path / "release.csv").exists()
        assert elapsed - cut_at < 30, "the abort must come within the deadlines"
    finally:
        for process in daemons:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in daemons:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
