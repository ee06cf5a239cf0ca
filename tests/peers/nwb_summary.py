"""What pynwb with hdmf-zarr reads from NWB files stored as Zarr, as JSON,
for tests/nwb_roundtrip.rs (nwb.md section 6, round trips): the test
compares the summary of a file libn5 wrote with the one of the original
it copied (plus what it changed).

    nwb_summary.py PATH ...    one JSON object on stdout: for each PATH,
                               {"objects": {...}, "links": {...}} or
                               {"error": text} when the read fails

`objects` has every object of `NWBZarrIO(PATH, mode="r").read()`, by its
path (parent names from the file down, `/` the file), each with its
neurodata type, object_id and fields (and a Data's `data`): containers as `{"object": path}`
(a group held through a link names its target, where it lives), arrays as
their values (object references resolved to the paths of the objects they
name, compound rows as lists), datetimes in ISO form, NaN and infinities as
strings. `links` has, for each TimeSeries, the object its `data` and
`timestamps` come from when they are links (`TimeSeries.fields` holds the
TimeSeries linked to) and the values read through them. Works with
hdmf-zarr 0.14 (Zarr v3, zarr-python 3) and 0.13 (Zarr v2, zarr-python 2).
"""
import datetime
import json
import math
import sys

import numpy as np
from hdmf.container import AbstractContainer, Data
from hdmf_zarr.nwb import NWBZarrIO
from pynwb import TimeSeries


def path_of(obj):
    names = []
    while obj.parent is not None:
        names.append(obj.name)
        obj = obj.parent
    return "/" + "/".join(reversed(names))


def scalar(x):
    if isinstance(x, AbstractContainer):
        return {"object": path_of(x)}
    if isinstance(x, (datetime.datetime, datetime.date)):
        return x.isoformat()
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, bytes):
        return x.decode("utf-8")
    if isinstance(x, float) and not math.isfinite(x):
        return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")
    if isinstance(x, (str, int, float, bool)) or x is None:
        return x
    if isinstance(x, (tuple, list)):
        return [summary(v) for v in x]
    if isinstance(x, dict):
        return {str(k): summary(v) for k, v in sorted(x.items())}
    return "<%s>" % type(x).__name__


def summary(x):
    """A value as JSON: arrays (Zarr arrays, reference datasets, numpy
    arrays) read whole."""
    if isinstance(x, np.void) and x.dtype.names:
        return [summary(x[n]) for n in x.dtype.names]
    if isinstance(x, (AbstractContainer, str, bytes, np.generic)):
        return scalar(x)
    if isinstance(x, (list, tuple)):
        return [summary(v) for v in x]
    if isinstance(x, dict):
        return {str(k): summary(v) for k, v in sorted(x.items())}
    if hasattr(x, "shape") and hasattr(x, "__getitem__"):
        shape = tuple(x.shape)
        whole = x[()] if shape == () else x[:]
        if isinstance(whole, np.ndarray) and whole.dtype.names:
            return [[summary(row[n]) for n in whole.dtype.names] for row in whole.reshape(-1)]
        if isinstance(whole, np.ndarray):
            return [summary(v) for v in whole.tolist()] if whole.ndim else summary(whole.item())
        if isinstance(whole, (list, tuple)):
            return [summary(v) for v in whole]
        return summary(whole)
    return scalar(x)


def read(path):
    io = NWBZarrIO(path, mode="r")
    try:
        f = io.read()
        objects = {}
        links = {}
        for obj in f.objects.values():
            fields = {}
            for k, v in sorted(obj.fields.items()):
                fields[k] = summary(v)
                if k in ("timestamp_link", "data_link"):
                    # Sets in pynwb: the TimeSeries linking to this one.
                    fields[k] = sorted(fields[k], key=lambda o: o["object"])
            if isinstance(obj, Data):
                # hdmf keeps a Data's array out of its fields.
                fields["data"] = summary(obj.data)
            if path_of(obj) in objects:
                raise ValueError("two objects at " + path_of(obj))
            objects[path_of(obj)] = {
                "type": getattr(obj, obj._data_type_attr),
                "object_id": obj.object_id,
                "fields": fields,
            }
            if isinstance(obj, TimeSeries):
                entry = {}
                for k in ("data", "timestamps"):
                    v = obj.fields.get(k)
                    if isinstance(v, TimeSeries):
                        entry[k + "_from"] = path_of(v)
                    own = getattr(obj, k)
                    entry[k] = None if own is None else summary(own)
                links[path_of(obj)] = entry
        return {"objects": objects, "links": links}
    finally:
        io.close()


def main():
    out = {}
    for p in sys.argv[1:]:
        try:
            out[p] = read(p)
        except Exception as e:  # the test prints what failed
            out[p] = {"error": "%s: %s" % (type(e).__name__, e)}
    json.dump(out, sys.stdout, sort_keys=True)


if __name__ == "__main__":
    main()
