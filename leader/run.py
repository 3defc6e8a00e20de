"""``fedanon leader run``: one distributed LKC session from handshake to written release.

Order of a session: handshake (fingerprints compared item by item, columns agreed), key sharing
for the union, the specialization loop (one ring secure sum per iteration), the secure set union
of the generalized records, End. Any failure aborts the session at every reachable party, names
the party and phase, and leaves no output file. From the handshake on, a heartbeat renews the
session's lease at every party, so that however long the leader computes between messages no
other leader can take the parties over; if this leader dies, the leases lapse and the parties
accept the next job.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import grpc
import pandas as pd

from fedanon.algorithms.tds.api import build_report
from fedanon.algorithms.tds.engine import LKCEngine, StepInfo
from fedanon.algorithms.tds.layout import StatsLayout
from fedanon.errors import FedanonError
from fedanon.federation.lkc_job import lkc_job_to_proto
from fedanon.federation.transport import make_channel
from fedanon.fingerprint import fingerprint
from fedanon.leader.federation import FederationSource, PartyFailure, Traffic, describe_rpc_error
from fedanon.leader.union import UnionKeys, run_union
from fedanon.models.lkc import check_lkc
from fedanon.outputs import CommandOutputs
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.protos import fedanon_v1_pb2_grpc as pb_grpc

if TYPE_CHECKING:
    from fedanon.leader.config import LeaderJob

log = logging.getLogger(__name__)

SUM_MODES = {"ring": pb.SUM_MODE_RING, "pairwise": pb.SUM_MODE_PAIRWISE}


def _first_difference(ours: list[str], theirs: list[str]) -> str:
    """Name the first item where a party's fingerprint differs from the leader's."""
    theirs_set, ours_set = set(theirs), set(ours)
    for item in ours:
        if item not in theirs_set:
            return f"the leader has '{item}', the party does not"
    for item in theirs:
        if item not in ours_set:
            return f"the party has '{item}', the leader does not"
    return "the items are the same but in another order"


class Session:
    """Stubs to every party for one session; aborts everywhere on failure."""

    def __init__(self, job: LeaderJob) -> None:
        self.job = job
        self.session_id = secrets.token_hex(16)
        self.ring = [p.name for p in job.parties]
        self.channels = {p.name: make_channel(p.address, p.name, job.tls) for p in job.parties}
        self.stubs = {n: pb_grpc.PartyStub(c) for n, c in self.channels.items()}
        self.pool = ThreadPoolExecutor(max_workers=max(2, len(self.ring)))
        self.stop_heartbeat = threading.Event()
        self.heartbeat: threading.Thread | None = None

    def ref(self, iteration: int = 0) -> pb.SessionRef:
        return pb.SessionRef(session_id=self.session_id, iteration=iteration)

    def fan_out(self, phase: str, call: Callable[[str, pb_grpc.PartyStub], Any]) -> dict[str, Any]:
        """Call every party in parallel; the first failure (in ring order) is raised."""
        futures = {n: self.pool.submit(call, n, s) for n, s in self.stubs.items()}
        out, failure = {}, None
        for name in self.ring:
            try:
                out[name] = futures[name].result()
            except grpc.RpcError as exc:
                failure = failure or describe_rpc_error(exc, name, phase)
        if failure is not None:
            raise failure
        return out

    def keep_alive(self, opened: dict[str, Any]) -> None:
        """Renew the session's lease at every party (a quarter of the shortest lease) until
        the session closes. Call once, right after a successful handshake."""
        leases = [reply.lease_seconds for reply in opened.values() if reply.lease_seconds > 0]
        interval = min(leases) / 4 if leases else 5.0
        self.heartbeat = threading.Thread(
            target=self._renew_leases,
            args=(interval,),
            name=f"lease-{self.session_id[:8]}",
            daemon=True,
        )
        self.heartbeat.start()

    def _renew_leases(self, interval: float) -> None:
        """Best effort: a party that misses a heartbeat fails the job's next real call anyway."""
        request = pb.RenewRequest(ref=self.ref())
        while not self.stop_heartbeat.wait(interval):
            # Closing the session's channels cancels calls in flight (or refuses new ones).
            with contextlib.suppress(grpc.RpcError, grpc.FutureCancelledError, ValueError):
                calls = [
                    stub.Renew.future(request, timeout=interval) for stub in self.stubs.values()
                ]
                for call in calls:
                    with contextlib.suppress(grpc.RpcError, grpc.FutureCancelledError):
                        call.result()

    def abort(self, reason: str) -> None:
        """Best effort: tell every party to drop the session (short deadline, errors ignored)."""
        request = pb.EndRequest(ref=self.ref(), abort=True, reason=reason[:500])
        for stub in self.stubs.values():
            with contextlib.suppress(grpc.RpcError):
                stub.End(request, timeout=3)

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, _traceback: object
    ) -> None:
        """Any failure (or Ctrl-C) aborts the session at every reachable party; always close."""
        if error is not None:
            self.abort(str(error) or kind.__name__)  # type: ignore[union-attr]
        self.close()

    def close(self) -> None:
        self.stop_heartbeat.set()
        self.pool.shutdown(wait=False, cancel_futures=True)
        for channel in self.channels.values():
            channel.close()
        if self.heartbeat is not None:
            self.heartbeat.join()


def run_job(
    job: LeaderJob,
    on_step: Callable[[StepInfo], None] | None = None,
    on_phase: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run one session; write the release and report; return the report.

    `on_step` hears every specialization, `on_phase` every phase of the union that follows.
    """
    job.check()
    outputs = CommandOutputs()
    outputs.claim("out", job.out)
    outputs.claim("report", job.report)
    spec = job.spec
    schema = spec.schema(job.taxonomy)
    ours = spec.fingerprint_items(schema)
    digest = fingerprint(ours)
    timings: dict[str, float] = {}
    revealed: dict[str, int] = {}  # party record counts, only when the union reveals them
    traffic = Traffic()
    session = Session(job)
    began = time.perf_counter()
    with session:
        opened = session.fan_out(
            "handshake",
            lambda n, s: s.OpenSession(
                pb.OpenSessionRequest(
                    ref=session.ref(),
                    lkc=lkc_job_to_proto(spec),
                    ring=session.ring,
                    sum_mode=SUM_MODES[job.sum_mode],
                ),
                timeout=job.rpc_seconds,
            ),
        )
        session.keep_alive(opened)
        columns: list[str] | None = None
        for name in session.ring:
            reply = opened[name]
            if reply.fingerprint != digest:
                raise FedanonError(
                    f"handshake: party {name} differs from the leader: "
                    f"{_first_difference(ours, list(reply.fingerprint_items))}"
                )
            if columns is None:
                columns = list(reply.columns)
            elif list(reply.columns) != columns:
                raise FedanonError(
                    f"handshake: party {name} has columns {list(reply.columns)}, "
                    f"party {session.ring[0]} has {columns}"
                )
        assert columns is not None
        keys = UnionKeys.exchange(session, opened, prepare_union=job.union_mode == "layered")
        timings["handshake"] = time.perf_counter() - began

        mark = time.perf_counter()
        source = FederationSource(
            session.session_id,
            session.ring,
            session.stubs,
            StatsLayout.for_schema(schema),
            job.rpc_seconds,
            traffic,
            fan_out=session.fan_out if job.sum_mode == "pairwise" else None,
            sealed_totals=keys.sealed_totals(session.session_id),
        )
        result = LKCEngine(
            schema, spec.params, score=spec.score, on_step=on_step, suppress=spec.suppress
        ).run(source)
        timings["specialize"] = time.perf_counter() - mark

        mark = time.perf_counter()
        rows = run_union(
            session,
            keys,
            traffic,
            job.rpc_seconds,
            job.union_seconds,
            source.iteration,
            job.union_parallelism,
            job.union_pad_to,
            job.union_mode,
            result.suppressed_partitions.tolist(),
            on_phase,
            on_counts=revealed.update,
            chunk_bytes=job.union_chunk_bytes,
        )
        timings["union"] = time.perf_counter() - mark

        ended = session.fan_out(
            "end", lambda n, s: s.End(pb.EndRequest(ref=session.ref()), timeout=job.rpc_seconds)
        )

    mark = time.perf_counter()
    release = pd.DataFrame(rows, columns=columns)
    sensitive: dict[str, list[str]] = defaultdict(list)
    for s in spec.sensitive:
        sensitive[s.column].append(s.value)
    roots = {t.attribute: t.labels[t.root] for t in schema.taxonomies}
    check = check_lkc(
        release,
        spec.qids,
        dict(sensitive),
        spec.params.L,
        spec.params.K,
        spec.params.C,
        suppressed=roots if spec.suppress else None,
        max_suppressed=result.suppression_budget,
    )
    timings["check"] = time.perf_counter() - mark
    if not check.ok:
        raise FedanonError(
            f"the integrated release fails LKC-privacy ({check.worst}); nothing written"
        )
    mark = time.perf_counter()
    with outputs.writing() as staged:
        staged.table(job.out, release)
        timings["write"] = time.perf_counter() - mark
        timings["total"] = time.perf_counter() - began

        report = build_report(
            schema, spec.params, spec.score, result, spec.suppress, spec.suppressed_mode
        )
        report.update(
            {
                "mode": "distributed",
                "session_id": session.session_id,
                "parties": session.ring,
                "sum_mode": job.sum_mode,
                "union_mode": job.union_mode,
                "iterations": source.iteration,
                "seconds": {k: round(v, 4) for k, v in timings.items()},
                "leader_bytes": {"sent": traffic.sent, "received": traffic.received},
                "party_bytes": {
                    n: {"sent": r.bytes_sent, "received": r.bytes_received}
                    for n, r in ended.items()
                },
                "privacy_check": check.to_dict(),
                "party_records": revealed or None,
                "output": str(job.out),
                **job.extra_report,
            }
        )
        if job.report is not None:
            staged.json(job.report, report)
    return report


__all__ = ["PartyFailure", "run_job"]
