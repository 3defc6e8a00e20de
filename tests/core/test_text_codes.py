"""`fedanon.text.text_codes` and `distinct_text_count`, and the checker's own copy
(`fedanon.models.lkc.cell_text_codes`): each must equal the cell-by-cell reading they replace,
``pd.factorize(column.astype(str))``, on every kind of column a table can hold, including the
ones whose distinct values print alike (1 and 1.0 in one object column, 0.0 and -0.0)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from fedanon.models.lkc import cell_text_codes
from fedanon.text import distinct_text_count, plain_text, text_codes

COLUMNS = {
    "python strings": pd.Series(["b", "a", "b", "c"], dtype=object),
    "strings and None": pd.Series(["b", None, "b", "a"], dtype=object),
    "mixed objects that compare equal": pd.Series([1, "1", 1.0, True, "b"], dtype=object),
    "numpy strings in objects": pd.Series([np.str_("x"), "x", np.str_("y")], dtype=object),
    "integers": pd.Series([3, 1, 3, 2]),
    "floats with signed zero and nan": pd.Series([0.0, -0.0, np.nan, 1.5, 0.0]),
    "categorical": pd.Series(pd.Categorical(["x", "y", "x"], categories=["z", "y", "x"])),
    "categorical of numbers with nan": pd.Series(pd.Categorical([1, 2, 1, None])),
    "arrow text": pd.Series(["b", "a", "b"], dtype=pd.ArrowDtype(pa.string())),
    "arrow text with null": pd.Series(["b", None, "<NA>", "b"], dtype=pd.ArrowDtype(pa.string())),
    "pandas string": pd.Series(["b", None, "b"], dtype="string"),
    "nullable integers": pd.Series([1, None, 3, 1], dtype="Int64"),
    "booleans": pd.Series([True, False, True]),
    "empty text": pd.Series([], dtype=object),
}


@pytest.mark.parametrize("name", list(COLUMNS))
@pytest.mark.parametrize("encode", [text_codes, cell_text_codes], ids=["text", "checker"])
def test_codes_equal_the_cell_by_cell_factorization(name: str, encode) -> None:
    column = COLUMNS[name]
    want_codes, want_text = pd.factorize(column.astype(str), use_na_sentinel=False)
    codes, text = encode(column)
    assert codes.dtype == np.int64
    assert codes.tolist() == want_codes.tolist()
    assert [str(t) for t in text] == [str(t) for t in want_text]
    assert all(isinstance(t, str) for t in text)


@pytest.mark.parametrize("name", list(COLUMNS))
def test_distinct_count_equals_nunique_of_the_text(name: str) -> None:
    column = COLUMNS[name]
    assert distinct_text_count(column) == column.astype(str).nunique()


def test_plain_text_gives_each_category_its_string() -> None:
    table = pd.DataFrame(
        {
            "a": pd.Categorical(["x", "y", "x"], categories=["z", "y", "x"]),
            "b": pd.Categorical([1, None, 1]),
            "c": [1, 2, 3],
        }
    )
    out = plain_text(table)
    assert out["a"].tolist() == ["x", "y", "x"] and out["a"].dtype == object
    assert out["b"].tolist() == table["b"].astype(str).tolist()
    assert out["c"].tolist() == [1, 2, 3]
    assert isinstance(table["a"].dtype, pd.CategoricalDtype)  # the input is left alone
