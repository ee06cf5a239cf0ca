//! `n5 import`: a raw little-endian file (with `--dtype` and `--shape`), a
//! `.npy` file or a TIFF stack (a multi-page file or a directory of pages,
//! see [`crate::tiffstack`]) into a new dataset of any format (N5, Zarr v2, Zarr v3,
//! sharded Zarr v3 with `--shard`) with the block size and compression
//! asked for. The axes a TIFF file's description gives (ImageJ, OME-TIFF:
//! see [`crate::tiffmeta`]) shape the dataset and become attributes
//! naming them and their sizes ([`axis_attributes`]). A file is read in boxes of whole write units (the shards of
//! a sharded array, else the blocks) of about 32 MiB ([`LIMITS`]), the next box
//! read while the last is written by the container's threads, so that every
//! block or shard is written once with memory bounded by two boxes however
//! large the planes are. Standard input and TIFF stacks are read in runs
//! of the stream ([`stream_pieces`]): slabs of whole shards along the
//! slowest dimension when they fit in 1 GiB, else of whole blocks, else
//! planes, rows or parts of rows of at most 1 GiB (shards or blocks then
//! merged from several). With `--pyramid` the import is the pyramid's
//! `s0`: the dataset itself when its layout is `s0`'s (the levels are then
//! added beside it), else (OME-NGFF's axis order, Zarr v2's `/` chunk
//! keys, BigDataViewer's stacks) each box read is written straight into
//! `s0`'s layout ([`import_written_pyramid`]); either way, in parts, only
//! the shards of the part's pyramid columns.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::{mpsc, Arc};

use clap::Args;
use n5::format::Format;
use n5::pyramid::build::{begin_written, WrittenBuild};
use n5::pyramid::grid::{s0_pieces, sub_box};
use n5::pyramid::plan::{OutFormat, Plan};
use n5::storage::MemoryStore;
use n5::{Container, DataType, Dataset, DatasetAttributes, Mode, Options};
use serde_json::{json, Map, Value};

use crate::cmd::common::distinct;
use crate::cmd::pyramid::{
    check_bdv_root, parse_part, pyramid_format, report, reported, run_build, LevelBars, PyramidArgs,
};
use crate::cmd::target::{
    check_document, check_hdf5_shards, check_shard_format, checked_shard, create_dataset,
    destination_format, MadeArgs,
};
use crate::error::{At, CliError, CliResult, EXIT_OK};
use crate::location::Location;
use crate::output::progress;
use crate::tiffmeta::{tidy, Described};
use crate::tiffstack::TiffStack;
use crate::zarr::{new_document, NewArray};
use crate::{npy, spec, tiffstack, work, Global};

/// Arguments of `n5 import`.
#[derive(Args, Debug)]
pub struct ImportArgs {
    /// The input: a .npy file, a TIFF stack (a .tif/.tiff file of pages,
    /// or a directory of them), or raw little-endian elements,
    /// dimension 0 fastest (`-` reads standard input).
    pub input: String,
    /// The new dataset (CONTAINER/PATH/TO/DATASET: vol.n5/raw, vol.zarr/raw,
    /// s3://bucket/vol.zarr/raw...); the container is created when missing.
    pub dest: String,
    /// Element type of a raw input (uint8 ... float64, or u1, u16, f4...).
    #[arg(long, value_name = "TYPE")]
    pub dtype: Option<String>,
    /// Shape of a raw input, N5 order (dimension 0, the fastest, first).
    #[arg(long, value_name = "LIST")]
    pub shape: Option<String>,
    /// Block size, N5 order; default 64 in every dimension (clipped to the
    /// shape); the inner chunk shape with --shard.
    #[arg(long, short, value_name = "LIST")]
    pub block_size: Option<String>,
    /// Compression: gzip, zlib, zstd, bzip2, xz, lz4, blosc, raw, NAME:LEVEL,
    /// or JSON such as '{"type":"gzip","level":-1}'.
    #[arg(long, short, default_value = "gzip", value_name = "SPEC")]
    pub compression: String,
    /// Read the input as raw data even when it ends in .npy, .tif or .tiff.
    #[arg(long)]
    pub raw: bool,
    /// Read a TIFF file as [width, height, pages] whatever its ImageJ,
    /// OME-TIFF or tifffile description says of its axes.
    #[arg(long)]
    pub flat: bool,
    /// --format and --shard.
    #[command(flatten)]
    pub made: MadeArgs,
    /// Import into DEST/s0 and build a multiscale pyramid there: what `n5
    /// import` into a dataset and `n5 pyramid` from it into DEST give,
    /// with these options, s0 written once in its layout (--format may
    /// also be bdv, DEST then the container root).
    #[arg(long)]
    pub pyramid: bool,
    /// The pyramid's options (with --pyramid), and --part.
    #[command(flatten)]
    pub pyr: PyramidArgs,
}

/// How much an import reads at a time.
#[derive(Clone, Copy, Debug)]
struct Limits {
    /// Bytes of a box read from a file and written with one region write
    /// (at least one write unit, which may be larger).
    box_bytes: u64,
    /// Bytes per slab of standard input (at least one unit thick along the
    /// slowest dimension).
    slab_bytes: u64,
    /// The largest slab of standard input made of whole shards; past it,
    /// slabs are whole blocks thick and each shard is merged from several
    /// slabs.
    stream_slab_max: u64,
}

/// The limits of `n5 import`.
const LIMITS: Limits = Limits {
    box_bytes: 32 << 20,
    slab_bytes: 16 << 20,
    stream_slab_max: 1 << 30,
};

/// Convert elements of `elem` bytes stored little-endian (or big-endian
/// with `big`) to native order in place.
fn to_native(data: &mut [u8], elem: usize, big: bool) {
    if elem > 1 && (big != cfg!(target_endian = "big")) {
        for c in data.chunks_exact_mut(elem) {
            c.reverse();
        }
    }
}

/// One box of the array (offset and shape, N5 order).
#[derive(Clone, Debug, PartialEq)]
struct Piece {
    offset: Vec<u64>,
    shape: Vec<u64>,
}

/// The boxes that cover an array of shape `dims` in whole units of
/// `unit` (edge units clipped), each of as many units as fit in `budget`
/// bytes of `elem`-byte elements, grown along dimension 0 first (longer
/// runs in the file), at least one unit; in file order (the last
/// dimension slowest).
fn boxes(dims: &[u64], unit: &[u64], elem: u64, budget: u64) -> Vec<Piece> {
    let n = dims.len();
    let grid: Vec<u64> = dims
        .iter()
        .zip(unit)
        .map(|(&d, &u)| d.div_ceil(u))
        .collect();
    let mut bytes = unit.iter().product::<u64>().saturating_mul(elem);
    let mut per_box = vec![1u64; n];
    for d in 0..n {
        let fit = (budget / bytes.max(1)).clamp(1, grid[d]);
        per_box[d] = fit;
        bytes = bytes.saturating_mul(fit);
        if fit < grid[d] {
            break;
        }
    }
    let counts: Vec<u64> = grid
        .iter()
        .zip(&per_box)
        .map(|(&g, &k)| g.div_ceil(k))
        .collect();
    let total: u64 = counts.iter().product();
    (0..total)
        .map(|mut i| {
            let mut offset = Vec::with_capacity(n);
            let mut shape = Vec::with_capacity(n);
            for d in 0..n {
                let at = (i % counts[d]) * per_box[d] * unit[d];
                i /= counts[d];
                offset.push(at);
                shape.push((per_box[d] * unit[d]).min(dims[d] - at));
            }
            Piece { offset, shape }
        })
        .collect()
}

/// Read the box `b` of an array of shape `dims` whose `elem`-byte elements
/// start at `start` in `file` (dimension 0 fastest) into `out`, one read
/// per run of the box that is contiguous in the file.
fn read_box(
    file: &mut File,
    start: u64,
    dims: &[u64],
    elem: u64,
    b: &Piece,
    out: &mut Vec<u8>,
) -> std::io::Result<()> {
    let n = dims.len();
    let total: u64 = b.shape.iter().product::<u64>() * elem;
    out.resize(total as usize, 0);
    // Dimensions below `j` are whole in the box: a run spans them and
    // dimension j.
    let j = (0..n).find(|&d| b.shape[d] != dims[d]).unwrap_or(n - 1);
    let mut stride = vec![1u64; n];
    for d in 1..n {
        stride[d] = stride[d - 1] * dims[d - 1];
    }
    let run = (b.shape[j] * stride[j] * elem) as usize;
    let outer: Vec<u64> = b.shape[j + 1..].to_vec();
    let runs: u64 = outer.iter().product();
    let mut pos = vec![0u64; outer.len()];
    for r in 0..runs as usize {
        let mut element = b.offset[j] * stride[j];
        for (k, &p) in pos.iter().enumerate() {
            let d = j + 1 + k;
            element += (b.offset[d] + p) * stride[d];
        }
        file.seek(SeekFrom::Start(start + element * elem))?;
        file.read_exact(&mut out[r * run..(r + 1) * run])?;
        for (k, p) in pos.iter_mut().enumerate() {
            *p += 1;
            if *p < outer[k] {
                break;
            }
            *p = 0;
        }
    }
    Ok(())
}

/// Whether a part of an import in parts writes the unit at a grid position.
type Owns<'a> = dyn Fn(&[u64]) -> bool + 'a;

/// A pyramid's `s0` that an import writes in the pyramid's own layout.
#[derive(Clone, Copy)]
struct PyramidS0<'a> {
    /// The build under way, which made `s0`'s arrays.
    build: &'a WrittenBuild<'a>,
    /// The pyramid's group (the container root for bdv), as messages name
    /// it.
    group: &'a Location,
}

/// Where an import writes: the dataset, as messages name it, with or
/// without a progress bar.
struct Target<'a> {
    /// The new dataset; with [`s0`](Self::s0), the dataset `n5 import`
    /// alone would make (its metadata only): the shape and units boxes are
    /// read in.
    ds: &'a Dataset,
    /// The dataset as messages name it.
    arg: &'a str,
    /// No progress bar.
    quiet: bool,
    /// In an import in parts, whether this part writes the unit (shard,
    /// else block) at a grid position.
    owns: Option<&'a Owns<'a>>,
    /// A pyramid's `s0` in its own layout, where boxes go instead of
    /// [`ds`](Self::ds).
    s0: Option<PyramidS0<'a>>,
}

impl Target<'_> {
    /// Write the box `b` of the dataset (in an import in parts, only the
    /// parts of it in the units this part writes); with a pyramid's `s0`,
    /// where the box lands in `s0` (in parts, the units of the part's
    /// columns).
    fn write(&self, b: &Piece, data: &[u8]) -> CliResult<()> {
        let Some(s0) = self.s0 else {
            return write_units(self.ds, self.arg, &b.offset, &b.shape, data, self.owns);
        };
        let elem = self.ds.data_type().size();
        for p in s0_pieces(s0.build.plan(), &b.offset, &b.shape, data, elem) {
            let ds = s0.build.s0(p.stack).ok_or_else(|| {
                CliError::new(
                    &s0.group.arg,
                    format!("the pyramid has no stack {:?}", p.stack),
                )
            })?;
            let arg = dataset_arg(s0.group, ds);
            let owns = |pos: &[u64]| s0.build.writes(p.stack, pos);
            let owns: Option<&Owns> = s0.build.in_parts().then_some(&owns);
            write_units(ds, &arg, &p.region.offset, &p.region.shape, &p.data, owns)?;
        }
        Ok(())
    }
}

/// A dataset of the group `group` as messages name it.
fn dataset_arg(group: &Location, ds: &Dataset) -> String {
    let inside = ds
        .path()
        .strip_prefix(group.inner.as_str())
        .unwrap_or(ds.path())
        .trim_start_matches('/');
    group.child(inside).arg
}

/// Write the box at `offset` of `shape` of `ds` (named `arg` in messages),
/// or with `owns` only the parts of it in the units (shards, else blocks)
/// it owns.
fn write_units(
    ds: &Dataset,
    arg: &str,
    offset: &[u64],
    shape: &[u64],
    data: &[u8],
    owns: Option<&Owns>,
) -> CliResult<()> {
    let Some(owns) = owns else {
        return ds.write_region(offset, shape, data).at(arg);
    };
    let unit = ds.shard_shape();
    let dims = ds.attributes().dimensions.clone();
    let elem = ds.data_type().size();
    let lo: Vec<u64> = offset.iter().zip(&unit).map(|(&o, &u)| o / u).collect();
    let hi: Vec<u64> = (0..offset.len())
        .map(|d| (offset[d] + shape[d] - 1) / unit[d])
        .collect();
    let extent: Vec<u64> = lo.iter().zip(&hi).map(|(&l, &h)| h - l + 1).collect();
    for k in crate::cmd::common::grid_iter(&extent) {
        let pos: Vec<u64> = k.iter().zip(&lo).map(|(&k, &l)| k + l).collect();
        if !owns(&pos) {
            continue;
        }
        // The unit's part of the box.
        let at: Vec<u64> = (0..pos.len())
            .map(|d| (pos[d] * unit[d]).max(offset[d]))
            .collect();
        let size: Vec<u64> = (0..pos.len())
            .map(|d| {
                ((pos[d] + 1) * unit[d])
                    .min(dims[d])
                    .min(offset[d] + shape[d])
                    - at[d]
            })
            .collect();
        let inside: Vec<u64> = at.iter().zip(offset).map(|(&a, &o)| a - o).collect();
        let part = sub_box(data, shape, &inside, &size, elem);
        ds.write_region(&at, &size, &part).at(arg)?;
    }
    Ok(())
}

/// The message for a failed read of the input.
fn read_error(input: &str, e: std::io::Error) -> CliError {
    CliError::new(
        input,
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            "ends before the data its shape needs (the dataset holds what came before)".to_string()
        } else {
            e.to_string()
        },
    )
}

/// Check `--dtype` and `--shape`, when given, against what the header of
/// `what` (a .npy file, a TIFF stack) says: `data_type` and `shape` (N5
/// order, described by `shape_note`).
fn check_header(
    a: &ImportArgs,
    data_type: DataType,
    shape: &[u64],
    what: &str,
    shape_note: &str,
) -> CliResult<()> {
    if let Some(d) = &a.dtype {
        if spec::data_type(d)? != data_type {
            return Err(CliError::usage(
                "--dtype",
                format!("{what} holds {data_type}, not {d}"),
            ));
        }
    }
    if let Some(s) = &a.shape {
        if spec::list("--shape", s)? != shape {
            return Err(CliError::usage(
                "--shape",
                format!("{what} has the N5 shape {shape:?} {shape_note}, not {s}"),
            ));
        }
    }
    Ok(())
}

/// The names of described axes as a JSON array (`None` unless every axis
/// has one and no two the same): in N5 order, or reversed into C order
/// (`c_order`) as Zarr's `dimension_names` and `_ARRAY_DIMENSIONS` are.
fn axis_names(d: &Described, c_order: bool) -> Option<Value> {
    let mut names: Vec<String> = d
        .axes
        .iter()
        .map(|a| a.name.clone())
        .collect::<Option<_>>()?;
    if !distinct(&names) {
        return None;
    }
    if c_order {
        names.reverse();
    }
    Some(Value::Array(names.into_iter().map(Value::String).collect()))
}

/// The attributes an import gives a dataset of described axes. N5 (and
/// HDF5, as n5-hdf5 reads them), in N5 order as its shape: `axes` (names), and when an axis has a size,
/// `resolution` and `units` (one per axis; 1 and "" where none is given),
/// as neuroglancer and tensorstore read them, and `pixelResolution`
/// (`{"dimensions", "unit"}`, as n5-viewer and BigDataViewer read it) when
/// the axes are x and y, or x, y and z, all of one unit. Zarr, in C order
/// as its shape: `dimension_units` (`"500 nm"`, null where none is given)
/// as tensorstore and neuroglancer read them, and in Zarr v2
/// `_ARRAY_DIMENSIONS` as xarray reads the names (Zarr v3 has them in
/// `dimension_names`).
fn axis_attributes(d: &Described, format: Format) -> Map<String, Value> {
    let mut m = Map::new();
    let sized = d.axes.iter().any(|a| a.scale.is_some());
    // HDF5 datasets get N5's attributes, as n5-hdf5 writes them.
    if !matches!(format, Format::N5 | Format::Hdf5) {
        if format == Format::Zarr2 {
            if let Some(names) = axis_names(d, true) {
                m.insert("_ARRAY_DIMENSIONS".into(), names);
            }
        }
        if sized {
            // Micro as nano: neuroglancer reads Zarr units with the
            // prefix µ only, tensorstore µ as a unit of its own.
            let units = d.axes.iter().rev().map(|a| match &a.scale {
                Some((v, u)) if u == "um" || u == "us" => {
                    json!(format!("{} n{}", tidy(v * 1000.0), &u[1..]))
                }
                Some((v, u)) => json!(format!("{v} {u}")),
                None => Value::Null,
            });
            m.insert("dimension_units".into(), Value::Array(units.collect()));
        }
        return m;
    }
    if let Some(names) = axis_names(d, false) {
        m.insert("axes".into(), names);
    }
    if sized {
        let resolution: Vec<Value> = d
            .axes
            .iter()
            .map(|a| json!(a.scale.as_ref().map_or(1.0, |s| s.0)))
            .collect();
        let units: Vec<Value> = d
            .axes
            .iter()
            .map(|a| json!(a.scale.as_ref().map_or("", |s| s.1.as_str())))
            .collect();
        let spatial = d.axes.len() <= 3
            && d.axes
                .iter()
                .zip(["x", "y", "z"])
                .all(|(a, n)| a.name.as_deref() == Some(n));
        let unit = d.axes[0].scale.as_ref().map(|s| s.1.as_str());
        if spatial
            && d.axes
                .iter()
                .all(|a| a.scale.as_ref().map(|s| s.1.as_str()) == unit)
        {
            m.insert(
                "pixelResolution".into(),
                json!({"dimensions": resolution, "unit": unit}),
            );
        }
        m.insert("resolution".into(), Value::Array(resolution));
        m.insert("units".into(), Value::Array(units));
    }
    m
}

/// `n5 import INPUT DEST`.
pub fn import(a: &ImportArgs, g: &Global) -> CliResult<u8> {
    if !a.pyramid {
        if let Some(flag) = a.pyr.pyramid_only_flag() {
            return Err(CliError::usage(flag, "needs --pyramid"));
        }
    }
    let part = a.pyr.part.as_deref().map(parse_part).transpose()?;
    if part.is_some() && a.input == "-" {
        return Err(CliError::usage(
            "--part",
            "needs a file or a directory of pages, not standard input",
        ));
    }
    let compression = spec::compression(&a.compression)?;
    let is_npy = !a.raw && a.input.to_ascii_lowercase().ends_with(".npy");
    let is_tiff = !a.raw && a.input != "-" && tiffstack::is_tiff(Path::new(&a.input));
    let (mut input, input_len): (Box<dyn Read + Send>, Option<u64>) = if a.input == "-" {
        (Box::new(std::io::stdin()), None)
    } else if is_tiff {
        (Box::new(std::io::empty()), None)
    } else {
        let f = File::open(&a.input).at(&a.input)?;
        let m = f.metadata().at(&a.input)?;
        if m.is_dir() {
            return Err(CliError::usage(
                &a.input,
                "is a directory: --raw reads a file or standard input (without --raw, a directory is a stack of TIFF pages)",
            ));
        }
        let len = m.is_file().then_some(m.len());
        (Box::new(BufReader::with_capacity(1 << 20, f)), len)
    };
    // The axes a TIFF file's description gives.
    let mut described = None;
    // What a header says: the element type, the shape (N5 order), whether
    // the elements are big-endian and where they start.
    let (data_type, shape, big_endian, data_offset): (DataType, Vec<u64>, bool, u64) =
        if is_npy {
            let h = npy::read_header(&mut input).map_err(|m| CliError::new(&a.input, m))?;
            check_header(
                a,
                h.data_type.clone(),
                &h.shape,
                "the .npy file",
                "(its own shape reversed)",
            )?;
            (h.data_type, h.shape, h.big_endian, h.data_offset)
        } else if is_tiff {
            let (stack, h) = TiffStack::open(Path::new(&a.input), a.flat)
                .map_err(|m| CliError::new(&a.input, m))?;
            for note in &h.notes {
                eprintln!("n5 import: {}: {note}", a.input);
            }
            let what = match &h.described {
                Some(d) => format!("(the axes its {} description gives)", d.by),
                None => "([width, height, pages])".into(),
            };
            check_header(a, h.data_type.clone(), &h.shape, "the TIFF stack", &what)?;
            described = h.described;
            input = Box::new(stack);
            // Pages are decoded to native order.
            (h.data_type, h.shape, cfg!(target_endian = "big"), 0)
        } else {
            let dtype = a.dtype.as_deref().ok_or_else(|| {
                CliError::usage(&a.input, "a raw input needs --dtype and --shape")
            })?;
            let shape = a.shape.as_deref().ok_or_else(|| {
                CliError::usage(&a.input, "a raw input needs --dtype and --shape")
            })?;
            (
                spec::data_type(dtype)?,
                spec::list("--shape", shape)?,
                false,
                0,
            )
        };
    let elem = data_type.size() as u64;
    let want = shape
        .iter()
        .try_fold(elem, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| CliError::usage("--shape", "the shape is too large"))?;
    // A file of the wrong size is refused before anything is written.
    if let Some(len) = input_len {
        let have = len.saturating_sub(data_offset);
        if have != want {
            let what = if is_npy {
                format!("holds {have} bytes of data but its header's shape {:?} of {data_type} needs {want}", shape)
            } else {
                format!(
                    "has {len} bytes but {} elements of {data_type} in shape {shape:?} need {want}",
                    want / elem
                )
            };
            return Err(CliError::new(&a.input, what));
        }
    }
    let block: Vec<u32> = match &a.block_size {
        Some(t) => {
            let b = spec::list("--block-size", t)?;
            if b.len() != shape.len() {
                return Err(CliError::usage(
                    "--block-size",
                    format!(
                        "has {} values but the data has {} dimensions",
                        b.len(),
                        shape.len()
                    ),
                ));
            }
            b.iter()
                .map(|&x| {
                    u32::try_from(x)
                        .map_err(|_| CliError::usage("--block-size", format!("{x} is too large")))
                })
                .collect::<CliResult<_>>()?
        }
        None => shape.iter().map(|&d| d.clamp(1, 64) as u32).collect(),
    };
    let attrs = DatasetAttributes::new(shape.clone(), block.clone(), data_type, compression)
        .map_err(|e| CliError::usage(&a.dest, e.message()))?;
    let group = Location::parse(&a.dest, g)?;
    let loc = if a.pyramid {
        group.child("s0")
    } else {
        group.clone()
    };
    if loc.inner.is_empty() {
        return Err(CliError::usage(
            &a.dest,
            "name the dataset inside the container, e.g. vol.n5/raw",
        ));
    }
    let (format, pyramid_options) = if a.pyramid {
        let (format, out) = pyramid_format(a.made.format.as_deref(), &group)?;
        // The levels take s0's block, shard and compression.
        let options = a.pyr.options(out, None, None, None, false, g.threads)?;
        check_bdv_root(&options, &group)?;
        (format, Some(options))
    } else {
        (
            destination_format(a.made.format.as_deref(), &loc, Format::N5)?,
            None,
        )
    };
    check_shard_format(a.made.shard.is_some(), format, &loc.arg)?;
    check_hdf5_shards(a.made.hdf5_shards, format, a.made.shard.is_some(), &loc.arg)?;
    let shard = a
        .made
        .shard
        .as_deref()
        .map(|t| checked_shard(&spec::list("--shard", t)?, &block, &loc.arg))
        .transpose()?;
    // The array's document, checked before the container is made.
    let fill = vec![0u8; elem as usize];
    let document = new_document(
        format,
        &attrs,
        &NewArray {
            shard: shard.as_deref(),
            fill: &fill,
            // Zarr v3 only; C order.
            dimension_names: described.as_ref().and_then(|d| axis_names(d, true)),
            hdf5_shards: a.made.hdf5_shards,
        },
    )
    .map_err(|e| {
        // A compression HDF5 files do not hold is the command line's to
        // change.
        if format == Format::Hdf5 {
            CliError::usage(&loc.arg, e.message())
        } else {
            CliError::new(&loc.arg, e.message())
        }
    })?;
    if format != Format::N5 {
        check_document(format, &loc.inner, &document, &loc.arg)?;
    }
    let axes = described
        .as_ref()
        .map(|d| axis_attributes(d, format))
        .filter(|m| !m.is_empty());
    let input = Input {
        reader: input,
        len: input_len,
        data_offset,
        big_endian,
        is_npy,
    };
    if let Some(options) = &pyramid_options {
        // The plan is the one `n5 pyramid` makes of the dataset `n5
        // import` alone would write; refused before anything is written.
        let src = as_imported(format, &loc, &attrs, &document, axes.as_ref())?;
        let plan = n5::pyramid::build::plan(src.container(), src.path(), options, format)
            .map_err(reported)?;
        if !s0_as_imported(&plan) {
            return import_written_pyramid(a, g, input, &src, &group, format, options);
        }
    }
    // N5 datasets get every block, as N5 readers expect of an import;
    // Zarr arrays leave out chunks equal to the fill value, as Zarr
    // writers do.
    let c = loc.open_for_copy(
        Mode::Create,
        work::threads(g.threads),
        format,
        format == Format::N5,
    )?;
    let ds = if part.is_some() {
        // In parts, another part may have made it: the same is fine.
        create_dataset(&c, &loc.inner, format, &attrs, &document).at(&loc.arg)?;
        c.open_dataset(&loc.inner)
    } else if format == Format::N5 {
        c.create_dataset(&loc.inner, attrs)
    } else {
        c.create_dataset_json(&loc.inner, &document)
    }
    .at(&loc.arg)?;
    if let Some(m) = &axes {
        if part.is_none_or(|(i, _)| i == 0) {
            c.set_attributes(&loc.inner, m).at(&loc.arg)?;
        }
    }
    if shape.contains(&0) {
        return Ok(EXIT_OK);
    }
    // Which units this part writes: in a pyramid build, those of its
    // columns (so that its levels find them); else every N-th.
    let owner: Option<Box<Owns<'static>>> = match (part, &pyramid_options) {
        (None, _) => None,
        (Some((i, n)), Some(options)) => {
            let plan = n5::pyramid::build::plan(&c, &loc.inner, options, format)
                .map_err(|e| CliError::new(&loc.arg, e.message()))?;
            let column = plan.column_level(n);
            Some(Box::new(move |pos: &[u64]| {
                plan.part_of(0, Default::default(), pos, column, n) == i
            }))
        }
        (Some((i, n)), None) => {
            let grid = crate::cmd::common::shard_grid(&ds);
            Some(Box::new(move |pos: &[u64]| {
                crate::cmd::common::unit_index(pos, &grid) % n == i
            }))
        }
    };
    let target = Target {
        ds: &ds,
        arg: &loc.arg,
        quiet: g.quiet,
        owns: owner.as_deref(),
        s0: None,
    };
    let imported = input.import_into(&a.input, &target)?;
    match &pyramid_options {
        Some(options) => run_build(&loc, &group, format, options, false, g),
        None => Ok(imported),
    }
}

/// The input of an import, past its header.
struct Input {
    /// The input as a stream (standard input, a TIFF stack, a file).
    reader: Box<dyn Read + Send>,
    /// The length of a file (read in boxes, opened again); `None`: read
    /// as a stream.
    len: Option<u64>,
    /// Where the elements start in a file.
    data_offset: u64,
    /// Whether the elements are big-endian.
    big_endian: bool,
    /// Whether it is a .npy file (which must end with the data).
    is_npy: bool,
}

impl Input {
    /// Import the input `name` into `target`: a file in boxes, else a
    /// stream in slabs.
    fn import_into(self, name: &str, target: &Target) -> CliResult<u8> {
        match self.len {
            Some(_) => {
                drop(self.reader);
                let file = File::open(name).at(name)?;
                import_file(
                    name,
                    file,
                    self.data_offset,
                    self.big_endian,
                    target,
                    LIMITS,
                )
            }
            None => {
                let s = Stream {
                    input: self.reader,
                    big_endian: self.big_endian,
                    is_npy: self.is_npy,
                };
                import_stream(name, s, target, LIMITS)
            }
        }
    }
}

/// The dataset `n5 import` alone makes at `loc` (the array `document` of
/// the container format `format`, shape and type `attrs`, the axis
/// attributes `axes`), without data, in memory: a pyramid's plan reads
/// the source's metadata only.
fn as_imported(
    format: Format,
    loc: &Location,
    attrs: &DatasetAttributes,
    document: &Value,
    axes: Option<&Map<String, Value>>,
) -> CliResult<Dataset> {
    let options = Options {
        format: Some(format),
        threads: 1,
        ..Options::default()
    };
    let c = Container::open_store(
        Arc::new(MemoryStore::new()),
        loc.arg.clone(),
        Mode::Create,
        options,
    )
    .at(&loc.arg)?;
    let ds = if format == Format::N5 {
        c.create_dataset(&loc.inner, attrs.clone())
    } else {
        c.create_dataset_json(&loc.inner, document)
    }
    .at(&loc.arg)?;
    if let Some(m) = axes {
        c.set_attributes(&loc.inner, m).at(&loc.arg)?;
    }
    Ok(ds)
}

/// Whether the pyramid's `s0` is the dataset as `n5 import` writes it, so
/// that the levels are built beside it in place: not when OME-NGFF
/// permutes the axes into `x, y, z, c, t`, when OME-NGFF 0.4 needs the
/// `/` chunk key separator (an import's Zarr v2 array has `.`), nor when
/// BigDataViewer splits `s0` into stacks.
fn s0_as_imported(plan: &Plan) -> bool {
    !plan.permutes() && !matches!(plan.format, OutFormat::Zarr2 | OutFormat::Bdv)
}

/// `n5 import --pyramid` whose `s0` is laid out otherwise than the
/// imported dataset (see [`s0_as_imported`]): the build creates the
/// pyramid's group and arrays, each box read from the input is written
/// straight into `s0` (in parts, the shards of the part's columns), and
/// the build then makes the levels from it. `src` is the dataset `n5
/// import` alone would make, without data: the pyramid is the one `n5
/// import` and then `n5 pyramid` with these options make, written once.
fn import_written_pyramid(
    a: &ImportArgs,
    g: &Global,
    input: Input,
    src: &Dataset,
    group: &Location,
    format: Format,
    options: &n5::pyramid::plan::PyramidOptions,
) -> CliResult<u8> {
    let dst = group.open_for_copy(Mode::Create, work::threads(g.threads), format, false)?;
    let bars = LevelBars::new(g.quiet);
    let on_progress = |level: usize, done: u64, total: u64| bars.update(level, done, total);
    let build = begin_written(
        src.container(),
        src.path(),
        &dst,
        &group.inner,
        options,
        Some(&on_progress),
    )
    .map_err(reported)?;
    if !src.attributes().dimensions.contains(&0) {
        let target = Target {
            ds: src,
            arg: &group.arg,
            quiet: g.quiet,
            owns: None,
            s0: Some(PyramidS0 {
                build: &build,
                group,
            }),
        };
        input.import_into(&a.input, &target)?;
    }
    let outcome = build.finish().map_err(reported)?;
    drop(bars);
    report(&a.input, &group.arg, &outcome, false, g)
}

/// Write the `count` pieces of `pieces` with the bytes `read` gives for
/// each, converted to native order from little-endian (big-endian with
/// `big_endian`). A reader thread hands over one piece at a time (a
/// rendezvous): one piece is read while the one before is written, and
/// the written one's buffer goes back to the reader (two buffers in all,
/// their pages touched once). A failed write stops the reader. `name`
/// names the input in messages.
fn pipelined(
    name: &str,
    pieces: impl Iterator<Item = Piece> + Send,
    count: u64,
    big_endian: bool,
    target: &Target,
    mut read: impl FnMut(&Piece, &mut Vec<u8>) -> std::io::Result<()> + Send,
) -> CliResult<()> {
    let elem = target.ds.data_type().size();
    let bar = progress(count, "import", target.quiet);
    let (tx, rx) = mpsc::sync_channel::<std::io::Result<(Piece, Vec<u8>)>>(0);
    let (back, spare) = mpsc::channel::<Vec<u8>>();
    let result = std::thread::scope(|s| {
        // Owned here, the receiver goes when the writing below stops, and
        // with it a reader waiting to hand over the next piece.
        let rx = rx;
        s.spawn(move || {
            for p in pieces {
                let mut buf = spare.try_recv().unwrap_or_default();
                let r = read(&p, &mut buf).map(|()| {
                    to_native(&mut buf, elem, big_endian);
                    (p, buf)
                });
                let failed = r.is_err();
                if tx.send(r).is_err() || failed {
                    return;
                }
            }
        });
        for got in rx.iter() {
            let (p, data) = got.map_err(|e| read_error(name, e))?;
            target.write(&p, &data)?;
            back.send(data).ok();
            bar.inc(1);
        }
        Ok(())
    });
    bar.finish_and_clear();
    result
}

/// Import the file `name` whose elements (big-endian with `big_endian`)
/// start at `start` in boxes (see the module's description).
fn import_file(
    name: &str,
    mut file: File,
    start: u64,
    big_endian: bool,
    target: &Target,
    limits: Limits,
) -> CliResult<u8> {
    let ds = target.ds;
    let dims = ds.attributes().dimensions.clone();
    let elem = ds.data_type().size() as u64;
    // The unit written whole: the shard, else the block.
    let all = boxes(&dims, &ds.shard_shape(), elem, limits.box_bytes);
    let count = all.len() as u64;
    pipelined(
        name,
        all.into_iter(),
        count,
        big_endian,
        target,
        |b, buf| read_box(&mut file, start, &dims, elem, b, buf),
    )?;
    Ok(EXIT_OK)
}

/// A stream to import: standard input, a pipe or a TIFF stack, at the
/// first element.
struct Stream {
    /// The stream.
    input: Box<dyn Read + Send>,
    /// Whether its elements are big-endian.
    big_endian: bool,
    /// Whether it is a .npy file (which must end with the data).
    is_npy: bool,
}

/// The pieces a stream of an array is read in, each a run of the stream
/// (see [`stream_pieces`]): at offset `k * step` along dimension `along`
/// (whole in the dimensions below it, one element thick in those above),
/// in stream order.
struct StreamPieces {
    shape: Vec<u64>,
    along: usize,
    step: u64,
    /// Pieces along `along` for each position of the dimensions above.
    per_line: u64,
    next: u64,
    count: u64,
}

impl Iterator for StreamPieces {
    type Item = Piece;

    fn next(&mut self) -> Option<Piece> {
        if self.next == self.count {
            return None;
        }
        let (mut rest, k) = (self.next / self.per_line, self.next % self.per_line);
        self.next += 1;
        let mut offset = vec![0; self.shape.len()];
        let mut shape = self.shape.clone();
        offset[self.along] = k * self.step;
        shape[self.along] = self.step.min(self.shape[self.along] - offset[self.along]);
        for d in self.along + 1..self.shape.len() {
            offset[d] = rest % self.shape[d];
            rest /= self.shape[d];
            shape[d] = 1;
        }
        Some(Piece { offset, shape })
    }
}

/// The pieces a stream of an array of shape `shape` (N5 order) is read in:
/// slabs along the slowest dimension whole write units thick (`unit`
/// along that dimension), else whole blocks thick (`block`) when a slab
/// of units would pass the stream limit, as many as fit in the slab bytes
/// of `elem`-byte elements; when even a slab one block thick would pass
/// the limit, runs of the stream of at most the limit (planes, else rows,
/// else parts of a row), blocks then merged from several. Memory is
/// bounded by the limit whatever the shape.
fn stream_pieces(shape: &[u64], unit: u64, block: u64, elem: u64, limits: Limits) -> StreamPieces {
    let n = shape.len();
    let max = limits.stream_slab_max;
    let plane = shape[..n - 1].iter().product::<u64>().saturating_mul(elem);
    // A unit or block deeper than the array is as thick as the array.
    let (unit, block) = (unit.min(shape[n - 1]), block.min(shape[n - 1]));
    let (along, step) = match [unit, block]
        .into_iter()
        .find(|&t| plane.saturating_mul(t) <= max)
    {
        Some(thick) => {
            let units = (limits.slab_bytes / plane.saturating_mul(thick).max(1)).max(1);
            (n - 1, units.saturating_mul(thick))
        }
        None => {
            // The highest dimension whose lower dimensions fit in the
            // limit, and as much of it as fits.
            let mut along = 0;
            let mut inner = elem;
            while along + 1 < n && inner.saturating_mul(shape[along]) <= max {
                inner *= shape[along];
                along += 1;
            }
            (along, (max / inner.max(1)).max(1))
        }
    };
    let per_line = shape[along].div_ceil(step);
    let count = shape[along + 1..]
        .iter()
        .fold(per_line, |c, &d| c.saturating_mul(d));
    StreamPieces {
        shape: shape.to_vec(),
        along,
        step,
        per_line,
        next: 0,
        count,
    }
}

/// Import the stream `name` in slabs along the slowest dimension (see
/// the module's description).
fn import_stream(name: &str, stream: Stream, target: &Target, limits: Limits) -> CliResult<u8> {
    let Stream {
        mut input,
        big_endian,
        is_npy,
    } = stream;
    let ds = target.ds;
    let attrs = ds.attributes();
    let last = attrs.ndim() - 1;
    let elem = ds.data_type().size() as u64;
    let pieces = stream_pieces(
        &attrs.dimensions,
        ds.shard_shape()[last],
        u64::from(attrs.block_size[last]),
        elem,
        limits,
    );
    let count = pieces.count;
    pipelined(name, pieces, count, big_endian, target, |p, buf| {
        buf.resize((p.shape.iter().product::<u64>() * elem) as usize, 0);
        input.read_exact(buf)
    })?;
    let mut rest = [0u8; 1];
    if is_npy && input.read(&mut rest).at(name)? > 0 {
        return Err(CliError::new(
            name,
            "has more data than its header's shape (the dataset was written from the first part)",
        ));
    }
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boxes_cover_the_array_once_in_whole_units() {
        for (dims, unit, budget) in [
            (vec![10u64, 7, 5], vec![4u64, 3, 2], 1u64),
            (vec![10, 7, 5], vec![4, 3, 2], 4 * 3 * 2 * 2 * 3),
            (vec![10, 7, 5], vec![4, 3, 2], 1 << 30),
            (vec![9], vec![4], 8),
            (vec![3, 3, 3, 3], vec![2, 2, 2, 2], 64),
        ] {
            let all = boxes(&dims, &unit, 1, budget);
            let mut seen = vec![0u8; dims.iter().product::<u64>() as usize];
            for b in &all {
                for d in 0..dims.len() {
                    assert_eq!(b.offset[d] % unit[d], 0, "{b:?}");
                    assert!(
                        b.shape[d] % unit[d] == 0 || b.offset[d] + b.shape[d] == dims[d],
                        "{b:?}"
                    );
                }
                let n: u64 = b.shape.iter().product();
                assert!(
                    n <= budget.max(unit.iter().product()),
                    "{b:?} over {budget}"
                );
                for i in 0..n {
                    let (mut i, mut at, mut stride) = (i, 0u64, 1u64);
                    for (d, &dim) in dims.iter().enumerate() {
                        at += (b.offset[d] + i % b.shape[d]) * stride;
                        i /= b.shape[d];
                        stride *= dim;
                    }
                    seen[at as usize] += 1;
                }
            }
            assert!(seen.iter().all(|&s| s == 1), "{dims:?} {unit:?} {budget}");
            // File order: the boxes' offsets, last dimension slowest, rise.
            let keys: Vec<Vec<u64>> = all
                .iter()
                .map(|b| b.offset.iter().rev().copied().collect())
                .collect();
            assert!(keys.windows(2).all(|w| w[0] < w[1]));
        }
        // A whole array that fits is one box; a budget below one unit
        // still gives whole units.
        assert_eq!(boxes(&[10, 7, 5], &[4, 3, 2], 1, 1 << 30).len(), 1);
        assert_eq!(boxes(&[10, 7, 5], &[4, 3, 2], 1, 1).len(), 3 * 3 * 3);
    }

    #[test]
    fn a_box_reads_its_elements_from_the_file() {
        let dims = [5u64, 4, 3];
        let elem = 2u64;
        let start = 7u64;
        let n: u64 = dims.iter().product();
        let mut bytes = vec![0xAAu8; start as usize];
        for i in 0..n {
            bytes.extend_from_slice(&(i as u16).to_le_bytes());
        }
        let path = std::env::temp_dir().join(format!("n5-import-box-{}", std::process::id()));
        std::fs::write(&path, &bytes).unwrap();
        let mut file = File::open(&path).unwrap();
        let piece = |offset: [u64; 3], shape: [u64; 3]| Piece {
            offset: offset.to_vec(),
            shape: shape.to_vec(),
        };
        for b in [
            piece([1, 1, 1], [3, 2, 2]),
            piece([0, 2, 0], [5, 2, 3]),
            piece([0, 0, 2], [5, 4, 1]),
            piece([4, 3, 2], [1, 1, 1]),
            piece([0, 0, 0], [5, 4, 3]),
        ] {
            let mut out = Vec::new();
            read_box(&mut file, start, &dims, elem, &b, &mut out).unwrap();
            let mut want = Vec::new();
            for z in 0..b.shape[2] {
                for y in 0..b.shape[1] {
                    for x in 0..b.shape[0] {
                        let i = (b.offset[0] + x)
                            + dims[0] * ((b.offset[1] + y) + dims[1] * (b.offset[2] + z));
                        want.extend_from_slice(&(i as u16).to_le_bytes());
                    }
                }
            }
            assert_eq!(out, want, "{b:?}");
        }
        std::fs::remove_file(&path).unwrap();
    }

    /// Every path of the import into a sharded Zarr v3 array of 37 x 29 x
    /// 11 uint16 (inner chunks 8 x 8 x 4, shards 16 x 16 x 8): a file in
    /// boxes of one shard and of the whole array, big-endian and not, and
    /// a stream in slabs of whole shards and (past the stream limit) of
    /// whole blocks, planes or rows, shards then merged from several.
    #[test]
    fn imports_write_every_element_whatever_the_limits() {
        use n5::{Container, Options};
        let dims = [37u64, 29, 11];
        let n: u64 = dims.iter().product();
        let values: Vec<u16> = (0..n).map(|i| (i * 7 % 65521) as u16).collect();
        let le: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let be: Vec<u8> = values.iter().flat_map(|v| v.to_be_bytes()).collect();
        let dir = std::env::temp_dir().join(format!("n5-import-limits-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let options = Options {
            format: Some(Format::Zarr3),
            ..Options::default()
        };
        let root = dir.join("t.zarr");
        let c = Container::open_with(root.to_str().unwrap(), Mode::Create, options).unwrap();
        let attrs = DatasetAttributes::new(
            dims.to_vec(),
            vec![8, 8, 4],
            DataType::U16,
            n5::Compression::Raw,
        )
        .unwrap();
        let shard = [16u64, 16, 8];
        let new = NewArray {
            shard: Some(&shard),
            fill: &[0, 0],
            dimension_names: None,
            hdf5_shards: false,
        };
        let document = new_document(Format::Zarr3, &attrs, &new).unwrap();
        let tiny = |box_bytes, stream_slab_max| Limits {
            box_bytes,
            slab_bytes: 1,
            stream_slab_max,
        };
        let mut case = 0;
        let mut check = |import: &dyn Fn(&Target) -> CliResult<u8>| {
            case += 1;
            let path = format!("a{case}");
            let ds = c.create_dataset_json(&path, &document).unwrap();
            let target = Target {
                owns: None,
                s0: None,
                ds: &ds,
                arg: &path,
                quiet: true,
            };
            assert_eq!(import(&target).unwrap(), EXIT_OK, "case {case}");
            let mut back = vec![0u8; le.len()];
            ds.read_region(&[0, 0, 0], &dims, &mut back).unwrap();
            let back: Vec<u16> = back
                .chunks_exact(2)
                .map(|b| u16::from_ne_bytes([b[0], b[1]]))
                .collect();
            assert!(back == values, "case {case}");
        };
        for (bytes, big) in [(&le, false), (&be, true)] {
            let file = dir.join("in.raw");
            let mut with_header = vec![7u8; 13];
            with_header.extend_from_slice(bytes);
            std::fs::write(&file, &with_header).unwrap();
            for budget in [1, 1 << 30] {
                check(&|t| {
                    let f = File::open(&file).unwrap();
                    import_file("in.raw", f, 13, big, t, tiny(budget, 1 << 30))
                });
            }
            // Slabs of shards, of blocks, of planes, of rows (a plane is
            // 37 * 29 * 2 = 2146 bytes; blocks are 4 planes, shards 8).
            for slab_max in [1 << 30, 10_000, 3000, 500] {
                check(&|t| {
                    let s = Stream {
                        input: Box::new(std::io::Cursor::new(bytes.clone())),
                        big_endian: big,
                        is_npy: false,
                    };
                    import_stream("-", s, t, tiny(1, slab_max))
                });
            }
        }
        // A stream that ends early names the input.
        let ds = c.create_dataset_json("short", &document).unwrap();
        let target = Target {
            owns: None,
            s0: None,
            ds: &ds,
            arg: "short",
            quiet: true,
        };
        let s = Stream {
            input: Box::new(std::io::Cursor::new(le[..le.len() - 1].to_vec())),
            big_endian: false,
            is_npy: false,
        };
        let e = import_stream("-", s, &target, LIMITS).unwrap_err();
        assert!(e.to_string().contains("ends before the data"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn stream_pieces_are_the_stream_in_order_within_the_limit() {
        let shape = [37u64, 29, 11];
        let elem = 2u64;
        let plane = 37 * 29 * elem;
        for (max, along) in [
            (1u64 << 30, 2),
            (10_000, 2),
            (3000, 2),
            (500, 1),
            (50, 0),
            (1, 0),
        ] {
            let limits = Limits {
                box_bytes: 1,
                slab_bytes: 16 << 20,
                stream_slab_max: max,
            };
            let pieces = stream_pieces(&shape, 8, 4, elem, limits);
            let count = pieces.count;
            let all: Vec<Piece> = pieces.collect();
            assert_eq!(all.len() as u64, count);
            let mut at = 0u64;
            for p in &all {
                // Each piece starts where the last ended, in the stream.
                let start = p.offset[0] + 37 * (p.offset[1] + 29 * p.offset[2]);
                assert_eq!(start, at, "{max}: {p:?}");
                let n: u64 = p.shape.iter().product();
                at += n;
                let whole = (0..along).all(|d| p.shape[d] == shape[d]);
                assert!(
                    whole && p.shape[along + 1..].iter().all(|&s| s == 1),
                    "{p:?}"
                );
                if max < plane * 4 {
                    assert!(n * elem <= max.max(elem), "{max}: {p:?}");
                }
            }
            assert_eq!(at, 37 * 29 * 11, "{max}");
        }
        // Whole shards, else whole blocks, when such slabs fit.
        let limits = |max| Limits {
            box_bytes: 1,
            slab_bytes: 1,
            stream_slab_max: max,
        };
        assert_eq!(stream_pieces(&shape, 8, 4, elem, limits(1 << 30)).step, 8);
        assert_eq!(stream_pieces(&shape, 8, 4, elem, limits(10_000)).step, 4);
        assert_eq!(stream_pieces(&shape, 8, 4, elem, limits(3000)).step, 1);
        // A shard deeper than the array is as thick as the array.
        assert_eq!(stream_pieces(&shape, 64, 32, elem, limits(30_000)).step, 11);
    }

    /// A write that fails stops the import with its error, and the reader
    /// with it, however many pieces are left to read.
    #[test]
    fn a_failed_write_stops_the_import() {
        use n5::{Container, Options};
        let dir = std::env::temp_dir().join(format!("n5-import-fails-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let root = dir.join("t.n5");
        let root = root.to_str().unwrap();
        let attrs = DatasetAttributes::new(
            vec![16, 16, 16],
            vec![4, 4, 4],
            DataType::U8,
            n5::Compression::Raw,
        )
        .unwrap();
        Container::open(root, Mode::Create)
            .unwrap()
            .create_dataset("a", attrs)
            .unwrap();
        // Opened to read: every write fails.
        let c = Container::open_with(root, Mode::Read, Options::default()).unwrap();
        let ds = c.open_dataset("a").unwrap();
        let input = dir.join("in.raw");
        std::fs::write(&input, vec![1u8; 16 * 16 * 16]).unwrap();
        // A thread of its own, left behind if the import never ends.
        let (done, finished) = mpsc::channel();
        let reader = input.clone();
        std::thread::spawn(move || {
            let target = Target {
                owns: None,
                s0: None,
                ds: &ds,
                arg: "a",
                quiet: true,
            };
            let tiny = Limits {
                box_bytes: 1,
                slab_bytes: 1,
                stream_slab_max: 1,
            };
            let file = File::open(&reader).unwrap();
            let from_file = import_file("in.raw", file, 0, false, &target, tiny);
            let s = Stream {
                input: Box::new(File::open(&reader).unwrap()),
                big_endian: false,
                is_npy: false,
            };
            let from_stream = import_stream("-", s, &target, tiny);
            done.send((from_file.is_err(), from_stream.is_err()))
                .unwrap();
        });
        let got = finished.recv_timeout(std::time::Duration::from_secs(60));
        assert_eq!(
            got,
            Ok((true, true)),
            "the import did not stop with an error"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
