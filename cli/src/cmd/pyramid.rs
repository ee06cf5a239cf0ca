//! `n5 pyramid SRC DST`: the multiscale pyramid of a numeric dataset (its
//! flags turned into the library's pyramid options, the destination's
//! format chosen as `n5 cp` chooses it, progress bars per level, the
//! result line or JSON, and the exit codes of pyramid.md: 2 for options
//! that do not fit, 4 for a `--finalize` that comes too early).

use clap::Args;
use n5::format::Format;
use n5::pyramid::build::{build, plan, Outcome};
use n5::pyramid::downsample::Method;
use n5::pyramid::plan::{Factors, MinSize, OutFormat, PyramidOptions};
use n5::{ErrorKind, Mode};

use crate::cmd::target::destination_format;
use crate::error::{At, CliError, CliResult, EXIT_ERROR, EXIT_OK, EXIT_USAGE};
use crate::location::Location;
use crate::output::{progress, Out};
use crate::{spec, work, Global};

/// The exit code of `--finalize` before every part has finished.
pub const EXIT_INCOMPLETE: u8 = 4;

/// The options `n5 pyramid`, `n5 cp --pyramid` and `n5 import --pyramid`
/// share.
#[derive(Args, Debug, Default, Clone)]
pub struct PyramidArgs {
    /// stride, mean, median, mode, min or max.
    #[arg(long, value_name = "M")]
    pub method: Option<String>,
    /// Label data: --method mode.
    #[arg(long)]
    pub labels: bool,
    /// Factors from each level to the next: auto, one list (2,2,1) for
    /// every level, or one list per level (2,2,1/2,2,2).
    #[arg(long, value_name = "auto|LIST[/LIST...]")]
    pub factors: Option<String>,
    /// At most N levels in all, s0 included.
    #[arg(long, value_name = "N")]
    pub levels: Option<u32>,
    /// An axis is downsampled only while longer than this (one size, or
    /// one per axis); default: the output block size.
    #[arg(long, value_name = "N|LIST")]
    pub min_size: Option<String>,
    /// Axis names (default: the source's, else x,y,z,c,t cut to the rank).
    #[arg(long, value_name = "LIST")]
    pub axes: Option<String>,
    /// Voxel size of s0 per axis (default: the source's, else 1).
    #[arg(long, value_name = "LIST")]
    pub resolution: Option<String>,
    /// Unit per axis (nm, um, angstrom, s, ...; an empty entry: none).
    #[arg(long, value_name = "LIST")]
    pub units: Option<String>,
    /// Physical position of the centre of s0's first voxel.
    #[arg(long, value_name = "LIST", allow_hyphen_values = true)]
    pub translation: Option<String>,
    /// Build part I of N (0 <= I < N): N processes build one pyramid.
    #[arg(long, value_name = "I/N")]
    pub part: Option<String>,
}

/// Arguments of `n5 pyramid`.
#[derive(Args, Debug)]
pub struct PyramidCmdArgs {
    /// The dataset to build the pyramid of.
    pub src: String,
    /// The group that receives s0 and the levels (the container root for
    /// --format bdv).
    pub dst: String,
    #[command(flatten)]
    pub pyramid: PyramidArgs,
    /// n5 (N5 layout), zarr3 (OME-NGFF 0.5), zarr2 (OME-NGFF 0.4), bdv
    /// (BigDataViewer N5 + dataset.xml); default: as n5 cp, else n5.
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<String>,
    /// Compression of every level (gzip, zstd:19, raw, JSON...); default: the source's.
    #[arg(long, short, value_name = "SPEC")]
    pub compression: Option<String>,
    /// Block (inner chunk) shape of every level, N5 order; default: the source's.
    #[arg(long, short, value_name = "LIST")]
    pub block_size: Option<String>,
    /// Shard shape of every level (Zarr v3 only).
    #[arg(long, value_name = "LIST")]
    pub shard: Option<String>,
    /// Finish a build done in parts (exit 4 while parts are missing).
    #[arg(long)]
    pub finalize: bool,
    /// Print the plan as JSON and write nothing.
    #[arg(long)]
    pub plan: bool,
    /// The result as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// A list of floats (`4,4,40`).
fn floats(what: &str, text: &str) -> CliResult<Vec<f64>> {
    text.split([',', 'x', ' '])
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.trim()
                .parse::<f64>()
                .map_err(|_| CliError::usage(what, format!("'{s}' is not a number")))
        })
        .collect()
}

/// A list of names (`x,y,z`); entries may be empty.
fn names(text: &str) -> Vec<String> {
    text.split(',').map(|s| s.trim().to_string()).collect()
}

/// A library error as the tool reports it: options that do not fit are
/// exit 2, an early `--finalize` exit 4, the rest exit 1. The library's
/// message names the option or path first.
pub fn reported(e: n5::Error) -> CliError {
    let code = match e.kind() {
        ErrorKind::InvalidArgument | ErrorKind::Json => EXIT_USAGE,
        ErrorKind::Incomplete => EXIT_INCOMPLETE,
        _ => EXIT_ERROR,
    };
    CliError {
        path: None,
        message: e.message().to_string(),
        code,
        silent: false,
    }
}

impl PyramidArgs {
    /// The first pyramid option given (besides --part), for commands
    /// where they need --pyramid.
    pub fn pyramid_only_flag(&self) -> Option<&'static str> {
        [
            (self.method.is_some(), "--method"),
            (self.labels, "--labels"),
            (self.factors.is_some(), "--factors"),
            (self.levels.is_some(), "--levels"),
            (self.min_size.is_some(), "--min-size"),
            (self.axes.is_some(), "--axes"),
            (self.resolution.is_some(), "--resolution"),
            (self.units.is_some(), "--units"),
            (self.translation.is_some(), "--translation"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    }

    /// The library's options from these flags plus the ones each command
    /// has of its own.
    pub fn options(
        &self,
        format: Option<OutFormat>,
        compression: Option<&str>,
        block_size: Option<&str>,
        shard: Option<&str>,
        finalize: bool,
        threads: usize,
    ) -> CliResult<PyramidOptions> {
        let mut o = PyramidOptions::default();
        if let Some(m) = &self.method {
            o.method = Method::parse(m).ok_or_else(|| {
                CliError::usage(
                    "--method",
                    format!("unknown method '{m}' (stride, mean, median, mode, min, max)"),
                )
            })?;
        }
        if self.labels {
            if self.method.as_deref().is_some_and(|m| m != "mode") {
                return Err(CliError::usage("--labels", "is --method mode"));
            }
            o.method = Method::Mode;
        }
        if let Some(f) = &self.factors {
            o.factors = Factors::parse(f).map_err(reported)?;
        }
        o.levels = self.levels;
        if let Some(m) = &self.min_size {
            let list = spec::list("--min-size", m).map_err(|_| {
                CliError::usage(
                    "--min-size",
                    format!("'{m}' is not a size or a list of sizes"),
                )
            })?;
            o.min_size = Some(if list.len() == 1 && !m.contains(',') {
                MinSize::All(list[0])
            } else {
                MinSize::PerAxis(list)
            });
        }
        o.format = format;
        o.axes = self.axes.as_deref().map(names);
        o.units = self.units.as_deref().map(|u| {
            names(u)
                .into_iter()
                .map(|n| (!n.is_empty()).then_some(n))
                .collect()
        });
        o.resolution = self
            .resolution
            .as_deref()
            .map(|r| floats("--resolution", r))
            .transpose()?;
        o.translation = self
            .translation
            .as_deref()
            .map(|t| floats("--translation", t))
            .transpose()?;
        o.compression = compression
            .map(spec::compression)
            .transpose()?
            .map(|c| c.to_json());
        o.block_size = block_size
            .map(|b| spec::list("--block-size", b))
            .transpose()?;
        o.shard_shape = shard.map(|s| spec::list("--shard", s)).transpose()?;
        o.threads = threads;
        o.part = self.part.as_deref().map(parse_part).transpose()?;
        o.finalize = finalize;
        if o.part.is_some() && finalize {
            return Err(CliError::usage("--part", "cannot go with --finalize"));
        }
        o.validate_syntax().map_err(reported)?;
        Ok(o)
    }
}

/// `I/N` (`--part`).
pub fn parse_part(text: &str) -> CliResult<(u64, u64)> {
    let bad = || CliError::usage("--part", format!("'{text}' is not I/N with 0 <= I < N"));
    let (i, n) = text.split_once('/').ok_or_else(bad)?;
    let (i, n): (u64, u64) = (
        i.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if n == 0 || i >= n {
        return Err(bad());
    }
    Ok((i, n))
}

/// The output format of a pyramid into `dloc`: `--format`, else as `n5
/// cp` chooses (prefix, container there, suffix), else N5.
pub fn pyramid_format(
    format: Option<&str>,
    dloc: &Location,
) -> CliResult<(Format, Option<OutFormat>)> {
    match format.map(str::to_ascii_lowercase).as_deref() {
        Some("bdv") => Ok((Format::N5, Some(OutFormat::Bdv))),
        Some(f) => {
            let out = OutFormat::parse(f).ok_or_else(|| {
                CliError::usage(
                    "--format",
                    format!("'{f}' is not one of n5, zarr2, zarr3, bdv"),
                )
            })?;
            Ok((destination_format(Some(f), dloc, Format::N5)?, Some(out)))
        }
        None => Ok((destination_format(None, dloc, Format::N5)?, None)),
    }
}

/// Refuses `--format bdv` into a group: BigDataViewer keeps its setups at
/// the container's root.
pub fn check_bdv_root(options: &PyramidOptions, dloc: &Location) -> CliResult<()> {
    if options.format == Some(OutFormat::Bdv) && !dloc.inner.is_empty() {
        return Err(CliError::usage(
            &dloc.arg,
            "--format bdv builds into a container's root, not into a group",
        ));
    }
    Ok(())
}

/// Progress bars per level on stderr (none with `-q`), fed by a build's
/// progress callback.
pub struct LevelBars {
    bars: std::sync::Mutex<Vec<indicatif::ProgressBar>>,
    quiet: bool,
}

impl LevelBars {
    /// No bars yet; `quiet`: none at all.
    pub fn new(quiet: bool) -> LevelBars {
        LevelBars {
            bars: std::sync::Mutex::new(Vec::new()),
            quiet,
        }
    }

    /// Level `level` has `done` of its `total` shards.
    pub fn update(&self, level: usize, done: u64, total: u64) {
        let mut b = self.bars.lock().unwrap_or_else(|p| p.into_inner());
        while b.len() <= level {
            let l = b.len();
            b.push(progress(total, &format!("s{l}"), self.quiet));
        }
        b[level].set_length(total);
        b[level].set_position(done);
        if done == total {
            b[level].finish();
        }
    }
}

/// Prints a build's warnings (unless `-q`) and its result: the line
/// `SRC -> DST: ...`, or the JSON document with `json`.
pub fn report(src: &str, dst: &str, outcome: &Outcome, json: bool, g: &Global) -> CliResult<u8> {
    if !g.quiet {
        for w in &outcome.warnings {
            eprintln!("n5: warning: {w}");
        }
    }
    let mut out = Out::new();
    if json {
        out.json(&outcome.to_json())?;
    } else {
        out.line(&summary(src, dst, outcome))?;
    }
    Ok(EXIT_OK)
}

/// Runs a pyramid build from the dataset at `sloc` into `dloc` and prints
/// its result (shared by `n5 pyramid`, `n5 cp --pyramid` and `n5 import
/// --pyramid`).
pub fn run_build(
    sloc: &Location,
    dloc: &Location,
    dst_format: Format,
    options: &PyramidOptions,
    json: bool,
    g: &Global,
) -> CliResult<u8> {
    let threads = work::threads(g.threads);
    let same = sloc.root == dloc.root;
    check_bdv_root(options, dloc)?;
    // Everything that does not depend on the destination is refused before
    // a container is created there.
    if !same {
        let src = sloc.open(Mode::Read, threads)?;
        if !src.exists(&sloc.inner).at(&sloc.arg)? {
            return Err(CliError::new(&sloc.arg, "no such dataset"));
        }
        plan(&src, &sloc.inner, options, dst_format).map_err(reported)?;
    }
    // A build to finalize is there already.
    let mode = if options.finalize {
        Mode::ReadWrite
    } else {
        Mode::Create
    };
    let dst = match dloc.open_for_copy(mode, threads, dst_format, false) {
        Err(e) if options.finalize => {
            return Err(CliError::new(
                &dloc.arg,
                format!("no pyramid build to finalize ({})", e.message),
            ))
        }
        r => r?,
    };
    let src = if same {
        dst.clone()
    } else {
        sloc.open(Mode::Read, threads)?
    };
    if !src.exists(&sloc.inner).at(&sloc.arg)? {
        return Err(CliError::new(&sloc.arg, "no such dataset"));
    }
    let bars = LevelBars::new(g.quiet);
    let on_progress = |level: usize, done: u64, total: u64| bars.update(level, done, total);
    let outcome = build(
        &src,
        &sloc.inner,
        &dst,
        &dloc.inner,
        options,
        Some(&on_progress),
    )
    .map_err(reported)?;
    drop(bars);
    report(&sloc.arg, &dloc.arg, &outcome, json, g)
}

/// The result line: `SRC -> DST: 5 levels (s0..s4), 312 shards written,
/// 0 already identical` (a part: `…: part 1/3: …; parts done 2/3`).
fn summary(src: &str, dst: &str, o: &Outcome) -> String {
    let n = o.levels.len();
    let counts = format!(
        "{} written, {} already identical",
        crate::output::count(o.written as usize, "shard"),
        o.identical
    );
    let mut line = match o.part {
        Some((i, parts)) => format!(
            "{src} -> {dst}: part {i}/{parts}: {counts}; parts done {}/{parts}",
            o.parts_done
        ),
        None => format!(
            "{src} -> {dst}: {} (s0..s{}), {counts}",
            crate::output::count(n, "level"),
            n.saturating_sub(1)
        ),
    };
    if o.finalized && o.part.is_some() {
        line.push_str("; finalized");
    }
    line
}

/// `n5 pyramid`.
pub fn pyramid(a: &PyramidCmdArgs, g: &Global) -> CliResult<u8> {
    let sloc = Location::parse(&a.src, g)?;
    let dloc = Location::parse(&a.dst, g)?;
    let (dst_format, out) = pyramid_format(a.format.as_deref(), &dloc)?;
    if a.plan && (a.finalize || a.pyramid.part.is_some()) {
        return Err(CliError::usage(
            "--plan",
            "cannot go with --part or --finalize",
        ));
    }
    let options = a.pyramid.options(
        out,
        a.compression.as_deref(),
        a.block_size.as_deref(),
        a.shard.as_deref(),
        a.finalize,
        g.threads,
    )?;
    if a.plan {
        let src = sloc.open(Mode::Read, 1)?;
        let p = plan(&src, &sloc.inner, &options, dst_format).map_err(reported)?;
        let mut out = Out::new();
        out.json(&p.to_json())?;
        return Ok(EXIT_OK);
    }
    run_build(&sloc, &dloc, dst_format, &options, a.json, g)
}
