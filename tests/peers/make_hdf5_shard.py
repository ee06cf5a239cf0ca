"""Files that are at once an HDF5 file and a Zarr v3 shard, for tests/zarr_hdf5.rs.

This script owns the making of those files and their checks with the peers
(h5py and tensorstore); the Rust test owns the checks with libn5.

Usage: make_hdf5_shard.py OUT_DIR

It writes OUT_DIR/v.zarr, a Zarr v3 hierarchy (root group) whose arrays each
have ONE shard, and that shard is an HDF5 file written with h5py, in the
layout of the HDF5 User Group 2025 talk "Using a HDF5 file as Zarr v3 Shard":

* the HDF5 dataset `data` is chunked with the Zarr inner chunk shape, has no
  filter and early allocation, so every HDF5 chunk is the raw C-order bytes
  of the chunk in the dataset's byte order, which is what Zarr's `bytes`
  codec reads (the HDF5 chunk at the array's edge is stored whole, as a
  Zarr inner chunk is);
* the shard index (per inner chunk, in C order of the chunk coordinates, the
  pair (offset, nbytes) as little-endian uint64, then optionally the
  CRC32C of those bytes) is the contiguous uint8 dataset `zarr_index`,
  allocated early and created last, so its bytes are the last of the file.

The technique that keeps the index at the end of the file: create the file
with the HDF5 1.10 format or later (`libver=("v110", "latest")`: superblock
v3 and version 4 layouts, whose implicit chunk index, chosen for an
unfiltered fixed-shape dataset allocated early, is no structure at all but
the chunks one after another; every metadata block is allocated when its
object is created and nothing is appended when the file is closed; HDF5
1.10 and later read it) and allocate every chunk and the index early
(`H5D_ALLOC_TIME_EARLY`). With the default (earliest) format HDF5 can put
metadata after the last raw data (in a trial with the 12x10 array below,
the root group's symbol-table node landed 1.7 KB after the index), so the
index would not be at the end. The script checks the result after closing:
the index dataset's offset plus its length is the file size, and the last
bytes of the file are the index.

A chunk left unwritten in HDF5 (filled with the fill value at allocation)
gets the empty entry (2^64-1, 2^64-1) in the index, so that both views read
the fill value there.

Then it checks that the file is still HDF5 (h5py reads the dataset back,
each chunk's offset and size are the index's, the chunk bytes at those
offsets are the array's), and that tensorstore's zarr3 driver reads each
array as libn5 must. It writes the expected array of each, C order,
little-endian, to OUT_DIR/<name>.bin and prints one JSON document:
{"root", "h5py", "hdf5", "arrays": [{"name", "shard", "data_type", "shape",
"shard_shape", "chunk_shape", "fill_value", "index_crc32c", "empty_chunks",
"index_offset", "index_nbytes", "file_size", "sha256", "bin",
"tensorstore_sha256"}]}, shapes in C order.
"""

import hashlib
import itertools
import json
import os
import sys

import h5py
import numpy as np
import tensorstore as ts

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


assert crc32c(b"123456789") == 0xE3069283  # the check value of CRC-32C

# name, numpy dtype (the HDF5 file's byte order), Zarr data type, C-order
# shape, chunk shape, fill value, CRC32C on the index, chunks left unwritten.
ARRAYS = [
    # Shape a multiple of the chunk: the shard is exactly the array.
    ("a", "<u2", "uint16", (12, 10), (4, 5), 0, True, []),
    # Rank 3, edge chunks (shard 8x12x10 over 7x9x10), an inner chunk never
    # written, a fill value other than zero, an index without CRC.
    ("b", "<i4", "int32", (7, 9, 10), (4, 4, 5), -7, False, [(0, 1, 1)]),
    # Big-endian HDF5 chunks (bytes codec endian big), 288 inner chunks: an
    # index of 4612 bytes, larger than HDF5's small-data block.
    ("c", ">f8", "float64", (64, 72), (4, 4), 0.5, True, [(15, 17)]),
]


def shard_shape(shape, chunk):
    return tuple(-(-s // c) * c for s, c in zip(shape, chunk))


def chunk_slices(coord, chunk, shape):
    return tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(coord, chunk, shape))


def make_shard(path, dtype, shape, chunk, fill, with_crc, unwritten):
    """Write the HDF5 file that is the shard; return the expected array."""
    rng = np.random.default_rng(sum(shape) * 1000 + len(shape))
    if np.dtype(dtype).kind == "f":
        data = rng.normal(scale=100.0, size=shape).astype(dtype)
    else:
        info = np.iinfo(np.dtype(dtype))
        native = np.dtype(dtype).newbyteorder("=")
        data = rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=native)
        data = data.astype(dtype)
    grid = tuple(s // c for s, c in zip(shard_shape(shape, chunk), chunk))
    expected = data.copy()
    for coord in unwritten:
        expected[chunk_slices(coord, chunk, shape)] = fill

    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    fapl.set_libver_bounds(h5py.h5f.LIBVER_V110, h5py.h5f.LIBVER_LATEST)
    fid = h5py.h5f.create(path.encode(), h5py.h5f.ACC_TRUNC, fapl=fapl)
    with h5py.File(fid) as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk(chunk)
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
        dcpl.set_fill_time(h5py.h5d.FILL_TIME_ALLOC)
        dcpl.set_fill_value(np.array(fill, dtype=dtype))
        tid = h5py.h5t.py_create(np.dtype(dtype))
        space = h5py.h5s.create_simple(shape)
        dset = h5py.Dataset(h5py.h5d.create(f.id, b"data", tid, space, dcpl=dcpl))
        for coord in itertools.product(*(range(g) for g in grid)):
            if coord not in unwritten:
                sl = chunk_slices(coord, chunk, shape)
                dset[sl] = data[sl]
        assert dset.id.get_num_chunks() == int(np.prod(grid)), "early allocation allocates every chunk"

        entries = []
        for coord in itertools.product(*(range(g) for g in grid)):
            if coord in unwritten:
                entries += [EMPTY, EMPTY]
                continue
            info = dset.id.get_chunk_info_by_coord(tuple(i * c for i, c in zip(coord, chunk)))
            assert info.filter_mask == 0 and info.size == int(np.prod(chunk)) * np.dtype(dtype).itemsize
            entries += [info.byte_offset, info.size]
        index = np.array(entries, dtype="<u8").tobytes()
        if with_crc:
            index += crc32c(index).to_bytes(4, "little")

        # The index last: contiguous, allocated at creation, after every
        # chunk and every metadata block.
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.CONTIGUOUS)
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
        ispace = h5py.h5s.create_simple((len(index),))
        iset = h5py.Dataset(h5py.h5d.create(f.id, b"zarr_index", h5py.h5t.STD_U8LE, ispace, dcpl=dcpl))
        iset[...] = np.frombuffer(index, dtype="u1")
    return expected, index, grid


def check_shard(path, dtype, chunk, expected, index, grid, unwritten):
    """The closed file: index at its end, HDF5 readable, chunks where the index says."""
    size = os.path.getsize(path)
    with h5py.File(path, "r") as f:
        offset = f["zarr_index"].id.get_offset()
        assert offset is not None and offset + len(index) == size, (
            f"{path}: the index is at {offset}+{len(index)}, the file has {size} bytes"
        )
        assert bytes(f["zarr_index"][...]) == index
        got = f["data"][...]
        assert got.dtype == np.dtype(dtype), f"{path}: h5py reads {got.dtype}"
        assert np.array_equal(got, expected, equal_nan=True), f"{path}: h5py reads other data"
        chunk_infos = {}
        for coord in itertools.product(*(range(g) for g in grid)):
            info = f["data"].id.get_chunk_info_by_coord(tuple(i * c for i, c in zip(coord, chunk)))
            chunk_infos[coord] = (info.byte_offset, info.size)
    with open(path, "rb") as raw:
        whole = raw.read()
    assert whole[-len(index):] == index
    nchunks = int(np.prod(grid))
    pairs = np.frombuffer(index[: 16 * nchunks], dtype="<u8").reshape(nchunks, 2)
    itemsize = np.dtype(dtype).itemsize
    for n, coord in enumerate(itertools.product(*(range(g) for g in grid))):
        off, nbytes = (int(x) for x in pairs[n])
        if coord in unwritten:
            assert (off, nbytes) == (EMPTY, EMPTY)
            continue
        assert (off, nbytes) == chunk_infos[coord]
        assert off + nbytes <= size - len(index)
        inner = np.frombuffer(whole[off : off + nbytes], dtype=dtype).reshape(chunk)
        sl = chunk_slices(coord, chunk, expected.shape)
        part = tuple(slice(0, s.stop - s.start) for s in sl)
        same = np.array_equal(inner[part], expected[sl], equal_nan=True)
        assert same, f"{path}: chunk {coord} bytes differ"
        assert nbytes == int(np.prod(chunk)) * itemsize
    return offset, size


def main():
    out = os.path.abspath(sys.argv[1])
    root = os.path.join(out, "v.zarr")
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "zarr.json"), "w") as f:
        json.dump({"zarr_format": 3, "node_type": "group", "attributes": {}}, f)
    results = []
    for name, dtype, zdtype, shape, chunk, fill, with_crc, unwritten in ARRAYS:
        shard = shard_shape(shape, chunk)
        endian = "big" if np.dtype(dtype).byteorder == ">" else "little"
        index_codecs = [{"name": "bytes", "configuration": {"endian": "little"}}]
        if with_crc:
            index_codecs.append({"name": "crc32c"})
        meta = {
            "zarr_format": 3,
            "node_type": "array",
            "shape": list(shape),
            "data_type": zdtype,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(shard)}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": fill,
            "codecs": [
                {
                    "name": "sharding_indexed",
                    "configuration": {
                        "chunk_shape": list(chunk),
                        "codecs": [{"name": "bytes", "configuration": {"endian": endian}}],
                        "index_codecs": index_codecs,
                        "index_location": "end",
                    },
                }
            ],
            "attributes": {"hdf5_dataset": "data", "hdf5_index_dataset": "zarr_index"},
        }
        adir = os.path.join(root, name)
        os.makedirs(adir, exist_ok=True)
        with open(os.path.join(adir, "zarr.json"), "w") as f:
            json.dump(meta, f, indent=2)
        # The one shard's key under the default chunk key encoding.
        shard_path = os.path.join(adir, "c", *(["0"] * len(shape)))
        os.makedirs(os.path.dirname(shard_path), exist_ok=True)

        expected, index, grid = make_shard(shard_path, dtype, shape, chunk, fill, with_crc, unwritten)
        index_offset, size = check_shard(shard_path, dtype, chunk, expected, index, grid, unwritten)

        le = np.ascontiguousarray(expected.astype(np.dtype(dtype).newbyteorder("<")))
        bin_path = os.path.join(out, f"{name}.bin")
        with open(bin_path, "wb") as f:
            f.write(le.tobytes())
        sha = hashlib.sha256(le.tobytes()).hexdigest()

        arr = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": adir}}, read=True).result()
        got = arr.read().result()
        assert tuple(arr.domain.shape) == shape
        got_le = np.ascontiguousarray(got.astype(np.dtype(dtype).newbyteorder("<")))
        ts_sha = hashlib.sha256(got_le.tobytes()).hexdigest()

        results.append(
            {
                "name": name,
                "shard": shard_path,
                "data_type": zdtype,
                "shape": list(shape),
                "shard_shape": list(shard),
                "chunk_shape": list(chunk),
                "fill_value": fill,
                "index_crc32c": with_crc,
                "empty_chunks": [list(c) for c in unwritten],
                "index_offset": index_offset,
                "index_nbytes": len(index),
                "file_size": size,
                "sha256": sha,
                "bin": bin_path,
                "tensorstore_sha256": ts_sha,
            }
        )
    versions = {"h5py": h5py.version.version, "hdf5": h5py.version.hdf5_version}
    print(json.dumps({"root": root, **versions, "arrays": results}))


if __name__ == "__main__":
    main()
