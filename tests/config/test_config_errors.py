"""Regression tests of issue #10 (defects 9 and 10): each careless or broken job.toml /
party.toml ends as ONE line naming the file, the key and the expected form, exit code 2, no
traceback and no file written; and the settings that used to be misread are read as meant."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from fedanon.errors import FedanonError
from fedanon.leader.config import load_job
from fedanon.leader.kinds.lkc import LKCLeaderJob
from fedanon.party.config import PartyConfig
from tests.config.configs import job_doc, party_doc, toml_text
from tests.harness.cli import assert_one_line_error, run_cli, snapshot


def _set(doc: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    *parents, last = dotted.split(".")
    table = doc
    for name in parents:
        table = table[name]
    table[last] = value
    return doc


def _write(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(toml_text(doc), encoding="utf-8")
    return path


def _assert_refused_untouched(
    path: Path, doc: dict[str, Any], command: tuple[str, ...], needles: list[str]
) -> None:
    """`command --config path` (with `doc` written there) ends in one line naming every needle,
    and changes no file in the config's directory."""
    config = _write(path, doc)
    before = snapshot(path.parent)
    assert_one_line_error(run_cli(*command, "--config", str(config)), *needles)
    assert snapshot(path.parent) == before


# (dotted key, bad value, words the one error line must contain)
JOB_CASES = [
    ("union.chunk_mb", 0, ["union.chunk_mb", "0"]),
    ("union.chunk_mb", "big", ["union.chunk_mb", "number", "'big'"]),
    ("union.chunk_mb", 4096, ["union.chunk_mb", "4096"]),
    ("lkc.L", "four", ["job.toml", "lkc.L", "integer", "'four'"]),
    ("lkc.L", 2.5, ["lkc.L", "integer", "2.5"]),
    ("lkc.L", True, ["lkc.L", "integer"]),
    ("lkc.K", 0, ["lkc.K", "[1,"]),
    ("lkc.C", float("nan"), ["lkc.C", "(0, 1]", "nan"]),
    ("lkc.C", "1.5", ["lkc.C", "(0, 1]"]),
    ("lkc.C", "abc", ["lkc.C", "(0, 1]"]),
    ("lkc.sensitive", ["x"], ["lkc.sensitive", "column = ["]),
    ("union.pad_to", "lots", ["union.pad_to", "integer", "'lots'"]),
    ("union.pad_to", -1, ["union.pad_to", "[0,"]),
    ("union.mode", "fast", ["union.mode", '"layered"', '"shuffle"']),
    ("timeouts.union_seconds", "x", ["timeouts.union_seconds", "number"]),
    ("timeouts.rpc_seconds", -5, ["timeouts.rpc_seconds", "[1,"]),
    ("timeouts.rpc_seconds", float("inf"), ["timeouts.rpc_seconds", "inf"]),
    ("sum_mode", "rings", ["sum_mode", '"ring"', '"pairwise"']),
    ("lkc.L", 2**80, ["lkc.L", "integer"]),
    ("out", "", ["out", "file path"]),
]


@pytest.mark.parametrize(
    ("key", "value", "needles"), JOB_CASES, ids=[f"{k}={v!r}" for k, v, _ in JOB_CASES]
)
def test_job_toml_bad_value_is_one_line(
    tmp_path: Path, material: Path, key: str, value: Any, needles: list[str]
) -> None:
    doc = _set(job_doc(material, tmp_path), key, value)
    _assert_refused_untouched(tmp_path / "job.toml", doc, ("leader", "run"), needles)


def test_job_toml_unknown_key_is_named_with_a_suggestion(tmp_path: Path, material: Path) -> None:
    doc = job_doc(material, tmp_path)
    doc["union"]["pad-to"] = 3
    config = _write(tmp_path / "job.toml", doc)
    assert_one_line_error(
        run_cli("leader", "run", "--config", str(config)),
        "unknown key 'union.pad-to'",
        "did you mean 'pad_to'",
    )


def test_job_toml_unknown_top_level_key(tmp_path: Path, material: Path) -> None:
    doc = {**job_doc(material, tmp_path), "sum-mode": "pairwise"}
    config = _write(tmp_path / "job.toml", doc)
    assert_one_line_error(
        run_cli("leader", "run", "--config", str(config)), "unknown key 'sum-mode'", "sum_mode"
    )


def test_job_toml_unknown_key_in_a_party_entry(tmp_path: Path, material: Path) -> None:
    doc = job_doc(material, tmp_path)
    doc["parties"][1]["adress"] = "x:1"
    config = _write(tmp_path / "job.toml", doc)
    assert_one_line_error(
        run_cli("leader", "run", "--config", str(config)), "unknown key 'parties[1].adress'"
    )


def test_job_toml_sensitive_with_no_values_is_refused(tmp_path: Path, material: Path) -> None:
    doc = _set(job_doc(material, tmp_path), "lkc.sensitive", {"diagnosis": []})
    config = _write(tmp_path / "job.toml", doc)
    assert_one_line_error(
        run_cli("leader", "run", "--config", str(config)), "lkc.sensitive.diagnosis", "at least 1"
    )


def test_job_toml_sensitive_column_that_is_a_qid_is_named(tmp_path: Path, material: Path) -> None:
    """The leader has no data but has the taxonomy; a sensitive column missing from a party's
    table is named by that party at the handshake
    (tests/distributed/test_policy_daemons.py)."""
    doc = _set(job_doc(material, tmp_path), "lkc.sensitive", {"age": ["40"]})
    config = _write(tmp_path / "job.toml", doc)
    assert_one_line_error(
        run_cli("leader", "run", "--config", str(config)), "sensitive column 'age' is also a QID"
    )


def test_drop_as_a_single_string_is_one_column(tmp_path: Path, material: Path) -> None:
    doc = _set(job_doc(material, tmp_path), "lkc.drop", "patient_id")
    job = load_job(_write(tmp_path / "job.toml", doc))
    assert isinstance(job, LKCLeaderJob) and job.spec.drop == ["patient_id"]


def test_c_accepts_percent_and_fraction_in_job_toml(tmp_path: Path, material: Path) -> None:
    for text in ("20%", "1/5", 0.2):
        job = load_job(
            _write(tmp_path / "job.toml", _set(job_doc(material, tmp_path), "lkc.C", text))
        )
        assert isinstance(job, LKCLeaderJob) and str(job.spec.params.C) == "1/5"


def test_job_toml_with_both_lkc_and_drbt_is_refused(tmp_path: Path, material: Path) -> None:
    doc = {**job_doc(material, tmp_path), "drbt": {"id_column": "patient_id"}}
    config = _write(tmp_path / "job.toml", doc)
    assert_one_line_error(run_cli("leader", "run", "--config", str(config)), "[lkc]", "[drbt]")


def test_drbt_job_toml_bad_value(tmp_path: Path, material: Path) -> None:
    doc = job_doc(material, tmp_path)
    del doc["lkc"]
    doc["drbt"] = {"id_column": "patient_id", "clusters": "three"}
    config = _write(tmp_path / "job.toml", doc)
    assert_one_line_error(
        run_cli("leader", "run", "--config", str(config)), "drbt.clusters", "integer"
    )


PARTY_CASES = [
    ("timeouts.rpc_seconds", "abc", ["party.toml", "timeouts.rpc_seconds", "number", "'abc'"]),
    ("timeouts.rpc_seconds", -5, ["timeouts.rpc_seconds", "[1, 86400]", "-5"]),
    ("timeouts", 5, ["timeouts", "a table", "5"]),
    ("timeouts.connect_retries", 1.5, ["timeouts.connect_retries", "integer"]),
    ("listen", "127.0.0.1:99999", ["listen", "1..65535"]),
    ("next_hop.address", "nowhere", ["next_hop.address", "host:port"]),
    ("union.workers", -1, ["union.workers", "[0,"]),
    ("union.idle_keys", -1, ["union.idle_keys", "[0,"]),
    ("union.idle_keys", "all", ["union.idle_keys", "integer"]),
    ("policy.min_K", 0, ["policy.min_K", "[1,"]),
    ("policy.max_C", 0, ["policy.max_C", "(0, 1]"]),
    ("policy.qids", 5, ["policy.qids", "list of names"]),
    ("policy.job_kinds", ["lkc", "ranomize"], ["policy.job_kinds", "'ranomize'", "lkc, drbt"]),
    ("policy.leader", "boss", ["leader 'leader'", "policy.leader 'boss'"]),
    ("tls.insecure", "yes", ["tls.insecure", "true or false"]),
    ("delimiter", ";;", ["delimiter", "one-character"]),
]


@pytest.mark.parametrize(
    ("key", "value", "needles"), PARTY_CASES, ids=[f"{k}={v!r}" for k, v, _ in PARTY_CASES]
)
def test_party_toml_bad_value_is_one_line(
    tmp_path: Path, material: Path, key: str, value: Any, needles: list[str]
) -> None:
    doc = _set(party_doc(material, tmp_path), key, value)
    _assert_refused_untouched(tmp_path / "party.toml", doc, ("party", "serve"), needles)


def test_party_toml_unknown_key(tmp_path: Path, material: Path) -> None:
    doc = party_doc(material, tmp_path)
    doc["timeouts"]["rpc_second"] = 5
    config = _write(tmp_path / "party.toml", doc)
    assert_one_line_error(
        run_cli("party", "serve", "--config", str(config)),
        "unknown key 'timeouts.rpc_second'",
        "rpc_seconds",
    )


@pytest.mark.parametrize(
    "content", [bytes(range(256)), b"\xff\xfe\x00\x01" * 64, b'name = "a"\x00\n']
)
def test_binary_config_files_are_one_line(tmp_path: Path, content: bytes) -> None:
    config = tmp_path / "party.toml"
    config.write_bytes(content)
    assert_one_line_error(run_cli("party", "serve", "--config", str(config)), str(config))
    job = tmp_path / "job.toml"
    job.write_bytes(content)
    assert_one_line_error(run_cli("leader", "run", "--config", str(job)), str(job))


def test_config_that_is_a_directory_is_one_line(tmp_path: Path) -> None:
    assert_one_line_error(run_cli("party", "serve", "--config", str(tmp_path)), str(tmp_path))


def test_garbage_ca_pem_is_one_line(tmp_path: Path, material: Path) -> None:
    garbage = tmp_path / "garbage-ca.crt"
    garbage.write_text(
        "-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n",
        encoding="utf-8",
    )
    config = _write(
        tmp_path / "party.toml", _set(party_doc(material, tmp_path), "tls.ca", str(garbage))
    )
    assert_one_line_error(
        run_cli("party", "serve", "--config", str(config)), "ca file", str(garbage)
    )


def test_tls_insecure_in_the_file_warns_like_the_flag(tmp_path: Path, material: Path) -> None:
    """``[tls] insecure = true`` prints the --insecure warning (the daemon then stops at its
    table without columns, which is the one error line)."""
    (tmp_path / "empty.csv").write_bytes(b"")
    doc = _set(party_doc(material, tmp_path), "data", str(tmp_path / "empty.csv"))
    flagged = _write(tmp_path / "flagged.toml", doc)
    flagged_run = run_cli("party", "serve", "--config", str(flagged), "--insecure")
    doc["tls"] = {"insecure": True}
    config = _write(tmp_path / "party.toml", doc)
    file_run = run_cli("party", "serve", "--config", str(config))
    flag_warning, warning = flagged_run.err_lines[0], file_run.err_lines[0]
    assert (
        flag_warning == "fedanon: WARNING: --insecure: no TLS, no authentication; "
        "local experiments only"
    )
    assert (
        warning == f"fedanon: WARNING: {config} [tls] insecure = true: no TLS, no "
        "authentication; local experiments only"
    )
    for done in (file_run, flagged_run):
        assert done.code == 2 and len(done.err_lines) == 2, done.err
        assert "empty.csv" in done.err_lines[1]


def test_leader_tls_insecure_in_the_file_warns(tmp_path: Path, material: Path) -> None:
    doc = job_doc(material, tmp_path)
    doc["tls"] = {"insecure": True}
    doc["parties"] = [{"name": n, "address": f"127.0.0.{i}:9"} for i, n in enumerate("abc", 1)]
    doc["timeouts"]["rpc_seconds"] = 2
    config = _write(tmp_path / "job.toml", doc)
    before = snapshot(tmp_path)
    done = run_cli("leader", "run", "--config", str(config), "--quiet")
    assert (
        done.err_lines[0] == f"fedanon: WARNING: {config} [tls] insecure = true: "
        "no TLS, no authentication; local experiments only"
    )
    assert done.code != 0 and snapshot(tmp_path) == before


def test_party_config_reads_policy_and_defaults(tmp_path: Path, material: Path) -> None:
    config = PartyConfig.load(_write(tmp_path / "party.toml", party_doc(material, tmp_path)))
    assert (config.policy.min_L, config.policy.min_K, str(config.policy.max_C)) == (2, 5, "1/2")
    assert config.policy.qids == ("age", "sex") and config.policy.job_kinds == ("lkc",)
    doc = party_doc(material, tmp_path)
    del doc["policy"], doc["timeouts"]
    config = PartyConfig.load(_write(tmp_path / "party.toml", doc))
    assert not config.policy.configured
    assert (config.policy.min_L, config.policy.min_K, config.policy.max_C) == (1, 1, 1)
    assert config.rpc_seconds == 60.0 and config.connect_retries == 5


def test_error_quoting_a_line_break_stays_one_line(tmp_path: Path, material: Path) -> None:
    """A file may name a key or column with a line break in it; the error quoting it is still
    one line (the control character is escaped)."""
    taxonomy = tmp_path / "taxonomy.toml"
    taxonomy.write_text(
        'qids = ["a\\nb"]\n[attributes.age]\nkind = "numeric"\n'
        'tree = """\n[0, 10)\n  [0, 5)\n  [5, 10)\n"""\n',
        encoding="utf-8",
    )
    line = assert_one_line_error(
        run_cli(
            "anonymize",
            "lkc",
            "--data",
            str(material / "a.csv"),
            "--taxonomy",
            str(taxonomy),
            "--L",
            "1",
            "--k",
            "2",
            "--C",
            "1",
            "--out",
            str(tmp_path / "release.csv"),
        )
    )
    assert "a\\nb" in line
    doc = job_doc(material, tmp_path)
    doc["lkc"]["L\x1eX"] = 1
    config = _write(tmp_path / "job.toml", doc)
    with pytest.raises(FedanonError) as refused:
        load_job(config)
    assert str(refused.value).splitlines() == [str(refused.value)]
    assert "unknown key 'lkc.L\\x1eX'" in str(refused.value)


def test_idle_keys_default_to_a_fixed_number_and_zero_turns_them_off(
    tmp_path: Path, material: Path
) -> None:
    """The default does not follow the table: a pool sized by the record count would let the
    union's timing hint at the count padding hides."""
    doc = party_doc(material, tmp_path)
    assert PartyConfig.load(_write(tmp_path / "a.toml", doc)).idle_keys == 20000
    del doc["union"]["idle_keys"]
    assert PartyConfig.load(_write(tmp_path / "b.toml", doc)).idle_keys == 65536
    doc["union"]["idle_keys"] = 0
    assert PartyConfig.load(_write(tmp_path / "c.toml", doc)).idle_keys == 0


def test_union_chunk_mb_sets_the_bytes_per_union_message(tmp_path: Path, material: Path) -> None:
    doc = job_doc(material, tmp_path)
    job = load_job(_write(tmp_path / "job.toml", doc))
    assert isinstance(job, LKCLeaderJob) and job.union_chunk_bytes == 2 << 20
    del doc["union"]["chunk_mb"]
    job = load_job(_write(tmp_path / "default.toml", doc))
    assert isinstance(job, LKCLeaderJob) and job.union_chunk_bytes == 4 << 20
