#!/usr/bin/env python3
"""The string and struct arrays of the libn5 benchmark's NWB mode (n5-bench
--format nwb): writes them once with zarr-python 3.4, and times zarr-python
3 (with its own codec pipeline or with zarrs') and tensorstore reading them.

    python peers_nwb.py --write DIR N CHUNK   # writes the arrays and their expected contents
    python peers_nwb.py --versions            # JSON: zarr, zarrs, tensorstore, numpy, python
    python peers_nwb.py JOB                   # JSON job from n5-bench; prints one JSON report

--write runs in .venv-nwb (zarr-python 3.4, the version hdmf-zarr 0.14
writes NWB files with; tests/peers/requirements-nwb.txt). It makes, in DIR,
four arrays of N elements in chunks of CHUNK, with zarr-python's default
codecs (zstd level 0 after vlen-utf8 or bytes, for Zarr v3 and v2 alike):

  strings-v3.zarr, strings-v2.zarr  `dtype=str`: Zarr v3 data type
      "string" with the vlen-utf8 codec, Zarr v2 "|O" with the vlen-utf8
      filter. Each element is 5 to 40 characters (uniform) cut from words
      of a fixed vocabulary joined by spaces or underscores, a tenth of the
      words non-ASCII (é, ü, ß, µ, CJK, Greek, an emoji), seed 7.
  structs-v3.zarr, structs-v2.zarr  rows like an hdmf compound
      (DynamicTable rows): int32 "id" (0, 1, ...), int32 "group" (0–999),
      float64 "time" (increasing), fixed_length_utf32 of 16 "label" (one
      of 64 labels of 3–16 characters, some non-ASCII); Zarr v3 "struct"
      (zarr's structured type, fields' bytes little endian), Zarr v2 a
      structured dtype with "<U16".

and the expected contents: strings.vlen (the vlen-utf8 encoding of all N
strings: u32le count, then per element a u32le length and its UTF-8) and
structs.raw (the rows packed, little endian, the label as 16 UTF-32LE code
units: libn5's binary layout and numpy's).

A JOB names the implementation ("impl": zarr_python, zarrs or
tensorstore), the array ("array", its directory), what it holds ("kind":
strings or structs, "zarr_format": 3 or 2), the threads, repeats, the
cache state ("fadvise", "drop" or "warm") and the expected contents
("expected"). Timed, with time.perf_counter and getrusage (CPU of every
thread): one `arr[:]` (tensorstore: `read().result()`), the whole array
into memory; opening it is not timed. Before it the array's files are
evicted from the page cache (bench/peers.py's evict) or, warm, read once.

  zarr_python  zarr.open_array(mode="r") with zarr's own
               BatchedCodecPipeline; threading.max_workers = threads.
               Strings come back as numpy's StringDType array, structs as
               a structured array.
  zarrs        the same with codec_pipeline.path =
               "zarrs.ZarrsCodecPipeline" (zarrs-python). zarrs 0.2 hands
               string and struct arrays back to zarr's own pipeline
               (UnsupportedDataTypeError for numpy's StringDType and
               structured dtypes; a struct's metadata already at the open,
               with a warning); the report says whether it did
               ("fell_back": zarr's pipeline's read was called).
  tensorstore  its "zarr3" or "zarr" driver on the file kvstore, its
               data_copy_concurrency and file_io_concurrency limited to the
               threads. It cannot open any of the four arrays (Zarr v3
               "string", fixed_length_utf32 inside a struct, Zarr v2 "|O"
               and "<U16"): n/a, with tensorstore's message.

The last read is checked against the expected contents after the peak
memory is taken. Report: {"status": "ok", "times", "cpu", "maxrss_kib",
"baseline_kib", "fell_back"}, {"status": "n/a", "reason"} or {"status":
"error", "message"}.
"""

import json
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402  (bench/peers.py: evict, cpu_seconds, rss_kib)

# Words the strings are cut from: a tenth non-ASCII.
WORDS = ("electrode", "channel", "probe", "shank", "region", "hippocampus", "CA1",
         "cortex", "layer", "trial", "stimulus", "response", "unit", "spike", "sorted",
         "good", "noise", "mua", "session", "subject", "mouse", "rat", "left", "right",
         "anterior", "posterior", "dorsal", "ventral", "lateral", "medial", "baseline",
         "reward", "lick", "running", "speed", "position", "imaging", "plane", "roi",
         "neuron", "cell", "soma", "dendrite", "axon", "amplitude", "filtered", "raw",
         "processed", "device", "group", "impedance", "reference", "ground", "site",
         "café", "über", "Straße", "µm", "海马", "皮层", "αβγ", "naïve", "señal", "🧠")

# The labels of the struct rows (at most 16 characters).
LABELS = ("good", "mua", "noise", "CA1 pyramidal", "CA3", "dentate gyrus", "Layer 2/3",
          "Layer 5", "interneuron", "naïve", "µ-rhythm", "海马体", "αβ-band", "Straße 7",
          "unit 12", "unclassified")


def make_strings(n, seed=7):
    """`n` strings of 5–40 characters cut from WORDS."""
    import numpy as np
    rng = np.random.default_rng(seed)
    lengths = rng.integers(5, 41, size=n)
    words = rng.integers(0, len(WORDS), size=(n, 12))
    seps = rng.integers(0, 4, size=(n, 12))
    out = []
    for i in range(n):
        text = "".join(WORDS[w] + ("_" if s == 0 else " ") for w, s in zip(words[i], seps[i]))
        out.append(text[:lengths[i]])
    return out


def make_structs(n, seed=11):
    """`n` rows of (int32 id, int32 group, float64 time, <U16 label)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    dtype = np.dtype([("id", "<i4"), ("group", "<i4"), ("time", "<f8"), ("label", "<U16")])
    rows = np.zeros(n, dtype=dtype)
    rows["id"] = np.arange(n, dtype=np.int32)
    rows["group"] = rng.integers(0, 1000, size=n, dtype=np.int32)
    rows["time"] = np.cumsum(rng.exponential(0.01, size=n))
    labels = np.array(LABELS, dtype="<U16")
    rows["label"] = labels[rng.integers(0, len(LABELS), size=n)]
    return rows


def vlen_encode(strings):
    """The vlen-utf8 encoding of `strings` in one bytes object."""
    import struct
    parts = [struct.pack("<I", len(strings))]
    for s in strings:
        b = s.encode("utf-8")
        parts.append(struct.pack("<I", len(b)))
        parts.append(b)
    return b"".join(parts)


def vlen_decode(data):
    """The strings of a vlen-utf8 encoding."""
    import struct
    (n,) = struct.unpack_from("<I", data, 0)
    at, out = 4, []
    for _ in range(n):
        (length,) = struct.unpack_from("<I", data, at)
        at += 4
        out.append(data[at:at + length].decode("utf-8"))
        at += length
    return out


def write(directory, n, chunk):
    """Writes the four arrays and the expected contents into `directory`."""
    import zarr
    os.makedirs(directory, exist_ok=True)
    strings = make_strings(n)
    rows = make_structs(n)
    with open(os.path.join(directory, "strings.vlen"), "wb") as f:
        f.write(vlen_encode(strings))
    with open(os.path.join(directory, "structs.raw"), "wb") as f:
        f.write(rows.tobytes())
    import numpy as np
    values = np.array(strings, dtype=object)
    sizes = {}
    for fmt in (3, 2):
        for kind, dtype, data in (("strings", str, values), ("structs", rows.dtype, rows)):
            path = os.path.join(directory, "%s-v%d.zarr" % (kind, fmt))
            arr = zarr.create_array(path, shape=(n,), chunks=(chunk,), dtype=dtype,
                                    zarr_format=fmt, overwrite=True)
            arr[:] = data
            total = 0
            for dirpath, _, files in os.walk(path):
                total += sum(os.path.getsize(os.path.join(dirpath, f)) for f in files)
            sizes["%s-v%d" % (kind, fmt)] = total
    utf8 = sum(len(s.encode("utf-8")) for s in strings)
    return {"n": n, "chunk": chunk, "zarr": zarr.__version__, "sizes": sizes,
            "string_utf8_bytes": utf8,
            "non_ascii_strings": sum(1 for s in strings if not s.isascii()),
            "struct_row_bytes": rows.dtype.itemsize}


def warm_up(root):
    """Reads every file below `root` once."""
    for dirpath, _, files in os.walk(root):
        for name in files:
            with open(os.path.join(dirpath, name), "rb", buffering=0) as f:
                buf = bytearray(1 << 20)
                while f.readinto(buf):
                    pass


class Zarr:
    """zarr-python 3, with its own codec pipeline or zarrs'."""

    def __init__(self, job):
        import zarr
        self.zarr = zarr
        settings = {"threading.max_workers": job["threads"]}
        if job["impl"] == "zarrs":
            import zarrs  # noqa: F401
            settings["codec_pipeline.path"] = "zarrs.ZarrsCodecPipeline"
        zarr.config.set(settings)
        self.job = job
        self.fell_back = False

    def open(self):
        arr = self.zarr.open_array(self.job["array"], mode="r")
        pipeline = arr._async_array.codec_pipeline
        fallback = getattr(pipeline, "python_impl", None)
        if self.job["impl"] == "zarrs" and fallback is not None:
            # Notes when zarrs hands a read to zarr's own pipeline.
            read = fallback.read

            async def counted(*args, **kwargs):
                self.fell_back = True
                return await read(*args, **kwargs)

            object.__setattr__(fallback, "read", counted)
        return arr

    def read(self, arr):
        return arr[:]


class TensorStore:
    """tensorstore's zarr3 or zarr driver."""

    def __init__(self, job):
        import tensorstore as ts
        self.ts = ts
        n = job["threads"]
        self.context = ts.Context({"data_copy_concurrency": {"limit": n},
                                   "file_io_concurrency": {"limit": n}})
        driver = "zarr3" if job["zarr_format"] == 3 else "zarr"
        self.spec = {"driver": driver, "kvstore": {"driver": "file", "path": job["array"] + "/"}}

    def open(self):
        return self.ts.open(self.spec, open=True, read=True, context=self.context).result()

    def read(self, h):
        return h.read().result()


def check(job, got):
    """None when `got` holds the expected contents, else what differs."""
    import numpy as np
    path = job["expected"]
    with open(path, "rb") as f:
        data = f.read()
    if job["kind"] == "strings":
        expected = vlen_decode(data)
        if len(got) != len(expected):
            return "%d strings read, %d expected" % (len(got), len(expected))
        if not np.array_equal(np.asarray(got, dtype=object), np.array(expected, dtype=object)):
            bad = next(i for i, (a, b) in enumerate(zip(got, expected)) if str(a) != b)
            return "string %d is %r, %r expected" % (bad, str(got[bad]), expected[bad])
        return None
    got = np.ascontiguousarray(got)
    if got.tobytes() != data:
        return "the rows read differ from the expected ones (dtype %s)" % got.dtype
    return None


def run(job):
    peer = job["impl"]
    impl = {"zarr_python": Zarr, "zarrs": Zarr, "tensorstore": TensorStore}[peer](job)
    times, cpu, baseline = [], [], 0
    last = None
    for i in range(job["repeats"]):
        last = None
        if job["cache"] == "warm":
            warm_up(job["array"])
        else:
            peers.evict(job["array"], job["cache"])
        try:
            h = impl.open()
        except ValueError as e:
            if peer == "tensorstore":
                return {"status": "n/a",
                        "reason": "tensorstore cannot open it: " + str(e).split(" [")[0]}
            raise
        if i == 0:
            baseline = peers.rss_kib()
        t, c = time.perf_counter(), peers.cpu_seconds()
        last = impl.read(h)
        times.append(time.perf_counter() - t)
        cpu.append(peers.cpu_seconds() - c)
        del h
    maxrss = peers.rss_kib("VmHWM")
    wrong = check(job, last)
    if wrong:
        return {"status": "error", "message": "%s read wrong data: %s" % (peer, wrong)}
    return {"status": "ok", "times": times, "cpu": cpu, "maxrss_kib": maxrss,
            "baseline_kib": baseline, "fell_back": getattr(impl, "fell_back", False)}


def versions():
    import importlib.metadata as md
    out = {"python": sys.version.split()[0]}
    for name in ("zarr", "zarrs", "tensorstore", "numpy"):
        try:
            __import__(name)
            out[name] = md.version(name)
        except Exception as e:  # reported, not fatal: that peer's cells become n/a
            out[name] = None
            out[name + "_error"] = "%s: %s" % (type(e).__name__, e)
    return out


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--write":
        print(json.dumps(write(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))))
        return 0
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    if sys.argv[1] == "--versions":
        print(json.dumps(versions()))
        return 0
    try:
        result = run(json.loads(sys.argv[1]))
    except Exception as e:
        traceback.print_exc()
        result = {"status": "error", "message": "%s: %s" % (type(e).__name__, e)}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
