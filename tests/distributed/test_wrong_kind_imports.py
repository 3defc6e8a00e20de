"""A daemon refuses a message of another job kind without importing any kind's module
(#28, session 12, h-replay).

The refusal names the kinds whose sessions serve the message. It used to look them up by
importing every kind's handler module (pandas and each kind's algorithm with them), so one
stray or hostile message made a daemon that serves one kind load all of them; the registry now
declares what each kind serves (party/handlers/__init__.py).
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import grpc
import pandas as pd
import pytest

from fedanon.leader.sim import federation
from fedanon.protos import fedanon_v1_pb2 as pb
from tests.distributed.test_authorization import call, ref, requests, stub_as
from tests.distributed.test_daemon_imports import watch_daemon_imports

KINDS = ("c45", "drbt", "evaluate", "kactus", "lkc", "randomize")


def test_a_drbt_daemon_refuses_other_kinds_messages_loading_only_drbt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reports = watch_daemon_imports(tmp_path, monkeypatch)
    table = pd.DataFrame(
        {
            "pid": [f"P{i}" for i in range(20)],
            "a0": [float(i) for i in range(20)],
            "a1": [float(i % 7) for i in range(20)],
        }
    )
    session_id = secrets.token_hex(16)
    with federation([table], None, secure=True, workdir=tmp_path / "fed") as fed:
        assert fed.leader_tls is not None
        stub, channel = stub_as(fed, fed.leader_tls, index=0)
        try:
            stub.OpenSession(
                pb.OpenSessionRequest(
                    ref=ref(session_id),
                    ring=["hospital-1"],
                    drbt=pb.DRBTJob(id_column="pid", matrix="sparse"),
                ),
                timeout=30,
            )
            made = requests(session_id, pb.LKCJob(), [])
            answers = {m: call(stub, m, made[m]) for m in ("Sum", "Union", "Randomize")}
            call(stub, "End", made["End"])
        finally:
            channel.close()
        pids = [d.process.pid for d in fed.daemons if d.process is not None]
    ring = "'lkc' or 'randomize' or 'c45' or 'kactus' or 'evaluate'"
    for method, wanted in (("Sum", ring), ("Union", ring), ("Randomize", "'randomize'")):
        code, details = answers[method]
        assert code == grpc.StatusCode.FAILED_PRECONDITION, (method, code, details)
        assert details.endswith(f"is a 'drbt' job, not a {wanted} one"), (method, details)
        assert "\n" not in details
    assert len(pids) == 1
    loaded = json.loads((reports / f"{pids[0]}.json").read_text(encoding="utf-8"))
    handlers = [m for m in loaded if m.startswith("fedanon.party.handlers.")]
    assert handlers == ["fedanon.party.handlers.drbt"], loaded
