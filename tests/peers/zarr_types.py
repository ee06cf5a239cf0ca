"""zarr-python 3 against libn5 on every Zarr data type beyond the ten numeric
ones (nwb.md section 1): bool, float16, complex64/128, fixed-length UTF-32
strings, fixed bytes (null-terminated and raw), structs, datetime64 and
timedelta64, and 0-d arrays, in Zarr v2 and v3, with random shapes, chunks,
shards and fill values.

    zarr_types.py write OUT SEED   arrays in OUT/v2.zarr and OUT/v3.zarr, and
                                   OUT/manifest.json: for each array its path,
                                   format and every element as libn5's
                                   n5_region_read_json gives it (C order)
    zarr_types.py check DIR        every array of DIR/created.json (written by
                                   libn5 with n5_dataset_create) holds the
                                   values it lists, as element_json gives them
    zarr_types.py compare A B      every array of the manifest in A/ equals
                                   the one at the same path in B/ (written by
                                   libn5), element for element and in fill
                                   value
"""
import base64
import json
import math
import os
import sys

import numcodecs
import numpy as np
import zarr


def float_json(x):
    x = float(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return x


def element_json(x, dt):
    """One element as n5_region_read_json gives it."""
    if dt in ("str", "bytes"):
        return str(x) if dt == "str" else base64.b64encode(bytes(x)).decode()
    if dt.fields is not None:
        return {name: element_json(x[name], dt.fields[name][0]) for name in dt.names}
    k = dt.kind
    if k == "b":
        return bool(x)
    if k in "iu":
        return int(x)
    if k == "f":
        return float_json(x)
    if k == "c":
        return [float_json(x.real), float_json(x.imag)]
    if k == "U":
        return str(x)
    if k == "S":
        return base64.b64encode(bytes(x).rstrip(b"\0")).decode()
    if k == "V":
        return base64.b64encode(bytes(x)).decode()
    if k in "Mm":
        return int(np.asarray(x).view("<i8"))
    raise ValueError(dt)


def random_value(rng, dt):
    if dt == "str":
        alphabet = list("abcé😀 \n\"\\x")
        return "".join(rng.choice(alphabet) for _ in range(int(rng.integers(0, 12))))
    if dt == "bytes":
        return bytes(int(b) for b in rng.integers(0, 256, int(rng.integers(0, 12))))
    if dt.fields is not None:
        return tuple(random_value(rng, dt.fields[n][0]) for n in dt.names)
    k = dt.kind
    if k == "b":
        return bool(rng.integers(0, 2))
    if k in "iu":
        info = np.iinfo(dt)
        return int(rng.integers(max(info.min, -1000), min(info.max, 1000)))
    if k == "f":
        return float(rng.choice([0.5, -2.25, 1e-7, np.nan, np.inf, 3.0, 65504.0 if dt.itemsize == 2 else 1e30]))
    if k == "c":
        return complex(rng.normal(), rng.choice([0.0, -1.5, np.nan]))
    if k == "U":
        n = dt.itemsize // 4
        alphabet = "abcé😀 xyz"
        return "".join(rng.choice(list(alphabet)) for _ in range(int(rng.integers(0, n + 1))))
    if k == "S":
        n = dt.itemsize
        return bytes(int(b) for b in rng.integers(1, 256, int(rng.integers(0, n + 1))))
    if k == "V":
        return np.void(bytes(int(b) for b in rng.integers(0, 256, dt.itemsize)))
    if k in "Mm":
        v = int(rng.integers(-(10**12), 10**12))
        return np.array(v, dtype="<i8").view(dt)[()]
    raise ValueError(dt)


def random_array(rng, dt, shape):
    a = np.empty(shape, dtype=object if dt in ("str", "bytes") else dt)
    for idx in np.ndindex(*shape):
        a[idx] = random_value(rng, dt)
    return a


DTYPES = [
    "|b1", "<f2", ">f2", "<c8", ">c16", "<U5", ">U3", "|S4", "|V3",
    "<M8[ms]", ">M8[10s]", "<m8[us]",
    [("idx_start", "<i4"), ("count", "<i4"), ("timeseries", "<U12")],
    [("x", "<f4"), ("flag", "|b1"), ("when", "<M8[s]"), ("z", "<c8")],
    "str", "bytes",
]


def zarr_dtype(dt):
    """The zarr-python data type of an entry of DTYPES."""
    from zarr.core.dtype import VariableLengthBytes, VariableLengthUTF8
    if dt == "str":
        return VariableLengthUTF8()
    if dt == "bytes":
        return VariableLengthBytes()
    return dt


def write(out, seed):
    rng = np.random.default_rng(seed)
    arrays = []
    for fmt in (2, 3):
        root = zarr.open_group(os.path.join(out, f"v{fmt}.zarr"), mode="w", zarr_format=fmt)
        for i, spec in enumerate(DTYPES):
            dt = spec if spec in ("str", "bytes") else np.dtype(spec)
            if fmt == 3 and spec not in ("str", "bytes") and dt.byteorder == ">":
                # Zarr v3 has one byte order per array, in its bytes codec.
                dt = dt.newbyteorder("<")
            for rank in (0, 1, 2):
                if spec == "bytes" and rank == 0:
                    continue  # zarr-python 3.4 cannot write a 0-d vlen-bytes array
                shape = tuple(int(rng.integers(1, 9)) for _ in range(rank))
                chunks = tuple(int(rng.integers(1, s + 1)) for s in shape)
                kwargs = {}
                if fmt == 2:
                    # numcodecs' compressors take no buffers of datetimes.
                    has_time = spec not in ("str", "bytes") and ("M8" in str(dt.descr) or "m8" in str(dt.descr))
                    kwargs["compressors"] = None if has_time else [numcodecs.Zstd(level=1)]
                if fmt == 3 and rank > 0 and rng.integers(0, 2):
                    shards = tuple(c * int(rng.integers(1, 3)) for c in chunks)
                    kwargs["shards"] = shards
                fill = random_value(rng, dt) if rng.integers(0, 2) else None
                name = f"t{i}_r{rank}"
                a = root.create_array(
                    name, shape=shape, chunks=chunks, dtype=zarr_dtype(dt),
                    fill_value=fill, **kwargs)
                data = random_array(rng, dt, shape)
                if rank > 0 and rng.integers(0, 2):
                    # Leave part unwritten: it reads as the fill value.
                    sl = tuple(slice(0, max(1, s // 2)) for s in shape)
                    a[sl] = data[sl]
                    if spec in ("str", "bytes"):
                        full = np.empty(shape, dtype=object)
                        for idx in np.ndindex(*shape):
                            full[idx] = a.fill_value
                    else:
                        full = np.full(shape, a.fill_value, dtype=dt) if a.fill_value is not None else np.zeros(shape, dt)
                    full[sl] = data[sl]
                    data = full
                else:
                    a[...] = data
                back = a[...]
                values = [element_json(x, dt) for x in np.asarray(back).reshape(-1)]
                shown = dt if isinstance(dt, str) else (str(dt) if dt.fields is None else dt.descr)
                arrays.append({"format": fmt, "path": f"v{fmt}.zarr/{name}", "dtype": shown,
                               "shape": list(shape), "values": values})
    # Zarr v3 codecs named numcodecs.<id> (numcodecs.zarr3, as hdmf-zarr's
    # convert_to_v3 writes them), on numeric and string arrays.
    import numcodecs.zarr3 as nz
    root = zarr.open_group(os.path.join(out, "v3.zarr"), mode="a", zarr_format=3)
    for name, codec in [
        ("blosc", nz.Blosc(cname="lz4", clevel=5, shuffle=1)),
        ("zlib", nz.Zlib(level=3)),
        ("gzip", nz.GZip(level=4)),
        ("zstd", nz.Zstd(level=2)),
        ("bz2", nz.BZ2(level=2)),
        ("lzma", nz.LZMA(preset=1)),
        ("lz4", nz.LZ4()),
    ]:
        for spec in ("<f4", "str"):
            dt = spec if spec == "str" else np.dtype(spec)
            shape = (int(rng.integers(5, 40)),)
            a = root.create_array(f"numcodecs_{name}_{'s' if spec == 'str' else 'f'}", shape=shape,
                                  chunks=(int(rng.integers(1, shape[0] + 1)),), dtype=zarr_dtype(dt),
                                  compressors=[codec])
            data = random_array(rng, dt, shape)
            a[...] = data
            values = [element_json(x, dt) for x in np.asarray(a[...]).reshape(-1)]
            shown = dt if isinstance(dt, str) else str(dt)
            arrays.append({"format": 3, "path": f"v3.zarr/{a.basename}", "dtype": shown,
                           "shape": list(shape), "values": values})
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump({"seed": seed, "zarr": zarr.__version__, "arrays": arrays}, f)


def same(a, b):
    a = np.asarray(a)
    b = np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind in "OT":
        return [x for x in a.reshape(-1)] == [x for x in b.reshape(-1)]
    return a.tobytes() == b.tobytes() or np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")


def compare(dir_a, dir_b):
    with open(os.path.join(dir_a, "manifest.json")) as f:
        manifest = json.load(f)
    bad = []
    for entry in manifest["arrays"]:
        a = zarr.open_array(os.path.join(dir_a, entry["path"]), mode="r")
        try:
            b = zarr.open_array(os.path.join(dir_b, entry["path"]), mode="r")
        except Exception as e:  # noqa: BLE001 - reported with the path
            bad.append(f"{entry['path']}: zarr-python cannot open libn5's array: {e!r}")
            continue
        if not same(a[...], b[...]):
            bad.append(f"{entry['path']}: values differ: {a[...]!r} vs {b[...]!r}")
        fa, fb = a.fill_value, b.fill_value
        if a.dtype.kind in "OT":
            if fa != fb:
                bad.append(f"{entry['path']}: fill values differ: {fa!r} vs {fb!r}")
        elif not same(np.asarray(fa, dtype=a.dtype) if fa is not None else 0,
                    np.asarray(fb, dtype=b.dtype) if fb is not None else 0):
            bad.append(f"{entry['path']}: fill values differ: {fa!r} vs {fb!r}")
    if bad:
        print("\n".join(bad))
        sys.exit(1)
    print(f"{len(manifest['arrays'])} arrays equal")


def check(dir_):
    with open(os.path.join(dir_, "created.json")) as f:
        manifest = json.load(f)
    bad = []
    for entry in manifest["arrays"]:
        try:
            a = zarr.open_array(os.path.join(dir_, entry["path"]), mode="r")
            got = np.asarray(a[...])
            kind = {"string": "str", "object": "bytes"}.get(entry["type"])
            values = [element_json(x, kind or got.dtype) for x in got.reshape(-1)]
            if values != entry["values"]:
                bad.append(f"{entry['path']}: zarr-python reads {values}, libn5 wrote {entry['values']}")
        except Exception as e:  # noqa: BLE001 - reported with the path
            bad.append(f"{entry['path']}: {e!r}")
    if bad:
        print("\n".join(bad))
        sys.exit(1)
    print(f"{len(manifest['arrays'])} arrays as libn5 wrote them")


if __name__ == "__main__":
    if sys.argv[1] == "check":
        check(sys.argv[2])
    elif sys.argv[1] == "write":
        write(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1] == "compare":
        compare(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
