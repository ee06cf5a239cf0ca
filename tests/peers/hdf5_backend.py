"""HDF5 files for the tests of libn5's HDF5 backend, and the checks with h5py
and h5dump of the files libn5 writes (src/format/hdf5/native/tests.rs).

This script owns the making of the files, what h5py says they hold, and the
checks of libn5's files with h5py and h5dump; the Rust tests own the checks
with libn5. Shapes are C order, as h5py states them.

Usage:

  hdf5_backend.py make OUT_DIR
      writes the files below into OUT_DIR, each dataset's data as h5py reads
      it (C order, little-endian) into OUT_DIR/bin/<n>.bin, and prints one
      JSON manifest: {"h5py", "hdf5", "hdf5plugin", "files": [see
      `describe_file`], "damaged": [{"what", "path"}]}.

  hdf5_backend.py check SPEC_JSON
      checks a file libn5 created against SPEC_JSON (written by the Rust
      test; see `check`) with h5py, then dumps it with h5dump; prints
      "ok" or fails with the reasons.

The files (never written with libver="latest": HDF5 2.0, which h5py 3.16
carries, would write layout v5, which libhdf5 1.10 cannot read):

* n5_layout.h5: what saalfeldlab/n5-hdf5 writes: the ten types chunked
  (deflate with and without shuffle, raw, big-endian), chunks never written,
  a contiguous dataset, a root `n5` attribute, native attributes of every
  kind, `N5_JSON_ROOT` with nested values and a key a native attribute
  shadows, soft links (resolving and dangling), an external link, a named
  datatype, names that sort differently by bytes than by letters.
* bdv.h5: BigDataViewer's layout: `__DATA_TYPES__` (named datatypes),
  `s00/resolutions`, `s00/subdivisions`, `t00000/s00/{0,1}/cells` (int16).
* thirdparty.h5: scale-offset, fletcher32, fill values with unwritten
  chunks, compact and virtual layouts, zstd and blosc (hdf5plugin), strings,
  compound, enum (h5py's bool), half floats, scalar and null dataspaces.
* indexes.h5 (libver v110): Fixed Array, Extensible Array and v2 B-tree
  chunk indexes, beside a v1 B-tree one in n5_layout.h5.
* userblock512.h5, userblock4096.h5: files with a user block.
* cyclic_self.h5, cyclic_chunk.h5 (the manifest's "damaged"): a group's
  version 1 object header whose continuation leads back to itself.
* dense_overcounted.h5, dense_attributes_overcounted.h5 (also "damaged"):
  a group's links, and a group's attributes, in dense storage whose name
  B-tree counts more records than it holds.
"""

import json
import os
import struct
import subprocess
import sys

import h5py
import hdf5plugin
import numpy as np

TEN = ["uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64", "float32", "float64"]

# Attributes that have no JSON form: left out of the attributes; libn5 reads
# them by name as N5_ERR_UNSUPPORTED.
LEFT_OUT = object()


def rng_data(rng, dtype, shape):
    """Random values of the whole range of `dtype` (floats: normal * 1000),
    in the byte order of `dtype`."""
    dtype = np.dtype(dtype)
    native = dtype.newbyteorder("=")
    if dtype.kind == "f":
        data = (rng.standard_normal(shape) * 1000).astype(native)
    else:
        info = np.iinfo(native)
        data = rng.integers(info.min, info.max, size=shape, dtype=native, endpoint=True)
    return data.astype(dtype)


class Expect:
    """What each group and dataset of a file is expected to hold, as the
    design's B2 to B4 say, written down beside the calls that make them."""

    def __init__(self):
        self.attributes = {}  # path -> {key: expected JSON}
        self.left_out = {}  # path -> [key]
        self.lists = {}  # path -> [names]
        self.unsupported = {}  # dataset path -> words the message names

    def attr(self, obj, key, value, expected, **kwargs):
        if kwargs:
            obj.attrs.create(key, value, **kwargs)
        else:
            obj.attrs[key] = value
        if expected is LEFT_OUT:
            self.left_out.setdefault(obj.name, []).append(key)
        else:
            self.attributes.setdefault(obj.name, {})[key] = expected


def fixed_string_attr(obj, key, raw, pad, cset=h5py.h5t.CSET_ASCII):
    """A scalar fixed-length string attribute with the given padding."""
    t = h5py.h5t.C_S1.copy()
    t.set_size(len(raw))
    t.set_strpad(pad)
    t.set_cset(cset)
    space = h5py.h5s.create(h5py.h5s.SCALAR)
    aid = h5py.h5a.create(obj.id, key.encode(), t, space)
    aid.write(np.array(raw, dtype="S%d" % len(raw)), mtype=t)


def make_n5_layout(path, e):
    rng = np.random.default_rng(1)
    with h5py.File(path, "w", libver=("earliest", "v110")) as f:
        f.attrs["n5"] = "2.5.1"
        e.attributes["/"] = {"n5": "2.5.1"}
        vol = f.create_group("volumes")
        raw = vol.create_group("raw")
        shape = (23, 37, 19)
        for i, t in enumerate(TEN):
            kwargs = {}
            if i % 3 == 0:
                kwargs = dict(compression="gzip", compression_opts=6, shuffle=True)
            elif i % 3 == 1:
                kwargs = dict(compression="gzip", compression_opts=1)
            dt = np.dtype(t)
            if i in (2, 9):
                dt = dt.newbyteorder(">")
            data = rng_data(rng, t, shape)
            d = raw.create_dataset(t, shape=shape, dtype=dt, chunks=(8, 16, 7), **kwargs)
            d[...] = data
        e.lists["/volumes/raw"] = sorted(TEN)
        # Chunks never written: only two boxes are.
        sparse = vol.create_dataset("sparse", shape=(40, 50), dtype="<u2", chunks=(10, 10),
                                    compression="gzip", shuffle=True)
        sparse[0:10, 0:10] = rng_data(rng, "u2", (10, 10))
        sparse[25:35, 41:50] = rng_data(rng, "u2", (10, 9))
        contiguous = vol.create_dataset("contiguous", data=rng_data(rng, "f4", (12, 13)))
        assert contiguous.chunks is None
        vol.create_dataset("unwritten_contiguous", shape=(5, 6), dtype="i2")
        # Links and other objects in one group.
        links = f.create_group("links")
        links["hard_to_raw"] = raw
        links["soft_to_uint8"] = h5py.SoftLink("/volumes/raw/uint8")
        links["soft_to_group"] = h5py.SoftLink("/volumes")
        links["dangling"] = h5py.SoftLink("/nowhere")
        links["external"] = h5py.ExternalLink("userblock512.h5", "/data")
        links["named_type"] = np.dtype("<i4")
        for name in ["Zeta", "alpha", "Alpha", "\u00e9t\u00e9", "_x", "b0", "B1"]:
            links.create_group(name)
        e.lists["/links"] = sorted(
            ["hard_to_raw", "soft_to_uint8", "soft_to_group", "Zeta", "alpha", "Alpha",
             "\u00e9t\u00e9", "_x", "b0", "B1"], key=lambda s: s.encode())
        e.lists["/"] = ["attrs", "links", "shadow", "volumes"]
        e.lists["/volumes"] = ["contiguous", "raw", "sparse", "unwritten_contiguous"]
        e.lists["/volumes/raw/uint8"] = []
        e.lists["/links/hard_to_raw"] = sorted(TEN)
        e.lists["/links/soft_to_group"] = e.lists["/volumes"]
        e.lists["/links/soft_to_uint8"] = []
        e.lists["/links/Zeta"] = []

        a = f.create_group("attrs")
        x = e.attr
        x(a, "i8", np.int8(-128), -128)
        x(a, "u8", np.uint8(255), 255)
        x(a, "i16be", np.int16(-3), -3, dtype=">i2")
        x(a, "u32", np.uint32(4000000000), 4000000000)
        x(a, "i64min", np.int64(-2**63), -2**63)
        x(a, "u64max", np.uint64(2**64 - 1), 2**64 - 1)
        x(a, "u64be", np.uint64(2**63 + 5), 2**63 + 5, dtype=">u8")
        x(a, "f32", np.float32(0.1), 0.1)
        x(a, "f32big", np.float32(1e20), 1e20)
        x(a, "f32two", np.float32(2.0), 2.0)
        x(a, "f64", 0.1, 0.1)
        x(a, "f64be", 1.0 / 3.0, 1.0 / 3.0, dtype=">f8")
        x(a, "f64negzero", -0.0, -0.0)
        x(a, "f64tiny", 5e-324, 5e-324)
        x(a, "nan", np.nan, "NaN")
        x(a, "inf", np.inf, "Infinity")
        x(a, "ninf", np.float32(-np.inf), "-Infinity")
        x(a, "bool_true", True, True)
        x(a, "bool_false", np.bool_(False), False)
        x(a, "bools", np.array([True, False, True]), [True, False, True])
        x(a, "vlen_utf8", "\u00b5m \u2192 nm", "\u00b5m \u2192 nm")
        x(a, "vlen_ascii", b"ascii bytes", "ascii bytes",
          dtype=h5py.string_dtype("ascii"))
        x(a, "json_looking", '{"a": 1}', '{"a": 1}')
        x(a, "fixed_nullpad", np.bytes_(b"ab"), "ab", dtype="S5")
        fixed_string_attr(a, "fixed_spacepad", b"xy   ", h5py.h5t.STR_SPACEPAD)
        e.attributes["/attrs"]["fixed_spacepad"] = "xy"
        fixed_string_attr(a, "fixed_nullterm", b"cd\x00ef", h5py.h5t.STR_NULLTERM)
        e.attributes["/attrs"]["fixed_nullterm"] = "cd"
        fixed_string_attr(a, "fixed_utf8", "\u00e9\u00e9".encode() + b"\x00\x00",
                          h5py.h5t.STR_NULLPAD, h5py.h5t.CSET_UTF8)
        e.attributes["/attrs"]["fixed_utf8"] = "\u00e9\u00e9"
        x(a, "ints", np.arange(5, dtype="<i4"), [0, 1, 2, 3, 4])
        x(a, "floats", np.array([0.5, -1.25], dtype=">f4"), [0.5, -1.25])
        x(a, "matrix", np.arange(6, dtype="u2").reshape(2, 3), [[0, 1, 2], [3, 4, 5]])
        x(a, "cube", np.arange(8, dtype="f8").reshape(2, 2, 2) + 0.5,
          [[[0.5, 1.5], [2.5, 3.5]], [[4.5, 5.5], [6.5, 7.5]]])
        x(a, "strings", ["x", "y\u00e9"], ["x", "y\u00e9"], dtype=h5py.string_dtype())
        x(a, "fixed_strings", np.array([b"a", b"bcd"], dtype="S4"), ["a", "bcd"])
        x(a, "string_matrix", np.array([["a", "b"], ["c", "d"]], dtype=object),
          [["a", "b"], ["c", "d"]], dtype=h5py.string_dtype())
        x(a, "empty_1d", np.zeros((0,), dtype="i4"), [])
        x(a, "null", h5py.Empty("f8"), None)
        x(a, "compound", np.array((1, 2.0), dtype=[("a", "i4"), ("b", "f8")]), LEFT_OUT)
        x(a, "reference", f["volumes"].ref, LEFT_OUT, dtype=h5py.ref_dtype)
        x(a, "opaque", np.void(b"\x01\x02\x03"), LEFT_OUT)
        x(a, "enum3", np.int8(1), LEFT_OUT,
          dtype=h5py.enum_dtype({"RED": 0, "GREEN": 1, "BLUE": 2}, basetype="i1"))
        seq = np.empty(2, dtype=object)
        seq[0] = np.arange(3, dtype="i4")
        seq[1] = np.arange(1, dtype="i4")
        x(a, "vlen_seq", seq, LEFT_OUT, dtype=h5py.vlen_dtype(np.dtype("i4")))
        x(a, "array_type", np.zeros((), dtype="(3,)i4"), LEFT_OUT, dtype=np.dtype("(3,)i4"))

        # N5_JSON_ROOT with nested values, numbers beyond float64 and int64,
        # and keys native attributes shadow.
        s = f.create_group("shadow")
        s.attrs["N5_JSON_ROOT"] = (
            '{"a":{"b":1},"voxel":1,"list":[1,2.5,null],'
            '"big":123456789012345678901234567890,"precise":0.1000000000000000000001,"names":0}'
        )
        s.attrs["voxel"] = np.float32(0.1)
        s.attrs.create("names", ["x", "y"], dtype=h5py.string_dtype())
        e.attributes["/shadow"] = {
            "a": {"b": 1}, "voxel": 0.1, "list": [1, 2.5, None],
            "big": "=123456789012345678901234567890", "precise": "=0.1000000000000000000001",
            "names": ["x", "y"],
        }
        e.lists["/shadow"] = []
        e.lists["/attrs"] = []

        raw.attrs["resolution"] = np.array([4.0, 4.0, 40.0])
        e.attributes["/volumes/raw"] = {"resolution": [4.0, 4.0, 40.0]}
        e.attributes["/links/hard_to_raw"] = e.attributes["/volumes/raw"]


def make_bdv(path, e):
    rng = np.random.default_rng(2)
    with h5py.File(path, "w", libver=("earliest", "v110")) as f:
        types = f.create_group("__DATA_TYPES__")
        types["Enum_Boolean"] = h5py.enum_dtype({"FALSE": 0, "TRUE": 1}, basetype="i1")
        types["String_VariableLength"] = h5py.string_dtype()
        s00 = f.create_group("s00")
        s00.create_dataset("resolutions", data=np.array([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]]))
        s00.create_dataset("subdivisions", data=np.array([[16, 16, 16], [16, 16, 16]], dtype="i4"))
        t = f.create_group("t00000/s00")
        for level, shape in enumerate([(33, 40, 21), (17, 20, 16)]):
            g = t.create_group(str(level))
            d = g.create_dataset("cells", shape=shape, dtype="i2", chunks=(16, 16, 16),
                                 compression="gzip", compression_opts=6)
            d[...] = rng_data(rng, "i2", shape)
        # __DATA_TYPES__ is a group (of named datatypes, which are left out).
        e.lists["/"] = ["__DATA_TYPES__", "s00", "t00000"]
        e.lists["/__DATA_TYPES__"] = []
        e.lists["/t00000/s00"] = ["0", "1"]
        e.lists["/t00000/s00/0"] = ["cells"]


def make_thirdparty(path, e):
    rng = np.random.default_rng(3)
    with h5py.File(path, "w", libver=("v110", "v110")) as f:
        f.create_dataset("scaleoffset_int", data=rng.integers(0, 1000, (30, 30), dtype="i4"),
                         chunks=(8, 8), scaleoffset=0)
        f.create_dataset("scaleoffset_float", data=rng.standard_normal((30, 20)).astype("f8"),
                         chunks=(8, 8), scaleoffset=3)
        f.create_dataset("fletcher", data=rng_data(rng, "u2", (21, 17)), chunks=(5, 4),
                         fletcher32=True)
        f.create_dataset("fletcher_gzip", data=rng_data(rng, "i8", (9, 11)), chunks=(4, 4),
                         fletcher32=True, compression="gzip", shuffle=True)
        fill = f.create_dataset("fill", shape=(20, 20), dtype="f4", chunks=(6, 6), fillvalue=7.5,
                                compression="gzip")
        fill[0:6, 0:6] = rng_data(rng, "f4", (6, 6))
        fill_int = f.create_dataset("fill_be", shape=(11,), dtype=">i8", chunks=(4,),
                                    fillvalue=-42)
        fill_int[4:8] = np.arange(4)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        space = h5py.h5s.create_simple((4, 5))
        dsid = h5py.h5d.create(f.id, b"compact", h5py.h5t.STD_U16BE, space, dcpl=dcpl)
        dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, np.arange(20, dtype="<u2").reshape(4, 5))
        zd = f.create_dataset("zstd", data=rng_data(rng, "u2", (30, 40)), chunks=(10, 16),
                              **hdf5plugin.Zstd(clevel=5))
        assert zd.id.get_create_plist().get_filter(0)[0] == 32015
        bd = f.create_dataset("blosc", data=rng_data(rng, "f4", (25, 26)), chunks=(8, 8),
                              **hdf5plugin.Blosc(cname="lz4", clevel=5, shuffle=hdf5plugin.Blosc.SHUFFLE))
        assert bd.id.get_create_plist().get_filter(0)[0] == 32001
        f.create_dataset("blosc_zstd_be", data=rng_data(rng, ">i4", (12, 12)), chunks=(5, 5),
                         **hdf5plugin.Blosc(cname="zstd", clevel=3, shuffle=hdf5plugin.Blosc.BITSHUFFLE))
        # Virtual: the two halves of a dataset from two sources.
        a = f.create_dataset("vsrc_a", data=np.arange(10, dtype="i2"))
        b = f.create_dataset("vsrc_b", data=np.arange(10, 20, dtype="i2"))
        layout = h5py.VirtualLayout(shape=(2, 10), dtype="i2")
        layout[0] = h5py.VirtualSource(a)
        layout[1] = h5py.VirtualSource(b)
        f.create_virtual_dataset("virtual", layout, fillvalue=0)
        # Types and dataspaces the N5 API cannot open.
        e.unsupported["/strings_vlen"] = "variable-length UTF-8 strings"
        f.create_dataset("strings_vlen", data=["a", "bb"], dtype=h5py.string_dtype())
        e.unsupported["/strings_fixed"] = "fixed-length ASCII strings"
        f.create_dataset("strings_fixed", data=np.array([b"ab", b"c"], dtype="S3"))
        e.unsupported["/compound"] = "compound"
        f.create_dataset("compound", data=np.zeros(3, dtype=[("x", "i4"), ("y", "f4")]))
        e.unsupported["/bools"] = "h5py's bool"
        f.create_dataset("bools", data=np.array([True, False]))
        e.unsupported["/half"] = "half"
        f.create_dataset("half", data=np.zeros(4, dtype="f2"))
        e.unsupported["/scalar"] = "scalar dataspace"
        f.create_dataset("scalar", data=np.int32(5))
        e.unsupported["/null"] = "null dataspace"
        f.create_dataset("null", data=h5py.Empty("i4"))
        e.unsupported["/references"] = "references"
        f.create_dataset("references", data=[f["fill"].ref], dtype=h5py.ref_dtype)
        e.unsupported["/opaque"] = "opaque"
        f.create_dataset("opaque", data=np.array([np.void(b"ab")]))
        e.unsupported["/array_type"] = "array type"
        f.create_dataset("array_type", shape=(2,), dtype=np.dtype("(3,)i4"))


def make_indexes(path, e):
    rng = np.random.default_rng(4)
    with h5py.File(path, "w", libver=("v110", "v110")) as f:
        # Fixed Array: fixed maximum dimensions.
        f.create_dataset("fixed_array", data=rng_data(rng, "u1", (50, 60)), chunks=(7, 9),
                         compression="gzip")
        # Extensible Array: one unlimited dimension.
        ea = f.create_dataset("extensible_array", shape=(20, 30), maxshape=(None, 30),
                              dtype="i4", chunks=(6, 7), compression="gzip", shuffle=True)
        ea[...] = rng_data(rng, "i4", (20, 30))
        ea[3:5, 3:5] = 0
        # v2 B-tree: two unlimited dimensions; one chunk never written.
        bt = f.create_dataset("btree2", shape=(25, 25), maxshape=(None, None), dtype="f8",
                              chunks=(10, 10))
        bt[0:20, :] = rng_data(rng, "f8", (20, 25))
        # Single chunk (implicit one-chunk index) and an early-allocated
        # unfiltered dataset (implicit index).
        f.create_dataset("single_chunk", data=rng_data(rng, "i2", (6, 7)), chunks=(6, 7),
                         compression="gzip")
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((4, 4))
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
        space = h5py.h5s.create_simple((9, 10))
        dsid = h5py.h5d.create(f.id, b"implicit", h5py.h5t.STD_U32LE, space, dcpl=dcpl)
        dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, rng_data(rng, "<u4", (9, 10)))


def make_userblock(path, size, e):
    rng = np.random.default_rng(5 + size)
    with h5py.File(path, "w", userblock_size=size, libver=("earliest", "v110")) as f:
        f.create_dataset("data", data=rng_data(rng, "u2", (30, 25)), chunks=(8, 8),
                         compression="gzip", shuffle=True)
        f.create_dataset("raw", data=rng_data(rng, "f8", (10, 10)), chunks=(3, 4))
        f.attrs["note"] = "user block of %d bytes" % size
        e.attributes["/"] = {"note": "user block of %d bytes" % size}
    with open(path, "r+b") as fh:
        fh.write(b"not HDF5: a user block " + b"\xff" * 8)


def make_cyclic(outdir):
    """Files whose object headers are cyclic: the v1 object header of a
    group with many attributes (libver earliest), its continuation message
    pointed back at the header's own first chunk, or the last message of the
    continuation chunk turned into a continuation to that chunk itself.
    Returns [(description, path)]."""
    base = os.path.join(outdir, "cyclic_base.h5")
    with h5py.File(base, "w", libver=("earliest", "v110")) as f:
        g = f.create_group("g")
        for i in range(40):
            g.attrs["a%02d" % i] = np.arange(20)
        addr = h5py.h5o.get_info(g.id).addr
    data = bytearray(open(base, "rb").read())
    assert data[addr] == 1, "not a version 1 object header"
    size = struct.unpack_from("<I", data, addr + 8)[0]

    def messages(start, length):
        pos, out = start, []
        while pos + 8 <= start + length:
            t, sz = struct.unpack_from("<HH", data, pos)
            out.append((pos, t, sz))
            pos += 8 + sz
        return out

    cont = [m for m in messages(addr + 16, size) if m[1] == 0x10]
    assert cont, "no continuation message"
    at = cont[0][0]
    chunk, length = struct.unpack_from("<QQ", data, at + 8)
    out = []
    self_loop = bytearray(data)
    struct.pack_into("<QQ", self_loop, at + 8, addr + 16, size)
    out.append(("continuation to its own chunk", "cyclic_self.h5", self_loop))
    last = messages(chunk, length)[-1]
    chunk_loop = bytearray(data)
    struct.pack_into("<HHB", chunk_loop, last[0], 0x10, last[2], 0)
    struct.pack_into("<QQ", chunk_loop, last[0] + 8, chunk, length)
    out.append(("continuation chunk that continues to itself", "cyclic_chunk.h5", chunk_loop))
    files = []
    for what, name, bytes_ in out:
        path = os.path.join(outdir, name)
        with open(path, "wb") as fh:
            fh.write(bytes_)
        files.append({"what": what, "path": path})
    os.remove(base)
    return files


def lookup3(data, initval=0):
    """Bob Jenkins' lookup3 hashlittle, the checksum of HDF5's newer
    metadata (H5_checksum_lookup3)."""
    m = 0xFFFFFFFF

    def rot(x, k):
        return ((x << k) | (x >> (32 - k))) & m

    a = b = c = (0xDEADBEEF + len(data) + initval) & m
    rest = bytes(data)
    while len(rest) > 12:
        x, y, z = struct.unpack_from("<III", rest)
        a, b, c = (a + x) & m, (b + y) & m, (c + z) & m
        a = (a - c) & m; a ^= rot(c, 4); c = (c + b) & m
        b = (b - a) & m; b ^= rot(a, 6); a = (a + c) & m
        c = (c - b) & m; c ^= rot(b, 8); b = (b + a) & m
        a = (a - c) & m; a ^= rot(c, 16); c = (c + b) & m
        b = (b - a) & m; b ^= rot(a, 19); a = (a + c) & m
        c = (c - b) & m; c ^= rot(b, 4); b = (b + a) & m
        rest = rest[12:]
    if not rest:
        return c
    x, y, z = struct.unpack("<III", rest + bytes(12 - len(rest)))
    a, b, c = (a + x) & m, (b + y) & m, (c + z) & m
    c ^= b; c = (c - rot(b, 14)) & m
    a ^= c; a = (a - rot(c, 11)) & m
    b ^= a; b = (b - rot(a, 25)) & m
    c ^= b; c = (c - rot(b, 16)) & m
    a ^= c; a = (a - rot(c, 4)) & m
    b ^= a; b = (b - rot(a, 14)) & m
    c ^= b; c = (c - rot(b, 24)) & m
    return c


def make_dense_overcounted(outdir):
    """Dense storage (a fractal heap and a v2 B-tree of names: libver v108,
    more than fit in the object header) whose name B-tree header counts 5
    records more than the tree holds, its checksum made right again: a
    group's links (dense_overcounted.h5) and a group's attributes
    (dense_attributes_overcounted.h5). libhdf5 1.10 answers a listing of
    either in name order from a table it sizes by that count and never
    fills entirely, then sorts the entries it never filled (and frees them,
    for links): h5ls -r crashes on the first, h5dump -A on the second.
    Listing in libhdf5's native order walks the tree instead. Returns
    [{"what", "path"}]."""
    out = []
    for name, btree_type, what in [
            ("dense_overcounted.h5", 5, "dense group whose name index counts more links than it holds"),
            ("dense_attributes_overcounted.h5", 8,
             "dense attributes whose name index counts more than it holds")]:
        path = os.path.join(outdir, name)
        with h5py.File(path, "w", libver=("v108", "v110")) as f:
            g = f.create_group("g")
            if btree_type == 5:
                for i in range(12):
                    g.create_group("member%02d" % i)
                g.create_dataset("data", data=np.arange(12, dtype="u2"))
            else:
                for i in range(20):
                    g.attrs["a%02d" % i] = i
        data = bytearray(open(path, "rb").read())
        # The v2 B-tree header: "BTHD", version, type (5: link names, 8:
        # attribute names), node size (4), record size (2), depth (2),
        # split and merge percents, root node address (8), records in the
        # root node (2), records in the tree (8), checksum of everything
        # before it.
        at = data.find(b"BTHD")
        assert at >= 0 and data.find(b"BTHD", at + 4) < 0 and data[at + 5] == btree_type, \
            "not one v2 B-tree of names"
        assert lookup3(data[at:at + 34]) == struct.unpack_from("<I", data, at + 34)[0], \
            "the B-tree header's checksum is not lookup3 over its fields"
        count = struct.unpack_from("<Q", data, at + 26)[0]
        struct.pack_into("<Q", data, at + 26, count + 5)
        struct.pack_into("<I", data, at + 34, lookup3(data[at:at + 34]))
        with open(path, "wb") as fh:
            fh.write(data)
        out.append({"what": what, "path": path})
    return out


def filters_of(dcpl):
    out = []
    for i in range(dcpl.get_nfilters()):
        fid, flags, cd, name = dcpl.get_filter(i)
        out.append({"id": fid, "flags": flags, "cd_values": list(cd), "name": name.decode("latin-1")})
    return out


def layout_name(dcpl):
    return {h5py.h5d.CHUNKED: "chunked", h5py.h5d.CONTIGUOUS: "contiguous",
            h5py.h5d.COMPACT: "compact", h5py.h5d.VIRTUAL: "virtual"}[dcpl.get_layout()]


def describe_file(path, e, bindir, counter):
    """{"path", "userblock", "size", "version", "groups": [{"path", "list",
    "attributes", "left_out"}], "datasets": [{"path", "dtype" (numpy str,
    e.g. "<u2"), "shape", "maxshape", "chunks", "layout", "filters",
    "storage_size" (the bytes the data take in the file), "fillvalue",
    "bin", "chunk_list": [{"offset", "addr", "size", "filter_mask"}]
    (allocated chunks, absolute addresses), "unsupported", "attributes"}]}"""
    out = {"path": path, "size": os.path.getsize(path), "groups": [], "datasets": []}
    with h5py.File(path, "r") as f:
        out["userblock"] = f.userblock_size
        out["version"] = f.attrs["n5"] if "n5" in f.attrs else None
        groups = ["/"]
        f.visititems(lambda n, o: groups.append("/" + n) if isinstance(o, h5py.Group) else None)
        for g in sorted(set(groups) | set(e.lists)):
            entry = {"path": g}
            if g in e.lists:
                entry["list"] = e.lists[g]
            entry["attributes"] = e.attributes.get(g, {})
            entry["left_out"] = e.left_out.get(g, [])
            out["groups"].append(entry)
        dsets = []
        f.visititems(lambda n, o: dsets.append("/" + n) if isinstance(o, h5py.Dataset) else None)
        for name in sorted(set(dsets)):
            if isinstance(f.get(name, getlink=True), h5py.SoftLink):
                continue
            d = f[name]
            dcpl = d.id.get_create_plist()
            entry = {
                "path": name,
                "dtype": d.dtype.str,
                "shape": list(d.shape) if d.shape is not None else None,
                "maxshape": [m for m in d.maxshape] if d.maxshape is not None else None,
                "chunks": list(d.chunks) if d.chunks else None,
                "layout": layout_name(dcpl),
                "filters": filters_of(dcpl),
                "storage_size": d.id.get_storage_size(),
                "attributes": e.attributes.get(name, {}),
            }
            if name in e.unsupported:
                entry["unsupported"] = e.unsupported[name]
                out["datasets"].append(entry)
                continue
            fv = d.fillvalue
            entry["fillvalue"] = fv.item() if hasattr(fv, "item") else fv
            data = d[...]
            counter[0] += 1
            bin_path = os.path.join(bindir, "%d.bin" % counter[0])
            data.astype(data.dtype.newbyteorder("<")).tofile(bin_path)
            entry["bin"] = bin_path
            chunks = []
            if d.chunks:
                for i in range(d.id.get_num_chunks()):
                    info = d.id.get_chunk_info(i)
                    chunks.append({"offset": list(info.chunk_offset), "addr": info.byte_offset,
                                   "size": info.size, "filter_mask": info.filter_mask})
            entry["chunk_list"] = chunks
            out["datasets"].append(entry)
    return out


def make(outdir):
    os.makedirs(os.path.join(outdir, "bin"), exist_ok=True)
    files = []
    counter = [0]
    for name, maker in [("userblock512.h5", lambda p, e: make_userblock(p, 512, e)),
                        ("userblock4096.h5", lambda p, e: make_userblock(p, 4096, e)),
                        ("n5_layout.h5", make_n5_layout), ("bdv.h5", make_bdv),
                        ("thirdparty.h5", make_thirdparty), ("indexes.h5", make_indexes)]:
        path = os.path.join(outdir, name)
        e = Expect()
        maker(path, e)
        files.append(describe_file(path, e, os.path.join(outdir, "bin"), counter))
    damaged = make_cyclic(outdir) + make_dense_overcounted(outdir)
    json.dump({"h5py": h5py.__version__, "hdf5": h5py.version.hdf5_version,
               "hdf5plugin": hdf5plugin.version, "files": files, "damaged": damaged}, sys.stdout)


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def own_section(dump):
    """The part of an `h5dump -A` output about the object itself: up to its
    first member group or dataset (a group's dump goes on into them)."""
    lines = dump.splitlines()
    out = []
    opened = False
    for line in lines:
        stripped = line.strip()
        if stripped.startswith(("GROUP \"", "DATASET \"")):
            if opened:
                break
            opened = True
        out.append(line)
    return "\n".join(out)


def check(spec_path):
    """SPEC: {"file", "h5dump", "groups": {path: {"attributes": {key: {"kind":
    "bool"|"int64"|"uint64"|"float64"|"string", "shape": [] or [n], "value"}},
    "json_root": {...} or null, "absent": [keys]}}, "datasets": {path: {"dtype",
    "shape", "chunks", "maxshape", "shuffle", "deflate" (level or null),
    "bin" (C order, little-endian, or null), "absent_chunks": [[...]]}}}."""
    with open(spec_path) as fh:
        spec = json.load(fh)
    errors = []
    with h5py.File(spec["file"], "r") as f:
        if "n5" in f.attrs:
            errors.append("the root has an n5 attribute")
        if f.userblock_size != 0:
            errors.append("user block %d" % f.userblock_size)
        for path, g in spec["groups"].items():
            if path not in f:
                errors.append("%s: missing" % path)
                continue
            obj = f[path]
            for key, want in g["attributes"].items():
                if key not in obj.attrs:
                    errors.append("%s: attribute %s missing" % (path, key))
                    continue
                aid = obj.attrs.get_id(key)
                t = aid.get_type()
                shape = list(aid.shape)
                got = obj.attrs[key]
                kind = want["kind"]
                if shape != want["shape"]:
                    errors.append("%s/%s: shape %s" % (path, key, shape))
                if kind == "bool":
                    ok = (isinstance(t, h5py.h5t.TypeEnumID) and t.get_nmembers() == 2
                          and t.get_member_name(0) == b"FALSE" and t.get_member_name(1) == b"TRUE"
                          and t.get_super().get_size() == 1)
                    val = np.asarray(got).tolist()
                elif kind in ("int64", "uint64"):
                    ok = (isinstance(t, h5py.h5t.TypeIntegerID) and t.get_size() == 8
                          and t.get_order() == h5py.h5t.ORDER_LE
                          and (t.get_sign() == h5py.h5t.SGN_2) == (kind == "int64"))
                    val = np.asarray(got).tolist()
                elif kind == "float64":
                    ok = (isinstance(t, h5py.h5t.TypeFloatID) and t.get_size() == 8
                          and t.get_order() == h5py.h5t.ORDER_LE)
                    val = np.asarray(got).tolist()
                elif kind == "string":
                    ok = (isinstance(t, h5py.h5t.TypeStringID) and t.is_variable_str()
                          and t.get_cset() == h5py.h5t.CSET_UTF8)
                    val = got.tolist() if isinstance(got, np.ndarray) else got
                    if isinstance(val, list):
                        val = [v.decode() if isinstance(v, bytes) else v for v in val]
                    elif isinstance(val, bytes):
                        val = val.decode()
                else:
                    ok = False
                    val = None
                if not ok:
                    errors.append("%s/%s: HDF5 type %s is not %s" % (path, key, t, kind))
                if val != want["value"]:
                    errors.append("%s/%s: value %r, expected %r" % (path, key, val, want["value"]))
            root = obj.attrs.get("N5_JSON_ROOT")
            if g["json_root"] is None:
                if root is not None:
                    errors.append("%s: N5_JSON_ROOT %r should not be there" % (path, root))
            else:
                if root is None:
                    errors.append("%s: N5_JSON_ROOT missing" % path)
                else:
                    t = obj.attrs.get_id("N5_JSON_ROOT").get_type()
                    if not (isinstance(t, h5py.h5t.TypeStringID) and t.is_variable_str()
                            and t.get_cset() == h5py.h5t.CSET_UTF8):
                        errors.append("%s: N5_JSON_ROOT is not a variable-length UTF-8 string" % path)
                    text = root.decode() if isinstance(root, bytes) else root
                    if json.loads(text) != g["json_root"]:
                        errors.append("%s: N5_JSON_ROOT %s, expected %s" % (path, text, g["json_root"]))
                    if ": " in text or ", " in text:
                        errors.append("%s: N5_JSON_ROOT is not compact: %s" % (path, text))
            for key in g.get("absent", []):
                if key in obj.attrs:
                    errors.append("%s: attribute %s should be gone" % (path, key))
        for path, want in spec["datasets"].items():
            if path not in f or not isinstance(f[path], h5py.Dataset):
                errors.append("%s: no dataset" % path)
                continue
            d = f[path]
            dcpl = d.id.get_create_plist()
            if d.dtype.str != want["dtype"]:
                errors.append("%s: dtype %s, expected %s" % (path, d.dtype.str, want["dtype"]))
            if list(d.shape) != want["shape"] or list(d.maxshape) != want["maxshape"]:
                errors.append("%s: shape %s maxshape %s" % (path, d.shape, d.maxshape))
            if list(d.chunks or []) != want["chunks"]:
                errors.append("%s: chunks %s, expected %s" % (path, d.chunks, want["chunks"]))
            ids = [x["id"] for x in filters_of(dcpl)]
            expect_ids = ([2] if want["shuffle"] else []) + ([1] if want["deflate"] is not None else [])
            if ids != expect_ids:
                errors.append("%s: filters %s, expected %s" % (path, ids, expect_ids))
            if want["deflate"] is not None and 1 in ids:
                level = filters_of(dcpl)[ids.index(1)]["cd_values"][0]
                if level != want["deflate"]:
                    errors.append("%s: deflate level %d, expected %d" % (path, level, want["deflate"]))
            if d.fillvalue != 0:
                errors.append("%s: fill value %r" % (path, d.fillvalue))
            if dcpl.get_alloc_time() != h5py.h5d.ALLOC_TIME_INCR:
                errors.append("%s: allocation time %d, not incremental" % (path, dcpl.get_alloc_time()))
            if want["bin"] is not None:
                expected = np.fromfile(want["bin"], dtype=np.dtype(want["dtype"]).newbyteorder("<"))
                got = d[...].reshape(-1)
                if not np.array_equal(got, expected.astype(got.dtype),
                                      equal_nan=got.dtype.kind == "f"):
                    errors.append("%s: data differ" % path)
            allocated = {tuple(d.id.get_chunk_info(i).chunk_offset) for i in range(d.id.get_num_chunks())}
            for pos in want["absent_chunks"]:
                offset = tuple(p * c for p, c in zip(pos, d.chunks))
                if offset in allocated:
                    errors.append("%s: chunk %s is allocated" % (path, pos))
    if spec.get("h5dump"):
        r = subprocess.run([spec["h5dump"], "-H", spec["file"]], capture_output=True, text=True)
        if r.returncode != 0:
            errors.append("h5dump -H exited %d: %s" % (r.returncode, r.stderr[-2000:]))
        for path in spec["datasets"]:
            r = subprocess.run([spec["h5dump"], "-d", path, "-b", "LE", "-o", spec_path + ".dump", spec["file"]],
                               capture_output=True, text=True)
            if r.returncode != 0:
                errors.append("h5dump -d %s exited %d: %s" % (path, r.returncode, r.stderr[-2000:]))
                continue
            want = spec["datasets"][path]
            if want["bin"] is not None:
                with open(spec_path + ".dump", "rb") as a, open(want["bin"], "rb") as b:
                    if a.read() != b.read():
                        errors.append("h5dump -d %s -b LE: bytes differ" % path)
        for path in spec["groups"]:
            option = "-d" if path in spec["datasets"] else "-g"
            r = subprocess.run([spec["h5dump"], "-A", option, path, spec["file"]], capture_output=True,
                               text=True)
            if r.returncode != 0:
                errors.append("h5dump -A %s %s exited %d: %s" % (option, path, r.returncode, r.stderr[-2000:]))
            elif "N5_JSON_ROOT" in own_section(r.stdout) and spec["groups"][path]["json_root"] is None:
                errors.append("h5dump -A %s %s shows N5_JSON_ROOT" % (option, path))
    if errors:
        fail("\n".join(errors))
    print("ok")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "make":
        make(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "check":
        check(sys.argv[2])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
