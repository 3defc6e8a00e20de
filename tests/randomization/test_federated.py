"""Federated randomization over production party daemons (in-process, mutual TLS, recorded).

Claims checked here (docs/randomization.md, "Across the federation"):

* the marginals the plan is made from are exactly the marginals of the union of the parties'
  tables, in ring and in pairwise mode;
* the integrated release is distributed like a centralized run on the union: same rows outside
  the QIDs, same Pa and p, QID marginals within the randomization's own noise;
* the view: the leader learns the global histograms and nothing finer (every Sum reply it
  gets is masked; no party's histogram or raw row reaches it), and no party sees another
  party's histogram or raw rows;
* records kept at the parties never enter a union; bad domains and bad plans are refused,
  naming the party and the column.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chi2, norm

import fedanon.party.handlers.randomize_session
from fedanon.algorithms.randomization.api import anonymize_randomize
from fedanon.algorithms.randomization.bias import expected_support, frequent_combinations
from fedanon.algorithms.randomization.coding import encode, observed_domain
from fedanon.algorithms.randomization.jobspec import RandomizeSpec
from fedanon.errors import FedanonError
from fedanon.federation.wire import from_vector, to_vector
from fedanon.leader.federation import PartyFailure
from fedanon.leader.kinds.randomize import RandomizeLeaderJob, run_randomize
from fedanon.party.handlers.randomize_session import RandomizeSession
from fedanon.protos import fedanon_v1_pb2 as pb
from tests.distributed.recording import recording_federation
from tests.randomization.tables import correlated_table

#: The chance that a correct federated randomization fails one of this file's statistical bounds.
FALSE_ALARM = 1e-6

QIDS = ("a", "b", "c", "d")
OTHER = ["id", "disease"]


def _parts(
    n: int = 900, parties: int = 3, skewed: bool = False
) -> tuple[pd.DataFrame, list[pd.DataFrame]]:
    """A union table and its split (unequal sizes, each party with unique row ids).

    `skewed` sorts the rows by QID a first, so the parties' own marginals of a (and of the
    correlated b, c) differ sharply from the global ones. A party drawing from its local
    marginal instead of the global one still preserves the global marginals (each local one
    is preserved), but its redrawn values stay correlated with its other QIDs: the joint-law
    check then fails (substituting local marginals put the most frequent pair 4.8 standard
    deviations off).
    """
    union = correlated_table(n, seed=11)
    if skewed:
        union = union.sort_values("a", kind="stable").reset_index(drop=True)
    # Long ids: a short one would turn up by chance in kilobytes of ciphertext.
    union["id"] = [f"patient-{i:06d}-of-the-union" for i in range(n)]
    cuts = np.array_split(np.arange(n), [n // 5, n // 2])[:parties]
    return union, [union.iloc[c].reset_index(drop=True) for c in cuts]


def _spec(union: pd.DataFrame, **kwargs) -> RandomizeSpec:
    return RandomizeSpec(QIDS, tuple(observed_domain(union[q]) for q in QIDS), **kwargs)


def _record_histograms(monkeypatch: pytest.MonkeyPatch) -> dict[str, np.ndarray]:
    """Each party's histogram vector as its session computes it (the test's oracle)."""
    store: dict[str, np.ndarray] = {}
    original = RandomizeSession.contribution

    def contribution(self: RandomizeSession, request) -> np.ndarray:
        vector = original(self, request)
        store[self.ring[self.position]] = vector.copy()
        return vector

    monkeypatch.setattr(
        fedanon.party.handlers.randomize_session.RandomizeSession, "contribution", contribution
    )
    return store


def _run(fed, spec: RandomizeSpec, out: Path | None, **kwargs) -> tuple[dict, list]:
    plans: list = []
    job = RandomizeLeaderJob(fed.hops, fed.leader_tls, spec, out, **kwargs)
    return run_randomize(job, on_plan=plans.append), plans


@pytest.mark.parametrize(("sum_mode", "skewed"), [("ring", False), ("pairwise", True)])
def test_global_marginals_are_the_union_marginals_and_release_matches_central(
    tmp_path, monkeypatch, sum_mode, skewed
):
    union, parts = _parts(skewed=skewed)
    spec = _spec(union, p="optimal")
    with recording_federation(parts, None, tmp_path / "fed", monkeypatch) as fed:
        report, plans = _run(fed, spec, tmp_path / "release.csv", sum_mode=sum_mode)
    central = encode(union, QIDS).histograms()
    for got, want in zip(plans[0].marginals, central, strict=True):
        np.testing.assert_array_equal(got, want)
    central_run = anonymize_randomize(union, qids=QIDS, p="optimal", seed=1).report
    assert report["Pa"] == central_run["Pa"]
    assert report["p"] == central_run["p"]

    release = pd.read_csv(tmp_path / "release.csv", dtype=str)
    assert list(release.columns) == list(union.columns)
    assert Counter(map(tuple, release[OTHER].to_numpy())) == Counter(
        map(tuple, union[OTHER].to_numpy())
    )
    # QID marginals: redrawing with chance q keeps every mean and scales the multinomial
    # covariance by q (2 - q); the summed scaled Pearson statistic over the four QIDs is about
    # chi-square with sum(|dom| - 1) degrees of freedom.
    q = np.array(plans[0].p)
    stat = 0.0
    dof = 0
    for i, counts in enumerate(central):
        released = encode(release, [QIDS[i]], [spec.domains[i]]).histograms()[0]
        stat += ((released - counts) ** 2 / counts).sum() / (q[i] * (2 - q[i]))
        dof += counts.size - 1
    # The daemons draw from the OS's randomness (no seed), so every bound below is set at a
    # false-alarm chance of FALSE_ALARM per run: a normal "4 sigma" on a 10-dof chi-square
    # fails about once in 500 runs (CI met it), and 4 sigma on each of many combinations more
    # often still. A wrong sampler moves these statistics by hundreds of sigma.
    assert chi2.sf(stat, dof) > FALSE_ALARM, (stat, dof)
    # Joint law: the support of each frequent pair and triple in the integrated release lies
    # within z standard deviations of its expectation under a centralized run on the union
    # (z: two-sided, Bonferroni over the combinations).
    coded = encode(union, QIDS)
    after = encode(release, QIDS, coded.domains).codes
    frequencies = [c / c.sum() for c in central]
    combos = [
        combo
        for length in (2, 3)
        for combo, _ in frequent_combinations(coded.codes, coded.sizes, length, 5)
    ]
    z = norm.isf(FALSE_ALARM / (2 * len(combos)))
    for combo in combos:
        mean, variance = expected_support(combo, coded.codes, frequencies, "ra", q)
        assert abs(combo.support(after) - mean) < z * np.sqrt(variance), combo


def test_view_leader_learns_only_global_histograms_and_parties_nothing_of_others(
    tmp_path, monkeypatch
):
    union, parts = _parts()
    histograms = _record_histograms(monkeypatch)
    spec = _spec(union)
    with recording_federation(parts, None, tmp_path / "fed", monkeypatch) as fed:
        _run(fed, spec, tmp_path / "release.csv")
        log = fed.log
    names = [h.name for h in fed.hops]
    length = int(sum(spec.sizes))
    total = sum(histograms[n] for n in names)

    # Leader: the only Sum reply it gets is the masked total, sealed to it by the last party;
    # the marginals it sends back are the global histograms exactly; no reply carries a
    # party's histogram or a raw id.
    leader_sum = log.of("leader", "Sum", "reply")
    assert len(leader_sum) == 1
    assert to_vector(total).data not in leader_sum[0].message.sealed_total
    sent = [r.message for r in log.of(names[0], "Randomize", "request")]
    np.testing.assert_array_equal(from_vector(sent[0].marginals, length), total)
    leader_bytes = b"".join(r.message.SerializeToString() for r in log.of("leader"))
    for n in names:
        assert to_vector(histograms[n]).data not in leader_bytes
    for row_id in union["id"]:
        assert row_id.encode() not in leader_bytes  # ids only inside encrypted union items

    # Parties: every Sum partial is the running total plus the same unknown mask, so no party
    # sees a histogram (its own excepted) in the clear; nothing carries another's raw rows.
    partials = {
        r.role: from_vector(r.message.partial, length)
        for r in log.of(kind="request", method="Sum")
        if r.role in names
    }
    masks = {
        (
            partials[n] - sum((histograms[m] for m in names[:i]), np.zeros(length, np.uint64))
        ).tobytes()
        for i, n in enumerate(names)
    }
    assert len(masks) == 1  # one mask R for the round, fresh and uniform
    for n in names:
        seen = b"".join(r.message.SerializeToString() for r in log.of(n))
        for other in names:
            if other != n:
                assert to_vector(histograms[other]).data not in seen
                for row_id in parts[names.index(other)]["id"]:
                    assert row_id.encode() not in seen
        randomize = log.of(n, "Randomize", "request")
        assert len(randomize) == 1 and randomize[0].peer == "leader"
        np.testing.assert_array_equal(from_vector(randomize[0].message.marginals, length), total)


def test_records_kept_at_parties_never_enter_a_union(tmp_path, monkeypatch):
    union, parts = _parts()
    spec = _spec(union, method="enhanced", attrs=2, keep_at_parties=True)
    with recording_federation(parts, None, tmp_path / "fed", monkeypatch) as fed:
        report, _ = _run(fed, spec, None)
        assert not fed.log.of(method="Union")
    assert report["output"] is None and report["kept_at_parties"]
    for i, hop in enumerate(fed.hops):
        files = list((tmp_path / "fed" / f"{hop.name}-out").glob("randomized-*.csv"))
        assert len(files) == 1
        kept = pd.read_csv(files[0], dtype=str)
        pd.testing.assert_frame_equal(kept[OTHER], parts[i][OTHER].astype(str), check_dtype=False)
        changed = (kept[list(QIDS)].to_numpy() != parts[i][list(QIDS)].to_numpy()).sum(axis=1)
        assert changed.max() <= 2


def test_value_outside_the_agreed_domain_names_party_and_column(tmp_path, monkeypatch):
    union, parts = _parts()
    spec = _spec(union)
    parts[1].loc[3, "c"] = "c-unknown"
    with (
        recording_federation(parts, None, tmp_path / "fed", monkeypatch) as fed,
        pytest.raises(PartyFailure) as caught,
    ):
        _run(fed, spec, tmp_path / "release.csv")
    message = str(caught.value)
    assert "party hospital-2" in message and "column 'c'" in message
    assert "c-unknown" not in message and "\n" not in message
    assert not (tmp_path / "release.csv").exists()


def test_qid_with_one_global_value_is_refused_naming_the_column(tmp_path, monkeypatch):
    union, parts = _parts()
    for part in parts:
        part["c"] = "c0"
    spec = RandomizeSpec(
        QIDS, tuple(("c0", "c1") if q == "c" else observed_domain(union[q]) for q in QIDS)
    )
    with (
        recording_federation(parts, None, tmp_path / "fed", monkeypatch) as fed,
        pytest.raises(FedanonError, match="QID column 'c' has only one value"),
    ):
        _run(fed, spec, tmp_path / "release.csv")
    assert not (tmp_path / "release.csv").exists()


def _session(union: pd.DataFrame, **kwargs) -> RandomizeSession:
    return RandomizeSession(
        "ab" * 16, _spec(union, **kwargs), union, ["p1"], "p1", pb.SUM_MODE_RING
    )


def test_party_refuses_out_of_order_messages_and_a_doctored_plan():
    union, _ = _parts()
    session = _session(union, p="optimal")
    ref = pb.SessionRef(session_id="ab" * 16, iteration=1)
    with pytest.raises(FedanonError, match="after the histogram sum"):
        session.randomize(pb.RandomizeRequest(ref=ref))
    with pytest.raises(FedanonError, match="no union before Randomize"):
        session.release_table()
    vector = session.contribution(pb.SumRequest(ref=pb.SessionRef(session_id="ab" * 16)))
    plan = session.spec.plan(encode(union, QIDS).histograms())
    doctored = list(plan.p[::-1])
    with pytest.raises(FedanonError, match="probabilities differ"):
        session.randomize(pb.RandomizeRequest(ref=ref, marginals=to_vector(vector), p=doctored))
    smaller = vector.copy()
    smaller[0] -= 1
    with pytest.raises(FedanonError, match="column 'a': the global marginal is smaller"):
        session.randomize(
            pb.RandomizeRequest(ref=ref, marginals=to_vector(smaller), p=list(plan.p))
        )
    session.randomize(pb.RandomizeRequest(ref=ref, marginals=to_vector(vector), p=list(plan.p)))
    assert len(session.release_table()) == len(union)


def test_kept_records_refuse_the_union():
    union, _ = _parts()
    session = _session(union, keep_at_parties=True)
    with pytest.raises(FedanonError, match="keeps the randomized records at the parties"):
        session.release_table()


def test_leader_run_with_a_randomize_job_toml(tmp_path, monkeypatch):
    from tests.harness.cli import run_cli

    union, parts = _parts()
    with recording_federation(parts, None, tmp_path / "fed", monkeypatch) as fed:
        tls = fed.leader_tls
        domains = "\n".join(f"{q} = {list(observed_domain(union[q]))}" for q in QIDS)
        hops = "\n".join(
            f'[[parties]]\nname = "{h.name}"\naddress = "{h.address}"' for h in fed.hops
        )
        job = tmp_path / "job.toml"
        job.write_text(
            f"""out = "release.csv"
report = "report.json"
[randomize]
qids = {list(QIDS)}
method = "enhanced"
attrs = 3
[randomize.domains]
{domains}
[tls]
ca = "{tls.ca}"
cert = "{tls.cert}"
key = "{tls.key}"
{hops}
""".replace("'", '"'),
            encoding="utf-8",
        )
        done = run_cli("leader", "run", "--config", job, "--json")
        assert done.code == 0, done.err
    report = json.loads((tmp_path / "report.json").read_text())
    assert json.loads(done.out)["session_id"] == report["session_id"]
    assert report["attrs"] == 3 and report["records"] == len(union)
    release = pd.read_csv(tmp_path / "release.csv", dtype=str)
    assert sorted(release["id"]) == sorted(union["id"])
