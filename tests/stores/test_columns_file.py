"""The string packing that saved metadata columns use (`stores.numpy.columns_file`)."""

from __future__ import annotations

import numpy as np
import pytest

from stores.numpy.columns_file import pack_strings, unpack_strings


def test_packed_strings_come_back_exactly() -> None:
    # Lone surrogates side by side must not merge into one character when the buffer is decoded.
    strings = ["", "a", "é", "\ud83d", "\ude00", "x" * 300, "\U0001f600", ""]
    data, ends = pack_strings(strings)
    assert data.dtype == np.uint8 and ends.dtype == np.int64
    assert unpack_strings(data, ends) == strings
    with_nul = ["a\x00b", "", "\x00", "c"]  # the separator inside a string: read by the ends instead
    assert unpack_strings(*pack_strings(with_nul)) == with_nul
    assert unpack_strings(*pack_strings([""])) == [""]
    assert unpack_strings(*pack_strings([])) == []
    with pytest.raises(ValueError, match="ends"):
        unpack_strings(data, ends[:-2])
    # Ends that cut the buffer anywhere but at its separators are refused, not sliced.
    nul_data, nul_ends = pack_strings(with_nul)
    shifted = nul_ends.copy()
    shifted[0] -= 1
    with pytest.raises(ValueError, match="separator"):
        unpack_strings(nul_data, shifted)
