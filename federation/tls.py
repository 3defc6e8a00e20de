"""Where a process finds its TLS material, as named in its configuration file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509

from fedanon.configschema import Flag, InputFile, Key, Table
from fedanon.errors import FedanonError
from fedanon.tomlconfig import resolve

#: The ``[tls]`` table of party.toml and job.toml.
TLS_SCHEMA = Table(
    {
        "ca": Key(InputFile()),
        "cert": Key(InputFile()),
        "key": Key(InputFile()),
        "insecure": Key(Flag(), default=False),
    }
)


def insecure_warning(source: str) -> str:
    """The one warning line printed whenever TLS is off, whichever setting turned it off."""
    return f"fedanon: WARNING: {source}: no TLS, no authentication; local experiments only"


@dataclass(frozen=True)
class TLSFiles:
    """CA certificate, own certificate and own private key (PEM files)."""

    ca: Path
    cert: Path
    key: Path

    @classmethod
    def from_config(cls, table: dict[str, Any] | None, base: Path, where: str) -> TLSFiles | None:
        """Read a validated ``[tls]`` section; None when it says ``insecure = true``.

        The CA file is parsed here, so a garbage PEM is one line at start-up rather than a
        traceback (or a failed handshake) later.
        """
        if table is None:
            raise FedanonError(
                f"{where}: missing [tls] section (mutual TLS is required; "
                "set insecure = true in [tls] only for local experiments)"
            )
        if table.get("insecure", False):
            return None
        missing = [k for k in ("ca", "cert", "key") if table.get(k) is None]
        if missing:
            raise FedanonError(
                f"{where}: missing key 'tls.{missing[0]}' (a file path; or "
                "insecure = true for local experiments only)"
            )
        files = cls(*(resolve(base, str(table[k])) for k in ("ca", "cert", "key")))
        for p in (files.ca, files.cert, files.key):
            if not p.is_file():
                raise FedanonError(f"{where} [tls]: file {p} not found")
        try:
            x509.load_pem_x509_certificates(files.ca.read_bytes())
        except (ValueError, OSError):
            raise FedanonError(
                f"{where} [tls]: ca file {files.ca} holds no readable PEM certificate"
            ) from None
        return files
