"""Vertical DRBT end to end through the production party servers (in-process, mutual TLS).

These are the quick tests: the parties are the real ``fedanon.party.daemon.build_server`` servers
run
in this process (see :mod:`tests.drbt_vertical.harness`), so a run takes a second or two; the
same claims are checked again with separate daemon processes in ``test_daemons.py`` (slow).
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fedanon.leader.sim
from fedanon.errors import FedanonError
from fedanon.leader.kinds.drbt import DRBTLeaderJob, run_drbt
from fedanon.leader.sim import split_columns
from fedanon.readers.sources import FrameSource
from tests.drbt_vertical.checks import (
    check_assignments,
    check_release,
    expected_dimensions,
    f_vs_centralized,
    joined_matches,
)
from tests.drbt_vertical.harness import (
    clustered_table,
    default_k,
    inprocess_federation,
    protocol,
    zscore_population,
)
from tests.harness.cli import run_cli


def block_diag(*matrices: np.ndarray) -> np.ndarray:
    """The block-diagonal matrix with `matrices` on the diagonal."""
    out = np.zeros((sum(m.shape[0] for m in matrices), sum(m.shape[1] for m in matrices)))
    r = c = 0
    for m in matrices:
        out[r : r + m.shape[0], c : c + m.shape[1]] = m
        r, c = r + m.shape[0], c + m.shape[1]
    return out


def use_inprocess_federation(monkeypatch: pytest.MonkeyPatch, root: Path) -> list:
    """Make ``fedanon sim drbt`` start recorded in-process servers under `root`."""
    started: list = []

    @contextlib.contextmanager
    def fake(
        parts,
        taxonomy,
        secure=True,
        workdir=None,
        rpc_seconds=60.0,
        on_phase=None,
        transport="direct",
    ):
        assert taxonomy is None and secure and transport == "direct"
        with inprocess_federation(parts, Path(workdir or root), monkeypatch) as fed:
            started.append(fed)
            yield fed

    monkeypatch.setattr(fedanon.leader.sim, "federation", fake)
    return started


# One party is refused (tests/cli/test_cli_hardening.py).
@pytest.mark.parametrize("parties", [2, 3, 4])
def test_sim_drbt_happy_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parties: int) -> None:
    """`fedanon sim drbt` (CLI code path, in-process servers): release, assignments, F > 0.9."""
    table, truth = clustered_table(m=300, d=12, seed=parties)
    data = tmp_path / "blobs.csv"
    table.to_csv(data, index=False)
    started = use_inprocess_federation(monkeypatch, tmp_path / "fed")
    out, report_path = tmp_path / "release.csv", tmp_path / "report.json"
    done = run_cli(
        *("sim", "drbt", "--parties", str(parties), "--data", data, "--id", "pid"),
        *("--matrix", "sparse", "--clusters", "3", "--send-assignment", "--seed", "7"),
        *("--out", out, "--report", report_path, "--json"),
    )
    assert done.code == 0, done.err
    printed = json.loads(done.out)
    assert len(started) == 1
    fed = started[0]

    release = check_release(out, table, "pid", parties, clusters=3)
    assert printed["objects"] == 300
    assert printed["dimensions"] == expected_dimensions(12, parties)
    assert [p["kept_dimensions"] for p in printed["parties"].values()] == [
        default_k(len(b)) for b in np.array_split(np.arange(12), parties)
    ]
    assert json.loads(report_path.read_text())["session_id"] == printed["session_id"]

    assert printed["f_measure_vs_centralized_original"] > 0.9  # the CLI's own figure
    labels = check_assignments(
        [fed.output_dir(h.name) for h in fed.hops], table, "pid", release, truth
    )
    assert f_vs_centralized(labels, table, "pid", 3) > 0.9


def test_release_is_D_times_block_diagonal_R(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Joined release == [Z_1 ... Z_p] @ blockdiag(R_1..R_p), Z_i z-scored per party.

    The parties hold their rows in different orders, and party 2 holds 40 extra objects (with
    outlying values) that the leader never lists: joining by id and z-scoring over the common
    ids only are both needed for the equality. The matrices are recovered in-process.
    """
    table, _ = clustered_table(m=250, d=11, seed=5)
    parts = split_columns(table, 3, "pid")
    rng = np.random.default_rng(1)
    extra, _ = clustered_table(m=40, d=11, seed=6)
    extra["pid"] = [f"X{i}" for i in range(40)]
    extra.iloc[:, 1:] *= 30.0
    parts[1] = pd.concat([parts[1], extra[parts[1].columns]]).iloc[rng.permutation(290)]
    parts[2] = parts[2].iloc[rng.permutation(250)]
    out = tmp_path / "release.csv"
    with inprocess_federation(parts, tmp_path / "fed", monkeypatch) as fed:
        report = run_drbt(
            DRBTLeaderJob(
                parties=fed.hops, tls=fed.leader_tls, out=out, id_column="pid", clusters=3, seed=1
            )
        )
    by_attributes = fed.projections.by_attributes()
    assert len(by_attributes) == 3
    blocks, matrices = [], []
    for part in parts:
        attributes = tuple(c for c in part.columns if c != "pid")
        R = by_attributes[attributes].matrix
        assert R.shape == (len(attributes), default_k(len(attributes)))
        # z-scored per party over the common ids, rows in the id list's (party 1's) order
        block = part.set_index("pid").loc[table["pid"]].to_numpy(dtype=float)
        blocks.append(zscore_population(block))
        matrices.append(R)
    expected = np.hstack(blocks) @ block_diag(*matrices)
    release = pd.read_csv(out)
    joined_matches(release, expected)
    assert report["dimensions"] == sum(m.shape[1] for m in matrices) == 2 + 2 + 2  # d_i = 4, 4, 3
    # a z-score of party 2 over all its 290 rows would not match
    own = parts[1].set_index("pid")
    skewed = (own.loc[table["pid"]].to_numpy() - own.to_numpy().mean(0)) / own.to_numpy().std(0)
    assert not np.allclose(
        np.hstack([blocks[0], skewed, blocks[2]]) @ block_diag(*matrices), expected, atol=1e-3
    )


@pytest.mark.parametrize("drop", [{1: 7}, {1: 7, 2: 3}])
def test_missing_ids_abort_with_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, drop: dict[int, int]
) -> None:
    """A party lacking ids aborts the session: counts per party, no output, parties reset."""
    table, _ = clustered_table(m=300, d=9)
    parts = split_columns(table, 3, "pid")
    rng = np.random.default_rng(2)
    for index, count in drop.items():
        gone = rng.choice(300, size=count, replace=False)
        parts[index] = parts[index].drop(index=parts[index].index[gone])
    out, report = tmp_path / "release.csv", tmp_path / "report.json"
    with inprocess_federation(parts, tmp_path / "fed", monkeypatch) as fed:
        job = DRBTLeaderJob(
            parties=fed.hops,
            tls=fed.leader_tls,
            out=out,
            id_column="pid",
            send_assignment=True,
            report=report,
        )
        with pytest.raises(FedanonError) as raised:
            run_drbt(job)
        counts = ", ".join(
            f"party hospital-{i + 1} lacks {c} of 300 ids" for i, c in sorted(drop.items())
        )
        assert str(raised.value) == f"id list: {counts}"
        assert not out.exists() and not report.exists()
        assert not list(tmp_path.glob("release*"))
        assert protocol(fed.log, method="Project") == []
        assert protocol(fed.log, method="Assign") == []
        for hop in fed.hops:
            (end,) = protocol(fed.log, hop.name, "End")
            assert end.message.abort
            assert "lacks" in end.message.reason
            assert fed.servicers[hop.name].session is None
            assert not fed.output_dir(hop.name).exists()
        # the same daemons serve the next session once the short parties hold every id again
        # (the complete table swapped in, as a daemon restarted on the fixed file would load)
        for index in drop:
            servicer = fed.servicers[f"hospital-{index + 1}"]
            servicer.source = FrameSource(split_columns(table, 3, "pid")[index])
            servicer._table = None  # the whole table is read from the new source
        run_drbt(job)
        assert out.exists()


def test_k_equal_to_d_refused_through_the_protocol(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table, _ = clustered_table(m=100, d=8)
    out = tmp_path / "release.csv"
    with inprocess_federation(split_columns(table, 2, "pid"), tmp_path / "fed", monkeypatch) as fed:
        job = DRBTLeaderJob(
            parties=fed.hops, tls=fed.leader_tls, out=out, id_column="pid", k_dims=4
        )
        with pytest.raises(
            FedanonError,
            match=r"party hospital-1: 4 kept dimensions \(n_components\) with d = 4 "
            r"attributes is a rotation, not a reduction",
        ):
            run_drbt(job)
        assert not out.exists()
        assert fed.projections.items == []
        job.k_dims = 3
        assert run_drbt(job)["dimensions"] == 6


def test_overlapping_attributes_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table, _ = clustered_table(m=50, d=6)
    parts = [table[["pid", "a0", "a1", "a2"]], table[["pid", "a2", "a3", "a4"]]]
    out = tmp_path / "release.csv"
    with inprocess_federation(parts, tmp_path / "fed", monkeypatch) as fed:
        with pytest.raises(FedanonError, match="'a2' is held by both hospital-1 and hospital-2"):
            run_drbt(DRBTLeaderJob(parties=fed.hops, tls=fed.leader_tls, out=out, id_column="pid"))
        assert protocol(fed.log, method="Ids") == []
    assert not out.exists()


def test_no_assignment_unless_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table, _ = clustered_table(m=60, d=4)
    with inprocess_federation(split_columns(table, 2, "pid"), tmp_path / "fed", monkeypatch) as fed:
        run_drbt(
            DRBTLeaderJob(
                parties=fed.hops,
                tls=fed.leader_tls,
                out=tmp_path / "r.csv",
                id_column="pid",
                send_assignment=False,
            )
        )
        assert protocol(fed.log, method="Assign") == []
        assert not any(fed.output_dir(h.name).exists() for h in fed.hops)


def test_leader_run_with_a_drbt_job_toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`fedanon leader run --config job.toml` with a [drbt] section (the documented config)."""
    table, truth = clustered_table(m=200, d=6, seed=11)
    with inprocess_federation(split_columns(table, 2, "pid"), tmp_path / "fed", monkeypatch) as fed:
        certs = fed.workdir / "certs"
        parties = "\n".join(
            f'[[parties]]\nname = "{h.name}"\naddress = "{h.address}"' for h in fed.hops
        )
        (tmp_path / "job.toml").write_text(
            f'name = "leader"\nout = "release.csv"\nreport = "report.json"\n'
            f'[drbt]\nid_column = "pid"\nmatrix = "gaussian"\nclusters = 3\n'
            f"send_assignment = true\n{parties}\n"
            f'[tls]\nca = "{certs / "ca.crt"}"\ncert = "{certs / "leader.crt"}"\n'
            f'key = "{certs / "leader.key"}"\n'
        )
        done = run_cli("leader", "run", "--config", tmp_path / "job.toml", "--json")
        assert done.code == 0, done.err
        printed = json.loads(done.out)
        assert printed["matrix"] == "gaussian" and printed["dimensions"] == 4
        release = check_release(tmp_path / "release.csv", table, "pid", 2, clusters=3)
        check_assignments([fed.output_dir(h.name) for h in fed.hops], table, "pid", release, truth)
