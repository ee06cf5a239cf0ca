#!/usr/bin/env python3
"""zarr-python 3 as a peer of the libn5 benchmark (n5-bench --format
zarr3-sharded): the sharded Zarr v3 array, same volume, workloads, codecs
and thread counts as libn5.

    python peers_zarr3.py --versions   # JSON: zarr, numpy, python, s3fs versions
    python peers_zarr3.py JOB          # JSON job from n5-bench; prints one JSON report

Run by the Python of the second venv (.venv-zarr3, made by
`tests/setup.sh zarr3py`), apart from .venv whose zarr is 2 (z5py's tests
need it). This file owns only the zarr-python 3 peer class; the timing loop,
eviction, checks and report are bench/peers.py's `run`, imported from next
to this file (it needs only numpy).

The array is created with zarr.create_array: shape, inner chunks
("chunks") and shards ("shards") from the job (axes reversed: x fastest in
memory, as libn5's buffers), uint16, serializer bytes little endian, the
job's codec as compressor (gzip 6, zstd 3, blosc lz4 5 shuffle), fill value
0, keys "c/z/y/x" (default encoding, "/"), index bytes + crc32c at the end
(zarr's default); then one `arr[...] = volume`. Reads open it with
zarr.open_array(mode="r") and index it. Threads: zarr's
threading.max_workers; on S3 also async.concurrency = libn5's
io_concurrency.

On S3 zarr-python needs fsspec and s3fs (FsspecStore, anonymous, the
job's endpoint: the benchmark's proxy in front of SeaweedFS); without s3fs
(.venv-zarr3 has none) the measurement is n/a with that reason, and
n5-bench --python-zarr3 can name a Python that has it.
"""

import json
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402  (bench/peers.py: run, NotApplicable)


def compressors(codec):
    """The zarr-python 3 compressors of an n5-bench codec name."""
    from zarr import codecs
    return {
        "raw": None,
        "gzip": [codecs.GzipCodec(level=6)],
        "zstd": [codecs.ZstdCodec(level=3, checksum=False)],
        "blosc": [codecs.BloscCodec(cname="lz4", clevel=5, shuffle="shuffle", typesize=2,
                                    blocksize=0)],
    }[codec]


class ZarrPython:
    """zarr-python 3 on the sharded array, axes reversed."""

    REMOTE = True

    def __init__(self, job):
        import zarr
        if job.get("format") != "zarr3-sharded":
            raise peers.NotApplicable("zarr-python is measured on the sharded Zarr v3 layout only")
        if job["codec"] == "lz4":
            raise peers.NotApplicable("Zarr v3 has no lz4 codec")
        self.zarr = zarr
        self.job = job
        settings = {"threading.max_workers": job["threads"]}
        storage = job.get("storage")
        if storage:
            try:
                import s3fs  # noqa: F401
            except ImportError:
                raise peers.NotApplicable(
                    "s3fs is not installed in .venv-zarr3 (tests/peers/requirements-zarr3.txt), "
                    "and zarr-python 3 reaches S3 only through fsspec/s3fs or obstore")
            s3 = storage.get("s3", {})
            settings["async.concurrency"] = storage.get("io_concurrency", 32)
            self.url = job["container"] + "/" + job["dataset"]
            self.storage_options = {
                "anon": True,
                "client_kwargs": {"endpoint_url": s3["endpoint"],
                                  "region_name": s3.get("region", "us-east-1")},
            }
        else:
            self.url = None
            self.path = os.path.join(job["container"], job["dataset"])
        zarr.config.set(settings)

    def store(self, read_only):
        if self.url:
            return self.zarr.storage.FsspecStore.from_url(
                self.url, storage_options=self.storage_options, read_only=read_only)
        return self.zarr.storage.LocalStore(self.path, read_only=read_only)

    def create(self):
        job = self.job
        rev = lambda a: tuple(reversed(a))  # noqa: E731
        return self.zarr.create_array(
            self.store(False), shape=rev(job["dims"]), chunks=rev(job["block"]),
            shards=rev(job["shard"]), dtype="uint16",
            serializer=self.zarr.codecs.BytesCodec(endian="little"),
            compressors=compressors(job["codec"]), fill_value=0,
            chunk_key_encoding={"name": "default", "separator": "/"}, overwrite=True)

    def open(self):
        return self.zarr.open_array(store=self.store(True), mode="r")

    def write(self, arr, volume):
        arr[...] = volume

    def read(self, arr, offset, shape):
        return arr[peers.c_slices(offset, shape)]


peers.PEERS["zarr_python"] = ZarrPython


def versions():
    import importlib.metadata as md
    out = {"python": sys.version.split()[0]}
    for name in ("zarr", "numpy", "s3fs"):
        try:
            __import__(name)
            out[name] = md.version(name)
        except Exception as e:  # reported, not fatal
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
        result = peers.run(json.loads(sys.argv[1]))
    except Exception as e:
        traceback.print_exc()
        result = {"status": "error", "message": "%s: %s" % (type(e).__name__, e)}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
