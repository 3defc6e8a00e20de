"""A hospital's own privacy floor: which jobs this party serves at all (party.toml ``[policy]``).

Why: the leader chooses L, K, C, the QIDs and the released columns; without a floor a party
serves whatever its leader sends (L=1, K=1, C=1 included). The policy is checked at the
handshake, before the party touches any session state, and a refusal names the party and the
first rule the job breaks, e.g. ``party hospital-b refused: K=1 below its floor min_K=5``.
The refusal reveals the rule, never data.

Every job kind the daemon knows registers in :data:`JOB_KINDS` how to read its request; the
rules that apply to a kind follow from what its request carries (L, K, C and QIDs for LKC; the
leader, the kind and the columns for every kind). Every served job is written to the party's
log as one audit line with its full parameters and the SHA-256 of their canonical JSON.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import grpc

from fedanon.configschema import ConfigError, Integer, Key, Names, Proportion, Table, Text
from fedanon.errors import FedanonError
from fedanon.protos import fedanon_v1_pb2 as pb

log = logging.getLogger(__name__)


class PolicyRefusal(FedanonError):
    """A job below this party's floor; the message names the party and the rule."""


@dataclass(frozen=True)
class JobRequest:
    """What a job asks of this party, read from its OpenSession request.

    `released` lists the party's columns the job lets leave the party in any form (generalized,
    projected, or as the ids the leader joins on); `parameters` is everything the leader sent,
    logged and hashed for the audit trail.
    """

    kind: str
    parameters: dict[str, Any]
    released: tuple[str, ...]
    L: int | None = None
    K: int | None = None
    C: Fraction | None = None
    qids: tuple[str, ...] = ()

    def canonical(self) -> str:
        """The job spec as canonical JSON (sorted keys, no spaces): what the hash covers."""
        return json.dumps(
            {"kind": self.kind, **self.parameters},
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=True,
        )

    def sha256(self) -> str:
        return hashlib.sha256(self.canonical().encode("ascii")).hexdigest()


def _ring(request: pb.OpenSessionRequest) -> dict[str, Any]:
    return {"ring": list(request.ring), "sum_mode": pb.SumMode.Name(request.sum_mode)}


def _exact_c(text: str) -> Fraction:
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        raise PolicyRefusal(f"C={text!r} is not a number") from None


def lkc_request(request: pb.OpenSessionRequest, columns: Sequence[str]) -> JobRequest:
    """An LKC job: its privacy parameters, QIDs, and every table column it does not drop."""
    job = request.lkc
    sensitive = [f"{s.column}={s.value}" for s in job.sensitive]
    parameters = {
        "L": job.L,
        "K": job.K,
        "C": job.C,
        "score": job.score,
        "qids": list(job.qids),
        "sensitive": sensitive,
        "class": job.class_column or None,
        "class_values": list(job.class_values),
        "drop": list(job.drop_columns),
        **_ring(request),
    }
    released = tuple(c for c in columns if c not in set(job.drop_columns))
    return JobRequest("lkc", parameters, released, job.L, job.K, _exact_c(job.C), tuple(job.qids))


def drbt_request(request: pb.OpenSessionRequest, columns: Sequence[str]) -> JobRequest:
    """A DRBT job uses every column: the ids go to the leader, the rest leave projected."""
    job = request.drbt
    parameters = {
        "id_column": job.id_column,
        "matrix": job.matrix,
        "k_dims": job.k_dims,
        "rescale": job.rescale,
        **_ring(request),
    }
    return JobRequest("drbt", parameters, tuple(columns))


def randomize_request(request: pb.OpenSessionRequest, columns: Sequence[str]) -> JobRequest:
    """A randomization job: its QIDs are randomized; every column leaves through the union,
    none when the randomized table is kept at the parties. L, K and C do not apply (a hospital
    that wants no randomization leaves the kind out of its job_kinds)."""
    job = request.randomize
    parameters = {
        "qids": [q.column for q in job.qids],
        "domain_sizes": [len(q.values) for q in job.qids],
        "method": job.method,
        "attrs": job.attrs,
        "p": job.p,
        "p_values": list(job.p_values),
        "keep_at_parties": job.keep_at_parties,
        **_ring(request),
    }
    released = () if job.keep_at_parties else tuple(columns)
    return JobRequest("randomize", parameters, released, qids=tuple(q.column for q in job.qids))


# The job kinds this daemon can serve: the OpenSessionRequest ``job`` field name -> its reader.
JOB_KINDS: dict[str, Callable[[pb.OpenSessionRequest, Sequence[str]], JobRequest]] = {
    "lkc": lkc_request,
    "drbt": drbt_request,
    "randomize": randomize_request,
}


@dataclass(frozen=True)
class Policy:
    """The floor of party.toml's ``[policy]``; absent keys allow everything, as before."""

    min_L: int = 1
    min_K: int = 1
    max_C: Fraction = Fraction(1)
    qids: tuple[str, ...] | None = None
    never_release: tuple[str, ...] = ()
    job_kinds: tuple[str, ...] = tuple(JOB_KINDS)
    leader: str | None = None
    configured: bool = field(default=True, compare=False)

    @classmethod
    def from_table(cls, table: dict[str, Any] | None) -> Policy:
        """From the validated ``[policy]`` table; None (no table) is the open policy."""
        if table is None:
            return cls(configured=False)
        return cls(
            min_L=table["min_L"],
            min_K=table["min_K"],
            max_C=table["max_C"],
            qids=None if table["qids"] is None else tuple(table["qids"]),
            never_release=tuple(table["never_release"]),
            job_kinds=tuple(table["job_kinds"]),
            leader=table["leader"],
        )

    def describe(self) -> str:
        """One line for the start-up log."""
        if not self.configured:
            return "no [policy] in party.toml: no privacy floor is set; any job is served"
        return (
            f"privacy floor: min_L={self.min_L} min_K={self.min_K} max_C={self.max_C} "
            f"qids={list(self.qids) if self.qids is not None else 'any'} "
            f"never_release={list(self.never_release)} job_kinds={list(self.job_kinds)} "
            f"leader={self.leader or 'the configured leader'}"
        )


def _known_kinds(table: dict[str, Any], path: str, source: str) -> None:
    unknown = [k for k in table["job_kinds"] if k not in JOB_KINDS]
    if unknown:
        raise ConfigError(
            f"{source}: {path}.job_kinds: unknown job kind '{unknown[0]}' "
            f"(known: {', '.join(JOB_KINDS)})"
        )


POLICY_SCHEMA = Table(
    {
        "min_L": Key(Integer(1, 2**31 - 1), default=1),
        "min_K": Key(Integer(1, 2**63 - 1), default=1),
        "max_C": Key(Proportion(), default=Fraction(1)),
        "qids": Key(Names()),
        "never_release": Key(Names(), default=[]),
        "job_kinds": Key(Names(), default=list(JOB_KINDS)),
        "leader": Key(Text()),
    },
    checks=(_known_kinds,),
)


def check_job(
    policy: Policy, job: JobRequest, party: str, leader: str | None, caller: str | None
) -> None:
    """Refuse `job` (PolicyRefusal naming `party` and the first rule broken) or return.

    `leader` is the leader this party accepts (``[policy] leader``, else party.toml's
    ``leader``); `caller` the certificate name of whoever asked (None without TLS, where no
    identity can be checked).
    """

    def refuse(rule: str) -> PolicyRefusal:
        return PolicyRefusal(f"party {party} refused: {rule}")

    allowed_leader = policy.leader or leader
    if caller is not None and allowed_leader is not None and caller != allowed_leader:
        raise refuse(f"leader '{caller}' is not its leader '{allowed_leader}'")
    if job.kind not in policy.job_kinds:
        raise refuse(f"job kind '{job.kind}' not among its job_kinds {list(policy.job_kinds)}")
    if job.L is not None and policy.min_L > job.L:
        raise refuse(f"L={job.L} below its floor min_L={policy.min_L}")
    if job.K is not None and policy.min_K > job.K:
        raise refuse(f"K={job.K} below its floor min_K={policy.min_K}")
    if job.C is not None and policy.max_C < job.C:
        raise refuse(f"C={job.C} above its ceiling max_C={policy.max_C}")
    if policy.qids is not None:
        outside = [q for q in job.qids if q not in policy.qids]
        if outside:
            raise refuse(f"QID '{outside[0]}' not among its allowed qids")
    forbidden = [c for c in job.released if c in policy.never_release]
    if forbidden:
        raise refuse(f"the job would release column '{forbidden[0]}', which it never releases")


def read_request(request: pb.OpenSessionRequest, columns: Sequence[str]) -> JobRequest | None:
    """The job of an OpenSession request, or None for a kind this daemon does not know."""
    kind = request.WhichOneof("job")
    reader = JOB_KINDS.get(kind or "")
    return None if reader is None else reader(request, columns)


def admit(
    context: grpc.ServicerContext,
    policy: Policy,
    request: pb.OpenSessionRequest,
    party: str,
    leader: str | None,
    caller: str | None,
    columns: Sequence[str],
) -> JobRequest | None:
    """The handshake's gate: the job if the policy admits it, else abort the call.

    Called before the servicer looks at its session, so a refused job changes no state (not
    even the party's last error); the refusal is logged as an audit line.
    """
    try:
        job = read_request(request, columns)
        if job is not None:
            check_job(policy, job, party, leader, caller)
    except PolicyRefusal as exc:
        message = str(exc) if str(exc).startswith("party ") else f"party {party} refused: {exc}"
        log.warning(
            "audit: job refused %s",
            json.dumps(
                {"session": request.ref.session_id[:64], "leader": caller, "reason": message}
            ),
        )
        context.abort(grpc.StatusCode.PERMISSION_DENIED, message)
    return job


def audit_served(job: JobRequest | None, session_id: str, leader: str | None) -> None:
    """Log the audit line of a served job: full parameters, their SHA-256, released columns."""
    if job is None:
        return
    log.info(
        "audit: job served %s",
        json.dumps(
            {
                "session": session_id,
                "leader": leader,
                "kind": job.kind,
                "parameters": job.parameters,
                "released": list(job.released),
                "sha256": job.sha256(),
            },
            sort_keys=True,
        ),
    )
