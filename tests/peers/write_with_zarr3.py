"""Writes random Zarr arrays with zarr-python 3 for libn5 to read back
(tests/zarr_peers.rs), and a manifest of what they hold.

usage: write_with_zarr3.py OUT_DIR SEED

Writes two containers, OUT_DIR/v3 (Zarr v3) and OUT_DIR/v2 (Zarr v2), each a
root group with attributes and nested groups with attributes, and in them one
array per numeric data type and repetition: ranks 1 to 5, random shapes and
chunk shapes (edge chunks), random fill values (NaN and infinities for
floats; null in Zarr v2), a random box of random data so that some chunks are never written.
Zarr v3 arrays are sharded with `shards=` (zarr's own sharding_indexed, index
at the end), sharded with an explicit ShardingCodec whose index is at the
start, or not sharded; their codecs are drawn from transpose, bytes (little
and big endian), gzip, zstd (with and without checksum), blosc and crc32c,
with `dimension_names` and chunk key encodings default and v2 with either
separator. Zarr v2 arrays use both byte orders, orders C and F, both
dimension separators and the compressors gzip, zlib, zstd, blosc or none.
Each container's metadata is consolidated at the end, as zarr-python does.

OUT_DIR/manifest.json lists every array: its container, path, format, C-order
shape, chunk shape (the inner chunk when sharded) and shard shape, data type,
fill value, dimension names and attributes, and the sha256 of the whole array
as little-endian C-order bytes, computed from the numpy array written (not
read back through zarr); and every group with its attributes.

Runs in .venv-zarr3 (tests/peers/requirements-zarr3.txt).
"""

import hashlib
import json
import math
import sys

import numcodecs
import numpy as np
import zarr
from zarr.codecs import (
    BloscCodec,
    BytesCodec,
    Crc32cCodec,
    GzipCodec,
    ShardingCodec,
    TransposeCodec,
    ZstdCodec,
)
from zarr.storage import LocalStore

TYPES = ["uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64", "float32", "float64"]


def digest(a):
    a = np.ascontiguousarray(a)
    return hashlib.sha256(a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()).hexdigest()


def json_fill(v):
    """A fill value as JSON (the manifest's spelling of NaN and infinities)."""
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
    return v


class Writer:
    def __init__(self, out, seed):
        self.rng = np.random.default_rng(seed)
        self.out = out
        self.arrays = []
        self.groups = []

    def pick(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def below(self, n):
        return int(self.rng.integers(n))

    def shape(self, rank):
        return tuple(1 + self.below(6 if rank > 3 else 14) for _ in range(rank))

    def fill(self, dtype):
        if dtype.startswith("float"):
            return self.pick([0.0, -1.5, 2.25, float("nan"), float("inf"), float("-inf")])
        info = np.iinfo(dtype)
        return int(self.pick([0, 7, int(info.max), int(info.min)]))

    def data(self, dtype, shape):
        if dtype.startswith("float"):
            return (self.rng.standard_normal(shape) * 1000).astype(dtype)
        info = np.iinfo(dtype)
        return self.rng.integers(int(info.min), int(info.max), size=shape, dtype=dtype, endpoint=True)

    def group(self, root, fmt, path, attributes):
        g = zarr.open_group(store=LocalStore(root), path=path, mode="a", zarr_format=fmt)
        g.attrs.update(attributes)
        self.groups.append({"container": f"v{fmt}", "path": path, "attributes": attributes})

    def fill_array(self, arr, dtype, shape, fill):
        """Writes a random box of `arr` and returns the whole array it holds."""
        model = np.full(shape, fill, dtype=dtype)
        start = [self.below(s) for s in shape]
        stop = [o + 1 + self.below(s - o) for o, s in zip(start, shape)]
        box = tuple(slice(a, b) for a, b in zip(start, stop))
        model[box] = self.data(dtype, tuple(b - a for a, b in zip(start, stop)))
        arr[box] = model[box]
        return model

    def v3_codecs(self, dtype, rank):
        """Filters, serializer and compressors for a Zarr v3 array."""
        filters = []
        if rank > 1 and self.below(3) == 0:
            order = list(self.rng.permutation(rank))
            filters.append(TransposeCodec(order=[int(i) for i in order]))
        endian = "little" if dtype.endswith("int8") else self.pick(["little", "big"])
        serializer = BytesCodec(endian=endian)
        compressors = []
        k = self.below(4)
        if k == 1:
            compressors.append(GzipCodec(level=1 + self.below(9)))
        elif k == 2:
            compressors.append(ZstdCodec(level=1 + self.below(5), checksum=bool(self.below(2))))
        elif k == 3:
            compressors.append(
                BloscCodec(
                    cname=self.pick(["lz4", "zstd", "blosclz", "zlib"]),
                    clevel=1 + self.below(9),
                    shuffle=self.pick(["noshuffle", "shuffle", "bitshuffle"]),
                    typesize=np.dtype(dtype).itemsize,
                )
            )
        if self.below(3) == 0:
            compressors.append(Crc32cCodec())
        return filters, serializer, compressors

    def v3_array(self, root, path, dtype, rank):
        store = LocalStore(root)
        shape = self.shape(rank)
        chunks = tuple(1 + self.below(s + 1) for s in shape)
        filters, serializer, compressors = self.v3_codecs(dtype, rank)
        fill = self.fill(dtype)
        names = [str(n) for n in self.rng.permutation(["t", "c", "z", "y", "x"])[:rank]]
        names = [None if self.below(4) == 0 else n for n in names]
        attributes = {"written_by": f"zarr-python {zarr.__version__}", "rank": rank, "scale": [0.5] * rank}
        key = {"name": self.pick(["default", "v2"]), "separator": self.pick(["/", "."])}
        how = self.pick(["shards", "sharding_codec", "none"])
        shards = None
        common = dict(
            name=path,
            shape=shape,
            dtype=dtype,
            fill_value=fill,
            dimension_names=names,
            attributes=attributes,
            chunk_key_encoding=key,
            zarr_format=3,
        )
        if how == "shards":
            shards = tuple(c * (1 + self.below(3)) for c in chunks)
            arr = zarr.create_array(
                store,
                chunks=chunks,
                shards=shards,
                filters=filters,
                serializer=serializer,
                compressors=compressors,
                **common,
            )
        elif how == "sharding_codec":
            shards = tuple(c * (1 + self.below(3)) for c in chunks)
            sharding = ShardingCodec(
                chunk_shape=chunks,
                codecs=[*filters, serializer, *compressors],
                index_location=self.pick(["start", "end"]),
            )
            arr = zarr.create_array(store, chunks=shards, filters=[], serializer=sharding, compressors=[], **common)
        else:
            arr = zarr.create_array(
                store,
                chunks=chunks,
                filters=filters,
                serializer=serializer,
                compressors=compressors,
                **common,
            )
        model = self.fill_array(arr, dtype, shape, fill)
        self.arrays.append(
            {
                "container": "v3",
                "path": path,
                "format": 3,
                "how": how,
                "shape": list(shape),
                "chunks": list(chunks),
                "shards": list(shards) if shards else None,
                "dtype": dtype,
                "fill_value": json_fill(fill),
                "dimension_names": names,
                "attributes": attributes,
                "sha256": digest(model),
            }
        )

    def v2_array(self, root, path, dtype, rank):
        store = LocalStore(root)
        shape = self.shape(rank)
        chunks = tuple(1 + self.below(s + 1) for s in shape)
        np_dtype = np.dtype(dtype)
        if np_dtype.itemsize > 1:
            np_dtype = np_dtype.newbyteorder(self.pick(["<", ">"]))
        k = self.below(5)
        compressor = [
            None,
            numcodecs.GZip(level=1 + self.below(9)),
            numcodecs.Zlib(level=1 + self.below(9)),
            numcodecs.Zstd(level=1 + self.below(5)),
            numcodecs.Blosc(cname=self.pick(["lz4", "zstd"]), clevel=5, shuffle=self.below(3)),
        ][k]
        # null: unwritten chunks read as zeros.
        fill = None if self.below(5) == 0 else self.fill(dtype)
        attributes = {"written_by": f"zarr-python {zarr.__version__}", "dtype": np_dtype.str}
        arr = zarr.create_array(
            store,
            name=path,
            shape=shape,
            chunks=chunks,
            dtype=np_dtype,
            fill_value=fill,
            compressors=compressor,
            filters=None,
            order=self.pick(["C", "F"]),
            chunk_key_encoding={"name": "v2", "separator": self.pick(["/", "."])},
            attributes=attributes,
            zarr_format=2,
        )
        model = self.fill_array(arr, dtype, shape, 0 if fill is None else fill)
        self.arrays.append(
            {
                "container": "v2",
                "path": path,
                "format": 2,
                "shape": list(shape),
                "chunks": list(chunks),
                "shards": None,
                "dtype": dtype,
                "fill_value": json_fill(fill),
                "dimension_names": None,
                "attributes": attributes,
                "sha256": digest(model),
            }
        )

    def run(self):
        for fmt in (3, 2):
            root = f"{self.out}/v{fmt}"
            self.group(root, fmt, "", {"title": f"zarr-python {zarr.__version__}, Zarr v{fmt}", "mixed": [1, 2.5, None, "x"]})
            self.group(root, fmt, "nested", {"level": 1})
            self.group(root, fmt, "nested/deeper", {"level": 2, "unicode": "é∂"})
            for k, dtype in enumerate(TYPES):
                for rep in range(3):
                    rank = 1 + (k + rep) % 5
                    path = f"nested/{dtype}/a{rep}" if rep == 2 else f"{dtype}/a{rep}"
                    if fmt == 3:
                        self.v3_array(root, path, dtype, rank)
                    else:
                        self.v2_array(root, path, dtype, rank)
            zarr.consolidate_metadata(LocalStore(root), zarr_format=fmt)
        manifest = {"zarr": zarr.__version__, "arrays": self.arrays, "groups": self.groups}
        with open(f"{self.out}/manifest.json", "w") as f:
            json.dump(manifest, f, indent=1)
        print(f"zarr-python {zarr.__version__}: wrote {len(self.arrays)} arrays, {len(self.groups)} groups")


def main():
    if int(zarr.__version__.split(".")[0]) != 3:
        sys.exit(f"zarr-python 3 expected, this is zarr {zarr.__version__}")
    Writer(sys.argv[1], int(sys.argv[2])).run()


main()
