"""Reads the Zarr arrays libn5 wrote with zarr-python 3 and compares each
with the checksum libn5 gives for it (tests/zarr_peers.rs).

usage: read_zarr_with_zarr3.py SPEC.json

SPEC: {"root": DIR, "attributes": {...}, "arrays": [{"path", "format": 2|3,
"sha256", "shape", "dtype", "attributes"}]}, the sha256 being that of the
whole array as little-endian bytes in C order, the shape in C order (the
same spec read_zarr_with_peers.py reads with tensorstore and z5py). Every
array is opened with zarr.open_array on a LocalStore with its format given
and read whole; its shape, data type and attributes, and the root group's
attributes, must be those libn5 wrote. Runs in .venv-zarr3 (tests/peers/requirements-zarr3.txt),
not in .venv, whose zarr is 2. Prints one line per failure and exits 1 if any.
"""

import hashlib
import json
import sys

import numpy as np
import zarr
from zarr.storage import LocalStore


def digest(a):
    a = np.ascontiguousarray(a)
    return hashlib.sha256(a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()).hexdigest()


def main():
    if int(zarr.__version__.split(".")[0]) != 3:
        sys.exit(f"zarr-python 3 expected, this is zarr {zarr.__version__}")
    spec = json.load(open(sys.argv[1]))
    store = LocalStore(spec["root"], read_only=True)
    failures = []
    who = f"zarr-python {zarr.__version__}"
    formats = {a["format"] for a in spec["arrays"]}
    try:
        for fmt in formats:
            got = zarr.open_group(store=store, path="", mode="r", zarr_format=fmt).attrs.asdict()
            if got != spec["attributes"]:
                failures.append(f"{who} root group: attributes {got}, libn5 {spec['attributes']}")
    except Exception as e:  # noqa: BLE001 (every failure is reported)
        failures.append(f"{who} root group: {type(e).__name__}: {e}")
    read = 0
    for a in spec["arrays"]:
        path, want = a["path"], a["sha256"]
        try:
            arr = zarr.open_array(store=store, path=path, mode="r", zarr_format=a["format"])
            if list(arr.shape) != a["shape"] or arr.dtype != np.dtype(a["dtype"]).newbyteorder(arr.dtype.byteorder):
                failures.append(f"{who} {path}: shape {arr.shape} {arr.dtype}, libn5 {a['shape']} {a['dtype']}")
            if arr.attrs.asdict() != a["attributes"]:
                failures.append(f"{who} {path}: attributes {arr.attrs.asdict()}, libn5 {a['attributes']}")
            got = digest(arr[...])
            read += 1
            if got != want:
                failures.append(f"{who} {path}: sha256 {got}, libn5 {want}")
        except Exception as e:  # noqa: BLE001 (every failure is reported)
            failures.append(f"{who} {path}: {type(e).__name__}: {e}")
    for f in failures:
        print(f)
    print(f"read: {{'{who}': {read}}}")
    sys.exit(1 if failures else 0)


main()
