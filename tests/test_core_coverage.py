"""`make fuzz-coverage` reads gcov's counts of the generated C back onto the core's own lines
(fuzz/core_coverage.py): the .pyx files and the .pxd they cimport (the wire primitives live
in _core/wire.pxd), never Cython's own support code."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("core_coverage", ROOT / "fuzz" / "core_coverage.py")
core_coverage = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(core_coverage)


def test_lines_of_the_pyx_and_of_the_pxd_it_cimports_both_count(tmp_path):
    c_file = tmp_path / "decode.c"
    c_file.write_text(
        "\n".join(
            [
                '/* "tfrecnp/_core/decode.pyx":7',  # 1
                "a = 1;",  # 2: ran
                "}",  # 3: not executable
                '/* "wire.pxd":40',  # 4: an inline function of the .pxd, inlined here
                "b = 2;",  # 5: never ran
                "c = 3;",  # 6: ran: line 40 is covered
                '/* "wire.pxd":41',  # 7
                "d = 4;",  # 8: never ran
                '/* "View.MemoryView":100',  # 9: Cython's own
                "e = 5;",  # 10
                '/* "array.pxd":3',  # 11: a .pxd that is not the core's
                "f = 6;",  # 12
                '/* "src/tfrecnp/_core/decode.pyx":9',  # 13
                "g = 7;",  # 14: never ran
            ]
        )
    )
    counts = {2: 5, 3: None, 5: 0, 6: 1, 8: 0, 10: 9, 12: 9, 14: 0}
    assert core_coverage.source_lines(c_file, counts) == {
        "decode.pyx": {7: True, 9: False},
        "wire.pxd": {40: True, 41: False},
    }


def test_the_generated_decoder_has_lines_of_wire_pxd():
    """The real C of the decoder, every line taken as run: wire.pxd's inline functions are
    found in it, on lines wire.pxd has."""
    c_file = core_coverage.CORE / "decode.c"
    ran = {n: 1 for n in range(1, len(c_file.read_text().splitlines()) + 1)}
    lines = core_coverage.source_lines(c_file, ran)
    wire = (core_coverage.CORE / "wire.pxd").read_text().splitlines()
    assert set(lines) == {"decode.pyx", "wire.pxd"}
    assert len(lines["wire.pxd"]) > 50
    assert max(lines["wire.pxd"]) <= len(wire)
    assert any("cdef inline" in wire[n - 1] for n in lines["wire.pxd"])
