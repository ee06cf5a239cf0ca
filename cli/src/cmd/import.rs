//! `n5 import`: a raw little-endian file (with `--dtype` and `--shape`) or a
//! `.npy` file into a new dataset with the block size and compression asked
//! for, streamed in slabs of whole blocks along the slowest dimension and
//! written in parallel by the container's threads.
//!
//! TIFF stacks are not imported: convert them to .npy first (for example
//! with Python's tifffile and numpy).

use std::fs::File;
use std::io::{BufReader, Read};

use clap::Args;
use n5::{DataType, DatasetAttributes, Mode};

use crate::error::{At, CliError, CliResult, EXIT_OK};
use crate::location::Location;
use crate::output::progress;
use crate::{npy, spec, work, Global};

/// Arguments of `n5 import`.
#[derive(Args, Debug)]
pub struct ImportArgs {
    /// The input: a .npy file, or raw little-endian elements, dimension 0
    /// fastest (`-` reads standard input).
    pub input: String,
    /// The new dataset (CONTAINER.n5/PATH/TO/DATASET); the container is
    /// created when missing.
    pub dest: String,
    /// Element type of a raw input (uint8 ... float64, or u1, u16, f4...).
    #[arg(long, value_name = "TYPE")]
    pub dtype: Option<String>,
    /// Shape of a raw input, N5 order (dimension 0, the fastest, first).
    #[arg(long, value_name = "LIST")]
    pub shape: Option<String>,
    /// Block size, N5 order; default 64 in every dimension (clipped to the shape).
    #[arg(long, short, value_name = "LIST")]
    pub block_size: Option<String>,
    /// Compression: gzip, zlib, zstd, bzip2, xz, lz4, blosc, raw, NAME:LEVEL,
    /// or JSON such as '{"type":"gzip","level":-1}'.
    #[arg(long, short, default_value = "gzip", value_name = "SPEC")]
    pub compression: String,
    /// Read the input as raw data even when it ends in .npy.
    #[arg(long)]
    pub raw: bool,
}

/// Bytes written per slab (at least one block thick along the slowest
/// dimension; small enough for the progress bar to move).
const SLAB_BYTES: u64 = 16 << 20;

/// Convert elements of `elem` bytes stored little-endian (or big-endian
/// with `big`) to native order in place.
fn to_native(data: &mut [u8], elem: usize, big: bool) {
    if elem > 1 && (big != cfg!(target_endian = "big")) {
        for c in data.chunks_exact_mut(elem) {
            c.reverse();
        }
    }
}

/// `n5 import INPUT DEST`.
pub fn import(a: &ImportArgs, g: &Global) -> CliResult<u8> {
    let compression = spec::compression(&a.compression)?;
    let (mut input, input_len): (Box<dyn Read>, Option<u64>) = if a.input == "-" {
        (Box::new(std::io::stdin().lock()), None)
    } else {
        let f = File::open(&a.input).at(&a.input)?;
        let len = f.metadata().at(&a.input)?.len();
        (Box::new(BufReader::with_capacity(1 << 20, f)), Some(len))
    };
    let is_npy = !a.raw && a.input.to_ascii_lowercase().ends_with(".npy");
    let (data_type, shape, big_endian): (DataType, Vec<u64>, bool) =
        if is_npy {
            let h = npy::read_header(&mut input).map_err(|m| CliError::new(&a.input, m))?;
            if let Some(d) = &a.dtype {
                if spec::data_type(d)? != h.data_type {
                    return Err(CliError::usage(
                        "--dtype",
                        format!("the .npy file holds {}, not {d}", h.data_type),
                    ));
                }
            }
            if let Some(s) = &a.shape {
                if spec::list("--shape", s)? != h.shape {
                    return Err(CliError::usage(
                        "--shape",
                        format!(
                            "the .npy file has the N5 shape {:?} (its own shape reversed), not {s}",
                            h.shape
                        ),
                    ));
                }
            }
            (h.data_type, h.shape, h.big_endian)
        } else {
            let dtype = a.dtype.as_deref().ok_or_else(|| {
                CliError::usage(&a.input, "a raw input needs --dtype and --shape")
            })?;
            let shape = a.shape.as_deref().ok_or_else(|| {
                CliError::usage(&a.input, "a raw input needs --dtype and --shape")
            })?;
            let t = spec::data_type(dtype)?;
            let s = spec::list("--shape", shape)?;
            let want = s
                .iter()
                .try_fold(t.size() as u64, |acc, &d| acc.checked_mul(d))
                .ok_or_else(|| CliError::usage("--shape", "the shape is too large"))?;
            if let Some(len) = input_len {
                if len != want {
                    return Err(CliError::new(
                        &a.input,
                        format!(
                            "has {len} bytes but {} elements of {t} in shape {s:?} need {want}",
                            want / t.size() as u64
                        ),
                    ));
                }
            }
            (t, s, false)
        };
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
    let loc = Location::parse(&a.dest, g)?;
    if loc.inner.is_empty() {
        return Err(CliError::usage(
            &a.dest,
            "name the dataset inside the container, e.g. vol.n5/raw",
        ));
    }
    let c = loc.open_n5(Mode::Create, work::threads(g.threads), "import")?;
    let ds = c.create_dataset(&loc.inner, attrs).at(&loc.arg)?;

    let elem = data_type.size() as u64;
    let last = shape.len() - 1;
    if shape.contains(&0) {
        return Ok(EXIT_OK);
    }
    let plane = shape[..last].iter().product::<u64>() * elem;
    let thick = block[last] as u64;
    let blocks_per_slab = (SLAB_BYTES / (plane * thick).max(1)).max(1);
    let slab_planes = blocks_per_slab * thick;
    let bar = progress(shape[last], "import", g.quiet);
    let mut buf = Vec::new();
    let mut start = 0;
    while start < shape[last] {
        let n = slab_planes.min(shape[last] - start);
        buf.resize((plane * n) as usize, 0);
        input.read_exact(&mut buf).map_err(|e| {
            CliError::new(
                &a.input,
                if e.kind() == std::io::ErrorKind::UnexpectedEof {
                    "ends before the data its shape needs".to_string()
                } else {
                    e.to_string()
                },
            )
        })?;
        to_native(&mut buf, elem as usize, big_endian);
        let mut offset = vec![0; shape.len()];
        offset[last] = start;
        let mut s = shape.clone();
        s[last] = n;
        ds.write_region(&offset, &s, &buf).at(&loc.arg)?;
        start += n;
        bar.inc(n);
    }
    bar.finish_and_clear();
    let mut rest = [0u8; 1];
    if is_npy && input.read(&mut rest).at(&a.input)? > 0 {
        return Err(CliError::new(
            &a.input,
            "has more data than its header's shape (the dataset was written from the first part)",
        ));
    }
    Ok(EXIT_OK)
}
