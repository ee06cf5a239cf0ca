"""Writes the source volume the viewer step builds its pyramids from, and
what tests/viewer/check_pyramid.py checks them against:

    make_fixture.py OUT

OUT/source.n5/raw   uint16 [256,256,60] (x,y,z; N5 order), blocks 64, random
                    values, with `resolution` 4,4,40 and `units` nm (what
                    `n5 pyramid` carries into each format's metadata)
OUT/expect.json     the levels `n5 pyramid` makes of it (path, factors from
                    s0 in N5 order) and the method
"""
import json
import os
import shutil
import sys

import numpy as np
import tensorstore as ts

SHAPE = (256, 256, 60)  # N5 order: x, y, z


def main(out):
    src = os.path.join(out, "source.n5")
    shutil.rmtree(src, ignore_errors=True)
    t = ts.open({
        "driver": "n5",
        "kvstore": {"driver": "file", "path": src},
        "path": "raw",
        "metadata": {"dimensions": list(SHAPE), "blockSize": [64, 64, 64],
                     "dataType": "uint16", "compression": {"type": "raw"}},
        "create": True,
    }).result()
    rng = np.random.default_rng(20261128)
    # tensorstore indexes N5 arrays in N5 order.
    t[...] = rng.integers(0, 60000, SHAPE, dtype=np.uint16)
    attrs = os.path.join(src, "raw", "attributes.json")
    with open(attrs) as f:
        doc = json.load(f)
    doc.update({"resolution": [4.0, 4.0, 40.0], "units": ["nm", "nm", "nm"]})
    with open(attrs, "w") as f:
        json.dump(doc, f)
    with open(os.path.join(out, "expect.json"), "w") as f:
        json.dump({"method": "mean", "levels": [
            {"path": "s0", "factors": [1, 1, 1]},
            {"path": "s1", "factors": [2, 2, 1]},
            {"path": "s2", "factors": [4, 4, 1]},
        ]}, f)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_fixture.py OUT")
    main(sys.argv[1])
