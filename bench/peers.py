#!/usr/bin/env python3
"""The peers' side of the libn5 benchmark (bench/, n5-bench): times
tensorstore's n5 driver and z5py on the same volume, workloads, codecs and
thread counts as libn5, and reports the times and the peak memory.

    python peers.py --versions     # JSON: the versions of the peers
    python peers.py JOB            # JSON job from n5-bench; prints one JSON report

n5-bench runs one process per timed operation (a job with "repeats": 1; the
script accepts more), so peak memory is that of one measurement of one peer,
workload, codec and thread count. The job (see bench/src/workload.rs, Job::to_json) gives the
peer ("impl"), the workload, the N5 compression object, threads, repeats, the
cache mode, the raw volume (native-endian uint16, N5 order: dimension 0
fastest), dims and block (N5 order), the peer's own container, the region and
the block positions.

Timed, with time.perf_counter, exactly the operation libn5 is timed on:
  write        one write of the whole volume into a freshly created dataset
  read_all     one read of the whole volume
  read_blocks  one read per block position, each exactly one block
  read_region  one read of the region
Creating or opening the dataset is not timed. Threads: tensorstore's context
limits data_copy_concurrency and file_io_concurrency; z5py's n_threads.
Reads start with a cold page cache like libn5's: every file of the container
is fsynced and evicted with os.posix_fadvise(POSIX_FADV_DONTNEED) (cache
"fadvise"), then also /proc/sys/vm/drop_caches (cache "drop"), or nothing
("warm"). Both peers see the volume in C order with the axes reversed (x
fastest in memory), the same memory layout as libn5's buffers, so no
transposing copy is made.

On an object store (the job's "storage" holds libn5's storage options and
"container" is an s3:// URL), tensorstore uses its s3 kvstore on the same
endpoint, anonymously, with s3_request_concurrency set to libn5's
io_concurrency; nothing is evicted, and a write starts from a deleted
dataset (delete_existing). z5py has no object-store backend: n/a.

A job with "format": "zarr3-sharded" is a sharded Zarr v3 array instead:
tensorstore's zarr3 driver creates it with the job's "zarr3_metadata"
(the zarr.json libn5 writes) and reads it; z5py: n/a. zarr-python 3 lives
in another venv and runs through bench/peers_zarr3.py, which reuses this
script's timing loop (run) with its own peer class.

Report: {"status": "ok", "times": [s...], "cpu": [CPU s...], "maxrss_kib", "baseline_kib"} or
{"status": "n/a", "reason"} for what a peer cannot do (lz4) or
{"status": "error", "message"}. The last read is compared with the volume
after the peak memory is taken.
"""

import json
import os
import resource
import shutil
import sys
import time
import traceback

import numpy as np

# (peer, codec) -> why the measurement is not made.
UNSUPPORTED = {
    ("tensorstore", "lz4"): "tensorstore's n5 driver has no lz4 codec",
    ("z5py", "lz4"): "z5's N5 lz4 is a bare LZ4 block, not N5's LZ4Block stream (another format)",
}


class NotApplicable(Exception):
    """A peer cannot make this measurement; the message says why."""


def cpu_seconds():
    """User and system CPU seconds of this process, all its threads."""
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def rss_kib(key="VmRSS"):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def evict(root, cache):
    """Write back and evict every file below root; NaN (not checked here)."""
    if cache == "warm":
        return float("nan")
    for dirpath, _, files in os.walk(root):
        for name in files:
            fd = os.open(os.path.join(dirpath, name), os.O_RDONLY)
            try:
                os.fdatasync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
    if cache == "drop":
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3")
    return float("nan")


def c_slices(offset, shape):
    """numpy slices (axes reversed) of an N5-order box."""
    return tuple(slice(o, o + s) for o, s in zip(reversed(offset), reversed(shape)))


class TensorStore:
    """tensorstore's n5 driver, viewed transposed (.T: its dimensions are
    N5's, x first) so arrays are x-fastest C order; for the sharded layout
    its zarr3 driver, whose dimensions are Zarr's (x last), as it is."""

    REMOTE = True

    def __init__(self, job):
        import tensorstore as ts
        self.ts = ts
        n = job["threads"]
        self.context = ts.Context({"data_copy_concurrency": {"limit": n},
                                   "file_io_concurrency": {"limit": n}})
        storage = job.get("storage")
        if storage:
            # s3://bucket/prefix on libn5's endpoint, as libn5 sees it.
            bucket, _, prefix = job["container"][len("s3://"):].partition("/")
            s3 = storage.get("s3", {})
            io = storage.get("io_concurrency", 32)
            self.context = ts.Context({"data_copy_concurrency": {"limit": n},
                                       "s3_request_concurrency": {"limit": io}})
            kvstore = {"driver": "s3", "bucket": bucket,
                       "path": prefix + "/" + job["dataset"] + "/",
                       "endpoint": s3["endpoint"], "aws_region": s3.get("region", "us-east-1"),
                       "aws_credentials": {"type": "anonymous"}}
        else:
            path = os.path.join(job["container"], job["dataset"]) + "/"
            kvstore = {"driver": "file", "path": path}
        self.transposed = job.get("format") != "zarr3-sharded"
        if not self.transposed:
            self.spec = {"driver": "zarr3", "kvstore": kvstore}
            self.metadata = job["zarr3_metadata"]
        else:
            self.spec = {"driver": "n5", "kvstore": kvstore}
            self.metadata = {"dimensions": job["dims"], "blockSize": job["block"],
                             "dataType": "uint16", "compression": job["compression"]}

    def create(self):
        spec = dict(self.spec, metadata=self.metadata)
        h = self.ts.open(spec, create=True, delete_existing=True, context=self.context).result()
        return h.T if self.transposed else h

    def open(self):
        h = self.ts.open(self.spec, open=True, read=True, context=self.context).result()
        return h.T if self.transposed else h

    def write(self, h, volume):
        h.write(volume).result()

    def read(self, h, offset, shape):
        return h[c_slices(offset, shape)].read().result()


class Z5py:
    """z5py (C++ z5) on an N5 container; axes reversed."""

    REMOTE = False

    def __init__(self, job):
        if job.get("format", "n5") != "n5":
            raise NotApplicable("z5py has no sharded Zarr v3")
        import z5py
        self.z5py = z5py
        self.job = job
        comp = job["compression"]
        self.codec = comp["type"]
        self.options = {
            "raw": {},
            # N5's gzip level -1 means zlib's default, 6; z5 compresses -1
            # like level 1 (identical output), so 6 is given explicitly.
            "gzip": {"level": 6 if comp.get("level") == -1 else comp.get("level")},
            "zstd": {"level": comp.get("level")},
            "blosc": {"codec": comp.get("cname"), "clevel": comp.get("clevel"),
                      "shuffle": comp.get("shuffle")},
        }[self.codec]

    def create(self):
        job = self.job
        f = self.z5py.File(job["container"], mode="a", use_zarr_format=False)
        return f.create_dataset(job["dataset"], shape=tuple(reversed(job["dims"])),
                                chunks=tuple(reversed(job["block"])), dtype="uint16",
                                compression=self.codec, n_threads=job["threads"], **self.options)

    def open(self):
        f = self.z5py.File(self.job["container"], mode="r", use_zarr_format=False)
        ds = f[self.job["dataset"]]
        ds.n_threads = self.job["threads"]
        return ds

    def write(self, ds, volume):
        ds.write_subarray([0, 0, 0], volume)

    def read(self, ds, offset, shape):
        start = list(reversed(offset))
        stop = [o + s for o, s in zip(start, reversed(shape))]
        return ds.read_subarray(start, stop)


PEERS = {"tensorstore": TensorStore, "z5py": Z5py}


def read_boxes(job):
    """The (offset, shape) boxes read, one per call (N5 order)."""
    dims, block = job["dims"], job["block"]
    w = job["workload"]
    if w == "read_all":
        return [([0, 0, 0], dims)]
    if w == "read_region":
        return [(job["region"]["offset"], job["region"]["shape"])]
    boxes = []
    for p in job["positions"]:
        off = [p[d] * block[d] for d in range(3)]
        boxes.append((off, [min(block[d], dims[d] - off[d]) for d in range(3)]))
    return boxes


def run(job):
    peer, codec = job["impl"], job["codec"]
    if (peer, codec) in UNSUPPORTED:
        return {"status": "n/a", "reason": UNSUPPORTED[(peer, codec)]}
    remote = bool(job.get("storage"))
    if remote and not PEERS[peer].REMOTE:
        return {"status": "n/a", "reason": "%s has no object-store backend" % peer}
    try:
        impl = PEERS[peer](job)
    except NotApplicable as e:
        return {"status": "n/a", "reason": str(e)}
    dims = job["dims"]
    container = job["container"]
    times, cpu, baseline = [], [], 0
    state = {}

    if job["workload"] == "write":
        volume = np.fromfile(job["raw"], dtype=np.uint16).reshape(tuple(reversed(dims)))

        def prepare():
            if not remote:
                shutil.rmtree(container, ignore_errors=True)
                os.sync()
            return impl.create()

        def op(h):
            impl.write(h, volume)
    else:
        boxes = read_boxes(job)

        def prepare():
            if not remote:
                evict(container, job["cache"])
            return impl.open()

        def op(h):
            for offset, shape in boxes:
                state["last"] = impl.read(h, offset, shape)

    for i in range(job["repeats"]):
        state.clear()
        h = prepare()
        if i == 0:
            baseline = rss_kib()
        t, c = time.perf_counter(), cpu_seconds()
        op(h)
        times.append(time.perf_counter() - t)
        cpu.append(cpu_seconds() - c)
        del h
    # VmHWM, not ru_maxrss: after a vfork-style spawn ru_maxrss also holds
    # the parent's peak.
    maxrss = rss_kib("VmHWM")

    if job["workload"] != "write":
        offset, shape = read_boxes(job)[-1]
        volume = np.memmap(job["raw"], dtype=np.uint16, mode="r", shape=tuple(reversed(dims)))
        got = np.asarray(state["last"])
        if got.shape != tuple(reversed(shape)) or not np.array_equal(got, volume[c_slices(offset, shape)]):
            return {"status": "error", "message": "%s read wrong data for the box at %s" % (peer, offset)}
    return {"status": "ok", "times": times, "cpu": cpu, "maxrss_kib": maxrss, "baseline_kib": baseline}


def versions():
    import importlib.metadata as md
    out = {"python": sys.version.split()[0]}
    for name in ("tensorstore", "z5py", "numpy"):
        try:
            __import__(name)
            out[name] = md.version(name)
        except Exception as e:  # reported, not fatal: that peer's cells become n/a
            out[name] = None
            out[name + "_error"] = "%s: %s" % (type(e).__name__, e)
    return out


def main():
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
