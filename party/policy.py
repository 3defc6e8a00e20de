"""A hospital's own privacy floor: which jobs this party serves at all (party.toml ``[policy]``).

Why: the leader chooses L, K, C, the QIDs and the released columns; without a floor a party
serves whatever its leader sends (L=1, K=1, C=1 included). The policy is checked at the
handshake, before the party touches any session state, and a refusal names the party and the
first rule the job breaks, e.g. ``party hospital-b refused: K=1 below its floor min_K=5``.
The refusal reveals the rule, never data.

Every job kind's handler (party/handlers/) says how to read its request (its ``admission``,
one of the readers below for the daemon's own kinds): what it releases, and which of those
columns leave the party raw (not generalized, projected or randomized); the rules that apply
to a kind follow from what its request carries (L, K, C and QIDs for LKC; the leader, the
kind and the columns for every kind). Narrowing a job (fewer QIDs) releases more columns raw,
so a floor on L and K alone can be sidestepped: ``never_raw`` names columns that may leave only
transformed, and ``release_raw`` (strict mode) the only columns that may leave raw at all.

The same admission check refuses a handshake that is not a valid job for this party (no job,
L or K below 1, C outside (0, 1], a negative suppression budget, no or repeated QIDs, a column
the party's table does not have, a ring without this party, a malformed session id):
``INVALID_ARGUMENT`` instead of ``PERMISSION_DENIED``, with the same audit line, and, like a
policy refusal, no state change. Every served job is written to the party's log as one audit
line with its full parameters and the SHA-256 of their canonical JSON.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, NoReturn

import grpc

from fedanon.configschema import ConfigError, Flag, Integer, Key, Names, Proportion, Table, Text
from fedanon.errors import FedanonError
from fedanon.protos import fedanon_v1_pb2 as pb

log = logging.getLogger(__name__)


class PolicyRefusal(FedanonError):
    """A job below this party's floor; the message names the party and the rule."""


class InvalidJob(PolicyRefusal):
    """A handshake that is no valid job for this party (answered ``INVALID_ARGUMENT``)."""


# The session id the leader draws (secrets.token_hex(16)); the party derives keys from it.
SESSION_ID = re.compile(r"[0-9a-f]{32}")


@dataclass(frozen=True)
class JobRequest:
    """What a job asks of this party, read from its OpenSession request.

    `released` lists the party's columns the job lets leave the party in any form (generalized,
    projected, randomized, or as they are); `raw` those of them that leave as they are in the
    table (not generalized, projected or randomized); `parameters` is everything the leader
    sent, logged and hashed for the audit trail.
    """

    kind: str
    parameters: dict[str, Any]
    released: tuple[str, ...]
    raw: tuple[str, ...]
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
        raise InvalidJob(f"C={text!r} is not a number") from None


def _valid(parse: Callable[[], Any]) -> Any:
    """The kind's own parse of its job (the one its handler uses); its error as InvalidJob.

    The readers import each kind's parser when a job arrives: party.toml's ``[policy]`` is
    validated when the configuration loads, which must not import the algorithms."""
    try:
        return parse()
    except (FedanonError, ValueError, ZeroDivisionError) as exc:
        raise InvalidJob(str(exc)) from None


def _columns_exist(named: dict[str, Sequence[str]], columns: Sequence[str]) -> None:
    """Every column the job names (by role) is one of the party's, named once per role."""
    for role, names in named.items():
        if len(set(names)) != len(names):
            raise InvalidJob(f"{role} column {_first_repeat(names)[:64]!r} is named twice")
        missing = [n for n in names if n not in columns]
        if missing:
            raise InvalidJob(f"{role} column {missing[0][:64]!r} is not a column of its table")


def _first_repeat(names: Sequence[str]) -> str:
    return next(n for i, n in enumerate(names) if n in names[:i])


def lkc_request(request: pb.OpenSessionRequest, columns: Sequence[str]) -> JobRequest:
    """An LKC job: its privacy parameters, QIDs, and every table column it does not drop.

    Only the QIDs are generalized; every other released column (sensitive, class and any other
    column not dropped) leaves raw."""
    from fedanon.federation.lkc_job import lkc_job_from_proto

    job = request.lkc
    C = _exact_c(job.C)
    spec = _valid(lambda: lkc_job_from_proto(job))
    if not spec.qids:
        raise InvalidJob("the job names no QID")
    _columns_exist(
        {
            "QID": spec.qids,
            "sensitive": sorted({s.column for s in spec.sensitive}),
            "class": [spec.class_column] if spec.class_column else [],
            "dropped": spec.drop,
        },
        columns,
    )
    dropped_qid = [q for q in spec.qids if q in spec.drop]
    if dropped_qid:
        raise InvalidJob(f"QID '{dropped_qid[0]}' is also dropped")
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
    raw = tuple(c for c in released if c not in set(job.qids))
    return JobRequest("lkc", parameters, released, raw, job.L, job.K, C, tuple(job.qids))


def drbt_request(request: pb.OpenSessionRequest, columns: Sequence[str]) -> JobRequest:
    """A DRBT job uses every column: the ids go to the leader raw, the rest leave projected
    (a secret random projection of the z-scored block: transformed, not raw)."""
    from fedanon.algorithms.drbt.matrices import MATRICES

    job = request.drbt
    _columns_exist({"id": [job.id_column]}, columns)
    if job.matrix not in MATRICES:
        raise InvalidJob(f"matrix '{job.matrix}' unknown (expected one of {', '.join(MATRICES)})")
    parameters = {
        "id_column": job.id_column,
        "matrix": job.matrix,
        "k_dims": job.k_dims,
        "rescale": job.rescale,
        **_ring(request),
    }
    return JobRequest("drbt", parameters, tuple(columns), (job.id_column,))


def randomize_request(request: pb.OpenSessionRequest, columns: Sequence[str]) -> JobRequest:
    """A randomization job: its QIDs are randomized, the other columns are untouched; every
    column leaves through the union (the non-QIDs raw), none when the randomized table is kept
    at the parties. L, K and C do not apply (a hospital that wants no randomization leaves the
    kind out of its job_kinds)."""
    from fedanon.federation.randomize_job import spec_from_proto

    job = request.randomize
    spec = _valid(lambda: spec_from_proto(job))
    if not spec.qids:
        raise InvalidJob("the job names no QID")
    _columns_exist({"QID": spec.qids}, columns)
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
    raw = tuple(c for c in released if c not in spec.qids)
    return JobRequest("randomize", parameters, released, raw, qids=spec.qids)


def c45_request(request: pb.OpenSessionRequest, columns: Sequence[str]) -> JobRequest:
    """A federated C4.5 job: no record leaves the party, but the distinct values of every
    feature and of the class leave raw (the secure union of the agreed domains) and their
    counts leave in secure sums. L, K and C do not apply (a hospital that serves no C4.5
    leaves the kind out of its job_kinds; never_raw keeps a column out of it)."""
    from fedanon.federation.c45_job import c45_job_from_proto

    job = request.c45
    kinds, class_column = _valid(lambda: c45_job_from_proto(job))
    _columns_exist({"feature": kinds.features, "class": [class_column]}, columns)
    parameters = {
        "features": list(job.features),
        "numeric": list(job.numeric),
        "class": class_column,
        **_ring(request),
    }
    released = (*kinds.features, class_column)
    return JobRequest("c45", parameters, released, released)


def kactus_request(request: pb.OpenSessionRequest, columns: Sequence[str]) -> JobRequest:
    """A federated kACTUS job: every column leaves (the release: records with suppressed QID
    cells, the rest as they are), and so do the distinct QID texts (the secure union that
    agrees on their encoding); k is held to the min_K floor, the QIDs to the allowed qids."""
    from fedanon.federation.kactus_job import kactus_job_from_proto

    job = request.kactus
    options = _valid(lambda: kactus_job_from_proto(job))
    _columns_exist({"QID": options.qids, "class": [options.class_column]}, columns)
    parameters = {
        "qids": options.qids,
        "class": options.class_column,
        "k": options.k,
        "marker": options.marker,
        "numeric": options.numeric,
        "prune": options.prune,
        "narrow": options.narrow,
        **_ring(request),
    }
    released = tuple(columns)
    return JobRequest(
        "kactus", parameters, released, released, K=options.k, qids=tuple(options.qids)
    )


def evaluate_request(request: pb.OpenSessionRequest, columns: Sequence[str]) -> JobRequest:
    """A federated BE/CE/UE evaluation: no raw record leaves the party, but its training rows
    leave generalized by the release's cut (the secure union: CE's training set), and the
    distinct raw values of every feature and of the class leave raw (the secure union of BE's
    and UE's agreed domains); counts and errors leave in secure sums. So every feature and
    the class count as released raw: never_raw on a QID refuses the job."""
    from fedanon.federation.evaluate_job import task_from_proto

    job = request.evaluate
    task = _valid(lambda: task_from_proto(job))
    _columns_exist({"feature": task.features, "class": [task.class_column]}, columns)
    parameters = {
        "features": task.features,
        "qids": task.qids,
        "numeric_qids": task.numeric_qids,
        "numeric_other": task.numeric_other,
        "class": task.class_column,
        "cut": task.cut,
        "test_fraction": task.test_fraction,
        "seed": task.seed,
        **_ring(request),
    }
    released = (*task.features, task.class_column)
    return JobRequest("evaluate", parameters, released, released, qids=tuple(task.qids))


#: Reads an OpenSession request for the policy: a job kind's handler's ``admission``.
RequestReader = Callable[[pb.OpenSessionRequest, Sequence[str]], JobRequest]

#: The job kinds party.toml's ``[policy] job_kinds`` may name: the daemon's own handlers' kinds
#: (party/handlers/__init__.py; a test checks they agree). Named here, not read from the
#: handlers, because the configuration loads without importing the job kinds' algorithms.
JOB_KINDS = ("lkc", "drbt", "randomize", "c45", "kactus", "evaluate")


@dataclass(frozen=True)
class Policy:
    """The floor of party.toml's ``[policy]``; absent keys allow everything, as before."""

    min_L: int = 1
    min_K: int = 1
    max_C: Fraction = Fraction(1)
    qids: tuple[str, ...] | None = None
    never_release: tuple[str, ...] = ()
    never_raw: tuple[str, ...] = ()
    release_raw: tuple[str, ...] | None = None
    job_kinds: tuple[str, ...] | None = None  # None: every kind the daemon has a handler for
    leader: str | None = None
    allow_exclusion: bool = False  # an LKC job may rerun without this party if it drops out
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
            never_raw=tuple(table["never_raw"]),
            release_raw=None if table["release_raw"] is None else tuple(table["release_raw"]),
            job_kinds=tuple(table["job_kinds"]),
            leader=table["leader"],
            allow_exclusion=table["allow_exclusion"],
        )

    def describe(self) -> str:
        """One line for the start-up log."""
        if not self.configured:
            return "no [policy] in party.toml: no privacy floor is set; any job is served"
        return (
            f"privacy floor: min_L={self.min_L} min_K={self.min_K} max_C={self.max_C} "
            f"qids={list(self.qids) if self.qids is not None else 'any'} "
            f"never_release={list(self.never_release)} never_raw={list(self.never_raw)} "
            f"release_raw={list(self.release_raw) if self.release_raw is not None else 'any'} "
            f"job_kinds={list(self.job_kinds) if self.job_kinds is not None else 'any'} "
            f"leader={self.leader or 'the configured leader'} "
            f"allow_exclusion={str(self.allow_exclusion).lower()}"
        )


def _known_kinds(table: dict[str, Any], path: str, source: str) -> None:
    unknown = [k for k in table["job_kinds"] if k not in JOB_KINDS]
    if unknown:
        raise ConfigError(
            f"{source}: {path}.job_kinds: unknown job kind '{unknown[0]}' "
            f"(known: {', '.join(JOB_KINDS)})"
        )


def _raw_rules_agree(table: dict[str, Any], path: str, source: str) -> None:
    both = [c for c in table["release_raw"] or [] if c in table["never_raw"]]
    if both:
        raise ConfigError(
            f"{source}: {path}.release_raw: column '{both[0]}' is also in never_raw; give one"
        )


POLICY_SCHEMA = Table(
    {
        "min_L": Key(Integer(1, 2**31 - 1), default=1),
        "min_K": Key(Integer(1, 2**63 - 1), default=1),
        "max_C": Key(Proportion(), default=Fraction(1)),
        "qids": Key(Names()),
        "never_release": Key(Names(), default=[]),
        "never_raw": Key(Names(), default=[]),
        "release_raw": Key(Names()),
        "job_kinds": Key(Names(), default=list(JOB_KINDS)),
        "leader": Key(Text()),
        "allow_exclusion": Key(Flag(), default=False),
    },
    checks=(_known_kinds, _raw_rules_agree),
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
    if policy.job_kinds is not None and job.kind not in policy.job_kinds:
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
    ungeneralized = [c for c in job.raw if c in policy.never_raw]
    if ungeneralized:
        raise refuse(
            f"the job would release column '{ungeneralized[0]}' raw, which it never releases raw"
        )
    if policy.release_raw is not None:
        unnamed = [c for c in job.raw if c not in policy.release_raw]
        if unnamed:
            raise refuse(
                f"the job would release column '{unnamed[0]}' raw, which is not among its "
                "release_raw"
            )


def read_request(
    request: pb.OpenSessionRequest, columns: Sequence[str], readers: Mapping[str, RequestReader]
) -> JobRequest:
    """The job of an OpenSession request, read by its kind's reader (`readers`: the
    handlers' ``admission`` by job field); InvalidJob when it names none this daemon knows."""
    kind = request.WhichOneof("job")
    reader = readers.get(kind or "")
    if reader is None:
        raise InvalidJob("the handshake names no job")
    return reader(request, columns)


def _check_handshake(request: pb.OpenSessionRequest, party: str) -> None:
    """What every kind's handshake must hold: a session id as the leader draws it, a ring that
    names this party once and every party once, a known secure-sum protocol."""
    if not SESSION_ID.fullmatch(request.ref.session_id):
        raise InvalidJob("the session id is not 32 lowercase hex digits")
    ring = list(request.ring)
    if party not in ring:
        raise InvalidJob("the ring does not include this party")
    if len(set(ring)) != len(ring):
        raise InvalidJob(f"the ring names party {_first_repeat(ring)[:64]!r} twice")
    if request.sum_mode not in pb.SumMode.values():
        raise InvalidJob(f"sum_mode {request.sum_mode} unknown")


def admit(
    context: grpc.ServicerContext,
    policy: Policy,
    request: pb.OpenSessionRequest,
    party: str,
    leader: str | None,
    caller: str | None,
    columns: Sequence[str],
    readers: Mapping[str, RequestReader],
) -> JobRequest:
    """The handshake's gate: the job if it is valid and the policy admits it, else abort.

    Called before the servicer looks at its session, so a refused job changes no state (not
    even the party's last error); the refusal is logged as an audit line. An invalid job is
    ``INVALID_ARGUMENT``, a valid one below the floor ``PERMISSION_DENIED``.
    """
    try:
        _check_handshake(request, party)
        job = read_request(request, columns, readers)
        check_job(policy, job, party, leader, caller)
    except PolicyRefusal as exc:
        invalid = isinstance(exc, InvalidJob)
        reason = f"invalid job: {exc}" if invalid else str(exc)
        message = reason if reason.startswith("party ") else f"party {party} refused: {reason}"
        code = grpc.StatusCode.INVALID_ARGUMENT if invalid else grpc.StatusCode.PERMISSION_DENIED
        refuse_job(context, request, caller, code, message)
    return job


def refuse_job(
    context: grpc.ServicerContext,
    request: pb.OpenSessionRequest,
    caller: str | None,
    code: grpc.StatusCode,
    message: str,
) -> NoReturn:
    """End a handshake the party does not serve, with its audit line (the one log line)."""
    log.warning(
        "audit: job refused %s",
        json.dumps(
            {
                "session": request.ref.session_id[:64],
                "leader": caller,
                "kind": request.WhichOneof("job"),
                "code": code.name,
                "reason": message,
            }
        ),
    )
    context.abort(code, message)
    raise AssertionError("grpc.ServicerContext.abort returned")


def audit_served(job: JobRequest, session_id: str, leader: str | None) -> None:
    """Log the audit line of a served job: full parameters, their SHA-256, released columns."""
    log.info(
        "audit: job served %s",
        json.dumps(
            {
                "session": session_id,
                "leader": leader,
                "kind": job.kind,
                "parameters": job.parameters,
                "released": list(job.released),
                "raw": list(job.raw),
                "sha256": job.sha256(),
            },
            sort_keys=True,
        ),
    )
