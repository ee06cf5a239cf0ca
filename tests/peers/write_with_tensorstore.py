#!/usr/bin/env python3
"""Write N5 datasets with tensorstore's n5 driver into any tensorstore
kvstore (the object stores the tests start), for libn5 to read back.

    python write_with_tensorstore.py KVSTORE_JSON SPEC_OUT [SEED]

KVSTORE_JSON is a tensorstore kvstore spec whose "path" is the container
root. Every dtype, tensorstore's codecs (raw, gzip, bzip2, xz, zstd, blosc),
ranks 1 to 4 and dimensions that are not multiples of the block size (so
tensorstore writes its full-size edge blocks), and one sparse dataset with
blocks never written. SPEC_OUT receives, for each dataset, its path, dtype,
dimensions (N5 order) and the sha256 of its values as little-endian bytes in
N5 order (dimension 0 fastest), which is what libn5's region read of the
whole dataset gives on a little-endian machine. The random shapes are drawn
from SEED (printed).
"""

import hashlib
import importlib.metadata
import json
import sys

import numpy as np
import tensorstore as ts

DTYPES = ["uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64", "float32", "float64"]
CODECS = [
    {"type": "raw"},
    {"type": "gzip", "level": 5},
    {"type": "bzip2", "blockSize": 9},
    {"type": "xz", "preset": 3},
    {"type": "zstd", "level": 3},
    {"type": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1},
]


def main():
    kvstore = json.loads(sys.argv[1])
    out = sys.argv[2]
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 7
    rng = np.random.default_rng(seed)
    print("write_with_tensorstore.py: seed %d" % seed)
    entries = []
    for i, dtype in enumerate(DTYPES):
        codec = CODECS[i % len(CODECS)]
        rank = 1 + i % 4
        dims = [int(rng.integers(5, 40)) for _ in range(rank)]
        block = [int(rng.integers(2, 12)) for _ in range(rank)]
        path = "ts/%s-%s-r%d" % (dtype, codec["type"], rank)
        entries.append(write(kvstore, path, dtype, dims, block, codec, rng, sparse=False))
    entries.append(write(kvstore, "ts/sparse", "uint16", [40, 30], [8, 8], {"type": "zstd"}, rng, sparse=True))
    with open(out, "w", encoding="utf-8") as fh:
        version = importlib.metadata.version("tensorstore")
        json.dump({"writer": "tensorstore %s" % version, "datasets": entries}, fh, indent=1)


def write(kvstore, path, dtype, dims, block, codec, rng, sparse):
    kv = dict(kvstore)
    kv["path"] = "/".join(p for p in (kv.get("path", "").strip("/"), path) if p) + "/"
    spec = {
        "driver": "n5",
        "kvstore": kv,
        "metadata": {"dimensions": dims, "blockSize": block, "dataType": dtype, "compression": codec},
        "create": True,
        "delete_existing": True,
    }
    store = ts.open(spec).result()
    # tensorstore's n5 domain is in N5 order; numpy arrays here are indexed
    # [i0, i1, ...] in the same order.
    if dtype.startswith("float"):
        values = rng.standard_normal(dims).astype(dtype) * 1000
    else:
        info = np.iinfo(dtype)
        values = rng.integers(info.min, info.max, size=dims, dtype=dtype, endpoint=True)
    if sparse:
        values[...] = 0
        values[8:16, 0:8] = 7
        values[24:40, 16:24] = np.arange(16 * 8, dtype=dtype).reshape(16, 8)
        store[8:16, 0:8].write(values[8:16, 0:8]).result()
        store[24:40, 16:24].write(values[24:40, 16:24]).result()
    else:
        store.write(values).result()
    # N5 order: dimension 0 fastest, that is Fortran order of [i0, i1, ...].
    data = np.asfortranarray(values).astype(values.dtype.newbyteorder("<")).tobytes(order="F")
    return {"path": path, "dtype": dtype, "dims": dims, "blockSize": block,
            "compression": codec, "sha256": hashlib.sha256(data).hexdigest()}


if __name__ == "__main__":
    main()
