"""The compose deployment run for real on loopback: configs, scripts, health probe, leader.

There is no Docker engine here, so each compose service is emulated by a directory laid out as
its container sees it: every file compose.yaml mounts is a symlink at its target path, and the
service's config is copied with only what Docker changes rewritten (absolute paths re-rooted into
that directory, service names and port 50051 replaced by loopback ports). The daemons and the
leader then run the very commands compose.yaml gives them, and the health probe runs as the
image's HEALTHCHECK does. Certificates and data come from deploy/make-certs.sh and
deploy/make-demo-data.sh, run on a copy of deploy/.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from fedanon.leader.ports import free_ports
from tests.harness.cli import FEDANON

yaml = pytest.importorskip("yaml")
pytestmark = pytest.mark.slow  # ~50 s: every `fedanon` start-up imports pandas

REPO = Path(__file__).resolve().parents[2]
PARTIES = ["hospital-a", "hospital-b", "hospital-c"]
PROBE = [sys.executable, str(REPO / "deploy/grpc_health_probe.py")]


@dataclass
class Service:
    name: str
    root: Path  # the container's filesystem as far as fedanon sees it
    command: list[str]
    port: int = 0

    def tls_env(self) -> dict[str, str]:
        tls = self.root / "etc/fedanon/tls"
        return {
            **os.environ,
            "FEDANON_TLS_CA": str(tls / "ca.crt"),
            "FEDANON_TLS_CERT": str(tls / "tls.crt"),
            "FEDANON_TLS_KEY": str(tls / "tls.key"),
            "FEDANON_PORT": str(self.port),
        }

    def probe(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*PROBE, *args],
            env=self.tls_env(),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )


def run_script(deploy: Path, script: str, **env: str) -> None:
    result = subprocess.run(
        ["sh", str(deploy / script)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def emulate(deploy: Path, name: str, spec: dict, ports: dict[str, int], base: Path) -> Service:
    """Lay out `name`'s container filesystem under base/name from its compose `volumes`."""
    root = base / name
    for mount in spec["volumes"]:
        target = root / mount["target"].lstrip("/")
        source = (deploy / mount["source"]).resolve()
        assert source.exists(), f"{name}: compose mounts {mount['source']}, which is missing"
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.name.endswith(".toml") and target.name != "taxonomy.toml":
            text = source.read_text().replace('"/', f'"{root}/')
            text = text.replace('"0.0.0.0:50051"', f'"127.0.0.1:{ports.get(name, 0)}"')
            for party, port in ports.items():
                text = text.replace(f'"{party}:50051"', f'"127.0.0.1:{port}"')
            target.write_text(text)
        else:
            target.symlink_to(source)
    command = [
        str(root / a.lstrip("/")) if a.startswith("/etc/fedanon/") else a for a in spec["command"]
    ]
    return Service(name, root, command, ports.get(name, 0))


class Federation:
    """The emulated services of one deploy/ copy; the party daemons run as subprocesses."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.deploy = base / "deploy"
        shutil.copytree(
            REPO / "deploy",
            self.deploy,
            ignore=shutil.ignore_patterns("certs", "data", "out", ".env", "taxonomy.toml"),
        )
        self.make_certs()
        run_script(self.deploy, "make-demo-data.sh", PYTHON=sys.executable)
        compose = yaml.safe_load((self.deploy / "compose.yaml").read_text())["services"]
        ports = dict(zip(PARTIES, free_ports(len(PARTIES)), strict=True))
        self.services = {
            n: emulate(self.deploy, n, compose[n], ports, base / "roots") for n in compose
        }
        self.processes: dict[str, subprocess.Popen] = {}

    def make_certs(self) -> None:
        run_script(self.deploy, "make-certs.sh", FEDANON=" ".join(FEDANON))

    def start(self, party: str) -> None:
        """Start the daemon and wait as compose does (depends_on: service_healthy)."""
        log_path = self.base / f"{party}.log"
        with log_path.open("ab") as log:
            self.processes[party] = subprocess.Popen(
                [*FEDANON, *self.services[party].command],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        ready = self.services[party].probe("--wait", "60")
        assert ready.returncode == 0, ready.stderr + log_path.read_text()

    def stop(self, party: str) -> None:
        process = self.processes.pop(party)
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def federation(tmp_path_factory: pytest.TempPathFactory):
    fed = Federation(tmp_path_factory.mktemp("federation"))
    try:
        for party in PARTIES:
            fed.start(party)
        yield fed
    finally:
        for party in list(fed.processes):
            fed.stop(party)


def test_make_certs_gives_each_service_its_own_certificate(federation) -> None:
    from cryptography import x509

    deploy, services = federation.deploy, federation.services
    for name, service in services.items():
        cert = x509.load_pem_x509_certificate(
            (service.root / "etc/fedanon/tls/tls.crt").read_bytes()
        )
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert san.get_values_for_type(x509.DNSName) == [name]
        assert oct((deploy / f"certs/{name}.key").stat().st_mode & 0o777) == "0o600"
    env = (deploy / ".env").read_text()
    assert "FEDANON_UID=" in env and "FEDANON_UID=0\n" not in env


def test_healthcheck_reports_serving(federation) -> None:
    services = federation.services
    for party in PARTIES:
        result = services[party].probe()  # exactly the image's HEALTHCHECK
        assert result.returncode == 0, result.stderr
        assert "SERVING" in result.stdout
        assert services[party].probe("--service", "").returncode == 0


def test_party_status_works_inside_the_container(federation) -> None:
    # README: `docker compose exec hospital-a fedanon party status --config ...`
    command = [
        *FEDANON,
        "party",
        "status",
        "--config",
        federation.services["hospital-a"].command[-1],
        "--json",
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["party"] == "hospital-a"


def test_probe_fails_for_the_wrong_party_name(federation) -> None:
    services = federation.services
    result = services["hospital-a"].probe("--name", "hospital-b")
    assert result.returncode == 1 and "not serving" in result.stderr


def test_probe_fails_when_nothing_listens(federation) -> None:
    services = federation.services
    result = services["hospital-a"].probe("--address", f"127.0.0.1:{free_ports(1)[0]}")
    assert result.returncode == 1 and "UNAVAILABLE" in result.stderr


def test_probe_fails_with_a_certificate_from_another_ca(federation, tmp_path: Path) -> None:
    services = federation.services
    other = tmp_path / "other"
    for args in (["init"], ["issue", "hospital-a", "--role", "party"]):
        subprocess.run(
            [*FEDANON, "certs", *args, "--dir", str(other)], check=True, capture_output=True
        )
    env = {
        **services["hospital-a"].tls_env(),
        "FEDANON_TLS_CA": str(other / "ca.crt"),
        "FEDANON_TLS_CERT": str(other / "hospital-a.crt"),
        "FEDANON_TLS_KEY": str(other / "hospital-a.key"),
    }
    result = subprocess.run(PROBE, env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 1


def test_probe_fails_without_tls_files(federation, tmp_path: Path) -> None:
    services = federation.services
    env = {**services["hospital-a"].tls_env(), "FEDANON_TLS_KEY": str(tmp_path / "missing")}
    result = subprocess.run(PROBE, env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 1 and "cannot read TLS files" in result.stderr


def test_leader_can_wait_for_every_party(federation) -> None:
    # What the Kubernetes Job's init container runs, with the leader's certificate.
    services = federation.services
    for party in PARTIES:
        result = services["leader"].probe(
            "--address", f"127.0.0.1:{services[party].port}", "--name", party
        )
        assert result.returncode == 0, result.stderr


def test_leader_run_writes_release_and_report(federation) -> None:
    deploy, services = federation.deploy, federation.services
    leader = services["leader"]
    result = subprocess.run(
        [*FEDANON, *leader.command], capture_output=True, text=True, timeout=600, check=False
    )
    assert result.returncode == 0, result.stderr
    report = json.loads((deploy / "out/report.json").read_text())
    assert report["parties"] == PARTIES
    assert report["records"] == 6000
    assert report["privacy_check"]["ok"] is True
    header = (deploy / "out/release.csv").read_text().splitlines()[0]
    assert "patient_id" not in header and "diagnosis" in header


def test_leader_names_the_party_it_cannot_reach(federation, tmp_path: Path) -> None:
    deploy, services = federation.deploy, federation.services
    job = Path(services["leader"].command[-1])
    broken = job.with_name("job-b-down.toml")
    text = job.read_text().replace(
        f"127.0.0.1:{services['hospital-b'].port}", f"127.0.0.1:{free_ports(1)[0]}"
    )
    broken.write_text(text.replace("/out/release.csv", "/out/never.csv"))
    result = subprocess.run(
        [*FEDANON, "leader", "run", "--config", str(broken)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode != 0
    assert "hospital-b" in result.stderr, result.stderr
    assert not (deploy / "out/never.csv").exists()


def test_rotating_a_party_certificate(federation) -> None:
    # deploy/README.md: remove the old pair, reissue from the same CA, restart that party only.
    from cryptography import x509

    services = federation.services
    cert = federation.deploy / "certs/hospital-b.crt"
    old = x509.load_pem_x509_certificate(cert.read_bytes()).serial_number
    cert.unlink()
    (federation.deploy / "certs/hospital-b.key").unlink()
    federation.make_certs()
    assert x509.load_pem_x509_certificate(cert.read_bytes()).serial_number != old
    federation.stop("hospital-b")
    federation.start("hospital-b")
    # The leader and hospital-a (its ring predecessor) trust it without any change.
    for caller in ("leader", "hospital-a"):
        result = services[caller].probe(
            "--address", f"127.0.0.1:{services['hospital-b'].port}", "--name", "hospital-b"
        )
        assert result.returncode == 0, result.stderr
