"""Two daemons configured with one ``state_dir`` (a copied party.toml; #28, review): the second
would overwrite the first's sealed session and, at its start-up, delete it as a file it cannot
open. ``fedanon party serve`` refuses the second in one line (exit 2) before it reads the
directory; the first keeps serving and keeps its sealed file."""

from __future__ import annotations

from pathlib import Path

from fedanon.leader.ports import free_ports
from fedanon.party.session_store import FILE_NAME
from tests.party.test_party_startup import (  # noqa: F401 (fixture)
    _config,
    _listening,
    _one_line_error,
    _serve,
    party_dir,
)


def test_a_second_daemon_on_a_live_daemons_state_dir_is_refused(party_dir: Path) -> None:  # noqa: F811
    first_dir, second_dir = party_dir / "a", party_dir / "b"
    for directory in (first_dir, second_dir):
        directory.mkdir()
        (directory / "certs").symlink_to(party_dir / "certs")
        (directory / "a.csv").symlink_to(party_dir / "a.csv")
    state = party_dir / "state"
    state.mkdir()
    ports = free_ports(2)  # distinct: the second daemon must fail on the state_dir, not the port
    first_config = _config(first_dir, ports[0], extra=f'state_dir = "{state}"')
    with _listening(first_config) as first:
        (state / FILE_NAME).write_bytes(b"the first daemon's sealed session")
        second_config = _config(
            second_dir, ports[1], "hospital-b", "hospital-b", f'state_dir = "{state}"'
        )
        second_config.write_text(second_config.read_text().replace("hospital-a", "hospital-b"))
        _one_line_error(_serve(second_config), f"state_dir {state} is in use")
        assert first.poll() is None, "the first daemon died"
        assert (state / FILE_NAME).read_bytes() == b"the first daemon's sealed session"
