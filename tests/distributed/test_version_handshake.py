"""Daemons of another fedanon release or wire protocol are refused at the handshake.

One party of the shared federation is restarted as a real daemon that reports another version
(the same code with ``fedanon.__version__`` or the protocol constant changed before it serves)
and, like a release from before parties compared the leader's versions, does not compare them:
the leader must refuse it at OpenSession with one line naming the party and the item, before
any statistic is exchanged. The daemon is restored, whatever the outcome.

The other way round, the leader (this process) claims another version and the real daemons must
refuse it themselves, before any work: their refusal, not the leader's fingerprint check, names
the item, and each daemon logs it as a refused job.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import fedanon
from fedanon.errors import FedanonError
from fedanon.federation import protocol
from fedanon.federation.config import DIE_WITH_PARENT
from fedanon.leader.sim import Federation

from .conftest import Dataset, run_distributed

VICTIM = 1  # hospital-2, in the middle of the ring

# A release that does not compare the leader's versions (the leader's check is the one tested).
OLD_PARTY = (
    "from fedanon.federation import protocol\n"
    "protocol.leader_version_difference = lambda items: None\n"
)
# Changes the version the daemon reports, then serves exactly as `fedanon party serve` does.
OTHER_VERSION = {
    "fedanon_version": OLD_PARTY + "import fedanon\nfedanon.__version__ = '0.0.0+other'\n",
    "protocol_version": OLD_PARTY
    + f"protocol.PROTOCOL_VERSION = {protocol.PROTOCOL_VERSION + 1}\n",
}
EXPECTED = {
    "fedanon_version": "the party has 'fedanon_version:0.0.0+other'",
    "protocol_version": f"the party has 'protocol_version:{protocol.PROTOCOL_VERSION + 1}'",
}


def start_other_version(fed: Federation, patch: str) -> None:
    daemon = fed.daemons[VICTIM]
    code = (
        patch + "import sys\nfrom fedanon.cli.main import main\n"
        f"sys.exit(main(['party', 'serve', '--config', {str(daemon.config)!r}]))\n"
    )
    with daemon.log.open("ab") as log:
        daemon.process = subprocess.Popen(
            [sys.executable, "-c", code],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1", DIE_WITH_PARENT: str(os.getpid())},
        )
    fed.wait_ready(daemon, timeout=120)


# Every item takes the same refusal path (a daemon restart each): the quick subset runs one.
@pytest.mark.parametrize(
    "item",
    [
        pytest.param(item, marks=() if item == "fedanon_version" else pytest.mark.slow)
        for item in sorted(OTHER_VERSION)
    ],
)
def test_party_of_another_version_is_refused_with_one_line(
    hospital_federation: Federation, hospital_data: Dataset, tmp_path: Path, item: str
) -> None:
    fed = hospital_federation
    daemon = fed.daemons[VICTIM]
    spec = hospital_data.spec(L=2, K=10, C="0.5")
    out = tmp_path / "release.csv"
    fed.stop(daemon)
    try:
        start_other_version(fed, OTHER_VERSION[item])
        with pytest.raises(FedanonError) as refused:
            run_distributed(fed.hops, fed.leader_tls, hospital_data, spec, out)
    finally:
        fed.stop(daemon)
        fed.start(daemon)
        fed.wait_ready(daemon, timeout=120)
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(f"handshake: party {daemon.name} differs from the leader: ")
    assert message.endswith(EXPECTED[item])
    assert not out.exists()


# What this process (the leader) claims instead of its own versions, per item.
LEADER_CLAIMS = {
    "fedanon_version": ("__version__", "0.0.0+other"),
    "protocol_version": ("PROTOCOL_VERSION", protocol.PROTOCOL_VERSION + 1),
}


@pytest.mark.parametrize(
    "item",
    [
        pytest.param(item, marks=() if item == "protocol_version" else pytest.mark.slow)
        for item in sorted(LEADER_CLAIMS)
    ],
)
def test_leader_of_another_version_is_refused_by_the_party(
    hospital_federation: Federation,
    hospital_data: Dataset,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    item: str,
) -> None:
    fed = hospital_federation
    owner = fedanon if item == "fedanon_version" else protocol
    name, claimed = LEADER_CLAIMS[item]
    ours = f"{item}:{getattr(owner, name)}"
    monkeypatch.setattr(owner, name, claimed)
    logs = {d.name: d.log.stat().st_size for d in fed.daemons}
    out = tmp_path / "release.csv"
    with pytest.raises(FedanonError) as refused:
        spec = hospital_data.spec(L=2, K=10, C="0.5")
        run_distributed(fed.hops, fed.leader_tls, hospital_data, spec, out)
    first = fed.daemons[0].name
    message = str(refused.value)
    assert "\n" not in message
    assert message == (
        f"handshake: party {first} refused the leader: the leader has '{item}:{claimed}', "
        f"this party has '{ours}'"
    )
    assert not out.exists()
    for daemon in fed.daemons:  # every party refused on its own, and served nothing
        with daemon.log.open("rb") as log:
            log.seek(logs[daemon.name])
            written = log.read().decode()
        refusals = re.findall(r"audit: job refused .*", written)
        assert len(refusals) == 1, (daemon.name, written)
        assert f"this party has '{ours}'" in refusals[0]
        assert "audit: job served" not in written
