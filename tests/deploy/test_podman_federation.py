"""deploy/podman_federation.py does what compose.yaml says, on loopback (no podman needed).

The container run itself is .ci/run's last step; here the translation of each compose service
into `podman run` options is checked against compose.yaml, and the one-line skip.
"""

from __future__ import annotations

import importlib.util
import shutil
import tomllib
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
PARTIES = ["hospital-a", "hospital-b", "hospital-c"]
_spec = importlib.util.spec_from_file_location("podman_federation", DEPLOY / "podman_federation.py")
assert _spec is not None and _spec.loader is not None
pf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pf)


@pytest.fixture
def deploy(tmp_path: Path) -> Path:
    """A copy of deploy/ with stand-ins for the files make-certs.sh and make-demo-data.sh make."""
    copy = tmp_path / "deploy"
    shutil.copytree(DEPLOY, copy, ignore=shutil.ignore_patterns("certs", "data", "out", "k8s"))
    for name in [*PARTIES, "leader"]:
        for ext in ("crt", "key"):
            (copy / "certs").mkdir(exist_ok=True)
            (copy / f"certs/{name}.{ext}").write_text("stand-in")
    (copy / "certs/ca.crt").write_text("stand-in")
    (copy / "data").mkdir()
    for name in PARTIES:
        (copy / f"data/{name}.csv").write_text("a\n1\n")
    (copy / "config/taxonomy.toml").write_text("")
    (copy / "out").mkdir()
    (copy / ".env").write_text("FEDANON_UID=4242\nFEDANON_GID=4343\n")
    return copy


def options(args: list[str], flag: str) -> list[str]:
    return [a.split("=", 1)[1] for a in args if a.startswith(f"--{flag}=")]


def test_each_service_runs_as_compose_says_on_loopback(deploy: Path) -> None:
    services = yaml.safe_load((deploy / "compose.yaml").read_text())["services"]
    ports = dict(zip(PARTIES, [41001, 41002, 41003], strict=True))
    env = pf.dotenv(deploy / ".env")
    for name, service in services.items():
        args = pf.run_args(f"run-{name}", name, service, deploy, ports, env)
        image = args.index(pf.IMAGE_TAG)
        assert args[image + 1 :] == service["command"]
        run = args[:image]
        assert options(run, "name") == [f"run-{name}"]
        assert options(run, "network") == ["host"]
        assert options(run, "user") == ["4242:4343"]  # compose's ${FEDANON_UID:-10001} from .env
        assert "--read-only" in run and options(run, "tmpfs") == ["/tmp"]
        assert options(run, "cap-drop") == ["ALL"]
        assert options(run, "security-opt") == ["no-new-privileges"]
        mounts = {}
        for mount in options(run, "mount"):
            fields = dict(f.partition("=")[::2] for f in mount.split(","))
            mounts[fields["target"]] = (Path(fields["source"]), "readonly" in mount)
        assert set(mounts) == {v["target"] for v in service["volumes"]}
        for volume in service["volumes"]:
            assert mounts[volume["target"]][1] == bool(volume.get("read_only"))
        config = next(t for t in mounts if t.endswith(".toml") and "taxonomy" not in t)
        text = mounts[config][0].read_text()
        assert "50051" not in text and "0.0.0.0" not in text
        parsed = tomllib.loads(text)
        if name in ports:
            assert options(run, "env") == [f"FEDANON_PORT={ports[name]}"]  # the probe's port
            assert parsed["listen"] == f"127.0.0.1:{ports[name]}"
            if "next_hop" in parsed:
                hop = parsed["next_hop"]
                assert hop["address"] == f"127.0.0.1:{ports[hop['name']]}"
        else:
            assert [p["address"] for p in parsed["parties"]] == [
                f"127.0.0.1:{ports[p['name']]}" for p in parsed["parties"]
            ]
        # only the addresses changed
        original = tomllib.loads((deploy / "config" / Path(config).name).read_text())
        original.pop("listen", None), parsed.pop("listen", None)
        for table in (original, parsed):
            table.get("next_hop", {}).pop("address", None)
            for party in table.get("parties", []):
                party.pop("address")
        assert parsed == original


def test_a_missing_mounted_file_is_named(deploy: Path) -> None:
    services = yaml.safe_load((deploy / "compose.yaml").read_text())["services"]
    (deploy / "certs/hospital-b.key").unlink()
    with pytest.raises(pf.Failed, match=r"^hospital-b: compose.yaml mounts ./certs/hospital-b.key"):
        pf.run_args("b", "hospital-b", services["hospital-b"], deploy, {"hospital-b": 1}, {})


def test_skips_with_one_line_where_podman_cannot_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    assert pf.main([]) == 0
    out = capsys.readouterr().out
    assert out == (
        "podman federation: skipped: podman, runc, debootstrap not installed "
        "(apt-get install podman runc debootstrap)\n"
    )


def test_the_outbound_run_rewrites_every_config_for_the_relay(deploy: Path) -> None:
    """Outbound: parties get transport and relay instead of listen and the hop address; the
    job gets relay_listen instead of the party addresses; nothing else changes."""
    import tomllib

    services = yaml.safe_load((deploy / "compose.yaml").read_text())["services"]
    ports = dict(zip(PARTIES, [41001, 41002, 41003], strict=True))
    env = pf.dotenv(deploy / ".env")
    relay = "127.0.0.1:41009"
    for name, service in services.items():
        pf.run_args(f"run-{name}", name, service, deploy, ports, env, relay)
        config = next((deploy / "outbound" / name).glob("*.toml"))
        got = tomllib.loads(config.read_text())
        original = tomllib.loads((deploy / "config" / config.name).read_text())
        if name in PARTIES:
            assert (got.pop("transport"), got.pop("relay")) == ("outbound", relay)
            del original["listen"]
            if "next_hop" in original:
                del original["next_hop"]["address"]
        else:
            assert (got.pop("transport"), got.pop("relay_listen")) == ("outbound", relay)
            for party in original["parties"]:
                del party["address"]
        assert got == original
