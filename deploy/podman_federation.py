#!/usr/bin/env python3
"""Build the fedanon image from this repository and run deploy/compose.yaml's federation in it.

What `docker compose up --build --exit-code-from leader` does, with podman and no compose (no
registry either: the base image is made here with debootstrap, Python comes from Debian):

1. the base image ``localhost/fedanon-base:bookworm`` (``debootstrap --variant=minbase
   bookworm`` imported with ``podman import``), made once and then reused by its tag;
2. the image ``localhost/fedanon:podman`` from deploy/Dockerfile with ``BASE_IMAGE`` set to it
   (the build context filtered by deploy/Dockerfile.dockerignore; deploy/requirements*.lock pin
   and hash-check every dependency);
3. certificates and demo data: deploy/make-certs.sh and deploy/make-demo-data.sh, run inside the
   image on a copy of deploy/ (so the host needs no fedanon);
4. one container per compose service, with the service's user, read-only root, tmpfs, dropped
   capabilities, security options, command and bind mounts. Compose's private network becomes
   the host's loopback: each party listens on its own 127.0.0.1 port and the configs' service
   addresses (``hospital-b:50051``) are rewritten to those ports, nothing else changes;
5. the leader once every party's health probe says SERVING (compose's ``service_healthy``),
   then ``fedanon check lkc`` on the release inside the image, with the job's L, K and C;
6. the same federation again in outbound mode (deploy/README.md section 3d): the parties'
   configs get ``transport = "outbound"`` and the relay's address instead of ``listen`` and
   the hop address, the job ``relay_listen`` instead of the party addresses; the parties dial
   the leader's relay, the release is checked again, and no party container may hold a
   listening TCP socket (read from /proc through the container's host pid).

Every container, the copy of deploy/ and the work folder are removed on every exit path
(Ctrl-C and SIGTERM included); the two images stay, so the next run rebuilds only what changed.
Where podman cannot run (no podman, runc or debootstrap, not root) it prints one line
``podman federation: skipped: <why>`` and exits 0. Timings go to stdout (bench/RESULTS.md).

    sudo .venv/bin/python deploy/podman_federation.py [--base-image IMAGE] [--keep]
        [--transport both|direct|outbound]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

DEPLOY = Path(__file__).resolve().parent
REPO = DEPLOY.parent
BASE_TAG = "localhost/fedanon-base:bookworm"
IMAGE_TAG = "localhost/fedanon:podman"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
# The engine's default ulimits (a raised nofile) fail in unprivileged build sandboxes; the
# containers need none. Written to the work folder and named by CONTAINERS_CONF, so nothing
# global on the host changes.
CONTAINERS_CONF = "[containers]\ndefault_ulimits = []\n"
HOST_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"  # Debian's bundle of trusted CAs
READY_SECONDS = 180.0
SERVICE_PORT = 50051  # the port every service uses inside compose's private network


class Failed(Exception):
    """A step failed; the message is the one line printed."""


def skip_reason(base_image: str) -> str | None:
    """Why podman cannot run the federation here, or None."""
    needed = ["podman", "runc"] + (["debootstrap"] if base_image == BASE_TAG else [])
    missing = [tool for tool in needed if shutil.which(tool) is None]
    if missing:
        return f"{', '.join(missing)} not installed (apt-get install podman runc debootstrap)"
    if os.geteuid() != 0:
        return "not root (rootful podman with host networking and runc is needed)"
    return None


class Podman:
    """``podman --runtime runc`` with this run's containers.conf."""

    def __init__(self, work: Path) -> None:
        conf = work / "containers.conf"
        conf.write_text(CONTAINERS_CONF)
        self.env = {**os.environ, "CONTAINERS_CONF": str(conf)}
        # This run's containers, and only they, are named with this prefix (and torn down).
        self.prefix = f"fedanon-{os.getpid()}-"

    def __call__(
        self, *args: str, capture: bool = False, check: bool = True, timeout: float | None = None
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            ["podman", "--runtime", "runc", *args],
            env=self.env,
            capture_output=capture,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and result.returncode != 0:
            tail = (result.stderr or "").strip().splitlines()[-1:] if capture else []
            raise Failed(f"podman {args[0]} failed (exit {result.returncode}) {' '.join(tail)}")
        return result

    def exists(self, image: str) -> bool:
        return self("image", "exists", image, check=False).returncode == 0


def timed(step: str, run: Any, *args: Any) -> float:
    start = time.monotonic()
    run(*args)
    seconds = time.monotonic() - start
    print(f"podman federation: {step}: {seconds:.0f} s", flush=True)
    return seconds


def make_base(podman: Podman, work: Path) -> None:
    """Debian bookworm (minbase) from Debian's mirror, imported as BASE_TAG."""
    rootfs = work / "rootfs"
    result = subprocess.run(
        ["debootstrap", "--variant=minbase", "bookworm", str(rootfs), DEBIAN_MIRROR],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise Failed(f"debootstrap failed: {result.stdout.strip().splitlines()[-1:]}")
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    imported = subprocess.run(
        ["podman", "--runtime", "runc", "import", "-", BASE_TAG],
        stdin=tar.stdout,
        env=podman.env,
        capture_output=True,
        check=False,
    )
    if tar.wait() != 0 or imported.returncode != 0:
        raise Failed(f"podman import of {rootfs} failed")
    shutil.rmtree(rootfs)


def ca_secret() -> list[str]:
    """The host's CA bundle as the build secret pip_ca, so that pip in the build trusts what
    the host trusts (a TLS-inspecting proxy's CA among them); none where the host has none."""
    bundle = os.environ.get("PIP_CERT") or os.environ.get("SSL_CERT_FILE") or HOST_CA_BUNDLE
    return [f"--secret=id=pip_ca,src={bundle}"] if Path(bundle).is_file() else []


def build_image(podman: Podman, base_image: str) -> None:
    podman(
        "build",
        "--network=host",  # apt and pip reach Debian's mirror and PyPI from the build
        "--build-arg",
        f"BASE_IMAGE={base_image}",
        *ca_secret(),
        "--ignorefile",
        str(DEPLOY / "Dockerfile.dockerignore"),
        "-f",
        str(DEPLOY / "Dockerfile"),
        "-t",
        IMAGE_TAG,
        str(REPO),
    )


def prepare_deploy(podman: Podman, work: Path) -> Path:
    """A copy of deploy/ with fresh certificates and demo data, made inside the image as
    root (make-certs.sh then hands the service keys to the image's user, as in production)."""
    copy = work / "deploy"
    shutil.copytree(
        DEPLOY,
        copy,
        ignore=shutil.ignore_patterns("certs", "data", "out", ".env", "taxonomy.toml", "k8s"),
    )
    podman(
        "run", "--rm", "--network=none", "--user=0", "--entrypoint=sh",
        f"--volume={copy}:/deploy", IMAGE_TAG,
        "-c", "/deploy/make-certs.sh && /deploy/make-demo-data.sh",
    )  # fmt: skip
    return copy


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def on_loopback(text: str, own_port: int | None, ports: dict[str, int]) -> str:
    """A service config with compose's network replaced by loopback: the listen address and
    every ``<service>:50051`` address become 127.0.0.1 ports; nothing else changes."""
    if own_port is not None:
        text = text.replace(f'"0.0.0.0:{SERVICE_PORT}"', f'"127.0.0.1:{own_port}"')
    for service, port in ports.items():
        text = text.replace(f'"{service}:{SERVICE_PORT}"', f'"127.0.0.1:{port}"')
    return text


def outbound(text: str, relay: str) -> str:
    """A service config in outbound mode: a party dials `relay` instead of listening and
    names its next hop without an address; the job opens the relay and names no addresses."""
    text = re.sub(r"(?m)^address = .*\n", "", text)
    if re.search(r"(?m)^listen = ", text):
        return re.sub(r"(?m)^listen = .*$", f'transport = "outbound"\nrelay = "{relay}"', text)
    return f'transport = "outbound"\nrelay_listen = "{relay}"\n{text}'


def interpolate(value: str, env: dict[str, str]) -> str:
    """Compose's ``${NAME:-default}`` substitution (from deploy/.env)."""
    return re.sub(r"\$\{(\w+)(?::-([^}]*))?\}", lambda m: env.get(m[1], m[2] or ""), value)


def run_args(
    container: str,
    name: str,
    service: dict[str, Any],
    deploy: Path,
    ports: dict[str, int],
    env: dict[str, str],
    relay: str | None = None,
) -> list[str]:
    """`podman run` options and command for compose service `name` on the host's loopback, in
    a container named `container` (outbound mode where `relay` is the relay's address)."""
    args = [f"--name={container}", "--network=host"]
    args.append(f"--user={interpolate(service['user'], env)}")
    if service.get("read_only"):
        args.append("--read-only")
    args += [f"--tmpfs={path}" for path in service.get("tmpfs", [])]
    args += [f"--cap-drop={cap}" for cap in service.get("cap_drop", [])]
    options = service.get("security_opt", [])
    args += [f"--security-opt={opt.replace(':true', '')}" for opt in options]
    own_port = ports.get(name)
    if own_port is not None:
        args.append(f"--env=FEDANON_PORT={own_port}")  # where the health probe looks
    for mount in service["volumes"]:
        source = (deploy / mount["source"]).resolve()
        if not source.exists():
            raise Failed(f"{name}: compose.yaml mounts {mount['source']}, which is missing")
        if source.suffix == ".toml" and source.name != "taxonomy.toml":
            rewritten = deploy / ("loopback" if relay is None else "outbound") / name / source.name
            rewritten.parent.mkdir(parents=True, exist_ok=True)
            text = on_loopback(source.read_text(), own_port, ports)
            rewritten.write_text(text if relay is None else outbound(text, relay))
            source = rewritten
        option = f"--mount=type=bind,source={source},target={mount['target']}"
        args.append(option + (",readonly" if mount.get("read_only") else ""))
    return [*args, IMAGE_TAG, *service["command"]]


def dotenv(path: Path) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    return {key.strip(): value.strip() for key, value in pairs}


def wait_serving(podman: Podman, name: str) -> None:
    """Poll the image's health probe inside the container, as compose's service_healthy."""
    deadline = time.monotonic() + READY_SECONDS
    container = podman.prefix + name
    while True:
        probe = podman("exec", container, "fedanon-health-probe", capture=True, check=False)
        if probe.returncode == 0:
            return
        running = podman(
            "inspect", "--format={{.State.Running}}", container, capture=True, check=False
        )
        if running.stdout.strip() != "true" or time.monotonic() > deadline:
            logs = podman("logs", "--tail=3", container, capture=True, check=False)
            last = " | ".join((logs.stdout + logs.stderr).strip().splitlines()[-3:])
            raise Failed(f"party {name} not SERVING after start-up: {last}")
        time.sleep(1)


def wait_dialling(podman: Podman, name: str) -> None:
    """An outbound party serves no health probe: wait for its start-up line instead."""
    deadline = time.monotonic() + READY_SECONDS
    while True:
        logs = podman("logs", podman.prefix + name, capture=True, check=False)
        if "dialling relay" in logs.stdout + logs.stderr:
            return
        if time.monotonic() > deadline:
            last = " | ".join((logs.stdout + logs.stderr).strip().splitlines()[-3:])
            raise Failed(f"party {name} did not start in outbound mode: {last}")
        time.sleep(1)


def listening_sockets(pid: int) -> list[str]:
    """TCP sockets in state LISTEN held by host process `pid` (a container's init)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        target = os.readlink(fd) if fd.is_symlink() else ""
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    found = []
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:
                found.append(fields[1])
    return found


def check_no_listening_party(podman: Podman, parties: Sequence[str]) -> None:
    for name in parties:
        state = podman("inspect", "--format={{.State.Pid}}", podman.prefix + name, capture=True)
        listening = listening_sockets(int(state.stdout.strip()))
        if listening:
            raise Failed(f"outbound party {name} listens on {', '.join(listening)}")


def check_release(podman: Podman, deploy: Path) -> None:
    """`fedanon check lkc` on the leader's release inside the image, with the job's L, K, C."""
    job = tomllib.loads((deploy / "config/job.toml").read_text())
    lkc = job["lkc"]
    out = deploy / "out"
    if not (out / "release.csv").exists():
        raise Failed("the leader exited 0 but wrote no out/release.csv")
    podman(
        "run", "--rm", "--network=none", "--read-only", "--tmpfs=/tmp",
        f"--mount=type=bind,source={out},target=/out,readonly",
        f"--mount=type=bind,source={deploy / 'config/taxonomy.toml'},target=/t.toml,readonly",
        IMAGE_TAG, "check", "lkc", "--data", "/out/release.csv", "--taxonomy", "/t.toml",
        "--L", str(lkc["L"]), "--K", str(lkc["K"]), "--C", str(lkc["C"]),
    )  # fmt: skip


def run_federation(podman: Podman, deploy: Path, transport: str = "direct") -> None:
    services = yaml.safe_load((deploy / "compose.yaml").read_text())["services"]
    parties = [n for n, s in services.items() if "depends_on" not in s]
    *own, relay_port = free_ports(len(parties) + 1)
    ports = dict(zip(parties, own, strict=True))
    relay = f"127.0.0.1:{relay_port}" if transport == "outbound" else None
    env = dotenv(deploy / ".env")
    (deploy / "out" / "release.csv").unlink(missing_ok=True)

    def run(name: str) -> list[str]:
        return run_args(podman.prefix + name, name, services[name], deploy, ports, env, relay)

    for name in parties:
        podman("run", "--detach", *run(name), capture=True)
    for name in parties:
        if relay is None:
            wait_serving(podman, name)
        else:
            wait_dialling(podman, name)
    for name in services:
        if name in ports:
            continue
        leader = podman("run", *run(name), check=False)
        if leader.returncode != 0:
            raise Failed(f"the {name} exited {leader.returncode} (its last lines are above)")
    check_release(podman, deploy)
    if relay is not None:
        check_no_listening_party(podman, parties)
    names = [podman.prefix + name for name in services]
    podman("rm", "--force", "--time=5", *names, capture=True, check=False)


@contextmanager
def torn_down(podman: Podman) -> Iterator[None]:
    """Remove every container this run starts, however it ends (SIGTERM too)."""

    def interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        listed = podman(
            "ps", "--all", f"--filter=name=^{podman.prefix}", "--format={{.Names}}", capture=True
        )
        names = listed.stdout.split()
        if names:
            podman("rm", "--force", "--time=5", *names, capture=True, check=False)
        signal.signal(signal.SIGTERM, previous)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--base-image",
        default=BASE_TAG,
        help=f"BASE_IMAGE for deploy/Dockerfile (default {BASE_TAG}, made with debootstrap; "
        "python:3.11-slim where a registry is reachable)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the work folder (logs, out/)")
    parser.add_argument(
        "--transport",
        choices=("both", "direct", "outbound"),
        default="both",
        help="run the federation with parties that listen (direct), that only dial the "
        "leader's relay (outbound), or both in turn (default)",
    )
    args = parser.parse_args(argv)
    reason = skip_reason(args.base_image)
    if reason is not None:
        print(f"podman federation: skipped: {reason}")
        return 0
    work = Path(tempfile.mkdtemp(prefix="fedanon-podman-"))
    try:
        podman = Podman(work)
        with torn_down(podman):
            if args.base_image == BASE_TAG and not podman.exists(BASE_TAG):
                timed("base image built (debootstrap + import)", make_base, podman, work)
            timed("fedanon image built", build_image, podman, args.base_image)
            deploy = prepare_deploy(podman, work)
            for transport in ("direct", "outbound"):
                if args.transport in ("both", transport):
                    timed(f"federation ran, {transport} (3 parties + leader, release checked)",
                          run_federation, podman, deploy, transport)  # fmt: skip
    except Failed as exc:
        print(f"podman federation: failed: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("podman federation: interrupted; containers removed", file=sys.stderr)
        return 130
    finally:
        if args.keep:
            print(f"podman federation: work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print("podman federation: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
