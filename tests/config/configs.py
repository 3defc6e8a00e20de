"""Valid job.toml / party.toml documents and a tiny TOML writer for the configuration tests.

The tests start from a valid document (as a dict), break one thing, write it with
:func:`toml_text` and feed it to the real readers and the real CLI. The writer emits every table
inline (``timeouts = {rpc_seconds = 5}``), which is valid TOML and lets any generated value,
including NaN, infinities, huge integers and control characters, reach the reader intact.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from fedanon.crypto.identity import create_ca, issue_identity, save_ca, save_identity
from fedanon.synth import generate_hospital, hospital_taxonomy_path


def toml_string(text: str) -> str:
    """A TOML basic string; control characters escaped as \\uXXXX."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{" + ", ".join(f"{toml_string(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
        )
    raise TypeError(type(value))


def toml_text(doc: dict[str, Any]) -> str:
    """A whole document, one ``key = value`` line per top-level key."""
    return "".join(f"{toml_string(k)} = {toml_value(v)}\n" for k, v in doc.items())


def make_material(root: Path) -> Path:
    """Certificates, a small hospital table and nothing else, under `root`."""
    ca = create_ca("config test CA")
    save_ca(ca, root / "certs")
    save_identity(issue_identity(ca, "hospital-a", "party"), root / "certs")
    save_identity(issue_identity(ca, "leader", "leader"), root / "certs")
    generate_hospital(60, seed=2).to_csv(root / "a.csv", index=False)
    return root


def tls(material: Path, who: str) -> dict[str, str]:
    certs = material / "certs"
    return {
        "ca": str(certs / "ca.crt"),
        "cert": str(certs / f"{who}.crt"),
        "key": str(certs / f"{who}.key"),
    }


def job_doc(material: Path, out_dir: Path) -> dict[str, Any]:
    """A valid LKC job.toml over three parties."""
    return {
        "name": "leader",
        "taxonomy": str(hospital_taxonomy_path()),
        "out": str(out_dir / "release.csv"),
        "report": str(out_dir / "report.json"),
        "sum_mode": "ring",
        "lkc": {"L": 4, "K": 20, "C": "0.2", "drop": ["patient_id"]},
        # port 9 (discard): nothing listens there, so a valid job fails fast and harmlessly
        "parties": [
            {"name": f"hospital-{c}", "address": f"127.0.0.{i}:9"} for i, c in enumerate("abc", 1)
        ],
        "tls": tls(material, "leader"),
        "timeouts": {"rpc_seconds": 60, "union_seconds": 600, "rejoin_seconds": 0},
        "union": {"workers": 1, "min_records": 4096, "pad_to": 0, "chunk_mb": 2},
    }


def drbt_doc(material: Path, out_dir: Path) -> dict[str, Any]:
    """A valid vertical DRBT job.toml (the [lkc] job with a [drbt] section instead)."""
    doc = job_doc(material, out_dir)
    del doc["lkc"], doc["taxonomy"]
    doc["drbt"] = {"id_column": "patient_id", "matrix": "sparse", "k_dims": 0, "clusters": 3}
    return doc


def randomize_doc(material: Path, out_dir: Path) -> dict[str, Any]:
    """A valid randomization job.toml: enhanced RA over three QIDs with agreed domains."""
    doc = job_doc(material, out_dir)
    del doc["lkc"], doc["taxonomy"]
    doc["randomize"] = {
        "qids": ["sex", "marital_status", "employment"],
        "method": "enhanced",
        "attrs": 2,
        "domains": {
            "sex": ["Female", "Male"],
            "marital_status": ["Married", "Single"],
            "employment": ["Employed", "Retired", "Unemployed"],
        },
    }
    return doc


def c45_doc(material: Path, out_dir: Path) -> dict[str, Any]:
    """A valid federated C4.5 job.toml (the [lkc] job with a [c45] section instead)."""
    doc = job_doc(material, out_dir)
    del doc["lkc"], doc["taxonomy"]
    doc["c45"] = {"features": ["sex", "age"], "numeric": ["age"], "class": "diagnosis"}
    return doc


def kactus_doc(material: Path, out_dir: Path) -> dict[str, Any]:
    """A valid federated kACTUS job.toml (the [lkc] job with a [kactus] section instead)."""
    doc = job_doc(material, out_dir)
    del doc["lkc"], doc["taxonomy"]
    doc["kactus"] = {"qids": ["sex", "age"], "class": "diagnosis", "k": 5}
    return doc


def evaluate_doc(material: Path, out_dir: Path) -> dict[str, Any]:
    """A valid federated BE/CE/UE job.toml (the [lkc] job with an [evaluate] section instead;
    the release is the material's table, whose QID values are then the cut)."""
    doc = job_doc(material, out_dir)
    del doc["lkc"]
    doc["out"] = str(out_dir / "figures.json")
    doc["evaluate"] = {"release": str(material / "a.csv"), "test_fraction": 0.3, "seed": 1}
    return doc


def party_doc(material: Path, out_dir: Path) -> dict[str, Any]:
    """A valid party.toml with a [policy]."""
    return {
        "name": "hospital-a",
        "listen": "127.0.0.1:9",
        "data": str(material / "a.csv"),
        "taxonomy": str(hospital_taxonomy_path()),
        "leader": "leader",
        "output_dir": str(out_dir / "out"),
        "state_dir": str(out_dir / "state"),
        "next_hop": {"name": "hospital-b", "address": "127.0.0.1:9"},
        "tls": tls(material, "hospital-a"),
        "timeouts": {
            "rpc_seconds": 60,
            "lease_seconds": 30,
            "connect_retries": 5,
            "backoff_seconds": 0.2,
            "wait_next_hop_seconds": 0,
        },
        "union": {"workers": 1, "min_records": 4096, "idle_keys": 20000},
        "limits": {"max_message_mb": 128},
        "policy": {
            "min_L": 2,
            "min_K": 5,
            "max_C": 0.5,
            "qids": ["age", "sex"],
            "never_release": ["patient_id"],
            "job_kinds": ["lkc"],
            "leader": "leader",
        },
    }


def outbound_party_doc(material: Path, out_dir: Path) -> dict[str, Any]:
    """The valid party.toml, outbound: a relay instead of a listen and a hop address."""
    doc = party_doc(material, out_dir)
    del doc["listen"], doc["next_hop"]["address"]
    return {**doc, "transport": "outbound", "relay": "127.0.0.1:9"}


def outbound_job_doc(material: Path, out_dir: Path) -> dict[str, Any]:
    """The valid LKC job.toml, outbound: the relay's listen address, no party addresses."""
    doc = job_doc(material, out_dir)
    for party in doc["parties"]:
        del party["address"]
    return {**doc, "transport": "outbound", "relay_listen": "127.0.0.1:9"}
