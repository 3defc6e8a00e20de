"""A party restarted mid-job with another table or taxonomy is refused at its rejoin (#28,
review): the issue promises that a rejoin's release is the fault-free one, and the replayed
chain only covers the answers given before the restart, so a record changed where no count
showed it yet would otherwise rejoin silently and release another table. The job fails in one
line naming the party and why, and writes nothing.

Real daemons (mutual TLS, the shared three-party federation); the victim is killed after the
iteration 3 sum, its file changed, and started again at once.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from fedanon.algorithms.tds.engine import StepInfo
from fedanon.leader.federation import PartyFailure
from fedanon.leader.sim import Federation
from tests.distributed.conftest import Dataset, status
from tests.distributed.test_rejoin import REJOIN_SECONDS, ensure_running, run
from tests.harness.wait import wait_while

VICTIM = 1


def _data_file(fed: Federation) -> Path:
    return fed.workdir / f"{fed.daemons[VICTIM].name}.csv"


def _non_sensitive_diagnosis(table: pd.DataFrame) -> pd.DataFrame:
    """One record's diagnosis changed between two values the job does not count (neither is
    sensitive): no statistic the party sums changes, its release does."""
    changed = table.copy()
    row = changed.index[changed["diagnosis"] == "Flu"][0]
    changed.loc[row, "diagnosis"] = "Fracture"
    return changed


def _row_removed(table: pd.DataFrame) -> pd.DataFrame:
    return table.iloc[1:]


def _columns_reordered(table: pd.DataFrame) -> pd.DataFrame:
    return table[list(reversed(table.columns))]


CHANGES: dict[str, Callable[[pd.DataFrame], pd.DataFrame]] = {
    "a value no count shows": _non_sensitive_diagnosis,
    "a row removed": _row_removed,
    "columns reordered": _columns_reordered,
}


class KillChangeRestart:
    """``on_step``: after `iteration`, SIGKILL the victim, rewrite its table, start it again."""

    def __init__(self, fed: Federation, change: Callable[[pd.DataFrame], pd.DataFrame]) -> None:
        self.fed, self.change = fed, change
        self.fired = False

    def __call__(self, step: StepInfo) -> None:
        if step.iteration < 3 or self.fired:
            return
        self.fired = True
        daemon = self.fed.daemons[VICTIM]
        self.fed.stop(daemon, signal.SIGKILL)
        path = _data_file(self.fed)
        table = pd.read_csv(path, dtype=str, keep_default_na=False)
        self.change(table).to_csv(path, index=False)
        self.fed.start(daemon)


@pytest.mark.parametrize(
    "change",
    [
        "a value no count shows",
        pytest.param("a row removed", marks=pytest.mark.slow),
        pytest.param("columns reordered", marks=pytest.mark.slow),
    ],
)
def test_a_party_restarted_with_another_table_is_refused_at_its_rejoin(
    hospital_federation: Federation, hospital_data: Dataset, tmp_path: Path, change: str
) -> None:
    fed = hospital_federation
    path = _data_file(fed)
    original = path.read_bytes()
    out = tmp_path / "release.csv"
    kill = KillChangeRestart(fed, CHANGES[change])
    try:
        with pytest.raises(PartyFailure) as failure:
            run(fed, hospital_data, out, on_step=kill, rejoin_seconds=REJOIN_SECONDS)
        assert kill.fired
        message = str(failure.value)
        assert "\n" not in message
        assert "hospital-2" in message and "rejoin refused" in message, message
        assert "table, taxonomy or delimiter changed" in message, message
        assert str(path) not in message  # the party's paths are none of the leader's
        log = fed.daemons[VICTIM].log.read_text(errors="replace")
        assert f"{path} or " in log and "its rejoin is refused" in log
        assert not out.exists()
        # the refused party keeps no session and no sealed keys
        assert wait_while(lambda: status(fed, VICTIM).session_id, 30, interval=0.1) == ""
        assert not list((fed.workdir / f"{fed.daemons[VICTIM].name}-state").glob("*sealed*"))
    finally:
        if path.read_bytes() != original:
            fed.stop(fed.daemons[VICTIM], signal.SIGKILL)
            path.write_bytes(original)
        ensure_running(fed)
