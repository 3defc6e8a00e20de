"""A party whose counting runs on Dask, among plain parties: the release is unchanged.

Real daemons over mutual TLS; the first party counts on a local Dask cluster in its daemon
([table] engine = "dask", 3 row shards), the others in-process. The release must equal the
centralized one (rows, cut, specialization sequence) and, sorted, the all-plain federation's
release byte for byte.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("distributed")

from fedanon.algorithms.tds.engines import EngineSettings
from fedanon.leader.sim import federation, split_table
from tests.distributed.conftest import Dataset, run_distributed, run_matches_centralized

pytestmark = pytest.mark.slow


def _sorted_lines(path: Path) -> list[bytes]:
    header, *body = path.read_bytes().splitlines()
    return [header, *sorted(body)]


def test_sharded_party_among_plain_ones_releases_the_same(
    hospital_data: Dataset, tmp_path: Path
) -> None:
    spec = hospital_data.spec(L=3, K=20, C="0.2")
    parts = split_table(hospital_data.table, 3, "random", seed=1)
    plain = tmp_path / "plain.csv"
    with federation(parts, hospital_data.taxonomy_path, secure=True) as fed:
        run_distributed(fed.hops, fed.leader_tls, hospital_data, spec, plain)
    sharded = tmp_path / "sharded.csv"
    engines: list[EngineSettings | None] = [EngineSettings(name="dask", shards=3), None, None]
    with federation(parts, hospital_data.taxonomy_path, secure=True, engine=engines) as fed:
        assert '[table]\nengine = "dask"\nshards = 3' in fed.daemons[0].config.read_text()
        report = run_matches_centralized(fed, hospital_data, spec, sharded)
    assert report["specializations"] >= 5
    assert _sorted_lines(sharded) == _sorted_lines(plain)
