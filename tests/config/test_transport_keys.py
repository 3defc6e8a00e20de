"""``transport``, ``relay`` (party.toml) and ``relay_listen`` (job.toml): every wrong
combination is one line naming the file and the key, exit code 2, nothing written; the valid
outbound files load with the addresses each mode needs and nothing else."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from fedanon.leader.config import load_job
from fedanon.party.config import PartyConfig
from tests.config.configs import (
    job_doc,
    outbound_job_doc,
    outbound_party_doc,
    party_doc,
    toml_text,
)
from tests.harness.cli import assert_one_line_error, run_cli, snapshot


def _refused(path: Path, doc: dict[str, Any], command: tuple[str, ...], *needles: str) -> None:
    path.write_text(toml_text(doc), encoding="utf-8")
    before = snapshot(path.parent)
    assert_one_line_error(run_cli(*command, "--config", str(path)), *needles)
    assert snapshot(path.parent) == before


def _without(doc: dict[str, Any], *dotted: str) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    for key in dotted:
        *parents, last = key.split(".")
        table: Any = doc
        for name in parents:
            table = table[int(name)] if name.isdigit() else table[name]
        del table[last]
    return doc


PARTY_CASES: list[tuple[str, Any, list[str]]] = [
    ("sideways transport", {"transport": "sideways"}, ["transport", '"direct", "outbound"']),
    ("outbound keeps listen", {"listen": "127.0.0.1:9"}, ["listen", "unused", "outbound"]),
    (
        "outbound keeps the hop address",
        {"next_hop": {"name": "hospital-b", "address": "127.0.0.1:9"}},
        ["next_hop.address", "unused", "outbound"],
    ),
    ("outbound bad relay", {"relay": "nowhere"}, ["relay", "host:port"]),
    ("outbound without TLS", {"tls": {"insecure": True}}, ["tls.insecure", "needs TLS"]),
]


@pytest.mark.parametrize(
    ("label", "change", "needles"), PARTY_CASES, ids=[c[0] for c in PARTY_CASES]
)
def test_outbound_party_toml_mistakes_are_one_line(
    tmp_path: Path, material: Path, label: str, change: dict[str, Any], needles: list[str]
) -> None:
    doc = {**outbound_party_doc(material, tmp_path), **change}
    _refused(tmp_path / "party.toml", doc, ("party", "serve"), *needles)


def test_outbound_party_without_relay_names_the_key(tmp_path: Path, material: Path) -> None:
    doc = _without(outbound_party_doc(material, tmp_path), "relay")
    _refused(tmp_path / "party.toml", doc, ("party", "serve"), "missing key 'relay'", "outbound")


def test_direct_party_needs_listen_and_refuses_a_relay(tmp_path: Path, material: Path) -> None:
    doc = _without(party_doc(material, tmp_path), "listen")
    _refused(tmp_path / "p.toml", doc, ("party", "serve"), "missing key 'listen'", "host:port")
    doc = _without(party_doc(material, tmp_path), "next_hop.address")
    _refused(tmp_path / "p.toml", doc, ("party", "serve"), "missing key 'next_hop.address'")
    doc = {**party_doc(material, tmp_path), "relay": "127.0.0.1:9"}
    _refused(
        tmp_path / "p.toml", doc, ("party", "serve"), "relay", 'only with transport = "outbound"'
    )


def test_outbound_party_toml_loads(tmp_path: Path, material: Path) -> None:
    path = tmp_path / "party.toml"
    path.write_text(toml_text(outbound_party_doc(material, tmp_path)), encoding="utf-8")
    config = PartyConfig.load(path)
    assert (config.transport, config.relay, config.listen) == ("outbound", "127.0.0.1:9", "")
    assert config.next_hop is not None and config.next_hop.name == "hospital-b"
    direct = tmp_path / "direct.toml"
    direct.write_text(toml_text(party_doc(material, tmp_path)), encoding="utf-8")
    assert (PartyConfig.load(direct).transport, PartyConfig.load(direct).relay) == ("direct", None)


def test_outbound_job_toml_mistakes_are_one_line(tmp_path: Path, material: Path) -> None:
    command = ("leader", "run")
    job = tmp_path / "job.toml"
    addressed = outbound_job_doc(material, tmp_path)
    addressed["parties"][1]["address"] = "127.0.0.1:9"
    _refused(job, addressed, command, "parties[1].address", "unused", "outbound")
    _refused(
        job,
        _without(outbound_job_doc(material, tmp_path), "relay_listen"),
        command,
        "missing key 'relay_listen'",
    )
    _refused(
        job,
        {**outbound_job_doc(material, tmp_path), "tls": {"insecure": True}},
        command,
        "tls.insecure",
        "needs TLS",
    )
    _refused(
        job,
        {**job_doc(material, tmp_path), "relay_listen": "127.0.0.1:9"},
        command,
        "relay_listen",
        'only with transport = "outbound"',
    )
    _refused(
        job,
        _without(job_doc(material, tmp_path), "parties.2.address"),
        command,
        "missing key 'parties[2].address'",
    )


def test_outbound_job_toml_loads_with_the_relay(tmp_path: Path, material: Path) -> None:
    path = tmp_path / "job.toml"
    path.write_text(toml_text(outbound_job_doc(material, tmp_path)), encoding="utf-8")
    job = load_job(path)
    assert job.relay_listen == "127.0.0.1:9"
    assert [p.address for p in job.parties] == ["", "", ""]
    path.write_text(toml_text(job_doc(material, tmp_path)), encoding="utf-8")
    assert load_job(path).relay_listen is None


def test_status_of_an_outbound_party_says_it_has_no_port(tmp_path: Path, material: Path) -> None:
    path = tmp_path / "party.toml"
    path.write_text(toml_text(outbound_party_doc(material, tmp_path)), encoding="utf-8")
    assert_one_line_error(
        run_cli("party", "status", "--config", str(path)), "outbound", "listens on no port"
    )
