//! The build of a pyramid (pyramid.md): reads the source, resolves the
//! plan, creates the group and the level arrays, writes `s0` and each level
//! from the stored level before it shard by shard on the container's
//! threads, and finalises (the metadata of the output format). A build in
//! parts (`part: [I, N]`) writes the shards of its columns and records
//! itself in the group's `libn5_pyramid` attribute; the part that completes
//! the set, or a call with `finalize`, builds the levels above the columns
//! and writes the metadata. Shards already stored with the same contents
//! are not written again, so retried and repeated builds converge. A
//! caller may write `s0` itself ([`begin_written`]: an import that places
//! what it reads straight into `s0`'s layout), the build doing the rest.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use serde_json::{json, Map, Value};

use super::downsample::downsample;
use super::grid::{input_region, s0_pieces, shard_region, slabs, Region, S0Piece, SLAB_BYTES};
use super::meta;
use super::plan::{OutFormat, Plan, PyramidOptions, SourceInfo, Stack};
use crate::container::Container;
use crate::dataset::Dataset;
use crate::dtype::DataType;
use crate::error::{Error, ErrorKind, Result};
use crate::format::Format;
use crate::metadata::DatasetAttributes;
use crate::path;
use crate::Compression;

/// The group attribute that holds a build's bookkeeping until it is
/// finalised.
pub const BOOKKEEPING: &str = "libn5_pyramid";

/// What a build did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outcome {
    /// The levels: path (relative to the group), shape, factors from `s0`
    /// and the number of shards (in all stacks).
    pub levels: Vec<(String, Vec<u64>, Vec<u64>, u64)>,
    /// Shards written.
    pub written: u64,
    /// Shards whose stored contents were already what the build computed.
    pub identical: u64,
    /// `(I, N)` of a build in parts.
    pub part: Option<(u64, u64)>,
    /// How many parts have finished (with this one).
    pub parts_done: u64,
    /// Whether this call finalised the pyramid.
    pub finalized: bool,
    /// What is worth telling about the plan (factors that are not powers
    /// of two, source units left out).
    pub warnings: Vec<String>,
}

impl Outcome {
    /// The `--json` document of the tool.
    pub fn to_json(&self) -> Value {
        json!({
            "levels": self.levels.iter().map(|(p, s, f, n)| json!({"path": p, "shape": s, "factors": f, "shards": n})).collect::<Vec<_>>(),
            "written": self.written,
            "identical": self.identical,
            "part": self.part.map(|(i, n)| json!([i, n])),
            "partsDone": self.parts_done,
            "finalized": self.finalized,
        })
    }
}

/// Progress of a build: `(level, shards done, shards of the level in this
/// call)`, after each shard.
pub type Progress<'a> = &'a (dyn Fn(usize, u64, u64) + Sync);

/// The source of a pyramid, read once.
struct Source {
    dataset: Dataset,
    info: SourceInfo,
    /// The source's user attributes besides the ones the levels describe.
    other_attributes: Map<String, Value>,
}

/// Keys of a source's attributes that the pyramid metadata replaces
/// rather than copies to the group.
const DESCRIBED: [&str; 9] = [
    "axes",
    "units",
    "resolution",
    "pixelResolution",
    "dimension_units",
    "_ARRAY_DIMENSIONS",
    "downsamplingFactors",
    "transform",
    BOOKKEEPING,
];

/// Opens the source dataset and reads what the plan needs from it.
fn source(src: &Container, src_path: &str) -> Result<Source> {
    let dataset = src.open_dataset(src_path)?;
    let t = dataset.data_type();
    if !super::downsample::reduces(&t) {
        return Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "{}: a pyramid needs a numeric dataset (uint8..int64, float32, float64), not {}",
                path::display(src_path),
                t.name()
            ),
        ));
    }
    let attrs = src.attributes(dataset.path())?;
    let attrs = attrs.as_object().cloned().unwrap_or_default();
    let shape = dataset.attributes().dimensions.clone();
    // Zarr's axis names, C order, in N5 order.
    let names = dataset
        .metadata()
        .ok()
        .and_then(|doc| doc.get("dimension_names").cloned())
        .or_else(|| attrs.get("_ARRAY_DIMENSIONS").cloned())
        .and_then(|v| {
            let v = v.as_array()?;
            v.iter()
                .rev()
                .map(|n| n.as_str().map(str::to_string))
                .collect::<Option<Vec<String>>>()
        });
    // Zarr's `dimension_units` (as tensorstore and `n5 import` write them)
    // are in C order too.
    let mut described = attrs.clone();
    if matches!(dataset.container().format(), Format::Zarr2 | Format::Zarr3) {
        if let Some(Value::Array(units)) = described.get_mut("dimension_units") {
            units.reverse();
        }
    }
    let mut info = SourceInfo::from_attributes(&shape, &described, names);
    info.name = path::normalize(src_path)
        .ok()
        .and_then(|p| {
            p.rsplit('/')
                .find(|s| !s.is_empty() && !is_level_name(s))
                .map(str::to_string)
        })
        .unwrap_or_default();
    let other_attributes = attrs
        .into_iter()
        .filter(|(k, _)| !DESCRIBED.contains(&k.as_str()))
        .filter(|(k, _)| !crate::metadata::DATASET_KEYS.contains(&k.as_str()))
        .collect();
    Ok(Source {
        dataset,
        info,
        other_attributes,
    })
}

/// Whether `name` is a level's (`s0`, `s12`).
fn is_level_name(name: &str) -> bool {
    name.strip_prefix('s')
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

/// The output format: the option, else the destination's container
/// format (bdv only on N5).
fn out_format(opts: &PyramidOptions, container: Format) -> Result<OutFormat> {
    let native = match container {
        Format::N5 => OutFormat::N5,
        Format::Zarr2 => OutFormat::Zarr2,
        Format::Zarr3 => OutFormat::Zarr3,
        Format::Hdf5 => {
            return Err(Error::new(
                ErrorKind::Unsupported,
                "a pyramid is written into N5 or Zarr, not into an HDF5 file",
            ))
        }
    };
    match opts.format {
        None => Ok(native),
        Some(OutFormat::Bdv) if native == OutFormat::N5 => Ok(OutFormat::Bdv),
        Some(f) if f == native => Ok(f),
        Some(f) => Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "--format: {} does not fit a destination container of format {}",
                f.name(),
                container.name()
            ),
        )),
    }
}

/// The container format an output format is written in (bdv: N5).
pub fn container_format(format: OutFormat) -> Format {
    match format {
        OutFormat::N5 | OutFormat::Bdv => Format::N5,
        OutFormat::Zarr2 => Format::Zarr2,
        OutFormat::Zarr3 => Format::Zarr3,
    }
}

/// The output block and shard shapes in source order: the options, else
/// the source's (its shard shape only into a Zarr v3 destination).
fn out_shapes(src: &Dataset, opts: &PyramidOptions, format: OutFormat) -> (Vec<u64>, Vec<u64>) {
    let block: Vec<u64> = match &opts.block_size {
        Some(b) => b.clone(),
        None => src
            .attributes()
            .block_size
            .iter()
            .map(|&b| u64::from(b))
            .collect(),
    };
    let shard = match (&opts.shard_shape, format) {
        (Some(s), _) => s.clone(),
        (None, OutFormat::Zarr3) if opts.block_size.is_none() => src.shard_shape(),
        _ => block.clone(),
    };
    (block, shard)
}

/// The plan of the pyramid of `src_path` under `opts` into a container of
/// `dst_format` (`n5_pyramid_plan`, `--plan`).
pub fn plan(
    src: &Container,
    src_path: &str,
    opts: &PyramidOptions,
    dst_format: Format,
) -> Result<Plan> {
    opts.validate_syntax()?;
    let s = source(src, src_path)?;
    resolve(&s, opts, dst_format)
}

/// The plan for a source already read.
fn resolve(s: &Source, opts: &PyramidOptions, dst_format: Format) -> Result<Plan> {
    let format = out_format(opts, dst_format)?;
    let (block, shard) = out_shapes(&s.dataset, opts, format);
    Plan::new(&s.info, opts, format, &block, &shard)
}

/// The container-relative path of level `k` of `stack`.
fn level_path(plan: &Plan, group: &str, stack: Stack, k: usize) -> String {
    let name = &plan.levels[k].path;
    match plan.format {
        OutFormat::Bdv => path::join(
            group,
            &format!("setup{}/timepoint{}/{name}", stack.setup, stack.timepoint),
        ),
        _ => path::join(group, name),
    }
}

/// Every stack of the plan (one, except for bdv).
fn stacks(plan: &Plan) -> Vec<Stack> {
    let mut out = Vec::new();
    for setup in 0..plan.bdv_setups() {
        for timepoint in 0..plan.bdv_timepoints() {
            out.push(Stack { setup, timepoint });
        }
    }
    out
}

/// Level `k`'s array: its N5 attributes and its format's metadata document.
fn level_spec(
    plan: &Plan,
    k: usize,
    dtype: &DataType,
    compression: &Compression,
    format: Format,
) -> Result<(DatasetAttributes, Value)> {
    let block = plan
        .block
        .iter()
        .map(|&b| {
            u32::try_from(b).map_err(|_| {
                Error::new(
                    ErrorKind::InvalidArgument,
                    format!("--block-size: {b} is too large"),
                )
            })
        })
        .collect::<Result<Vec<u32>>>()?;
    let attrs = DatasetAttributes::new(
        plan.levels[k].shape.clone(),
        block,
        dtype.clone(),
        compression.clone(),
    )?;
    let mut doc = Container::dataset_document(format, &attrs)?;
    match plan.format {
        OutFormat::Zarr3 => {
            if plan.shard != plan.block {
                Container::shard_document(&mut doc, &plan.block, &plan.shard);
            }
            doc["dimension_names"] = json!(meta::dimension_names(plan));
        }
        OutFormat::Zarr2 => doc["dimension_separator"] = json!("/"),
        OutFormat::N5 | OutFormat::Bdv => {}
    }
    Ok((attrs, doc))
}

/// Whether an existing array is what the plan makes of a level.
fn same_array(have: &Dataset, want: &DatasetAttributes, shard: &[u64]) -> bool {
    let a = have.attributes();
    a.dimensions == want.dimensions
        && a.block_size == want.block_size
        && a.data_type == want.data_type
        && have.nearest_compression() == want.compression
        && have.shard_shape() == shard
}

/// The buffers one worker thread keeps from job to job and from level to
/// level (a build that allocated and freed each box anew spent most of its
/// time faulting in fresh pages).
#[derive(Default)]
struct Scratch {
    /// The output box.
    data: Vec<u8>,
    /// A slab of the level before.
    input: Vec<u8>,
    /// The stored box, compared before a write.
    have: Vec<u8>,
}

/// Sets `buf` to `len` bytes. A buffer that must grow is allocated anew,
/// zeroed by the kernel and not yet touched, rather than grown by writing
/// zeros: a region read into it then backs it with huge pages (one page
/// fault per 2 MiB instead of one per 4 KiB, the largest fixed cost of a
/// short build).
fn fit(buf: &mut Vec<u8>, len: usize) {
    if buf.capacity() < len {
        *buf = vec![0; len];
    } else {
        buf.resize(len, 0);
    }
}

/// A [`Scratch`] lent to one worker thread for one level; it goes back to
/// the build's stash when the thread is done, for the next level's jobs.
struct Lent<'s> {
    scratch: Scratch,
    stash: &'s Mutex<Vec<Scratch>>,
}

impl<'s> Lent<'s> {
    /// A scratch from `stash` (a fresh one when the stash is empty).
    fn from(stash: &'s Mutex<Vec<Scratch>>) -> Lent<'s> {
        let scratch = stash
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop()
            .unwrap_or_default();
        Lent { scratch, stash }
    }
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        let scratch = std::mem::take(&mut self.scratch);
        self.stash
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(scratch);
    }
}

/// A level's array of one stack.
struct LevelArray {
    dataset: Dataset,
    /// Whether it was there before this call: its stored shards are then
    /// compared before they are written.
    existed: bool,
}

/// What the group at the destination holds before a build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Nothing of a pyramid: a new build.
    New,
    /// The bookkeeping of this plan: a build under way.
    UnderWay,
    /// The finished pyramid of this plan: every shard is checked.
    Finished,
}

/// One build.
struct Build<'a> {
    plan: Plan,
    source: Source,
    dst: &'a Container,
    /// The group (the container root for bdv).
    group: String,
    /// `s0` is the source itself.
    in_place: bool,
    /// The caller writes `s0` ([`begin_written`]): the source's data is
    /// never read.
    s0_written: bool,
    format: Format,
    dtype: DataType,
    compression: Compression,
    threads: usize,
    /// The bookkeeping's plan: what a part must agree on.
    fingerprint: Value,
    progress: Option<Progress<'a>>,
    written: AtomicU64,
    identical: AtomicU64,
    /// The worker threads' buffers between levels (at most one per
    /// thread of the build).
    stash: Mutex<Vec<Scratch>>,
}

/// Builds the pyramid of the dataset `src_path` of `src` as the group
/// `dst_path` of `dst` (`n5_pyramid_build`, `n5 pyramid`).
pub fn build(
    src: &Container,
    src_path: &str,
    dst: &Container,
    dst_path: &str,
    opts: &PyramidOptions,
    progress: Option<Progress>,
) -> Result<Outcome> {
    prepare(src, src_path, dst, dst_path, opts, progress, false)?.run(opts)
}

/// A build whose `s0` the caller writes, from [`begin_written`]: the group,
/// its bookkeeping and every level array (`s0` of each stack included)
/// exist; the caller writes `s0` (in a build in parts, the shards
/// [`WrittenBuild::writes`] says are this part's), then
/// [`WrittenBuild::finish`] builds the levels from it and finalises.
pub struct WrittenBuild<'a> {
    build: Build<'a>,
    begun: Begun,
}

impl WrittenBuild<'_> {
    /// The plan (see [`s0_pieces`] for where a box of the source goes).
    pub fn plan(&self) -> &Plan {
        &self.build.plan
    }

    /// The `s0` array of `stack` (`Stack::default()` except for bdv);
    /// `None` for a stack the plan does not have.
    pub fn s0(&self, stack: Stack) -> Option<&Dataset> {
        let plan = &self.build.plan;
        if stack.setup >= plan.bdv_setups() || stack.timepoint >= plan.bdv_timepoints() {
            return None;
        }
        let s = plan.stack_number(stack) as usize;
        self.begun.arrays.get(s).map(|levels| &levels[0].dataset)
    }

    /// Whether the build is one part of several (`opts.part`).
    pub fn in_parts(&self) -> bool {
        self.begun.part.is_some()
    }

    /// Whether this build writes the `s0` shard at grid position `pos` of
    /// `stack`: in a build in parts, whether it lies in one of the part's
    /// columns; else always.
    pub fn writes(&self, stack: Stack, pos: &[u64]) -> bool {
        match self.begun.part {
            Some((i, n)) => self.build.plan.part_of(0, stack, pos, self.begun.column, n) == i,
            None => true,
        }
    }

    /// Builds the levels from the `s0` the caller wrote (those of the
    /// part's columns, in a build in parts), records the part, and
    /// finalises as [`build`] does. The outcome counts the `s0` shards
    /// this build was to write as written.
    pub fn finish(self) -> Result<Outcome> {
        let plan = &self.build.plan;
        let mut own = 0u64;
        for setup in 0..plan.bdv_setups() {
            for timepoint in 0..plan.bdv_timepoints() {
                let stack = Stack { setup, timepoint };
                own += plan
                    .shard_positions(0)
                    .iter()
                    .filter(|pos| self.writes(stack, pos))
                    .count() as u64;
            }
        }
        self.build.written.fetch_add(own, Ordering::Relaxed);
        self.build.complete(self.begun)
    }
}

/// Begins the pyramid of the dataset `src_path` of `src` as the group
/// `dst_path` of `dst`, as [`build`] does, except that `s0` is not copied
/// from the source: the caller writes it through the returned
/// [`WrittenBuild`], then calls [`WrittenBuild::finish`]. The source's
/// metadata (type, shape, block and shard shapes, compression, axis
/// attributes) makes the plan as it would for [`build`], so the result is
/// the same as a build from a source holding the data the caller writes;
/// its data is never read (it may be a dataset without chunks, in a
/// [`MemoryStore`](crate::storage::MemoryStore)). `s0` is always written
/// in the output's own layout (never in place). `opts.finalize` is refused.
pub fn begin_written<'a>(
    src: &Container,
    src_path: &str,
    dst: &'a Container,
    dst_path: &str,
    opts: &PyramidOptions,
    progress: Option<Progress<'a>>,
) -> Result<WrittenBuild<'a>> {
    let refused = || {
        Error::invalid_argument(
            "--finalize: a build whose s0 the caller writes is finalised by its last part",
        )
    };
    if opts.finalize {
        return Err(refused());
    }
    let build = prepare(src, src_path, dst, dst_path, opts, progress, true)?;
    match build.begin(opts)? {
        Start::Begun(begun) => Ok(WrittenBuild { build, begun }),
        Start::Done(_) => Err(refused()),
    }
}

/// The checked build of `opts` from `src_path` into `dst_path`, nothing
/// written yet (`s0_written`: the caller writes `s0`).
fn prepare<'a>(
    src: &Container,
    src_path: &str,
    dst: &'a Container,
    dst_path: &str,
    opts: &PyramidOptions,
    progress: Option<Progress<'a>>,
    s0_written: bool,
) -> Result<Build<'a>> {
    opts.validate_syntax()?;
    let source = source(src, src_path)?;
    let plan = resolve(&source, opts, dst.format())?;
    let group = path::normalize(dst_path)?;
    if plan.format == OutFormat::Bdv && !group.is_empty() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "--format: bdv builds into the container's root, not into '{}'",
                path::display(&group)
            ),
        ));
    }
    dst.check_writable()?;
    let in_place = !s0_written
        && src.location() == dst.location()
        && plan.format != OutFormat::Bdv
        && path::join(&group, "s0") == path::normalize(source.dataset.path())?;
    let separator = source.dataset.metadata().ok().and_then(|d| {
        d.get("dimension_separator")
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    if in_place && plan.format == OutFormat::Zarr2 && separator.as_deref() != Some("/") {
        return Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "{}: OME-NGFF 0.4 needs s0 with the '/' chunk key separator; build the pyramid into another group",
                path::display(source.dataset.path())
            ),
        ));
    }
    if in_place && plan.permutes() {
        return Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "{}: OME-NGFF needs s0 in the axis order x, y, z, c, t; build the pyramid into another group",
                path::display(source.dataset.path())
            ),
        ));
    }
    let format = dst.format();
    let compression = match &opts.compression {
        Some(c) => Compression::from_json(c).map_err(|e| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("--compression: {}", e.message()),
            )
        })?,
        None => source.dataset.nearest_compression(),
    };
    let threads = match opts.threads {
        0 => dst.options().threads.max(1),
        n => n,
    };
    let dtype = source.dataset.data_type();
    let (_, s0_doc) = level_spec(&plan, 0, &dtype, &compression, format)?;
    // The plan without its shard lists, which grow with the volume.
    let mut plan_doc = plan.to_json();
    if let Some(levels) = plan_doc.get_mut("levels").and_then(Value::as_array_mut) {
        for l in levels.iter_mut().filter_map(Value::as_object_mut) {
            l.remove("shards");
        }
    }
    let fingerprint = json!({
        "plan": plan_doc,
        "array": s0_doc,
        "metadata": meta_preview(&plan),
    });
    Ok(Build {
        plan,
        source,
        dst,
        group,
        in_place,
        s0_written,
        format,
        dtype,
        compression,
        threads,
        fingerprint,
        progress,
        written: AtomicU64::new(0),
        identical: AtomicU64::new(0),
        stash: Mutex::new(Vec::new()),
    })
}

/// The plan's metadata in a form that changes whenever the written
/// metadata would (axes, units, resolutions, translations).
fn meta_preview(plan: &Plan) -> Value {
    match plan.format {
        OutFormat::N5 | OutFormat::Bdv => Value::Object(meta::n5_group_attributes(plan)),
        OutFormat::Zarr2 | OutFormat::Zarr3 => meta::ngff_multiscale(plan, "0.5"),
    }
}

/// How a call goes on after its checks ([`Build::begin`]).
enum Start {
    /// A `finalize` call, done.
    Done(Outcome),
    /// The arrays are there; the levels are to be written.
    Begun(Begun),
}

/// A build under way: what [`Build::complete`] needs.
struct Begun {
    /// What the destination held before the call.
    state: State,
    /// The number of parts.
    n: u64,
    /// The column level.
    column: usize,
    /// `(I, N)` of a build in parts.
    part: Option<(u64, u64)>,
    /// Every level array of every stack, `[stack][level]`.
    arrays: Vec<Vec<LevelArray>>,
    outcome: Outcome,
}

impl Build<'_> {
    /// The whole call: checks, creation, the parts' levels, bookkeeping,
    /// finalisation.
    fn run(&self, opts: &PyramidOptions) -> Result<Outcome> {
        match self.begin(opts)? {
            Start::Done(outcome) => Ok(outcome),
            Start::Begun(begun) => self.complete(begun),
        }
    }

    /// The checks, and a `finalize` call whole; else the group, its
    /// bookkeeping and the level arrays, created where missing.
    fn begin(&self, opts: &PyramidOptions) -> Result<Start> {
        let state = self.state()?;
        let recorded_parts = self.recorded_parts()?;
        let n = match (opts.part, opts.finalize) {
            (Some((_, n)), _) => n,
            (None, true) => recorded_parts.unwrap_or(1),
            (None, false) => 1,
        };
        if let (Some((_, n)), Some(r)) = (opts.part, recorded_parts) {
            if n != r && state == State::UnderWay {
                return Err(Error::new(
                    ErrorKind::AlreadyExists,
                    format!(
                        "{}: the build under way there runs in {r} parts, not {n}",
                        self.group_display()
                    ),
                ));
            }
        }
        let column = self.plan.column_level(n);
        let mut outcome = Outcome {
            levels: (0..self.plan.levels.len())
                .map(|k| {
                    let l = &self.plan.levels[k];
                    (
                        l.path.clone(),
                        l.shape.clone(),
                        l.factors.clone(),
                        self.plan.shard_count(k) * self.plan.stacks(),
                    )
                })
                .collect(),
            part: opts.part,
            warnings: self.plan.warnings.clone(),
            ..Outcome::default()
        };
        if opts.finalize {
            if state == State::New {
                return Err(Error::new(
                    ErrorKind::NotFound,
                    format!("{}: no pyramid build to finalize", self.group_display()),
                ));
            }
            let arrays = self.arrays(false)?;
            if state == State::UnderWay {
                let done = self.done_parts()?;
                let missing: Vec<String> = (0..n)
                    .filter(|i| !done.contains(i))
                    .map(|i| format!("{i}/{n}"))
                    .collect();
                if !missing.is_empty() {
                    return Err(Error::new(
                        ErrorKind::Incomplete,
                        format!(
                            "{}: parts {} have not finished; nothing finalized",
                            self.group_display(),
                            missing.join(", ")
                        ),
                    ));
                }
                outcome.parts_done = n;
                self.finalize(&arrays, column)?;
                outcome.finalized = true;
            } else {
                outcome.parts_done = n;
            }
            return self.counted(outcome).map(Start::Done);
        }
        self.check_levels()?;
        if state == State::New {
            self.start(n)?;
        }
        let arrays = self.arrays(true)?;
        if state == State::Finished {
            self.probe(&arrays)?;
        }
        Ok(Start::Begun(Begun {
            state,
            n,
            column,
            part: opts.part,
            arrays,
            outcome,
        }))
    }

    /// The levels of the part's columns (`s0` unless it is the source or
    /// the caller writes it), the part recorded, and the finalisation
    /// when the build is whole.
    fn complete(&self, begun: Begun) -> Result<Outcome> {
        let Begun {
            state,
            n,
            column,
            part: in_parts,
            arrays,
            mut outcome,
        } = begun;
        let part = in_parts.unwrap_or((0, 1));
        for k in 0..=column {
            self.level(&arrays, k, Some((column, part)))?;
        }
        if state == State::Finished {
            // A finished pyramid checked again: nothing is recorded.
            outcome.parts_done = n;
            if in_parts.is_none() {
                self.finalize_levels(&arrays, column)?;
            }
            return self.counted(outcome);
        }
        if in_parts.is_none() {
            outcome.parts_done = 1;
            self.finalize(&arrays, column)?;
            outcome.finalized = true;
            return self.counted(outcome);
        }
        let (done, completed) = self.record(part.0, n)?;
        outcome.parts_done = done;
        if completed {
            self.finalize(&arrays, column)?;
            outcome.finalized = true;
        }
        self.counted(outcome)
    }

    /// `outcome` with the shard counts.
    fn counted(&self, mut outcome: Outcome) -> Result<Outcome> {
        outcome.written = self.written.load(Ordering::Relaxed);
        outcome.identical = self.identical.load(Ordering::Relaxed);
        Ok(outcome)
    }

    fn group_display(&self) -> String {
        format!("{}/{}", self.dst.location(), self.group)
            .trim_end_matches('/')
            .to_string()
    }

    fn group_attributes(&self) -> Result<Map<String, Value>> {
        Ok(self
            .dst
            .attributes(&self.group)?
            .as_object()
            .cloned()
            .unwrap_or_default())
    }

    /// What the destination holds; an error when it is something else
    /// than this pyramid (nothing is written).
    fn state(&self) -> Result<State> {
        let refuse = |why: String| {
            Err(Error::new(
                ErrorKind::AlreadyExists,
                format!("{}: {why}; nothing written", self.group_display()),
            ))
        };
        if !self.dst.exists(&self.group)? {
            return Ok(State::New);
        }
        if self.dst.dataset_exists(&self.group)? {
            return refuse("a dataset is there".into());
        }
        let attrs = self.group_attributes()?;
        if let Some(record) = attrs.get(BOOKKEEPING) {
            if record.get("plan") != Some(&self.fingerprint) {
                return refuse(format!(
                    "a pyramid build with other options is under way ({BOOKKEEPING})"
                ));
            }
            return Ok(State::UnderWay);
        }
        let finished = self.finished_metadata();
        let holds_pyramid = match self.plan.format {
            OutFormat::N5 => attrs.contains_key("multiscales") || attrs.contains_key("scales"),
            OutFormat::Zarr3 => attrs.contains_key("ome"),
            OutFormat::Zarr2 => attrs.contains_key("multiscales"),
            OutFormat::Bdv => self.dst.store().get("dataset.xml")?.is_some(),
        };
        if !holds_pyramid {
            return Ok(State::New);
        }
        let same = match self.plan.format {
            OutFormat::Bdv => {
                self.dst.store().get("dataset.xml")?.as_deref() == Some(self.bdv_xml().as_bytes())
            }
            _ => finished.iter().all(|(k, v)| attrs.get(k) == Some(v)),
        };
        if same {
            Ok(State::Finished)
        } else {
            refuse("the multiscale metadata of another pyramid is there".into())
        }
    }

    /// The parts count the bookkeeping records, if any.
    fn recorded_parts(&self) -> Result<Option<u64>> {
        if !self.dst.exists(&self.group)? {
            return Ok(None);
        }
        Ok(self
            .group_attributes()?
            .get(BOOKKEEPING)
            .and_then(|r| r.get("parts"))
            .and_then(Value::as_u64))
    }

    /// The parts recorded as done.
    fn done_parts(&self) -> Result<Vec<u64>> {
        Ok(self
            .group_attributes()?
            .get(BOOKKEEPING)
            .and_then(|r| r.get("done"))
            .and_then(Value::as_array)
            .map(|d| d.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default())
    }

    /// Checks, before anything is written, that each level's array is
    /// missing or what the plan makes of it.
    fn check_levels(&self) -> Result<()> {
        for stack in stacks(&self.plan) {
            for k in 0..self.plan.levels.len() {
                if k == 0 && self.in_place {
                    continue;
                }
                let p = level_path(&self.plan, &self.group, stack, k);
                if !self.dst.exists(&p)? || self.being_created(&p)? {
                    continue;
                }
                let (want, _) =
                    level_spec(&self.plan, k, &self.dtype, &self.compression, self.format)?;
                let fits = self.dst.dataset_exists(&p)?
                    && same_array(&self.dst.open_dataset(&p)?, &want, &self.plan.shard);
                if !fits {
                    return Err(Error::new(
                        ErrorKind::AlreadyExists,
                        format!(
                            "{}/{}: holds something else than level {k} of this pyramid; nothing written",
                            self.dst.location(),
                            p
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Creates the group and records the build's plan (create-only: a
    /// concurrent part may have done it first).
    fn start(&self, n: u64) -> Result<()> {
        if !self.group.is_empty() {
            self.dst.create_group(&self.group)?;
        }
        let fingerprint = &self.fingerprint;
        let mut other = false;
        self.dst.modify_attributes(&self.group, &mut |doc| {
            match doc.get(BOOKKEEPING) {
                None => {
                    doc.insert(
                        BOOKKEEPING.into(),
                        json!({"plan": fingerprint, "parts": n, "done": []}),
                    );
                }
                Some(r) => other = r.get("plan") != Some(fingerprint),
            }
            Ok(())
        })?;
        if other {
            return Err(Error::new(
                ErrorKind::AlreadyExists,
                format!(
                    "{}: a pyramid build with other options is under way ({BOOKKEEPING})",
                    self.group_display()
                ),
            ));
        }
        Ok(())
    }

    /// Adds part `i` to the done set; returns how many are done and
    /// whether this update completed the set.
    fn record(&self, i: u64, n: u64) -> Result<(u64, bool)> {
        let (mut done, mut completed) = (0, false);
        self.dst.modify_attributes(&self.group, &mut |doc| {
            let Some(record) = doc.get_mut(BOOKKEEPING).and_then(Value::as_object_mut) else {
                // Finalised meanwhile by another call.
                done = n;
                completed = false;
                return Ok(());
            };
            let list = record.entry("done").or_insert_with(|| json!([]));
            let mut set: Vec<u64> = list
                .as_array()
                .map(|d| d.iter().filter_map(Value::as_u64).collect())
                .unwrap_or_default();
            let before = set.len() as u64;
            if !set.contains(&i) {
                set.push(i);
                set.sort_unstable();
            }
            done = set.len() as u64;
            completed = before < n && done == n;
            *list = json!(set);
            Ok(())
        })?;
        Ok((done, completed))
    }

    /// Every level array of every stack, `[stack][level]`, created when
    /// missing (`create`) or opened.
    fn arrays(&self, create: bool) -> Result<Vec<Vec<LevelArray>>> {
        let mut out = Vec::new();
        for stack in stacks(&self.plan) {
            let mut levels = Vec::new();
            for k in 0..self.plan.levels.len() {
                if k == 0 && self.in_place {
                    levels.push(LevelArray {
                        dataset: self.source.dataset.clone(),
                        existed: true,
                    });
                    continue;
                }
                let p = level_path(&self.plan, &self.group, stack, k);
                let (want, doc) =
                    level_spec(&self.plan, k, &self.dtype, &self.compression, self.format)?;
                if self.dst.dataset_exists(&p)? || !create {
                    levels.push(LevelArray {
                        dataset: self.checked(&p, k, &want)?,
                        existed: true,
                    });
                    continue;
                }
                match self.dst.create_dataset_json(&p, &doc) {
                    Ok(dataset) => levels.push(LevelArray {
                        dataset,
                        existed: false,
                    }),
                    // A concurrent part created it first (or is creating it).
                    Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                        self.wait_for_dataset(&p)?;
                        levels.push(LevelArray {
                            dataset: self.checked(&p, k, &want)?,
                            existed: true,
                        })
                    }
                    Err(e) => return Err(e),
                }
            }
            out.push(levels);
        }
        Ok(out)
    }

    /// Whether `p` is an empty group without attributes: an array another
    /// part is creating (its directory made, its document not yet
    /// written).
    fn being_created(&self, p: &str) -> Result<bool> {
        if self.dst.dataset_exists(p)? {
            return Ok(false);
        }
        let empty_doc = self
            .dst
            .attributes(p)?
            .as_object()
            .is_none_or(|m| m.is_empty());
        Ok(empty_doc && self.dst.list(p).map(|l| l.is_empty()).unwrap_or(true))
    }

    /// Waits (at most 10 s) for the array another part is creating at `p`,
    /// looking again after 1 ms, then twice as long each time up to 50 ms
    /// (another part writes an array's document within milliseconds).
    fn wait_for_dataset(&self, p: &str) -> Result<()> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut pause = std::time::Duration::from_millis(1);
        while std::time::Instant::now() < deadline {
            if self.dst.dataset_exists(p)? || !self.being_created(p)? {
                return Ok(());
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(std::time::Duration::from_millis(50));
        }
        Ok(())
    }

    /// The existing array at `p`, which must be level `k` of the plan.
    fn checked(&self, p: &str, k: usize, want: &DatasetAttributes) -> Result<Dataset> {
        let d = self.dst.open_dataset(p)?;
        if !same_array(&d, want, &self.plan.shard) {
            return Err(Error::new(
                ErrorKind::AlreadyExists,
                format!(
                    "{}/{p}: holds something else than level {k} of this pyramid",
                    self.dst.location()
                ),
            ));
        }
        Ok(d)
    }

    /// Refuses a finished pyramid whose first shard of `s1` is not what
    /// this plan computes from its `s0`: N5 and BigDataViewer metadata do
    /// not record the method, so a pyramid of another method looks the
    /// same until its data is compared (nothing has been written yet).
    fn probe(&self, arrays: &[Vec<LevelArray>]) -> Result<()> {
        if self.plan.levels.len() < 2 || arrays.is_empty() {
            return Ok(());
        }
        let origin = vec![0; self.plan.shard.len()];
        let out = shard_region(&self.plan.levels[1].shape, &self.plan.shard, &origin);
        let mut lent = Lent::from(&self.stash);
        let scratch = &mut lent.scratch;
        self.reduce(&arrays[0][0].dataset, 1, &out, scratch)?;
        let Scratch { data, have, .. } = scratch;
        fit(have, data.len());
        arrays[0][1]
            .dataset
            .read_region(&out.offset, &out.shape, have)?;
        if have != data {
            return Err(Error::new(
                ErrorKind::AlreadyExists,
                format!(
                    "{}: holds the levels of another pyramid (another method, or damaged: remove them to build again); nothing written",
                    self.group_display()
                ),
            ));
        }
        Ok(())
    }

    /// Writes level `k`'s shards: those of the part's columns (`parts`:
    /// column level and `(I, N)`), or all.
    fn level(
        &self,
        arrays: &[Vec<LevelArray>],
        k: usize,
        parts: Option<(usize, (u64, u64))>,
    ) -> Result<()> {
        if k == 0 && (self.in_place || self.s0_written) {
            return Ok(());
        }
        let stacks = stacks(&self.plan);
        let mut jobs: Vec<(usize, Vec<u64>)> = Vec::new();
        for (s, stack) in stacks.iter().enumerate() {
            for pos in self.plan.shard_positions(k) {
                let mine = match parts {
                    Some((column, (i, n))) => self.plan.part_of(k, *stack, &pos, column, n) == i,
                    None => true,
                };
                if mine {
                    jobs.push((s, pos));
                }
            }
        }
        let total = jobs.len() as u64;
        let finished = AtomicU64::new(0);
        let element = self.dtype.size() as u64;
        let shard_bytes: u64 = self.plan.shard.iter().product::<u64>() * element;
        let factors: u64 = self.plan.levels[k].relative.iter().product();
        let per_job = shard_bytes * 2 + (shard_bytes * factors).min(SLAB_BYTES);
        let threads = self
            .threads
            .min(((2u64 << 30) / per_job.max(1)).max(1) as usize);
        // `s0` of the source's own encoding takes the source's stored
        // units as they are, with no decoding and encoding again.
        let verbatim = k == 0 && self.stores_source_units(arrays);
        // The destination's worker pool runs the jobs, so that the region
        // calls inside them find its helpers busy and stay on their thread;
        // each thread keeps its buffers from job to job and level to level
        // (no fresh pages).
        self.dst.pool().run_limited(
            jobs.len(),
            threads,
            || Lent::from(&self.stash),
            |lent, j| {
                let scratch = &mut lent.scratch;
                let (s, pos) = &jobs[j];
                let levels = &arrays[*s];
                if verbatim {
                    return self
                        .copy_stored(&levels[0], pos, scratch)
                        .map_err(|e| e.context(format!("level s0, shard {pos:?}")));
                }
                let out = shard_region(&self.plan.levels[k].shape, &self.plan.shard, pos);
                if k == 0 {
                    self.copy_from_source(stacks[*s], &out, &mut scratch.data)?;
                } else {
                    self.reduce(&levels[k - 1].dataset, k, &out, scratch)?;
                }
                self.store(&levels[k], &out, &scratch.data, &mut scratch.have)
                    .map_err(|e| e.context(format!("level s{k}, shard {pos:?}")))?;
                let d = finished.fetch_add(1, Ordering::Relaxed) + 1;
                if let Some(p) = self.progress {
                    p(k, d, total);
                }
                Ok(())
            },
        )
    }

    /// Whether every `s0` is the source itself in the same encoding: the
    /// source's axes unpermuted, one stack (not split into BigDataViewer
    /// stacks) and [`Dataset::same_encoding`] (which includes the shape).
    fn stores_source_units(&self, arrays: &[Vec<LevelArray>]) -> bool {
        let plan = &self.plan;
        let unpermuted = plan.permutation.iter().enumerate().all(|(i, &p)| i == p);
        let whole = plan.level_axes.len() == plan.axes.len();
        unpermuted
            && whole
            && arrays.len() == 1
            && arrays[0][0].dataset.same_encoding(&self.source.dataset)
    }

    /// Copies the source's stored unit at `pos` to `s0` as it is stored,
    /// unless `s0` already holds the same bytes (or neither holds it).
    fn copy_stored(&self, level: &LevelArray, pos: &[u64], scratch: &mut Scratch) -> Result<()> {
        if !level.existed {
            // Nothing to compare with: copied file to file where both
            // stores are local.
            level
                .dataset
                .copy_stored_unit(pos, &self.source.dataset, &mut scratch.data)?;
            self.written.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        let stored = self
            .source
            .dataset
            .read_stored_unit(pos, &mut scratch.data)?;
        let have = level.dataset.read_stored_unit(pos, &mut scratch.have)?;
        if have == stored && (!stored || scratch.have == scratch.data) {
            self.identical.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        level
            .dataset
            .write_stored_unit(pos, stored.then_some(&scratch.data[..]))?;
        self.written.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// The box `out` of `s0` (level axes) of `stack`, read from the source
    /// and put in output axis order.
    fn copy_from_source(&self, stack: Stack, out: &Region, data: &mut Vec<u8>) -> Result<()> {
        let plan = &self.plan;
        let rank = plan.axes.len();
        let (mut full_off, mut full_shape) = (vec![0u64; rank], vec![1u64; rank]);
        for (i, &a) in plan.level_axes.iter().enumerate() {
            full_off[a] = out.offset[i];
            full_shape[a] = out.shape[i];
        }
        if plan.format == OutFormat::Bdv {
            if let Some(c) = plan.channel_axis() {
                full_off[c] = stack.setup;
            }
            if let Some(t) = plan.time_axis() {
                full_off[t] = stack.timepoint;
            }
        }
        let (mut src_off, mut src_shape) = (vec![0u64; rank], vec![1u64; rank]);
        for (a, &p) in plan.permutation.iter().enumerate() {
            src_off[p] = full_off[a];
            src_shape[p] = full_shape[a];
        }
        let element = self.dtype.size();
        fit(data, src_shape.iter().product::<u64>() as usize * element);
        self.source
            .dataset
            .read_region(&src_off, &src_shape, data)?;
        // One piece: the box of this stack, in the level axes' order.
        let moved = match s0_pieces(plan, &src_off, &src_shape, data, element).pop() {
            Some(S0Piece {
                data: Cow::Owned(moved),
                ..
            }) => Some(moved),
            _ => None,
        };
        if let Some(moved) = moved {
            *data = moved;
        }
        Ok(())
    }

    /// The box `out` of level `k`, reduced from the stored level before.
    /// The box `out` of level `k`, reduced from the stored level before,
    /// into `scratch.data` (`scratch.input` holds the slabs read).
    fn reduce(&self, prev: &Dataset, k: usize, out: &Region, scratch: &mut Scratch) -> Result<()> {
        let relative = &self.plan.levels[k].relative;
        let prev_shape = &self.plan.levels[k - 1].shape;
        let element = self.dtype.size();
        let Scratch { data, input, .. } = scratch;
        fit(data, out.voxels() as usize * element);
        for slab in slabs(out, relative, prev_shape, element as u64, SLAB_BYTES) {
            let inp = input_region(&slab, relative, prev_shape);
            fit(input, inp.voxels() as usize * element);
            prev.read_region(&inp.offset, &inp.shape, input)?;
            // Slabs are cut along their last axis longer than one voxel:
            // each is one contiguous run of the output box.
            let start = linear_offset(out, &slab.offset) * element;
            let len = slab.voxels() as usize * element;
            downsample(
                &self.dtype,
                self.plan.method,
                input,
                &inp.shape,
                relative,
                &mut data[start..start + len],
            )?;
        }
        Ok(())
    }

    /// Writes `data` as the box `out` of a level, unless the stored box
    /// already holds it (read into `have`).
    fn store(
        &self,
        level: &LevelArray,
        out: &Region,
        data: &[u8],
        have: &mut Vec<u8>,
    ) -> Result<()> {
        if level.existed {
            fit(have, data.len());
            let same = level
                .dataset
                .read_region(&out.offset, &out.shape, have)
                .is_ok()
                && have[..] == *data;
            if same {
                self.identical.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
        }
        level.dataset.write_region(&out.offset, &out.shape, data)?;
        self.written.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Builds the levels above the column level from the stored ones and
    /// writes the metadata, removing the bookkeeping.
    fn finalize(&self, arrays: &[Vec<LevelArray>], column: usize) -> Result<()> {
        self.finalize_levels(arrays, column)?;
        self.write_metadata(arrays)
    }

    /// The levels above `column`, every shard.
    fn finalize_levels(&self, arrays: &[Vec<LevelArray>], column: usize) -> Result<()> {
        for k in column + 1..self.plan.levels.len() {
            self.level(arrays, k, None)?;
        }
        Ok(())
    }

    /// The group attributes finalisation writes (besides the source's
    /// other attributes).
    fn finished_metadata(&self) -> Map<String, Value> {
        match self.plan.format {
            OutFormat::N5 => meta::n5_group_attributes(&self.plan),
            OutFormat::Zarr3 => meta::ngff_group_attributes_v05(&self.plan),
            OutFormat::Zarr2 => meta::ngff_group_attributes_v04(&self.plan),
            OutFormat::Bdv => Map::new(),
        }
    }

    fn bdv_xml(&self) -> String {
        meta::bdv_dataset_xml(
            &self.plan,
            self.plan.bdv_setups(),
            self.plan.bdv_timepoints(),
        )
    }

    /// Every level's own attributes, then the group's (so that a viewer
    /// never sees the multiscale group before its levels are complete),
    /// removing the bookkeeping in the same update.
    fn write_metadata(&self, arrays: &[Vec<LevelArray>]) -> Result<()> {
        let plan = &self.plan;
        for (s, stack) in stacks(plan).into_iter().enumerate() {
            for (k, level) in arrays[s].iter().enumerate() {
                let ds_path = level.dataset.path().to_string();
                let container = if k == 0 && self.in_place {
                    self.source.dataset.container()
                } else {
                    self.dst
                };
                let attrs = match plan.format {
                    OutFormat::N5 => meta::n5_level_attributes(plan, k),
                    OutFormat::Bdv => meta::bdv_level_attributes(plan, k),
                    OutFormat::Zarr2 => {
                        let mut m = Map::new();
                        let mut names = meta::dimension_names(plan);
                        names.truncate(plan.axes.len());
                        m.insert("_ARRAY_DIMENSIONS".into(), json!(names));
                        m
                    }
                    OutFormat::Zarr3 => Map::new(),
                };
                let in_place_s0 = k == 0 && self.in_place;
                if in_place_s0 && plan.format == OutFormat::Zarr3 {
                    let mut names = meta::dimension_names(plan);
                    names.reverse();
                    level.dataset.set_dimension_names(&names)?;
                }
                container.modify_attributes(&ds_path, &mut |doc| {
                    for (key, v) in &attrs {
                        doc.insert(key.clone(), v.clone());
                    }
                    if in_place_s0 {
                        // They describe the pyramid now, on the group.
                        doc.remove("resolution");
                        doc.remove("units");
                    }
                    Ok(())
                })?;
            }
            if plan.format == OutFormat::Bdv {
                let setup = format!("setup{}", stack.setup);
                let timepoint = format!("{setup}/timepoint{}", stack.timepoint);
                let mut setup_attrs = meta::bdv_setup_attributes(plan);
                setup_attrs.insert("dataType".into(), json!(self.dtype.name()));
                self.dst.set_attributes(&setup, &setup_attrs)?;
                self.dst
                    .set_attributes(&timepoint, &meta::bdv_timepoint_attributes(plan))?;
            }
        }
        if plan.format == OutFormat::Bdv {
            self.dst
                .store()
                .put("dataset.xml", &[self.bdv_xml().as_bytes()])?;
        }
        let mut group = self.finished_metadata();
        for (k, v) in &self.source.other_attributes {
            group.entry(k.clone()).or_insert_with(|| v.clone());
        }
        self.dst.modify_attributes(&self.group, &mut |doc| {
            for (k, v) in &group {
                doc.insert(k.clone(), v.clone());
            }
            doc.remove(BOOKKEEPING);
            Ok(())
        })
    }
}

/// The element index of `at` within the box `r` (dimension 0 fastest).
fn linear_offset(r: &Region, at: &[u64]) -> usize {
    let mut index = 0u64;
    for d in (0..r.shape.len()).rev() {
        index = index * r.shape[d] + (at[d] - r.offset[d]);
    }
    index as usize
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::container::{Mode, Options};
    use crate::pyramid::plan::MinSize;
    use crate::storage::MemoryStore;

    /// A new container of `format` in memory.
    fn memory(format: Format) -> Container {
        let options = Options {
            format: Some(format),
            ..Options::default()
        };
        Container::open_store(Arc::new(MemoryStore::new()), "mem", Mode::Create, options).unwrap()
    }

    /// The N5 dataset `raw` of `c`: uint16 `[x, y, c, z, t]` =
    /// `[9, 7, 2, 5, 2]` named by its `axes`, with `data` when given.
    fn hyperstack(c: &Container, data: Option<&[u8]>) {
        let attrs = DatasetAttributes::new(
            vec![9, 7, 2, 5, 2],
            vec![4, 4, 1, 2, 1],
            DataType::U16,
            Compression::Raw,
        )
        .unwrap();
        let ds = c.create_dataset("raw", attrs.clone()).unwrap();
        let mut m = Map::new();
        m.insert("axes".into(), json!(["x", "y", "c", "z", "t"]));
        c.set_attributes("raw", &m).unwrap();
        if let Some(data) = data {
            ds.write_region(&[0; 5], &attrs.dimensions, data).unwrap();
        }
    }

    /// The whole dataset `p` of `c`.
    fn whole(c: &Container, p: &str) -> Vec<u8> {
        let ds = c.open_dataset(p).unwrap();
        let a = ds.attributes();
        let mut buf = vec![0u8; a.dimensions.iter().product::<u64>() as usize * 2];
        ds.read_region(&vec![0; a.ndim()], &a.dimensions, &mut buf)
            .unwrap();
        buf
    }

    /// A pyramid whose `s0` the caller writes, from a source holding only
    /// the metadata, box by box (one time point at a time), is the one
    /// `build` makes from the source with the data: OME-NGFF 0.5 (`s0`
    /// permuted) and BigDataViewer (stacks).
    #[test]
    fn a_written_s0_gives_the_built_pyramid() {
        let n = 9 * 7 * 2 * 5 * 2;
        let data: Vec<u8> = (0..n as u16)
            .flat_map(|i| (i.wrapping_mul(37) % 1009 + 1).to_ne_bytes())
            .collect();
        let src = memory(Format::N5);
        hyperstack(&src, Some(&data));
        let described = memory(Format::N5);
        hyperstack(&described, None);
        for (format, out, group) in [
            (Format::Zarr3, OutFormat::Zarr3, "pyr"),
            (Format::N5, OutFormat::Bdv, ""),
        ] {
            let opts = PyramidOptions {
                format: Some(out),
                min_size: Some(MinSize::All(2)),
                ..PyramidOptions::default()
            };
            let built = memory(format);
            build(&src, "raw", &built, group, &opts, None).unwrap();
            let written = memory(format);
            let w = begin_written(&described, "raw", &written, group, &opts, None).unwrap();
            let plane = (9 * 7 * 2 * 5 * 2) as usize;
            for t in 0..2u64 {
                let (offset, shape) = ([0, 0, 0, 0, t], [9, 7, 2, 5, 1]);
                let at = t as usize * plane;
                for p in s0_pieces(w.plan(), &offset, &shape, &data[at..at + plane], 2) {
                    w.s0(p.stack)
                        .unwrap()
                        .write_region(&p.region.offset, &p.region.shape, &p.data)
                        .unwrap();
                }
            }
            let plan = w.plan().clone();
            let outcome = w.finish().unwrap();
            assert!(outcome.finalized);
            assert!(plan.levels.len() >= 3, "{out:?}: {:?}", plan.levels);
            for stack in stacks(&plan) {
                for k in 0..plan.levels.len() {
                    let p = level_path(&plan, group, stack, k);
                    assert!(whole(&written, &p) == whole(&built, &p), "{out:?}: {p}");
                    let document = |c: &Container| c.open_dataset(&p).unwrap().metadata().unwrap();
                    assert_eq!(document(&written), document(&built), "{p}");
                    assert_eq!(
                        written.attributes(&p).unwrap(),
                        built.attributes(&p).unwrap(),
                        "{p}"
                    );
                }
            }
            assert_eq!(
                written.attributes(group).unwrap(),
                built.attributes(group).unwrap()
            );
            if out == OutFormat::Bdv {
                assert_eq!(plan.stacks(), 4);
                let xml = |c: &Container| c.store().get("dataset.xml").unwrap();
                assert_eq!(xml(&written), xml(&built));
            } else {
                assert_eq!(
                    written
                        .open_dataset("pyr/s0")
                        .unwrap()
                        .attributes()
                        .dimensions,
                    vec![9, 7, 5, 2, 2]
                );
            }
        }
    }
}
