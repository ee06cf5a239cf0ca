"""Reads the Zarr arrays libn5 wrote with the peers and compares each with
the checksum libn5 gives for it.

usage: read_zarr_with_peers.py SPEC.json

SPEC: {"root": DIR, "arrays": [{"path", "format": 2|3, "sha256"}]}, the
sha256 being that of the whole array as little-endian bytes in C order.
tensorstore reads every array (its zarr3 driver for v3, zarr for v2);
z5py reads the v2 ones it can read (C order, little-endian or one-byte
elements: z5 refuses the others). Prints one line per failure and exits 1 if any.
"""

import hashlib
import json
import sys

import numpy as np
import tensorstore as ts


def digest(a):
    a = np.ascontiguousarray(a)
    return hashlib.sha256(a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()).hexdigest()


def main():
    spec = json.load(open(sys.argv[1]))
    root = spec["root"]
    failures = []
    counts = {"tensorstore": 0, "z5py": 0}
    for a in spec["arrays"]:
        path, want = a["path"], a["sha256"]
        driver = "zarr3" if a["format"] == 3 else "zarr"
        try:
            arr = ts.open(
                {"driver": driver, "kvstore": {"driver": "file", "path": f"{root}/{path}"}},
                open=True,
            ).result()
            got = digest(arr.read().result())
            counts["tensorstore"] += 1
            if got != want:
                failures.append(f"tensorstore {path}: sha256 {got}, libn5 {want}")
        except Exception as e:  # noqa: BLE001 (every failure is reported)
            failures.append(f"tensorstore {path}: {e}")
        if a["format"] == 2:
            meta = json.load(open(f"{root}/{path}/.zarray"))
            if meta["order"] != "C" or meta["dtype"].startswith(">"):
                continue
            try:
                import z5py

                f = z5py.File(root, use_zarr_format=True, mode="r")
                got = digest(f[path][...])
                counts["z5py"] += 1
                if got != want:
                    failures.append(f"z5py {path}: sha256 {got}, libn5 {want}")
            except Exception as e:  # noqa: BLE001
                failures.append(f"z5py {path}: {e}")
    for f in failures:
        print(f)
    print(f"read: {counts}")
    sys.exit(1 if failures else 0)


main()
