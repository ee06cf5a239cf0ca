"""The pyramid oracle of cli/tests/pyramid.rs: tensorstore's `downsample` driver
applied to each stored level of the pyramids `n5 pyramid` built.

Usage: pyramid_oracle.py MANIFEST

MANIFEST is a JSON list of cases {"id", "method", "source": {"driver",
"path"}, "levels": [{"driver", "path", "relative"}]}: each level opened with
tensorstore's own driver (`n5`, `zarr`, `zarr3`) from the local path and
put in C order (the `n5` driver keeps N5's order), its
`relative` factors in N5 order (dimension 0 fastest). For every level k >= 1
this checks that it equals `ts.downsample(level k-1 as stored,
downsample_factors=reversed(relative), method)` on the whole array
(pyramid.md, "Downsampling"): bit for bit, except

* float mean: within 2 * m * eps * mean|x| of the window (m its size);
* -0.0 and +0.0 are alike;
* median and mode of a float window holding NaN: the lower median, or the
  most frequent value (the smallest of tied ones), of its non-NaN values,
  NaN when it holds only NaN (tensorstore's result there is not
  reproducible).

It also checks that s0 equals the source, byte for byte. Prints one line per
mismatch (at most 5 per level) and a summary; exits 1 on any mismatch.
"""

import json
import sys

import numpy as np
import tensorstore as ts


def open_array(spec):
    store = ts.open(
        {"driver": spec["driver"], "kvstore": {"driver": "file", "path": spec["path"]}},
        read=True,
    ).result()
    array = np.asarray(store.read().result())
    # tensorstore's n5 driver keeps N5's dimension order (its arrays are
    # F-order views); the others are in C order.
    return np.ascontiguousarray(array.T) if spec["driver"] == "n5" else array


def windows(a, factors, fill):
    """The windows of `a` (C order) for `factors` (C order): an array of shape
    out_shape + (m,) padded with `fill`, and the mask of the voxels inside."""
    out = [-(-n // f) for n, f in zip(a.shape, factors)]
    pad = [(0, o * f - n) for o, f, n in zip(out, factors, a.shape)]
    padded = np.pad(a, pad, constant_values=fill)
    mask = np.pad(np.ones(a.shape, dtype=bool), pad, constant_values=False)
    split = []
    for o, f in zip(out, factors):
        split += [o, f]
    r = len(out)
    order = list(range(0, 2 * r, 2)) + list(range(1, 2 * r, 2))
    m = int(np.prod(factors))
    w = padded.reshape(split).transpose(order).reshape(out + [m])
    k = mask.reshape(split).transpose(order).reshape(out + [m])
    return w, k


def nan_rule(values, method):
    """Median or mode of one float window's values by the contract's NaN rule."""
    v = values[~np.isnan(values)]
    if v.size == 0:
        return np.nan
    if method == "median":
        return np.sort(v)[(v.size - 1) // 2]
    # -0.0 and +0.0 are one value.
    v = np.where(v == 0, 0.0, v)
    u, counts = np.unique(v, return_counts=True)
    return u[np.argmax(counts)]


def same(got, exp):
    """Elementwise: equal, or both NaN (so that -0.0 and +0.0 are alike)."""
    if got.dtype.kind == "f":
        return (got == exp) | (np.isnan(got) & np.isnan(exp))
    return got == exp


def check_level(prev, got, relative, method):
    """The mismatching voxels of `got` (a level) against the oracle applied
    to `prev` (the stored level before), as a list of messages."""
    factors = list(reversed(relative))
    exp = np.asarray(
        ts.downsample(ts.array(prev), downsample_factors=factors, method=method).read().result()
    )
    if exp.shape != got.shape or exp.dtype != got.dtype:
        return [f"shape/type {got.shape} {got.dtype}, tensorstore {exp.shape} {exp.dtype}"]
    ok = same(got, exp)
    floating = got.dtype.kind == "f"
    if floating and method in ("median", "mode"):
        w, k = windows(prev, factors, np.nan)
        holds_nan = (np.isnan(w) & k).any(axis=-1)
        for idx in zip(*np.nonzero(holds_nan)):
            e = nan_rule(w[idx][k[idx]], method)
            g = got[idx]
            ok[idx] = (g == e) or (np.isnan(g) and np.isnan(e))
            exp[idx] = e
    if floating and method == "mean":
        w, k = windows(np.abs(prev.astype(np.float64)), factors, 0.0)
        count = k.sum(axis=-1)
        mean_abs = w.sum(axis=-1) / count
        m = int(np.prod(factors))
        eps = np.finfo(got.dtype).eps
        tol = 2.0 * m * eps * mean_abs
        finite = np.isfinite(exp) & np.isfinite(got)
        with np.errstate(invalid="ignore", over="ignore"):
            close = np.abs(got.astype(np.float64) - exp.astype(np.float64)) <= tol
        ok = ok | (finite & close)
    bad = list(zip(*np.nonzero(~ok)))
    msgs = []
    for idx in bad[:5]:
        msgs.append(f"at {tuple(int(i) for i in idx)} (C order): got {got[idx]!r}, expected {exp[idx]!r}")
    if len(bad) > 5:
        msgs.append(f"... {len(bad)} voxels differ")
    return msgs


def main() -> int:
    cases = json.loads(open(sys.argv[1]).read())
    failures = 0
    levels = 0
    for case in cases:
        arrays = [open_array(level) for level in case["levels"]]
        source = open_array(case["source"])
        if source.dtype != arrays[0].dtype or source.shape != arrays[0].shape or (
            source.tobytes() != arrays[0].tobytes()
        ):
            print(f"{case['id']}: s0 is not the source")
            failures += 1
        for k in range(1, len(arrays)):
            levels += 1
            msgs = check_level(arrays[k - 1], arrays[k], case["levels"][k]["relative"], case["method"])
            for msg in msgs:
                print(f"{case['id']} s{k} ({case['method']}, {arrays[k].dtype}): {msg}")
            failures += bool(msgs)
    print(f"pyramid_oracle.py: {len(cases)} pyramids, {levels} levels checked, {failures} failing")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
