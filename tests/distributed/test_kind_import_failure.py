"""A daemon asked for a job kind whose handler module fails to import (#28 session 11 review).

Job kinds' modules are imported when a handshake first names the kind (party/handlers/
__init__.py): a kind whose module or one of its dependencies cannot load must be refused in
one line naming the party and the kind, audited as any refused job, with no traceback in the
daemon's log; the daemon goes on serving the kinds it can load.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import grpc
import pytest

from fedanon.federation.lkc_job import lkc_job_to_proto
from fedanon.federation.transport import make_channel
from fedanon.leader.ring import open_ring
from fedanon.leader.session import Session
from fedanon.leader.sim import federation, split_table
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.protos import fedanon_v1_pb2_grpc as pb_grpc
from tests.distributed.conftest import (
    assert_same_release,
    centralized,
    hospital_dataset,
    make_job,
    run_distributed,
)

# Loaded by every Python process the test starts (PYTHONPATH): the kind's module cannot be
# imported, as when a dependency of it is missing.
SITE = """
import os, sys
kind = os.environ.get("FEDANON_TEST_BROKEN_KIND")
if kind:
    sys.modules["fedanon.party.handlers." + kind] = None
"""


def test_a_kind_whose_module_fails_to_load_is_refused_and_the_daemon_serves_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITE, encoding="utf-8")
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])])
    )
    monkeypatch.setenv("FEDANON_TEST_BROKEN_KIND", "c45")
    data = hospital_dataset(300, seed=5)
    spec = data.spec(L=2, K=10, C="0.5")
    parts = split_table(data.table, 3, "random", seed=2)
    out = tmp_path / "release.csv"
    with federation(parts, data.taxonomy_path, workdir=tmp_path / "fed", rpc_seconds=30) as fed:
        daemon = fed.daemons[0]
        channel = make_channel(daemon.address, daemon.name, fed.leader_tls)
        try:
            with pytest.raises(grpc.RpcError) as refused:
                pb_grpc.PartyStub(channel).OpenSession(
                    pb.OpenSessionRequest(
                        ref=pb.SessionRef(session_id=secrets.token_hex(16)),
                        c45=pb.C45Job(),
                        ring=[d.name for d in fed.daemons],
                        sum_mode=pb.SUM_MODE_PAIRWISE,
                    ),
                    timeout=30,
                )
        finally:
            channel.close()
        details = refused.value.details() or ""
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED, details
        assert details.startswith(
            "party hospital-1 refused: job kind 'c45': this daemon cannot load its handler "
            "(ModuleNotFoundError: "
        ), details
        assert "\n" not in details
        # a kind's own RPC on another kind's session names the kinds that serve it, from the
        # registry (no kind's module imported for it: a broken one is no traceback)
        job = make_job(fed.hops, fed.leader_tls, data, spec, tmp_path / "o.csv")
        request = pb.OpenSessionRequest(lkc=lkc_job_to_proto(spec))
        with Session(job) as session:
            open_ring(session, spec.fingerprint_items(spec.schema(data.taxonomy)), request, "ring")
            with pytest.raises(grpc.RpcError) as wrong:
                session.stubs[daemon.name].Project(
                    pb.ProjectRequest(ref=session.ref(0)), timeout=30
                )
            assert wrong.value.code() == grpc.StatusCode.FAILED_PRECONDITION
            assert (wrong.value.details() or "").endswith("is a 'lkc' job, not a 'drbt' one")
            session.abort("test: the job comes next")
        report = run_distributed(fed.hops, fed.leader_tls, data, spec, out, rpc_seconds=30.0)
        logs = [d.log.read_text(errors="replace") for d in fed.daemons]
    assert_same_release(out, report, centralized(data, spec))
    assert "audit: job refused" in logs[0] and "cannot load its handler" in logs[0]
    assert not any("Traceback" in log for log in logs), logs[0][-2000:]
