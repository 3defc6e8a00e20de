"""Outbound-only transport (``transport = "outbound"``): parties dial the leader's relay.

Real daemons in their own processes, real mutual TLS, loopback. What is claimed
(docs/leakage.md "The relay", deploy/README.md "Outbound-only mode"):

- the release is the direct mode's (and so the centralized one);
- no party process (nor any process it started) has a listening TCP socket;
- the relay sees the ring's party-to-party frames only sealed: no plaintext, sizes that the
  leader's own requests already determine, and the same view whatever the split of the data;
- a tampered, replayed or misrouted relayed frame is refused with a named error, and the job
  aborts with one line naming the party;
- streams that break between calls are redialled and the job resumes; a party gone for good
  aborts the job with one line naming it, within the deadline.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fedanon.crypto.errors import CryptoError
from fedanon.errors import FedanonError
from fedanon.federation.relay_crypto import HopKeys
from fedanon.leader.federation import PartyFailure
from fedanon.leader.relay import Relay, serve_relay, stop_relay
from fedanon.leader.sim import Federation, federation, split_table
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.protos import fedanon_v1_pb2_grpc as pb_grpc
from tests.distributed.conftest import (
    LEASE_SECONDS,
    Dataset,
    assert_same_release,
    centralized,
    read_release,
    rows,
    run_distributed,
    run_matches_centralized,
)
from tests.harness.cli import run_cli_process
from tests.harness.wait import wait_while
from tools.processes import descendants

Frame = tuple[str, str, pb.TunnelFrame]


@pytest.fixture(scope="module")
def outbound_federation(hospital_data: Dataset) -> Iterator[Federation]:
    """The shared direct federation's split, outbound: three daemons that only dial out."""
    parts = split_table(hospital_data.table, 3, "random", seed=1)
    with federation(
        parts,
        hospital_data.taxonomy_path,
        lease_seconds=LEASE_SECONDS,
        rpc_seconds=30,
        transport="outbound",
    ) as fed:
        yield fed


def relay_of(fed: Federation) -> Relay:
    assert fed.relay_listen is not None
    return serve_relay(fed.relay_listen, fed.leader_tls)


def run_outbound(
    fed: Federation, data: Dataset, out: Path, on_step: Callable | None = None, **options: object
) -> dict:
    spec = data.spec(L=3, K=20, C="0.2")
    return run_distributed(
        fed.hops,
        fed.leader_tls,
        data,
        spec,
        out,
        on_step=on_step,
        relay_listen=fed.relay_listen,
        **options,
    )


class Recorder:
    """A relay observer keeping every frame (and optionally changing some in flight)."""

    def __init__(self, change: Callable[[str, str, pb.TunnelFrame], None] | None = None) -> None:
        self.frames: list[Frame] = []
        self.change = change

    def __call__(self, party: str, direction: str, frame: pb.TunnelFrame) -> None:
        if self.change is not None:
            self.change(party, direction, frame)
        kept = pb.TunnelFrame()
        kept.CopyFrom(frame)
        self.frames.append((party, direction, kept))

    def hop_calls(self) -> list[tuple[str, pb.TunnelCall]]:
        """Party-to-party calls as the relay received them: (sender, call)."""
        return [
            (party, frame.call)
            for party, direction, frame in self.frames
            if direction == "in" and frame.HasField("call")
        ]


@pytest.fixture
def recorder(outbound_federation: Federation) -> Iterator[Callable[..., Recorder]]:
    relay = relay_of(outbound_federation)

    def install(change: Callable[[str, str, pb.TunnelFrame], None] | None = None) -> Recorder:
        relay.observer = Recorder(change)
        return relay.observer

    try:
        yield install
    finally:
        relay.observer = None


# ---------------------------------------------------------------------------- no listening port
def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = fd.readlink().as_posix()
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    return inodes


def listening_ports(pid: int) -> set[int]:
    """TCP ports in state LISTEN held by `pid` or its descendants (from /proc, no psutil)."""
    inodes: set[str] = set()
    for process in descendants(pid):
        inodes |= _socket_inodes(process)
    ports = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: TCP_LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def test_no_party_listens_in_outbound_mode(
    outbound_federation: Federation, hospital_federation: Federation
) -> None:
    """Outbound daemons hold no listening socket, even after a job; direct ones do (the
    check can fail)."""
    for daemon in hospital_federation.daemons:
        assert daemon.process is not None
        port = int(daemon.address.rsplit(":", 1)[1])
        assert port in listening_ports(daemon.process.pid)
    for daemon in outbound_federation.daemons:
        assert daemon.process is not None and daemon.process.poll() is None
        assert listening_ports(daemon.process.pid) == set(), daemon.name
        assert "no listening port" in daemon.log.read_text()


# ------------------------------------------------------------------------------- equivalence
def test_outbound_release_equals_direct(
    outbound_federation: Federation,
    hospital_federation: Federation,
    hospital_data: Dataset,
    tmp_path: Path,
) -> None:
    """Same split, same job: the same release (rows as a multiset, cut, choices) both ways,
    and the centralized one."""
    spec = hospital_data.spec(L=3, K=20, C="0.2")
    direct = run_matches_centralized(hospital_federation, hospital_data, spec, tmp_path / "d.csv")
    outbound = run_matches_centralized(
        outbound_federation,
        hospital_data,
        spec,
        tmp_path / "o.csv",
        relay_listen=outbound_federation.relay_listen,
    )
    assert rows(read_release(tmp_path / "d.csv")) == rows(read_release(tmp_path / "o.csv"))
    for key in ("final_cut", "specialization_sequence", "iterations", "records"):
        assert outbound[key] == direct[key]
    for daemon in outbound_federation.daemons:
        assert listening_ports(daemon.process.pid) == set()  # type: ignore[union-attr]


def test_outbound_pairwise_and_shuffle_union_equal_centralized(
    outbound_federation: Federation, hospital_data: Dataset, tmp_path: Path
) -> None:
    """The other sum protocol and the other union travel the tunnel as well."""
    spec = hospital_data.spec(L=2, K=30, C="0.2", score="discernibility")
    report = run_matches_centralized(
        outbound_federation,
        hospital_data,
        spec,
        tmp_path / "r.csv",
        relay_listen=outbound_federation.relay_listen,
        sum_mode="pairwise",
        union_mode="shuffle",
    )
    assert report["sum_mode"] == "pairwise"


# -------------------------------------------------------------------------------- the relay's view
def test_relay_sees_hops_only_sealed(
    outbound_federation: Federation,
    hospital_data: Dataset,
    recorder: Callable[..., Recorder],
    tmp_path: Path,
) -> None:
    """Every party-to-party request a plaintext would carry the session id in; none of the
    relayed ones does; a ring sum hop is exactly the leader's own request plus the AEAD tag
    (16 bytes), so its size tells the relay nothing the leader did not send itself; no key
    the relay could try (another session's, derived from what it saw) opens it."""
    record = recorder()
    report = run_outbound(outbound_federation, hospital_data, tmp_path / "r.csv")
    hops = record.hop_calls()
    sessions = {
        frame.call.hop.session_id for _p, _d, frame in record.frames if frame.call.hop.session_id
    }
    assert len(sessions) == 1
    session_id = sessions.pop()
    sealed = [(sender, call) for sender, call in hops if call.HasField("hop")]
    methods = {call.method for _s, call in sealed}
    assert methods == {"Sum", "Union"}
    for _sender, call in sealed:
        assert session_id.encode() not in call.request
    leader_sums = {}  # the leader's own ring-sum requests (to the first party), by iteration
    for party, direction, frame in record.frames:
        call = frame.call
        if (party, direction, call.method) == ("hospital-1", "out", "Sum"):
            assert not call.HasField("hop")
            leader_sums[pb.SumRequest.FromString(call.request).ref.iteration] = len(call.request)
    sum_hops = [call for _s, call in sealed if call.method == "Sum"]
    assert len(sum_hops) == 2 * report["iterations"]  # two hops per ring sum of 3 parties
    for call in sum_hops:
        assert len(call.request) == leader_sums[call.hop.iteration] + 16
    # The relay's best try: keys it could make up; they open nothing.
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    guess = HopKeys(session_id, "hospital-1", "hospital-2", *(AESGCM(bytes(32)),) * 2)
    first = next(call for sender, call in sealed if sender == "hospital-1")
    with pytest.raises(CryptoError, match="relayed frame refused"):
        guess.open_request(first.method, first.hop, first.request)


def hop_view(record: Recorder) -> list[tuple[str, str, str, int, int]]:
    """What the relay learns of the party-to-party traffic: who, which method and iteration,
    and sizes (timing aside), in order per sender."""
    return sorted(
        (sender, call.peer, call.method, call.hop.iteration, len(call.request))
        for sender, call in record.hop_calls()
        if call.HasField("hop")
    )


@pytest.mark.slow
def test_relay_view_is_the_same_for_any_split_with_padding(
    hospital_data: Dataset, tmp_path: Path
) -> None:
    """With the union padded (pad_to), the leader learns no party's record count in direct
    mode; the relay's whole view of the party-to-party traffic (method, sender, receiver,
    iteration, size of every frame) is then identical for two very different splits of the
    same table: it can compute nothing that depends on how the records are spread."""
    table = hospital_data.table
    views = []
    for cuts in ((400, 1000), (1200, 1800)):  # 400/600/1400 records, then 1200/600/600
        parts = [table.iloc[: cuts[0]], table.iloc[cuts[0] : cuts[1]], table.iloc[cuts[1] :]]
        parts = [p.reset_index(drop=True) for p in parts]
        with federation(
            parts, hospital_data.taxonomy_path, rpc_seconds=60, transport="outbound"
        ) as fed:
            record = Recorder()
            relay_of(fed).observer = record
            run_outbound(fed, hospital_data, tmp_path / f"{cuts[0]}.csv", union_pad_to=1500)
            views.append(hop_view(record))
    assert views[0] and views[0] == views[1]


# ------------------------------------------------------------------------- tampered frames
def _tamper(kind: str) -> Callable[[str, str, pb.TunnelFrame], None]:
    """A relay that changes the third sealed ring-sum hop it passes on: flips a byte,
    replays the first one, sends it to the wrong party, or lets hospital-1 send a plain
    ``End`` to hospital-2 as if it came from the leader."""
    seen: list[pb.TunnelCall] = []

    def change(party: str, direction: str, frame: pb.TunnelFrame) -> None:
        call = frame.call
        if direction != "in" or call.method != "Sum" or not call.HasField("hop"):
            return
        if party != "hospital-1":
            return
        kept = pb.TunnelCall()
        kept.CopyFrom(call)
        seen.append(kept)
        if len(seen) != 3:
            return
        if kind == "tampered":
            data = bytearray(call.request)
            data[len(data) // 2] ^= 1
            call.request = bytes(data)
        elif kind == "unsealed":  # a party's plain call, as if the leader's
            call.ClearField("hop")
            call.method = "End"
            call.request = pb.EndRequest(
                ref=pb.SessionRef(session_id=kept.hop.session_id)
            ).SerializeToString()
        elif kind == "replayed":
            call.request, call.method = seen[0].request, seen[0].method
            call.hop.CopyFrom(seen[0].hop)
        else:
            call.peer = "hospital-3"

    return change


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("tampered", r"party hospital-2: relayed frame refused: .*tampered or misrouted"),
        ("replayed", r"party hospital-2: relayed frame refused: counter 1 replayed"),
        ("misrouted", r"party hospital-3: relayed frame refused: no hop keys with 'hospital-1'"),
        ("unsealed", r"party hospital-2: relayed frame refused: a call from party 'hospital-1'"),
    ],
    ids=["tampered", "replayed", "misrouted", "unsealed"],
)
def test_changed_relayed_frame_is_refused_with_a_named_error(
    outbound_federation: Federation,
    hospital_data: Dataset,
    recorder: Callable[..., Recorder],
    tmp_path: Path,
    kind: str,
    expected: str,
) -> None:
    recorder(_tamper(kind))
    began = time.monotonic()
    with pytest.raises(PartyFailure, match=expected) as failure:
        run_outbound(outbound_federation, hospital_data, tmp_path / "r.csv")
    assert "\n" not in str(failure.value)
    assert "secure sum, iteration 2" in str(failure.value)
    assert time.monotonic() - began < 30
    assert not (tmp_path / "r.csv").exists()


# ---------------------------------------------------------------------------- reconnection
def test_streams_dropped_between_iterations_are_redialled_and_the_job_resumes(
    outbound_federation: Federation, hospital_data: Dataset, tmp_path: Path
) -> None:
    """The relay closes every party's stream after iteration 2; each party redials (its
    daemon keeps the session), and the job ends with the centralized release."""
    relay = relay_of(outbound_federation)
    names = [d.name for d in outbound_federation.daemons]
    dropped: list[int] = []

    def drop(step: object) -> None:
        if getattr(step, "iteration", 0) != 2 or dropped:
            return
        old = {name: relay.endpoints[name] for name in names}
        for endpoint in old.values():
            endpoint.close()
        dropped.append(1)
        left = wait_while(
            lambda: [n for n in names if relay.endpoints.get(n) in (None, old[n])], 20
        )
        assert not left, f"parties {left} did not redial the relay"

    spec = hospital_data.spec(L=3, K=20, C="0.2")
    out = tmp_path / "r.csv"
    report = run_outbound(outbound_federation, hospital_data, out, on_step=drop)
    assert dropped
    assert_same_release(out, report, centralized(hospital_data, spec))


def test_a_call_made_while_a_party_redials_waits_for_it(outbound_federation: Federation) -> None:
    """The relay drops a party's stream and the leader calls the party at once: the call waits
    for the party to redial (as a direct party's port would take it) instead of failing as
    unreachable; that failure made a loaded machine's job end at its handshake."""
    relay = relay_of(outbound_federation)
    name = outbound_federation.daemons[0].name
    old = relay.endpoints[name]
    old.close()
    reply = pb_grpc.PartyStub(relay.channel(name)).Status(pb.StatusRequest(), timeout=30)
    assert reply.party == name
    assert relay.endpoints[name] is not old


@pytest.mark.slow
def test_party_gone_for_good_aborts_with_one_line_naming_it(
    outbound_federation: Federation, hospital_data: Dataset, tmp_path: Path
) -> None:
    """Party 2 is stopped after iteration 2: its predecessor retries the relay, then the job
    fails with one line naming hospital-2, well within the deadline; restarted, it redials."""
    fed = outbound_federation
    victim = fed.daemons[1]

    def stop(step: object) -> None:
        if getattr(step, "iteration", 0) == 2 and victim.process.poll() is None:  # type: ignore[union-attr]
            fed.stop(victim)

    began = time.monotonic()
    try:
        with pytest.raises(PartyFailure, match="party hospital-2") as failure:
            run_outbound(fed, hospital_data, tmp_path / "r.csv", on_step=stop)
        assert "\n" not in str(failure.value)
        assert time.monotonic() - began < 30 + 10
    finally:
        fed.start(victim)
        fed.wait_ready(victim)
    run_outbound(fed, hospital_data, tmp_path / "again.csv")


def test_leader_names_a_party_that_never_connects(
    outbound_federation: Federation, hospital_data: Dataset, tmp_path: Path
) -> None:
    """A job naming a party that has no stream open fails at the handshake, one line."""
    from fedanon.federation.config import Hop

    spec = hospital_data.spec(L=3, K=20, C="0.2")
    hops = [*outbound_federation.hops, Hop("hospital-9", "")]
    with pytest.raises(FedanonError, match="handshake: party hospital-9: not connected"):
        run_distributed(
            hops,
            outbound_federation.leader_tls,
            hospital_data,
            spec,
            tmp_path / "r.csv",
            relay_listen=outbound_federation.relay_listen,
            rpc_seconds=1.0,
        )


# ------------------------------------------------------------------------ the deployed commands
@pytest.mark.slow
def test_leader_run_with_an_outbound_job_toml(
    outbound_federation: Federation, hospital_data: Dataset, tmp_path: Path
) -> None:
    """``fedanon leader run`` on a job.toml with ``transport = "outbound"``: the relay opens in
    the leader's process, the running parties redial it, the release is the centralized one,
    and the command exits (the relay's streams do not hold the process)."""
    fed = outbound_federation
    listen = fed.relay_listen
    assert listen is not None
    stop_relay(listen)  # the parties redial the command's relay on the same port
    spec = hospital_data.spec(L=3, K=20, C="0.2")
    certs = fed.cert_dir
    out = tmp_path / "release.csv"
    parties = "".join(f'[[parties]]\nname = "{d.name}"\n' for d in fed.daemons)
    job = tmp_path / "job.toml"
    job.write_text(
        f'name = "leader"\ntaxonomy = "{hospital_data.taxonomy_path}"\nout = "{out}"\n'
        f'transport = "outbound"\nrelay_listen = "{listen}"\n'
        f'[lkc]\nL = 3\nK = 20\nC = "0.2"\ndrop = ["patient_id"]\n{parties}'
        f'[tls]\nca = "{certs / "ca.crt"}"\ncert = "{certs / "leader.crt"}"\n'
        f'key = "{certs / "leader.key"}"\n[timeouts]\nrpc_seconds = 30\n',
        encoding="utf-8",
    )
    try:
        done = run_cli_process("leader", "run", "--config", job, timeout=180)
        assert done.code == 0, done.err[-2000:]
        released = read_release(out)
        assert rows(released) == rows(centralized(hospital_data, spec).table)
    finally:
        relay_of(fed).wait_connected([d.name for d in fed.daemons], 30)


# ------------------------------------------------------------------------ another ring kind
@pytest.mark.slow
def test_outbound_randomization_has_the_global_marginals_and_the_central_plan(
    tmp_path: Path,
) -> None:
    """Federated randomization (ring sum + layered union) over outbound daemons: the leader's
    plan holds the union's exact marginals and the centralized run's Pa and p, and the release
    carries every record's non-QID columns once."""
    from collections import Counter

    from fedanon.algorithms.randomization.api import anonymize_randomize
    from fedanon.algorithms.randomization.coding import encode, observed_domain
    from fedanon.algorithms.randomization.jobspec import RandomizeSpec
    from fedanon.leader.kinds.randomize import RandomizeLeaderJob, run_randomize
    from tests.randomization.tables import correlated_table

    qids = ("a", "b", "c", "d")
    union = correlated_table(600, seed=11)
    union["id"] = [f"patient-{i:06d}" for i in range(len(union))]
    parts = [union.iloc[:150], union.iloc[150:320], union.iloc[320:]]
    parts = [p.reset_index(drop=True) for p in parts]
    spec = RandomizeSpec(qids, tuple(observed_domain(union[q]) for q in qids), p="optimal")
    plans: list = []
    with federation(parts, None, transport="outbound") as fed:
        job = RandomizeLeaderJob(
            fed.hops, fed.leader_tls, spec, tmp_path / "r.csv", relay_listen=fed.relay_listen
        )
        report = run_randomize(job, on_plan=plans.append)
        for daemon in fed.daemons:
            assert listening_ports(daemon.process.pid) == set()  # type: ignore[union-attr]
    for got, want in zip(plans[0].marginals, encode(union, qids).histograms(), strict=True):
        assert list(got) == list(want)
    central = anonymize_randomize(union, qids=qids, p="optimal", seed=1).report
    assert (report["Pa"], report["p"]) == (central["Pa"], central["p"])
    release = read_release(tmp_path / "r.csv")
    others = ["id", "disease"]
    assert Counter(map(tuple, release[others].to_numpy())) == Counter(
        map(tuple, union[others].astype(str).to_numpy())
    )


@pytest.mark.slow
def test_demo_runs_both_transports_and_compares_them(tmp_path: Path) -> None:
    out_dir = str(tmp_path / "demo")
    command = ["demo", "--rows", "300", "--json", "--out-dir", out_dir]
    done = run_cli_process(*command, timeout=300)
    assert done.code == 0, done.err[-2000:]
    report = json.loads(done.out)
    assert set(report["transports"]["seconds"]) == {"direct", "outbound"}
    assert report["transports"]["same_release"] is True
    assert report["equals_centralized_release"] is True
    assert "transport: outbound" in done.err
