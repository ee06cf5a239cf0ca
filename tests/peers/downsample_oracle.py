"""The downsampling oracle of tests/downsample_oracle.rs: tensorstore's `downsample` driver.

Usage: downsample_oracle.py DIR

DIR/manifest.json lists cases {"id", "dtype" (NumPy name), "shape" and
"factors" (N5 order, dimension 0 fastest), "method"}; DIR/<id>.in holds each
input array's elements in native byte order. For each case this writes
DIR/<id>.out: tensorstore's downsampling of the array held in memory (an
`array` driver), same element type and byte order. tensorstore's axes are in C
order, so shapes and factors are reversed on the way in; the bytes of a C-order
array with reversed shape are those of the N5-order one.
"""

import json
import sys
from pathlib import Path

import numpy as np
import tensorstore as ts


def main() -> int:
    root = Path(sys.argv[1])
    cases = json.loads((root / "manifest.json").read_text())
    for case in cases:
        dtype = np.dtype(case["dtype"])
        shape = list(reversed(case["shape"]))
        factors = list(reversed(case["factors"]))
        data = np.fromfile(root / f"{case['id']}.in", dtype=dtype)
        array = data.reshape(shape)
        view = ts.downsample(ts.array(array), downsample_factors=factors, method=case["method"])
        result = np.ascontiguousarray(view.read().result())
        assert result.dtype == dtype, (case, result.dtype)
        result.tofile(root / f"{case['id']}.out")
    print(f"downsample_oracle.py: tensorstore {ts_version()} downsampled {len(cases)} arrays")
    return 0


def ts_version() -> str:
    try:
        from importlib.metadata import version

        return version("tensorstore")
    except Exception:  # noqa: BLE001 - the version is only for the log line
        return "(unknown version)"


if __name__ == "__main__":
    sys.exit(main())
