"""party.toml ``[table]``: which counting engine, its shards and cluster; checked in one line.

Every value in range loads (tests/config/test_config_keys.py covers each key alone); these
tests cover how the keys combine, the scheduler's scheme and TLS, and a Parquet dataset
directory as `data`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fedanon.algorithms.tds.engines import EngineSettings
from fedanon.errors import FedanonError
from fedanon.party.config import PartyConfig
from tests.config.configs import party_doc, toml_text


def _load(material: Path, tmp_path: Path, table: dict[str, Any] | None, **top: Any) -> PartyConfig:
    doc = party_doc(material, tmp_path)
    if table is not None:
        doc["table"] = table
    doc.update(top)
    path = tmp_path / "party.toml"
    path.write_text(toml_text(doc), encoding="utf-8")
    return PartyConfig.load(path)


def test_absent_table_counts_in_the_daemon(material: Path, tmp_path: Path) -> None:
    engine = _load(material, tmp_path, None).engine
    assert (engine.name, engine.shards, engine.scheduler, engine.workers) == ("local", 1, None, 0)


def test_dask_with_a_scheduler_uses_tls_and_the_party_certificate(
    material: Path, tmp_path: Path
) -> None:
    config = _load(material, tmp_path, {"engine": "dask", "scheduler": "dask:8786", "shards": 6})
    certs = material / "certs"
    assert config.engine.name == "dask" and config.engine.shards == 6
    assert config.engine.scheduler == "tls://dask:8786"
    assert config.engine.tls == (
        certs / "ca.crt",
        certs / "hospital-a.crt",
        certs / "hospital-a.key",
    )


def test_a_dask_key_implies_the_dask_engine(material: Path, tmp_path: Path) -> None:
    config = _load(material, tmp_path, {"shards": 3})
    assert config.engine == EngineSettings(
        name="dask", shards=3, tls=_load(material, tmp_path, {"workers": 1}).engine.tls
    )


@pytest.mark.parametrize(
    ("table", "needle"),
    [
        ({"engine": "local", "shards": 2}, 'table.shards: only with table.engine = "dask"'),
        ({"engine": "local", "scheduler": "h:1"}, "table.scheduler: only with"),
        ({"engine": "spark"}, "table.engine"),
        ({"engine": "dask", "shards": 0}, "table.shards"),
        ({"engine": "dask", "shards": 4097}, "table.shards"),
        ({"engine": "dask", "workers": -1}, "table.workers"),
        ({"engine": "dask", "scheduler": "h:1", "workers": 2}, "table.workers: a local cluster"),
        ({"engine": "dask", "scheduler": "tcp://h:1"}, "would carry the party's rows unencrypted"),
        ({"engine": "dask", "scheduler": "ucx://h:1"}, "table.scheduler: scheme 'ucx://'"),
        ({"engine": "dask", "scheduler": "h"}, "table.scheduler"),
        ({"engine": "dask", "sharts": 2}, "unknown key 'table.sharts' (did you mean 'shards'?)"),
    ],
)
def test_bad_table_values_are_one_line_naming_the_key(
    material: Path, tmp_path: Path, table: dict[str, Any], needle: str
) -> None:
    with pytest.raises(FedanonError) as caught:
        _load(material, tmp_path, table)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(tmp_path / "party.toml"))
    assert needle in message


def test_a_parquet_directory_needs_the_dask_engine(material: Path, tmp_path: Path) -> None:
    dataset = tmp_path / "dataset"
    dataset.mkdir()
    with pytest.raises(FedanonError, match=r"data: .* is a directory \(a Parquet dataset needs"):
        _load(material, tmp_path, None, data=str(dataset))
    assert _load(material, tmp_path, {"shards": 2}, data=str(dataset)).data == dataset
