//! The NWB mode (`--format nwb`): a string array and a struct array of
//! 10⁶ elements each (10⁵ with `--quick`), as Zarr v3 and Zarr v2 arrays
//! that zarr-python 3.4 writes once (bench/peers_nwb.py `--write`, run by
//! `.venv-nwb`'s Python), read whole, cold and warm, by libn5 (in a child
//! process of this binary, `--one-nwb JOB`), by zarr-python 3 with its own
//! codec pipeline and with zarrs' (`.venv-zarrs`), and by tensorstore
//! (`.venv`), which opens none of them (its cells say why).
//!
//! This file owns the mode's jobs, libn5's measurements and the order of
//! the measurements (interleaved rounds, as the other modes); [`report`]
//! owns the tables, the targets and the JSON document.
//!
//! libn5 opens the array's directory as a container (`Container::open_with`,
//! untimed) and its root dataset, and times one read of every element:
//! [`Impl`](Who::Libn5) `libn5` with `read_region_bytes` for strings (the
//! UTF-8 bytes packed, with each element's length: the strings in memory,
//! as zarr-python's `arr[:]` gives them in one numpy StringDType array)
//! and `read_region` for structs (the binary layout: the rows packed, the
//! label as 16 UTF-32 code units, numpy's layout too, into a buffer made
//! before the timing); `libn5_strings` with `read_region_strings` (one
//! Rust `String` per element).

mod report;

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use n5::{Container, Mode};
use serde_json::{json, Value};

use crate::sys::{self, CacheMode};
use crate::workload::{measure, Outcome, Report};
use crate::{peers, Config};

/// Who reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Who {
    /// libn5: `read_region_bytes` (strings), `read_region` (structs).
    Libn5,
    /// libn5's `read_region_strings` (strings only).
    Libn5Strings,
    /// zarr-python 3 with its own codec pipeline.
    ZarrPython,
    /// zarr-python 3 with zarrs' codec pipeline.
    Zarrs,
    /// tensorstore's zarr3 or zarr driver.
    TensorStore,
}

impl Who {
    /// Every implementation, in table order.
    pub const ALL: [Who; 5] = [
        Who::Libn5,
        Who::Libn5Strings,
        Who::ZarrPython,
        Who::Zarrs,
        Who::TensorStore,
    ];

    /// The name in job descriptions and reports.
    pub fn name(self) -> &'static str {
        match self {
            Who::Libn5 => "libn5",
            Who::Libn5Strings => "libn5_strings",
            Who::ZarrPython => "zarr_python",
            Who::Zarrs => "zarrs",
            Who::TensorStore => "tensorstore",
        }
    }

    /// The implementation called `name`.
    pub fn parse(name: &str) -> Option<Who> {
        Who::ALL.into_iter().find(|w| w.name() == name)
    }

    /// Whether it reads `kind` (`read_region_strings` reads strings only).
    pub fn reads(self, kind: Kind) -> bool {
        self != Who::Libn5Strings || kind == Kind::Strings
    }

    /// Whether it runs in bench/peers_nwb.py.
    pub fn is_peer(self) -> bool {
        !matches!(self, Who::Libn5 | Who::Libn5Strings)
    }
}

/// What an array holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Variable-length UTF-8 strings (Zarr v3 `string` + `vlen-utf8`,
    /// Zarr v2 `|O` + the `vlen-utf8` filter).
    Strings,
    /// Rows of int32, int32, float64 and a fixed UTF-32 string of 16.
    Structs,
}

impl Kind {
    /// Both, in table order.
    pub const ALL: [Kind; 2] = [Kind::Strings, Kind::Structs];

    /// The name in job descriptions, file names and reports.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Strings => "strings",
            Kind::Structs => "structs",
        }
    }

    fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The file of the expected contents bench/peers_nwb.py writes.
    fn expected(self) -> &'static str {
        match self {
            Kind::Strings => "strings.vlen",
            Kind::Structs => "structs.raw",
        }
    }
}

/// The Zarr versions, in table order.
pub const FORMATS: [u8; 2] = [3, 2];

/// Which measurement: implementation, contents, Zarr version, threads,
/// warm.
pub type Key = (Who, Kind, u8, usize, bool);

/// One timed read (a child process).
#[derive(Clone, Debug)]
pub struct NwbJob {
    /// Who reads.
    pub who: Who,
    /// What the array holds.
    pub kind: Kind,
    /// Zarr v3 or v2.
    pub zarr_format: u8,
    /// libn5's `Options.threads`; zarr's `threading.max_workers`;
    /// tensorstore's concurrency limits.
    pub threads: usize,
    /// Timed repeats in the process (1 in rounds).
    pub repeats: usize,
    /// The page cache before the read.
    pub cache: CacheMode,
    /// The array's directory.
    pub array: PathBuf,
    /// The expected contents (see bench/peers_nwb.py).
    pub expected: PathBuf,
}

impl NwbJob {
    /// Whether the read finds the array in the page cache.
    pub fn warm(&self) -> bool {
        self.cache == CacheMode::Warm
    }

    /// The measurement's key.
    pub fn key(&self) -> Key {
        (
            self.who,
            self.kind,
            self.zarr_format,
            self.threads,
            self.warm(),
        )
    }

    /// The job as JSON, for `--one-nwb` and bench/peers_nwb.py.
    pub fn to_json(&self) -> Value {
        json!({
            "impl": self.who.name(),
            "kind": self.kind.name(),
            "zarr_format": self.zarr_format,
            "threads": self.threads,
            "repeats": self.repeats,
            "cache": self.cache.name(),
            "array": self.array,
            "expected": self.expected,
        })
    }

    /// Parses [`NwbJob::to_json`]'s output.
    pub fn from_json(v: &Value) -> Result<NwbJob, String> {
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
        Ok(NwbJob {
            who: Who::parse(text("impl")?).ok_or("job: unknown 'impl'")?,
            kind: Kind::parse(text("kind")?).ok_or("job: unknown 'kind'")?,
            zarr_format: number("zarr_format")? as u8,
            threads: number("threads")? as usize,
            repeats: number("repeats")? as usize,
            cache: CacheMode::parse(text("cache")?).ok_or("job: unknown 'cache'")?,
            array: text("array")?.into(),
            expected: text("expected")?.into(),
        })
    }
}

/// The hidden child mode `--one-nwb JOB`: runs one libn5 job, prints its
/// JSON report on stdout.
pub fn child(job_json: &str) -> ExitCode {
    let result = serde_json::from_str(job_json)
        .map_err(|e| format!("job: {e}"))
        .and_then(|v| NwbJob::from_json(&v))
        .and_then(|j| run_libn5(&j));
    match result {
        Ok(report) => {
            println!("{}", report.to_json());
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("{}", json!({"status": "error", "message": e}));
            ExitCode::FAILURE
        }
    }
}

/// Reads every file below `dir` once, so that all of it is in the page
/// cache.
fn warm_up(dir: &Path) -> Result<(), String> {
    let entries = fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.is_dir() {
            warm_up(&path)?;
        } else {
            fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    Ok(())
}

/// Before a timed read: a cold read evicts the array (see [`sys::evict`]),
/// a warm one reads it whole first. Returns the fraction of its pages left
/// resident by the eviction (NaN when warm).
fn prepare_cache(j: &NwbJob) -> Result<f64, String> {
    if j.warm() {
        warm_up(&j.array)?;
        return Ok(f64::NAN);
    }
    sys::evict(&j.array, j.cache).map_err(|e| format!("evicting {}: {e}", j.array.display()))
}

/// The strings of a vlen-utf8 encoding (the expected contents), as packed
/// bytes and lengths.
fn decode_expected(bytes: &[u8]) -> Result<(Vec<u8>, Vec<u64>), String> {
    let word = |at: usize| -> Result<usize, String> {
        bytes
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize)
            .ok_or_else(|| "the expected strings are cut short".to_string())
    };
    let n = word(0)?;
    let (mut data, mut lengths) = (Vec::new(), Vec::with_capacity(n));
    let mut at = 4;
    for _ in 0..n {
        let len = word(at)?;
        at += 4;
        data.extend_from_slice(
            bytes
                .get(at..at + len)
                .ok_or("the expected strings are cut short")?,
        );
        lengths.push(len as u64);
        at += len;
    }
    Ok((data, lengths))
}

/// What libn5 read, kept for the check after the timing.
enum Read {
    /// Nothing yet.
    None,
    /// `read_region_bytes`: the bytes and lengths.
    Packed(Vec<u8>, Vec<u64>),
    /// `read_region_strings`.
    Strings(Vec<String>),
}

/// Runs a libn5 job in this (child) process: opens the array (untimed;
/// the container is the array's directory, the dataset its root), reads
/// every element once (timed), and checks what it read against the
/// expected contents.
fn run_libn5(j: &NwbJob) -> Result<Report, String> {
    if j.who.is_peer() {
        return Err(format!("{} runs in bench/peers_nwb.py", j.who.name()));
    }
    let e = |e: n5::Error| e.to_string();
    let expected =
        fs::read(&j.expected).map_err(|err| format!("{}: {err}", j.expected.display()))?;
    let options = n5::Options {
        threads: j.threads,
        ..n5::Options::default()
    };
    let (report, (_, out, read)) = measure(
        j.repeats,
        || {
            let resident = prepare_cache(j)?;
            let c = Container::open_with(&j.array, Mode::Read, options.clone()).map_err(e)?;
            let ds = c.open_dataset("").map_err(e)?;
            let n: u64 = ds.attributes().dimensions.iter().product();
            // The caller's buffer of the binary layout, made before the
            // timing (as the other modes make it).
            let out = match j.kind {
                Kind::Structs => vec![0u8; n as usize * ds.element_size()],
                Kind::Strings => Vec::new(),
            };
            Ok(((ds, out, Read::None), resident))
        },
        |(ds, out, read)| {
            let shape = ds.attributes().dimensions.clone();
            let offset = vec![0; shape.len()];
            *read = match (j.kind, j.who) {
                (Kind::Structs, _) => {
                    ds.read_region(&offset, &shape, out).map_err(e)?;
                    Read::None
                }
                (Kind::Strings, Who::Libn5Strings) => {
                    Read::Strings(ds.read_region_strings(&offset, &shape).map_err(e)?)
                }
                (Kind::Strings, _) => {
                    let (data, lengths) = ds.read_region_bytes(&offset, &shape).map_err(e)?;
                    Read::Packed(data, lengths)
                }
            };
            Ok(())
        },
    )?;
    match (j.kind, read) {
        (Kind::Structs, _) => {
            if out != expected {
                return Err("libn5 read rows other than the expected ones".into());
            }
        }
        (Kind::Strings, read) => {
            let (data, lengths) = decode_expected(&expected)?;
            let same = match read {
                Read::Packed(d, l) => d == data && l == lengths,
                Read::Strings(s) => {
                    s.len() == lengths.len()
                        && s.iter().zip(&lengths).all(|(s, &l)| s.len() as u64 == l)
                        && s.concat().as_bytes() == data
                }
                Read::None => false,
            };
            if !same {
                return Err("libn5 read strings other than the expected ones".into());
            }
        }
    }
    Ok(report)
}

/// bench/peers_nwb.py, next to this crate's manifest.
pub fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("peers_nwb.py")
}

/// The default Python that writes the arrays: `<repo>/.venv-nwb/bin/python`
/// (zarr-python 3.4; `tests/setup.sh nwb`).
pub fn default_python_nwb() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv-nwb/bin/python")
}

/// The default Python of zarr-python and zarrs:
/// `<repo>/.venv-zarrs/bin/python` (`tests/setup.sh zarrs`).
pub fn default_python_zarrs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv-zarrs/bin/python")
}

/// Writes the four arrays and the expected contents into `dir` with
/// zarr-python (bench/peers_nwb.py `--write`); returns what it reports.
fn write_arrays(python: &Path, dir: &Path, n: u64, chunk: u64) -> Result<Value, String> {
    let run = Command::new(python)
        .arg(script())
        .arg("--write")
        .arg(dir)
        .arg(n.to_string())
        .arg(chunk.to_string())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    let text = String::from_utf8_lossy(&run.stdout);
    match serde_json::from_str(text.trim()) {
        Ok(v) if run.status.success() => Ok(v),
        _ => Err(format!(
            "{} {} --write failed ({}): {}",
            python.display(),
            script().display(),
            run.status,
            String::from_utf8_lossy(&run.stderr).trim()
        )),
    }
}

/// The Pythons of the mode and what they run.
struct Pythons<'a> {
    /// zarr-python and zarrs (`--python-zarrs`).
    zarrs: &'a Path,
    /// tensorstore (`--python`).
    tensorstore: &'a Path,
}

/// A peer's outcome and whether zarrs handed the read to zarr's own
/// pipeline.
fn run_peer(python: &Path, j: &NwbJob) -> (Outcome, bool) {
    match Command::new(python)
        .arg(script())
        .arg(j.to_json().to_string())
        .output()
    {
        Ok(out) => {
            let fell_back = String::from_utf8_lossy(&out.stdout)
                .lines()
                .rev()
                .find_map(|l| serde_json::from_str::<Value>(l).ok())
                .and_then(|v| v.get("fell_back").and_then(Value::as_bool))
                .unwrap_or(false);
            (Outcome::from_output(&out), fell_back)
        }
        Err(e) => (
            Outcome::Failed(format!("cannot run {}: {e}", python.display())),
            false,
        ),
    }
}

/// Runs `j` in a fresh process (this binary with `--one-nwb`, or
/// peers_nwb.py) and logs it; returns whether zarrs fell back.
fn run_job(pythons: &Pythons, j: &NwbJob) -> (Outcome, bool) {
    sys::prime_memory(128 << 20);
    let load = sys::load1();
    let (mut outcome, fell_back) = match j.who {
        Who::Libn5 | Who::Libn5Strings => (Outcome::of_child("--one-nwb", &j.to_json()), false),
        Who::ZarrPython | Who::Zarrs => run_peer(pythons.zarrs, j),
        Who::TensorStore => run_peer(pythons.tensorstore, j),
    };
    if let Outcome::Ok(r) = &mut outcome {
        r.load = vec![load; r.times.len()];
    }
    let result = match &outcome {
        Outcome::Ok(r) => format!(
            "{:.1} ms, CPU {:.1} ms, peak RSS {} MiB{}",
            r.median() * 1000.0,
            r.median_cpu() * 1000.0,
            r.maxrss_kib / 1024,
            if fell_back {
                " (zarr's own pipeline)"
            } else {
                ""
            }
        ),
        Outcome::NotApplicable(why) => format!("n/a: {why}"),
        Outcome::Failed(msg) => format!("ERROR: {msg}"),
    };
    say!(
        "nwb {:<13} {:<7} v{} {} thread(s) {}: {result} [load {load:.2}]",
        j.who.name(),
        j.kind.name(),
        j.zarr_format,
        j.threads,
        if j.warm() { "warm" } else { "cold" },
    );
    (outcome, fell_back)
}

/// Runs every job `--repeats` times, one timed read per process, round
/// robin; a job that fails or is not applicable is not run again.
fn run_rounds(
    config: &Config,
    pythons: &Pythons,
    jobs: &[NwbJob],
    results: &mut HashMap<Key, Outcome>,
    fell_back: &mut HashMap<Key, bool>,
) {
    for round in 0..config.repeats {
        if config.repeats > 1 {
            say!(
                "round {}/{} ({})",
                round + 1,
                config.repeats,
                sys::load_average()
            );
        }
        for j in jobs {
            let key = j.key();
            let previous = results.remove(&key);
            if let Some(done @ (Outcome::Failed(_) | Outcome::NotApplicable(_))) = previous {
                results.insert(key, done);
                continue;
            }
            let (outcome, fb) = run_job(pythons, j);
            *fell_back.entry(key).or_default() |= fb;
            let merged = match previous {
                Some(p) => p.merge(outcome),
                None => outcome,
            };
            results.insert(key, merged);
        }
    }
}

/// The NWB mode in the working directory `work`: the arrays, then for
/// each array the rounds of every implementation, thread count and cache
/// state, then the report.
pub fn run_in(config: &Config, command: String, work: &Path) -> Result<(), String> {
    let (n, chunk) = if config.quick {
        (100_000, 10_000)
    } else {
        (1_000_000, 100_000)
    };
    let machine = sys::Machine::detect();
    let load_start = sys::load_average();
    let fs_type = sys::fs_type(work);
    let data = work.join("nwb");
    say!(
        "nwb: writing the arrays with {} ({n} elements, chunks of {chunk})",
        config.python_nwb.display()
    );
    let written = write_arrays(&config.python_nwb, &data, n, chunk)?;
    say!("nwb: {written}");
    let versions = if config.peers {
        let zarrs = peers::versions(&config.python_zarrs, &script());
        let ts = peers::versions(&config.python, &script());
        match (zarrs, ts) {
            (Ok(z), Ok(t)) => Ok(json!({"zarrs_python": z, "tensorstore_python": t})),
            (Err(e), _) | (_, Err(e)) => Err(e),
        }
    } else {
        Err("skipped (--no-peers)".into())
    };
    match &versions {
        Ok(v) => say!("peers: {v}"),
        Err(e) => say!("peers unavailable: {e}"),
    }
    let mut whos = vec![Who::Libn5, Who::Libn5Strings];
    if let Ok(v) = &versions {
        if v["zarrs_python"]["zarr"].is_string() {
            whos.push(Who::ZarrPython);
        }
        if v["zarrs_python"]["zarrs"].is_string() {
            whos.push(Who::Zarrs);
        }
        if v["tensorstore_python"]["tensorstore"].is_string() {
            whos.push(Who::TensorStore);
        }
    }
    let caches = if config.cache == CacheMode::Warm {
        vec![CacheMode::Warm]
    } else {
        vec![config.cache, CacheMode::Warm]
    };
    let pythons = Pythons {
        zarrs: &config.python_zarrs,
        tensorstore: &config.python,
    };
    let mut results = HashMap::new();
    let mut fell_back = HashMap::new();
    for kind in Kind::ALL {
        for zarr_format in FORMATS {
            let mut jobs = Vec::new();
            for &cache in &caches {
                for &who in whos.iter().filter(|w| w.reads(kind)) {
                    for &threads in &config.threads {
                        jobs.push(NwbJob {
                            who,
                            kind,
                            zarr_format,
                            threads,
                            repeats: 1,
                            cache,
                            array: data.join(format!("{}-v{zarr_format}.zarr", kind.name())),
                            expected: data.join(kind.expected()),
                        });
                    }
                }
            }
            run_rounds(config, &pythons, &jobs, &mut results, &mut fell_back);
        }
    }
    let resident = results
        .values()
        .filter_map(Outcome::report)
        .fold(f64::NAN, |a, r| a.max(r.resident_after_evict));
    let run = report::NwbRun {
        command,
        date: sys::utc_now(),
        libn5_version: crate::libn5_version(),
        versions,
        written,
        machine,
        fs_type,
        dir: work.display().to_string(),
        load: (load_start, sys::load_average()),
        cache: config.cache,
        resident,
        repeats: config.repeats,
        threads: config.threads.clone(),
        whos,
        caches: caches.iter().map(|&c| c == CacheMode::Warm).collect(),
        results,
        fell_back,
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
