"""Where a process finds its TLS material, as named in its configuration file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedanon.errors import FedanonError
from fedanon.tomlconfig import need, resolve


@dataclass(frozen=True)
class TLSFiles:
    """CA certificate, own certificate and own private key (PEM files)."""

    ca: Path
    cert: Path
    key: Path

    @classmethod
    def from_config(cls, table: dict[str, Any] | None, base: Path, where: str) -> TLSFiles | None:
        """Read a ``[tls]`` section; None when it says ``insecure = true``."""
        if table is None:
            raise FedanonError(f"{where}: missing [tls] section (mutual TLS is required; "
                               "set insecure = true in [tls] only for local experiments)")
        if table.get("insecure", False):
            return None
        paths = (resolve(base, need(table, k, f"{where} [tls]")) for k in ("ca", "cert", "key"))
        files = cls(*paths)
        for p in (files.ca, files.cert, files.key):
            if not p.exists():
                raise FedanonError(f"{where} [tls]: file {p} not found")
        return files
