"""Regenerate the Python modules of the gRPC contract: ``python -m fedanon.protos.generate``.

The generated files are committed so that installing fedanon needs no code generator;
``tests/protos/test_protos_fresh.py`` fails when they no longer match ``fedanon_v1.proto``
(regenerate with the pinned grpcio-tools of the dev extras).

The folder ``protos/`` is installed as ``fedanon.protos``; protoc derives the generated import
lines from the .proto file's path below its include root, so the contract is compiled from a
staging copy at ``fedanon/protos/fedanon_v1.proto`` and the outputs land back in this folder.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from grpc_tools import protoc

PROTO_DIR = Path(__file__).resolve().parent
PROTO_NAME = "fedanon_v1.proto"
#: The contract's path below the include root, which sets the generated import lines.
IMPORT_PATH = f"fedanon/protos/{PROTO_NAME}"


def generate(out_dir: Path) -> list[Path]:
    """Run protoc for the contract and write the generated modules into `out_dir`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    include = Path(protoc.__file__).resolve().parent / "_proto"
    with tempfile.TemporaryDirectory() as staging:
        root = Path(staging)
        source = root / IMPORT_PATH
        source.parent.mkdir(parents=True)
        shutil.copyfile(PROTO_DIR / PROTO_NAME, source)
        code = protoc.main(
            [
                "grpc_tools.protoc",
                f"-I{root}",
                f"-I{include}",
                f"--python_out={root}",
                f"--pyi_out={root}",
                f"--grpc_python_out={root}",
                str(source),
            ]
        )
        if code != 0:
            raise SystemExit(f"protoc failed with exit code {code}")
        written = []
        for generated in sorted(source.parent.glob("fedanon_v1_pb2*")):
            target = out_dir / generated.name
            shutil.copyfile(generated, target)
            written.append(target)
    return written


if __name__ == "__main__":
    written = generate(PROTO_DIR)
    print("\n".join(str(p) for p in written))
    sys.exit(0)
