#!/usr/bin/env python3
"""tensorstore's side of the pyramid benchmark (n5-bench --format pyramid):
builds the same multiscale pyramid as `n5 pyramid` with tensorstore's
downsample driver and reports how long it took.

    python peers_pyramid.py --versions     # JSON: tensorstore's version
    python peers_pyramid.py JOB            # JSON job; prints one JSON report

The job (bench/src/pyramid/mod.rs, PyrJob::to_json) gives the layout ("n5"
or "zarr3"), the codec, the method (mean or mode), the thread count, the
source dataset, the destination group and libn5's plan: each level's path,
shape and factors relative to the level before (N5 order, x first), the
block (inner chunk) and shard shapes. Timed, with time.perf_counter, from
opening the source to the last level written:

  s0        the source copied into DST/s0 (read and written through
            tensorstore, the same array metadata as every level);
  s1, s2..  ts.downsample(level k-1 as stored, reopened from DST, the
            level's relative factors, method) written into DST/sk, created
            with ts.open(create=True) in the same format, chunking and
            codec.

N5 levels are written whole (one write of the downsampled view, which
tensorstore cuts into the blocks it writes). Zarr v3 levels are written
shard by shard, each shard in a transaction of its own committed at once
(tensorstore writes a shard once then, instead of reading and rewriting it
for every inner chunk), with at most 2 × threads shards in flight.
Threads: the context limits data_copy_concurrency and file_io_concurrency
to the job's thread count. file_io_sync is off: tensorstore's default
fsyncs every file it writes, which neither libn5 nor zarrs_ome do.

Report: {"status": "ok", "times": [s], "cpu": [CPU s], "maxrss_kib"}
(VmHWM of this process) or {"status": "error", "message"}.
"""

import collections
import itertools
import json
import os
import resource
import shutil
import sys
import time
import traceback


def cpu_seconds():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def vm_kib(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def n5_compression(codec):
    return {"raw": {"type": "raw"}, "zstd": {"type": "zstd", "level": 3}}[codec]


def zarr3_metadata(job, shape):
    """The zarr.json of a level of `shape` (N5 order): libn5's."""
    rev = lambda a: list(reversed(a))
    inner = [{"name": "bytes", "configuration": {"endian": "little"}}]
    if job["codec"] == "zstd":
        inner.append({"name": "zstd", "configuration": {"level": 3, "checksum": False}})
    return {
        "zarr_format": 3,
        "node_type": "array",
        "shape": rev(shape),
        "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": rev(job["shard"])}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": rev(job["block"]),
            "codecs": inner,
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                             {"name": "crc32c"}],
            "index_location": "end"}}],
        "dimension_names": ["z", "y", "x"],
    }


def spec(job, path, shape=None):
    kv = {"driver": "file", "path": path.rstrip("/") + "/"}
    if job["layout"] == "n5":
        s = {"driver": "n5", "kvstore": kv}
        if shape is not None:
            s["metadata"] = {"dimensions": shape, "blockSize": job["block"],
                             "dataType": "uint16", "compression": n5_compression(job["codec"])}
    else:
        s = {"driver": "zarr3", "kvstore": kv}
        if shape is not None:
            s["metadata"] = zarr3_metadata(job, shape)
    return s


def write_sharded(ts, out, view, shard_c, inflight_max):
    """Writes `view` into `out` shard by shard, each in a transaction of its
    own, committed once its write is staged; at most `inflight_max` shards
    staged or committing at a time."""
    shape = out.shape
    ranges = [range(0, n, s) for n, s in zip(shape, shard_c)]
    staged = collections.deque()
    commits = collections.deque()

    def commit_oldest():
        write, txn = staged.popleft()
        write.result()
        commits.append(txn.commit_async())

    for start in itertools.product(*ranges):
        box = tuple(slice(o, min(o + s, n)) for o, s, n in zip(start, shard_c, shape))
        txn = ts.Transaction()
        staged.append((out.with_transaction(txn)[box].write(view[box]), txn))
        while len(staged) + len(commits) >= inflight_max and staged:
            commit_oldest()
            while len(commits) > inflight_max // 2:
                commits.popleft().result()
    while staged:
        commit_oldest()
    while commits:
        commits.popleft().result()


def run(job):
    import tensorstore as ts
    n = job["threads"]
    context = ts.Context({"data_copy_concurrency": {"limit": n},
                          "file_io_concurrency": {"limit": n},
                          "file_io_sync": False})
    dst = job["dst"]
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(dst)
    zarr3 = job["layout"] == "zarr3"
    shard_c = list(reversed(job["shard"]))
    # tensorstore's n5 driver has N5's dimension order, its zarr3 driver C order.
    order = (lambda a: list(reversed(a))) if zarr3 else (lambda a: list(a))
    t, c = time.perf_counter(), cpu_seconds()
    prev = ts.open(spec(job, job["src"]), open=True, read=True, context=context).result()
    for k, level in enumerate(job["levels"]):
        path = os.path.join(dst, level["path"])
        out = ts.open(spec(job, path, level["shape"]), create=True, write=True,
                      context=context).result()
        view = prev if k == 0 else ts.downsample(prev, order(level["relative"]), job["method"])
        if zarr3:
            write_sharded(ts, out, view, shard_c, 2 * n)
        else:
            out.write(view).result()
        del out
        prev = ts.open(spec(job, path), open=True, read=True, context=context).result()
    times = [time.perf_counter() - t]
    cpu = [cpu_seconds() - c]
    return {"status": "ok", "times": times, "cpu": cpu, "maxrss_kib": vm_kib("VmHWM")}


def versions():
    import importlib.metadata as md
    out = {"python": sys.version.split()[0]}
    for name in ("tensorstore", "numpy"):
        try:
            __import__(name)
            out[name] = md.version(name)
        except Exception as e:  # reported: the peer's cells become n/a
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
