"""Statistical properties of the releases, each checked over many seeds with stated power.

Every check compares a statistic of many independent releases of one fixed table with the value
the model predicts, using a z-test at |z| < 4 (false alarm rate about 6e-5 per check). No scipy:
a sum of S independent chi-square(d) variables is close to normal with mean S d and variance
2 S d for S d in the hundreds.
"""

from __future__ import annotations

import numpy as np
import pytest

from fedanon.algorithms.randomization.api import anonymize_randomize
from fedanon.algorithms.randomization.bias import (
    Combination,
    expected_support,
    frequent_combinations,
    lift_bias,
)
from fedanon.algorithms.randomization.coding import encode
from fedanon.algorithms.randomization.sampler import make_rng, randomize_codes
from tests.randomization.tables import correlated_table

QIDS = ["a", "b", "c", "d"]
SEEDS = 200


def _releases(method: str, k: int = 1, sampler=randomize_codes):
    table = correlated_table()
    coded = encode(table, QIDS)
    marginals = coded.histograms()
    p = np.full(4, 0.25)
    # Release seeds apart from the table's seed 0: the same stream would select exactly the
    # records whose values it generated.
    out = [sampler(coded.codes, marginals, method, make_rng(1000 + s), p, k) for s in range(SEEDS)]
    return coded, marginals, out


def _marginal_z(coded, marginals, releases, redraw_chance: np.ndarray) -> list[float]:
    """Per QID: z of the summed scaled Pearson statistics of the released marginals.

    Redrawing each cell with chance q from the marginal keeps every count's mean and scales the
    multinomial covariance by q (2 - q) (derivation in docs/randomization.md), so
    X^2 / (q (2 - q)) is approximately chi-square with |dom| - 1 degrees of freedom.
    """
    n = coded.codes.shape[0]
    zs = []
    for i, counts in enumerate(marginals):
        expected = counts.astype(float)
        q = redraw_chance[i]
        stats = [
            ((np.bincount(r[:, i], minlength=counts.size) - expected) ** 2 / expected).sum()
            / (q * (2 - q))
            for r in releases
        ]
        dof = SEEDS * (counts.size - 1)
        zs.append((sum(stats) - dof) / np.sqrt(2 * dof))
        assert n == counts.sum()
    return zs


@pytest.mark.parametrize(("method", "k"), [("ra", 1), ("enhanced", 2)])
def test_marginals_are_preserved(method, k):
    """Power: a sampler that redraws from the uniform distribution over the domain shifts the
    marginals of this table by hundreds of counts; the same test then gives z > 100 (below)."""
    coded, marginals, releases = _releases(method, k)
    chance = np.full(4, 0.25 if method == "ra" else k / 4)
    assert max(abs(z) for z in _marginal_z(coded, marginals, releases, chance)) < 4


def test_marginal_test_rejects_a_wrong_sampler():
    def uniform_domain(codes, marginals, method, rng, p, k):
        flat = [np.ones_like(c) for c in marginals]
        return randomize_codes(codes, flat, method, rng, p, k)

    coded, marginals, releases = _releases("ra", sampler=uniform_domain)
    assert max(abs(z) for z in _marginal_z(coded, marginals, releases, np.full(4, 0.25))) > 100


@pytest.mark.parametrize(("method", "k"), [("ra", 1), ("enhanced", 3)])
def test_changed_cell_fraction_matches_expectation(method, k):
    """Power: with 200 releases of 8,000 cells the standard error of the mean fraction is 2e-4
    (RA, fraction 0.155) and 3e-4 (enhanced k = 3, fraction 0.466), so an expectation formula
    off by 1 % of the fraction (1.6e-3 and 4.7e-3) fails the 4-standard-error bound."""
    coded, _, releases = _releases(method, k)
    report = anonymize_randomize(
        correlated_table(),
        qids=QIDS,
        method=method,
        attrs=k if method == "enhanced" else None,
        seed=0,
    ).report
    expected = report["expected_changed_cell_fraction"]
    fractions = np.array([np.mean(r != coded.codes) for r in releases])
    se = fractions.std(ddof=1) / np.sqrt(SEEDS)
    assert abs(fractions.mean() - expected) < 4 * se + 1e-6


@pytest.mark.parametrize(("method", "k"), [("ra", 1), ("enhanced", 2)])
def test_measured_bias_of_frequent_combinations_agrees_with_prediction(method, k):
    """The mean support over 200 releases equals the predicted one within 4 standard errors,
    and the spread of single releases matches the predicted variance within 30 %.

    Power: the standard error is sd/14, so a prediction off by a quarter of one release's
    standard deviation fails. The combinations are the 5 most frequent pairs and triples; their
    predicted biases on this table range over more than 10 standard errors.
    """
    coded, marginals, releases = _releases(method, k)
    frequencies = [c / c.sum() for c in marginals]
    p = np.full(4, 0.25)
    combos = [
        c
        for length in (2, 3)
        for c, _ in frequent_combinations(coded.codes, coded.sizes, length, 5)
    ]
    biases = []
    for combo in combos:
        mean, variance = expected_support(combo, coded.codes, frequencies, method, p, k)
        measured = np.array([combo.support(r) for r in releases])
        se = measured.std(ddof=1) / np.sqrt(SEEDS)
        assert abs(measured.mean() - mean) < 4 * se, combo
        assert measured.var(ddof=1) == pytest.approx(variance, rel=0.3)
        biases.append((mean - combo.support(coded.codes)) / se)
    assert max(biases) - min(biases) > 10


def test_spec_lift_formula_equals_exact_expectation_for_uniform_ra():
    """B(q) = (1/m) sum_i (1/lift_i - 1), lifts counted here with plain numpy."""
    coded = encode(correlated_table(), QIDS)
    n = len(coded.codes)
    frequencies = [c / c.sum() for c in coded.histograms()]
    p = np.full(4, 0.25)
    for combo in (
        Combination((0, 1), (0, 0)),
        Combination((0, 2, 3), (2, 1, 0)),
        Combination((1, 3), (1, 4)),
    ):
        hit = [coded.codes[:, i] == v for i, v in zip(combo.positions, combo.values, strict=True)]
        supp = np.logical_and.reduce(hit).mean()
        spec = 0.0
        for j, i in enumerate(combo.positions):
            rest = np.logical_and.reduce([h for x, h in enumerate(hit) if x != j]).mean()
            lift = supp / (rest * frequencies[i][combo.values[j]])
            spec += (1 / lift - 1) / 4
        mean, _ = expected_support(combo, coded.codes, frequencies, "ra", p)
        assert (mean / n - supp) / supp == pytest.approx(spec, rel=1e-9)
        assert lift_bias(combo, coded.codes, frequencies, p) == pytest.approx(spec, rel=1e-9)


def test_expected_support_limits_known_in_closed_form():
    """Enhanced RA with k = m redraws everything: E = n prod f_i(q_i). RA whose p puts all mass
    outside Q never touches q: E = supp(q), variance 0."""
    coded = encode(correlated_table(), QIDS)
    n = len(coded.codes)
    frequencies = [c / c.sum() for c in coded.histograms()]
    combo = Combination((0, 1, 3), (1, 2, 0))
    mean, _ = expected_support(combo, coded.codes, frequencies, "enhanced", k=4)
    assert mean == pytest.approx(n * frequencies[0][1] * frequencies[1][2] * frequencies[3][0])
    mean, variance = expected_support(
        combo, coded.codes, frequencies, "ra", np.array([0.0, 0.0, 1.0, 0.0])
    )
    assert mean == combo.support(coded.codes) and variance == 0
