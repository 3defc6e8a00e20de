"""Regenerate the Python modules of the gRPC contract: ``python -m fedanon.protos.generate``.

The generated files are committed so that installing fedanon needs no code generator;
``tests/test_protos_fresh.py`` fails when they no longer match ``fedanon_v1.proto`` (regenerate
with the pinned grpcio-tools of the dev extras).
"""

from __future__ import annotations

import sys
from pathlib import Path

from grpc_tools import protoc

PROTO_DIR = Path(__file__).resolve().parent
PROTO = "protos/fedanon_v1.proto"


def generate(out_dir: Path) -> list[Path]:
    """Run protoc for the contract into `out_dir` (which mirrors the repository root)."""
    out_dir.joinpath("protos").mkdir(parents=True, exist_ok=True)
    root = PROTO_DIR.parent
    include = Path(protoc.__file__).resolve().parent / "_proto"
    code = protoc.main([
        "grpc_tools.protoc", f"-I{root}", f"-I{include}", f"--python_out={out_dir}",
        f"--pyi_out={out_dir}", f"--grpc_python_out={out_dir}", str(root / PROTO),
    ])
    if code != 0:
        raise SystemExit(f"protoc failed with exit code {code}")
    return sorted(out_dir.joinpath("protos").glob("fedanon_v1_pb2*"))


if __name__ == "__main__":
    written = generate(PROTO_DIR.parent)
    print("\n".join(str(p) for p in written))
    sys.exit(0)
