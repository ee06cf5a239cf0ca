"""Opens multiscale pyramids in neuroglancer, in headless Chromium, and checks
what it reports against the pyramid contract (shared/design/pyramid.md,
"Geometry" and "How it is checked": Viewer):

    check_pyramid.py [--n5 DIR/GROUP] [--ngff DIR/GROUP] --expect expect.json
                     [--timeout SECONDS]

--n5 is an N5 multiscale group, --ngff an OME-NGFF 0.5 (Zarr v3) one; at
least one is given. expect.json:

    {"method": "mean",                   (stride or a pooling method)
     "levels": [{"path": "s0", "factors": [1,1,1]}, ...],
     "n5": {"levels": [...]}, "ngff": {"levels": [...]}}   (optional, per format)

factors are each level's downsampling factors from s0 in N5 order (dimension
0, the fastest, first), as the group's `axes` (N5) or the reversed
multiscale `axes` (NGFF) name them.

For each pyramid, neuroglancer (the client of its Python package, served by
its own server on 127.0.0.1) opens the group, served over HTTP on 127.0.0.1
by a server of this script (CORS, byte ranges), as `n5://http://…` or
`zarr3://http://…`, and reports for every level the transform it renders it
with (probe.js): the scale per axis must be the level's factor F, the origin
(lower corner of voxel 0, in s0 voxels) 0 for N5 and -0.5 for NGFF (-F/2 for
an NGFF stride pyramid); the level's shape the stored one. Then it reads,
through each level's chunk source, the values at points inside sample voxels
(corners, and voxels that differ from their neighbours) near each voxel's
lower and upper edges and at its centre, where the contract places it; they
must equal the stored arrays, read with tensorstore.

Prints a JSON report on stdout; exits 1 on any mismatch or failure (then the
browser's console log is printed on stderr), 2 on bad arguments.
"""
import argparse
import contextlib
import functools
import http.server
import json
import os
import shutil
import sys
import tempfile
import threading
import time

import numpy as np
import tensorstore as ts

HERE = os.path.dirname(os.path.abspath(__file__))
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
# The machine's network is closed: without these Chromium waits on
# connections it cannot make.
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
    "--window-size=1024,768",
]
# Distance of the sample points from a voxel's edges, in s0 voxels.
MARGIN = 0.1
TOL = 1e-6
UNIT_METRES = {"nm": 1e-9, "um": 1e-6, "mm": 1e-3, "cm": 1e-2, "m": 1.0,
               "s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
NGFF_UNITS = {"nanometer": 1e-9, "micrometer": 1e-6, "millimeter": 1e-3, "centimeter": 1e-2,
              "meter": 1.0, "angstrom": 1e-10, "second": 1.0, "millisecond": 1e-3,
              "microsecond": 1e-6, "nanosecond": 1e-9, "minute": 60.0, "hour": 3600.0}


def log(msg):
    print(f"[viewer] {msg}", file=sys.stderr, flush=True)


# --- the HTTP server of the data ------------------------------------------

class DataHandler(http.server.SimpleHTTPRequestHandler):
    """Static files with CORS headers and single byte ranges (the Zarr v3
    shard index is read with a suffix range)."""

    def end_headers(self):
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Access-Control-Allow-Headers", "*")
        self.send_header("Access-Control-Expose-Headers", "Content-Range, Content-Length, ETag")
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def do_OPTIONS(self):
        self.send_response(204)
        self.send_header("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
        self.end_headers()

    def send_head(self):
        rng = self.headers.get("Range")
        path = self.translate_path(self.path)
        if rng is None or not os.path.isfile(path):
            return super().send_head()
        size = os.path.getsize(path)
        try:
            unit, spec = rng.split("=", 1)
            first, last = spec.split("-", 1)
            if unit.strip() != "bytes" or "," in spec:
                raise ValueError
            if first == "":
                start, end = max(0, size - int(last)), size - 1
            else:
                start = int(first)
                end = min(size - 1, int(last)) if last else size - 1
        except ValueError:
            self.send_error(400, "bad Range")
            return None
        if start > end or start >= size:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{size}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        f = open(path, "rb")
        f.seek(start)
        self.send_response(206)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.send_header("Content-Length", str(end - start + 1))
        self.end_headers()
        self._range_left = end - start + 1
        return f

    def copyfile(self, source, outputfile):
        left = getattr(self, "_range_left", None)
        if left is None:
            return super().copyfile(source, outputfile)
        self._range_left = None
        outputfile.write(source.read(left))

    def log_message(self, fmt, *args):
        self.server.requests.append(fmt % args)


@contextlib.contextmanager
def serve(root):
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(DataHandler, directory=root))
    server.daemon_threads = True
    server.requests = []
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


# --- the browser -----------------------------------------------------------

@contextlib.contextmanager
def chromium():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="n5-viewer-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS + [f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def browser_log(driver):
    try:
        return [f"{e.get('level')} {e.get('message')}" for e in driver.get_log("browser")]
    except Exception as e:  # the log is only a help on failure
        return [f"(no browser log: {e})"]


# --- the stored pyramids ---------------------------------------------------

def read_json(path):
    with open(path) as f:
        return json.load(f)


class Pyramid:
    """A pyramid as stored: its axis names (N5 order), the paths of its
    levels, s0's voxel size in metres (None when a unit is unknown), and each
    level opened with tensorstore, its dimensions in N5 order."""

    def __init__(self, fmt, group):
        self.fmt = fmt
        self.group = os.path.abspath(group)
        if fmt == "n5":
            attrs = read_json(os.path.join(self.group, "attributes.json"))
            ms = attrs["multiscales"][0]
            self.paths = [d["path"] for d in ms["datasets"]]
            self.n5_axes = attrs.get("axes")
            units = attrs.get("units")
            res = attrs.get("resolution")
            known = res is not None and units is not None and all(u in UNIT_METRES for u in units)
            self.voxel_metres = [r * UNIT_METRES[u] for r, u in zip(res, units)] if known else None
        else:
            attrs = read_json(os.path.join(self.group, "zarr.json"))["attributes"]["ome"]
            ms = attrs["multiscales"][0]
            self.paths = [d["path"] for d in ms["datasets"]]
            self.n5_axes = [a["name"] for a in ms["axes"]][::-1]
            s0 = ms["datasets"][0]["coordinateTransformations"][0]["scale"][::-1]
            units = [a.get("unit") for a in ms["axes"][::-1]]
            known = all(u in NGFF_UNITS for u in units)
            self.voxel_metres = [v * NGFF_UNITS[u] for v, u in zip(s0, units)] if known else None
        self.arrays = []
        for p in self.paths:
            kv = {"driver": "file", "path": os.path.join(self.group, p)}
            if fmt == "n5":
                a = ts.open({"driver": "n5", "kvstore": kv, "open": True}).result()
            else:
                a = ts.open({"driver": "zarr3", "kvstore": kv, "open": True}).result()
                a = a.transpose()   # C order -> N5 order
            self.arrays.append(a)
        rank = self.arrays[0].rank
        if self.n5_axes is None:
            self.n5_axes = ["x", "y", "z", "t", "c"][:rank]


def sample_voxels(array, count, rng, tries=400):
    """Voxel indices: both far corners, and up to `count` voxels whose value
    differs from each of their face neighbours (bounded tries)."""
    shape = array.shape
    picks = [tuple(0 for _ in shape), tuple(n - 1 for n in shape)]
    found = 0
    for _ in range(tries):
        if found >= count:
            break
        v = tuple(int(rng.integers(0, n)) for n in shape)
        lo = [max(0, i - 1) for i in v]
        hi = [min(n, i + 2) for i, n in zip(v, shape)]
        box = array[tuple(slice(a, b) for a, b in zip(lo, hi))].read().result()
        c = tuple(i - a for i, a in zip(v, lo))
        centre = box[c]
        ok = True
        for ax in range(len(shape)):
            for d in (-1, 1):
                n = list(c)
                n[ax] += d
                if 0 <= n[ax] < box.shape[ax] and box[tuple(n)] == centre:
                    ok = False
        if ok and v not in picks:
            picks.append(v)
            found += 1
    return picks


def expected_origin(fmt, method, F):
    """Where the contract has neuroglancer put the lower corner of voxel 0 of
    a level of factor F along one axis, in s0 voxels: N5 levels are placed by
    scale alone; NGFF translations are of voxel centres, (F-1)/2 s0 voxels
    for pooling methods and 0 for stride (s0's translation being 0)."""
    if fmt == "n5":
        return 0.0
    return -F / 2 if method == "stride" else -0.5


def close(a, b):
    return a is not None and abs(a - b) <= TOL * max(1.0, abs(b))


# --- one pyramid in the viewer ---------------------------------------------

def check_pyramid(driver, ng, viewer, url_root, serve_root, pyr, levels, method, deadline, rng, report):
    """Opens `pyr` in the viewer and fills `report` (its levels as
    neuroglancer shows them, and the mismatches)."""
    rel = os.path.relpath(pyr.group, serve_root).replace(os.sep, "/")
    scheme = "n5" if pyr.fmt == "n5" else "zarr3"
    source = f"{scheme}://{url_root}/{rel}/"
    name = pyr.fmt
    report["source"] = source
    bad = report["mismatches"]

    def run(request):
        request = dict(request, layer=name, timeoutMs=max(1000, int((deadline - time.time()) * 1000)))
        driver.set_script_timeout(max(5, deadline - time.time() + 5))
        answer = driver.execute_async_script(PROBE, request)
        if not answer.get("ok"):
            raise RuntimeError(f"{pyr.fmt}: {answer.get('error')}")
        return answer

    with viewer.txn() as s:
        s.layers.clear()
        s.layers[name] = ng.ImageLayer(source=source)
        s.layout = "xy"

    geo = run({"op": "geometry"})
    report["modelSpace"] = geo["modelSpace"]
    report["globalSpace"] = geo["globalSpace"]
    report["modelToRenderLayerTransform"] = geo["modelToRenderLayerTransform"]
    names = pyr.n5_axes

    # The model space: its unit is one s0 voxel, named as stored.
    ms = geo["modelSpace"]
    if sorted(ms["names"]) != sorted(names):
        bad.append(f"model space names {ms['names']}, stored axes {names}")
    if pyr.voxel_metres is not None:
        for n, v in zip(names, pyr.voxel_metres):
            if n in ms["names"]:
                got = ms["scales"][ms["names"].index(n)]
                if not close(got, v):
                    bad.append(f"model space {n}: voxel {got} {ms['units'][ms['names'].index(n)]}, stored {v} m")
    gs = geo["globalSpace"]
    for n, sc in zip(ms["names"], ms["scales"]):
        if n not in gs["names"] or not close(gs["scales"][gs["names"].index(n)], sc):
            bad.append(f"global space {gs} differs from the model space on {n}")

    if len(geo["levels"]) != len(levels) or len(pyr.paths) != len(levels):
        bad.append(f"neuroglancer shows {len(geo['levels'])} levels, the group lists "
                   f"{len(pyr.paths)}, expected {len(levels)}")
    # Geometry, level by level.
    for k, (exp, got, array) in enumerate(zip(levels, geo["levels"], pyr.arrays)):
        lvl = {"path": exp["path"], "url": got["url"], "factors": exp["factors"],
               "scale": {}, "origin": {}, "expectedOrigin": {}, "shape": {}}
        if pyr.paths[k] != exp["path"]:
            bad.append(f"level {k}: stored path {pyr.paths[k]}, expected {exp['path']}")
        if got["url"] is not None and not got["url"].rstrip("/").endswith("/" + exp["path"]):
            bad.append(f"level {k}: neuroglancer reads {got['url']}, expected .../{exp['path']}")
        for ax, n in enumerate(names):
            d = got["dims"].get(n)
            F = exp["factors"][ax]
            if d is None:
                bad.append(f"level {exp['path']}: no dimension {n} in {list(got['dims'])}")
                continue
            lvl["scale"][n], lvl["origin"][n], lvl["shape"][n] = d["scale"], d["origin"], d["shape"]
            if not close(d["scale"], F):
                bad.append(f"level {exp['path']} {n}: scale {d['scale']}, expected {F}")
            o = lvl["expectedOrigin"][n] = expected_origin(pyr.fmt, method, F)
            if not close(d["origin"], o):
                bad.append(f"level {exp['path']} {n}: origin {d['origin']}, expected {o}")
            if d["shape"] != array.shape[ax]:
                bad.append(f"level {exp['path']} {n}: shape {d['shape']}, stored {array.shape[ax]}")
        report["levels"].append(lvl)
    if bad:
        return

    # Values: points inside sample voxels, placed by the contract.
    points, stored = [], []
    for k, (exp, array) in enumerate(zip(levels, pyr.arrays)):
        for v in sample_voxels(array, 5, rng):
            value = array[v].read().result().item()
            lo = [F * i + expected_origin(pyr.fmt, method, F) for F, i in zip(exp["factors"], v)]
            hi = [a + F for a, F in zip(lo, exp["factors"])]
            for where in (lambda a, b: a + MARGIN, lambda a, b: (a + b) / 2, lambda a, b: b - MARGIN):
                points.append({"level": k, "point": {n: where(a, b) for n, a, b in zip(names, lo, hi)}})
                stored.append((exp["path"], list(v), value))
    got = run({"op": "values", "points": points})["values"]
    checked = {}
    for p, (path, v, value), g in zip(points, stored, got):
        checked[path] = checked.get(path, 0) + 1
        if str(g) != str(value):
            bad.append(f"level {path} voxel {v} (N5 order) at {p['point']}: neuroglancer {g}, stored {value}")
    for lvl in report["levels"]:
        lvl["valuesChecked"] = checked.get(lvl["path"], 0)


PROBE = None


def main():
    global PROBE
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n5")
    ap.add_argument("--ngff")
    ap.add_argument("--expect", required=True)
    ap.add_argument("--timeout", type=float, default=90.0, help="for everything in the browser (s)")
    args = ap.parse_args()
    if not args.n5 and not args.ngff:
        ap.error("give --n5, --ngff or both")
    expect = read_json(args.expect)
    method = expect.get("method", "mean")
    with open(os.path.join(HERE, "probe.js")) as f:
        PROBE = f.read()

    pyramids = []
    for fmt, group in (("n5", args.n5), ("ngff", args.ngff)):
        if group:
            levels = expect.get(fmt, {}).get("levels", expect.get("levels"))
            pyramids.append((Pyramid(fmt, group), levels))
    serve_root = os.path.commonpath([os.path.dirname(p.group) for p, _ in pyramids])

    import neuroglancer as ng

    started = time.time()
    deadline = started + args.timeout
    rng = np.random.default_rng(7)
    report = {"neuroglancer": _version("neuroglancer"), "pyramids": [], "ok": False}
    failed = None
    log_lines = []
    ng.set_server_bind_address("127.0.0.1")
    try:
        with serve(serve_root) as server, chromium() as driver:
            try:
                viewer = ng.Viewer()
                url_root = f"http://127.0.0.1:{server.server_address[1]}"
                driver.set_page_load_timeout(max(5, deadline - time.time()))
                driver.get(viewer.get_viewer_url())
                for pyr, levels in pyramids:
                    log(f"{pyr.fmt}: {pyr.group}")
                    pyr_report = {"format": pyr.fmt, "levels": [], "mismatches": []}
                    report["pyramids"].append(pyr_report)
                    check_pyramid(driver, ng, viewer, url_root, serve_root, pyr, levels, method,
                                  deadline, rng, pyr_report)
                report["browser"] = driver.capabilities.get("browserVersion")
                if any(p["mismatches"] for p in report["pyramids"]):
                    failed = "mismatches"
            except Exception as e:
                failed = f"{type(e).__name__}: {e}"
            if failed is not None:
                log_lines = browser_log(driver)
            report["httpRequests"] = len(server.requests)
            report["httpErrors"] = [r for r in server.requests if '" 4' in r or '" 5' in r][:20]
    except Exception as e:
        failed = f"{type(e).__name__}: {e}"
    finally:
        with contextlib.suppress(Exception):
            ng.stop()
    report["seconds"] = round(time.time() - started, 1)
    report["ok"] = failed is None
    if failed is not None:
        report["error"] = failed
    print(json.dumps(report, indent=1))
    if failed is not None:
        log(f"FAILED: {failed}")
        for p in report["pyramids"]:
            for m in p["mismatches"]:
                log(f"  {p['format']}: {m}")
        log("browser console:")
        for line in log_lines[-60:]:
            log(f"  {line}")
        return 1
    for p in report["pyramids"]:
        for lvl in p["levels"]:
            log(f"{p['format']} {lvl['path']}: scale {lvl['scale']} origin {lvl['origin']} "
                f"({lvl.get('valuesChecked', 0)} values equal)")
    return 0


def _version(dist):
    import importlib.metadata
    return importlib.metadata.version(dist)


if __name__ == "__main__":
    sys.exit(main())
