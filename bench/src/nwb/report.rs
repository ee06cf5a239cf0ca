//! The results of the NWB mode and their presentation: the markdown report
//! (header, the table of times, CPU times and ratios, the targets judged)
//! and the JSON document.
//!
//! The target (issue 33): reading each array whole faster than zarr-python
//! 3, with and without zarrs' codec pipeline, and than tensorstore where
//! it reads the array. A target cell is met when libn5's median is at or
//! below the peer's; a miss whose gap is no more than the spread of
//! libn5's rounds (slowest − fastest), at a median CPU time no higher than
//! the peer's, counts as met within the spread.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde_json::{json, Value};

use super::{Key, Kind, Who, FORMATS};
use crate::cells::{cpu_cell, ms, ratio, spread, time_cell};
use crate::sys::{CacheMode, Machine};
use crate::workload::{Outcome, Report};

/// Everything a run of the NWB mode found out.
#[derive(Debug)]
pub struct NwbRun {
    /// The command line.
    pub command: String,
    /// When (UTC).
    pub date: String,
    /// libn5's version and commit.
    pub libn5_version: String,
    /// The peers' versions (`zarrs_python`, `tensorstore_python`), or why
    /// there are none.
    pub versions: Result<Value, String>,
    /// What peers_nwb.py `--write` reported (sizes, zarr's version).
    pub written: Value,
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
    /// The largest fraction of an array left resident by an eviction.
    pub resident: f64,
    /// Rounds.
    pub repeats: usize,
    /// Thread counts.
    pub threads: Vec<usize>,
    /// The implementations measured.
    pub whos: Vec<Who>,
    /// The cache states (true: warm), in table order.
    pub caches: Vec<bool>,
    /// The measurements.
    pub results: HashMap<Key, Outcome>,
    /// Whether zarrs handed a measurement's reads to zarr's own pipeline.
    pub fell_back: HashMap<Key, bool>,
}

/// How a target cell fared.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// libn5's median at or below the peer's.
    Met,
    /// Above it by no more than the spread of libn5's rounds, at no more
    /// CPU time than the peer's.
    WithinSpread,
    /// Neither.
    Missed,
    /// The peer cannot read the array (its reason).
    NotApplicable(String),
}

impl Verdict {
    fn text(&self) -> String {
        match self {
            Verdict::Met => "met".into(),
            Verdict::WithinSpread => "met (within spread)".into(),
            Verdict::Missed => "**missed**".into(),
            Verdict::NotApplicable(_) => "n/a (the peer cannot read it)".into(),
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Verdict::Met => "met",
            Verdict::WithinSpread => "met_within_spread",
            Verdict::Missed => "missed",
            Verdict::NotApplicable(_) => "n/a",
        }
    }
}

/// One target cell, judged.
#[derive(Clone, Debug)]
pub struct Judged {
    /// libn5's call: [`Who::Libn5`] or [`Who::Libn5Strings`].
    libn5_call: Who,
    kind: Kind,
    zarr_format: u8,
    threads: usize,
    warm: bool,
    /// The peer to beat.
    peer: Who,
    /// libn5's median, the peer's, libn5's spread (s); NaN where n/a.
    libn5: f64,
    value: f64,
    spread: f64,
    /// libn5's median CPU time and the peer's.
    cpu: f64,
    cpu_target: f64,
    verdict: Verdict,
}

/// Judges libn5's report `l` against the peer's `r`.
fn judge(l: &Report, r: &Report) -> Verdict {
    let gap = l.median() - r.median();
    if gap <= 0.0 {
        Verdict::Met
    } else if gap <= spread(l) && l.median_cpu() <= r.median_cpu() {
        Verdict::WithinSpread
    } else {
        Verdict::Missed
    }
}

/// A peer's name in the tables.
fn label(who: Who) -> &'static str {
    match who {
        Who::Libn5 => "libn5",
        Who::Libn5Strings => "libn5 read_region_strings",
        Who::ZarrPython => "zarr-python",
        Who::Zarrs => "zarr-python + zarrs",
        Who::TensorStore => "tensorstore",
    }
}

impl NwbRun {
    fn get(&self, who: Who, kind: Kind, f: u8, t: usize, warm: bool) -> Option<&Outcome> {
        self.results.get(&(who, kind, f, t, warm))
    }

    /// The peers' version of `key` from the Python that runs `group`.
    fn version(&self, group: &str, key: &str) -> String {
        self.versions
            .as_ref()
            .ok()
            .and_then(|v| v[group].get(key))
            .and_then(Value::as_str)
            .map_or_else(|| "not installed".into(), str::to_string)
    }

    /// Every target cell: each libn5 call against each peer, for every
    /// array, thread count and cache state measured.
    pub fn targets(&self) -> Vec<Judged> {
        let mut out = Vec::new();
        for kind in Kind::ALL {
            for f in FORMATS {
                for &warm in &self.caches {
                    for &t in &self.threads {
                        for call in [Who::Libn5, Who::Libn5Strings] {
                            let Some(l) =
                                self.get(call, kind, f, t, warm).and_then(Outcome::report)
                            else {
                                continue;
                            };
                            for peer in [Who::ZarrPython, Who::Zarrs, Who::TensorStore] {
                                let (value, cpu_target, verdict) = match self
                                    .get(peer, kind, f, t, warm)
                                {
                                    Some(Outcome::Ok(r)) => {
                                        (r.median(), r.median_cpu(), judge(l, r))
                                    }
                                    Some(Outcome::NotApplicable(why)) => {
                                        (f64::NAN, f64::NAN, Verdict::NotApplicable(why.clone()))
                                    }
                                    _ => continue,
                                };
                                out.push(Judged {
                                    libn5_call: call,
                                    kind,
                                    zarr_format: f,
                                    threads: t,
                                    warm,
                                    peer,
                                    libn5: l.median(),
                                    value,
                                    spread: spread(l),
                                    cpu: l.median_cpu(),
                                    cpu_target,
                                    verdict,
                                });
                            }
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
        let _ = writeln!(
            s,
            "# libn5 benchmark: NWB strings and structs (Zarr v3 and v2)\n"
        );
        let _ = writeln!(s, "`{}` — {}\n", self.command, self.date);
        let peers = match &self.versions {
            Ok(v) => format!(
                "zarr-python {} with and without zarrs {} (Python {}, numpy {}); tensorstore {} (Python {})",
                self.version("zarrs_python", "zarr"),
                self.version("zarrs_python", "zarrs"),
                v["zarrs_python"]["python"].as_str().unwrap_or("?"),
                self.version("zarrs_python", "numpy"),
                self.version("tensorstore_python", "tensorstore"),
                v["tensorstore_python"]["python"].as_str().unwrap_or("?"),
            ),
            Err(e) => format!("peers: {e}"),
        };
        let _ = writeln!(s, "* libn5 {}; {peers}", self.libn5_version);
        let _ = writeln!(
            s,
            "* machine: {}, {} logical cores, {:.1} GiB RAM, Linux {}; working directory on {} ({}); load average {} at the start, {} at the end",
            m.cpu, m.cores, m.ram_gib, m.kernel, self.fs_type, self.dir, self.load.0, self.load.1
        );
        let w = &self.written;
        let n = w["n"].as_u64().unwrap_or(0);
        let size = |k: &str| {
            w["sizes"][k]
                .as_u64()
                .map_or("?".into(), |b| format!("{:.1} MB", b as f64 / 1e6))
        };
        let _ = writeln!(
            s,
            "* data, written once by zarr-python {} (bench/peers_nwb.py `--write`, `.venv-nwb`) with its defaults (zstd level 0; `create_array(shape=({n},), chunks=({},), dtype=…, zarr_format=3 or 2)`): **strings**: {n} strings of 5–40 characters cut from words (spaces, underscores), {} of them with non-ASCII characters, {:.1} MB of UTF-8; Zarr v3 `string` + `vlen-utf8` ({} stored), Zarr v2 `|O` + the `vlen-utf8` filter ({}). **structs**: {n} rows of int32 `id`, int32 `group`, float64 `time`, fixed_length_utf32 of 16 `label` ({} bytes a row, {:.1} MB); Zarr v3 `struct` ({}), Zarr v2 `[[\"id\", \"<i4\"], …, [\"label\", \"<U16\"]]` ({})",
            w["zarr"].as_str().unwrap_or("?"),
            w["chunk"],
            w["non_ascii_strings"],
            w["string_utf8_bytes"].as_f64().unwrap_or(f64::NAN) / 1e6,
            size("strings-v3"),
            size("strings-v2"),
            w["struct_row_bytes"],
            w["struct_row_bytes"].as_f64().unwrap_or(f64::NAN) * n as f64 / 1e6,
            size("structs-v3"),
            size("structs-v2"),
        );
        let _ = writeln!(
            s,
            "* timed: one read of the whole array into memory, opening it untimed. libn5: `Dataset::read_region_bytes` for strings (the UTF-8 bytes packed, and the lengths), `read_region` for structs (the packed rows, into a buffer made before the timing), and `read_region_strings` (a `Vec<String>`) as a second row; zarr-python: `zarr.open_array(mode=\"r\")`, then `arr[:]` (a numpy StringDType array for strings, a structured array for structs), with zarr's own codec pipeline and with `codec_pipeline.path = \"zarrs.ZarrsCodecPipeline\"`; tensorstore: its `zarr3` or `zarr` driver, `read().result()`. Every read is checked, untimed, against the strings and rows written"
        );
        let cold = match self.cache {
            CacheMode::Drop => "cold: fsync + posix_fadvise(DONTNEED) of every file of the array, then sync and drop_caches",
            _ => "cold: every file of the array fsynced and evicted with posix_fadvise(DONTNEED)",
        };
        let resident = if self.resident.is_nan() {
            String::new()
        } else {
            format!(
                " (mincore: at most {:.2}% of the pages stayed resident)",
                100.0 * self.resident
            )
        };
        let _ = writeln!(
            s,
            "* page cache: {cold}{resident}; warm: every file of the array read once, untimed, right before"
        );
        let _ = writeln!(
            s,
            "* {} rounds, each running every implementation, thread count and cache state of an array once, each read in a fresh process; cells: median (fastest–slowest) in ms; CPU: the median user + system CPU time (ms, every thread of the process) of the read; threads: libn5's `Options.threads`, zarr's `threading.max_workers` (zarrs' too), tensorstore's `data_copy_concurrency` and `file_io_concurrency`\n",
            self.repeats
        );
        let fell: Vec<String> = self
            .fell_back
            .iter()
            .filter(|(_, &v)| v)
            .map(|((_, k, f, _, _), _)| format!("{} v{f}", k.name()))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        if !fell.is_empty() {
            let _ = writeln!(
                s,
                "zarrs handed the reads of {} to zarr's own codec pipeline (zarrs-python 0.2 decodes no variable-length strings, no numpy StringDType output and no structured dtype): its cells measure zarr-python behind zarrs' dispatch.\n",
                fell.join(", ")
            );
        }

        let _ = writeln!(
            s,
            "## Time (ms: median (fastest–slowest)), CPU time (ms, median) and ratios of medians\n"
        );
        let _ = writeln!(
            s,
            "| array | Zarr | cache | threads | libn5 | CPU | libn5 read_region_strings | CPU | zarr-python | CPU | zarr-python + zarrs | CPU | tensorstore | libn5 / zarr-python | libn5 / zarrs | peak RSS MiB libn5 / zarr-python |"
        );
        let _ = writeln!(
            s,
            "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|--:|--:|"
        );
        for kind in Kind::ALL {
            for f in FORMATS {
                for &warm in &self.caches {
                    for &t in &self.threads {
                        let g = |who| self.get(who, kind, f, t, warm);
                        let rss = |who| {
                            g(who)
                                .and_then(Outcome::report)
                                .map_or("–".into(), |r| format!("{}", r.maxrss_kib / 1024))
                        };
                        let _ = writeln!(
                            s,
                            "| {} | v{f} | {} | {t} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} / {} |",
                            kind.name(),
                            if warm { "warm" } else { "cold" },
                            time_cell(g(Who::Libn5)),
                            cpu_cell(g(Who::Libn5)),
                            time_cell(g(Who::Libn5Strings)),
                            cpu_cell(g(Who::Libn5Strings)),
                            time_cell(g(Who::ZarrPython)),
                            cpu_cell(g(Who::ZarrPython)),
                            time_cell(g(Who::Zarrs)),
                            cpu_cell(g(Who::Zarrs)),
                            time_cell(g(Who::TensorStore)),
                            ratio(g(Who::Libn5), g(Who::ZarrPython)),
                            ratio(g(Who::Libn5), g(Who::Zarrs)),
                            rss(Who::Libn5),
                            rss(Who::ZarrPython),
                        );
                    }
                }
            }
        }
        let na: Vec<String> = self
            .results
            .iter()
            .filter_map(|((who, k, f, _, _), o)| match o {
                Outcome::NotApplicable(why) => {
                    Some(format!("{} {} v{f}: {why}", label(*who), k.name()))
                }
                _ => None,
            })
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        if !na.is_empty() {
            let _ = writeln!(s, "\nn/a:\n");
            for line in na {
                let _ = writeln!(s, "* {line}");
            }
        }
        let _ = writeln!(s, "\nRatios above 1: libn5 is slower.\n");

        let targets = self.targets();
        if !targets.is_empty() {
            let _ = writeln!(s, "## Targets\n");
            let _ = writeln!(
                s,
                "Issue 33: reading each array whole faster than zarr-python 3, with and without zarrs, and than tensorstore where it reads it. A cell is met when libn5's median is at or below the peer's; a miss whose gap is no more than the spread of libn5's rounds (slowest − fastest) at a median CPU time no higher than the peer's counts as met within the spread. The target is judged on `libn5` (`read_region_bytes` for strings, `read_region` for structs: the whole array in memory, as `arr[:]` gives it); `read_region_strings` is judged alike for information.\n"
            );
            let _ = writeln!(
                s,
                "| libn5 call | array | Zarr | cache | threads | peer | libn5 ms | peer ms | gap ms | libn5 spread ms | CPU ms libn5 / peer | verdict |"
            );
            let _ = writeln!(s, "|---|---|---|---|--:|---|--:|--:|--:|--:|--:|---|");
            for j in &targets {
                let call = match (j.libn5_call, j.kind) {
                    (Who::Libn5Strings, _) => "read_region_strings",
                    (_, Kind::Strings) => "read_region_bytes",
                    (_, Kind::Structs) => "read_region",
                };
                let na = matches!(j.verdict, Verdict::NotApplicable(_));
                let or = |v: String| if na { "–".to_string() } else { v };
                let _ = writeln!(
                    s,
                    "| {call} | {} | v{} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    j.kind.name(),
                    j.zarr_format,
                    if j.warm { "warm" } else { "cold" },
                    j.threads,
                    label(j.peer),
                    ms(j.libn5),
                    or(ms(j.value)),
                    or(ms(j.libn5 - j.value)),
                    ms(j.spread),
                    or(format!("{} / {}", ms(j.cpu), ms(j.cpu_target))),
                    j.verdict.text()
                );
            }
            let official: Vec<&Judged> = targets
                .iter()
                .filter(|j| j.libn5_call == Who::Libn5)
                .collect();
            let judged = official
                .iter()
                .filter(|j| !matches!(j.verdict, Verdict::NotApplicable(_)))
                .count();
            let met = official
                .iter()
                .filter(|j| matches!(j.verdict, Verdict::Met | Verdict::WithinSpread))
                .count();
            let _ = writeln!(
                s,
                "\n{met} of {judged} target cells met ({} n/a: the peer cannot read the array).\n",
                official.len() - judged
            );
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
            .filter_map(|((who, k, f, t, warm), o)| match o {
                Outcome::Failed(msg) => Some((
                    format!(
                        "{} {} v{f} {t} thread(s) {}",
                        who.name(),
                        k.name(),
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
        measurements
            .sort_by_key(|((who, k, f, t, warm), _)| (*k, std::cmp::Reverse(*f), *warm, *t, *who));
        let m = &self.machine;
        json!({
            "command": self.command,
            "date": self.date,
            "format": "nwb",
            "libn5_version": self.libn5_version,
            "peers": match &self.versions { Ok(v) => v.clone(), Err(e) => json!({"error": e}) },
            "machine": {"cpu": m.cpu, "cores": m.cores, "ram_gib": m.ram_gib, "kernel": m.kernel,
                        "filesystem": self.fs_type, "dir": self.dir,
                        "load_average_start": self.load.0, "load_average_end": self.load.1},
            "cold": self.cache.name(),
            "data": self.written,
            "repeats": self.repeats,
            "implementations": self.whos.iter().map(|w| w.name()).collect::<Vec<_>>(),
            "measurements": measurements.iter().map(|(key, o)| {
                let (who, k, f, t, warm) = **key;
                let mut v = o.to_json();
                v["impl"] = json!(who.name());
                v["kind"] = json!(k.name());
                v["zarr_format"] = json!(f);
                v["threads"] = json!(t);
                v["cache"] = json!(if warm { "warm" } else { "cold" });
                if who == Who::Zarrs {
                    v["fell_back"] = json!(self.fell_back.get(key).copied().unwrap_or(false));
                }
                v
            }).collect::<Vec<_>>(),
            "targets": self.targets().iter().map(|j| json!({
                "libn5_call": j.libn5_call.name(), "kind": j.kind.name(), "zarr_format": j.zarr_format,
                "threads": j.threads, "cache": if j.warm { "warm" } else { "cold" },
                "peer": j.peer.name(), "libn5_s": j.libn5,
                "peer_s": if j.value.is_nan() { Value::Null } else { json!(j.value) },
                "libn5_spread_s": j.spread, "libn5_cpu_s": j.cpu,
                "peer_cpu_s": if j.cpu_target.is_nan() { Value::Null } else { json!(j.cpu_target) },
                "verdict": j.verdict.name(),
                "reason": match &j.verdict { Verdict::NotApplicable(why) => json!(why), _ => Value::Null },
            })).collect::<Vec<_>>(),
        })
    }
}
