//! n5-bench: the libn5 benchmark. One command from the repository root,
//!
//! ```text
//! cargo run --release -p n5-bench -- [--quick]        (or bench/run.sh [--quick])
//! ```
//!
//! writes a synthetic uint16 volume with libn5, reads it back in several
//! ways, and prints a markdown table comparing libn5, measured in the same
//! run, with two floors (plain file I/O; the codec library alone plus file
//! I/O) and with the peers tensorstore and z5py (bench/peers.py in the
//! project's venv). `--format zarr3-sharded` (or `all`) measures a sharded
//! Zarr v3 array the same way, against tensorstore's zarr3 driver and
//! zarr-python 3 (bench/peers_zarr3.py in `.venv-zarr3`), and libn5 writing
//! it with HDF5 shards (`hdf5_shards`) against plain libn5; `--format hdf5`
//! a chunked HDF5 dataset against h5py (module [`hdf5`]); `--format nwb`
//! string and struct arrays of 10⁶ elements (Zarr v3 and v2, written by
//! zarr-python 3.4) read whole against zarr-python 3 with and without
//! zarrs, and tensorstore (module [`nwb`]). `--help` lists the options.
//!
//! This file owns the command line, the working directory and the order of
//! the measurements; each measurement runs in a child process: this binary
//! again with the hidden `--one JOB` (libn5 and the floors), or peers.py.
//! Modules: [`data`] (volume and PRNG), [`workload`] (codecs, workloads,
//! jobs, libn5's measurements), [`floor`], [`sharded`] (the floors of the
//! sharded layout), [`peers`], [`report`], [`sys`] (page cache, memory,
//! machine), [`remote`] (the same on S3, `--storage s3`).

mod cells;
mod data;
mod floor;
mod peers;
mod report;
mod sharded;
mod sys;
mod workload;

use std::collections::HashMap;
use std::ffi::CStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use report::{Run, ScalingRow};
use sys::CacheMode;
use workload::{Codec, Impl, Job, Layout, Outcome, Region, Workload};

/// The `--help` text.
const USAGE: &str = "\
n5-bench: libn5 against its I/O and codec floors and the peers (tensorstore,
z5py; zarr-python 3 for the sharded Zarr v3 layout)

usage: cargo run --release -p n5-bench -- [options]     (from the repository root)

  --quick            256³ volume and a 150³ region (default: 512³ and 300³)
  --repeats N        times each measurement is timed, each in its own process,
                     in round-robin rounds; the median is reported (default 3)
  --threads LIST     thread counts, comma-separated (default 1,2)
  --format WHAT      n5 (default: N5 datasets in 64³ blocks), zarr3-sharded (a
                     Zarr v3 array of shards of half the volume per dimension
                     holding 64³ inner chunks; lz4 left out; libn5 also
                     with hdf5_shards, every shard an HDF5 file, against
                     plain libn5; peers tensorstore's zarr3 driver and
                     zarr-python 3),
                     all, or
                     hdf5 (one chunked HDF5 dataset, raw and gzip, reads
                     cold and warm, against h5py and floors; needs the
                     benchmark built with --features hdf5, as bench/run.sh
                     builds it; see bench/README.md), or
                     nwb (10⁶ strings and 10⁶ struct rows, Zarr v3 and v2,
                     written by zarr-python 3.4, read whole, cold and warm,
                     against zarr-python 3 with and without zarrs and
                     tensorstore; see bench/README.md), or
                     pyramid (multiscale pyramids of 512³ and 1024³, 256³
                     and 512³ with --quick, N5 and sharded Zarr v3, raw and
                     zstd, mean and mode: n5 pyramid against tensorstore's
                     downsample driver and zarrs_ome, and in two parts;
                     see bench/README.md)
  --codecs LIST      of raw,gzip,lz4,zstd,blosc (default: all; pyramid:
                     raw,zstd)
  --sizes LIST       pyramid: volume edges (default 512,1024; --quick 256,512)
  --layouts LIST     pyramid: of n5,zarr3 (default: both)
  --methods LIST     pyramid: of mean,mode (default: both)
  --shard N          pyramid: Zarr v3 shard edge (default 128)
  --n5-cli PATH      pyramid: the n5 tool (default: target/release/n5)
  --zarrs-ome PATH   pyramid: zarrs_ome (default:
                     <repo>/build/tools/bin/zarrs_ome, which bench/run.sh
                     installs)
  --workloads LIST   of write,read_all,read_blocks,read_region (default: all)
  --cache MODE       page cache before reads: fadvise (default: fsync and
                     posix_fadvise DONTNEED on every container file), drop
                     (also sync; echo 3 > /proc/sys/vm/drop_caches; root only)
                     or warm (no eviction)
  --warm             same as --cache warm
  --storage WHERE    fs (default: the local disk), s3 (S3 on SeaweedFS on
                     127.0.0.1 behind a latency proxy; lz4 left out) or all
  --latency LIST     ms added per request on S3, comma-separated (default 0,20)
  --quiet CORES      before each measuring process, wait (at most 5 minutes)
                     until the machine keeps fewer than CORES cores busy
                     (sampled over 0.5 s while the benchmark is idle); the
                     value seen is reported with each measurement
  --no-peers         skip the peers (tensorstore, z5py, zarr-python)
  --python PATH      Python with the peers (default: <repo>/.venv/bin/python,
                     made by ./tests/run.sh or bench/run.sh)
  --python-zarr3 PATH  Python with zarr-python 3, for --format zarr3-sharded
                     (default: <repo>/.venv-zarr3/bin/python, made by
                     tests/setup.sh zarr3py)
  --python-nwb PATH  Python with zarr-python 3.4 that writes the arrays of
                     --format nwb (default: <repo>/.venv-nwb/bin/python,
                     made by tests/setup.sh nwb)
  --python-zarrs PATH  Python with zarr-python 3.4 and zarrs that reads them
                     (default: <repo>/.venv-zarrs/bin/python, made by
                     tests/setup.sh zarrs)
  --scaling          also libn5 whole-volume write and read at 256³, 512³ and
                     1024×1024×512 (raw and gzip, 2 threads; needs ~3 GiB disk)
  --dir DIR          work in a fresh subdirectory of DIR (default: $TMPDIR or
                     /tmp); ~1.3 GiB free needed for the full run
  --keep             keep the working directory
  --json FILE        write everything (all times, memory, machine) as JSON
  --markdown FILE    write the report, headed with the command and date, to
                     FILE (e.g. bench/RESULTS.md)
  -h, --help         this text
";

/// Command-line settings.
#[derive(Debug)]
struct Config {
    quick: bool,
    repeats: usize,
    threads: Vec<usize>,
    codecs: Vec<Codec>,
    workloads: Vec<Workload>,
    layouts: Vec<Layout>,
    cache: CacheMode,
    peers: bool,
    python: PathBuf,
    python_zarr3: PathBuf,
    scaling: bool,
    dir: Option<PathBuf>,
    keep: bool,
    json: Option<PathBuf>,
    markdown: Option<PathBuf>,
    storage_fs: bool,
    storage_s3: bool,
    latencies: Vec<u64>,
    /// `--quiet`: the most cores the machine may keep busy when a
    /// measuring process starts.
    quiet: Option<f64>,
    /// `--format hdf5`: the HDF5 mode (src/hdf5/) instead of the layouts.
    hdf5: bool,
    /// `--format nwb`: the NWB mode (src/nwb/) instead of the layouts.
    nwb: bool,
    /// The Python that writes the NWB mode's arrays.
    python_nwb: PathBuf,
    /// The Python of zarr-python and zarrs in the NWB mode.
    python_zarrs: PathBuf,
    /// `--format pyramid`: the pyramid mode (src/pyramid/).
    pyramid: bool,
    /// The pyramid mode's settings (sizes `None`: by `--quick`).
    pyr_sizes: Option<Vec<u64>>,
    pyr_layouts: Vec<pyramid::Layout>,
    pyr_methods: Vec<&'static str>,
    pyr_shard: u64,
    n5_cli: PathBuf,
    zarrs_ome: PathBuf,
}

/// Parses a comma-separated list with `item`.
fn list<T>(text: &str, item: impl Fn(&str) -> Option<T>) -> Result<Vec<T>, String> {
    text.split(',')
        .map(|s| item(s.trim()).ok_or_else(|| format!("unknown item '{s}' in '{text}'")))
        .collect()
}

impl Config {
    /// Parses the arguments after the program name.
    fn parse(args: &[String]) -> Result<Config, String> {
        let mut c = Config {
            quick: false,
            repeats: 3,
            threads: vec![1, 2],
            codecs: Codec::ALL.to_vec(),
            workloads: Workload::ALL.to_vec(),
            layouts: vec![Layout::N5],
            cache: CacheMode::Fadvise,
            peers: true,
            python: peers::default_python(),
            python_zarr3: peers::default_python_zarr3(),
            scaling: false,
            dir: None,
            keep: false,
            json: None,
            markdown: None,
            storage_fs: true,
            storage_s3: false,
            latencies: vec![0, 20],
            quiet: None,
            hdf5: false,
            nwb: false,
            python_nwb: nwb::default_python_nwb(),
            python_zarrs: nwb::default_python_zarrs(),
            pyramid: false,
            pyr_sizes: None,
            pyr_layouts: pyramid::Layout::ALL.to_vec(),
            pyr_methods: pyramid::METHODS.to_vec(),
            pyr_shard: 128,
            n5_cli: pyramid::default_n5(),
            zarrs_ome: pyramid::default_zarrs_ome(),
        };
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            let mut value = || {
                it.next()
                    .cloned()
                    .ok_or_else(|| format!("{arg} needs a value"))
            };
            match arg.as_str() {
                "--quick" => c.quick = true,
                "--repeats" => {
                    c.repeats = value()?
                        .parse()
                        .ok()
                        .filter(|&n| n > 0)
                        .ok_or("--repeats needs a positive integer")?
                }
                "--threads" => {
                    c.threads = list(&value()?, |s| s.parse().ok().filter(|&n| n > 0))?;
                    c.threads.sort_unstable();
                    c.threads.dedup();
                }
                "--codecs" => {
                    c.codecs = list(&value()?, Codec::parse)?;
                }
                "--sizes" => {
                    c.pyr_sizes = Some(list(&value()?, |s| {
                        s.parse().ok().filter(|&n: &u64| (64..=4096).contains(&n))
                    })?)
                }
                "--layouts" => c.pyr_layouts = list(&value()?, pyramid::Layout::parse)?,
                "--methods" => {
                    c.pyr_methods = list(&value()?, |s| {
                        pyramid::METHODS.into_iter().find(|m| *m == s)
                    })?
                }
                "--shard" => {
                    c.pyr_shard = value()?
                        .parse()
                        .ok()
                        .filter(|&n: &u64| n >= 64 && n % 64 == 0)
                        .ok_or("--shard needs a multiple of 64")?
                }
                "--n5-cli" => c.n5_cli = value()?.into(),
                "--zarrs-ome" => c.zarrs_ome = value()?.into(),
                "--workloads" => c.workloads = list(&value()?, Workload::parse)?,
                "--format" => {
                    let v = value()?;
                    c.hdf5 = v == "hdf5";
                    c.nwb = v == "nwb";
                    c.pyramid = v == "pyramid";
                    c.layouts = match v.as_str() {
                        "all" => Layout::ALL.to_vec(),
                        "hdf5" | "nwb" | "pyramid" => Vec::new(),
                        name => {
                            vec![Layout::parse(name)
                                .ok_or("--format: n5, zarr3-sharded, all, hdf5, nwb or pyramid")?]
                        }
                    }
                }
                "--cache" => {
                    c.cache = CacheMode::parse(&value()?).ok_or("--cache: fadvise, drop or warm")?
                }
                "--warm" => c.cache = CacheMode::Warm,
                "--storage" => {
                    let v = value()?;
                    (c.storage_fs, c.storage_s3) = match v.as_str() {
                        "fs" => (true, false),
                        "s3" => (false, true),
                        "all" => (true, true),
                        _ => return Err("--storage: fs, s3 or all".into()),
                    }
                }
                "--latency" => {
                    c.latencies = list(&value()?, |s| s.parse().ok().filter(|&ms| ms <= 1000))?
                }
                "--quiet" => {
                    c.quiet = Some(
                        value()?
                            .parse()
                            .ok()
                            .filter(|&n: &f64| n > 0.0)
                            .ok_or("--quiet needs a positive number of cores")?,
                    )
                }
                "--no-peers" => c.peers = false,
                "--python" => c.python = value()?.into(),
                "--python-zarr3" => c.python_zarr3 = value()?.into(),
                "--python-nwb" => c.python_nwb = value()?.into(),
                "--python-zarrs" => c.python_zarrs = value()?.into(),
                "--scaling" => c.scaling = true,
                "--dir" => c.dir = Some(value()?.into()),
                "--keep" => c.keep = true,
                "--json" => c.json = Some(value()?.into()),
                "--markdown" => c.markdown = Some(value()?.into()),
                other => return Err(format!("unknown argument '{other}'")),
            }
        }
        Ok(c)
    }
}

/// Prints a progress line to stderr.
macro_rules! say {
    ($($arg:tt)*) => { eprintln!("[n5-bench] {}", format!($($arg)*)) };
}

// After `say!`, which they use.
mod hdf5;
mod nwb;
mod pyramid;
mod remote;

/// The parent (the benchmark) or, with `--one`, a child (one measurement).
fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--one") {
        return child(args.get(1).map_or("", String::as_str));
    }
    if args.first().map(String::as_str) == Some("--one-hdf5") {
        return hdf5::child(args.get(1).map_or("", String::as_str));
    }
    if args.first().map(String::as_str) == Some("--one-nwb") {
        return nwb::child(args.get(1).map_or("", String::as_str));
    }
    if args.first().map(String::as_str) == Some("--one-pyramid") {
        return pyramid::child(args.get(1).map_or("", String::as_str));
    }
    if args.iter().any(|a| a == "-h" || a == "--help") {
        print!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let config = match Config::parse(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("n5-bench: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let command = std::iter::once("cargo run --release -p n5-bench --".to_string())
        .chain(args.iter().cloned())
        .collect::<Vec<_>>()
        .join(" ");
    match run(&config, command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("n5-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The hidden child mode: runs one job, prints its JSON report on stdout.
fn child(job_json: &str) -> ExitCode {
    let outcome = match serde_json::from_str(job_json)
        .map_err(|e| format!("job: {e}"))
        .and_then(|v| Job::from_json(&v))
    {
        Err(e) => Outcome::Failed(e),
        Ok(job) => match job.imp {
            Impl::Libn5 | Impl::Libn5Hdf5 => workload::run_libn5(&job),
            Impl::FloorIo | Impl::FloorCodec | Impl::FloorOut => {
                let report = if job.layout == Layout::Zarr3Sharded {
                    sharded::run_floor(&job)
                } else {
                    floor::run_floor(&job)
                };
                report.map_or_else(Outcome::Failed, Outcome::Ok)
            }
            _ => Outcome::Failed("peers run in bench/peers.py".into()),
        },
    };
    println!("{}", outcome.to_json());
    match outcome {
        Outcome::Failed(_) => ExitCode::FAILURE,
        _ => ExitCode::SUCCESS,
    }
}

/// Runs every job `--repeats` times, one timed repeat per process, round
/// robin (all jobs once, then all again...), so that changes in the
/// machine's load hit every implementation alike. A job that fails or is
/// not applicable is not run again. Results are merged into `results`.
fn run_rounds(config: &Config, jobs: &[Job], results: &mut HashMap<report::Key, Outcome>) {
    for round in 0..config.repeats {
        if config.repeats > 1 {
            say!("round {}/{}", round + 1, config.repeats);
        }
        for job in jobs {
            let key = (job.imp, job.workload, job.codec, job.threads);
            let previous = results.remove(&key);
            if let Some(done @ (Outcome::Failed(_) | Outcome::NotApplicable(_))) = previous {
                results.insert(key, done);
                continue;
            }
            let outcome = run_job(config, job);
            let merged = match previous {
                Some(p) => p.merge(outcome),
                None => outcome,
            };
            results.insert(key, merged);
        }
    }
}

/// How long `--quiet` waits for a quiet machine before measuring anyway.
pub(crate) const QUIET_PATIENCE: std::time::Duration = std::time::Duration::from_secs(300);

/// Runs `job` in a fresh process (this binary or peers.py) and logs it.
fn run_job(config: &Config, job: &Job) -> Outcome {
    // --quiet: the machine's other work below the limit first.
    let busy = config.quiet.map(|max| {
        let (busy, waited) = sys::wait_quiet(max, QUIET_PATIENCE);
        if waited >= QUIET_PATIENCE {
            say!("the machine kept {busy:.2} cores busy for {QUIET_PATIENCE:?}: measuring anyway");
        } else if waited.as_secs() >= 5 {
            say!("waited {:.0} s for a quiet machine", waited.as_secs_f64());
        }
        busy
    });
    // Every measuring process finds as much memory backed by the host as
    // the largest buffer it fills (see sys::prime_memory).
    sys::prime_memory((job.dims.iter().product::<u64>() * Job::ELEM) as usize);
    let load = sys::load1();
    let mut outcome = if job.imp == Impl::ZarrPython {
        peers::run(&config.python_zarr3, job)
    } else if job.imp.is_peer() {
        peers::run(&config.python, job)
    } else {
        Outcome::of_child("--one", &job.to_json())
    };
    if let Outcome::Ok(r) = &mut outcome {
        r.load = vec![load; r.times.len()];
        r.busy = busy.map_or_else(Vec::new, |b| vec![b; r.times.len()]);
    }
    let result = match &outcome {
        Outcome::Ok(r) => format!(
            "{:.1} ms (median of {}), CPU {:.1} ms, peak RSS {} MiB, load {load:.2}{}",
            r.median() * 1000.0,
            r.times.len(),
            r.median_cpu() * 1000.0,
            r.maxrss_kib / 1024,
            busy.map_or_else(String::new, |b| format!(", {b:.2} cores busy before"))
        ),
        Outcome::NotApplicable(why) => format!("n/a: {why}"),
        Outcome::Failed(msg) => format!("ERROR: {msg}"),
    };
    let warm = if job.cache == CacheMode::Warm && config.cache != CacheMode::Warm {
        " (warm cache)"
    } else {
        ""
    };
    let layout = match job.layout {
        Layout::N5 => "",
        Layout::Zarr3Sharded => " sharded",
    };
    say!(
        "{:<11} {:<11} {:<5} {} thread(s){layout}{warm}: {result}",
        job.imp.name(),
        job.workload.name(),
        job.codec.name(),
        job.threads
    );
    outcome
}

/// libn5's version string, with the repository's commit when known (and a
/// note when src/ has uncommitted changes).
fn libn5_version() -> String {
    // SAFETY: n5_version_string returns a pointer to a static NUL-terminated
    // string that is never freed.
    let version = unsafe { CStr::from_ptr(n5::ffi::status::n5_version_string()) }
        .to_string_lossy()
        .into_owned();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(&repo)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    match git(&["rev-parse", "--short", "HEAD"]) {
        Some(commit) => {
            let dirty = git(&["status", "--porcelain", "--", "src"]).is_some_and(|s| !s.is_empty());
            let note = if dirty { ", src/ modified" } else { "" };
            format!("{version} (commit {commit}{note})")
        }
        None => version,
    }
}

/// Creates a fresh working directory under `--dir`, $TMPDIR or /tmp.
fn make_work_dir(config: &Config) -> Result<PathBuf, String> {
    let parent = config
        .dir
        .clone()
        .or_else(|| std::env::var_os("TMPDIR").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    let dir = parent.join(format!("n5-bench.{}", std::process::id()));
    fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    dir.canonicalize()
        .map_err(|e| format!("{}: {e}", dir.display()))
}

/// Generates the volume of `dims` into the file `raw`; returns the
/// foreground fraction.
fn write_volume(dims: [u64; 3], raw: &Path) -> Result<f64, String> {
    let t = Instant::now();
    let (volume, foreground) = data::generate_volume(dims);
    fs::write(raw, &volume).map_err(|e| format!("{}: {e}", raw.display()))?;
    say!(
        "volume {}×{}×{} uint16 ({} MiB) generated in {:.1} s, {:.1}% foreground",
        dims[0],
        dims[1],
        dims[2],
        volume.len() >> 20,
        t.elapsed().as_secs_f64(),
        foreground * 100.0
    );
    Ok(foreground)
}

/// The container of an implementation for a codec and layout (floors
/// read libn5's).
fn container_of(work: &Path, imp: Impl, codec: Codec, layout: Layout) -> PathBuf {
    let owner = match imp {
        Impl::Libn5 | Impl::FloorIo | Impl::FloorCodec | Impl::FloorOut => "libn5",
        // Libn5Hdf5 and the peers: a container of their own.
        other => other.name(),
    };
    work.join(format!("{owner}-{}.{}", codec.name(), layout.suffix()))
}

/// Runs the whole benchmark.
fn run(config: &Config, command: String) -> Result<(), String> {
    let work = make_work_dir(config)?;
    let result = if config.hdf5 {
        hdf5::run_in(config, command, &work)
    } else if config.nwb {
        nwb::run_in(config, command, &work)
    } else if config.pyramid {
        let settings = pyramid::PyrSettings {
            sizes: config.pyr_sizes.clone().unwrap_or_else(|| {
                if config.quick {
                    vec![256, 512]
                } else {
                    vec![512, 1024]
                }
            }),
            layouts: config.pyr_layouts.clone(),
            methods: config.pyr_methods.clone(),
            shard: config.pyr_shard,
            n5: config.n5_cli.clone(),
            zarrs_ome: config.zarrs_ome.clone(),
        };
        pyramid::run_in(config, &settings, command, &work)
    } else {
        run_in(config, command, &work)
    };
    if config.keep {
        say!("kept {}", work.display());
    } else if let Err(e) = fs::remove_dir_all(&work) {
        say!("could not remove {}: {e}", work.display());
    }
    result
}

/// What every job of the main run shares.
struct Setup<'a> {
    config: &'a Config,
    work: &'a Path,
    raw: PathBuf,
    dims: [u64; 3],
    block: [u64; 3],
    layout: Layout,
    /// The shards of the sharded layout: half the volume per dimension.
    shard: [u64; 3],
    region: Region,
    positions: Vec<[u64; 3]>,
}

impl Setup<'_> {
    /// One timed repeat of a measurement.
    fn job(&self, imp: Impl, workload: Workload, codec: Codec, threads: usize) -> Job {
        Job {
            imp,
            workload,
            codec,
            threads,
            repeats: 1,
            cache: self.config.cache,
            raw: self.raw.clone(),
            dims: self.dims,
            block: self.block,
            layout: self.layout,
            shard: self.shard,
            container: container_of(self.work, imp, codec, self.layout),
            scratch: self.work.join(format!("floor-{}", codec.name())),
            region: self.region.clone(),
            positions: self.positions.clone(),
            storage: None,
        }
    }

    /// The jobs of `workload` and `codec`: every implementation that
    /// measures them and every thread count.
    fn jobs(&self, imps: &[Impl], workload: Workload, codec: Codec) -> Vec<Job> {
        imps.iter()
            .filter(|imp| imp.measures(workload, codec))
            .flat_map(|&imp| {
                let threads = &self.config.threads;
                threads
                    .iter()
                    .map(move |&t| self.job(imp, workload, codec, t))
            })
            .collect()
    }
}

/// Tries drop_caches once and describes how reads get a cold cache; fails
/// when `--cache drop` is impossible.
fn page_cache(config: &Config) -> Result<(String, Result<(), String>), String> {
    let drop_caches = if config.cache == CacheMode::Warm {
        Err("not tried (--warm)".to_string())
    } else {
        sys::drop_caches().map_err(|e| e.to_string())
    };
    if let (CacheMode::Drop, Err(e)) = (config.cache, &drop_caches) {
        return Err(format!("--cache drop: /proc/sys/vm/drop_caches: {e}"));
    }
    let drop_text = match &drop_caches {
        Ok(()) => "allowed here".to_string(),
        Err(e) => format!("not allowed here ({e})"),
    };
    let text = match config.cache {
        CacheMode::Fadvise => format!(
            "cold: before every timed read, every file of the container is fsynced and evicted with posix_fadvise(POSIX_FADV_DONTNEED); drop_caches {drop_text} but not used (--cache drop)"
        ),
        CacheMode::Drop => "cold: before every timed read, fsync + posix_fadvise(POSIX_FADV_DONTNEED) on every container file, then sync; echo 3 > /proc/sys/vm/drop_caches (dentries and inodes too)".to_string(),
        CacheMode::Warm => "warm (--warm): reads hit the page cache left by the writes".to_string(),
    };
    say!("page cache: {text}");
    Ok((text, drop_caches))
}

/// The peers' versions (with zarr-python 3's as `zarr_python` when the
/// sharded layout is measured).
fn peer_versions(config: &Config) -> Result<serde_json::Value, String> {
    let mut versions = if config.peers {
        peers::versions(&config.python, &peers::script())
    } else {
        Err("skipped (--no-peers)".into())
    };
    if config.peers && config.layouts.contains(&Layout::Zarr3Sharded) {
        let zarr3 = peers::versions(&config.python_zarr3, &peers::script_zarr3());
        if let Err(e) = &zarr3 {
            say!("zarr-python 3 unavailable: {e}");
        }
        if let (Err(e), Ok(_)) = (&versions, &zarr3) {
            // zarr-python 3 still runs without the first venv.
            say!("peers unavailable: {e}");
            versions = Ok(serde_json::json!({}));
        }
        if let Ok(doc) = &mut versions {
            let zarr = zarr3.as_ref().ok().and_then(|v| v.get("zarr")).cloned();
            doc["zarr_python"] = zarr.unwrap_or(serde_json::Value::Null);
            if let Ok(v) = &zarr3 {
                doc["zarr_python_s3fs"] = v.get("s3fs").cloned().unwrap_or_default();
            }
        }
    }
    match &versions {
        Ok(v) => say!("peers: {v}"),
        Err(e) => say!("peers unavailable: {e}"),
    }
    versions
}

/// The implementations to measure in `layout`: libn5 (in the sharded
/// layout also with HDF5 shards, right after it in every round), the
/// floors and the installed peers of the layout.
fn implementations(versions: &Result<serde_json::Value, String>, layout: Layout) -> Vec<Impl> {
    let mut imps = vec![Impl::Libn5];
    if layout == Layout::Zarr3Sharded {
        imps.push(Impl::Libn5Hdf5);
    }
    imps.extend([Impl::FloorIo, Impl::FloorCodec, Impl::FloorOut]);
    let peers: &[(Impl, &str)] = match layout {
        Layout::N5 => &[(Impl::Tensorstore, "tensorstore"), (Impl::Z5py, "z5py")],
        Layout::Zarr3Sharded => &[
            (Impl::Tensorstore, "tensorstore"),
            (Impl::ZarrPython, "zarr_python"),
        ],
    };
    for &(imp, name) in peers {
        let installed = versions
            .as_ref()
            .is_ok_and(|v| v.get(name).is_some_and(|x| x.is_string()));
        if installed {
            imps.push(imp);
        }
    }
    imps
}

/// What measuring one codec found besides the measurements.
struct CodecExtras {
    /// libn5's dataset size over the raw volume's.
    ratio: Option<f64>,
    /// The size of libn5's array with HDF5 shards over its plain one's.
    hdf5_ratio: Option<f64>,
    /// The I/O floor's whole read of the raw container, cold and warm.
    warm_check: Option<(f64, f64)>,
}

/// Why libn5 refused to write the array with HDF5 shards, if its write of
/// `codec` was not applicable: its reads then are not either.
fn hdf5_refusal(results: &HashMap<report::Key, Outcome>, codec: Codec) -> Option<String> {
    results.iter().find_map(|((imp, w, c, _), o)| match o {
        Outcome::NotApplicable(why)
            if *imp == Impl::Libn5Hdf5 && *w == Workload::Write && *c == codec =>
        {
            Some(why.clone())
        }
        _ => None,
    })
}

/// Every workload with `codec`: the writes (which make the containers),
/// then the reads; removes the containers afterwards unless `--keep`.
fn measure_codec(
    setup: &Setup,
    imps: &[Impl],
    codec: Codec,
    results: &mut HashMap<report::Key, Outcome>,
) -> Result<CodecExtras, String> {
    let config = setup.config;
    let reads: Vec<Workload> = config
        .workloads
        .iter()
        .copied()
        .filter(|&w| w != Workload::Write)
        .collect();
    let mut refused = None;
    if config.workloads.contains(&Workload::Write) {
        run_rounds(config, &setup.jobs(imps, Workload::Write, codec), results);
        refused = hdf5_refusal(results, codec);
    } else if !reads.is_empty() {
        // Untimed: the containers the reads need.
        for &imp in imps {
            if imp.is_libn5() || imp.is_peer() {
                let outcome = run_job(
                    config,
                    &setup.job(imp, Workload::Write, codec, config.threads[0]),
                );
                if let (Impl::Libn5Hdf5, Outcome::NotApplicable(why)) = (imp, outcome) {
                    refused = Some(why);
                }
            }
        }
    }
    // No array with HDF5 shards, no reads of it.
    if let Some(why) = refused {
        for &w in &reads {
            for &t in &config.threads {
                results.insert(
                    (Impl::Libn5Hdf5, w, codec, t),
                    Outcome::NotApplicable(why.clone()),
                );
            }
        }
    }
    let vol_bytes = setup.dims.iter().product::<u64>() * Job::ELEM;
    let size = |imp| {
        sys::bytes_below(
            &container_of(setup.work, imp, codec, setup.layout).join(workload::DATASET),
        )
        .ok()
    };
    let plain = size(Impl::Libn5);
    let ratio = plain.map(|b| b as f64 / vol_bytes as f64);
    let hdf5_ratio = match (
        imps.contains(&Impl::Libn5Hdf5),
        size(Impl::Libn5Hdf5),
        plain,
    ) {
        (true, Some(h), Some(p)) if h > 0 && p > 0 => Some(h as f64 / p as f64),
        _ => None,
    };
    for &w in &reads {
        run_rounds(config, &setup.jobs(imps, w, codec), results);
    }
    // Does eviction matter here? The I/O floor's whole raw read, warm.
    let t = config.threads[0];
    let cold = results
        .get(&(Impl::FloorIo, Workload::ReadAll, codec, t))
        .and_then(Outcome::report)
        .map(workload::Report::median);
    let mut warm_check = None;
    if let (Codec::Raw, Some(cold), false) = (codec, cold, config.cache == CacheMode::Warm) {
        let mut warm = setup.job(Impl::FloorIo, Workload::ReadAll, codec, t);
        warm.cache = CacheMode::Warm;
        if let Some(w) = run_job(config, &warm).report() {
            warm_check = Some((cold, w.median()));
        }
    }
    if !config.keep {
        for imp in [
            Impl::Libn5,
            Impl::Libn5Hdf5,
            Impl::Tensorstore,
            Impl::Z5py,
            Impl::ZarrPython,
        ] {
            workload::retire_tree(&container_of(setup.work, imp, codec, setup.layout))?;
        }
        workload::retire_tree(&setup.work.join(format!("floor-{}", codec.name())))?;
    }
    Ok(CodecExtras {
        ratio,
        hdf5_ratio,
        warm_check,
    })
}

/// The benchmark in the working directory `work`: checks, data, every
/// layout and codec (local disk, then S3), the scaling rows, the report.
fn run_in(config: &Config, command: String, work: &Path) -> Result<(), String> {
    let dims: [u64; 3] = if config.quick { [256; 3] } else { [512; 3] };
    let block = [64u64; 3];
    let vol_bytes = dims.iter().product::<u64>() * Job::ELEM;

    let machine = sys::Machine::detect();
    let load_start = sys::load_average();
    let fresh_memory_ms = sys::fresh_memory_ms(vol_bytes as usize);
    say!(
        "fresh memory: {:.0} ms to first write {} MiB, {:.0} ms again; with huge pages advised {:.0} and {:.0} ms",
        fresh_memory_ms[0],
        vol_bytes >> 20,
        fresh_memory_ms[1],
        fresh_memory_ms[2],
        fresh_memory_ms[3]
    );
    let fs_type = sys::fs_type(work);
    let free = sys::free_bytes(work).unwrap_or(u64::MAX);
    let needed = 5 * vol_bytes + if config.scaling { 3 << 30 } else { 0 };
    say!(
        "working directory {} ({fs_type}, {} MiB free, about {} MiB needed)",
        work.display(),
        free >> 20,
        needed >> 20
    );
    if free < needed {
        say!("WARNING: probably not enough free space; use --dir");
    }
    if fs_type == "tmpfs" && config.cache != CacheMode::Warm {
        say!("WARNING: tmpfs keeps files in memory: reads cannot be cold; use --dir on a disk");
    }
    let (cache_text, drop_caches) = page_cache(config)?;
    let peer_versions = peer_versions(config);

    let raw = work.join("volume.raw");
    let foreground = write_volume(dims, &raw)?;
    let grid = [0, 1, 2].map(|d| dims[d].div_ceil(block[d]));
    let positions = data::random_positions(grid, 200);

    // One report per layout, each with its object-store cells.
    let mut runs: Vec<(Run, Vec<remote::Cell>)> = Vec::new();
    for &layout in &config.layouts {
        let setup = Setup {
            config,
            work,
            raw: raw.clone(),
            dims,
            block,
            layout,
            shard: dims.map(|d| d / 2),
            region: Region {
                offset: [37, 51, 13],
                shape: if config.quick { [150; 3] } else { [300; 3] },
            },
            positions: positions.clone(),
        };
        if layout == Layout::Zarr3Sharded {
            say!(
                "zarr3-sharded: shards of {:?} holding {:?} inner chunks",
                setup.shard,
                block
            );
        }
        let imps = implementations(&peer_versions, layout);
        let mut cache = cache_text.clone();
        let mut results = HashMap::new();
        let mut ratios = Vec::new();
        let mut hdf5_ratios = Vec::new();
        let codecs: Vec<Codec> = config
            .codecs
            .iter()
            .copied()
            .filter(|&c| config.storage_fs && layout.has_codec(c))
            .collect();
        for &codec in &codecs {
            let extras = measure_codec(&setup, &imps, codec, &mut results)?;
            ratios.extend(extras.ratio.map(|r| (codec, r)));
            hdf5_ratios.extend(extras.hdf5_ratio.map(|r| (codec, r)));
            if let Some((cold, warm)) = extras.warm_check {
                cache.push_str(&format!(
                    "; the I/O floor reads the whole raw volume in {:.1} ms cold, {:.1} ms warm ({} thread(s))",
                    cold * 1000.0,
                    warm * 1000.0,
                    config.threads[0]
                ));
            }
        }
        // How well eviction worked, from mincore in libn5's and the floors' jobs.
        let resident = results
            .values()
            .filter_map(Outcome::report)
            .map(|r| r.resident_after_evict)
            .fold(f64::NAN, f64::max);
        if !resident.is_nan() {
            cache.push_str(&format!(
                "; checked with mincore after each eviction: at most {:.2}% of the container's pages stayed resident",
                resident * 100.0
            ));
        }

        let remote_cells = if config.storage_s3 {
            remote::run(config, &setup, &imps)?
        } else {
            Vec::new()
        };
        let run = Run {
            command: command.clone(),
            date: sys::utc_now(),
            libn5_version: libn5_version(),
            peers: peer_versions.clone(),
            machine: machine.clone(),
            fs_type: fs_type.clone(),
            dir: work.display().to_string(),
            load: (load_start.clone(), sys::load_average()),
            fresh_memory_ms,
            storage_fs: config.storage_fs,
            cache,
            drop_caches: drop_caches.clone(),
            dims,
            block,
            layout,
            shard: setup.shard,
            n_blocks: setup.positions.len(),
            region: setup.region,
            foreground,
            ratios,
            hdf5_ratios,
            repeats: config.repeats,
            threads: config.threads.clone(),
            codecs,
            workloads: if config.storage_fs {
                config.workloads.clone()
            } else {
                Vec::new()
            },
            results,
            scaling: Vec::new(),
        };
        runs.push((run, remote_cells));
    }

    if config.scaling {
        if let Some((first, _)) = runs.first_mut() {
            first.scaling = run_scaling(config, work)?;
        }
    }

    let mut text = String::new();
    for (i, (run, cells)) in runs.iter().enumerate() {
        let mut part = if i == 0 { run.markdown() } else { run.tables() };
        if !config.storage_fs {
            // The file-system tables are empty: the header only.
            let end = part
                .find("\n## ")
                .map_or(if i == 0 { part.len() } else { 0 }, |e| e + 1);
            part.truncate(end);
        }
        text.push_str(&part);
        if config.storage_s3 {
            text.push_str(&remote::markdown(config, run.layout, cells));
        }
    }
    println!("{text}");
    if let Some(path) = &config.markdown {
        fs::write(path, &text).map_err(|e| format!("{}: {e}", path.display()))?;
        say!("wrote {}", path.display());
    }
    if let Some(path) = &config.json {
        // The first layout's report at the top, the others below it by name.
        let mut doc = serde_json::Value::Null;
        for (run, cells) in &runs {
            let mut part = run.to_json();
            part["object_store"] = remote::to_json(cells);
            part["object_store_hdf5_shards"] = remote::hdf5_to_json(config, cells);
            if doc.is_null() {
                doc = part;
            } else {
                doc[run.layout.name()] = part;
            }
        }
        let doc = serde_json::to_string_pretty(&doc).expect("JSON");
        fs::write(path, doc).map_err(|e| format!("{}: {e}", path.display()))?;
        say!("wrote {}", path.display());
    }
    let failures: usize = runs
        .iter()
        .map(|(run, cells)| {
            run.failures().len()
                + cells
                    .iter()
                    .filter(|c| matches!(c.outcome, Outcome::Failed(_)))
                    .count()
        })
        .sum();
    if failures > 0 {
        return Err(format!("{failures} measurement(s) failed"));
    }
    Ok(())
}

/// --scaling: libn5 whole-volume write and read (raw and gzip, 2 threads) at
/// three volume sizes.
fn run_scaling(config: &Config, work: &Path) -> Result<Vec<ScalingRow>, String> {
    let threads = 2;
    let mut rows = Vec::new();
    for dims in [[256, 256, 256], [512, 512, 512], [1024, 1024, 512]] {
        let raw = work.join(format!("scaling-{}x{}x{}.raw", dims[0], dims[1], dims[2]));
        write_volume(dims, &raw)?;
        for codec in [Codec::Raw, Codec::Gzip] {
            let container = work.join(format!("scaling-{}.n5", codec.name()));
            let job = |workload| Job {
                imp: Impl::Libn5,
                workload,
                codec,
                threads,
                repeats: 1,
                cache: config.cache,
                raw: raw.clone(),
                dims,
                block: [64; 3],
                layout: Layout::N5,
                shard: dims,
                container: container.clone(),
                scratch: work.join("scaling-scratch"),
                region: Region {
                    offset: [0; 3],
                    shape: dims,
                },
                positions: Vec::new(),
                storage: None,
            };
            let mut results = HashMap::new();
            run_rounds(
                config,
                &[job(Workload::Write), job(Workload::ReadAll)],
                &mut results,
            );
            let mut take = |w| {
                results
                    .remove(&(Impl::Libn5, w, codec, threads))
                    .unwrap_or_else(|| Outcome::Failed("not run".into()))
            };
            let (write, read) = (take(Workload::Write), take(Workload::ReadAll));
            rows.push(ScalingRow {
                dims,
                codec,
                threads,
                write,
                read,
            });
            workload::retire_tree(&container)?;
        }
        fs::remove_file(&raw).map_err(|e| format!("{}: {e}", raw.display()))?;
    }
    Ok(rows)
}
