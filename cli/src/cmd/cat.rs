//! `n5 cat`: a region of a dataset written as raw little-endian bytes (N5
//! order, dimension 0 fastest; every type with a binary layout), as a
//! `.npy` file, as JSON lines (one element per line, the default for
//! strings, bytes and object references) or as one JSON array (`--json`;
//! references normalised), to standard output or a file, read slab by
//! slab so that memory stays bounded.

use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};

use clap::{Args, ValueEnum};
use n5::{DataType, Mode};

use crate::cmd::common::open_dataset;
use crate::error::{At, CliError, CliResult, EXIT_OK};
use crate::location::Location;
use crate::output::progress;
use crate::{npy, spec, work, Global};

/// Output formats of `n5 cat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Elements as little-endian bytes, dimension 0 fastest, no header.
    Raw,
    /// A NumPy .npy file (C order, shape = the N5 shape reversed).
    Npy,
    /// One element per line as JSON, N5 order (the default for strings,
    /// bytes, fixed strings and object references).
    Lines,
    /// One JSON array of the elements, N5 order (as `--json`).
    Json,
}

/// Arguments of `n5 cat`.
#[derive(Args, Debug)]
pub struct CatArgs {
    /// The dataset (CONTAINER/PATH/TO/DATASET).
    pub path: String,
    /// Start of the region, N5 order (dimension 0 first), e.g. 0,0,10; default all zeros.
    #[arg(long, value_name = "LIST")]
    pub offset: Option<String>,
    /// Extent of the region, N5 order, e.g. 512,512,1; default up to the end.
    #[arg(long, value_name = "LIST")]
    pub shape: Option<String>,
    /// Output format; default npy when -o ends in .npy, else lines for
    /// strings, bytes and references, raw otherwise.
    #[arg(long, short, value_enum)]
    pub format: Option<Format>,
    /// Print the elements as one JSON array (same as -f json).
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Write to FILE instead of standard output.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<String>,
}

/// Bytes read per slab of the region (at least one plane of the slowest dimension).
const SLAB_BYTES: u64 = 64 << 20;

/// Convert native-order elements of `t` to little-endian in place (each
/// number, half of a complex, UTF-32 code unit and struct field).
pub fn native_to_le(data: &mut [u8], t: &DataType) {
    if cfg!(target_endian = "big") {
        t.swap_in_place(data);
    }
}

/// Whether `cat` shows the elements of a dataset of `t` as JSON lines
/// unless told otherwise: text, bytes and references.
fn text_like(t: &DataType, reference: bool) -> bool {
    reference
        || !t.has_layout()
        || matches!(t, DataType::FixedUtf32 { .. } | DataType::FixedBytes { .. })
}

/// `n5 cat PATH/DATASET`.
pub fn cat(a: &CatArgs, g: &Global) -> CliResult<u8> {
    let loc = Location::parse(&a.path, g)?;
    let c = loc.open(Mode::Read, work::threads(g.threads))?;
    let ds = open_dataset(&c, &loc)?;
    let attrs = ds.attributes();
    let t = attrs.data_type.clone();
    let reference = crate::cmd::ls::is_reference(ds.dtype_json().ok().as_ref());
    let ndim = attrs.ndim();
    let offset = match &a.offset {
        Some(t) => spec::list("--offset", t)?,
        None => vec![0; ndim],
    };
    if offset.len() != ndim {
        return Err(CliError::usage(
            "--offset",
            format!(
                "has {} values but the dataset has {ndim} dimensions",
                offset.len()
            ),
        ));
    }
    let shape = match &a.shape {
        Some(t) => spec::list("--shape", t)?,
        None => attrs
            .dimensions
            .iter()
            .zip(&offset)
            .map(|(&d, &o)| d.saturating_sub(o))
            .collect(),
    };
    if shape.len() != ndim {
        return Err(CliError::usage(
            "--shape",
            format!(
                "has {} values but the dataset has {ndim} dimensions",
                shape.len()
            ),
        ));
    }
    for d in 0..ndim {
        if offset[d]
            .checked_add(shape[d])
            .is_none_or(|end| end > attrs.dimensions[d])
        {
            return Err(CliError::usage(
                &loc.arg,
                format!(
                    "the region at {:?} of shape {:?} leaves the dataset's dimensions {:?}",
                    offset, shape, attrs.dimensions
                ),
            ));
        }
    }
    let format = match (a.json, a.format) {
        (true, _) => Format::Json,
        (_, Some(f)) => f,
        _ => match &a.output {
            Some(o) if o.to_ascii_lowercase().ends_with(".npy") => Format::Npy,
            _ if text_like(&t, reference) => Format::Lines,
            _ => Format::Raw,
        },
    };
    let binary = matches!(format, Format::Raw | Format::Npy);
    if binary && !t.has_layout() {
        return Err(CliError::usage(
            &loc.arg,
            format!(
                "{t} elements have no fixed size, so there is no {} form of them; use -f lines or --json",
                if format == Format::Npy { ".npy" } else { "raw" }
            ),
        ));
    }
    let (mut sink, sink_name): (Box<dyn Write>, String) = match &a.output {
        Some(path) if path != "-" => (
            Box::new(BufWriter::new(File::create(path).at(path)?)),
            path.clone(),
        ),
        _ => {
            if binary && std::io::stdout().is_terminal() {
                return Err(CliError::usage(
                    &loc.arg,
                    "refusing to write binary data to a terminal; use -o FILE or redirect the output",
                ));
            }
            (
                Box::new(BufWriter::with_capacity(1 << 20, std::io::stdout().lock())),
                "standard output".to_string(),
            )
        }
    };
    if format == Format::Npy {
        npy::write_header(&mut sink, &t, &shape).at(&sink_name)?;
    }
    if format == Format::Json {
        sink.write_all(b"[").at(&sink_name)?;
    }
    // Bytes per element a slab is sized by (a guess for variable lengths).
    let elem = match t.element_size() {
        0 => 64,
        n => n,
    };
    let mut first = true;
    let mut emit = |sink: &mut Box<dyn Write>, o: &[u64], s: &[u64]| -> CliResult<()> {
        match format {
            Format::Raw | Format::Npy => {
                let n: u64 = s.iter().product();
                let mut buf = vec![0u8; n as usize * elem];
                ds.read_region(o, s, &mut buf).at(&loc.arg)?;
                native_to_le(&mut buf, &t);
                sink.write_all(&buf).at(&sink_name)
            }
            Format::Lines | Format::Json => {
                let text = ds.read_region_json(o, s).at(&loc.arg)?;
                let values: Vec<serde_json::Value> = serde_json::from_str(&text)
                    .map_err(|e| CliError::new(&loc.arg, format!("the library's JSON: {e}")))?;
                for v in values {
                    let line = v.to_string();
                    if format == Format::Lines {
                        sink.write_all(line.as_bytes()).at(&sink_name)?;
                        sink.write_all(b"\n").at(&sink_name)?;
                    } else {
                        if !first {
                            sink.write_all(b", ").at(&sink_name)?;
                        }
                        sink.write_all(line.as_bytes()).at(&sink_name)?;
                    }
                    first = false;
                }
                Ok(())
            }
        }
    };
    let empty = shape.contains(&0);
    if ndim == 0 {
        emit(&mut sink, &[], &[])?;
    } else if !empty {
        // Slabs along the slowest dimension, each a whole number of planes.
        let last = ndim - 1;
        let plane: u64 = shape[..last].iter().product::<u64>() * elem as u64;
        let planes_per_slab = (SLAB_BYTES / plane.max(1)).clamp(1, shape[last]);
        let bar = progress(shape[last], "cat", g.quiet);
        let mut start = 0;
        while start < shape[last] {
            let n = planes_per_slab.min(shape[last] - start);
            let mut o = offset.clone();
            o[last] += start;
            let mut s = shape.clone();
            s[last] = n;
            emit(&mut sink, &o, &s)?;
            start += n;
            bar.inc(n);
        }
        bar.finish_and_clear();
    }
    if format == Format::Json {
        sink.write_all(b"]\n").at(&sink_name)?;
    }
    sink.flush().at(&sink_name)?;
    Ok(EXIT_OK)
}
