"""Readers for the thesis's sets: FIMI transactions as numeric rows, Iris with its class code."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fedanon.algorithms.drbt.datasets import (
    load_thesis_set,
    read_fimi_fixed,
    read_iris,
    thesis_set_path,
)
from fedanon.errors import FedanonError
from fedanon.readers.datadir import have_data


def test_fimi_transactions_become_numeric_rows(tmp_path: Path) -> None:
    path = tmp_path / "tiny.dat"
    path.write_text("1 3 6 \n2 4 5\n\n1 4 6\n", encoding="ascii")
    np.testing.assert_array_equal(read_fimi_fixed(path), [[1, 3, 6], [2, 4, 5], [1, 4, 6]])


def test_fimi_rows_of_different_length_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "ragged.dat"
    path.write_text("1 3 6\n2 4\n", encoding="ascii")
    with pytest.raises(FedanonError, match=r"ragged.dat:2: 2 items"):
        read_fimi_fixed(path)
    path.write_text("1 x 6\n", encoding="ascii")
    with pytest.raises(FedanonError, match=r":1: not a list of item ids"):
        read_fimi_fixed(path)


def test_iris_class_is_coded_in_order_of_appearance(tmp_path: Path) -> None:
    path = tmp_path / "iris.data"
    path.write_text(
        "5.1,3.5,1.4,0.2,Iris-setosa\n7.0,3.2,4.7,1.4,Iris-versicolor\n"
        "5.0,3.6,1.4,0.2,Iris-setosa\n\n",
        encoding="ascii",
    )
    np.testing.assert_allclose(read_iris(path)[:, 4], [0, 1, 0])
    np.testing.assert_allclose(read_iris(path)[1, :4], [7.0, 3.2, 4.7, 1.4])


def test_unknown_set_is_named() -> None:
    with pytest.raises(FedanonError, match="unknown data set 'pumsb'"):
        thesis_set_path("pumsb")


@pytest.mark.skipif(not have_data("fimi"), reason="shared data directory absent")
@pytest.mark.parametrize(
    ("name", "shape"),
    [("iris", (150, 5)), ("chess", (3196, 37)), ("mushroom", (8124, 23)), ("connect", (67557, 43))],
)
def test_thesis_sets_have_the_thesis_dimensions(name: str, shape: tuple[int, int]) -> None:
    data = load_thesis_set(name)
    assert data.shape == shape
    if name != "iris":
        # Column j holds one attribute: its item ids never overlap with column j + 1's.
        assert (data[:, :-1].max(axis=0) < data[:, 1:].min(axis=0)).all()
