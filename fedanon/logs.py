"""Logging set-up for daemons: human-readable lines, or one JSON object per line.

Handlers log protocol events with ``extra={"session": ..., "iteration": ...}`` so that JSON lines
can be filtered by session and iteration in a log pipeline.
"""

from __future__ import annotations

import json
import logging
import sys
import time

CONTEXT_FIELDS = ("session", "iteration", "party", "peer", "phase")


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message and any context fields."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in CONTEXT_FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                entry[name] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry)


def setup_logging(level: str = "INFO", fmt: str = "text") -> None:
    """Configure the root logger on stderr in the chosen format."""
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
