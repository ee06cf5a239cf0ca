#!/usr/bin/env python3
"""Read an N5 container written by libn5 with the peer implementations and
compare everything with the spec that libn5's test wrote next to it.

    python read_with_peers.py CONTAINER SPEC [--peers tensorstore,z5py,...] [-v]
    python read_with_peers.py --kvstore KVSTORE_JSON SPEC    (tensorstore only)

With --kvstore the container is not a directory but the tensorstore kvstore
spec given (an "s3" or "gcs" kvstore, its "path" the container root), read
by tensorstore's n5 driver through it; the other peers cannot reach it.

Called by tests/peers.rs (through ./tests/run.sh). The spec (JSON) lists
  datasets: path, dtype, dims and blockSize (N5 order: dimension 0 fastest),
            compression (what libn5 was asked for), compressionKey, data (a file
            of raw little-endian values in N5 order, unwritten blocks as 0,
            relative to the spec), region {offset, shape} (N5 order) and, for
            some, the user attributes stored next to the dataset keys;
  groups:   path and the attributes written to it.

Peers (columns):
  tensorstore  tensorstore's "n5" driver (domain in N5 order)
  z5py         z5py / C++ z5 (shows the axes reversed)
  zarr2        zarr 2.x zarr.n5.N5Store (axes reversed)
  zarr2fs      zarr 2.x zarr.n5.N5FSStore over fsspec (axes reversed)

For every dataset each peer reads the whole array and one sub-region crossing
block boundaries; both must equal the expected data bit for bit (floats are
compared as their bit patterns, so NaN payloads, -0.0 and subnormals count).
Every group's attributes (and a dataset's user attributes) are compared by
the peers that expose attributes (z5py, zarr2, zarr2fs): the keys a peer
reserves ("n5" and the dataset keys) are ignored, numbers are compared by value
(-0.0 is not 0.0), everything else exactly. tensorstore is checked on the
axes/units/resolution members it interprets.

Cells a peer cannot read by design (see UNSUPPORTED) are reported as
"unsupported" and never fail the run; every other cell must be ok.
Exit status: 0 when every supported cell is ok, 1 otherwise, 2 on a usage or
environment problem (a peer missing, a bad spec).
"""

import argparse
import json
import math
import os
import re
import sys
import time
import traceback
import warnings
from collections import OrderedDict

import numpy as np

PEERS = ["tensorstore", "z5py", "zarr2", "zarr2fs"]
ATTR_PEERS = ["z5py", "zarr2", "zarr2fs"]

DTYPES = {"uint8": "u1", "uint16": "u2", "uint32": "u4", "uint64": "u8",
          "int8": "i1", "int16": "i2", "int32": "i4", "int64": "i8",
          "float32": "f4", "float64": "f8"}

# Keys a peer reserves for itself in attributes.json (not user attributes).
RESERVED = {"n5", "dimensions", "blockSize", "dataType", "compression", "compressionType"}

# (compression type, peer) -> why the peer cannot read it. N5's lz4 is Java's
# lz4-java LZ4Block stream; no Python peer reads that framing (see
# shared/corpus/README.md, "lz4 framing disagrees", and compat_report.md).
UNSUPPORTED = {
    ("lz4", "tensorstore"): "tensorstore's n5 driver has no lz4 codec",
    ("lz4", "z5py"): "z5py reads lz4 as a bare LZ4 block, not Java's LZ4Block stream",
    ("lz4", "zarr2"): "zarr2 passes N5 lz4 to numcodecs LZ4 (size-prefixed block), not Java's LZ4Block",
    ("lz4", "zarr2fs"): "zarr2 passes N5 lz4 to numcodecs LZ4 (size-prefixed block), not Java's LZ4Block",
}


# ----------------------------------------------------------------------------
# peers: each reader opens a dataset and returns (whole, region) as numpy
# arrays in canonical orientation: shape = dims reversed (C order), so that
# element [..., i1, i0] is the value at N5 position (i0, i1, ...).
# ----------------------------------------------------------------------------
class TensorStore:
    name = "tensorstore"

    def __init__(self, root, kvstore=None):
        import tensorstore as ts
        self.ts = ts
        self.root = os.path.abspath(root) if kvstore is None else None
        self.kvstore = kvstore
        self.context = ts.Context()

    def open(self, path):
        if self.kvstore is None:
            kvstore = {"driver": "file", "path": os.path.join(self.root, path) + "/"}
        else:
            kvstore = dict(self.kvstore)
            kvstore["path"] = "/".join(p for p in (kvstore.get("path", "").strip("/"), path) if p) + "/"
        spec = {"driver": "n5", "kvstore": kvstore}
        return self.ts.open(spec, open=True, read=True, context=self.context).result()

    def read(self, path, offset, shape):
        store = self.open(path)
        whole = np.asarray(store.read().result()).T
        idx = tuple(slice(o, o + s) for o, s in zip(offset, shape))
        region = np.asarray(store[idx].read().result()).T
        return whole, region


class Z5py:
    name = "z5py"

    def __init__(self, root):
        import z5py
        self.file = z5py.File(root, mode="r", use_zarr_format=False)

    def node(self, path):
        return self.file if path in ("", "/") else self.file[path]

    def read(self, path, offset, shape):
        ds = self.file[path]
        return ds[...], ds[canonical_slices(offset, shape)]

    def attrs(self, path):
        return dict(self.node(path).attrs)


class Zarr2:
    name = "zarr2"
    fs = False

    def __init__(self, root):
        import zarr
        import zarr.n5
        self.zarr = zarr
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if self.fs:
                self.store = zarr.n5.N5FSStore(os.path.abspath(root))
            else:
                self.store = zarr.n5.N5Store(root)

    def read(self, path, offset, shape):
        a = self.zarr.open_array(store=self.store, path=path, mode="r")
        return a[...], a[canonical_slices(offset, shape)]

    def attrs(self, path):
        if path in ("", "/"):
            node = self.zarr.open_group(store=self.store, mode="r")
        else:
            node = self.zarr.open(store=self.store, path=path, mode="r")
        return node.attrs.asdict()


class Zarr2FS(Zarr2):
    name = "zarr2fs"
    fs = True


READERS = {"tensorstore": TensorStore, "z5py": Z5py, "zarr2": Zarr2, "zarr2fs": Zarr2FS}


def canonical_slices(offset, shape):
    return tuple(slice(o, o + s) for o, s in zip(reversed(offset), reversed(shape)))


# ----------------------------------------------------------------------------
# comparison
# ----------------------------------------------------------------------------
def le_bits(a):
    """The array's elements as little-endian unsigned integers of the same
    width: a pure reinterpretation, so float bit patterns are kept."""
    a = np.ascontiguousarray(a)
    bo = a.dtype.byteorder
    if bo == ">" or (bo == "=" and sys.byteorder == "big"):
        a = a.byteswap().view(a.dtype.newbyteorder())
    return a.view("<u%d" % a.dtype.itemsize)


def describe(v, dtype):
    if dtype.startswith("float"):
        bits = int(v)
        f = np.array([bits], dtype="<u%d" % (4 if dtype == "float32" else 8)).view(
            "<f4" if dtype == "float32" else "<f8")[0]
        return "%r (0x%x)" % (float(f), bits)
    return str(int(np.array([v], dtype="<u%d" % np.dtype(DTYPES[dtype]).itemsize).view("<" + DTYPES[dtype])[0]))


def compare(got, expected_bits, dtype, what):
    """None when `got` equals the expected data bit for bit, else a message."""
    if not isinstance(got, np.ndarray):
        got = np.asarray(got)
    if tuple(got.shape) != tuple(expected_bits.shape):
        return "%s: shape %s (N5 order %s), expected %s" % (
            what, tuple(got.shape), tuple(got.shape)[::-1], tuple(expected_bits.shape))
    if got.dtype.kind not in "uif" or got.dtype.itemsize != np.dtype(DTYPES[dtype]).itemsize \
            or got.dtype.kind != np.dtype(DTYPES[dtype]).kind:
        return "%s: dtype %s, expected %s" % (what, got.dtype, dtype)
    gb = le_bits(got)
    diff = gb != expected_bits
    if not diff.any():
        return None
    n = int(diff.sum())
    first = tuple(int(i) for i in np.argwhere(diff)[0])
    return "%s: %d of %d elements differ; first at N5 position %s: got %s, expected %s" % (
        what, n, diff.size, list(first[::-1]), describe(gb[first], dtype), describe(expected_bits[first], dtype))


def json_equal(a, b):
    """JSON equality: numbers by value (int 2 == float 2.0, but -0.0 != 0.0
    and 2^53+1 != 2^53), booleans apart from numbers, the rest exactly."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, int) and isinstance(b, int):
            return a == b
        if isinstance(a, float) and isinstance(b, float):
            if math.isnan(a) or math.isnan(b):
                return math.isnan(a) and math.isnan(b)
            return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
        i, f = (a, b) if isinstance(a, int) else (b, a)
        return math.isfinite(f) and f == int(f) and int(f) == i and not (f == 0 and math.copysign(1.0, f) < 0)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def diff_attributes(expected, got):
    got = {k: v for k, v in got.items() if k not in RESERVED}
    problems = []
    for k in expected:
        if k not in got:
            problems.append("missing %r" % k)
        elif not json_equal(expected[k], got[k]):
            problems.append("%r: got %s, expected %s" % (
                k, json.dumps(got[k], ensure_ascii=False)[:80], json.dumps(expected[k], ensure_ascii=False)[:80]))
    for k in got:
        if k not in expected:
            problems.append("extra %r = %s" % (k, json.dumps(got[k], ensure_ascii=False)[:60]))
    return problems


def short_error(e, root):
    msg = "%s: %s" % (type(e).__name__, str(e).strip())
    msg = msg.replace(os.path.abspath(root), "<root>").replace(root, "<root>")
    msg = re.sub(r"\s*\[tensorstore_spec=.*$", "", msg, flags=re.S)
    msg = " ".join(msg.split())
    if len(msg) > 400:
        msg = msg[:250] + " ... " + msg[-140:]
    return msg


def category(path):
    parts = path.split("/")
    if parts[0] in ("dtype", "codec", "lz4") and len(parts) > 2:
        return parts[0] + "/" + parts[1]
    return parts[0]


def on_disk_compression(root, path):
    if not os.path.isdir(root):
        return "<not on disk>"
    try:
        with open(os.path.join(root, path, "attributes.json"), encoding="utf-8") as fh:
            return json.dumps(json.load(fh).get("compression"), sort_keys=True)
    except Exception as e:  # noqa: BLE001 - diagnostics only
        return "<%s>" % e


# ----------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("container", nargs="?")
    ap.add_argument("spec")
    ap.add_argument("--peers", default=",".join(PEERS), help="comma-separated subset of " + ",".join(PEERS))
    ap.add_argument("--kvstore", help="a tensorstore kvstore spec (JSON) holding the container")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every cell")
    args = ap.parse_args()

    kvstore = json.loads(args.kvstore) if args.kvstore else None
    if (kvstore is None) == (args.container is None):
        print("give either CONTAINER or --kvstore")
        return 2
    if kvstore is not None:
        args.peers = "tensorstore"
    root = args.container or "<kvstore>"
    with open(args.spec, encoding="utf-8") as fh:
        spec = json.load(fh)
    spec_dir = os.path.dirname(os.path.abspath(args.spec))
    peers = [p for p in args.peers.split(",") if p]
    for p in peers:
        if p not in READERS:
            print("unknown peer %r (known: %s)" % (p, ", ".join(PEERS)))
            return 2

    import importlib.metadata
    versions = []
    for dist in ("tensorstore", "z5py", "zarr", "numcodecs", "numpy", "fsspec"):
        try:
            versions.append("%s %s" % (dist, importlib.metadata.version(dist)))
        except importlib.metadata.PackageNotFoundError:
            versions.append("%s missing" % dist)
    print("peers: " + ", ".join(versions))

    failures = []        # (where, peer, message) for supported cells
    unsupported_seen = OrderedDict()  # (compression type, peer) -> (why, first path, its error)
    unexpected = []      # unsupported cells a peer read correctly anyway

    # The container root: z5py needs a root attributes.json (with "n5").
    try:
        if kvstore is None:
            with open(os.path.join(root, "attributes.json"), encoding="utf-8") as fh:
                root_attrs = json.load(fh)
        else:
            import tensorstore as ts
            root_kv = dict(kvstore)
            root_kv["path"] = kvstore.get("path", "").strip("/") + "/"
            found = ts.KvStore.open(root_kv).result().read("attributes.json").result()
            root_attrs = json.loads(bytes(found.value))
        version = root_attrs.get("n5")
        if not isinstance(version, str):
            failures.append(("<root>", "container", "root attributes.json has no string \"n5\" version: %r" % version))
        elif int(re.match(r"\d*", version).group() or 0) > 4:
            failures.append(("<root>", "container", "root \"n5\" version %r has a major version above 4" % version))
    except Exception as e:  # noqa: BLE001
        failures.append(("<root>", "container", "cannot read the root attributes.json: %s" % short_error(e, root)))

    readers = OrderedDict()
    for p in peers:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                readers[p] = READERS[p](root, kvstore) if kvstore is not None else READERS[p](root)
        except ImportError as e:
            print("peer %s is not installed here (%s); run ./tests/run.sh" % (p, e))
            return 2
        except Exception as e:  # noqa: BLE001 - a peer that cannot open the container fails all its cells
            readers[p] = e

    # cells[category][peer] = {"ok": n, "fail": n, "unsupported": n}
    cells = OrderedDict()
    timings = {p: 0.0 for p in peers}

    def cell(cat, peer):
        return cells.setdefault(cat, OrderedDict((q, {"ok": 0, "fail": 0, "unsupported": 0}) for q in peers)).setdefault(
            peer, {"ok": 0, "fail": 0, "unsupported": 0})

    for d in spec["datasets"]:
        path, dtype = d["path"], d["dtype"]
        with open(os.path.join(spec_dir, d["data"]), "rb") as fh:
            raw = fh.read()
        expected = np.frombuffer(raw, dtype="<u%d" % np.dtype(DTYPES[dtype]).itemsize).reshape(tuple(d["dims"][::-1]))
        off, shape = d["region"]["offset"], d["region"]["shape"]
        expected_region = expected[canonical_slices(off, shape)]
        ctype = d["compression"].get("type")
        cat = category(path)
        for p in peers:
            reader = readers[p]
            why_not = UNSUPPORTED.get((ctype, p))
            t0 = time.perf_counter()
            try:
                if isinstance(reader, Exception):
                    raise reader
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    whole, region = reader.read(path, off, shape)
                problems = [m for m in (compare(whole, expected, dtype, "whole array"),
                                        compare(region, expected_region, dtype,
                                                "region offset %s shape %s" % (off, shape))) if m]
            except Exception as e:  # noqa: BLE001 - every peer error is a cell result
                problems = [short_error(e, root)]
                if args.verbose and not why_not:
                    traceback.print_exc()
            timings[p] += time.perf_counter() - t0
            c = cell(cat, p)
            if why_not:
                c["unsupported"] += 1
                if not problems:
                    unexpected.append((path, p))
                else:
                    unsupported_seen.setdefault((ctype, p), (why_not, path, problems[0]))
                state = "unsupported (%s)" % why_not + ("" if problems else "; read correctly anyway")
            elif problems:
                c["fail"] += 1
                failures.append((path, p, "; ".join(problems) +
                                 " [compression on disk: %s]" % on_disk_compression(root, path)))
                state = "FAIL"
            else:
                c["ok"] += 1
                state = "ok"
            if args.verbose:
                print("  %-45s %-12s %s" % (path, p, state))

    # ------------------------------------------------------------ attributes
    attr_rows = [(g["path"], g["attributes"], "attrs: groups") for g in spec.get("groups", [])]
    attr_rows += [(d["path"], d["attributes"], "attrs: datasets") for d in spec["datasets"] if d.get("attributes")]
    for path, exp, cat in attr_rows:
        for p in peers:
            c = cell(cat, p)
            reader = readers[p]
            if p not in ATTR_PEERS:
                # tensorstore exposes no attributes, only the members it interprets.
                if p == "tensorstore" and any(k in exp for k in ("axes", "units", "resolution")) \
                        and not isinstance(reader, Exception):
                    try:
                        st = reader.open(path)
                        problems = []
                        if "axes" in exp and list(st.domain.labels) != exp["axes"]:
                            problems.append("domain labels %s, expected axes %s" % (list(st.domain.labels), exp["axes"]))
                        if "units" in exp:
                            res = exp.get("resolution", [1.0] * len(exp["units"]))
                            got_u = [(u.multiplier, u.base_unit) if u is not None else None for u in st.dimension_units]
                            want = [(float(m), b) for m, b in zip(res, exp["units"])]
                            if got_u != want:
                                problems.append("dimension_units %s, expected %s" % (got_u, want))
                    except Exception as e:  # noqa: BLE001
                        problems = [short_error(e, root)]
                    if problems:
                        c["fail"] += 1
                        failures.append((path + " (attributes)", p, "; ".join(problems)))
                    else:
                        c["ok"] += 1
                continue
            try:
                if isinstance(reader, Exception):
                    raise reader
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    got = reader.attrs(path)
                problems = diff_attributes(exp, got)
            except Exception as e:  # noqa: BLE001
                problems = [short_error(e, root)]
            if problems:
                c["fail"] += 1
                failures.append(((path or "<root>") + " (attributes)", p, "; ".join(problems[:6]) +
                                 (" (+%d more)" % (len(problems) - 6) if len(problems) > 6 else "")))
            else:
                c["ok"] += 1

    # ------------------------------------------------------------ the matrix
    def fmt(c):
        supported = c["ok"] + c["fail"]
        if supported == 0 and c["unsupported"] == 0:
            return "-"
        if supported == 0:
            return "unsupported %d" % c["unsupported"]
        s = "%d/%d" % (c["ok"], supported)
        if c["fail"]:
            s += " FAIL"
        if c["unsupported"]:
            s += " +%d unsup" % c["unsupported"]
        return s

    n_ds = len(spec["datasets"])
    print("\nlibn5 container %s: %d datasets, %d groups; cells are ok/supported per peer "
          "(unsup = unsupported by the peer, by design)" % (root, n_ds, len(spec.get("groups", []))))
    rows = []
    for cat, per_peer in cells.items():
        n = max(sum(v.values()) for v in per_peer.values())
        rows.append(["%s (%d)" % (cat, n)] + [fmt(per_peer[p]) for p in peers])
    totals = {p: {"ok": 0, "fail": 0, "unsupported": 0} for p in peers}
    for per_peer in cells.values():
        for p in peers:
            for k in totals[p]:
                totals[p][k] += per_peer[p][k]
    total_row = ["TOTAL"] + [fmt(totals[p]) for p in peers]
    header = ["dataset group"] + peers
    widths = [max(len(r[i]) for r in rows + [header, total_row]) for i in range(len(header))]
    line = lambda r: "| " + " | ".join(x.ljust(w) for x, w in zip(r, widths)) + " |"  # noqa: E731
    print(line(header))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(line(r))
    print(line(total_row))
    print("read time per peer: " + ", ".join("%s %.2fs" % (p, timings[p]) for p in peers))

    if unsupported_seen:
        print("\nunsupported by design (not failures); the first error of each:")
        for (ctype, p), (why, path, err) in unsupported_seen.items():
            print("  %s [%s]: %s; %s: %s" % (ctype, p, why, path, err))
    if unexpected:
        print("\nunsupported cells that a peer read correctly anyway (update UNSUPPORTED?):")
        for path, p in unexpected:
            print("  %s [%s]" % (path, p))
    if failures:
        print("\n%d FAILURES (supported cells):" % len(failures))
        for where, p, msg in failures:
            print("  %s [%s]: %s" % (where, p, msg))
        return 1
    print("\nall supported cells ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
