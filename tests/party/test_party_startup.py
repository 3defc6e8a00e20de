"""``fedanon party serve`` refuses to start with a clear one-line error (and exit code 2) for
the operator mistakes that are most common in a deployment."""

from __future__ import annotations

import contextlib
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from fedanon.crypto.identity import create_ca, issue_identity, save_ca, save_identity
from fedanon.federation.transport import make_server
from fedanon.leader.ports import free_ports
from fedanon.synth import generate_hospital, hospital_taxonomy_path
from tests.harness.cli import FEDANON, CliResult, run_cli_process


@pytest.fixture
def party_dir(tmp_path: Path) -> Path:
    ca = create_ca("startup test CA")
    save_ca(ca, tmp_path / "certs")
    for name in ("hospital-a", "hospital-b"):
        save_identity(issue_identity(ca, name, "party"), tmp_path / "certs")
    generate_hospital(200, seed=3).to_csv(tmp_path / "a.csv", index=False)
    return tmp_path


def _config(
    root: Path, port: int, cert: str = "hospital-a", key: str = "hospital-a", extra: str = ""
) -> Path:
    path = root / "party.toml"
    path.write_text(
        f"""
name = "hospital-a"
listen = "127.0.0.1:{port}"
data = "a.csv"
taxonomy = "{hospital_taxonomy_path()}"
{extra}
[tls]
ca = "certs/ca.crt"
cert = "certs/{cert}.crt"
key = "certs/{key}.key"
""",
        encoding="utf-8",
    )
    return path


def _serve(config: Path) -> CliResult:
    return run_cli_process("party", "serve", "--config", config, timeout=60)


@contextlib.contextmanager
def _listening(config: Path) -> Iterator[subprocess.Popen[str]]:
    """A daemon of `config` that listens (its banner read) until the block ends."""
    daemon = subprocess.Popen(
        [*FEDANON, "party", "serve", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert daemon.stdout is not None
        banner = daemon.stdout.readline()
        assert "listening on port" in banner, banner
        yield daemon
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)


def _one_line_error(done: CliResult, pattern: str) -> None:
    assert done.code == 2, done.out + done.err
    errors = [line for line in done.err.splitlines() if line.startswith("fedanon: error:")]
    assert len(errors) == 1 and pattern in errors[0], done.err
    assert "Traceback" not in done.err


def test_port_in_use(party_dir: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        done = _serve(_config(party_dir, busy.getsockname()[1]))
    _one_line_error(done, "cannot listen on")


def test_unreadable_certificate(party_dir: Path) -> None:
    (party_dir / "certs" / "hospital-a.crt").write_text("not a certificate", encoding="utf-8")
    _one_line_error(_serve(_config(party_dir, free_ports(1)[0])), "hospital-a.crt")


def test_certificate_and_key_do_not_match(party_dir: Path) -> None:
    done = _serve(_config(party_dir, free_ports(1)[0], cert="hospital-a", key="hospital-b"))
    _one_line_error(done, "does not belong to the certificate")


def test_unreachable_next_hop_when_required(party_dir: Path) -> None:
    extra = (
        f'[next_hop]\nname = "hospital-b"\naddress = "127.0.0.1:{free_ports(1)[0]}"\n'
        "[timeouts]\nwait_next_hop_seconds = 1.5"
    )
    done = _serve(_config(party_dir, free_ports(1)[0], extra=extra))
    _one_line_error(done, "next hop hospital-b")
    assert "unreachable" in done.err


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (None, "a.csv: not found"),  # party.toml's check
        ("", "a.csv: empty file (no header line)"),
        ("age,age\n30,40\n", "a.csv: a column name appears twice in the header"),
        ("age,sex\n30\n", "a.csv: cannot read table (CSV parse error: Expected 2 columns"),
    ],
)
def test_a_bad_table_stops_the_daemon_before_it_listens(
    party_dir: Path, table: str | None, message: str
) -> None:
    """The table is read (with Arrow, no pandas) before the daemon says it listens: a bad one
    is one line naming the file, and nothing listened."""
    data = party_dir / "a.csv"
    if table is None:
        data.unlink()
    else:
        data.write_text(table, encoding="utf-8")
    done = _serve(_config(party_dir, free_ports(1)[0]))
    _one_line_error(done, message)
    assert "listening" not in done.out


def test_negative_union_workers(party_dir: Path) -> None:
    done = _serve(_config(party_dir, free_ports(1)[0], extra="[union]\nworkers = -2"))
    _one_line_error(done, "union.workers: expected an integer in [0, 256], got -2")


@pytest.mark.parametrize("listen", ["127.0.0.1:99999", "127.0.0.1:0", "127.0.0.1", "127.0.0.1:x"])
def test_listen_address_without_a_usable_port(party_dir: Path, listen: str) -> None:
    """gRPC would listen on 99999 mod 2^16, on a random port, or on 443: refused instead."""
    config = _config(party_dir, 1)
    config.write_text(
        config.read_text().replace('listen = "127.0.0.1:1"', f'listen = "{listen}"'),
        encoding="utf-8",
    )
    _one_line_error(_serve(config), 'expected an address "host:port" with a port in 1..65535')


def test_a_server_binds_its_port_exclusively() -> None:
    """gRPC binds with SO_REUSEPORT unless told otherwise: a second server on a live server's
    port would start and take about half of the new connections. Every daemon's server (not
    only ``party serve``, whose start-up probes the port first) must fail to bind instead."""
    first, port = make_server("127.0.0.1:0", None)
    first.start()
    try:
        with pytest.raises(RuntimeError):
            second, _ = make_server(f"127.0.0.1:{port}", None)
            second.stop(0)
    finally:
        first.stop(0).wait()


def test_port_of_a_live_daemon(party_dir: Path) -> None:
    """A second daemon on a live daemon's port does not start (no shared SO_REUSEPORT port
    taking half the connections): one line, exit 2; the first daemon keeps serving."""
    config = _config(party_dir, free_ports(1)[0])
    with _listening(config) as first:
        _one_line_error(_serve(config), "cannot listen on")
        assert first.poll() is None, "the first daemon died"
