"""The committed generated gRPC modules match the .proto contract."""

from __future__ import annotations

from pathlib import Path

from fedanon.protos.generate import PROTO_DIR, generate


def test_generated_code_is_fresh(tmp_path: Path) -> None:
    fresh = {p.name: p.read_bytes() for p in generate(tmp_path)}
    assert fresh, "protoc produced nothing"
    for name, content in fresh.items():
        committed = PROTO_DIR / name
        assert committed.exists(), f"{name} is not committed: run python -m fedanon.protos.generate"
        assert committed.read_bytes() == content, (
            f"{name} is stale: run python -m fedanon.protos.generate"
        )
