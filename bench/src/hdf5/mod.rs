//! The HDF5 mode (`--format hdf5`): the benchmark's volume as one chunked
//! HDF5 dataset, `vol` in a file `vol.h5` (64³ chunks; raw, or gzip stored
//! as HDF5's shuffle + deflate at level [`DEFLATE_LEVEL`]), written and read
//! by libn5 (built with its cargo feature `hdf5`), by h5py
//! (bench/peers_hdf5.py) and by the floors of [`floor`]; every read cold
//! and warm.
//!
//! This file owns the mode's jobs (who measures, the job a child process
//! receives as `--one-hdf5 JOB`, libn5's measurements), the order of the
//! measurements (rounds, as for N5) and the chunk map the floors read.
//! [`report`] owns the tables and the JSON document.
//!
//! libn5 writes with `Container::open_with("…/vol.h5", Mode::Create)`,
//! `create_dataset` and one `write_region` of the whole volume, and reads
//! with `open_dataset` and `read_region` in fresh processes. h5py writes
//! its own file the same way (`libver=("earliest", "v110")`) and reads the
//! file libn5 wrote, as the floors do: every read of a codec reads the same
//! bytes. The floors find those bytes in the chunk map, which h5py's
//! `chunk_iter` makes once, untimed, after the writes.

mod floor;
mod report;

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use n5::{Compression, Container, DataType, DatasetAttributes, ErrorKind, Mode};
use serde_json::{json, Value};

use crate::sys::{self, CacheMode};
use crate::workload::{
    measure, retire_tree, time_libn5_reads, Codec, Impl, Job, Layout, Outcome, Region, Report,
    Workload, DATASET,
};
use crate::{data, peers, Config};

/// The HDF5 file's name in each implementation's directory.
pub const FILE: &str = "vol.h5";

/// The deflate level of gzip, the same for every implementation: libn5's
/// gzip level -1 (zlib's default), h5py's `compression_opts`, the floors'
/// libdeflate level.
pub const DEFLATE_LEVEL: i32 = 6;

/// The codecs an HDF5 file holds here: raw, and gzip as shuffle + deflate
/// (libn5 writes no other filter).
const CODECS: [Codec; 2] = [Codec::Raw, Codec::Gzip];

/// Who performs a measurement of the HDF5 mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Who {
    /// libn5 through its Rust API.
    Libn5,
    /// The floor: the chunk bytes read with positional reads and, for
    /// gzip, inflated and unshuffled; for writes, the chunks encoded and
    /// written to one file.
    Floor,
    /// The floor that also copies every chunk's part into a fresh output
    /// of the box's size (whole-volume and region reads).
    FloorOut,
    /// h5py (bench/peers_hdf5.py), one thread.
    H5py,
}

impl Who {
    /// Every implementation, in table order.
    pub const ALL: [Who; 4] = [Who::Libn5, Who::Floor, Who::FloorOut, Who::H5py];

    /// The name in job descriptions and reports.
    pub fn name(self) -> &'static str {
        match self {
            Who::Libn5 => "libn5",
            Who::Floor => "floor",
            Who::FloorOut => "floor_out",
            Who::H5py => "h5py",
        }
    }

    /// The implementation called `name`.
    pub fn parse(name: &str) -> Option<Who> {
        Who::ALL.into_iter().find(|w| w.name() == name)
    }

    /// Whether it measures `workload`: the output floor only reads into
    /// one box.
    pub fn measures(self, workload: Workload) -> bool {
        self != Who::FloorOut || matches!(workload, Workload::ReadAll | Workload::ReadRegion)
    }
}

/// Which measurement: implementation, workload, codec, threads, warm.
pub type Key = (Who, Workload, Codec, usize, bool);

/// One measurement of the HDF5 mode: the N5 mode's [`Job`] (its `imp` is
/// always [`Impl::Libn5`] and its layout N5; `container` is the directory
/// of the HDF5 file [`FILE`], `scratch` the write floor's directory) and
/// who runs it.
#[derive(Clone, Debug)]
pub struct H5Job {
    /// Who runs it.
    pub who: Who,
    /// What is measured.
    pub job: Job,
    /// The chunk map of the file the reads read (see [`make_chunk_map`]).
    pub chunk_map: PathBuf,
}

impl H5Job {
    /// The HDF5 file.
    pub fn file(&self) -> PathBuf {
        self.job.container.join(FILE)
    }

    /// Whether a read finds the file in the page cache.
    pub fn warm(&self) -> bool {
        self.job.cache == CacheMode::Warm
    }

    /// The measurement's key.
    pub fn key(&self) -> Key {
        let j = &self.job;
        (self.who, j.workload, j.codec, j.threads, self.warm())
    }

    /// The job as JSON, for `--one-hdf5` and bench/peers_hdf5.py: the N5
    /// job's with `impl` the implementation, `format` "hdf5", and `file`,
    /// `chunk_map` and `deflate_level`.
    pub fn to_json(&self) -> Value {
        let mut v = self.job.to_json();
        v["impl"] = json!(self.who.name());
        v["format"] = json!("hdf5");
        v["file"] = json!(self.file());
        v["chunk_map"] = json!(self.chunk_map);
        v["deflate_level"] = json!(DEFLATE_LEVEL);
        v
    }

    /// Parses [`H5Job::to_json`]'s output.
    pub fn from_json(v: &Value) -> Result<H5Job, String> {
        let who = v
            .get("impl")
            .and_then(Value::as_str)
            .and_then(Who::parse)
            .ok_or("job: unknown 'impl'")?;
        let chunk_map = v
            .get("chunk_map")
            .and_then(Value::as_str)
            .ok_or("job: 'chunk_map' must be a string")?
            .into();
        let mut n5 = v.clone();
        n5["impl"] = json!(Impl::Libn5.name());
        n5["format"] = json!(Layout::N5.name());
        Ok(H5Job {
            who,
            job: Job::from_json(&n5)?,
            chunk_map,
        })
    }
}

/// The hidden child mode `--one-hdf5 JOB`: runs one libn5 or floor job,
/// prints its JSON report on stdout.
pub fn child(job_json: &str) -> ExitCode {
    let result = serde_json::from_str(job_json)
        .map_err(|e| format!("job: {e}"))
        .and_then(|v| H5Job::from_json(&v))
        .and_then(|h| match h.who {
            Who::Libn5 => run_libn5(&h),
            Who::Floor | Who::FloorOut => floor::run_floor(&h),
            Who::H5py => Err("h5py runs in bench/peers_hdf5.py".into()),
        });
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

/// Reads every byte of `path` once, so that all of it is in the page
/// cache.
fn warm_up(path: &Path) -> Result<(), String> {
    let mut file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut buf = vec![0u8; 1 << 20];
    while file
        .read(&mut buf)
        .map_err(|e| format!("{}: {e}", path.display()))?
        > 0
    {}
    Ok(())
}

/// Before a timed read: a cold read evicts the file (see
/// [`sys::evict`]), a warm one reads it whole first. Returns the fraction
/// of its pages left resident by the eviction (NaN when warm).
pub fn prepare_cache(h: &H5Job) -> Result<f64, String> {
    if h.warm() {
        warm_up(&h.file())?;
        return Ok(f64::NAN);
    }
    sys::evict(&h.job.container, h.job.cache)
        .map_err(|e| format!("evicting {}: {e}", h.job.container.display()))
}

/// Runs a libn5 job in this (child) process: a write creates the file and
/// the dataset (untimed) and writes the volume with one `write_region`; a
/// read opens them (untimed) and reads every box of the workload with
/// `read_region`, the last one checked against the volume.
fn run_libn5(h: &H5Job) -> Result<Report, String> {
    let job = &h.job;
    let file = h.file();
    let e = |e: n5::Error| e.to_string();
    if job.workload == Workload::Write {
        let data = fs::read(&job.raw).map_err(|err| format!("{}: {err}", job.raw.display()))?;
        let compression = Compression::from_user_json(&job.codec.n5_json()).map_err(e)?;
        let (report, _) = measure(
            job.repeats,
            || {
                retire_tree(&job.container)?;
                fs::create_dir_all(&job.container)
                    .map_err(|err| format!("{}: {err}", job.container.display()))?;
                sys::sync_all();
                let c = Container::open_with(&file, Mode::Create, job.options()?).map_err(e)?;
                let attrs = DatasetAttributes::new(
                    job.dims.to_vec(),
                    job.block.iter().map(|&b| b as u32).collect(),
                    DataType::U16,
                    compression.clone(),
                )
                .map_err(e)?;
                Ok((c.create_dataset(DATASET, attrs).map_err(e)?, f64::NAN))
            },
            |ds| ds.write_region(&[0; 3], &job.dims, &data).map_err(e),
        )?;
        return Ok(report);
    }
    time_libn5_reads(job, &file, || prepare_cache(h))
}

/// bench/peers_hdf5.py, next to this crate's manifest.
pub fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("peers_hdf5.py")
}

/// Writes the chunk map of the dataset in `file` to `out` (h5py's
/// `chunk_iter`, through bench/peers_hdf5.py `--chunks`).
fn make_chunk_map(python: &Path, file: &Path, out: &Path) -> Result<(), String> {
    let run = Command::new(python)
        .arg(script())
        .arg("--chunks")
        .arg(file)
        .arg(DATASET)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    if !run.status.success() {
        return Err(format!(
            "{} --chunks failed ({}): {}",
            script().display(),
            run.status,
            String::from_utf8_lossy(&run.stderr).trim()
        ));
    }
    fs::write(out, &run.stdout).map_err(|e| format!("{}: {e}", out.display()))
}

/// Fails, naming the cargo feature, when this libn5 has no HDF5 support.
fn check_libn5_hdf5(work: &Path) -> Result<(), String> {
    let probe = work.join("probe.h5");
    let opened = Container::open_with(&probe, Mode::Create, n5::Options::default());
    let _ = fs::remove_file(&probe);
    match opened {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == ErrorKind::Unsupported => Err(format!(
            "--format hdf5 needs libn5 with HDF5 support: build the benchmark with \
             `--features hdf5` (bench/run.sh does): {e}"
        )),
        Err(e) => Err(format!("creating {}: {e}", probe.display())),
    }
}

/// The libhdf5 this process (and so libn5) is linked with: pkg-config's
/// version of `hdf5` and the library file mapped into this process.
fn libhdf5() -> String {
    let version = Command::new("pkg-config")
        .args(["--modversion", "hdf5"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let mapped = fs::read_to_string("/proc/self/maps").ok().and_then(|maps| {
        maps.lines()
            .filter_map(|l| l.split_whitespace().nth(5))
            .find(|p| p.contains("libhdf5") && !p.contains("_hl"))
            .map(str::to_string)
    });
    match (version, mapped) {
        (Some(v), Some(m)) => format!("{v}, {m}"),
        (Some(v), None) => v,
        (None, Some(m)) => m,
        (None, None) => "unknown".into(),
    }
}

/// What every job of the mode shares.
struct Setup<'a> {
    config: &'a Config,
    work: &'a Path,
    raw: PathBuf,
    dims: [u64; 3],
    block: [u64; 3],
    region: Region,
    positions: Vec<[u64; 3]>,
}

impl Setup<'_> {
    /// The directory of an implementation's file for `codec` (floors and
    /// h5py's reads read libn5's).
    fn dir(&self, who: Who, workload: Workload, codec: Codec) -> PathBuf {
        let owner = match (who, workload) {
            (Who::H5py, Workload::Write) => "h5py",
            _ => "libn5",
        };
        self.work.join(format!("{owner}-{}.hdf5", codec.name()))
    }

    /// The chunk map of libn5's file for `codec`.
    fn chunk_map(&self, codec: Codec) -> PathBuf {
        self.work.join(format!("chunks-{}.json", codec.name()))
    }

    /// One timed repeat of a measurement.
    fn job(
        &self,
        who: Who,
        workload: Workload,
        codec: Codec,
        threads: usize,
        cache: CacheMode,
    ) -> H5Job {
        H5Job {
            who,
            job: Job {
                imp: Impl::Libn5,
                workload,
                codec,
                threads,
                repeats: 1,
                cache,
                raw: self.raw.clone(),
                dims: self.dims,
                block: self.block,
                layout: Layout::N5,
                shard: self.dims,
                container: self.dir(who, workload, codec),
                scratch: self.work.join(format!("floor-{}.hdf5", codec.name())),
                region: self.region.clone(),
                positions: self.positions.clone(),
                storage: None,
            },
            chunk_map: self.chunk_map(codec),
        }
    }

    /// The jobs of a round of `workload` and `codec`: for each cache state,
    /// every implementation that measures it and every thread count (h5py
    /// with the first only: it has one thread).
    fn jobs(
        &self,
        whos: &[Who],
        workload: Workload,
        codec: Codec,
        caches: &[CacheMode],
    ) -> Vec<H5Job> {
        let threads = &self.config.threads;
        let mut out = Vec::new();
        for &cache in caches {
            for &who in whos.iter().filter(|w| w.measures(workload)) {
                let counts = if who == Who::H5py {
                    &threads[..1]
                } else {
                    &threads[..]
                };
                for &t in counts {
                    out.push(self.job(who, workload, codec, t, cache));
                }
            }
        }
        out
    }
}

/// Runs `h` in a fresh process (this binary with `--one-hdf5`, or
/// peers_hdf5.py) and logs it.
fn run_job(config: &Config, h: &H5Job) -> Outcome {
    let job = &h.job;
    sys::prime_memory((job.dims.iter().product::<u64>() * Job::ELEM) as usize);
    let outcome = if h.who == Who::H5py {
        match Command::new(&config.python)
            .arg(script())
            .arg(h.to_json().to_string())
            .output()
        {
            Ok(out) => Outcome::from_output(&out),
            Err(e) => Outcome::Failed(format!("cannot run {}: {e}", config.python.display())),
        }
    } else {
        Outcome::of_child("--one-hdf5", &h.to_json())
    };
    let result = match &outcome {
        Outcome::Ok(r) => format!(
            "{:.1} ms, CPU {:.1} ms, peak RSS {} MiB",
            r.median() * 1000.0,
            r.median_cpu() * 1000.0,
            r.maxrss_kib / 1024
        ),
        Outcome::NotApplicable(why) => format!("n/a: {why}"),
        Outcome::Failed(msg) => format!("ERROR: {msg}"),
    };
    let cache = if job.workload == Workload::Write {
        ""
    } else if h.warm() {
        " warm"
    } else {
        " cold"
    };
    say!(
        "hdf5 {:<9} {:<11} {:<4} {} thread(s){cache}: {result} [load {}]",
        h.who.name(),
        job.workload.name(),
        job.codec.name(),
        job.threads,
        sys::load_average()
    );
    outcome
}

/// Runs every job `--repeats` times, one timed repeat per process, round
/// robin; a job that fails or is not applicable is not run again.
fn run_rounds(config: &Config, jobs: &[H5Job], results: &mut HashMap<Key, Outcome>) {
    for round in 0..config.repeats {
        if config.repeats > 1 {
            say!(
                "round {}/{} ({})",
                round + 1,
                config.repeats,
                sys::load_average()
            );
        }
        for h in jobs {
            let key = h.key();
            let previous = results.remove(&key);
            if let Some(done @ (Outcome::Failed(_) | Outcome::NotApplicable(_))) = previous {
                results.insert(key, done);
                continue;
            }
            let outcome = run_job(config, h);
            let merged = match previous {
                Some(p) => p.merge(outcome),
                None => outcome,
            };
            results.insert(key, merged);
        }
    }
}

/// The size of the file at `path`, if it exists.
fn file_size(path: &Path) -> Option<u64> {
    fs::metadata(path).ok().map(|m| m.len())
}

/// The HDF5 mode in the working directory `work`: checks, data, for each
/// codec the writes, the chunk map and the reads, then the report.
pub fn run_in(config: &Config, command: String, work: &Path) -> Result<(), String> {
    let dims: [u64; 3] = if config.quick { [256; 3] } else { [512; 3] };
    let block = [64u64; 3];
    let machine = sys::Machine::detect();
    let load_start = sys::load_average();
    check_libn5_hdf5(work)?;
    let fs_type = sys::fs_type(work);
    let versions = if config.peers {
        peers::versions(&config.python, &script())
    } else {
        Err("skipped (--no-peers)".into())
    };
    match &versions {
        Ok(v) => say!("h5py: {v}"),
        Err(e) => say!("h5py unavailable: {e}"),
    }
    let h5py_ok = versions
        .as_ref()
        .is_ok_and(|v| v.get("h5py").is_some_and(Value::is_string));
    let mut whos = vec![Who::Libn5, Who::Floor, Who::FloorOut];
    if h5py_ok {
        whos.push(Who::H5py);
    }
    let caches = if config.cache == CacheMode::Warm {
        vec![CacheMode::Warm]
    } else {
        vec![config.cache, CacheMode::Warm]
    };
    let codecs: Vec<Codec> = config
        .codecs
        .iter()
        .copied()
        .filter(|c| CODECS.contains(c))
        .collect();
    let skipped: Vec<&str> = config
        .codecs
        .iter()
        .filter(|c| !CODECS.contains(c))
        .map(|c| c.name())
        .collect();
    if !skipped.is_empty() {
        say!(
            "hdf5: {} left out (HDF5 files hold raw and gzip here)",
            skipped.join(", ")
        );
    }
    if config.storage_s3 || config.scaling {
        say!("hdf5: --storage s3 and --scaling do not apply to HDF5 files (local only)");
    }

    let raw = work.join("volume.raw");
    let foreground = crate::write_volume(dims, &raw)?;
    let grid = [0, 1, 2].map(|d| dims[d].div_ceil(block[d]));
    let setup = Setup {
        config,
        work,
        raw,
        dims,
        block,
        region: Region {
            offset: [37, 51, 13],
            shape: if config.quick { [150; 3] } else { [300; 3] },
        },
        positions: data::random_positions(grid, 200),
    };
    let reads: Vec<Workload> = config
        .workloads
        .iter()
        .copied()
        .filter(|&w| w != Workload::Write)
        .collect();
    let mut results = HashMap::new();
    let mut sizes = Vec::new();
    let mut resident = f64::NAN;
    for &codec in &codecs {
        if config.workloads.contains(&Workload::Write) {
            let jobs = setup.jobs(&whos, Workload::Write, codec, &caches[..1]);
            run_rounds(config, &jobs, &mut results);
        } else if !reads.is_empty() {
            // Untimed: the file the reads read.
            let write = setup.job(Who::Libn5, Workload::Write, codec, 1, config.cache);
            if let Outcome::Failed(e) = run_job(config, &write) {
                return Err(format!(
                    "libn5 could not write the {} file: {e}",
                    codec.name()
                ));
            }
        }
        let file = setup.dir(Who::Libn5, Workload::ReadAll, codec).join(FILE);
        let h5py_file = setup.dir(Who::H5py, Workload::Write, codec).join(FILE);
        sizes.push(report::FileSizes {
            codec,
            libn5: file_size(&file),
            h5py: file_size(&h5py_file),
        });
        if reads.is_empty() {
            continue;
        }
        if file_size(&file).is_none() {
            return Err(format!("libn5 wrote no {}", file.display()));
        }
        if let Err(e) = make_chunk_map(&config.python, &file, &setup.chunk_map(codec)) {
            say!("no chunk map, so no floors: {e}");
        }
        for &w in &reads {
            run_rounds(config, &setup.jobs(&whos, w, codec, &caches), &mut results);
        }
        if !config.keep {
            for who in [Who::Libn5, Who::H5py] {
                retire_tree(&setup.dir(who, Workload::Write, codec))?;
            }
            retire_tree(
                &setup
                    .job(Who::Floor, Workload::Write, codec, 1, config.cache)
                    .job
                    .scratch,
            )?;
        }
    }
    for o in results.values() {
        if let Some(r) = o.report() {
            resident = resident.max(r.resident_after_evict);
        }
    }
    let run = report::H5Run {
        command,
        date: sys::utc_now(),
        libn5_version: crate::libn5_version(),
        libhdf5: libhdf5(),
        versions,
        machine,
        fs_type,
        dir: work.display().to_string(),
        load: (load_start, sys::load_average()),
        cache: config.cache,
        resident,
        dims,
        block,
        region: setup.region.clone(),
        n_blocks: setup.positions.len(),
        foreground,
        sizes,
        repeats: config.repeats,
        threads: config.threads.clone(),
        codecs,
        workloads: config.workloads.clone(),
        caches: caches.iter().map(|&c| c == CacheMode::Warm).collect(),
        results,
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
