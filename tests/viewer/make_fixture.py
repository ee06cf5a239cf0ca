"""Writes two small mean pyramids in the layouts of the pyramid contract
(shared/design/pyramid.md, "Metadata by format") and the expectations that
tests/viewer/check_pyramid.py checks them against:

    make_fixture.py OUT

OUT/pyramid.n5/raw     N5: the group's and the levels' attributes.json
OUT/pyramid.zarr/raw   OME-NGFF 0.5 (Zarr v3, sharded levels)
OUT/expect.json        the levels (path, factors from s0, N5 order), method

s0 is uint16 [256,256,60] (x,y,z; N5 order) at 4,4,40 nm, random values;
levels factors [1,1,1], [2,2,1], [4,4,1], each the mean of the level before
as stored (integer mean rounded to nearest, ties to even), blocks 64.
"""
import json
import os
import shutil
import sys

import numpy as np
import tensorstore as ts

SHAPE = (256, 256, 60)          # N5 order: x, y, z
RES = [4.0, 4.0, 40.0]
RELATIVE = [(2, 2, 1), (2, 2, 1)]  # from each level to the next
BLOCK = [64, 64, 64]


def mean_down(a, f):
    """tensorstore's `mean` for an unsigned integer array: windows
    [f*i, min(f*i+f, n)) per axis, exact sum, rounded half to even."""
    s = a.astype(np.uint64)
    c = np.ones(a.shape, np.uint64)
    for ax, k in enumerate(f):
        starts = np.arange(0, a.shape[ax], k)
        s = np.add.reduceat(s, starts, axis=ax)
        c = np.add.reduceat(c, starts, axis=ax)
    q, r = s // c, s % c
    up = (2 * r > c) | ((2 * r == c) & (q % 2 == 1))
    return (q + up).astype(a.dtype)


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1)


def main(out):
    rng = np.random.default_rng(20250917)
    levels = [rng.integers(0, 65536, size=SHAPE, dtype=np.uint16)]
    factors = [[1, 1, 1]]
    for f in RELATIVE:
        levels.append(mean_down(levels[-1], f))
        factors.append([a * b for a, b in zip(factors[-1], f)])

    def transform(F):
        """The level's scale and translation in C order (z, y, x)."""
        scale = [r * k for r, k in zip(RES, F)]
        translate = [r * (k - 1) / 2 for r, k in zip(RES, F)]
        return scale[::-1], translate[::-1]

    # N5
    root = os.path.join(out, "pyramid.n5")
    shutil.rmtree(root, ignore_errors=True)
    group = os.path.join(root, "raw")
    os.makedirs(group)
    write_json(os.path.join(root, "attributes.json"), {"n5": "4.0.0"})
    datasets = []
    for k, (a, F) in enumerate(zip(levels, factors)):
        path = os.path.join(group, f"s{k}")
        ts.open({"driver": "n5", "kvstore": {"driver": "file", "path": path},
                 "metadata": {"dimensions": list(a.shape), "blockSize": BLOCK,
                              "dataType": "uint16", "compression": {"type": "gzip"}},
                 "create": True}).result().write(a).result()
        scale, translate = transform(F)
        t = {"axes": ["z", "y", "x"], "units": ["nm"] * 3, "scale": scale, "translate": translate}
        datasets.append({"path": f"s{k}", "transform": t})
        attrs_path = os.path.join(path, "attributes.json")
        with open(attrs_path) as f:
            attrs = json.load(f)
        attrs.update({"downsamplingFactors": F,
                      "pixelResolution": {"unit": "nm", "dimensions": RES},
                      "transform": t})
        write_json(attrs_path, attrs)
    write_json(os.path.join(group, "attributes.json"), {
        "axes": ["x", "y", "z"], "units": ["nm"] * 3, "resolution": RES,
        "scales": factors, "multiScale": True,
        "pixelResolution": {"unit": "nm", "dimensions": RES},
        "multiscales": [{"name": "raw", "datasets": datasets}]})

    # OME-NGFF 0.5
    root = os.path.join(out, "pyramid.zarr")
    shutil.rmtree(root, ignore_errors=True)
    group = os.path.join(root, "raw")
    os.makedirs(group)
    write_json(os.path.join(root, "zarr.json"),
               {"zarr_format": 3, "node_type": "group", "attributes": {}})
    datasets = []
    for k, (a, F) in enumerate(zip(levels, factors)):
        c = a.transpose()       # C order: z, y, x
        ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": os.path.join(group, f"s{k}")},
                 "metadata": {
                     "shape": list(c.shape), "data_type": "uint16", "dimension_names": ["z", "y", "x"],
                     "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [64, 128, 128]}},
                     "codecs": [{"name": "sharding_indexed", "configuration": {
                         "chunk_shape": BLOCK,
                         "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                                    {"name": "gzip", "configuration": {"level": 5}}],
                         "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                                          {"name": "crc32c"}]}}]},
                 "create": True}).result().write(c).result()
        scale, translate = transform(F)
        datasets.append({"path": f"s{k}", "coordinateTransformations": [
            {"type": "scale", "scale": scale}, {"type": "translation", "translation": translate}]})
    write_json(os.path.join(group, "zarr.json"), {
        "zarr_format": 3, "node_type": "group", "attributes": {"ome": {
            "version": "0.5",
            "multiscales": [{
                "name": "raw", "type": "mean",
                "metadata": {"method": "libn5 n5_pyramid_build", "version": "fixture",
                             "kwargs": {"method": "mean"}},
                "axes": [{"name": n, "type": "space", "unit": "nanometer"} for n in "zyx"],
                "datasets": datasets}]}}})

    write_json(os.path.join(out, "expect.json"), {
        "method": "mean",
        "levels": [{"path": f"s{k}", "factors": F} for k, F in enumerate(factors)]})


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_fixture.py OUT")
    main(sys.argv[1])
