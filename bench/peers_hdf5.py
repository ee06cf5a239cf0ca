#!/usr/bin/env python3
"""h5py as the peer of the libn5 benchmark's HDF5 mode (n5-bench --format
hdf5), and the chunk map its floors read.

    python peers_hdf5.py --versions          # JSON: h5py, its HDF5, numpy, python
    python peers_hdf5.py --chunks FILE DSET  # JSON: where every chunk of FILE's DSET is
    python peers_hdf5.py JOB                 # JSON job from n5-bench; prints one JSON report

Run by the project's venv (.venv, tests/peers/requirements.txt has h5py).
This file owns only the h5py peer class and the chunk map; the timing
loop, eviction, check of the data read and report are bench/peers.py's
`run`, imported from next to this file.

Writes: the job's own file ("file", in its own directory "container") is
created with h5py.File(mode="w", libver=("earliest", "v110")) (the newest
format libn5's libhdf5 1.10 reads, as libn5 itself writes), then
create_dataset: shape and chunks from the job (axes reversed: x fastest in
memory, as libn5's buffers), uint16, for gzip shuffle=True and
compression="gzip" with compression_opts=6 (libn5's gzip level -1 is
zlib's 6), for raw no filter; fill value 0. Timed: one `ds[...] = volume`
and `f.flush()` (libn5's write_region also ends with a flush), so that no
chunk is left in HDF5's chunk cache.

Reads open the job's "file" (the file libn5 wrote: every implementation
reads the same bytes) with h5py.File(mode="r"), h5py's defaults otherwise,
and index the dataset: `ds[z0:z1, y0:y1, x0:x1]`, one numpy array per
call. h5py reads on one thread (libhdf5 decodes one chunk at a time); the
job's thread count changes nothing. With a warm cache ("cache": "warm")
the whole file is read once, untimed, before the dataset is opened, so
that every byte is in the page cache whatever ran before.

--chunks lists the chunks as the file's libhdf5 index has them (h5py's
chunk_iter): {"chunk": [...], "chunks": [[c0, c1, c2, offset, size,
filter_mask], ...]}, chunk and offsets in C order (z, y, x), byte offsets
absolute.
"""

import json
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402  (bench/peers.py: run, NotApplicable)

# The deflate level every implementation uses for gzip (N5's -1).
DEFLATE_LEVEL = 6


def warm_up(path):
    """Read every byte of `path` once, so that it is in the page cache."""
    with open(path, "rb", buffering=0) as f:
        buf = bytearray(1 << 20)
        while f.readinto(buf):
            pass


class H5py:
    """h5py on one HDF5 file, axes reversed."""

    REMOTE = False

    def __init__(self, job):
        import h5py
        if job.get("format") != "hdf5":
            raise peers.NotApplicable("h5py is measured on HDF5 files only")
        if job["codec"] not in ("raw", "gzip"):
            raise peers.NotApplicable("the HDF5 mode writes raw and gzip (shuffle + deflate) only")
        self.h5py = h5py
        self.job = job
        self.file = None

    def create(self):
        job = self.job
        os.makedirs(job["container"], exist_ok=True)
        self.file = self.h5py.File(job["file"], "w", libver=("earliest", "v110"))
        filters = {}
        if job["codec"] == "gzip":
            filters = {"shuffle": True, "compression": "gzip",
                       "compression_opts": DEFLATE_LEVEL}
        return self.file.create_dataset(
            job["dataset"], shape=tuple(reversed(job["dims"])),
            chunks=tuple(reversed(job["block"])), dtype="uint16", fillvalue=0, **filters)

    def open(self):
        if self.job["cache"] == "warm":
            warm_up(self.job["file"])
        self.file = self.h5py.File(self.job["file"], "r")
        return self.file[self.job["dataset"]]

    def write(self, ds, volume):
        ds[...] = volume
        self.file.flush()

    def read(self, ds, offset, shape):
        return ds[peers.c_slices(offset, shape)]


peers.PEERS["h5py"] = H5py


def chunk_map(path, dataset):
    """Every chunk of `dataset` in the file at `path`: C-order offset, byte
    offset, stored size, filter mask."""
    import h5py
    with h5py.File(path, "r") as f:
        ds = f[dataset]
        chunks = []
        ds.id.chunk_iter(lambda s: chunks.append(
            list(s.chunk_offset) + [s.byte_offset, s.size, s.filter_mask]))
        return {"chunk": list(ds.chunks), "shape": list(ds.shape),
                "filters": {k: list(v) if isinstance(v, tuple) else v
                            for k, v in ds._filters.items()},
                "chunks": chunks}


def versions():
    import importlib.metadata as md
    out = {"python": sys.version.split()[0]}
    for name in ("h5py", "numpy"):
        try:
            __import__(name)
            out[name] = md.version(name)
        except Exception as e:  # reported, not fatal: the h5py cells become n/a
            out[name] = None
            out[name + "_error"] = "%s: %s" % (type(e).__name__, e)
    try:
        import h5py
        out["hdf5"] = h5py.version.hdf5_version
    except Exception:
        out["hdf5"] = None
    return out


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--chunks":
        print(json.dumps(chunk_map(sys.argv[2], sys.argv[3])))
        return 0
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
