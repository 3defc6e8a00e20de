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
from tests.harness.cli import FEDANON
from tests.harness.wait import wait_until


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
    """The namespaces of one test run: one per host, addresses 192.0.2.10, .11, ... in order."""

    tag: str
    hosts: tuple[str, ...] = tuple(HOSTS)

    def ns(self, host: str) -> str:
        return f"fed{self.tag}{self.hosts.index(host)}"

    @property
    def switch(self) -> str:
        return f"fed{self.tag}sw"

    def address(self, host: str) -> str:
        return f"192.0.2.{10 + self.hosts.index(host)}"

    def switch_port(self, host: str) -> str:
        return f"f{self.tag}s{self.hosts.index(host)}"

    def create(self) -> None:
        _ip("netns", "add", self.switch)
        _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.switch, "link", "set", "br0", "up")
        for host in self.hosts:
            ns, inner, outer = (
                self.ns(host),
                f"f{self.tag}h{self.hosts.index(host)}",
                self.switch_port(host),
            )
            _ip("netns", "add", ns)
            _ip(
                "link",
                "add",
                inner,
                "netns",
                ns,
                "type",
                "veth",
                "peer",
                "name",
                outer,
                "netns",
                self.switch,
            )
            _ip("-n", ns, "link", "set", inner, "name", "eth0")
            _ip("-n", ns, "addr", "add", f"{self.address(host)}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("-n", self.switch, "link", "set", outer, "master", "br0")
            _ip("-n", self.switch, "link", "set", outer, "up")

    def cut(self, host: str) -> None:
        _ip("-n", self.switch, "link", "set", self.switch_port(host), "down")

    def destroy(self) -> None:
        for ns in [self.switch, *(self.ns(h) for h in self.hosts)]:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
            shutil.rmtree(Path("/etc/netns") / ns, ignore_errors=True)


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
        lines = [
            f'name = "{name}"',
            f'listen = "{net.address(name)}:{PORT}"',
            f'data = "{name}.csv"',
            f'taxonomy = "{taxonomy}"',
            'leader = "leader"',
        ]
        if i + 1 < len(parties):
            nxt = parties[i + 1]
            lines += ["[next_hop]", f'name = "{nxt}"', f'address = "{net.address(nxt)}:{PORT}"']
        lines += [
            "[tls]",
            'ca = "certs/ca.crt"',
            f'cert = "certs/{name}.crt"',
            f'key = "certs/{name}.key"',
            "[timeouts]",
            "rpc_seconds = 5",
            "connect_retries = 2",
        ]
        (root / f"{name}.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    job = [
        f'taxonomy = "{taxonomy}"',
        'out = "release.csv"',
        'report = "report.json"',
        "[lkc]",
        f"L = {L}",
        f"K = {K}",
        f'C = "{C}"',
        'drop = ["patient_id"]',
    ]
    for name in parties:
        job += ["[[parties]]", f'name = "{name}"', f'address = "{net.address(name)}:{PORT}"']
    job += [
        "[tls]",
        'ca = "certs/ca.crt"',
        'cert = "certs/leader.crt"',
        'key = "certs/leader.key"',
        "[timeouts]",
        "rpc_seconds = 5",
    ]
    (root / "job.toml").write_text("\n".join(job) + "\n", encoding="utf-8")


def _fedanon(net: Net, host: str, *args: str) -> list[str]:
    return ["ip", "netns", "exec", net.ns(host), *FEDANON, *args]


def _wait_for(path: Path, text: str, timeout: float) -> bool:
    return wait_until(lambda: path.exists() and text in path.read_text(errors="replace"), timeout)


def test_federation_on_separate_hosts(net: Net, tmp_path: Path) -> None:
    taxonomy = hospital_taxonomy_path()
    table = generate_hospital(40_000, seed=11).astype(str)
    _write_configs(net, tmp_path, split_table(table, 3, "random", 5), taxonomy)
    daemons: list[subprocess.Popen] = []
    try:
        for name in HOSTS[1:]:
            log = (tmp_path / f"{name}.log").open("wb")
            daemons.append(
                subprocess.Popen(
                    _fedanon(
                        net,
                        name,
                        "party",
                        "serve",
                        "--config",
                        f"{name}.toml",
                        "--log-format",
                        "json",
                    ),
                    cwd=tmp_path,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
        for name in HOSTS[1:]:
            assert _wait_for(tmp_path / f"{name}.log", "listening on port", 60), (
                tmp_path / f"{name}.log"
            ).read_text()

        # 1. A full run from the leader's host equals the centralized release.
        run = subprocess.run(
            _fedanon(net, "leader", "leader", "run", "--config", "job.toml", "--json", "--quiet"),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert run.returncode == 0, run.stderr
        report = json.loads(run.stdout)
        assert report["privacy_check"]["ok"]
        distributed = read_table(tmp_path / "release.csv")
        central = anonymize_lkc(
            table,
            build_schema(load_taxonomy(taxonomy), table.drop(columns=["patient_id"])),
            LKCParams.of(L, K, C),
            report["parameters"]["score"],
            drop=["patient_id"],
        ).table
        rows = Counter(map(tuple, distributed.astype(str).to_numpy().tolist()))
        assert rows == Counter(
            map(tuple, central[distributed.columns].astype(str).to_numpy().tolist())
        )
        print(
            f"\nrelease of {len(distributed)} rows equals the centralized release; "
            f"seconds {report['seconds']}"
        )

        # 2. Cut hospital-2's link as soon as the second session computes its first sum.
        (tmp_path / "release.csv").unlink()
        log2 = tmp_path / "hospital-2.log"
        seen = log2.read_text().count('"secure sum"')
        began = time.monotonic()
        leader = subprocess.Popen(
            _fedanon(net, "leader", "leader", "run", "--config", "job.toml", "--quiet"),
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        wait_until(lambda: log2.read_text().count('"secure sum"') > seen, interval=0.02)
        net.cut("hospital-2")
        cut_at = time.monotonic() - began
        _, err = leader.communicate(timeout=120)
        elapsed = time.monotonic() - began
        print(
            f"link cut {cut_at:.1f} s into the run; leader exited {leader.returncode} after "
            f"{elapsed:.1f} s: {err.strip()}"
        )
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


# ---------------------------------------------------------------- the three-host guide, as shown

REPO = Path(__file__).resolve().parents[2]
GUIDE_HOSTS = ("leader", "hospital-a", "hospital-b", "hospital-c")
#: What deploy/README.md ("Across three hosts", step 2) has the CA holder send to each host.
SENT = {
    "leader": ["certs/ca.crt", "certs/leader.crt", "certs/leader.key", "config/taxonomy.toml"],
    **{
        party: [
            "certs/ca.crt",
            f"certs/{party}.crt",
            f"certs/{party}.key",
            "config/taxonomy.toml",
            f"data/{party}.csv",
        ]
        for party in GUIDE_HOSTS[1:]
    },
}
GENERATED = shutil.ignore_patterns("certs", "data", "out", ".env", "taxonomy.toml")


@pytest.fixture
def guide_net() -> Iterator[Net]:
    network = Net(secrets.token_hex(2), GUIDE_HOSTS)
    try:
        network.create()
        yield network
    finally:
        network.destroy()


def _documented_service(host: str) -> dict:
    yaml = pytest.importorskip("yaml")
    doc = yaml.safe_load((REPO / "deploy" / f"compose.{host}.yaml").read_text())
    assert list(doc["services"]) == [host], f"compose.{host}.yaml runs only {host}"
    return doc["services"][host]


def _container_root(host: str, service: dict, checkout: Path, base: Path) -> Path:
    """The container's filesystem as fedanon sees it, laid out from the service's mounts.

    Only what Docker itself provides is emulated: mounted files appear at their targets, so
    absolute paths in the configs are re-rooted into this directory. Names, ports and
    everything else in the configs stay as the guide shows them.
    """
    root = base / host
    for mount in service["volumes"]:
        source = (checkout / mount["source"]).resolve()
        assert source.exists(), f"{host}: mounts {mount['source']}, which the guide never sent"
        target = root / mount["target"].lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.suffix == ".toml" and target.name != "taxonomy.toml":
            target.write_text(source.read_text().replace('"/', f'"{root}/'))
        else:
            target.symlink_to(source)
    return root


def _hosts_file(net: Net, host: str, service: dict) -> None:
    """Docker's extra_hosts become the namespace's /etc/hosts (`ip netns exec` mounts it)."""
    lines = ["127.0.0.1 localhost"]
    for entry in service.get("extra_hosts", []):
        name, address = entry.split(":")
        assert address == net.address(name), f"{host}: the guide's address for {name}"
        lines.append(f"{address} {name}")
    folder = Path("/etc/netns") / net.ns(host)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "hosts").write_text("\n".join(lines) + "\n")


def _probe(net: Net, root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    tls = root / "etc/fedanon/tls"
    env = {
        **os.environ,
        "FEDANON_TLS_CA": str(tls / "ca.crt"),
        "FEDANON_TLS_CERT": str(tls / "tls.crt"),
        "FEDANON_TLS_KEY": str(tls / "tls.key"),
    }
    return subprocess.run(
        [
            "ip",
            "netns",
            "exec",
            net.ns("leader"),
            sys.executable,
            str(REPO / "deploy/grpc_health_probe.py"),
            *args,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_three_host_guide_in_namespaces(guide_net: Net, tmp_path: Path) -> None:
    """deploy/README.md "Across three hosts", followed with the files it shows."""
    net = guide_net
    # Step 1-2: the CA holder makes the certificates (and here the trial data) ...
    ca_side = tmp_path / "ca-holder" / "deploy"
    shutil.copytree(REPO / "deploy", ca_side, ignore=GENERATED)
    for script in ("make-certs.sh", "make-demo-data.sh"):
        made = subprocess.run(
            ["sh", str(ca_side / script)],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHON": sys.executable},
            timeout=300,
        )
        assert made.returncode == 0, made.stderr
    # ... and sends each host only its files; every host has its own checkout of deploy/.
    roots, services = {}, {}
    for host in GUIDE_HOSTS:
        checkout = tmp_path / host / "deploy"
        shutil.copytree(REPO / "deploy", checkout, ignore=GENERATED)
        for name in SENT[host]:
            (checkout / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ca_side / name, checkout / name)
        (checkout / "out").mkdir()
        services[host] = _documented_service(host)
        roots[host] = _container_root(host, services[host], checkout, tmp_path / "roots")
        _hosts_file(net, host, services[host])
    for party in GUIDE_HOSTS[1:]:
        assert services[party]["ports"] == ["50051:50051"], f"{party} publishes its port"
    assert "ports" not in services["leader"]

    daemons: list[subprocess.Popen] = []
    try:
        # Step 4: each hospital starts its party (the compose command, in its own host).
        for party in GUIDE_HOSTS[1:]:
            command = [
                str(roots[party] / a.lstrip("/")) if a.startswith("/etc/") else a
                for a in services[party]["command"]
            ]
            log = (tmp_path / f"{party}.log").open("wb")
            daemons.append(
                subprocess.Popen(
                    _fedanon(net, party, *command),
                    cwd=tmp_path,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
        # Step 5: from the leader's host, every party answers SERVING over mutual TLS ...
        for party in GUIDE_HOSTS[1:]:
            ready = _probe(
                net, roots["leader"], "--address", f"{party}:50051", "--name", party, "--wait", "60"
            )
            assert ready.returncode == 0, ready.stderr + (tmp_path / f"{party}.log").read_text()
        # ... and a certificate from another CA is refused.
        rogue = tmp_path / "rogue"
        save_ca(rogue_ca := create_ca("not the federation"), rogue / "etc/fedanon/tls")
        save_identity(issue_identity(rogue_ca, "leader", "leader"), rogue / "etc/fedanon/tls")
        for name, target in (("leader.crt", "tls.crt"), ("leader.key", "tls.key")):
            (rogue / "etc/fedanon/tls" / name).rename(rogue / "etc/fedanon/tls" / target)
        refused = _probe(net, rogue, "--address", "hospital-a:50051", "--name", "hospital-a")
        assert refused.returncode != 0
        # Step 6: the leader runs one job over the hospitals' published ports.
        command = [
            str(roots["leader"] / a.lstrip("/")) if a.startswith("/etc/") else a
            for a in services["leader"]["command"]
        ]
        run = subprocess.run(
            _fedanon(net, "leader", *command, "--quiet"),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert run.returncode == 0, run.stderr
        out = tmp_path / "leader" / "deploy" / "out"
        report = json.loads((out / "report.json").read_text())
        assert report["privacy_check"]["ok"]
        assert report["parties"] == list(GUIDE_HOSTS[1:])
        assert report["records"] == 6000
        assert len(read_table(out / "release.csv")) == 6000
        print(
            f"\nthree-host guide: {report['records']} records released, seconds {report['seconds']}"
        )
    finally:
        for process in daemons:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in daemons:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
