"""Static validation of deploy/k8s-outbound/: the Kubernetes manifests of outbound mode.

In outbound mode (deploy/README.md 3d and 4b) no hospital may expose a port: no Service selects
a party pod, no party container declares a port, the NetworkPolicy lets nothing in to a party
and lets a party out only to the leader's relay (and DNS, to find it); the relay's Service is
the one address the parties' configs name. The configs are deploy/config/'s with only the
transport keys changed, load with fedanon's own loaders, and each daemon's union workers match
its CPU limit with the idle-key pool stated. Every rule is shown to reject a broken copy.
"""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.test_manifests import (
    CONFIGS,
    DEPLOY,
    K8S,
    PARTIES,
    cpu_problems,
    k8s_docs,
    k8s_schema_errors,
    pod_specs,
    relocated_configs,
)

OUTBOUND = DEPLOY / "k8s-outbound"
RELAY_SERVICE, RELAY_PORT = "fedanon-relay", 50050
RELAY = f"{RELAY_SERVICE}:{RELAY_PORT}"
# What outbound mode changes in a config (deploy/README.md 3d); everything else must stay.
PARTY_KEYS = {"listen", "transport", "relay"}
JOB_KEYS = {"transport", "relay_listen"}
DNS = {("UDP", 53), ("TCP", 53)}


def outbound_docs() -> list[tuple[Path, dict]]:
    """What `kubectl apply` gets in outbound mode: deploy/k8s's namespace, storage and secret
    templates, then deploy/k8s-outbound/."""
    shared = [
        (p, d)
        for p, d in k8s_docs()
        if p.parent == K8S / "templates" or p.name in ("00-namespace.yaml", "20-storage.yaml")
    ]
    return shared + k8s_docs(OUTBOUND)


def keyed(docs: list[tuple[Path, dict]]) -> dict[tuple[str, str], dict]:
    return {(d["kind"], d["metadata"]["name"]): d for _, d in docs}


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return selector.items() <= labels.items()


def _without(doc: dict[str, Any], keys: set[str]) -> dict[str, Any]:
    """A parsed config without the transport keys and the addresses outbound mode drops."""
    plain = {k: v for k, v in doc.items() if k not in keys}
    if "next_hop" in plain:
        plain["next_hop"] = {k: v for k, v in plain["next_hop"].items() if k != "address"}
    if "parties" in plain:
        plain["parties"] = [
            {k: v for k, v in p.items() if k != "address"} for p in plain["parties"]
        ]
    return plain


def config_problems(configs: dict[str, str]) -> list[str]:
    """The outbound configs against deploy/config/: only the transport keys differ."""
    problems = []
    for name in CONFIGS:
        if name not in configs:
            problems.append(f"{name}: missing from fedanon-config")
            continue
        ours = tomllib.loads(configs[name])
        direct = tomllib.loads((DEPLOY / "config" / name).read_text())
        if ours.get("transport") != "outbound":
            problems.append(f"{name}: transport is {ours.get('transport')!r}, not 'outbound'")
        if name == "job.toml":
            if ours.get("relay_listen", "").rpartition(":")[2] != str(RELAY_PORT):
                problems.append(f"job.toml: relay_listen is not on port {RELAY_PORT}")
            if any("address" in p for p in ours.get("parties", [])):
                problems.append("job.toml: a party has an address")
            keys = JOB_KEYS
        else:
            if "listen" in ours:
                problems.append(f"{name}: listens on {ours['listen']}")
            if ours.get("relay") != RELAY:
                problems.append(f"{name}: relay is {ours.get('relay')!r}, not {RELAY!r}")
            if "address" in ours.get("next_hop", {}):
                problems.append(f"{name}: its next hop has an address")
            keys = PARTY_KEYS
        if _without(ours, keys) != _without(direct, keys):
            problems.append(f"{name}: differs from deploy/config/{name} beyond the transport")
    return problems


def _party_pods(kinds: dict) -> list[dict]:
    return [
        d["spec"]["template"]
        for (k, _n), d in kinds.items()
        if k == "Deployment"
        and d["spec"]["template"]["metadata"]["labels"].get("app.kubernetes.io/component")
        == "party"
    ]


def _ports(rule: dict) -> set[tuple[str, int]]:
    return {(p.get("protocol", "TCP"), p.get("port")) for p in rule.get("ports", [])}


def network_problems(kinds: dict) -> list[str]:
    """Nothing reaches a party; a party reaches only the relay's pods on its port (and DNS)."""
    problems = []
    leader_labels = (
        kinds.get(("Job", "fedanon-leader"), {})
        .get("spec", {})
        .get("template", {})
        .get("metadata", {})
        .get("labels", {})
    )
    party_labels = [pod["metadata"]["labels"] for pod in _party_pods(kinds)]
    policies = [d for (k, _n), d in kinds.items() if k == "NetworkPolicy"]
    for labels in party_labels:
        name = labels.get("app.kubernetes.io/instance")
        mine = [p for p in policies if selects(p["spec"]["podSelector"]["matchLabels"], labels)]
        if not any("Egress" in p["spec"].get("policyTypes", []) for p in mine):
            problems.append(f"{name}: no NetworkPolicy limits its egress")
        if not any("Ingress" in p["spec"].get("policyTypes", []) for p in mine):
            problems.append(f"{name}: no NetworkPolicy limits its ingress")
        for policy in mine:
            if policy["spec"].get("ingress"):
                problems.append(f"{name}: {policy['metadata']['name']} lets connections in")
            for rule in policy["spec"].get("egress", []):
                peers = rule.get("to", [])
                ports = _ports(rule)
                to_relay = (
                    peers
                    and all(
                        set(peer) == {"podSelector"}
                        and selects(peer["podSelector"].get("matchLabels", {}), leader_labels)
                        for peer in peers
                    )
                    and ports == {("TCP", RELAY_PORT)}
                )
                to_dns = (
                    peers
                    and all("ipBlock" not in peer and "namespaceSelector" in peer for peer in peers)
                    and ports
                    and ports <= DNS
                )
                if not (to_relay or to_dns):
                    problems.append(
                        f"{name}: {policy['metadata']['name']} allows egress beyond the relay"
                    )
    return problems


def outbound_problems(docs: list[tuple[Path, dict]]) -> list[str]:
    """The outbound federation's rules for the manifests."""
    problems = []
    kinds = keyed(docs)
    for pod in _party_pods(kinds):
        name = pod["metadata"]["labels"].get("app.kubernetes.io/instance")
        spec = pod["spec"]
        if spec.get("hostNetwork"):
            problems.append(f"{name}: uses the host's network")
        for c in spec.get("initContainers", []) + spec["containers"]:
            if c.get("ports"):
                problems.append(f"{name}/{c['name']}: declares ports {c['ports']}")
        for (kind, svc), d in kinds.items():
            if kind == "Service" and selects(
                d["spec"].get("selector", {}), pod["metadata"]["labels"]
            ):
                problems.append(f"{name}: Service {svc} exposes it")
    if (
        sorted(
            p["metadata"]["labels"].get("app.kubernetes.io/instance") for p in _party_pods(kinds)
        )
        != PARTIES
    ):
        problems.append(f"the party Deployments are not {PARTIES}")
    relay = kinds.get(("Service", RELAY_SERVICE))
    job = kinds.get(("Job", "fedanon-leader"))
    if relay is None or job is None:
        problems.append(f"Service {RELAY_SERVICE} or the leader Job missing")
    else:
        template = job["spec"]["template"]
        if not selects(relay["spec"]["selector"], template["metadata"]["labels"]):
            problems.append(f"Service {RELAY_SERVICE} selects no leader pod")
        named = {
            p["name"]: p["containerPort"]
            for p in template["spec"]["containers"][0].get("ports", [])
        }
        targets = [
            (p["port"], named.get(p["targetPort"], p["targetPort"])) for p in relay["spec"]["ports"]
        ]
        if targets != [(RELAY_PORT, RELAY_PORT)]:
            problems.append(
                f"Service {RELAY_SERVICE} does not lead to the relay's port {RELAY_PORT}"
            )
    configs = kinds.get(("ConfigMap", "fedanon-config"), {}).get("data", {})
    problems += config_problems(configs)
    problems += network_problems(kinds)
    problems += cpu_problems(kinds)
    return problems


def test_outbound_manifests_expose_no_party() -> None:
    assert outbound_problems(outbound_docs()) == []


def test_outbound_manifests_match_the_kubernetes_schemas() -> None:
    kv = pytest.importorskip("kubernetes_validate")
    for version in ("1.30", kv.latest_version()):
        for path, doc in k8s_docs(OUTBOUND):
            assert k8s_schema_errors(doc, version) is None, (path.name, doc["metadata"]["name"])


def test_outbound_pods_keep_the_direct_pods_hardening() -> None:
    """Security context and resources as deploy/k8s's (the rules test_manifests.py checks)."""
    for name, pod in pod_specs(k8s_docs(OUTBOUND)):
        assert (
            pod["securityContext"]["runAsNonRoot"] and pod["automountServiceAccountToken"] is False
        )
        for c in pod.get("initContainers", []) + pod["containers"]:
            sc = c["securityContext"]
            assert sc["readOnlyRootFilesystem"] and not sc["allowPrivilegeEscalation"], name
            assert sc["capabilities"]["drop"] == ["ALL"], name
            assert {"cpu", "memory"} <= set(c["resources"]["limits"]), name


def _party(kinds: dict, name: str) -> dict:
    return kinds[("Deployment", name)]["spec"]["template"]


def _edit_config(name: str, old: str, new: str) -> Any:
    def edit(kinds: dict) -> None:
        data = kinds[("ConfigMap", "fedanon-config")]["data"]
        assert old in data[name]
        data[name] = data[name].replace(old, new, 1)

    return edit


@pytest.mark.parametrize(
    "breakage, message",
    [
        (
            lambda k: k.update(
                {
                    ("Service", "hospital-b"): {
                        "kind": "Service",
                        "metadata": {"name": "hospital-b"},
                        "spec": {"selector": {"app.kubernetes.io/instance": "hospital-b"}},
                    }
                }
            ),
            "hospital-b: Service hospital-b exposes it",
        ),
        (
            lambda k: _party(k, "hospital-a")["spec"]["containers"][0].update(
                ports=[{"name": "grpc", "containerPort": 50051}]
            ),
            "hospital-a/party: declares ports",
        ),
        (
            lambda k: _party(k, "hospital-c")["spec"].update(hostNetwork=True),
            "hospital-c: uses the host's network",
        ),
        (
            lambda k: k[("NetworkPolicy", "parties-dial-the-relay-only")]["spec"]["egress"].append(
                {"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]}
            ),
            "hospital-a: parties-dial-the-relay-only allows egress beyond the relay",
        ),
        (
            lambda k: k[("NetworkPolicy", "parties-dial-the-relay-only")]["spec"]["egress"][0][
                "ports"
            ].append({"protocol": "TCP", "port": 443}),
            "hospital-a: parties-dial-the-relay-only allows egress beyond the relay",
        ),
        (
            lambda k: k[("NetworkPolicy", "parties-dial-the-relay-only")]["spec"].update(
                policyTypes=["Ingress"]
            ),
            "hospital-a: no NetworkPolicy limits its egress",
        ),
        (
            lambda k: k[("NetworkPolicy", "parties-dial-the-relay-only")]["spec"].update(
                ingress=[{"from": [{"podSelector": {}}]}]
            ),
            "hospital-b: parties-dial-the-relay-only lets connections in",
        ),
        (
            lambda k: k[("Service", RELAY_SERVICE)]["spec"]["ports"][0].update(targetPort=50051),
            f"Service {RELAY_SERVICE} does not lead to the relay's port",
        ),
        (
            _edit_config("hospital-b.toml", 'transport = "outbound"', 'listen = "0.0.0.0:50051"'),
            "hospital-b.toml: transport is None",
        ),
        (
            _edit_config(
                "hospital-a.toml",
                'name = "hospital-b"',
                'name = "hospital-b"\naddress = "hospital-b:50051"',
            ),
            "hospital-a.toml: its next hop has an address",
        ),
        (
            _edit_config("hospital-c.toml", "min_K = 5", "min_K = 2"),
            "hospital-c.toml: differs from deploy/config/hospital-c.toml",
        ),
        (
            _edit_config(
                "job.toml", 'relay_listen = "0.0.0.0:50050"', 'relay_listen = "0.0.0.0:443"'
            ),
            "job.toml: relay_listen is not on port 50050",
        ),
        (
            _edit_config("hospital-a.toml", "idle_keys = 65536", ""),
            "hospital-a: [union] idle_keys not stated",
        ),
        (
            lambda k: _party(k, "hospital-c")["spec"]["containers"][0]["resources"][
                "limits"
            ].update(cpu="4"),
            "hospital-c: [union] workers = 2 in hospital-c.toml, but its CPU limit is 4 cores",
        ),
    ],
)
def test_outbound_rule_check_rejects_broken_copy(breakage, message) -> None:
    docs = copy.deepcopy(outbound_docs())
    kinds = keyed(docs)
    breakage(kinds)
    docs = [(Path("changed.yaml"), d) for d in kinds.values()]
    problems = outbound_problems(docs)
    assert any(p.startswith(message) for p in problems), problems


def test_outbound_configs_load_with_fedanons_loaders(tmp_path: Path) -> None:
    from fedanon.leader.config import load_job
    from fedanon.party.config import PartyConfig

    conf = relocated_configs(tmp_path)  # TLS files, tables and taxonomy where the configs look
    configs = keyed(k8s_docs(OUTBOUND))[("ConfigMap", "fedanon-config")]["data"]
    for name in CONFIGS:
        (conf / name).write_text(configs[name].replace('"/', f'"{tmp_path / "root"}/'))
    job = load_job(conf / "job.toml")
    assert job.relay_listen == f"0.0.0.0:{RELAY_PORT}"
    assert [p.name for p in job.parties] == PARTIES
    for i, name in enumerate(PARTIES):
        party = PartyConfig.load(conf / f"{name}.toml")
        assert (party.transport, party.relay, party.listen) == ("outbound", RELAY, "")
        if i + 1 < len(PARTIES):
            assert party.next_hop is not None and party.next_hop.name == PARTIES[i + 1]
