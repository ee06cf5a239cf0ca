//! The results of the HDF5 mode and their presentation: the markdown
//! report (header, the table of times, CPU times and ratios, the targets
//! the README states, judged by their rule) and the JSON document.
//!
//! The rule: a target "faster than h5py" or "≤ k × floor+out" (or, for
//! writes, "≤ 1.10 × h5py") is met when libn5's median is at or below the
//! target value; a miss whose gap to it is no more than the spread of
//! libn5's rounds (slowest − fastest), at a median CPU time no higher than
//! the target's (k × the reference's median CPU time), counts as met
//! within the spread.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde_json::{json, Value};

use super::{Key, Who, DEFLATE_LEVEL};
use crate::cells::{cpu_cell, ms, ratio, spread, time_cell};
use crate::sys::{CacheMode, Machine};
use crate::workload::{Codec, Job, Outcome, Region, Report, Workload};

/// The size of the HDF5 files of a codec.
#[derive(Clone, Debug)]
pub struct FileSizes {
    /// The codec.
    pub codec: Codec,
    /// libn5's file (read by everyone).
    pub libn5: Option<u64>,
    /// h5py's own file (from its writes).
    pub h5py: Option<u64>,
}

/// Everything a run of the HDF5 mode found out.
#[derive(Debug)]
pub struct H5Run {
    /// The command line.
    pub command: String,
    /// When (UTC).
    pub date: String,
    /// libn5's version and commit.
    pub libn5_version: String,
    /// The libhdf5 libn5 is linked with.
    pub libhdf5: String,
    /// peers_hdf5.py --versions, or why there are none.
    pub versions: Result<Value, String>,
    /// The machine.
    pub machine: Machine,
    /// File system of the working directory.
    pub fs_type: String,
    /// The working directory.
    pub dir: String,
    /// Load averages at the start and at the end.
    pub load: (String, String),
    /// How cold reads were made cold.
    pub cache: CacheMode,
    /// The largest fraction of the file left resident by an eviction.
    pub resident: f64,
    /// Volume dimensions.
    pub dims: [u64; 3],
    /// Chunk shape (N5 order).
    pub block: [u64; 3],
    /// The region of read_region.
    pub region: Region,
    /// Single-chunk reads.
    pub n_blocks: usize,
    /// Foreground fraction of the volume.
    pub foreground: f64,
    /// File sizes per codec.
    pub sizes: Vec<FileSizes>,
    /// Rounds.
    pub repeats: usize,
    /// Thread counts.
    pub threads: Vec<usize>,
    /// Codecs measured.
    pub codecs: Vec<Codec>,
    /// Workloads measured.
    pub workloads: Vec<Workload>,
    /// The cache states of reads (true: warm), in table order.
    pub caches: Vec<bool>,
    /// The measurements.
    pub results: HashMap<Key, Outcome>,
}

/// `512³` or `1024×1024×512`.
fn dims_text(d: [u64; 3]) -> String {
    if d[0] == d[1] && d[1] == d[2] {
        format!("{}³", d[0])
    } else {
        format!("{}×{}×{}", d[0], d[1], d[2])
    }
}

/// How a target cell fared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// libn5's median at or below the target value.
    Met,
    /// Above it by no more than the spread of libn5's rounds, at no more
    /// CPU time than the target's.
    WithinSpread,
    /// Neither.
    Missed,
}

impl Verdict {
    fn text(self) -> &'static str {
        match self {
            Verdict::Met => "met",
            Verdict::WithinSpread => "met (within spread)",
            Verdict::Missed => "**missed**",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Verdict::Met => "met",
            Verdict::WithinSpread => "met_within_spread",
            Verdict::Missed => "missed",
        }
    }
}

/// One target cell, judged.
#[derive(Clone, Debug)]
pub struct Judged {
    workload: Workload,
    codec: Codec,
    threads: usize,
    warm: bool,
    /// "< h5py", "≤ 1.15 × floor+out", "≤ 1.10 × h5py".
    target: &'static str,
    /// libn5's median, the target value, libn5's spread (s).
    libn5: f64,
    value: f64,
    spread: f64,
    /// libn5's median CPU time and the target's (k × the reference's).
    cpu: f64,
    cpu_target: f64,
    verdict: Verdict,
}

/// Judges libn5's report `l` against `factor` × the reference `r`.
fn judge(l: &Report, r: &Report, factor: f64) -> (f64, f64, f64, f64, Verdict) {
    let value = factor * r.median();
    let cpu_target = factor * r.median_cpu();
    let gap = l.median() - value;
    let verdict = if gap <= 0.0 {
        Verdict::Met
    } else if gap <= spread(l) && l.median_cpu() <= cpu_target {
        Verdict::WithinSpread
    } else {
        Verdict::Missed
    };
    (value, spread(l), l.median_cpu(), cpu_target, verdict)
}

impl H5Run {
    /// A measurement; h5py's of every thread count is its one-thread one,
    /// writes are keyed by the first cache state.
    fn get(&self, who: Who, w: Workload, c: Codec, t: usize, warm: bool) -> Option<&Outcome> {
        let t = if who == Who::H5py { self.threads[0] } else { t };
        let warm = if w == Workload::Write {
            self.caches[0]
        } else {
            warm
        };
        self.results.get(&(who, w, c, t, warm))
    }

    /// The cache states a workload's rows have.
    fn caches_of(&self, w: Workload) -> Vec<bool> {
        if w == Workload::Write {
            vec![self.caches[0]]
        } else {
            self.caches.clone()
        }
    }

    fn workload_label(&self, w: Workload) -> String {
        match w {
            Workload::Write => format!("write {}", dims_text(self.dims)),
            Workload::ReadAll => format!("read {}", dims_text(self.dims)),
            Workload::ReadBlocks => format!("read {} chunks", self.n_blocks),
            Workload::ReadRegion => format!("read {} region", dims_text(self.region.shape)),
        }
    }

    fn cache_label(w: Workload, warm: bool) -> &'static str {
        match (w, warm) {
            (Workload::Write, _) => "–",
            (_, true) => "warm",
            (_, false) => "cold",
        }
    }

    fn version(&self, key: &str) -> String {
        self.versions
            .as_ref()
            .ok()
            .and_then(|v| v.get(key))
            .and_then(Value::as_str)
            .map_or_else(|| "not installed".into(), str::to_string)
    }

    /// Every target cell the README states that was measured: whole-volume and
    /// region reads against h5py and 1.15 × floor+out, writes against
    /// 1.10 × h5py.
    pub fn targets(&self) -> Vec<Judged> {
        let mut out = Vec::new();
        for &w in &self.workloads {
            let goals: &[(&'static str, Who, f64)] = match w {
                Workload::ReadAll | Workload::ReadRegion => &[
                    ("< h5py", Who::H5py, 1.0),
                    ("≤ 1.15 × floor+out", Who::FloorOut, 1.15),
                ],
                Workload::Write => &[("≤ 1.10 × h5py", Who::H5py, 1.10)],
                Workload::ReadBlocks => &[],
            };
            for &c in &self.codecs {
                for &t in &self.threads {
                    for warm in self.caches_of(w) {
                        let Some(l) = self
                            .get(Who::Libn5, w, c, t, warm)
                            .and_then(Outcome::report)
                        else {
                            continue;
                        };
                        for &(target, who, factor) in goals {
                            let Some(r) = self.get(who, w, c, t, warm).and_then(Outcome::report)
                            else {
                                continue;
                            };
                            let (value, spread, cpu, cpu_target, verdict) = judge(l, r, factor);
                            out.push(Judged {
                                workload: w,
                                codec: c,
                                threads: t,
                                warm,
                                target,
                                libn5: l.median(),
                                value,
                                spread,
                                cpu,
                                cpu_target,
                                verdict,
                            });
                        }
                    }
                }
            }
        }
        out
    }

    /// The markdown report.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let m = &self.machine;
        let _ = writeln!(s, "# libn5 benchmark: HDF5 files\n");
        let _ = writeln!(s, "`{}` — {}\n", self.command, self.date);
        let peers = match &self.versions {
            Ok(v) => format!(
                "h5py {} with HDF5 {} (Python {}, numpy {})",
                self.version("h5py"),
                self.version("hdf5"),
                v.get("python").and_then(Value::as_str).unwrap_or("?"),
                self.version("numpy")
            ),
            Err(e) => format!("h5py: {e}"),
        };
        let _ = writeln!(
            s,
            "* libn5 {} with its HDF5 support (libhdf5 {}); {peers}",
            self.libn5_version, self.libhdf5
        );
        let _ = writeln!(
            s,
            "* machine: {}, {} logical cores, {:.1} GiB RAM, Linux {}; working directory on {} ({}); load average {} at the start, {} at the end",
            m.cpu, m.cores, m.ram_gib, m.kernel, self.fs_type, self.dir, self.load.0, self.load.1
        );
        let vol = self.dims.iter().product::<u64>() * Job::ELEM;
        let sizes: Vec<String> = self
            .sizes
            .iter()
            .map(|f| {
                let r = |b: Option<u64>| {
                    b.map_or("–".into(), |b| format!("{:.3}", b as f64 / vol as f64))
                };
                format!(
                    "{} {} (h5py's own file {})",
                    f.codec.name(),
                    r(f.libn5),
                    r(f.h5py)
                )
            })
            .collect();
        let _ = writeln!(
            s,
            "* data: uint16 {} in {} chunks, {:.1}% foreground (the N5 mode's volume); one dataset `vol` in `vol.h5`; file size / raw volume: {}",
            dims_text(self.dims),
            dims_text(self.block),
            100.0 * self.foreground,
            sizes.join(", ")
        );
        let _ = writeln!(
            s,
            "* files: libn5 creates the file (`Container::open_with(\"…/vol.h5\", Mode::Create)`, libver bounds 1.8–1.10) and the dataset (`create_dataset`: fixed dimensions, fill value 0, chunks allocated when written; gzip: shuffle + deflate level {DEFLATE_LEVEL}, libn5's gzip level -1); h5py creates its own with `libver=(\"earliest\", \"v110\")`, the same chunks, `shuffle=True, compression=\"gzip\", compression_opts={DEFLATE_LEVEL}` for gzip. Every read of a codec reads libn5's file: libn5, the floors and h5py read the same bytes"
        );
        let _ = writeln!(
            s,
            "* workloads: write: one `write_region` of the whole volume into the new dataset (h5py: `ds[...] = volume` and `f.flush()`); read: one `read_region` of the whole volume (h5py: `ds[...]`); {} single-chunk reads at random grid positions, one call each; one read of {} at offset {:?} (x, y, z)",
            self.n_blocks,
            dims_text(self.region.shape),
            self.region.offset
        );
        let cold = match self.cache {
            CacheMode::Drop => "cold: fsync + posix_fadvise(DONTNEED) of the file, then sync and drop_caches, before the timed read",
            _ => "cold: the file fsynced and evicted with posix_fadvise(DONTNEED) before the timed read",
        };
        let resident = if self.resident.is_nan() {
            String::new()
        } else {
            format!(
                " (mincore after each eviction: at most {:.2}% of the file's pages stayed resident)",
                100.0 * self.resident
            )
        };
        let _ = writeln!(
            s,
            "* page cache: {cold}{resident}; warm: the whole file read once, untimed, right before the timed read"
        );
        let _ = writeln!(
            s,
            "* {} rounds, each running every implementation, thread count and cache state of a workload and codec once, each timed operation in a fresh process; cells: median (fastest–slowest) in ms; CPU: the median user + system CPU time (ms, all threads of the process) of the timed operation",
            self.repeats
        );
        let _ = writeln!(
            s,
            "* threads: libn5's `Options.threads` (each reads the chunks it decodes: no I/O threads for HDF5 files); the floors read, inflate, unshuffle and copy each chunk on one of the job's threads; h5py has one thread (libhdf5 decodes one chunk at a time): it is measured once per round and its cells are the same in the rows of every thread count\n"
        );

        let _ = writeln!(
            s,
            "## Time (ms: median (fastest–slowest)), CPU time (ms, median) and ratios of medians\n"
        );
        let _ = writeln!(
            s,
            "| workload | codec | threads | cache | libn5 | CPU | floor | CPU | floor+out | CPU | h5py | CPU | libn5/h5py | libn5/floor | libn5/floor+out | peak RSS MiB libn5 / h5py |"
        );
        let _ = writeln!(
            s,
            "|---|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
        );
        for &w in &self.workloads {
            for &c in &self.codecs {
                for warm in self.caches_of(w) {
                    for &t in &self.threads {
                        let g = |who| self.get(who, w, c, t, warm);
                        let rss = |who| {
                            g(who)
                                .and_then(Outcome::report)
                                .map_or("–".into(), |r| format!("{}", r.maxrss_kib / 1024))
                        };
                        let _ = writeln!(
                            s,
                            "| {} | {} | {t} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} / {} |",
                            self.workload_label(w),
                            c.name(),
                            Self::cache_label(w, warm),
                            time_cell(g(Who::Libn5)),
                            cpu_cell(g(Who::Libn5)),
                            time_cell(g(Who::Floor)),
                            cpu_cell(g(Who::Floor)),
                            time_cell(g(Who::FloorOut)),
                            cpu_cell(g(Who::FloorOut)),
                            time_cell(g(Who::H5py)),
                            cpu_cell(g(Who::H5py)),
                            ratio(g(Who::Libn5), g(Who::H5py)),
                            ratio(g(Who::Libn5), g(Who::Floor)),
                            ratio(g(Who::Libn5), g(Who::FloorOut)),
                            rss(Who::Libn5),
                            rss(Who::H5py),
                        );
                    }
                }
            }
        }
        let _ = writeln!(
            s,
            "\nfloor: the chunk bytes of libn5's file (offsets and sizes from h5py's `chunk_iter`, found before the timing), one positional read each; for gzip inflated (libdeflate) and unshuffled. floor+out: the same plus copying every chunk's part into a fresh output buffer of the box's size. Write floor: every chunk shuffled and deflated (libdeflate level {DEFLATE_LEVEL}) and written at the end of one file, raw chunks as they are; it leaves out HDF5's metadata (superblock, object headers, chunk index) and cutting the chunks from the volume (done before the timing). Ratios above 1: libn5 is slower.\n"
        );

        let targets = self.targets();
        if !targets.is_empty() {
            let _ = writeln!(s, "## Targets\n");
            let _ = writeln!(
                s,
                "A target is met when libn5's median is at or below the target value; a miss whose gap to it is no more than the spread of libn5's rounds (slowest − fastest) at a median CPU time no higher than the target's (k × the reference's median CPU time) counts as met within the spread.\n"
            );
            let _ = writeln!(
                s,
                "| workload | codec | threads | cache | target | libn5 ms | target ms | gap ms | libn5 spread ms | CPU ms libn5 / target | verdict |"
            );
            let _ = writeln!(s, "|---|---|--:|---|---|--:|--:|--:|--:|--:|---|");
            for j in &targets {
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} / {} | {} |",
                    self.workload_label(j.workload),
                    j.codec.name(),
                    j.threads,
                    Self::cache_label(j.workload, j.warm),
                    j.target,
                    ms(j.libn5),
                    ms(j.value),
                    ms(j.libn5 - j.value),
                    ms(j.spread),
                    ms(j.cpu),
                    ms(j.cpu_target),
                    j.verdict.text()
                );
            }
            let met = targets
                .iter()
                .filter(|j| j.verdict != Verdict::Missed)
                .count();
            let _ = writeln!(s, "\n{met} of {} target cells met.\n", targets.len());
        }

        let failures = self.failures();
        if !failures.is_empty() {
            let _ = writeln!(s, "## Errors\n");
            for (what, msg) in failures {
                let _ = writeln!(s, "* {what}: {msg}");
            }
            let _ = writeln!(s);
        }
        s
    }

    /// Every failed measurement, described.
    pub fn failures(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = self
            .results
            .iter()
            .filter_map(|((who, w, c, t, warm), o)| match o {
                Outcome::Failed(msg) => Some((
                    format!(
                        "{} {} {} {t} thread(s) {}",
                        who.name(),
                        w.name(),
                        c.name(),
                        if *warm { "warm" } else { "cold" }
                    ),
                    msg.clone(),
                )),
                _ => None,
            })
            .collect();
        out.sort();
        out
    }

    /// Everything as JSON.
    pub fn to_json(&self) -> Value {
        let mut measurements: Vec<(&Key, &Outcome)> = self.results.iter().collect();
        measurements.sort_by_key(|((who, w, c, t, warm), _)| {
            (
                Workload::ALL.iter().position(|x| x == w),
                Codec::ALL.iter().position(|x| x == c),
                *warm,
                *t,
                *who,
            )
        });
        let m = &self.machine;
        json!({
            "command": self.command,
            "date": self.date,
            "format": "hdf5",
            "libn5_version": self.libn5_version,
            "libhdf5": self.libhdf5,
            "peers": match &self.versions { Ok(v) => v.clone(), Err(e) => json!({"error": e}) },
            "machine": {"cpu": m.cpu, "cores": m.cores, "ram_gib": m.ram_gib, "kernel": m.kernel,
                        "filesystem": self.fs_type, "dir": self.dir,
                        "load_average_start": self.load.0, "load_average_end": self.load.1},
            "cold": self.cache.name(),
            "data": {"dims": self.dims, "chunk": self.block, "dtype": "uint16",
                     "foreground_fraction": self.foreground, "deflate_level": DEFLATE_LEVEL,
                     "file_bytes": self.sizes.iter().map(|f| json!({
                         "codec": f.codec.name(), "libn5": f.libn5, "h5py": f.h5py})).collect::<Vec<_>>()},
            "workloads": {"region": {"offset": self.region.offset, "shape": self.region.shape},
                          "single_chunk_reads": self.n_blocks},
            "repeats": self.repeats,
            "measurements": measurements.iter().map(|((who, w, c, t, warm), o)| {
                let mut v = o.to_json();
                v["impl"] = json!(who.name());
                v["workload"] = json!(w.name());
                v["codec"] = json!(c.name());
                v["threads"] = json!(t);
                v["cache"] = json!(if *w == Workload::Write { "-" } else if *warm { "warm" } else { "cold" });
                v
            }).collect::<Vec<_>>(),
            "targets": self.targets().iter().map(|j| json!({
                "workload": j.workload.name(), "codec": j.codec.name(), "threads": j.threads,
                "cache": if j.warm { "warm" } else { "cold" }, "target": j.target,
                "libn5_s": j.libn5, "target_s": j.value, "libn5_spread_s": j.spread,
                "libn5_cpu_s": j.cpu, "target_cpu_s": j.cpu_target, "verdict": j.verdict.name(),
            })).collect::<Vec<_>>(),
        })
    }
}
