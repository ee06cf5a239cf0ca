//! The pyramid mode (`--format pyramid`): building a multiscale pyramid of
//! the benchmark's synthetic uint16 volume (512³ and 1024³, or 256³ and
//! 512³ with `--quick`) with `n5 pyramid` against tensorstore's downsample
//! driver (bench/peers_pyramid.py) and `zarrs_ome` (zarrs_tools), from the
//! same source into the same format, chunking, codec and levels; and
//! libn5 built in two single-threaded parts (`--part 0/2`, `--part 1/2`,
//! side by side, the finalisation included) against one single-threaded
//! process.
//!
//! Every timed build runs under a small process of this binary
//! (`--one-pyramid JOB`), which starts the tool (or both parts), waits for
//! it with wait4 and reports the wall time, the user + system CPU time and
//! the peak RSS of each child from its rusage. The wrapper exists because
//! a child started with vfork (as Rust's Command does) keeps the peak RSS
//! of the process that started it in its ru_maxrss: the wrapper's is a few
//! MiB, the benchmark's the size of the volume. tensorstore's time and CPU
//! time are those the script takes around its build (from opening the
//! source to the last level written: the interpreter's start and imports
//! are left out); its peak RSS is that of the whole process.
//!
//! This file owns the jobs, the sources, the rounds and the checks of what
//! the tools built; [`report`] the tables, targets and JSON.

mod report;

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use n5::{Compression, Container, DataType, DatasetAttributes, Mode};
use serde_json::{json, Value};

use crate::sys;
use crate::workload::{retire_tree, Codec, Outcome, Report};
use crate::Config;

pub use report::PyrRun;

/// Who builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Who {
    /// `n5 pyramid` in one process.
    Libn5,
    /// `n5 pyramid --part 0/2` and `--part 1/2`, one thread each, side by
    /// side.
    Libn5Parts,
    /// tensorstore's downsample driver (bench/peers_pyramid.py).
    TensorStore,
    /// `zarrs_ome` (zarrs_tools; Zarr v3 only).
    ZarrsOme,
}

impl Who {
    /// Every builder, in table order.
    pub const ALL: [Who; 4] = [Who::Libn5, Who::Libn5Parts, Who::TensorStore, Who::ZarrsOme];

    /// The name in job descriptions and reports.
    pub fn name(self) -> &'static str {
        match self {
            Who::Libn5 => "libn5",
            Who::Libn5Parts => "libn5_parts",
            Who::TensorStore => "tensorstore",
            Who::ZarrsOme => "zarrs_ome",
        }
    }

    fn parse(name: &str) -> Option<Who> {
        Who::ALL.into_iter().find(|w| w.name() == name)
    }
}

/// The output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Layout {
    /// N5, 64³ blocks.
    N5,
    /// Zarr v3 (OME-NGFF 0.5 for libn5 and zarrs_ome), shards holding 64³
    /// inner chunks.
    Zarr3,
}

impl Layout {
    /// Both, in table order.
    pub const ALL: [Layout; 2] = [Layout::N5, Layout::Zarr3];

    /// The name on the command line, in jobs and reports.
    pub fn name(self) -> &'static str {
        match self {
            Layout::N5 => "n5",
            Layout::Zarr3 => "zarr3",
        }
    }

    /// The layout called `name`.
    pub fn parse(name: &str) -> Option<Layout> {
        Layout::ALL.into_iter().find(|l| l.name() == name)
    }

    fn suffix(self) -> &'static str {
        match self {
            Layout::N5 => "n5",
            Layout::Zarr3 => "zarr",
        }
    }
}

/// The downsampling methods measured.
pub const METHODS: [&str; 2] = ["mean", "mode"];

/// The codecs measured.
pub const CODECS: [Codec; 2] = [Codec::Raw, Codec::Zstd];

/// Which measurement: size, layout, codec, method, builder, threads.
pub type Key = (u64, Layout, Codec, &'static str, Who, usize);

/// One level of libn5's plan (N5 order).
#[derive(Clone, Debug, PartialEq)]
pub struct Level {
    /// `s0`, `s1`, ...
    pub path: String,
    /// The level's shape.
    pub shape: Vec<u64>,
    /// Factors from the level before.
    pub relative: Vec<u64>,
}

/// One timed build (a child process of the wrapper, or two).
#[derive(Clone, Debug)]
pub struct PyrJob {
    pub who: Who,
    pub layout: Layout,
    pub codec: Codec,
    pub method: &'static str,
    pub size: u64,
    pub threads: usize,
    /// The source dataset (its directory).
    pub src: PathBuf,
    /// The destination group.
    pub dst: PathBuf,
    /// libn5's plan.
    pub levels: Vec<Level>,
    /// Block (inner chunk) and shard edge.
    pub block: u64,
    pub shard: u64,
    /// The programs: the n5 tool, zarrs_ome, the Python with tensorstore.
    pub n5: PathBuf,
    pub zarrs_ome: PathBuf,
    pub python: PathBuf,
}

impl PyrJob {
    /// The measurement's key.
    pub fn key(&self) -> Key {
        (
            self.size,
            self.layout,
            self.codec,
            self.method,
            self.who,
            self.threads,
        )
    }

    /// The job as JSON, for `--one-pyramid` and bench/peers_pyramid.py.
    pub fn to_json(&self) -> Value {
        json!({
            "impl": self.who.name(),
            "layout": self.layout.name(),
            "codec": self.codec.name(),
            "method": self.method,
            "size": self.size,
            "threads": self.threads,
            "src": self.src,
            "dst": self.dst,
            "levels": self.levels.iter().map(|l| json!({
                "path": l.path, "shape": l.shape, "relative": l.relative})).collect::<Vec<_>>(),
            "block": vec![self.block; 3],
            "shard": vec![self.shard; 3],
            "n5": self.n5,
            "zarrs_ome": self.zarrs_ome,
            "python": self.python,
        })
    }

    /// Parses [`PyrJob::to_json`]'s output.
    pub fn from_json(v: &Value) -> Result<PyrJob, String> {
        let text = |key: &str| {
            v.get(key)
                .and_then(Value::as_str)
                .ok_or(format!("job: '{key}' must be a string"))
        };
        let number = |key: &str| {
            v.get(key)
                .and_then(Value::as_u64)
                .ok_or(format!("job: '{key}' must be a number"))
        };
        let first = |key: &str| {
            v.get(key)
                .and_then(|a| a.get(0))
                .and_then(Value::as_u64)
                .ok_or(format!("job: '{key}' must be a list of numbers"))
        };
        let list = |l: &Value, key: &str| -> Result<Vec<u64>, String> {
            l.get(key)
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_u64).collect())
                .ok_or(format!("job: level '{key}' must be a list"))
        };
        let levels = v
            .get("levels")
            .and_then(Value::as_array)
            .ok_or("job: no 'levels'")?
            .iter()
            .map(|l| {
                Ok(Level {
                    path: l["path"].as_str().ok_or("job: level path")?.to_string(),
                    shape: list(l, "shape")?,
                    relative: list(l, "relative")?,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        let method = text("method")?;
        Ok(PyrJob {
            who: Who::parse(text("impl")?).ok_or("job: unknown 'impl'")?,
            layout: Layout::parse(text("layout")?).ok_or("job: unknown 'layout'")?,
            codec: Codec::parse(text("codec")?).ok_or("job: unknown 'codec'")?,
            method: METHODS
                .into_iter()
                .find(|m| *m == method)
                .ok_or("job: unknown 'method'")?,
            size: number("size")?,
            threads: number("threads")? as usize,
            src: text("src")?.into(),
            dst: text("dst")?.into(),
            levels,
            block: first("block")?,
            shard: first("shard")?,
            n5: text("n5")?.into(),
            zarrs_ome: text("zarrs_ome")?.into(),
            python: text("python")?.into(),
        })
    }

    /// `n5 pyramid`'s arguments after the program name (without
    /// `--threads` and `--part`).
    fn n5_args(&self) -> Vec<String> {
        let edge = |e: u64| format!("{e},{e},{e}");
        let mut args = vec![
            "pyramid".to_string(),
            self.src.display().to_string(),
            self.dst.display().to_string(),
            "--format".into(),
            self.layout.name().into(),
            "-c".into(),
            match self.codec {
                Codec::Zstd => "zstd:3".into(),
                c => c.name().into(),
            },
            "-b".into(),
            edge(self.block),
            "--method".into(),
            self.method.into(),
            "-q".into(),
        ];
        if self.layout == Layout::Zarr3 {
            args.extend(["--shard".into(), edge(self.shard)]);
        }
        args
    }

    /// The commands the wrapper starts side by side.
    fn commands(&self) -> Result<Vec<Command>, String> {
        match self.who {
            Who::Libn5 => {
                let mut c = Command::new(&self.n5);
                c.args(self.n5_args())
                    .args(["--threads", &self.threads.to_string()]);
                Ok(vec![c])
            }
            Who::Libn5Parts => Ok((0..2)
                .map(|i| {
                    let mut c = Command::new(&self.n5);
                    c.args(self.n5_args())
                        .args(["--threads", "1", "--part", &format!("{i}/2")]);
                    c
                })
                .collect()),
            Who::TensorStore => {
                let mut c = Command::new(&self.python);
                c.arg(script()).arg(self.to_json().to_string());
                Ok(vec![c])
            }
            Who::ZarrsOme => {
                let relative = &self.levels.get(1).map(|l| l.relative.clone());
                let Some(factors) = relative else {
                    return Err("the plan has one level".into());
                };
                if self.levels[1..].iter().any(|l| &l.relative != factors) {
                    return Err("zarrs_ome uses one factor list for every level".into());
                }
                let f: Vec<String> = factors.iter().rev().map(u64::to_string).collect();
                let mut c = Command::new(&self.zarrs_ome);
                c.arg(&self.src)
                    .arg(&self.dst)
                    .arg(f.join(","))
                    .args(["--max-levels", &(self.levels.len() - 1).to_string()])
                    .args(["--exists", "erase"]);
                if self.method == "mode" {
                    c.arg("--discrete");
                }
                c.env("RAYON_NUM_THREADS", self.threads.to_string());
                Ok(vec![c])
            }
        }
    }
}

/// bench/peers_pyramid.py, next to this crate's manifest.
pub fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("peers_pyramid.py")
}

/// The n5 tool next to this binary (target/release/n5).
pub fn default_n5() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|p| p.join("n5")))
        .unwrap_or_else(|| PathBuf::from("n5"))
}

/// `<repo>/build/tools/bin/zarrs_ome` (bench/run.sh installs it there).
pub fn default_zarrs_ome() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../build/tools/bin/zarrs_ome")
}

/// What one child used, from wait4.
struct Usage {
    cpu: f64,
    maxrss_kib: u64,
    ok: bool,
}

/// Waits for `pid` with wait4.
fn wait_usage(pid: u32) -> Result<Usage, String> {
    let mut status = 0;
    // SAFETY: wait4 writes the status and one rusage struct into values we
    // own; the pid is our child's, not yet waited for.
    let (rc, usage) = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        let rc = libc::wait4(pid as libc::pid_t, &mut status, 0, &mut u);
        (rc, u)
    };
    if rc < 0 {
        return Err(format!("wait4: {}", std::io::Error::last_os_error()));
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    Ok(Usage {
        cpu: secs(usage.ru_utime) + secs(usage.ru_stime),
        maxrss_kib: usage.ru_maxrss as u64,
        ok: libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
    })
}

/// [`sys::two_thread_copy_scaling`] beyond the caches and within them,
/// said as it is measured.
fn copy_scaling() -> (f64, f64) {
    let scaling = (
        sys::two_thread_copy_scaling(64 << 20, 20),
        sys::two_thread_copy_scaling(1 << 20, 1280),
    );
    say!(
        "two threads copy {:.2}× the bytes of one beyond the caches, {:.2}× within them",
        scaling.0,
        scaling.1
    );
    scaling
}

/// The hidden child mode `--one-pyramid JOB`: retires the destination,
/// syncs, starts the build's process(es), waits for them and prints the
/// report.
pub fn child(job_json: &str) -> ExitCode {
    let result = serde_json::from_str(job_json)
        .map_err(|e| format!("job: {e}"))
        .and_then(|v| PyrJob::from_json(&v))
        .and_then(|j| run_child(&j));
    let outcome = match result {
        Ok(r) => Outcome::Ok(r),
        Err(e) => Outcome::Failed(e),
    };
    println!("{}", outcome.to_json());
    match outcome {
        Outcome::Ok(_) => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    }
}

fn run_child(j: &PyrJob) -> Result<Report, String> {
    retire_tree(&j.dst)?;
    sys::sync_all();
    let mut commands = j.commands()?;
    let logs: Vec<PathBuf> = (0..commands.len())
        .map(|i| j.dst.with_extension(format!("log{i}")))
        .collect();
    let start = Instant::now();
    let mut pids = Vec::new();
    for (c, log) in commands.iter_mut().zip(&logs) {
        let out = fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        let child = c
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("cannot start {:?}: {e}", c.get_program()))?;
        pids.push(child.id());
    }
    let usages = pids
        .iter()
        .map(|&p| wait_usage(p))
        .collect::<Result<Vec<_>, _>>()?;
    let wall = start.elapsed().as_secs_f64();
    let texts: Vec<String> = logs
        .iter()
        .map(|l| fs::read_to_string(l).unwrap_or_default())
        .collect();
    for l in &logs {
        let _ = fs::remove_file(l);
    }
    if let Some(i) = usages.iter().position(|u| !u.ok) {
        let tail: Vec<&str> = texts[i].lines().rev().take(6).collect();
        return Err(format!(
            "{} failed: {}",
            j.who.name(),
            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
        ));
    }
    let cpu: f64 = usages.iter().map(|u| u.cpu).sum();
    let maxrss_kib = usages.iter().map(|u| u.maxrss_kib).max().unwrap_or(0);
    if j.who == Who::TensorStore {
        // The script's own timing of the build, the process's peak.
        let v = texts[0]
            .lines()
            .rev()
            .find_map(|l| serde_json::from_str::<Value>(l).ok())
            .ok_or("peers_pyramid.py printed no report")?;
        if v["status"] != "ok" {
            return Err(format!("tensorstore: {}", v["message"]));
        }
        let mut r = Report::from_json(&v)?;
        r.maxrss_kib = r.maxrss_kib.max(maxrss_kib);
        r.resident_after_evict = f64::NAN;
        return Ok(r);
    }
    Ok(Report {
        times: vec![wall],
        cpu: vec![cpu],
        maxrss_kib,
        resident_after_evict: f64::NAN,
        ..Report::default()
    })
}

/// The source dataset of `layout` and `codec` in `work` (a directory: the
/// array's, for zarrs_ome).
fn source_path(work: &Path, layout: Layout, codec: Codec) -> PathBuf {
    work.join(format!("src-{}.{}", codec.name(), layout.suffix()))
        .join("vol")
}

/// Writes the volume in `raw` (`size`³ uint16) as the source dataset of
/// `layout` and `codec`: N5 in 64³ blocks, or Zarr v3 in `shard`³ shards of
/// 64³ inner chunks (dimension names z, y, x).
fn write_source(
    raw: &Path,
    size: u64,
    layout: Layout,
    codec: Codec,
    shard: u64,
    block: u64,
) -> Result<PathBuf, String> {
    let e = |e: n5::Error| e.to_string();
    let work = raw.parent().ok_or("no working directory")?;
    let path = source_path(work, layout, codec);
    let root = path.parent().expect("a container");
    retire_tree(root)?;
    let data = fs::read(raw).map_err(|err| format!("{}: {err}", raw.display()))?;
    let t = Instant::now();
    let mut options = n5::Options::from_json(match layout {
        Layout::N5 => "{}",
        Layout::Zarr3 => r#"{"format": "zarr3"}"#,
    })
    .map_err(e)?;
    options.threads = 2;
    let c = Container::open_with(root, Mode::Create, options).map_err(e)?;
    let ds = match layout {
        Layout::N5 => {
            let compression = Compression::from_user_json(&codec.n5_json()).map_err(e)?;
            let attrs = DatasetAttributes::new(
                vec![size; 3],
                vec![block as u32; 3],
                DataType::U16,
                compression,
            )
            .map_err(e)?;
            c.create_dataset("vol", attrs).map_err(e)?
        }
        Layout::Zarr3 => c
            .create_dataset_json("vol", &zarr3_metadata(codec, [size; 3], shard, block))
            .map_err(e)?,
    };
    ds.write_region(&[0; 3], &[size; 3], &data).map_err(e)?;
    say!(
        "pyramid: source {} written in {:.1} s ({} MiB)",
        path.display(),
        t.elapsed().as_secs_f64(),
        sys::bytes_below(&path).unwrap_or(0) >> 20
    );
    Ok(path)
}

/// The zarr.json of a uint16 array of `shape` (N5 order) in `shard`³
/// shards of `block`³ inner chunks with `codec`.
pub fn zarr3_metadata(codec: Codec, shape: [u64; 3], shard: u64, block: u64) -> Value {
    let mut inner = vec![json!({"name": "bytes", "configuration": {"endian": "little"}})];
    inner.extend(codec.zarr3_codecs().unwrap_or_default());
    json!({
        "zarr_format": 3,
        "node_type": "array",
        "shape": [shape[2], shape[1], shape[0]],
        "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": vec![shard; 3]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": vec![block; 3],
            "codecs": inner,
            "index_codecs": [
                {"name": "bytes", "configuration": {"endian": "little"}},
                {"name": "crc32c"}
            ],
            "index_location": "end"
        }}],
        "dimension_names": ["z", "y", "x"]
    })
}

/// libn5's plan for `job` (`n5 pyramid --plan`).
fn plan(job: &PyrJob) -> Result<Vec<Level>, String> {
    let out = Command::new(&job.n5)
        .args(job.n5_args())
        .arg("--plan")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", job.n5.display()))?;
    let doc: Value = serde_json::from_slice(&out.stdout).map_err(|_| {
        format!(
            "n5 pyramid --plan failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )
    })?;
    let list = |l: &Value, key: &str| -> Vec<u64> {
        l[key]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default()
    };
    let levels: Vec<Level> = doc["levels"]
        .as_array()
        .ok_or("n5 pyramid --plan: no levels")?
        .iter()
        .map(|l| Level {
            path: l["path"].as_str().unwrap_or("").to_string(),
            shape: list(l, "shape"),
            relative: list(l, "relative"),
        })
        .collect();
    Ok(levels)
}

/// How a builder's pyramid compares with libn5's (one process, the first
/// thread count, first round).
#[derive(Clone, Debug, Default)]
pub struct Check {
    /// Per level: its path, the voxels that differ, all voxels, the
    /// largest difference.
    pub levels: Vec<(String, u64, u64, u64)>,
    /// Differences of the levels' array metadata (shape, chunking, codec).
    pub layout: Vec<String>,
    /// Why the comparison could not be made.
    pub error: Option<String>,
}

/// A level's directory in a builder's output: zarrs_ome names them 0, 1...
fn level_dir(dst: &Path, who: Who, k: usize, l: &Level) -> PathBuf {
    match who {
        Who::ZarrsOme => dst.join(k.to_string()),
        _ => dst.join(&l.path),
    }
}

/// The metadata fields that fix a level's layout: N5's dimensions,
/// blockSize, dataType and compression; Zarr v3's shape, data_type,
/// chunk_grid, codecs and fill_value.
fn layout_fields(dir: &Path, layout: Layout) -> Result<Value, String> {
    let (file, keys): (&str, &[&str]) = match layout {
        Layout::N5 => (
            "attributes.json",
            &["dimensions", "blockSize", "dataType", "compression"],
        ),
        Layout::Zarr3 => (
            "zarr.json",
            &["shape", "data_type", "chunk_grid", "codecs", "fill_value"],
        ),
    };
    let p = dir.join(file);
    let text = fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
    let mut v: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", p.display()))?;
    drop_defaults(&mut v);
    Ok(Value::Object(
        keys.iter()
            .map(|k| (k.to_string(), v.get(*k).cloned().unwrap_or(Value::Null)))
            .collect(),
    ))
}

/// Removes what Zarr v3 metadata may leave out with the same meaning:
/// `"index_location": "end"` of `sharding_indexed` (its default).
fn drop_defaults(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if m.get("index_location") == Some(&json!("end")) {
                m.remove("index_location");
            }
            m.values_mut().for_each(drop_defaults);
        }
        Value::Array(a) => a.iter_mut().for_each(drop_defaults),
        _ => {}
    }
}

/// Compares every level of `dst` (built by `who`) with `reference`'s
/// (libn5's): the array metadata, then the voxels, in slabs of at most
/// 64 MiB.
fn compare(reference: &Path, dst: &Path, who: Who, layout: Layout, levels: &[Level]) -> Check {
    let mut check = Check::default();
    if let Err(e) = compare_into(&mut check, reference, dst, who, layout, levels) {
        check.error = Some(e);
    }
    check
}

fn compare_into(
    check: &mut Check,
    reference: &Path,
    dst: &Path,
    who: Who,
    layout: Layout,
    levels: &[Level],
) -> Result<(), String> {
    let e = |e: n5::Error| e.to_string();
    for (k, l) in levels.iter().enumerate() {
        let ours = layout_fields(&reference.join(&l.path), layout)?;
        let theirs = layout_fields(&level_dir(dst, who, k, l), layout)?;
        if ours != theirs {
            for (key, v) in ours.as_object().expect("object") {
                if theirs.get(key) != Some(v) {
                    check.layout.push(format!(
                        "{}: {key} {} (libn5: {v})",
                        l.path,
                        theirs.get(key).unwrap_or(&Value::Null)
                    ));
                }
            }
        }
    }
    let open = |root: &Path| -> Result<Container, String> {
        let opts = n5::Options::from_json(match layout {
            Layout::N5 => "{}",
            Layout::Zarr3 => r#"{"format": "zarr3"}"#,
        })
        .map_err(e)?;
        Container::open_with(root, Mode::Read, opts).map_err(e)
    };
    for (k, l) in levels.iter().enumerate().skip(1) {
        let a = open(&reference.join(&l.path))?;
        let b = open(&level_dir(dst, who, k, l))?;
        let (da, db) = (
            a.open_dataset("").map_err(e)?,
            b.open_dataset("").map_err(e)?,
        );
        let shape = l.shape.clone();
        if db.attributes().dimensions != shape {
            return Err(format!(
                "{}: shape {:?}, libn5's {:?}",
                l.path,
                db.attributes().dimensions,
                shape
            ));
        }
        let plane = shape[0] * shape[1] * 2;
        let step = ((64u64 << 20) / plane).clamp(1, shape[2]);
        let (mut differ, mut max) = (0u64, 0u64);
        let (mut va, mut vb) = (Vec::new(), Vec::new());
        let mut z = 0;
        while z < shape[2] {
            let n = step.min(shape[2] - z);
            let (off, sh) = ([0, 0, z], [shape[0], shape[1], n]);
            va.resize((plane * n) as usize, 0);
            vb.resize((plane * n) as usize, 0);
            da.read_region(&off, &sh, &mut va).map_err(e)?;
            db.read_region(&off, &sh, &mut vb).map_err(e)?;
            for (x, y) in va.chunks_exact(2).zip(vb.chunks_exact(2)) {
                let (x, y) = (
                    u16::from_ne_bytes([x[0], x[1]]),
                    u16::from_ne_bytes([y[0], y[1]]),
                );
                if x != y {
                    differ += 1;
                    max = max.max(x.abs_diff(y) as u64);
                }
            }
            z += n;
        }
        check
            .levels
            .push((l.path.clone(), differ, shape.iter().product(), max));
    }
    Ok(())
}

/// Runs `j` under the wrapper and logs it.
fn run_job(config: &Config, j: &PyrJob) -> Outcome {
    let busy = config
        .quiet
        .map(|max| sys::wait_quiet(max, crate::QUIET_PATIENCE).0);
    // Every builder writes the whole pyramid (the volume and a seventh
    // more) into fresh page-cache pages: prime that much (see
    // sys::prime_memory), so that every build starts from the same state
    // of free memory. (The slow builds this was first meant for came from
    // deleted trees; see retire_tree.)
    let volume = j.size.pow(3) * 2;
    sys::prime_memory((volume + volume / 7).max(512 << 20) as usize);
    let load = sys::load1();
    let mut outcome = Outcome::of_child("--one-pyramid", &j.to_json());
    if let Outcome::Ok(r) = &mut outcome {
        r.load = vec![load; r.times.len()];
        r.busy = busy.map_or_else(Vec::new, |b| vec![b; r.times.len()]);
    }
    let result = match &outcome {
        Outcome::Ok(r) => format!(
            "{:.0} ms, CPU {:.0} ms, peak RSS {} MiB",
            r.median() * 1000.0,
            r.median_cpu() * 1000.0,
            r.maxrss_kib / 1024
        ),
        Outcome::NotApplicable(why) => format!("n/a: {why}"),
        Outcome::Failed(msg) => format!("ERROR: {msg}"),
    };
    say!(
        "pyramid {}³ {:<5} {:<4} {:<4} {:<11} {} thread(s): {result} [load {load:.2}]",
        j.size,
        j.layout.name(),
        j.codec.name(),
        j.method,
        j.who.name(),
        j.threads
    );
    outcome
}

/// The settings of the mode, from the command line.
pub struct PyrSettings {
    pub sizes: Vec<u64>,
    pub layouts: Vec<Layout>,
    pub methods: Vec<&'static str>,
    pub shard: u64,
    pub n5: PathBuf,
    pub zarrs_ome: PathBuf,
}

/// `zarrs_ome --version`, or why it cannot run.
fn zarrs_version(path: &Path) -> Result<String, String> {
    let out = Command::new(path)
        .arg("--version")
        .output()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The pyramid mode in the working directory `work`.
pub fn run_in(
    config: &Config,
    s: &PyrSettings,
    command: String,
    work: &Path,
) -> Result<(), String> {
    let block = 64;
    let machine = sys::Machine::detect();
    let load_start = sys::load_average();
    let copy_scaling_start = copy_scaling();
    let fs_type = sys::fs_type(work);
    let free = sys::free_bytes(work).unwrap_or(u64::MAX);
    let biggest = s.sizes.iter().max().copied().unwrap_or(0).pow(3) * 2;
    say!(
        "pyramid: working directory {} ({fs_type}, {} MiB free, about {} MiB needed)",
        work.display(),
        free >> 20,
        (biggest * 9 / 2) >> 20
    );
    if !s.n5.exists() {
        return Err(format!(
            "{}: no n5 tool (cargo build --release -p n5-cli, or --n5-cli PATH)",
            s.n5.display()
        ));
    }
    let ts_version = if config.peers {
        crate::peers::versions(&config.python, &script())
    } else {
        Err("skipped (--no-peers)".into())
    };
    let zarrs = if config.peers {
        zarrs_version(&s.zarrs_ome)
    } else {
        Err("skipped (--no-peers)".into())
    };
    say!("pyramid: tensorstore {ts_version:?}; zarrs_ome {zarrs:?}");
    let has_ts = ts_version
        .as_ref()
        .is_ok_and(|v| v["tensorstore"].is_string());
    let codecs: Vec<Codec> = config
        .codecs
        .iter()
        .copied()
        .filter(|c| CODECS.contains(c))
        .collect();
    let mut results: HashMap<Key, Outcome> = HashMap::new();
    let mut checks: Vec<(Key, Check)> = Vec::new();
    let mut retried: HashMap<Key, (u32, String)> = HashMap::new();
    let mut plans: Vec<(u64, Layout, Vec<Level>)> = Vec::new();
    let mut ratios: Vec<(u64, Layout, Codec, f64)> = Vec::new();
    for &size in &s.sizes {
        let raw = work.join("volume.raw");
        let t = Instant::now();
        let (volume, _) = crate::data::generate_volume([size; 3]);
        fs::write(&raw, &volume).map_err(|e| format!("{}: {e}", raw.display()))?;
        drop(volume);
        say!(
            "pyramid: volume {size}³ uint16 generated in {:.1} s",
            t.elapsed().as_secs_f64()
        );
        for &layout in &s.layouts {
            for &codec in &codecs {
                let src = write_source(&raw, size, layout, codec, s.shard, block)?;
                let source_bytes = sys::bytes_below(&src).unwrap_or(0);
                ratios.push((
                    size,
                    layout,
                    codec,
                    source_bytes as f64 / (size.pow(3) * 2) as f64,
                ));
                for &method in &s.methods {
                    let job = |who: Who, threads: usize, levels: Vec<Level>| PyrJob {
                        who,
                        layout,
                        codec,
                        method,
                        size,
                        threads,
                        src: src.clone(),
                        dst: work.join(format!("out-{}.{}", who.name(), layout.suffix())),
                        levels,
                        block,
                        shard: s.shard,
                        n5: s.n5.clone(),
                        zarrs_ome: s.zarrs_ome.clone(),
                        python: config.python.clone(),
                    };
                    let levels = plan(&job(Who::Libn5, 1, Vec::new()))?;
                    if !plans.iter().any(|(z, l, _)| *z == size && *l == layout) {
                        say!(
                            "pyramid: plan {size}³ {}: {}",
                            layout.name(),
                            levels
                                .iter()
                                .map(|l| format!("{} {:?}", l.path, l.shape))
                                .collect::<Vec<_>>()
                                .join(", ")
                        );
                        plans.push((size, layout, levels.clone()));
                    }
                    let mut jobs = Vec::new();
                    for &t in &config.threads {
                        jobs.push(job(Who::Libn5, t, levels.clone()));
                    }
                    jobs.push(job(Who::Libn5Parts, 1, levels.clone()));
                    if has_ts {
                        for &t in &config.threads {
                            jobs.push(job(Who::TensorStore, t, levels.clone()));
                        }
                    }
                    if zarrs.is_ok() && layout == Layout::Zarr3 {
                        for &t in &config.threads {
                            jobs.push(job(Who::ZarrsOme, t, levels.clone()));
                        }
                    }
                    let reference = work.join(format!("reference.{}", layout.suffix()));
                    for round in 0..config.repeats {
                        say!(
                            "pyramid {size}³ {} {} {method}: round {}/{} ({})",
                            layout.name(),
                            codec.name(),
                            round + 1,
                            config.repeats,
                            sys::load_average()
                        );
                        // Each round starts with the next builder, so that
                        // none always follows the same one (a build right
                        // after another's deleted tree can run slower);
                        // round 0 starts with libn5, whose pyramid is the
                        // reference.
                        let start = round % jobs.len().max(1);
                        for j in jobs[start..].iter().chain(&jobs[..start]) {
                            let key = j.key();
                            let previous = results.remove(&key);
                            if let Some(done @ (Outcome::Failed(_) | Outcome::NotApplicable(_))) =
                                previous
                            {
                                results.insert(key, done);
                                continue;
                            }
                            let mut outcome = run_job(config, j);
                            // Parts that fail are tried again (at most
                            // twice in a round); the failures are reported.
                            for _ in 0..2 {
                                let Outcome::Failed(msg) = &outcome else {
                                    break;
                                };
                                if j.who != Who::Libn5Parts {
                                    break;
                                }
                                let entry = retried.entry(key).or_insert((0, String::new()));
                                entry.0 += 1;
                                entry.1.clone_from(msg);
                                outcome = run_job(config, j);
                            }
                            if round == 0 && outcome.report().is_some() {
                                if !reference.exists() && j.who == Who::Libn5 {
                                    fs::rename(&j.dst, &reference)
                                        .map_err(|e| format!("{}: {e}", reference.display()))?;
                                } else if reference.exists() {
                                    let c = compare(&reference, &j.dst, j.who, layout, &levels);
                                    say!(
                                        "pyramid: {} against libn5: {}",
                                        j.who.name(),
                                        report::check_text(&c)
                                    );
                                    checks.push((key, c));
                                }
                            }
                            retire_tree(&j.dst)?;
                            results.insert(
                                key,
                                match previous {
                                    Some(p) => p.merge(outcome),
                                    None => outcome,
                                },
                            );
                        }
                        if round == 0 {
                            retire_tree(&reference)?;
                        }
                    }
                }
                if !config.keep {
                    retire_tree(src.parent().expect("a container"))?;
                }
            }
        }
        fs::remove_file(&raw).map_err(|e| format!("{}: {e}", raw.display()))?;
    }
    let run = PyrRun {
        command,
        date: sys::utc_now(),
        libn5_version: crate::libn5_version(),
        tensorstore: ts_version,
        zarrs,
        machine,
        copy_scaling: [copy_scaling_start, copy_scaling()],
        fs_type,
        dir: work.display().to_string(),
        load: (load_start, sys::load_average()),
        repeats: config.repeats,
        threads: config.threads.clone(),
        sizes: s.sizes.clone(),
        layouts: s.layouts.clone(),
        codecs,
        methods: s.methods.clone(),
        shard: s.shard,
        block,
        plans,
        ratios,
        results,
        checks,
        retried,
    };
    let text = run.markdown();
    println!("{text}");
    if let Some(path) = &config.markdown {
        fs::write(path, &text).map_err(|e| format!("{}: {e}", path.display()))?;
        say!("wrote {}", path.display());
    }
    if let Some(path) = &config.json {
        let doc = serde_json::to_string_pretty(&run.to_json()).expect("JSON");
        fs::write(path, doc).map_err(|e| format!("{}: {e}", path.display()))?;
        say!("wrote {}", path.display());
    }
    let failures = run.failures();
    if !failures.is_empty() {
        return Err(format!("{} measurement(s) failed", failures.len()));
    }
    Ok(())
}
