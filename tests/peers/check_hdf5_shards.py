"""Checks that every shard libn5 wrote for Zarr v3 arrays with the
`hdf5_shards` member is an HDF5 file as hdf5.md A3 says, for
tests/zarr_hdf5_write.rs (which owns the writing and the checks through
libn5; this script owns the checks with the peers).

usage: check_hdf5_shards.py SPEC.json

SPEC: {"root": DIR, "tools": bool, "arrays": [{"path", "dtype" (numpy, in
the `bytes` codec's byte order, e.g. ">f4"), "shape", "shard", "inner" (C
order), "fill" (a number, or "NaN"), "filter": null or {"id", "name",
"cd"}, "index_location": "start"|"end", "crc32c": bool, "separator",
"bin": the expected array, C order, little-endian}]}.

Per array: the shards on disk are exactly those holding an inner chunk
that is not all fill value (within the array). Per shard: the superblock
(signature, base address) at U (0 with the index at the end, else
max(512, the index's size rounded up to a power of two)) and its end of
file = the file's size; the Zarr index (its CRC32C); h5py (with hdf5plugin)
opens the file with userblock_size U and members `data` (+ `zarrindex`);
`data` has the shard's region clipped to the array as its shape, the shard
shape as maxshape, the inner chunk shape as chunks, the dtype, the fill
value (bit for bit), the filter (id, optional, cd values, name), and the
expected values; `chunk_iter` gives exactly the Zarr index's (offset, size)
for every stored inner chunk and nothing else (HDF5 2.0 gives absolute
offsets); `zarrindex` holds the index's bytes. With "tools": h5repack
exits 0 and `h5dump -d /data -b LE` writes the expected values, both with
HDF5_PLUGIN_PATH = hdf5plugin.PLUGIN_PATH. Then tensorstore reads every
array whole. Runs in .venv (h5py, hdf5plugin, tensorstore). Prints one
line per failure and exits 1 if any; else prints a JSON summary.
"""

import importlib.metadata
import itertools
import json
import os
import subprocess
import sys
import tempfile

import h5py
import hdf5plugin
import numpy as np
import tensorstore as ts

SIGNATURE = b"\x89HDF\r\n\x1a\n"
EMPTY = 2**64 - 1


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


CRC32C_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    c = 0xFFFFFFFF
    for b in data:
        c = CRC32C_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283


def fill_array(a, dtype):
    """The fill value as a 0-d array of `dtype` (NaN with a zero payload)."""
    return np.array(np.nan if a["fill"] == "NaN" else a["fill"], dtype=dtype)


def all_fill(block, fill):
    if fill.dtype.kind == "f" and np.isnan(fill):
        return bool(np.isnan(block).all())
    return bool((block == fill).all())


class Failures(list):
    def check(self, ok, what):
        if not ok:
            self.append(what)
        return ok


def check_shard(fails, a, path, shard_pos, expected, fill, env, tmp):
    """The checks of one shard file; returns its number of stored chunks."""
    name = f"{a['path']} shard {list(shard_pos)}"
    shape, shard, inner = a["shape"], a["shard"], a["inner"]
    rank = len(shape)
    per = [s // c for s, c in zip(shard, inner)]
    n = int(np.prod(per))
    index_len = 16 * n + (4 if a["crc32c"] else 0)
    data = open(path, "rb").read()
    base = 0 if a["index_location"] == "end" else max(512, 1 << (index_len - 1).bit_length())
    fails.check(data[base : base + 8] == SIGNATURE, f"{name}: no HDF5 signature at {base}")
    fails.check(data[base + 8] == 3, f"{name}: superblock version {data[base + 8]}")
    sb_base = int.from_bytes(data[base + 12 : base + 20], "little")
    eof = int.from_bytes(data[base + 28 : base + 36], "little")
    fails.check(sb_base == base, f"{name}: base address {sb_base}, U = {base}")
    fails.check(eof == len(data), f"{name}: end of file {eof}, the file has {len(data)} bytes")
    index = data[-index_len:] if a["index_location"] == "end" else data[:index_len]
    if a["crc32c"]:
        stored = int.from_bytes(index[-4:], "little")
        fails.check(crc32c(index[:-4]) == stored, f"{name}: index CRC32C")
    pairs = np.frombuffer(index[: 16 * n], dtype="<u8").reshape(n, 2)
    # The region of the shard in the array, and the values there.
    lo = [p * s for p, s in zip(shard_pos, shard)]
    clipped = [min(s, sh - l) for s, sh, l in zip(shard, shape, lo)]
    region = tuple(slice(l, l + c) for l, c in zip(lo, clipped))
    want = expected[region]
    with h5py.File(path, "r") as f:
        fails.check(f.userblock_size == base, f"{name}: user block {f.userblock_size}, U = {base}")
        members = ["data"] + (["zarrindex"] if a["index_location"] == "end" else [])
        fails.check(list(f) == members, f"{name}: members {list(f)}, not {members}")
        d = f["data"]
        fails.check(list(d.shape) == clipped, f"{name}: shape {d.shape}, not {clipped}")
        fails.check(list(d.maxshape) == shard, f"{name}: maxshape {d.maxshape}, not {shard}")
        fails.check(list(d.chunks) == inner, f"{name}: chunks {d.chunks}, not {inner}")
        fails.check(d.dtype == np.dtype(a["dtype"]), f"{name}: dtype {d.dtype}, not {a['dtype']}")
        got_fill = np.array(d.fillvalue, dtype=d.dtype).tobytes()
        fails.check(got_fill == fill.tobytes(), f"{name}: fill value bytes {got_fill.hex()}, not {fill.tobytes().hex()}")
        dcpl = d.id.get_create_plist()
        filt = a["filter"]
        if filt is None:
            fails.check(dcpl.get_nfilters() == 0, f"{name}: {dcpl.get_nfilters()} filters, none wanted")
        elif fails.check(dcpl.get_nfilters() == 1, f"{name}: {dcpl.get_nfilters()} filters, one wanted"):
            code, flags, values, fname = dcpl.get_filter(0)
            fails.check(code == filt["id"], f"{name}: filter {code}, not {filt['id']}")
            fails.check(flags & 1 == 1, f"{name}: the filter is not optional (flags {flags})")
            fails.check(list(values) == filt["cd"], f"{name}: cd values {list(values)}, not {filt['cd']}")
            fails.check(fname == filt["name"].encode(), f"{name}: filter name {fname!r}")
        got = d[...]
        fails.check(
            got.shape == want.shape and np.array_equal(got, want, equal_nan=got.dtype.kind == "f"),
            f"{name}: h5py reads other values",
        )
        seen = {}
        d.id.chunk_iter(lambda i: seen.__setitem__(tuple(i.chunk_offset), (i.byte_offset, i.size)))
        stored = 0
        for k, pos in enumerate(itertools.product(*(range(p) for p in per))):
            off, nbytes = (int(x) for x in pairs[k])
            at = tuple(p * c for p, c in zip(pos, inner))
            inside = all(x < c for x, c in zip(at, clipped))
            block = expected[tuple(slice(l + x, min(l + x + c, s)) for l, x, c, s in zip(lo, at, inner, shape))] if inside else None
            absent = not inside or all_fill(block, fill)
            if (off, nbytes) == (EMPTY, EMPTY):
                fails.check(absent, f"{name}: inner chunk {pos} holds data but its index entry is empty")
                fails.check(at not in seen, f"{name}: HDF5 has chunk {at}, whose Zarr index entry is empty")
                continue
            stored += 1
            fails.check(not absent, f"{name}: inner chunk {pos} is all fill value (or outside the array) but stored")
            fails.check(
                seen.get(at) == (off, nbytes),
                f"{name}: HDF5 chunk {at} at {seen.get(at)}, the Zarr index says {(off, nbytes)}",
            )
        fails.check(len(seen) == stored, f"{name}: HDF5 lists {len(seen)} chunks, the Zarr index {stored}")
        if a["index_location"] == "end":
            got_index = f["zarrindex"][...].tobytes()
            fails.check(got_index == index, f"{name}: zarrindex is not the index's bytes")
    if env is not None:
        out = os.path.join(tmp, "repacked.h5")
        r = subprocess.run(["h5repack", path, out], env=env, capture_output=True, text=True)
        fails.check(r.returncode == 0, f"{name}: h5repack exits {r.returncode}: {r.stderr.strip()[-400:]}")
        dump = os.path.join(tmp, "dump.bin")
        if os.path.exists(dump):
            os.remove(dump)
        r = subprocess.run(["h5dump", "-d", "/data", "-b", "LE", "-o", dump, path], env=env, capture_output=True, text=True)
        le = np.ascontiguousarray(want.astype(want.dtype.newbyteorder("<"))).tobytes()
        dumped = open(dump, "rb").read() if os.path.exists(dump) else b""
        fails.check(
            r.returncode == 0 and dumped == le,
            f"{name}: h5dump -b LE exits {r.returncode} with {len(dumped)} bytes, {len(le)} wanted: {r.stderr.strip()[-400:]}",
        )
    return stored


def main():
    spec = json.load(open(sys.argv[1]))
    fails = Failures()
    env = None
    if spec["tools"]:
        env = dict(os.environ, HDF5_PLUGIN_PATH=hdf5plugin.PLUGIN_PATH)
    shards = chunks = 0
    with tempfile.TemporaryDirectory() as tmp:
        for a in spec["arrays"]:
            dtype = np.dtype(a["dtype"])
            shape, shard = a["shape"], a["shard"]
            expected = np.fromfile(a["bin"], dtype=dtype.newbyteorder("<")).reshape(shape).astype(dtype)
            fill = fill_array(a, dtype)
            adir = os.path.join(spec["root"], a["path"])
            grid = [-(-s // c) for s, c in zip(shape, shard)]
            inner = a["inner"]
            for pos in itertools.product(*(range(g) for g in grid)):
                key = os.path.join(adir, "c", *map(str, pos)) if a["separator"] == "/" else os.path.join(adir, "c." + ".".join(map(str, pos)))
                lo = [p * s for p, s in zip(pos, shard)]
                part = expected[tuple(slice(l, l + s) for l, s in zip(lo, shard))]
                # Whether any inner chunk of the shard holds more than fill.
                holds = False
                for at in itertools.product(*(range(0, s, c) for s, c in zip(part.shape, inner))):
                    block = part[tuple(slice(x, x + c) for x, c in zip(at, inner))]
                    if not all_fill(block, fill):
                        holds = True
                        break
                exists = os.path.exists(key)
                fails.check(exists == holds, f"{a['path']} shard {list(pos)}: {'stored' if exists else 'missing'}, but it {'holds' if holds else 'holds no'} data")
                if exists:
                    try:
                        chunks += check_shard(fails, a, key, pos, expected, fill, env, tmp)
                        shards += 1
                    except Exception as e:  # noqa: BLE001 (every failure is reported)
                        fails.append(f"{a['path']} shard {list(pos)}: {type(e).__name__}: {e}")
            try:
                t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": adir}}, read=True).result()
                got = t.read().result()
                fails.check(
                    list(t.domain.shape) == shape and np.array_equal(got, expected, equal_nan=dtype.kind == "f"),
                    f"{a['path']}: tensorstore reads another array",
                )
            except Exception as e:  # noqa: BLE001
                fails.append(f"{a['path']}: tensorstore: {type(e).__name__}: {e}")
    for f in fails:
        print(f)
    if fails:
        sys.exit(1)
    print(json.dumps({"shards": shards, "chunks": chunks, "h5py": h5py.version.version, "hdf5": h5py.version.hdf5_version,
                      "hdf5plugin": hdf5plugin.version, "tensorstore": importlib.metadata.version("tensorstore")}))


if __name__ == "__main__":
    main()
