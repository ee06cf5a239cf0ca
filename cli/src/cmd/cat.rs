//! `n5 cat`: a region of a dataset written as raw little-endian bytes (N5
//! order, dimension 0 fastest) or as a `.npy` file, to standard output or
//! a file, read slab by slab so that memory stays bounded.

use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};

use clap::{Args, ValueEnum};
use n5::Mode;

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
    /// Output format; default npy when -o ends in .npy, raw otherwise.
    #[arg(long, short, value_enum)]
    pub format: Option<Format>,
    /// Write to FILE instead of standard output.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<String>,
}

/// Bytes read per slab of the region (at least one plane of the slowest dimension).
const SLAB_BYTES: u64 = 64 << 20;

/// Convert native-order elements of `elem` bytes to little-endian in place.
pub fn native_to_le(data: &mut [u8], elem: usize) {
    if cfg!(target_endian = "big") && elem > 1 {
        for c in data.chunks_exact_mut(elem) {
            c.reverse();
        }
    }
}

/// `n5 cat PATH/DATASET`.
pub fn cat(a: &CatArgs, g: &Global) -> CliResult<u8> {
    let loc = Location::parse(&a.path, g)?;
    let c = loc.open(Mode::Read, work::threads(g.threads))?;
    let ds = open_dataset(&c, &loc)?;
    let attrs = ds.attributes();
    if !attrs.data_type.is_numeric() {
        return Err(CliError::new(
            &loc.arg,
            format!(
                "{} datasets have no array to write (cat reads numeric data)",
                attrs.data_type
            ),
        ));
    }
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
    let format = a.format.unwrap_or(match &a.output {
        Some(o) if o.to_ascii_lowercase().ends_with(".npy") => Format::Npy,
        _ => Format::Raw,
    });
    let (mut sink, sink_name): (Box<dyn Write>, String) = match &a.output {
        Some(path) if path != "-" => (
            Box::new(BufWriter::new(File::create(path).at(path)?)),
            path.clone(),
        ),
        _ => {
            if std::io::stdout().is_terminal() {
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
    let elem = attrs.data_type.size();
    if format == Format::Npy {
        npy::write_header(&mut sink, attrs.data_type.clone(), &shape).at(&sink_name)?;
    }
    let empty = shape.contains(&0);
    if !empty {
        // Slabs along the slowest dimension, each a whole number of planes.
        let last = ndim - 1;
        let plane: u64 = shape[..last].iter().product::<u64>() * elem as u64;
        let planes_per_slab = (SLAB_BYTES / plane.max(1)).clamp(1, shape[last]);
        let bar = progress(shape[last], "cat", g.quiet);
        let mut start = 0;
        let mut buf = Vec::new();
        while start < shape[last] {
            let n = planes_per_slab.min(shape[last] - start);
            let mut o = offset.clone();
            o[last] += start;
            let mut s = shape.clone();
            s[last] = n;
            buf.resize((plane * n) as usize, 0);
            ds.read_region(&o, &s, &mut buf).at(&loc.arg)?;
            native_to_le(&mut buf, elem);
            sink.write_all(&buf).at(&sink_name)?;
            start += n;
            bar.inc(n);
        }
        bar.finish_and_clear();
    }
    sink.flush().at(&sink_name)?;
    Ok(EXIT_OK)
}
