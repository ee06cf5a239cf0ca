//! The results of a run and their presentation: the markdown report (main
//! table, 2-thread speedups, peak memory, scaling) and the JSON document,
//! one per layout (N5, sharded Zarr v3).

use std::collections::HashMap;
use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::sys::Machine;
use crate::workload::{Codec, Impl, Job, Layout, Outcome, Region, Report, Workload};

/// Which measurement: implementation, workload, codec, threads.
pub type Key = (Impl, Workload, Codec, usize);

/// One row of the scaling table.
#[derive(Debug)]
pub struct ScalingRow {
    /// Volume dimensions.
    pub dims: [u64; 3],
    /// Codec.
    pub codec: Codec,
    /// Threads.
    pub threads: usize,
    /// libn5 whole-volume write.
    pub write: Outcome,
    /// libn5 whole-volume read.
    pub read: Outcome,
}

/// Everything a run found out.
#[derive(Debug)]
pub struct Run {
    /// The command line that produced it.
    pub command: String,
    /// When (UTC).
    pub date: String,
    /// libn5's version.
    pub libn5_version: String,
    /// The peers' versions (peers.py --versions), or why there are none.
    pub peers: Result<Value, String>,
    /// The machine.
    pub machine: Machine,
    /// File system type of the working directory.
    pub fs_type: String,
    /// The working directory.
    pub dir: String,
    /// Load averages at the start and at the end of the run.
    pub load: (String, String),
    /// Milliseconds to first write a fresh buffer of the volume's size,
    /// a second one right after, and two with huge pages advised
    /// ([`crate::sys::fresh_memory_ms`]).
    pub fresh_memory_ms: [f64; 4],
    /// Whether the file-system part ran (its page-cache and dataset-size
    /// lines mean nothing otherwise).
    pub storage_fs: bool,
    /// How reads get a cold cache, in words.
    pub cache: String,
    /// Whether drop_caches could be written (Ok) or why not.
    pub drop_caches: Result<(), String>,
    /// Volume dimensions and block size.
    pub dims: [u64; 3],
    /// Block size (the inner chunks of the sharded layout).
    pub block: [u64; 3],
    /// How the volume was stored.
    pub layout: Layout,
    /// The shard shape of the sharded layout.
    pub shard: [u64; 3],
    /// The region of read_region.
    pub region: Region,
    /// Number of single-block reads.
    pub n_blocks: usize,
    /// Foreground fraction of the volume.
    pub foreground: f64,
    /// Size of libn5's dataset over the raw volume size, per codec.
    pub ratios: Vec<(Codec, f64)>,
    /// Size of libn5's array with HDF5 shards over its plain one's, per
    /// codec (sharded layout).
    pub hdf5_ratios: Vec<(Codec, f64)>,
    /// Repeats per measurement.
    pub repeats: usize,
    /// Thread counts.
    pub threads: Vec<usize>,
    /// Codecs measured.
    pub codecs: Vec<Codec>,
    /// Workloads measured.
    pub workloads: Vec<Workload>,
    /// The measurements.
    pub results: HashMap<Key, Outcome>,
    /// The scaling rows (--scaling).
    pub scaling: Vec<ScalingRow>,
}

/// Milliseconds with three significant digits.
fn ms(seconds: f64) -> String {
    let v = seconds * 1000.0;
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// KiB as whole MiB.
fn mib(kib: u64) -> String {
    format!("{:.0}", kib as f64 / 1024.0)
}

/// A table cell for an outcome: the median time, n/a, error or – (not run).
fn time_cell(o: Option<&Outcome>) -> String {
    match o {
        Some(Outcome::Ok(r)) => ms(r.median()),
        Some(Outcome::NotApplicable(_)) => "n/a".into(),
        Some(Outcome::Failed(_)) => "error".into(),
        None => "–".into(),
    }
}

/// `a / b` of two medians, when both were measured.
fn ratio(a: Option<&Outcome>, b: Option<&Outcome>) -> String {
    match (a.and_then(Outcome::report), b.and_then(Outcome::report)) {
        (Some(a), Some(b)) => format!("{:.2}", a.median() / b.median()),
        _ => "".into(),
    }
}

/// `512³` or `1024×1024×512`.
fn dims_text(d: [u64; 3]) -> String {
    if d[0] == d[1] && d[1] == d[2] {
        format!("{}³", d[0])
    } else {
        format!("{}×{}×{}", d[0], d[1], d[2])
    }
}

/// The target for HDF5 shards: libn5 writing an array with `hdf5_shards`
/// takes at most this many times as long as writing plain shards.
pub const HDF5_TARGET: f64 = 1.05;

/// Median, smallest and largest of `values` (`None` for none).
fn spread(values: &[f64]) -> Option<(f64, f64, f64)> {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if finite.is_empty() {
        return None;
    }
    let min = finite.iter().copied().fold(f64::INFINITY, f64::min);
    let max = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut t = finite;
    t.sort_by(f64::total_cmp);
    let n = t.len();
    let median = if n % 2 == 1 {
        t[n / 2]
    } else {
        (t[n / 2 - 1] + t[n / 2]) / 2.0
    };
    Some((median, min, max))
}

/// Smallest and largest of `a[i] / b[i]` over the rounds both ran in (one
/// timed repeat each per round, in the same order); `None` when they did
/// not run the same rounds.
fn round_ratios(a: &[f64], b: &[f64]) -> Option<(f64, f64)> {
    if a.len() != b.len() || a.is_empty() {
        return None;
    }
    let r: Vec<f64> = a.iter().zip(b).map(|(x, y)| x / y).collect();
    spread(&r).map(|(_, lo, hi)| (lo, hi))
}

/// Whether a cell of libn5 with HDF5 shards meets [`HDF5_TARGET`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The ratio of the median times is at most the target.
    Met,
    /// Above the target, but the target lies within the spread of the
    /// per-round ratios (some round was at most the target) and the ratio
    /// of the median CPU times is at most the target: the gap is the
    /// machine's noise.
    WithinSpread,
    /// Above the target, outside the spread or at a higher CPU time.
    Missed,
}

impl Verdict {
    /// The verdict in a table cell and in JSON.
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Met => "met",
            Verdict::WithinSpread => "met (within spread)",
            Verdict::Missed => "missed",
        }
    }
}

/// libn5 with HDF5 shards against plain libn5 in one cell, from the rounds
/// both ran in. Times in seconds: (median, fastest, slowest round).
#[derive(Clone, Copy, Debug)]
pub struct Hdf5Compare {
    /// Plain libn5's wall time.
    pub plain: (f64, f64, f64),
    /// libn5 with HDF5 shards' wall time.
    pub hdf5: (f64, f64, f64),
    /// Plain libn5's CPU time.
    pub cpu_plain: Option<(f64, f64, f64)>,
    /// libn5 with HDF5 shards' CPU time.
    pub cpu_hdf5: Option<(f64, f64, f64)>,
    /// The ratio of the median wall times, HDF5 over plain.
    pub ratio: f64,
    /// Smallest and largest per-round ratio of the wall times.
    pub rounds: Option<(f64, f64)>,
    /// The ratio of the median CPU times.
    pub cpu_ratio: Option<f64>,
    /// Smallest and largest per-round ratio of the CPU times.
    pub cpu_rounds: Option<(f64, f64)>,
    /// Lowest and highest 1-minute load average when the processes of
    /// both started.
    pub load: Option<(f64, f64)>,
    /// Lowest and highest number of cores the machine kept busy right
    /// before they started (`--quiet`).
    pub busy: Option<(f64, f64)>,
}

impl Hdf5Compare {
    /// The comparison of two measured reports.
    pub fn new(plain: &Report, hdf5: &Report) -> Option<Hdf5Compare> {
        let cpu_plain = spread(&plain.cpu);
        let cpu_hdf5 = spread(&hdf5.cpu);
        let (p, h) = (spread(&plain.times)?, spread(&hdf5.times)?);
        let load: Vec<f64> = plain.load.iter().chain(&hdf5.load).copied().collect();
        let busy: Vec<f64> = plain.busy.iter().chain(&hdf5.busy).copied().collect();
        Some(Hdf5Compare {
            plain: p,
            hdf5: h,
            cpu_plain,
            cpu_hdf5,
            ratio: h.0 / p.0,
            rounds: round_ratios(&hdf5.times, &plain.times),
            cpu_ratio: cpu_plain.zip(cpu_hdf5).map(|(p, h)| h.0 / p.0),
            cpu_rounds: round_ratios(&hdf5.cpu, &plain.cpu),
            load: spread(&load).map(|(_, lo, hi)| (lo, hi)),
            busy: spread(&busy).map(|(_, lo, hi)| (lo, hi)),
        })
    }

    /// Whether the cell meets [`HDF5_TARGET`] ([`Verdict`]).
    pub fn verdict(&self) -> Verdict {
        if self.ratio <= HDF5_TARGET {
            Verdict::Met
        } else if self.rounds.is_some_and(|(lo, _)| lo <= HDF5_TARGET)
            && self.cpu_ratio.is_some_and(|c| c <= HDF5_TARGET)
        {
            Verdict::WithinSpread
        } else {
            Verdict::Missed
        }
    }

    /// The comparison as JSON (times in seconds).
    pub fn to_json(self) -> Value {
        let triple = |t: (f64, f64, f64)| json!({"median": t.0, "min": t.1, "max": t.2});
        let pair = |p: Option<(f64, f64)>| p.map(|(lo, hi)| json!({"min": lo, "max": hi}));
        json!({
            "plain_s": triple(self.plain),
            "hdf5_s": triple(self.hdf5),
            "plain_cpu_s": self.cpu_plain.map(triple),
            "hdf5_cpu_s": self.cpu_hdf5.map(triple),
            "ratio": self.ratio,
            "round_ratios": pair(self.rounds),
            "cpu_ratio": self.cpu_ratio,
            "cpu_round_ratios": pair(self.cpu_rounds),
            "load": pair(self.load),
            "busy_cores_before": pair(self.busy),
            "target": HDF5_TARGET,
            "verdict": self.verdict().text(),
        })
    }
}

/// One row of the HDF5-shard comparison: the cell and the two outcomes.
pub struct Hdf5Row<'a> {
    /// The workload as the table names it.
    pub label: String,
    /// The workload (the target is about writes).
    pub workload: Workload,
    /// The codec.
    pub codec: Codec,
    /// Threads.
    pub threads: usize,
    /// Plain libn5.
    pub plain: Option<&'a Outcome>,
    /// libn5 with HDF5 shards.
    pub hdf5: Option<&'a Outcome>,
}

/// `median (min–max)` in ms.
fn ms_spread(t: (f64, f64, f64)) -> String {
    format!("{} ({}–{})", ms(t.0), ms(t.1), ms(t.2))
}

/// `ratio (min–max)`.
fn ratio_spread(ratio: f64, rounds: Option<(f64, f64)>) -> String {
    match rounds {
        Some((lo, hi)) => format!("{ratio:.3} ({lo:.2}–{hi:.2})"),
        None => format!("{ratio:.3}"),
    }
}

/// The markdown table of libn5 with HDF5 shards over plain libn5.
pub fn hdf5_table(rows: &[Hdf5Row]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| workload | codec | threads | libn5 ms | libn5 hdf5 ms | hdf5 / plain | libn5 CPU ms | hdf5 CPU ms | CPU hdf5 / plain | load | ≤ {HDF5_TARGET}× |"
    );
    let _ = writeln!(s, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|---|");
    for row in rows {
        let c = match (row.plain, row.hdf5) {
            (Some(Outcome::Ok(p)), Some(Outcome::Ok(h))) => Hdf5Compare::new(p, h),
            _ => None,
        };
        let Some(c) = c else {
            let cell = time_cell(row.hdf5);
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {cell} | | | | | | |",
                row.label,
                row.codec.name(),
                row.threads,
                time_cell(row.plain)
            );
            continue;
        };
        let dash = || "—".to_string();
        let verdict = if row.workload == Workload::Write {
            c.verdict().text()
        } else {
            // The target is about writes; reads are a check.
            "(read)"
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {verdict} |",
            row.label,
            row.codec.name(),
            row.threads,
            ms_spread(c.plain),
            ms_spread(c.hdf5),
            ratio_spread(c.ratio, c.rounds),
            c.cpu_plain.map_or_else(dash, ms_spread),
            c.cpu_hdf5.map_or_else(dash, ms_spread),
            c.cpu_ratio
                .map_or_else(dash, |r| ratio_spread(r, c.cpu_rounds)),
            match (c.load, c.busy) {
                (Some((lo, hi)), Some((blo, bhi))) =>
                    format!("{lo:.2}–{hi:.2}; busy {blo:.2}–{bhi:.2}"),
                (Some((lo, hi)), None) => format!("{lo:.2}–{hi:.2}"),
                _ => dash(),
            },
        );
    }
    // Why cells say n/a (libn5's refusal; the first one).
    let why = rows.iter().find_map(|r| match r.hdf5 {
        Some(Outcome::NotApplicable(why)) => Some(why),
        _ => None,
    });
    if let Some(why) = why {
        let _ = writeln!(s, "\nn/a: {why}.");
    }
    s
}

/// The rows of [`hdf5_table`] as JSON (n/a and failures with their reason).
pub fn hdf5_json(rows: &[Hdf5Row]) -> Value {
    Value::Array(
        rows.iter()
            .map(|row| {
                let mut v = match (row.plain, row.hdf5) {
                    (Some(Outcome::Ok(p)), Some(Outcome::Ok(h))) => {
                        Hdf5Compare::new(p, h).map_or(Value::Null, |c| c.to_json())
                    }
                    (_, Some(o)) => o.to_json(),
                    _ => Value::Null,
                };
                if v.is_null() {
                    v = json!({"status": "not run"});
                }
                v["workload"] = json!(row.workload.name());
                v["codec"] = json!(row.codec.name());
                v["threads"] = json!(row.threads);
                v
            })
            .collect(),
    )
}

/// The text before the HDF5-shard tables.
pub const HDF5_INTRO: &str = "The same array written (and read, as a check) by libn5 with `\"hdf5_shards\": {\"must_understand\": false}` in its zarr.json, every shard an HDF5 file too, into a container of its own, timed in the same rounds right after plain libn5 (gzip: libn5 refuses it with HDF5 shards, n/a). Times and CPU times in ms: median (fastest–slowest round). Ratios: of the medians (in parentheses the smallest and largest per-round ratio, each round's HDF5 measurement over its plain one). Load: the 1-minute load average when the measuring processes started (lowest–highest; with `--quiet` also the cores the machine kept busy right before, the benchmark idle). Target: writes take at most 1.05× plain: met when the ratio of the medians is at most 1.05; met (within spread) when it is above but the target lies within the per-round ratios and the CPU time ratio is at most 1.05; missed otherwise.";

impl Run {
    /// The outcome of one measurement, if it ran.
    fn get(&self, imp: Impl, w: Workload, c: Codec, t: usize) -> Option<&Outcome> {
        self.results.get(&(imp, w, c, t))
    }

    /// The floor an implementation is compared with: the codec floor, or the
    /// I/O floor for raw.
    fn floor(&self, w: Workload, c: Codec, t: usize) -> Option<&Outcome> {
        match c {
            Codec::Raw => self.get(Impl::FloorIo, w, c, t),
            _ => self.get(Impl::FloorCodec, w, c, t),
        }
    }

    /// The workload as the table names it.
    fn workload_label(&self, w: Workload) -> String {
        match w {
            Workload::Write => format!("write {}", dims_text(self.dims)),
            Workload::ReadAll => format!("read {}", dims_text(self.dims)),
            Workload::ReadBlocks => format!("read {} blocks", self.n_blocks),
            Workload::ReadRegion => format!("read {} region", dims_text(self.region.shape)),
        }
    }

    /// A peer's version, or "not installed".
    fn version(&self, peer: &str) -> String {
        self.peers
            .as_ref()
            .ok()
            .and_then(|v| v.get(peer))
            .and_then(Value::as_str)
            .map_or_else(|| "not installed".into(), str::to_string)
    }

    /// The second peer of the layout: z5py for N5, zarr-python 3 for the
    /// sharded layout (tensorstore is the first in both).
    fn second_peer(&self) -> (Impl, &'static str) {
        match self.layout {
            Layout::N5 => (Impl::Z5py, "z5py"),
            Layout::Zarr3Sharded => (Impl::ZarrPython, "zarr-python"),
        }
    }

    /// The rows of the HDF5-shard comparison: every workload, codec and
    /// thread count (none in the N5 layout).
    fn hdf5_rows(&self) -> Vec<Hdf5Row<'_>> {
        if self.layout != Layout::Zarr3Sharded {
            return Vec::new();
        }
        let mut rows = Vec::new();
        for &w in &self.workloads {
            for &c in &self.codecs {
                for &t in &self.threads {
                    rows.push(Hdf5Row {
                        label: self.workload_label(w),
                        workload: w,
                        codec: c,
                        threads: t,
                        plain: self.get(Impl::Libn5, w, c, t),
                        hdf5: self.get(Impl::Libn5Hdf5, w, c, t),
                    });
                }
            }
        }
        rows
    }

    /// The markdown report: the run's header, then [`Run::tables`].
    pub fn markdown(&self) -> String {
        let mut s = self.header();
        s.push_str(&self.tables());
        s
    }

    /// The header of the report: command, versions, machine, data,
    /// workloads, page cache, process model.
    pub fn header(&self) -> String {
        let mut s = String::new();
        let m = &self.machine;
        let _ = writeln!(s, "# libn5 benchmark\n");
        let _ = writeln!(s, "`{}` — {}\n", self.command, self.date);
        let peers = match &self.peers {
            Ok(v) => format!(
                "tensorstore {}; z5py {}{} (Python {}, numpy {})",
                self.version("tensorstore"),
                self.version("z5py"),
                if v.get("zarr_python").is_some() {
                    format!("; zarr-python {}", self.version("zarr_python"))
                } else {
                    String::new()
                },
                v.get("python").and_then(Value::as_str).unwrap_or("?"),
                v.get("numpy").and_then(Value::as_str).unwrap_or("?")
            ),
            Err(e) => format!("peers: {e}"),
        };
        let _ = writeln!(s, "* libn5 {}; {peers}", self.libn5_version);
        let _ = writeln!(
            s,
            "* machine: {}, {} logical cores, {:.1} GiB RAM, Linux {}; working directory on {} ({}); load average {} at the start, {} at the end",
            m.cpu, m.cores, m.ram_gib, m.kernel, self.fs_type, self.dir, self.load.0, self.load.1
        );
        let _ = writeln!(
            s,
            "* fresh memory: writing the first byte of every page of a new {} MiB buffer (what a whole-volume read writes into) took {:.0} ms, and {:.0} ms for a second buffer right after; advised to use huge pages (as libn5 and floor+out advise their output), {:.0} and {:.0} ms; on a virtual machine whose host backs or takes back guest memory lazily, these are far slower than on bare metal and vary from process to process",
            (self.dims.iter().product::<u64>() * Job::ELEM) >> 20,
            self.fresh_memory_ms[0],
            self.fresh_memory_ms[1],
            self.fresh_memory_ms[2],
            self.fresh_memory_ms[3]
        );
        let _ = writeln!(
            s,
            "* data: uint16 {} in {} blocks, {:.1}% foreground (smooth blobs ~1000–3000, noise σ 30; background ~100, σ 3){}",
            dims_text(self.dims),
            dims_text(self.block),
            100.0 * self.foreground,
            if self.ratios.is_empty() {
                String::new()
            } else {
                format!(
                    "; libn5's dataset size / raw: {}",
                    self.ratios
                        .iter()
                        .map(|(c, r)| format!("{} {:.3} ({:.2}×)", c.name(), r, 1.0 / r))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        );
        let _ = writeln!(
            s,
            "* workloads: one write_region of the whole volume; one read_region of it; {} read_region calls of one block each at random grid positions (fixed seed); one read_region of {} at offset {:?}",
            self.n_blocks,
            dims_text(self.region.shape),
            self.region.offset
        );
        if self.storage_fs {
            let _ = writeln!(s, "* page cache: {}", self.cache);
        }
        let _ = writeln!(
            s,
            "* every timed operation runs in a fresh process (`n5-bench --one`, `python bench/peers.py`): {} round(s), each running every implementation and thread count of a workload and codec once (round robin, so that changes in the machine's load hit all alike); the median is shown; peak RSS is the largest VmHWM of those processes\n",
            self.repeats
        );
        s
    }

    /// The tables: times and ratios, speedups, peak memory, scaling,
    /// errors; for the sharded layout headed by what it is.
    pub fn tables(&self) -> String {
        let mut s = String::new();
        let (peer2, peer2_name) = self.second_peer();
        if self.layout == Layout::Zarr3Sharded {
            let _ = writeln!(
                s,
                "# Sharded Zarr v3\n\nThe same volume, workloads and codecs (lz4 left out) as a Zarr v3 array with `sharding_indexed`: shards of {} holding inner chunks of {} (bytes little endian + the codec; index bytes + crc32c at the end). Blocks are the inner chunks. libn5 opens it with `{{\"format\": \"zarr3\"}}`; the peers are tensorstore's zarr3 driver and zarr-python 3. floor: the same bytes read as the same ranges with plain std::fs (read_all as a region read of the whole volume; single blocks: the index range, then the inner chunk's range; region: the index range of every shard it touches, then the inner chunks it touches, neighbours ≤256 KiB apart coalesced into ranges of ≤2 MiB, as libn5 reads shards on a local disk), plus decoding every inner chunk read; write: every inner chunk encoded, each shard assembled with its index and written once.{}\n",
                dims_text(self.shard),
                dims_text(self.block),
                if self.ratios.is_empty() {
                    String::new()
                } else {
                    format!(
                        " Array size / raw: {}.",
                        self.ratios
                            .iter()
                            .map(|(c, r)| format!("{} {:.3}", c.name(), r))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            );
        }

        let _ = writeln!(s, "## Time (ms, median) and ratios\n");
        let _ = writeln!(
            s,
            "| workload | codec | threads | libn5 | floor | libn5/floor | floor+out | libn5/floor+out | I/O floor | tensorstore | libn5/ts | {peer2_name} | libn5/{peer2_name} | libn5 peak RSS MiB |"
        );
        let _ = writeln!(
            s,
            "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
        );
        for &w in &self.workloads {
            for &c in &self.codecs {
                for &t in &self.threads {
                    let l = self.get(Impl::Libn5, w, c, t);
                    let f = self.floor(w, c, t);
                    let out = self.get(Impl::FloorOut, w, c, t);
                    let io = self.get(Impl::FloorIo, w, c, t);
                    let ts = self.get(Impl::Tensorstore, w, c, t);
                    let z5 = self.get(peer2, w, c, t);
                    let rss = l
                        .and_then(Outcome::report)
                        .map_or_else(String::new, |r| mib(r.maxrss_kib));
                    let _ = writeln!(
                        s,
                        "| {} | {} | {t} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {rss} |",
                        self.workload_label(w),
                        c.name(),
                        time_cell(l),
                        time_cell(f),
                        ratio(l, f),
                        time_cell(out),
                        ratio(l, out),
                        time_cell(io),
                        time_cell(ts),
                        ratio(l, ts),
                        time_cell(z5),
                        ratio(l, z5),
                    );
                }
            }
        }
        let noisy = self.noisy();
        if noisy.1 > 0 {
            let _ = writeln!(
                s,
                "\n{} of {} libn5 measurements have repeats more than 25% apart (slowest / fastest): the machine was busy; the JSON output has every time.",
                noisy.0, noisy.1
            );
        }
        if self.layout == Layout::N5 {
            let _ = writeln!(
            s,
            "\nfloor: the codec library alone (libdeflate, lz4 block API with the LZ4Block framing's XXH32 piece checksums, zstd crate, c-blosc `_ctx`) compressing or decompressing every block the workload touches, plus writing (temporary file + rename, no fsync, like libn5) or reading its file; for raw the I/O floor. I/O floor: the same files with plain std::fs. Both use the same threads as libn5 (single-block reads: one block per call, sequential); neither swaps bytes nor copies blocks to or from the region buffer. floor+out (whole-volume and region reads): the floor that also copies every block's bytes, unswapped, to their place in a fresh output buffer of the box's size, made before the timing as libn5's caller makes it and advised to use huge pages as libn5 advises it, so that first writing its pages is timed as it is for libn5. Ratios above 1 mean libn5 is slower. n/a: the peer cannot do it (tensorstore has no lz4; z5's lz4 is another format). z5py's gzip is given level 6, what -1 means, because z5 compresses level -1 like level 1.\n"
        );
        } else {
            let _ = writeln!(
                s,
                "\nfloor: the codec floor of the sharded layout (above); I/O floor: its reads and writes alone; floor+out: the floor that also copies every inner chunk to its place in a fresh output buffer of the box's size (made before the timing, advised to use huge pages). Ratios above 1 mean libn5 is slower.\n"
            );
        }

        let hdf5 = self.hdf5_rows();
        if hdf5.iter().any(|r| r.hdf5.is_some()) {
            let _ = writeln!(
                s,
                "## HDF5 shards: libn5 with `hdf5_shards` over plain libn5\n\n{HDF5_INTRO}{}\n",
                if self.hdf5_ratios.is_empty() {
                    String::new()
                } else {
                    format!(
                        " Array size with HDF5 shards / plain: {}.",
                        self.hdf5_ratios
                            .iter()
                            .map(|(c, r)| format!("{} {r:.5}", c.name()))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            );
            let _ = writeln!(s, "{}", hdf5_table(&hdf5));
        }

        let (t1, tn) = (self.threads.first(), self.threads.last());
        if let (Some(&t1), Some(&tn)) = (t1, tn) {
            if t1 < tn {
                let _ = writeln!(
                    s,
                    "## Speedup with {tn} threads (time with {t1} / time with {tn})\n"
                );
                let _ = writeln!(
                    s,
                    "| workload | codec | libn5 | floor | tensorstore | {peer2_name} |"
                );
                let _ = writeln!(s, "|---|---|--:|--:|--:|--:|");
                for &w in &self.workloads {
                    for &c in &self.codecs {
                        // None: the floor.
                        let sp = |imp: Option<Impl>| {
                            let get = |t| match imp {
                                Some(i) => self.get(i, w, c, t),
                                None => self.floor(w, c, t),
                            };
                            ratio(get(t1), get(tn))
                        };
                        let _ = writeln!(
                            s,
                            "| {} | {} | {} | {} | {} | {} |",
                            self.workload_label(w),
                            c.name(),
                            sp(Some(Impl::Libn5)),
                            sp(None),
                            sp(Some(Impl::Tensorstore)),
                            sp(Some(peer2)),
                        );
                    }
                }
                let _ = writeln!(s);
            }
        }

        let _ = writeln!(s, "## Peak memory (MiB: peak RSS of the measuring process, RSS before the first timed operation in parentheses)\n");
        let _ = writeln!(
            s,
            "| workload | codec | threads | libn5 | tensorstore | {peer2_name} |"
        );
        let _ = writeln!(s, "|---|---|--:|--:|--:|--:|");
        for &w in &self.workloads {
            for &c in &self.codecs {
                for &t in &self.threads {
                    let cell = |imp| match self.get(imp, w, c, t) {
                        Some(Outcome::Ok(r)) => {
                            format!("{} ({})", mib(r.maxrss_kib), mib(r.baseline_kib))
                        }
                        o => time_cell(o),
                    };
                    let _ = writeln!(
                        s,
                        "| {} | {} | {t} | {} | {} | {} |",
                        self.workload_label(w),
                        c.name(),
                        cell(Impl::Libn5),
                        cell(Impl::Tensorstore),
                        cell(peer2)
                    );
                }
            }
        }
        let _ = writeln!(s);

        if !self.scaling.is_empty() {
            let _ = writeln!(s, "## Scaling: libn5 whole-volume write and read\n");
            let _ = writeln!(
                s,
                "| volume | GiB | codec | threads | write ms | write s/GiB | read ms | read s/GiB |"
            );
            let _ = writeln!(s, "|---|--:|---|--:|--:|--:|--:|--:|");
            for row in &self.scaling {
                let gib = row.dims.iter().product::<u64>() as f64 * 2.0 / (1u64 << 30) as f64;
                let per = |o: &Outcome| {
                    o.report()
                        .map_or_else(String::new, |r| format!("{:.2}", r.median() / gib))
                };
                let _ = writeln!(
                    s,
                    "| {} | {:.3} | {} | {} | {} | {} | {} | {} |",
                    dims_text(row.dims),
                    gib,
                    row.codec.name(),
                    row.threads,
                    time_cell(Some(&row.write)),
                    per(&row.write),
                    time_cell(Some(&row.read)),
                    per(&row.read),
                );
            }
            let _ = writeln!(s);
        }

        let failures: Vec<String> = self
            .failures()
            .into_iter()
            .map(|(what, msg)| format!("* {what}: {msg}"))
            .collect();
        if !failures.is_empty() {
            let _ = writeln!(s, "## Errors\n\n{}\n", failures.join("\n"));
        }
        s
    }

    /// (libn5 measurements whose slowest repeat is more than 25% above the
    /// fastest, libn5 measurements with several repeats).
    fn noisy(&self) -> (usize, usize) {
        let spreads: Vec<f64> = self
            .results
            .iter()
            .filter(|((imp, ..), _)| *imp == Impl::Libn5)
            .filter_map(|(_, o)| o.report())
            .filter(|r| r.times.len() > 1)
            .map(|r| {
                let max = r.times.iter().copied().fold(f64::MIN, f64::max);
                let min = r.times.iter().copied().fold(f64::MAX, f64::min);
                max / min
            })
            .collect();
        (spreads.iter().filter(|&&x| x > 1.25).count(), spreads.len())
    }

    /// Every failed measurement, described.
    pub fn failures(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = self
            .results
            .iter()
            .filter_map(|((imp, w, c, t), o)| match o {
                Outcome::Failed(msg) => Some((
                    format!("{} {} {} {t} thread(s)", imp.name(), w.name(), c.name()),
                    msg.clone(),
                )),
                _ => None,
            })
            .collect();
        for row in &self.scaling {
            for (what, o) in [("write", &row.write), ("read", &row.read)] {
                if let Outcome::Failed(msg) = o {
                    out.push((
                        format!(
                            "scaling {} {} {what}",
                            dims_text(row.dims),
                            row.codec.name()
                        ),
                        msg.clone(),
                    ));
                }
            }
        }
        out.sort();
        out
    }

    /// Everything as JSON.
    pub fn to_json(&self) -> Value {
        let mut measurements: Vec<(&Key, &Outcome)> = self.results.iter().collect();
        measurements.sort_by_key(|((imp, w, c, t), _)| {
            (
                Workload::ALL.iter().position(|x| x == w),
                Codec::ALL.iter().position(|x| x == c),
                *t,
                imp.name(),
            )
        });
        let m = &self.machine;
        json!({
            "command": self.command,
            "date": self.date,
            "format": self.layout.name(),
            "shard": self.shard,
            "libn5_version": self.libn5_version,
            "peers": match &self.peers { Ok(v) => v.clone(), Err(e) => json!({"error": e}) },
            "machine": {"cpu": m.cpu, "cores": m.cores, "ram_gib": m.ram_gib, "kernel": m.kernel,
                        "filesystem": self.fs_type, "dir": self.dir,
                        "load_average_start": self.load.0, "load_average_end": self.load.1,
                        "fresh_memory_ms": self.fresh_memory_ms.to_vec()},
            "cache": self.cache,
            "drop_caches_allowed": match &self.drop_caches { Ok(()) => json!(true), Err(e) => json!(e) },
            "data": {"dims": self.dims, "block": self.block, "dtype": "uint16",
                     "foreground_fraction": self.foreground,
                     "size_over_raw": self.ratios.iter().map(|(c, r)| (c.name().to_string(), json!(r))).collect::<serde_json::Map<_, _>>()},
            "workloads": {"region": {"offset": self.region.offset, "shape": self.region.shape},
                          "single_block_reads": self.n_blocks},
            "repeats": self.repeats,
            "process_model": "one process per timed operation; `repeats` rounds over the implementations and thread counts of each workload and codec",
            "measurements": measurements.iter().map(|((imp, w, c, t), o)| {
                let mut v = o.to_json();
                v["impl"] = json!(imp.name());
                v["workload"] = json!(w.name());
                v["codec"] = json!(c.name());
                v["threads"] = json!(t);
                v
            }).collect::<Vec<_>>(),
            "hdf5_shards": {
                "size_over_plain": self.hdf5_ratios.iter().map(|(c, r)| (c.name().to_string(), json!(r))).collect::<serde_json::Map<_, _>>(),
                "cells": hdf5_json(&self.hdf5_rows()),
            },
            "scaling": self.scaling.iter().map(|r| json!({
                "dims": r.dims, "codec": r.codec.name(), "threads": r.threads,
                "write": r.write.to_json(), "read": r.read.to_json(),
            })).collect::<Vec<_>>(),
        })
    }
}
