"""The five UCI sets of the kACTUS paper's Table 2 read with UCI's documented sizes and classes.

Expected numbers are UCI's own descriptions (glass.names, ionosphere.names,
tic-tac-toe.names, the Statlog vehicle documentation, waveform+noise), not outputs of the
loader: records, input attributes, class labels and their counts.
"""

from __future__ import annotations

import pandas as pd
import pytest

from fedanon.errors import FedanonError
from fedanon.experiments.classification import numeric_columns
from fedanon.readers.datadir import data_dir
from fedanon.utility.benchmark_tables import TABLES, load_table


def has_table(name: str) -> bool:
    """Whether the shared data holds the set (decided from the files, not from the loader, so
    that a loader that lacks the set fails rather than skips)."""
    return (data_dir() / "uci" / name).is_dir()


# name: (records, inputs, class counts, every input numeric)
DOCUMENTED = {
    "glass": (214, 9, {"1": 70, "2": 76, "3": 17, "5": 13, "6": 9, "7": 29}, True),
    "ionosphere": (351, 34, {"g": 225, "b": 126}, True),
    "tic-tac-toe": (958, 9, {"positive": 626, "negative": 332}, False),
    "vehicle": (846, 18, {"opel": 212, "saab": 217, "bus": 218, "van": 199}, True),
}


@pytest.mark.parametrize("name", sorted(DOCUMENTED))
def test_uci_set_has_the_documented_records_inputs_and_classes(name):
    if not has_table(name):
        pytest.skip("needs the shared UCI data")
    records, inputs, classes, all_numeric = DOCUMENTED[name]
    table = load_table(name)
    assert table.shape == (records, inputs + 1)
    assert list(table.columns).count("class") == 1
    assert table["class"].value_counts().to_dict() == classes
    assert not (table == "").any().any()  # no empty cell (no trailing-separator column)
    numeric = numeric_columns(table, exclude=["class"])
    assert numeric == (set(table.columns) - {"class"} if all_numeric else set())


def test_glass_drops_the_record_id_that_would_predict_the_class():
    if not has_table("glass"):
        pytest.skip("needs the shared UCI data")
    glass = load_table("glass")
    assert "id" not in glass.columns
    assert list(glass.columns[:2]) == ["RI", "Na"]  # refractive index first, as in UCI
    assert glass.loc[0, "RI"] == "1.52101" and glass.loc[213, "class"] == "7"


def test_vehicle_concatenates_the_nine_parts_with_clean_labels():
    if not has_table("vehicle"):
        pytest.skip("needs the shared UCI data")
    vehicle = load_table("vehicle")
    assert vehicle.loc[0].tolist()[:3] == ["95", "48", "83"]  # first line of xaa.dat
    assert vehicle["class"].str.strip().equals(vehicle["class"])  # no "\r" or blanks left


def test_waveform_has_40_numeric_inputs_and_three_balanced_classes():
    if not has_table("waveform"):
        pytest.skip("needs the shared UCI data")
    waveform = load_table("waveform")
    assert waveform.shape == (5000, 41)
    assert numeric_columns(waveform, exclude=["class"]) == set(waveform.columns) - {"class"}
    counts = waveform["class"].value_counts()
    assert set(counts.index) == {"0", "1", "2"}
    assert all(1550 <= n <= 1800 for n in counts)  # "33 % for each of 3 classes"
    assert pd.to_numeric(waveform["x01"]).between(-10, 10).all()


def test_every_table2_set_is_listed_and_unknown_names_fail_in_one_line():
    assert {"glass", "ionosphere", "tic-tac-toe", "vehicle", "waveform"} <= set(TABLES)
    with pytest.raises(FedanonError, match="unknown benchmark table 'glas'"):
        load_table("glas")
