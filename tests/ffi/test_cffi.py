#!/usr/bin/env python3
"""libn5 through Python cffi in ABI mode: the C API as dynamic-language
wrappers (MATLAB loadlibrary/calllib, Julia ccall, Python ctypes/cffi) see it.

Nothing is compiled: include/n5.h is run through the C preprocessor (without
its #include lines, so that only libn5's own declarations remain), the
declarations and the integer `#define N5_...` constants are given to
`ffi.cdef`, and the shared library is loaded with `ffi.dlopen`. Then the
tests call the library with numpy buffers in N5 order (dimension 0 fastest:
a C-order array of shape (z, y, x) is N5 [x, y, z]; a Fortran-order array
has N5's shape as it is).

    python test_cffi.py --lib build/cargo/release/libn5.so --header include/n5.h \
        [--cc cc] [--corpus ../shared/corpus] [unittest options]

Registered with ctest by tests/ffi/CMakeLists.txt (test ffi.cffi). Needs
cffi and numpy (tests/peers/requirements.txt); exits with 77 (skipped) when
they are missing.
"""

import argparse
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import threading
import unittest

try:
    import cffi
    import numpy as np
except ImportError as e:  # pragma: no cover
    print(f"SKIPPED: {e}; install cffi and numpy (pip install -r tests/peers/requirements.txt)")
    sys.exit(77)

ARGS = None  # command-line options, set in __main__
ffi = None
lib = None
HEADER_INTS = {}  # every integer #define of n5.h
HEADER_VERSION_STRING = None


def load_library(lib_path, header_path, cc):
    """Parse n5.h as a wrapper generator would and dlopen the library."""
    global ffi, lib, HEADER_VERSION_STRING
    with open(header_path, encoding="utf-8") as f:
        header = f.read()
    # The declarations only: drop the system #includes (cffi knows size_t and
    # the <stdint.h> types) and let the preprocessor remove comments, the
    # include guard and the C++ extern "C" block.
    source = "\n".join(
        line for line in header.splitlines() if not line.lstrip().startswith("#include"))
    command = [cc] if os.path.exists(cc) else shlex.split(cc)
    decls = subprocess.run(
        command + ["-E", "-P", "-x", "c", "-"],
        input=source, capture_output=True, text=True, check=True).stdout
    defines = re.findall(r"^#define\s+(N5_\w+)\s+(-?\d+)\s*$", header, re.M)
    HEADER_INTS.update((name, int(value)) for name, value in defines)
    HEADER_VERSION_STRING = re.search(
        r'^#define\s+N5_VERSION_STRING\s+"([^"]*)"', header, re.M).group(1)
    ffi = cffi.FFI()
    ffi.cdef(decls + "\n" + "\n".join(f"#define {n} {v}" for n, v in defines))
    lib = ffi.dlopen(lib_path)


# --- small wrappers, as a binding would write them ---------------------------

class N5Error(Exception):
    def __init__(self, code, message):
        super().__init__(f"{name_of(code)}: {message}")
        self.code = code
        self.message = message


def name_of(code):
    return ffi.string(lib.n5_status_name(code)).decode()


def last_error():
    return lib.n5_last_error_code(), ffi.string(lib.n5_last_error_message()).decode()


def check(status):
    if status != lib.N5_OK:
        code, message = last_error()
        assert code == status, (code, status)
        raise N5Error(status, message)


def text(fn, *args):
    """Call a text getter: size query first, then a buffer of len + 1."""
    n = ffi.new("size_t *")
    check(fn(*args, ffi.NULL, 0, n))
    buf = ffi.new("char[]", n[0] + 1)
    check(fn(*args, buf, len(buf), n))
    return ffi.string(buf, n[0]).decode()


def u64s(values):
    return ffi.new("uint64_t[]", list(values))


def open_container(root, mode=None, options=None):
    mode = lib.N5_MODE_CREATE if mode is None else mode
    c = lib.n5_container_open(os.fsencode(root), mode,
                              ffi.NULL if options is None else options.encode())
    if c == ffi.NULL:
        raise N5Error(*last_error())
    return ffi.gc(c, lib.n5_container_free)  # freed when garbage-collected


def create_dataset(c, path, dims, block, dtype, compression=None):
    d = lib.n5_dataset_create(c, path.encode(), len(dims), u64s(dims), u64s(block), dtype,
                              ffi.NULL if compression is None else compression.encode())
    if d == ffi.NULL:
        raise N5Error(*last_error())
    return ffi.gc(d, lib.n5_dataset_free)


def open_dataset(c, path):
    d = lib.n5_dataset_open(c, path.encode())
    if d == ffi.NULL:
        raise N5Error(*last_error())
    return ffi.gc(d, lib.n5_dataset_free)


# numpy dtype <-> N5_DTYPE_* code
NUMPY_DTYPES = {
    "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32, "UINT64": np.uint64,
    "INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64,
    "FLOAT32": np.float32, "FLOAT64": np.float64,
}


def dtype_code(np_dtype):
    for name, t in NUMPY_DTYPES.items():
        if np.dtype(t) == np.dtype(np_dtype):
            return getattr(lib, "N5_DTYPE_" + name)
    raise ValueError(np_dtype)


def pointer(a):
    """The data pointer of a contiguous numpy array (C or Fortran order), as
    MATLAB's calllib or Julia's pointer(A) would pass it."""
    assert a.flags.c_contiguous or a.flags.f_contiguous
    return ffi.cast("void *", a.ctypes.data)


def region_read(d, offset, n5_shape, np_dtype, order="F"):
    """Read a region into a new array: Fortran order with N5's shape, or C
    order with the shape reversed."""
    shape = tuple(n5_shape) if order == "F" else tuple(reversed(n5_shape))
    out = np.empty(shape, dtype=np_dtype, order=order)
    check(lib.n5_region_read(d, len(n5_shape), u64s(offset), u64s(n5_shape),
                             dtype_code(np_dtype), pointer(out), out.nbytes))
    return out


def region_write(d, offset, a, order="F"):
    """Write array a (Fortran order: N5 shape; C order: reversed)."""
    a = np.asfortranarray(a) if order == "F" else np.ascontiguousarray(a)
    n5_shape = a.shape if order == "F" else a.shape[::-1]
    check(lib.n5_region_write(d, len(n5_shape), u64s(offset), u64s(n5_shape),
                              dtype_code(a.dtype), pointer(a), a.nbytes))


class CffiTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="n5-cffi-")
        self.tmp = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def assertFails(self, status, code, *fragments):
        """status is code, and so is the last error; its message names fragments."""
        self.assertEqual(name_of(status), name_of(code))
        last_code, message = last_error()
        self.assertEqual(last_code, code)
        for fragment in fragments:
            self.assertIn(fragment, message)
        return message

    # --- versions, names, dtypes ---------------------------------------------

    def test_versions_match_header(self):
        self.assertEqual(lib.n5_version_number(), lib.N5_VERSION_NUMBER)
        self.assertEqual(
            (lib.n5_version_major(), lib.n5_version_minor(), lib.n5_version_patch()),
            (lib.N5_VERSION_MAJOR, lib.N5_VERSION_MINOR, lib.N5_VERSION_PATCH))
        self.assertEqual(lib.N5_VERSION_NUMBER, lib.N5_VERSION_MAJOR * 10000
                         + lib.N5_VERSION_MINOR * 100 + lib.N5_VERSION_PATCH)
        self.assertEqual(ffi.string(lib.n5_version_string()).decode(), HEADER_VERSION_STRING)

    def test_status_names(self):
        statuses = {n: v for n, v in HEADER_INTS.items()
                    if n == "N5_OK" or n.startswith("N5_ERR_")}
        self.assertGreaterEqual(len(statuses), 20)
        for name, value in statuses.items():
            self.assertEqual(name_of(value), name)
        self.assertEqual(name_of(12345), "N5_ERR_UNKNOWN")
        self.assertEqual(len(set(statuses.values())), len(statuses))

    def test_dtypes(self):
        for name, t in NUMPY_DTYPES.items():
            code = getattr(lib, "N5_DTYPE_" + name)
            self.assertEqual(lib.n5_dtype_size(code), np.dtype(t).itemsize)
            self.assertEqual(ffi.string(lib.n5_dtype_name(code)).decode(), name.lower())
            self.assertEqual(lib.n5_dtype_from_name(name.lower().encode()), code)
        self.assertEqual(lib.n5_dtype_size(lib.N5_DTYPE_STRING), 0)
        self.assertEqual(lib.n5_dtype_size(lib.N5_DTYPE_OBJECT), 0)
        self.assertEqual(ffi.string(lib.n5_dtype_name(lib.N5_DTYPE_STRING)), b"string")
        self.assertEqual(lib.n5_dtype_size(lib.N5_DTYPE_INVALID), 0)
        self.assertEqual(lib.n5_dtype_name(0), ffi.NULL)
        self.assertEqual(lib.n5_dtype_name(99), ffi.NULL)
        # The Zarr types: fixed sizes where the type has one, 0 where the
        # dataset decides (n5_dataset_element_size).
        for name, size in [("BOOL", 1), ("FLOAT16", 2), ("COMPLEX64", 8), ("COMPLEX128", 16),
                           ("FIXED_UTF32", 0), ("FIXED_BYTES", 0), ("STRUCT", 0),
                           ("DATETIME64", 8), ("TIMEDELTA64", 8)]:
            code = getattr(lib, "N5_DTYPE_" + name)
            self.assertEqual(lib.n5_dtype_size(code), size, name)
            self.assertEqual(lib.n5_dtype_from_name(ffi.string(lib.n5_dtype_name(code))), code)
        self.assertEqual(lib.n5_dtype_name(22), ffi.NULL)
        self.assertEqual(lib.n5_dtype_from_name(b"complex256"), lib.N5_DTYPE_INVALID)
        self.assertEqual(lib.n5_last_error_code(), lib.N5_ERR_INVALID_ARGUMENT)
        self.assertEqual(lib.n5_dtype_from_name(ffi.NULL), lib.N5_DTYPE_INVALID)
        self.assertEqual(lib.n5_last_error_code(), lib.N5_ERR_NULL_POINTER)

    # --- containers and the text-output convention ---------------------------

    def test_container_text_outputs(self):
        root = os.path.join(self.tmp, "c.n5")
        c = open_container(root, options='{"threads": 2}')
        self.assertEqual(text(lib.n5_container_version, c), "4.0.0")
        self.assertEqual(text(lib.n5_container_root, c), root)
        self.assertEqual(json.loads(text(lib.n5_container_options, c)),
                         {"threads": 2, "write_empty_blocks": True,
                          "follow_links": True, "io_concurrency": 4, "cache_bytes": 0,
                          "retry": {"max_attempts": 8, "max_seconds": 60.0,
                                    "request_timeout_seconds": 30.0}})
        mode = ffi.new("n5_mode *")
        check(lib.n5_container_mode(c, mode))
        self.assertEqual(mode[0], lib.N5_MODE_CREATE)

        # Size query: NULL buffer, capacity 0 -> N5_OK and the length.
        n = ffi.new("size_t *", 999)
        check(lib.n5_container_version(c, ffi.NULL, 0, n))
        self.assertEqual(n[0], 5)
        # A buffer of exactly the length has no room for the NUL: too small,
        # the length is stored and the buffer is untouched.
        buf = ffi.new("char[]", b"XXXXX")  # 6 bytes with NUL; offer 5
        n[0] = 0
        status = lib.n5_container_version(c, buf, 5, n)
        self.assertFails(status, lib.N5_ERR_BUFFER_TOO_SMALL, "n5_container_version")
        self.assertEqual(n[0], 5)
        self.assertEqual(ffi.buffer(buf)[:], b"XXXXX\0")
        # len + 1 fits; out_len may be NULL when a buffer is given.
        buf = ffi.new("char[]", 6)
        check(lib.n5_container_version(c, buf, 6, ffi.NULL))
        self.assertEqual(ffi.string(buf), b"4.0.0")
        # A NULL buffer with a capacity is an error, and so is a size query
        # without out_len.
        self.assertFails(lib.n5_container_version(c, ffi.NULL, 10, n), lib.N5_ERR_NULL_POINTER)
        self.assertFails(lib.n5_container_version(c, ffi.NULL, 0, ffi.NULL),
                         lib.N5_ERR_NULL_POINTER)

        # Opening read-only, then a write: N5_ERR_READ_ONLY.
        r = open_container(root, lib.N5_MODE_READ)
        self.assertFails(lib.n5_group_create(r, b"g"), lib.N5_ERR_READ_ONLY, "n5_group_create")
        self.assertFails(lib.n5_attributes_set(r, b"", b'{"a":1}'), lib.N5_ERR_READ_ONLY)

    def test_hierarchy_and_lists(self):
        c = open_container(os.path.join(self.tmp, "h.n5"))
        check(lib.n5_group_create(c, b"a/b"))
        check(lib.n5_group_create(c, "c/\u00fcml\u00e4ut".encode()))
        create_dataset(c, "a/raw", [4], [2], lib.N5_DTYPE_UINT8)
        self.assertEqual(json.loads(text(lib.n5_list, c, b"")), ["a", "c"])
        self.assertEqual(json.loads(text(lib.n5_list, c, b"/a")), ["b", "raw"])
        self.assertEqual(json.loads(text(lib.n5_list, c, b"a/raw")), [])
        self.assertEqual(json.loads(text(lib.n5_list_recursive, c, b"")),
                         ["a", "a/b", "a/raw", "c", "c/\u00fcml\u00e4ut"])
        exists = ffi.new("int32_t *", -1)
        is_dataset = ffi.new("int32_t *", -1)
        check(lib.n5_exists(c, b"a/b", exists))
        check(lib.n5_dataset_exists(c, b"a/b", is_dataset))
        self.assertEqual((exists[0], is_dataset[0]), (1, 0))
        check(lib.n5_dataset_exists(c, b"a/raw", is_dataset))
        self.assertEqual(is_dataset[0], 1)
        check(lib.n5_exists(c, b"nope", exists))
        self.assertEqual(exists[0], 0)
        n = ffi.new("size_t *")
        self.assertFails(lib.n5_list(c, b"nope", ffi.NULL, 0, n), lib.N5_ERR_NOT_FOUND,
                         "n5_list", "nope")
        self.assertFails(lib.n5_list(c, b"../outside", ffi.NULL, 0, n),
                         lib.N5_ERR_INVALID_ARGUMENT)
        check(lib.n5_remove(c, b"a"))
        self.assertEqual(json.loads(text(lib.n5_list, c, b"")), ["c"])
        self.assertFails(lib.n5_remove(c, b""), lib.N5_ERR_INVALID_ARGUMENT)

    def test_attributes(self):
        c = open_container(os.path.join(self.tmp, "a.n5"))
        check(lib.n5_group_create(c, b"g"))
        self.assertEqual(json.loads(text(lib.n5_attributes_get, c, b"g")), {})
        check(lib.n5_attributes_set(c, b"g", b'{"x": 1, "s": "\xc3\xa9t\xc3\xa9"}'))
        check(lib.n5_attribute_set(c, b"g", b"deep/list[2]", b"7"))
        doc = json.loads(text(lib.n5_attributes_get, c, b"g"))
        self.assertEqual(doc, {"x": 1, "s": "\u00e9t\u00e9", "deep": {"list": [0, 0, 7]}})
        self.assertEqual(text(lib.n5_attribute_get, c, b"g", b"deep/list[2]"), "7")
        self.assertEqual(json.loads(text(lib.n5_attribute_get, c, b"g", b"s")), "\u00e9t\u00e9")
        check(lib.n5_attribute_remove(c, b"g", b"deep/list[0]"))
        self.assertEqual(text(lib.n5_attribute_get, c, b"g", b"deep/list"), "[0,7]")
        n = ffi.new("size_t *")
        self.assertFails(lib.n5_attribute_get(c, b"g", b"missing", ffi.NULL, 0, n),
                         lib.N5_ERR_NOT_FOUND, "missing")
        self.assertFails(lib.n5_attributes_set(c, b"g", b"[1,2]"), lib.N5_ERR_JSON)
        self.assertFails(lib.n5_attributes_set(c, b"g", b"{not json"), lib.N5_ERR_JSON)
        self.assertFails(lib.n5_attributes_set(c, b"nope", b"{}"), lib.N5_ERR_NOT_FOUND)

    # --- datasets, blocks and regions with numpy buffers ---------------------

    def test_dataset_metadata(self):
        c = open_container(os.path.join(self.tmp, "m.n5"))
        d = create_dataset(c, "vol", [10, 7, 5], [4, 4, 2], lib.N5_DTYPE_INT16,
                           '{"type":"gzip","level":3}')
        ndim = ffi.new("size_t *")
        check(lib.n5_dataset_ndim(d, ndim))
        self.assertEqual(ndim[0], 3)
        out = ffi.new("uint64_t[3]")
        check(lib.n5_dataset_dimensions(d, 3, out))
        self.assertEqual(list(out), [10, 7, 5])
        check(lib.n5_dataset_block_size(d, 3, out))
        self.assertEqual(list(out), [4, 4, 2])
        check(lib.n5_dataset_grid_shape(d, 3, out))
        self.assertEqual(list(out), [3, 2, 3])
        dt = ffi.new("n5_dtype *")
        check(lib.n5_dataset_dtype(d, dt))
        self.assertEqual(dt[0], lib.N5_DTYPE_INT16)
        comp = json.loads(text(lib.n5_dataset_compression, d))
        self.assertEqual((comp["type"], comp["level"]), ("gzip", 3))
        self.assertEqual(text(lib.n5_dataset_path, d), "vol")
        attrs = json.loads(text(lib.n5_attributes_get, c, b"vol"))
        self.assertEqual((attrs["dimensions"], attrs["blockSize"], attrs["dataType"]),
                         ([10, 7, 5], [4, 4, 2], "int16"))
        # ndim must be the rank; scalar outputs are untouched on failure.
        self.assertFails(lib.n5_dataset_dimensions(d, 2, out), lib.N5_ERR_SHAPE_MISMATCH)
        self.assertFails(create_dataset_status(c, "vol", [3], [3]), lib.N5_ERR_ALREADY_EXISTS,
                         "vol")
        self.assertFails(create_dataset_status(c, "bad", [3], [3], compression='{"type":"nope"}'),
                         lib.N5_ERR_UNSUPPORTED)
        # Growing the dataset.
        check(lib.n5_dataset_set_dimensions(d, 3, u64s([12, 7, 5])))
        check(lib.n5_dataset_dimensions(open_dataset(c, "vol"), 3, out))
        self.assertEqual(list(out), [12, 7, 5])

    # n5_dataset_create checks its arguments as a writer must: a zero or
    # too large block extent (Java keeps blockSize in an int[]) and
    # compression parameters the compressor refuses are invalid arguments,
    # refused before anything is stored.
    def test_zero_block_extent_is_invalid_argument(self):
        c = open_container(os.path.join(self.tmp, "z.n5"))
        self.assertEqual(name_of(create_dataset_status(c, "zero", [3], [0])),
                         "N5_ERR_INVALID_ARGUMENT")

    def test_block_extent_2_pow_31_is_rejected(self):
        c = open_container(os.path.join(self.tmp, "big.n5"))
        self.assertEqual(name_of(create_dataset_status(c, "b31m1", [5], [2**31 - 1])), "N5_OK")
        self.assertEqual(name_of(create_dataset_status(c, "b32", [5], [2**32])),
                         "N5_ERR_INVALID_ARGUMENT")
        self.assertEqual(name_of(create_dataset_status(c, "b31", [5], [2**31])),
                         "N5_ERR_INVALID_ARGUMENT")

    def test_bad_compression_parameters_are_rejected_by_create(self):
        c = open_container(os.path.join(self.tmp, "comp.n5"))
        for i, bad in enumerate(['{"type":"gzip","level":99}', '{"type":"zstd","level":100}',
                                 '{"type":"blosc","cname":"nope"}', '{"type":"xz","preset":42}',
                                 '{"type":"bzip2","blockSize":0}', '{"type":"gzip","lvl":1}']):
            with self.subTest(compression=bad):
                self.assertEqual(name_of(create_dataset_status(c, f"bad{i}", [5], [5],
                                                               compression=bad)),
                                 "N5_ERR_INVALID_ARGUMENT")
                exists = ffi.new("int32_t *")
                check(lib.n5_exists(c, f"bad{i}".encode(), exists))
                self.assertEqual(exists[0], 0, "nothing is stored")

    def test_block_roundtrip(self):
        c = open_container(os.path.join(self.tmp, "b.n5"))
        d = create_dataset(c, "vol", [10, 7, 5], [4, 4, 2], lib.N5_DTYPE_UINT16,
                           '{"type":"zstd"}')
        pos = u64s([2, 1, 2])  # the corner block: 2 x 3 x 1
        shape = ffi.new("uint64_t[3]")
        check(lib.n5_block_shape(d, 3, pos, shape))
        self.assertEqual(list(shape), [2, 3, 1])
        # N5 shape [2, 3, 1] is a C-order numpy array of shape (1, 3, 2).
        block = np.arange(6, dtype=np.uint16).reshape(1, 3, 2) + 1000
        check(lib.n5_block_write(d, 3, pos, shape, lib.N5_DTYPE_UINT16,
                                 ffi.from_buffer(block), block.nbytes))
        back = np.zeros_like(block)
        out_shape = ffi.new("uint64_t[3]")
        found = ffi.new("int32_t *", -1)
        check(lib.n5_block_read(d, 3, pos, lib.N5_DTYPE_UINT16,
                                ffi.from_buffer(back, require_writable=True), back.nbytes,
                                out_shape, found))
        np.testing.assert_array_equal(back, block)
        self.assertEqual((list(out_shape), found[0]), ([2, 3, 1], 1))
        exists = ffi.new("int32_t *")
        check(lib.n5_block_exists(d, 3, pos, exists))
        self.assertEqual(exists[0], 1)
        self.assertEqual(json.loads(text(lib.n5_block_list, d)), [[2, 1, 2]])
        # The region view of the same voxels.
        np.testing.assert_array_equal(region_read(d, [8, 4, 4], [2, 3, 1], np.uint16, "C"), block)
        # A block that is not stored: found = 0 and zeros.
        missing = np.full((2, 4, 4), 77, dtype=np.uint16)
        check(lib.n5_block_read(d, 3, u64s([0, 0, 0]), lib.N5_DTYPE_UINT16,
                                pointer(missing), missing.nbytes, ffi.NULL, found))
        self.assertEqual(found[0], 0)
        self.assertFalse(missing.any())
        # The block header, without decompressing.
        mode = ffi.new("int32_t *", -1)
        nel = ffi.new("uint64_t *")
        check(lib.n5_block_info(d, 3, pos, mode, out_shape, nel, found))
        self.assertEqual((mode[0], list(out_shape), nel[0], found[0]),
                         (lib.N5_BLOCK_MODE_DEFAULT, [2, 3, 1], 6, 1))
        # Wrong sizes, types and positions.
        self.assertFails(lib.n5_block_read(d, 3, pos, lib.N5_DTYPE_UINT16, pointer(back),
                                           back.nbytes - 2, ffi.NULL, ffi.NULL),
                         lib.N5_ERR_BUFFER_SIZE)
        self.assertFails(lib.n5_block_read(d, 3, pos, lib.N5_DTYPE_INT16, pointer(back),
                                           back.nbytes, ffi.NULL, ffi.NULL),
                         lib.N5_ERR_DTYPE_MISMATCH)
        self.assertFails(lib.n5_block_shape(d, 3, u64s([3, 0, 0]), shape),
                         lib.N5_ERR_OUT_OF_BOUNDS)
        check(lib.n5_block_delete(d, 3, pos))
        check(lib.n5_block_exists(d, 3, pos, exists))
        self.assertEqual(exists[0], 0)

    def test_regions_every_dtype_and_order(self):
        c = open_container(os.path.join(self.tmp, "r.n5"))
        rng = np.random.default_rng(5)
        n5_dims = [9, 8, 7]
        for i, (name, t) in enumerate(NUMPY_DTYPES.items()):
            with self.subTest(dtype=name):
                compression = ['{"type":"gzip"}', None, '{"type":"zstd"}',
                               '{"type":"blosc","cname":"lz4","clevel":5,"shuffle":1}'][i % 4]
                d = create_dataset(c, name.lower(), n5_dims, [4, 3, 2],
                                   getattr(lib, "N5_DTYPE_" + name), compression)
                info = np.iinfo(t) if np.dtype(t).kind in "iu" else np.finfo(t)
                # Fortran order: a[x, y, z] with N5's shape.
                a = np.asfortranarray(
                    rng.uniform(float(info.min) / 2, float(info.max) / 2, n5_dims).astype(t))
                a[0, 0, 0], a[1, 0, 0] = info.min, info.max
                region_write(d, [0, 0, 0], a, "F")
                np.testing.assert_array_equal(region_read(d, [0, 0, 0], n5_dims, t, "F"), a)
                # An unaligned sub-region, read in both orders.
                off, shp = [3, 2, 1], [5, 4, 5]
                want = a[3:8, 2:6, 1:6]
                np.testing.assert_array_equal(region_read(d, off, shp, t, "F"), want)
                np.testing.assert_array_equal(region_read(d, off, shp, t, "C"), want.T)
                # Write a C-order patch (shape (z, y, x)) and read it back.
                patch = np.ascontiguousarray(want.T[::-1])
                region_write(d, off, patch, "C")
                np.testing.assert_array_equal(region_read(d, off, shp, t, "C"), patch)
                # The first block on disk is big-endian, whatever the host.
                with open(os.path.join(self.tmp, "r.n5", name.lower(), "0", "0", "0"),
                          "rb") as f:
                    raw = f.read()
                if compression is None:
                    header = 2 + 2 + 3 * 4
                    first = np.frombuffer(raw[header:header + a.itemsize],
                                          dtype=np.dtype(t).newbyteorder(">"))[0]
                    self.assertEqual(first, a[0, 0, 0])

    def test_region_errors(self):
        c = open_container(os.path.join(self.tmp, "e.n5"))
        d = create_dataset(c, "vol", [10, 7, 5], [4, 4, 2], lib.N5_DTYPE_FLOAT32)
        buf = np.zeros((5, 7, 10), dtype=np.float32)
        args = lambda off, shp: (u64s(off), u64s(shp))
        status = lib.n5_region_read(d, 3, *args([0, 0, 1], [10, 7, 5]), lib.N5_DTYPE_FLOAT32,
                                    pointer(buf), buf.nbytes)
        self.assertFails(status, lib.N5_ERR_OUT_OF_BOUNDS, "n5_region_read", "dimension 2")
        status = lib.n5_region_read(d, 3, *args([0, 0, 0], [10, 7, 5]), lib.N5_DTYPE_FLOAT32,
                                    pointer(buf), buf.nbytes + 4)
        self.assertFails(status, lib.N5_ERR_BUFFER_SIZE)
        status = lib.n5_region_read(d, 3, *args([0, 0, 0], [10, 7, 5]), lib.N5_DTYPE_FLOAT64,
                                    pointer(buf), buf.nbytes)
        self.assertFails(status, lib.N5_ERR_DTYPE_MISMATCH, "float64", "float32")
        status = lib.n5_region_read(d, 2, *args([0, 0], [10, 7]), lib.N5_DTYPE_FLOAT32,
                                    pointer(buf), 10 * 7 * 4)
        self.assertFails(status, lib.N5_ERR_SHAPE_MISMATCH)
        status = lib.n5_region_read(d, 3, *args([0, 0, 0], [10, 7, 5]), 42,
                                    pointer(buf), buf.nbytes)
        self.assertFails(status, lib.N5_ERR_INVALID_ARGUMENT)
        status = lib.n5_region_read(d, 3, *args([0, 0, 0], [10, 7, 5]), lib.N5_DTYPE_FLOAT32,
                                    ffi.NULL, buf.nbytes)
        self.assertFails(status, lib.N5_ERR_NULL_POINTER)
        # An empty region is fine and touches nothing.
        check(lib.n5_region_read(d, 3, *args([10, 0, 0], [0, 7, 5]), lib.N5_DTYPE_FLOAT32,
                                 ffi.NULL, 0))
        # Writes through a read-only container fail; the data stays as it was.
        r = open_container(os.path.join(self.tmp, "e.n5"), lib.N5_MODE_READ)
        rd = open_dataset(r, "vol")
        ones = np.ones((5, 7, 10), dtype=np.float32)
        status = lib.n5_region_write(rd, 3, *args([0, 0, 0], [10, 7, 5]), lib.N5_DTYPE_FLOAT32,
                                     pointer(ones), ones.nbytes)
        self.assertFails(status, lib.N5_ERR_READ_ONLY)
        self.assertFalse(region_read(d, [0, 0, 0], [10, 7, 5], np.float32).any())

    # --- errors and handles ---------------------------------------------------

    def test_error_state(self):
        missing = os.path.join(self.tmp, "missing.n5")
        c = lib.n5_container_open(missing.encode(), lib.N5_MODE_READ, ffi.NULL)
        self.assertEqual(c, ffi.NULL)
        code, message = last_error()
        self.assertEqual(code, lib.N5_ERR_NOT_FOUND)
        self.assertIn("n5_container_open", message)
        self.assertIn("missing.n5", message)
        # The error getters and the _free functions keep the last error.
        lib.n5_container_free(ffi.NULL)
        lib.n5_dataset_free(ffi.NULL)
        self.assertEqual(last_error(), (code, message))
        # Any other call clears it, also one that does not fail.
        lib.n5_version_number()
        self.assertEqual(last_error(), (lib.N5_OK, ""))
        # Bad arguments.
        self.assertEqual(lib.n5_container_open(missing.encode(), 7, ffi.NULL), ffi.NULL)
        self.assertEqual(lib.n5_last_error_code(), lib.N5_ERR_INVALID_ARGUMENT)
        self.assertEqual(lib.n5_container_open(b"\xff\xfe.n5", lib.N5_MODE_CREATE, ffi.NULL),
                         ffi.NULL)
        self.assertEqual(lib.n5_last_error_code(), lib.N5_ERR_INVALID_UTF8)
        self.assertEqual(lib.n5_container_open(os.fsencode(self.tmp), lib.N5_MODE_CREATE,
                                               b'{"threds": 2}'), ffi.NULL)
        self.assertIn("threds", last_error()[1])
        self.assertEqual(lib.n5_container_open(ffi.NULL, lib.N5_MODE_READ, ffi.NULL), ffi.NULL)
        self.assertEqual(lib.n5_last_error_code(), lib.N5_ERR_NULL_POINTER)
        exists = ffi.new("int32_t *")
        self.assertFails(lib.n5_exists(ffi.NULL, b"", exists), lib.N5_ERR_NULL_POINTER)
        self.assertEqual(lib.n5_dataset_open(ffi.NULL, b"x"), ffi.NULL)
        self.assertEqual(lib.n5_last_error_code(), lib.N5_ERR_NULL_POINTER)

    def test_handles_free_in_any_order(self):
        root = os.path.join(self.tmp, "f.n5")
        c = lib.n5_container_open(root.encode(), lib.N5_MODE_CREATE, ffi.NULL)
        self.assertNotEqual(c, ffi.NULL)
        d = lib.n5_dataset_create(c, b"x", 1, u64s([6]), u64s([4]), lib.N5_DTYPE_INT64,
                                  ffi.NULL)
        self.assertNotEqual(d, ffi.NULL)
        lib.n5_container_free(c)  # the dataset keeps the container alive
        a = np.array([-3, -2, -1, 0, 1, 2**62], dtype=np.int64)
        check(lib.n5_region_write(d, 1, u64s([0]), u64s([6]), lib.N5_DTYPE_INT64,
                                  pointer(a), a.nbytes))
        np.testing.assert_array_equal(region_read(d, [0], [6], np.int64), a)
        lib.n5_dataset_free(d)
        # ffi.gc handles are freed by the garbage collector (or explicitly,
        # once, with ffi.release).
        c = open_container(root, lib.N5_MODE_READ)
        d = open_dataset(c, "x")
        del c
        np.testing.assert_array_equal(region_read(d, [0], [6], np.int64), a)
        ffi.release(d)

    def test_thread_local_errors_and_concurrency(self):
        c = open_container(os.path.join(self.tmp, "t.n5"))
        d = create_dataset(c, "vol", [64, 64], [8, 8], lib.N5_DTYPE_UINT32, '{"type":"gzip"}')
        errors = []
        barrier = threading.Barrier(4)

        def worker(k):
            try:
                barrier.wait()
                for i in range(16):
                    # Each thread writes its own blocks (different blocks are safe)...
                    pos = [k * 2 + i % 2, i // 2]
                    blk = np.full((8, 8), k * 1000 + i, dtype=np.uint32)
                    check(lib.n5_block_write(d, 2, u64s(pos), u64s([8, 8]), lib.N5_DTYPE_UINT32,
                                             pointer(blk), blk.nbytes))
                    # ...and fails in its own way; the message is per thread.
                    status = lib.n5_dataset_open(c, f"no-such-{k}".encode())
                    code, message = last_error()
                    if status != ffi.NULL or code != lib.N5_ERR_NOT_FOUND or \
                            f"no-such-{k}" not in message:
                        errors.append((k, code, message))
            except Exception as e:  # pragma: no cover
                errors.append((k, repr(e)))

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        whole = region_read(d, [0, 0], [64, 64], np.uint32, "F")
        for k in range(4):
            for i in range(16):
                x, y = (k * 2 + i % 2) * 8, (i // 2) * 8
                self.assertTrue((whole[x:x + 8, y:y + 8] == k * 1000 + i).all())

    # --- a dataset another implementation wrote --------------------------------

    def test_read_peer_corpus(self):
        corpus = ARGS.corpus
        manifest_path = os.path.join(corpus or "", "manifest.json")
        if not corpus or not os.path.exists(manifest_path):
            self.skipTest(f"no peer corpus at {corpus!r} (--corpus)")
        with open(manifest_path, encoding="utf-8") as f:
            manifest = json.load(f)
        wanted = {("tensorstore.n5", "dtype_gzip/uint16"), ("java-n5.n5", "rank/4d"),
                  ("zarr2.n5", "dtype/float64"), ("z5py.n5", "compression/zstd/uint16")}
        seen = 0
        for entry in manifest["datasets"]:
            if (entry["container"], entry["path"]) not in wanted:
                continue
            with self.subTest(container=entry["container"], path=entry["path"]):
                c = open_container(os.path.join(corpus, entry["container"]), lib.N5_MODE_READ)
                d = open_dataset(c, entry["path"])
                t = np.dtype(entry["dataType"])
                a = region_read(d, [0] * len(entry["dimensions"]), entry["dimensions"], t, "F")
                # array_sha256: N5 order (Fortran order), little-endian.
                data = a.astype(t.newbyteorder("<")).tobytes(order="F")
                self.assertEqual(hashlib.sha256(data).hexdigest(), entry["array_sha256"])
                seen += 1
        self.assertEqual(seen, len(wanted))


def create_dataset_status(c, path, dims, block, dtype=None, compression=None):
    """n5_dataset_create as a status: N5_OK (freeing the handle) or the code."""
    d = lib.n5_dataset_create(c, path.encode(), len(dims), u64s(dims), u64s(block),
                              lib.N5_DTYPE_UINT8 if dtype is None else dtype,
                              ffi.NULL if compression is None else compression.encode())
    if d == ffi.NULL:
        return lib.n5_last_error_code()
    lib.n5_dataset_free(d)
    return lib.N5_OK


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lib", required=True, help="path of libn5.so")
    parser.add_argument("--header", required=True, help="path of n5.h")
    parser.add_argument("--cc", default=os.environ.get("CC", "cc"),
                        help="C compiler used as preprocessor (default: $CC or cc)")
    parser.add_argument("--corpus", default=None, help="folder of the peer corpus (optional)")
    ARGS, rest = parser.parse_known_args()
    load_library(ARGS.lib, ARGS.header, ARGS.cc)
    print(f"libn5 {ffi.string(lib.n5_version_string()).decode()} from {ARGS.lib}, "
          f"cffi {cffi.__version__}, numpy {np.__version__}", flush=True)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
