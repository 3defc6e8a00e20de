"""Regression tests of issue #22 (defect 4, the job.toml parts of defect 7, the config items of
defect 10): settings that would disarm the daemon, and job.toml files that used to reach the
handshake, are refused when the file is read, with one line naming the file and the key, exit
code 2, no file written and no connection made.

Each case was accepted before: a lease of 1e-9 s (any live job could be evicted), a 100-byte
message limit, an output directory that is a file, an `out` that is an input under another
spelling, an empty QID list (read as "the taxonomy's QIDs"), probabilities that do not sum to 1
(found only after the handshake), a party's certificate given as the leader's, names with line
breaks or control characters (they forge log and audit lines).
"""

from __future__ import annotations

import contextlib
import copy
import os
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from fedanon.configschema import ConfigError
from fedanon.leader.config import load_job
from fedanon.leader.kinds.lkc import LKCLeaderJob
from fedanon.party.config import PartyConfig
from tests.config.configs import (
    drbt_doc,
    job_doc,
    party_doc,
    randomize_doc,
    tls,
    toml_text,
)
from tests.harness.cli import assert_one_line_error, run_cli, snapshot


def _set(doc: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    *parents, last = dotted.split(".")
    node: Any = doc
    for name in parents:
        node = node[int(name)] if isinstance(node, list) else node[name]
    if value is DELETE:
        del node[last]
    else:
        node[last] = value
    return doc


class _Delete:
    """The value that removes a key (its repr names it, so test ids are the same in every
    pytest-xdist worker: an object()'s repr holds its address)."""

    def __repr__(self) -> str:
        return "<deleted>"


DELETE = _Delete()


def _write(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(toml_text(doc), encoding="utf-8")
    return path


@contextlib.contextmanager
def _listener() -> Iterator[tuple[str, Callable[[], int]]]:
    """A loopback TCP port and a function counting the connections made to it so far."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.setblocking(False)
    accepted = 0

    def count() -> int:
        nonlocal accepted
        while True:
            try:
                conn, _ = server.accept()
            except BlockingIOError:
                return accepted
            conn.close()
            accepted += 1

    try:
        yield f"127.0.0.1:{server.getsockname()[1]}", count
    finally:
        server.close()


# ------------------------------------------------------------------ party.toml (defect 4)

PARTY_CASES = [
    ("timeouts.lease_seconds", 1e-9, ["timeouts.lease_seconds", "[2, 86400]", "1e-09"]),
    ("timeouts.lease_seconds", 0.5, ["timeouts.lease_seconds", "[2, 86400]"]),
    ("timeouts.lease_seconds", 10 * 86400, ["timeouts.lease_seconds"]),
    ("limits.max_message_mb", 0.0001, ["limits.max_message_mb", "[1, 2047]", "0.0001"]),
    ("limits.max_message_mb", 4096, ["limits.max_message_mb", "[1, 2047]"]),
    ("timeouts.rpc_seconds", 0.001, ["timeouts.rpc_seconds", "[1, 86400]"]),
    ("timeouts.backoff_seconds", 0, ["timeouts.backoff_seconds", "[0.01, 60]"]),
    ("timeouts.wait_next_hop_seconds", 1e7, ["timeouts.wait_next_hop_seconds", "[0, 3600]"]),
    ("union.workers", 100000, ["union.workers", "[0, 256]"]),
    ("union.min_records", 0, ["union.min_records", "[1, 2147483647]"]),
    ("union.idle_keys", 2**40, ["union.idle_keys", "[0, 1048576]"]),
    ("name", "hospital-a\nforged line", ["party.toml", "name", "printable"]),
    ("name", "hospital-a\rx", ["name", "printable"]),
    ("name", "evil\u202etxt", ["name", "printable"]),
    ("name", "\x1b[2Jhospital-a", ["name", "printable"]),
    ("leader", "leader\u2028x", ["leader", "printable"]),
    ("name", "h" * 300, ["name", "at most 256"]),
    ("delimiter", "\n", ["delimiter", "one-character"]),
    ("next_hop.name", "hospital-a", ["next_hop.name", "own name"]),
    ("leader", "hospital-a", ["leader", "own name"]),
    ("data", "{missing}", ["data", "not found"]),
    ("data", "{dir}", ["data", "is a directory"]),
    ("taxonomy", "{missing}", ["taxonomy", "not found"]),
    ("tls.ca", "{missing}", ["tls.ca", "not found"]),
    ("output_dir", "{file}", ["output_dir", "not a directory"]),
    ("output_dir", "{file}/sub", ["output_dir", "is not a directory"]),
    ("policy.never_release", ["patient_id", "patient_id"], ["policy.never_release", "distinct"]),
]


def _placeholders(value: Any, tmp_path: Path) -> Any:
    if not isinstance(value, str):
        return value
    (tmp_path / "a-dir").mkdir(exist_ok=True)
    (tmp_path / "a-file.txt").write_text("x", encoding="utf-8")
    return value.format(
        missing=tmp_path / "missing.csv", dir=tmp_path / "a-dir", file=tmp_path / "a-file.txt"
    )


@pytest.mark.parametrize(
    ("key", "value", "needles"), PARTY_CASES, ids=[f"{k}={v!r}"[:60] for k, v, _ in PARTY_CASES]
)
def test_party_toml_setting_that_disarms_the_daemon_is_refused_at_load(
    tmp_path: Path, material: Path, key: str, value: Any, needles: list[str]
) -> None:
    doc = _set(party_doc(material, tmp_path), key, _placeholders(value, tmp_path))
    config = _write(tmp_path / "party.toml", doc)
    with pytest.raises(ConfigError) as refused:
        PartyConfig.load(config)
    message = str(refused.value)
    assert message.startswith(f"{config}: ") and "\n" not in message, message
    before = snapshot(tmp_path)
    assert_one_line_error(run_cli("party", "serve", "--config", str(config)), *needles)
    assert snapshot(tmp_path) == before


def test_party_config_built_in_code_keeps_the_ranges(material: Path) -> None:
    """build_server's callers get the same refusal as before, now from the one schema: a
    configuration made in code with a lease of 1e-9 s or a 100-byte limit is refused."""
    fields: dict[str, Any] = {
        "name": "hospital-a",
        "listen": "127.0.0.1:9",
        "data": material / "a.csv",
        "taxonomy": None,
        "leader": "leader",
        "next_hop": None,
        "tls": None,
    }
    assert PartyConfig(**fields).lease_seconds == 30.0
    cases: list[tuple[str, Any, str]] = [
        ("lease_seconds", 1e-9, "timeouts.lease_seconds"),
        ("max_message_mb", 0.0001, "limits.max_message_mb"),
        ("max_message_mb", 0, "limits.max_message_mb"),
        ("idle_keys", -1, "union.idle_keys"),
        ("rpc_seconds", float("nan"), "timeouts.rpc_seconds"),
    ]
    for key, value, named in cases:
        with pytest.raises(ConfigError, match=rf"{named}: expected"):
            PartyConfig(**{**fields, key: value})


def test_party_toml_tab_delimiter_and_boundaries_load(tmp_path: Path, material: Path) -> None:
    """The ends of each range are settings, and a tab is a delimiter (not a control character
    to refuse)."""
    doc = party_doc(material, tmp_path)
    doc["delimiter"] = "\t"
    doc["timeouts"].update(lease_seconds=2, rpc_seconds=1, backoff_seconds=0.01)
    doc["limits"] = {"max_message_mb": 2047}
    doc["union"].update(workers=256, idle_keys=1 << 20)
    config = PartyConfig.load(_write(tmp_path / "party.toml", doc))
    assert (config.delimiter, config.lease_seconds, config.max_message_mb) == ("\t", 2.0, 2047.0)
    doc["limits"] = {"max_message_mb": 1}
    doc["delimiter"] = "tab"
    config = PartyConfig.load(_write(tmp_path / "party.toml", doc))
    assert (config.delimiter, config.max_message_mb) == ("tab", 1.0)


# ------------------------------------------------------------------ job.toml (defects 4 and 7)

JOB_CASES: list[tuple[str, str, Any, list[str]]] = [
    ("lkc", "lkc.qids", [], ["lkc.qids", "at least 1"]),
    ("lkc", "lkc.qids", ["age", "age"], ["lkc.qids", "distinct"]),
    ("lkc", "lkc.qids", ["age", "a\nb"], ["lkc.qids", "printable"]),
    ("lkc", "lkc.score", "", ["lkc.score"]),
    ("lkc", "lkc.class_values", [], ["lkc.class_values", "at least 1"]),
    ("lkc", "lkc.suppress", 1, ["lkc.suppress", "[0, 1)"]),
    ("lkc", "lkc.suppress", "100%", ["lkc.suppress", "[0, 1)"]),
    ("lkc", "lkc.L", DELETE, ["missing key 'lkc.L'"]),
    ("lkc", "lkc.drop", ["age"], ["lkc", "dropped column 'age' is also a QID"]),
    ("lkc", "lkc.class", "age", ["lkc", "class column 'age' is also a QID"]),
    ("lkc", "lkc.sensitive", {"diagnosis\nx": ["HIV"]}, ["lkc.sensitive.diagnosis\\nx"]),
    ("lkc", "name", "a\nb", ["job.toml", "name", "printable"]),
    ("lkc", "name", "leader\x00", ["name", "printable"]),
    ("lkc", "parties.1.name", "hospital-a", ["parties[1].name", "listed twice"]),
    ("lkc", "parties.2.address", "127.0.0.1:9", ["parties[2].address", "listed twice"]),
    ("lkc", "parties.0.name", "leader", ["parties[0].name", "the leader's name"]),
    ("lkc", "parties.0.name", "hospital\ta", ["parties[0].name", "printable"]),
    ("lkc", "timeouts.union_seconds", 1e-9, ["timeouts.union_seconds", "[1, 604800]"]),
    ("lkc", "timeouts.rpc_seconds", 1e-9, ["timeouts.rpc_seconds", "[1, 86400]"]),
    ("lkc", "union.chunk_mb", 2000, ["union.chunk_mb", "1023.5"]),
    ("lkc", "union.workers", 5000, ["union.workers", "[0, 256]"]),
    ("lkc", "taxonomy", "{missing}", ["taxonomy", "not found"]),
    ("lkc", "out", "{taxonomy}", ["out", "is the input", "refusing to overwrite"]),
    ("lkc", "out", "{taxonomy_symlink}", ["out", "is the input"]),
    ("lkc", "out", "{taxonomy_hardlink_out}", ["out", "is the input"]),
    ("lkc", "report", "{config}", ["report", "is the input"]),
    ("lkc", "report", "{tls_key}", ["report", "is the input"]),
    ("lkc", "report", "{cwd_spelling_of_out}", ["report", "is also the", "out"]),
    ("lkc", "out", "{dir}", ["out", "is a directory"]),
    ("lkc", "tls", "{party_tls}", ["tls.cert", "party certificate", "'hospital-a'"]),
    ("lkc", "tls.key", "{missing}", ["tls.key", "not found"]),
    ("randomize", "randomize.method", "ra", ["randomize.attrs", "enhanced"]),
    ("randomize", "randomize.attrs", 4, ["randomize.attrs", "number of QIDs (3)"]),
    ("randomize", "randomize.p", [0.5, 0.4, 0.05], ["randomize.p", '"ra" only']),
    ("randomize", "randomize.qids", ["sex", "sex"], ["randomize.qids", "distinct"]),
    ("randomize", "randomize.domains.age", ["1", "2"], ["randomize.domains.age", "not a QID"]),
    ("randomize", "randomize.domains.sex", ["F", "F"], ["randomize.domains.sex", "distinct"]),
    ("randomize", "randomize.domains.sex", ["F\nM", "M"], ["randomize.domains.sex", "printable"]),
    ("drbt", "drbt.id_column", "patient\nid", ["drbt.id_column", "printable"]),
    ("drbt", "parties", [{"name": "hospital-a", "address": "127.0.0.1:9"}], ["parties", "two"]),
]

RA_CASES: list[tuple[Any, list[str]]] = [
    ([0.5, 0.4, 0.05], ["randomize.p", "sum to 0.95, not 1"]),
    ([0.5, 0.5], ["randomize.p", "2 attribute probabilities for 3 QID"]),
    ([1.5, -0.25, -0.25], ["randomize.p", "[0, 1]"]),
]


def _job_paths(tmp_path: Path, material: Path, out: Path) -> dict[str, Path]:
    """Other spellings of the job's inputs, made on disk."""
    taxonomy = tmp_path / "taxonomy.toml"
    taxonomy.write_bytes(Path(job_doc(material, tmp_path)["taxonomy"]).read_bytes())
    (tmp_path / "alias.toml").symlink_to(taxonomy)
    os.link(taxonomy, tmp_path / "hard.toml")
    (tmp_path / "a-dir").mkdir()
    return {
        "taxonomy": taxonomy,
        "taxonomy_symlink": tmp_path / "alias.toml",
        "taxonomy_hardlink_out": tmp_path / "hard.toml",
        "config": tmp_path / "job.toml",
        "tls_key": material / "certs/leader.key",
        "cwd_spelling_of_out": Path(os.getcwd()) / out,
        "dir": tmp_path / "a-dir",
        "missing": tmp_path / "missing.pem",
    }


DOCS = {"lkc": job_doc, "drbt": drbt_doc, "randomize": randomize_doc}


def _assert_refused_before_any_connection(
    tmp_path: Path, doc: dict[str, Any], needles: list[str]
) -> None:
    """`leader run` on `doc` (its parties all at a listening port of ours) is one line naming
    every needle, writes nothing, and never connects."""
    with _listener() as (address, connections):
        for party in doc["parties"]:
            if party["address"] == "127.0.0.1:9":  # the first party's (and its duplicates)
                party["address"] = address
        config = _write(tmp_path / "job.toml", doc)
        with pytest.raises(ConfigError) as refused:
            load_job(config)
        assert str(refused.value).startswith(f"{config}: "), refused.value
        before = snapshot(tmp_path)
        assert_one_line_error(run_cli("leader", "run", "--config", str(config)), *needles)
        assert snapshot(tmp_path) == before
        assert connections() == 0


@pytest.mark.parametrize(
    ("kind", "key", "value", "needles"),
    JOB_CASES,
    ids=[f"{k}:{key}={v!r}"[:60] for k, key, v, _ in JOB_CASES],
)
def test_job_toml_is_validated_completely_before_the_handshake(
    tmp_path: Path,
    material: Path,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    key: str,
    value: Any,
    needles: list[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    doc = DOCS[kind](material, Path("out"))  # outputs relative to the config's directory
    doc["out"] = "r.csv"
    paths = _job_paths(tmp_path, material, Path("r.csv"))
    if kind == "lkc":
        doc["taxonomy"] = str(paths["taxonomy"])
    if value == "{party_tls}":
        value = tls(material, "hospital-a")
    elif isinstance(value, str) and value.startswith("{") and value.endswith("}"):
        value = str(paths[value[1:-1]])
    _assert_refused_before_any_connection(tmp_path, _set(doc, key, value), needles)


@pytest.mark.parametrize(("p", "needles"), RA_CASES, ids=[repr(p) for p, _ in RA_CASES])
def test_ra_probabilities_are_checked_before_the_handshake(
    tmp_path: Path, material: Path, p: list[float], needles: list[str]
) -> None:
    """Before, a p list that does not sum to 1 was found only once the global marginals were
    in, after every party had opened a session."""
    doc = randomize_doc(material, tmp_path)
    doc["randomize"].update(method="ra", p=p)
    del doc["randomize"]["attrs"]
    _assert_refused_before_any_connection(tmp_path, doc, needles)


def test_valid_jobs_of_every_kind_load(tmp_path: Path, material: Path) -> None:
    """The documents every refusal above starts from are accepted, also with a p list summing
    to 1 within rounding and outputs that are new files in a directory to create."""
    for kind, make in DOCS.items():
        doc = make(material, tmp_path / "new" / "dir")
        job = load_job(_write(tmp_path / f"{kind}.toml", doc))
        assert job.out == tmp_path / "new/dir/release.csv"
        assert not (tmp_path / "new").exists()  # planned, not created, by loading
    doc = randomize_doc(material, tmp_path)
    doc["randomize"].update(method="ra", p=[0.2, 0.3, 0.5])
    del doc["randomize"]["attrs"]
    load_job(_write(tmp_path / "ra.toml", doc))
    doc = job_doc(material, tmp_path)
    doc["lkc"].update(suppress=0, qids=["age", "sex"])
    job = load_job(_write(tmp_path / "lkc.toml", doc))
    assert isinstance(job, LKCLeaderJob) and job.spec.qids == ["age", "sex"]
    assert job.spec.suppress == 0


def test_two_parties_need_the_acknowledgement_in_the_file(tmp_path: Path, material: Path) -> None:
    doc = job_doc(material, tmp_path)
    doc["parties"] = doc["parties"][:2]
    _assert_refused_before_any_connection(
        tmp_path, copy.deepcopy(doc), ["parties", "allow_two_parties = true"]
    )
    doc["allow_two_parties"] = True
    assert len(load_job(_write(tmp_path / "two.toml", doc)).parties) == 2
    doc["union"]["mode"] = "shuffle"
    _assert_refused_before_any_connection(tmp_path, doc, ["mode", "shuffle", "three parties"])


# ------------------------------------------------------------------ outputs by file identity


def test_cli_outputs_are_compared_by_file_identity(
    tmp_path: Path, material: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--out r.csv --report $PWD/r.csv`: two spellings of one file that does not exist yet (no
    inode to compare: the resolved paths must be)."""
    monkeypatch.chdir(tmp_path)
    before = snapshot(tmp_path)
    done = run_cli(
        "anonymize",
        "lkc",
        "--data",
        str(material / "a.csv"),
        "--taxonomy",
        job_doc(material, tmp_path)["taxonomy"],
        "--L",
        "2",
        "--k",
        "2",
        "--C",
        "1",
        "--drop",
        "patient_id",
        "--quiet",
        "--out",
        "r.csv",
        "--report",
        f"{tmp_path}/r.csv",
    )
    assert_one_line_error(done, "is also the --out output")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("out", ["{long}.csv", "{long}/r.csv"])
def test_cli_output_name_too_long_is_one_line(tmp_path: Path, material: Path, out: str) -> None:
    """An output name longer than the file system allows (300 characters) was an OSError
    traceback: the file system's refusal is the output's problem, on one line."""
    before = snapshot(tmp_path)
    done = run_cli(
        "anonymize",
        "kactus",
        "--data",
        str(material / "a.csv"),
        "--class",
        "readmitted",
        "--qid",
        "age,sex",
        "--k",
        "2",
        "--quiet",
        "--out",
        str(tmp_path / out.format(long="n" * 300)),
    )
    assert_one_line_error(done, "--out", "File name too long")
    assert snapshot(tmp_path) == before
