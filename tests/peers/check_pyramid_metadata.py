"""Validates the metadata of pyramids `n5 pyramid` built, for
cli/tests/pyramid.rs, with the schemas their communities publish.

Usage:
  check_pyramid_metadata.py ngff GROUP...   OME-NGFF 0.5 (Zarr v3) or 0.4 (Zarr v2)
                                            groups, with ome-zarr-models' Image.from_zarr
  check_pyramid_metadata.py cosem ROOT PATH...
                                            N5 groups PATH of the container ROOT,
                                            with cellmap-schemas' COSEM GroupMetadata

Prints one line per group; exits 1 when a group does not validate.
"""

import json
import sys
from pathlib import Path


def ngff(groups):
    import zarr
    from ome_zarr_models.v04.image import Image as Image04
    from ome_zarr_models.v05.image import Image as Image05

    bad = 0
    for path in groups:
        try:
            if (Path(path) / "zarr.json").exists():
                image = Image05.from_zarr(zarr.open_group(path, mode="r", zarr_format=3))
                version = "0.5"
            else:
                image = Image04.from_zarr(zarr.open_group(path, mode="r", zarr_format=2))
                version = "0.4"
            attrs = image.attributes
            attrs = getattr(attrs, "ome", attrs)
            levels = len(attrs.multiscales[0].datasets)
            print(f"{path}: OME-NGFF {version} image, {levels} levels")
        except Exception as e:  # noqa: BLE001 - report every failure
            print(f"{path}: invalid: {e}")
            bad += 1
    return bad


def cosem(root, groups):
    # Only the group: cellmap-schemas' array model (cosem.Group) wants each
    # level's pixelResolution to be the level's own voxel size, where
    # pyramid.md gives the base resolution (n5-spark's and n5-viewer's
    # convention), so the two cannot both hold.
    from cellmap_schemas.multiscale import cosem

    bad = 0
    for path in groups:
        try:
            attrs = json.loads((Path(root) / path / "attributes.json").read_text())
            meta = cosem.GroupMetadata.model_validate(attrs)
            print(f"{root}/{path}: COSEM multiscale group, {len(meta.multiscales[0].datasets)} levels")
        except Exception as e:  # noqa: BLE001 - report every failure
            print(f"{root}/{path}: invalid: {e}")
            bad += 1
    return bad


def main() -> int:
    what = sys.argv[1]
    if what == "ngff":
        bad = ngff(sys.argv[2:])
    elif what == "cosem":
        bad = cosem(sys.argv[2], sys.argv[3:])
    else:
        raise SystemExit(__doc__)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
