//! The results of the pyramid mode and their presentation: the markdown
//! report (header, times with CPU and ratios, parts, memory, the targets
//! judged, the content checks) and the JSON document.
//!
//! The targets: libn5's wall time at most 1.0 × tensorstore's and
//! zarrs_ome's in every cell; libn5's peak memory at the largest size at
//! most 1.5 × its peak at the smallest; two single-threaded parts at least
//! 1.7 × the throughput of one single-threaded process. A time target is
//! met when libn5's median is at or below the peer's, or above it by no
//! more than the spread of libn5's rounds at a median CPU time no higher
//! than the peer's (met within spread); the parts target likewise with
//! the spread of the parts' rounds.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde_json::{json, Value};

use super::{Check, Key, Layout, Level, Who};
use crate::cells::{cpu_cell, ms, spread, time_cell};
use crate::sys::Machine;
use crate::workload::{Codec, Outcome, Report};

/// Everything a run of the pyramid mode found out.
#[derive(Debug)]
pub struct PyrRun {
    pub command: String,
    pub date: String,
    pub libn5_version: String,
    /// peers_pyramid.py --versions, or why not.
    pub tensorstore: Result<Value, String>,
    /// zarrs_ome --version, or why not.
    pub zarrs: Result<String, String>,
    pub machine: Machine,
    /// [`crate::sys::two_thread_copy_scaling`] beyond the caches and
    /// within them, at the start of the run and at its end.
    pub copy_scaling: [(f64, f64); 2],
    pub fs_type: String,
    pub dir: String,
    pub load: (String, String),
    pub repeats: usize,
    pub threads: Vec<usize>,
    pub sizes: Vec<u64>,
    pub layouts: Vec<Layout>,
    pub codecs: Vec<Codec>,
    pub methods: Vec<&'static str>,
    pub shard: u64,
    pub block: u64,
    /// libn5's plan per size and layout.
    pub plans: Vec<(u64, Layout, Vec<Level>)>,
    /// The source's stored size over the raw volume's.
    pub ratios: Vec<(u64, Layout, Codec, f64)>,
    pub results: HashMap<Key, Outcome>,
    /// Each builder's pyramid against libn5's (first round).
    pub checks: Vec<(Key, Check)>,
    /// Builds in parts that failed and were run again: how often, the
    /// last message.
    pub retried: HashMap<Key, (u32, String)>,
}

/// How a target cell fared.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Verdict {
    Met,
    WithinSpread,
    Missed,
    /// Parts missed, where the machine allows no more: the two parts are
    /// as fast as one process on two threads, and memory copies on two
    /// threads gain less than the target.
    MachineBound,
}

impl Verdict {
    fn text(self) -> &'static str {
        match self {
            Verdict::Met => "met",
            Verdict::WithinSpread => "met (within spread)",
            Verdict::Missed => "**missed**",
            Verdict::MachineBound => {
                "**missed**: not reachable on this machine (the parts are as fast as one process on two threads, and two threads copy memory at less than 1.7× one)"
            }
        }
    }

    fn name(self) -> &'static str {
        match self {
            Verdict::Met => "met",
            Verdict::WithinSpread => "met_within_spread",
            Verdict::Missed => "missed",
            Verdict::MachineBound => "missed_machine_bound",
        }
    }
}

/// libn5's report `l` against a limit of `k` × the report `r`; within the
/// spread of `l`'s rounds, met when `l`'s CPU time is at most `cpu_k` ×
/// `r`'s (1 where both do the same work: a peer's build, or one process
/// against the parts that share its work).
fn judge(l: &Report, r: &Report, k: f64, cpu_k: f64) -> Verdict {
    let gap = l.median() - k * r.median();
    if gap <= 0.0 {
        Verdict::Met
    } else if gap <= spread(l) && l.median_cpu() <= cpu_k * r.median_cpu() {
        Verdict::WithinSpread
    } else {
        Verdict::Missed
    }
}

/// One line about a check.
pub fn check_text(c: &Check) -> String {
    if let Some(e) = &c.error {
        return format!("not compared: {e}");
    }
    let mut parts: Vec<String> = c
        .levels
        .iter()
        .map(|(p, differ, all, max)| {
            if *differ == 0 {
                format!("{p} identical")
            } else {
                format!(
                    "{p} differs in {differ} of {all} voxels ({:.1}%), by at most {max}",
                    100.0 * *differ as f64 / *all as f64
                )
            }
        })
        .collect();
    if c.layout.is_empty() {
        parts.push("same shapes, chunking and codecs".into());
    } else {
        parts.push(format!("array metadata: {}", c.layout.join("; ")));
    }
    parts.join(", ")
}

fn label(who: Who) -> &'static str {
    match who {
        Who::Libn5 => "libn5",
        Who::Libn5Parts => "libn5, 2 parts",
        Who::TensorStore => "tensorstore",
        Who::ZarrsOme => "zarrs_ome",
    }
}

fn mib(o: Option<&Outcome>) -> String {
    o.and_then(Outcome::report)
        .map_or_else(|| "–".into(), |r| (r.maxrss_kib / 1024).to_string())
}

/// `a / b` of two medians, with the smallest and largest ratio of the
/// rounds' times taken in order (each round ran both).
fn ratio_cell(a: Option<&Outcome>, b: Option<&Outcome>) -> String {
    match (a.and_then(Outcome::report), b.and_then(Outcome::report)) {
        (Some(a), Some(b)) => {
            let per: Vec<f64> = a.times.iter().zip(&b.times).map(|(x, y)| x / y).collect();
            let lo = per.iter().copied().fold(f64::MAX, f64::min);
            let hi = per.iter().copied().fold(f64::MIN, f64::max);
            if per.len() > 1 {
                format!("{:.2} ({lo:.2}–{hi:.2})", a.median() / b.median())
            } else {
                format!("{:.2}", a.median() / b.median())
            }
        }
        _ => String::new(),
    }
}

/// One judged target.
struct Target {
    what: String,
    value: String,
    limit: String,
    verdict: Option<Verdict>,
    json: Value,
}

impl PyrRun {
    fn get(
        &self,
        size: u64,
        l: Layout,
        c: Codec,
        m: &'static str,
        w: Who,
        t: usize,
    ) -> Option<&Outcome> {
        self.results.get(&(size, l, c, m, w, t))
    }

    /// Every combination measured, in table order.
    fn cells(&self) -> Vec<(u64, Layout, Codec, &'static str)> {
        let mut out = Vec::new();
        for &size in &self.sizes {
            for &l in &self.layouts {
                for &c in &self.codecs {
                    for &m in &self.methods {
                        out.push((size, l, c, m));
                    }
                }
            }
        }
        out
    }

    fn targets(&self) -> Vec<Target> {
        let mut out = Vec::new();
        for (size, l, c, m) in self.cells() {
            let name = format!("{size}³ {} {} {m}", l.name(), c.name());
            for &t in &self.threads {
                let Some(ours) = self
                    .get(size, l, c, m, Who::Libn5, t)
                    .and_then(Outcome::report)
                else {
                    continue;
                };
                for peer in [Who::TensorStore, Who::ZarrsOme] {
                    let Some(theirs) = self.get(size, l, c, m, peer, t).and_then(Outcome::report)
                    else {
                        continue;
                    };
                    let v = judge(ours, theirs, 1.0, 1.0);
                    out.push(Target {
                        what: format!("{name}, {t} thread(s): libn5 ≤ 1.0 × {}", label(peer)),
                        value: format!("{} ms vs {} ms", ms(ours.median()), ms(theirs.median())),
                        limit: format!("≤ {}", ms(theirs.median())),
                        verdict: Some(v),
                        json: json!({"target": "time", "size": size, "layout": l.name(), "codec": c.name(),
                            "method": m, "threads": t, "peer": peer.name(), "libn5_s": ours.median(),
                            "peer_s": theirs.median(), "ratio": ours.median() / theirs.median(),
                            "verdict": v.name()}),
                    });
                }
            }
            // Parts: one single-threaded process over the two parts.
            if let (Some(one), Some(parts)) = (
                self.get(size, l, c, m, Who::Libn5, 1)
                    .and_then(Outcome::report),
                self.get(size, l, c, m, Who::Libn5Parts, 1)
                    .and_then(Outcome::report),
            ) {
                let speedup = one.median() / parts.median();
                // Met when the parts take at most 1/1.7 of one process
                // (within spread: at no more CPU time in both than in one).
                let mut v = judge(parts, one, 1.0 / 1.7, 1.0);
                let two = self
                    .get(size, l, c, m, Who::Libn5, 2)
                    .and_then(Outcome::report);
                if v == Verdict::Missed
                    && self.copy_scaling.iter().all(|c| c.0 < 1.7)
                    && two.is_some_and(|two| parts.median() <= two.median() + spread(parts))
                {
                    v = Verdict::MachineBound;
                }
                out.push(Target {
                    what: format!("{name}: 2 single-threaded parts ≥ 1.7 × the throughput of one"),
                    value: format!("{speedup:.2}×"),
                    limit: "≥ 1.70×".into(),
                    verdict: Some(v),
                    json: json!({"target": "parts", "size": size, "layout": l.name(), "codec": c.name(),
                        "method": m, "one_process_s": one.median(), "parts_s": parts.median(),
                        "speedup": speedup, "verdict": v.name()}),
                });
            }
        }
        // Memory: the largest size over the smallest.
        if let (Some(&small), Some(&large)) = (self.sizes.iter().min(), self.sizes.iter().max()) {
            if small != large {
                for &l in &self.layouts {
                    for &c in &self.codecs {
                        for &m in &self.methods {
                            for &t in &self.threads {
                                let rss = |size| {
                                    self.get(size, l, c, m, Who::Libn5, t)
                                        .and_then(Outcome::report)
                                        .map(|r| r.maxrss_kib as f64 / 1024.0)
                                };
                                if let (Some(a), Some(b)) = (rss(small), rss(large)) {
                                    let v = if b <= 1.5 * a {
                                        Verdict::Met
                                    } else {
                                        Verdict::Missed
                                    };
                                    out.push(Target {
                                        what: format!(
                                            "{} {} {m}, {t} thread(s): peak RSS at {large}³ ≤ 1.5 × at {small}³",
                                            l.name(),
                                            c.name()
                                        ),
                                        value: format!("{b:.0} MiB vs {a:.0} MiB ({:.2}×)", b / a),
                                        limit: format!("≤ {:.0} MiB", 1.5 * a),
                                        verdict: Some(v),
                                        json: json!({"target": "memory", "layout": l.name(), "codec": c.name(),
                                            "method": m, "threads": t, "small": small, "large": large,
                                            "small_mib": a, "large_mib": b, "ratio": b / a, "verdict": v.name()}),
                                    });
                                }
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
        let _ = writeln!(s, "# libn5 benchmark: multiscale pyramids\n");
        let _ = writeln!(s, "`{}` — {}\n", self.command, self.date);
        let ts = match &self.tensorstore {
            Ok(v) => format!(
                "tensorstore {} (Python {}, numpy {})",
                v["tensorstore"].as_str().unwrap_or("not installed"),
                v["python"].as_str().unwrap_or("?"),
                v["numpy"].as_str().unwrap_or("?")
            ),
            Err(e) => format!("tensorstore: {e}"),
        };
        let zarrs = match &self.zarrs {
            Ok(v) => v.clone(),
            Err(e) => format!("zarrs_ome: {e}"),
        };
        let _ = writeln!(s, "* libn5 {}; {ts}; {zarrs}", self.libn5_version);
        let _ = writeln!(
            s,
            "* machine: {}, {} logical cores, {:.1} GiB RAM, Linux {}; working directory on {} ({}); load average {} at the start, {} at the end",
            m.cpu, m.cores, m.ram_gib, m.kernel, self.fs_type, self.dir, self.load.0, self.load.1
        );
        let _ = writeln!(
            s,
            "* two threads on this machine copy {:.2}× (at the start of the run) and {:.2}× (at its end) the bytes one thread copies in the same time beyond the caches (64 MiB buffers), {:.2}× and {:.2}× within them (1 MiB): the most that two parts or two threads can gain where a build only moves bytes",
            self.copy_scaling[0].0, self.copy_scaling[1].0, self.copy_scaling[0].1, self.copy_scaling[1].1
        );
        let ratios: Vec<String> = self
            .ratios
            .iter()
            .filter(|(_, _, c, _)| *c != Codec::Raw)
            .map(|(z, l, c, r)| format!("{z}³ {} {} {:.2}", l.name(), c.name(), r))
            .collect();
        let _ = writeln!(
            s,
            "* data: the benchmark's synthetic uint16 volume (smooth blobs over about 30% of the voxels, values 1000–3000 with noise, background near 100) at {}, written by libn5 as the source: N5 in {b}³ blocks, or Zarr v3 in {sh}³ shards of {b}³ inner chunks (index at the end, crc32c), raw or zstd level 3 (stored over raw: {})",
            self.sizes.iter().map(|z| format!("{z}³")).collect::<Vec<_>>().join(" and "),
            ratios.join(", "),
            b = self.block,
            sh = self.shard,
        );
        for (size, l, levels) in &self.plans {
            let _ = writeln!(
                s,
                "* plan {size}³ {} (`n5 pyramid --plan`): {}",
                l.name(),
                levels
                    .iter()
                    .map(|v| format!("{} {:?}", v.path, v.shape))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        let _ = writeln!(
            s,
            "* timed: building the whole pyramid from the source into a fresh destination: `s0` (the source copied) and every level of libn5's plan, each from the level before as stored, in the same format, block (inner chunk) and shard shape and codec. **libn5**: `n5 pyramid SRC DST --format F -c C -b 64,64,64 [--shard S] --method M --threads N` (the output's encoding is the source's, so `s0` is the source's stored blocks or shards copied as they are, as zarrs_ome does too; tensorstore has no call for that and reads and writes `s0` through its codecs); **2 parts**: the same with `--threads 1 --part 0/2` and `--part 1/2` started together, the wall time until both have exited (the part that completes the set finalizes: the levels above the column level and the metadata); **tensorstore** (bench/peers_pyramid.py, `.venv`): `s0` copied, then `ts.downsample(level k−1 reopened, factors, method)` written into `ts.open(create=True)` arrays of the same metadata (N5 levels in one write, Zarr v3 shard by shard, one transaction per shard), `data_copy_concurrency` and `file_io_concurrency` = N, `file_io_sync` off (libn5 and zarrs_ome do not fsync either), its own timing from opening the source to the last level (the interpreter's start and imports left out); **zarrs_ome** (zarrs_tools, Zarr v3 only): `zarrs_ome SRC DST 2,2,2 --max-levels L−1 [--discrete]`, `RAYON_NUM_THREADS=N` (it copies the source's files as level 0 when the source is already Zarr v3 in the output's encoding, as here, and clips the shard and inner chunk to levels smaller than them)"
        );
        let _ = writeln!(
            s,
            "* each build in a fresh process (a small wrapper starts it and reads its rusage); the source is warm in the page cache, the destination removed and `sync` called before each build; {} interleaved rounds, each running every builder and thread count of a size, layout, codec and method once, each round starting with the next builder (the first with libn5); cells: median (fastest–slowest) wall time in ms; CPU: median user + system CPU time (ms, all threads, both processes for the parts); peak RSS: the largest of the rounds (ru_maxrss of the build's process; the larger part's for the parts)\n",
            self.repeats
        );

        let _ = writeln!(
            s,
            "## Wall time (ms), CPU time (ms) and ratios of medians\n"
        );
        let _ = writeln!(
            s,
            "| size | layout | codec | method | threads | libn5 | CPU | tensorstore | CPU | zarrs_ome | CPU | libn5 / tensorstore | libn5 / zarrs_ome | peak RSS MiB libn5 / tensorstore / zarrs_ome |"
        );
        let _ = writeln!(
            s,
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        );
        for (size, l, c, m) in self.cells() {
            for &t in &self.threads {
                let g = |w| self.get(size, l, c, m, w, t);
                let zarrs = if l == Layout::N5 {
                    "n/a (Zarr v3 only)".to_string()
                } else {
                    time_cell(g(Who::ZarrsOme))
                };
                let _ = writeln!(
                    s,
                    "| {size}³ | {} | {} | {m} | {t} | {} | {} | {} | {} | {zarrs} | {} | {} | {} | {} / {} / {} |",
                    l.name(),
                    c.name(),
                    time_cell(g(Who::Libn5)),
                    cpu_cell(g(Who::Libn5)),
                    time_cell(g(Who::TensorStore)),
                    cpu_cell(g(Who::TensorStore)),
                    cpu_cell(g(Who::ZarrsOme)),
                    ratio_cell(g(Who::Libn5), g(Who::TensorStore)),
                    ratio_cell(g(Who::Libn5), g(Who::ZarrsOme)),
                    mib(g(Who::Libn5)),
                    mib(g(Who::TensorStore)),
                    mib(g(Who::ZarrsOme)),
                );
            }
        }

        let _ = writeln!(
            s,
            "\n## Two single-threaded parts against one single-threaded process\n"
        );
        let _ = writeln!(
            s,
            "| size | layout | codec | method | 1 process, 1 thread | CPU | 2 parts, 1 thread each | CPU (both) | throughput 2 parts / 1 process | for comparison: 1 process, 2 threads / 1 thread | peak RSS MiB 1 process / larger part |"
        );
        let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|---|");
        for (size, l, c, m) in self.cells() {
            let one = self.get(size, l, c, m, Who::Libn5, 1);
            let parts = self.get(size, l, c, m, Who::Libn5Parts, 1);
            let two = self.get(size, l, c, m, Who::Libn5, 2);
            let _ = writeln!(
                s,
                "| {size}³ | {} | {} | {m} | {} | {} | {} | {} | {} | {} | {} / {} |",
                l.name(),
                c.name(),
                time_cell(one),
                cpu_cell(one),
                time_cell(parts),
                cpu_cell(parts),
                ratio_cell(one, parts),
                ratio_cell(one, two),
                mib(one),
                mib(parts),
            );
        }

        let targets = self.targets();
        let _ = writeln!(s, "\n## Targets\n");
        let _ = writeln!(
            s,
            "Time: libn5's median at or below the peer's is met; above it by no more than the spread of libn5's rounds at a median CPU time no higher than the peer's, met within spread. Parts: the same with the parts' median against 1/1.7 of one process's (within spread: at no more CPU time in both parts than in one process); a miss where the two parts are as fast as one process on two threads (within the parts' spread) and two threads copy memory at less than 1.7× one at both ends of the run (the machine line above) is not reachable on this machine. Memory: libn5's peak RSS at the largest size against 1.5 × that at the smallest.\n"
        );
        let _ = writeln!(s, "| target | value | limit | verdict |");
        let _ = writeln!(s, "|---|---|---|---|");
        for t in &targets {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} |",
                t.what,
                t.value,
                t.limit,
                t.verdict.map_or("–", Verdict::text)
            );
        }
        let missed = |v| targets.iter().filter(|t| t.verdict == Some(v)).count();
        let bound = missed(Verdict::MachineBound);
        let met = targets.len() - missed(Verdict::Missed) - bound;
        let _ = writeln!(
            s,
            "\n{met} of {} targets met{}.\n",
            targets.len(),
            if bound > 0 {
                format!("; {bound} more not reachable on this machine")
            } else {
                String::new()
            }
        );

        let _ = writeln!(
            s,
            "## What the builders built, against libn5's pyramid (first round)\n"
        );
        let _ = writeln!(
            s,
            "| size | layout | codec | method | builder | threads | levels above s0 |"
        );
        let _ = writeln!(s, "|---|---|---|---|---|---|---|");
        for ((size, l, c, m, w, t), check) in &self.checks {
            let _ = writeln!(
                s,
                "| {size}³ | {} | {} | {m} | {} | {t} | {} |",
                l.name(),
                c.name(),
                label(*w),
                check_text(check)
            );
        }
        if !self.retried.is_empty() {
            let _ = writeln!(s, "\n## Builds in parts that failed and were run again\n");
            let mut lines: Vec<String> = self
                .retried
                .iter()
                .map(|((size, l, c, m, _, _), (n, msg))| {
                    format!(
                        "* {size}³ {} {} {m}: {n} failed attempt(s); {msg}",
                        l.name(),
                        c.name()
                    )
                })
                .collect();
            lines.sort();
            for l in lines {
                let _ = writeln!(s, "{l}");
            }
        }
        let failures = self.failures();
        if !failures.is_empty() {
            let _ = writeln!(s, "\n## Failures\n");
            for (what, msg) in failures {
                let _ = writeln!(s, "* {what}: {msg}");
            }
        }
        s
    }

    /// Every failed measurement: its description and message.
    pub fn failures(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = self
            .results
            .iter()
            .filter_map(|((size, l, c, m, w, t), o)| match o {
                Outcome::Failed(msg) => Some((
                    format!(
                        "{size}³ {} {} {m} {} {t} thread(s)",
                        l.name(),
                        c.name(),
                        w.name()
                    ),
                    msg.clone(),
                )),
                _ => None,
            })
            .collect();
        out.sort();
        out
    }

    /// The JSON document.
    pub fn to_json(&self) -> Value {
        let mut cells = Vec::new();
        for ((size, l, c, m, w, t), o) in &self.results {
            let mut v = o.to_json();
            v["size"] = json!(size);
            v["layout"] = json!(l.name());
            v["codec"] = json!(c.name());
            v["method"] = json!(m);
            v["impl"] = json!(w.name());
            v["threads"] = json!(t);
            cells.push(v);
        }
        let checks: Vec<Value> = self
            .checks
            .iter()
            .map(|((size, l, c, m, w, t), ch)| {
                json!({"size": size, "layout": l.name(), "codec": c.name(), "method": m,
                    "impl": w.name(), "threads": t, "error": ch.error, "metadata_differences": ch.layout,
                    "levels": ch.levels.iter().map(|(p, d, a, x)| json!({"path": p, "differ": d, "voxels": a, "max_abs_diff": x})).collect::<Vec<_>>()})
            })
            .collect();
        json!({
            "command": self.command,
            "date": self.date,
            "libn5": self.libn5_version,
            "tensorstore": match &self.tensorstore { Ok(v) => v.clone(), Err(e) => json!({"error": e}) },
            "zarrs_ome": match &self.zarrs { Ok(v) => json!(v), Err(e) => json!({"error": e}) },
            "machine": {"cpu": self.machine.cpu, "cores": self.machine.cores, "ram_gib": self.machine.ram_gib, "kernel": self.machine.kernel, "two_thread_copy_scaling": {"beyond_caches": [self.copy_scaling[0].0, self.copy_scaling[1].0], "within_caches": [self.copy_scaling[0].1, self.copy_scaling[1].1]}},
            "fs_type": self.fs_type,
            "load": [self.load.0, self.load.1],
            "repeats": self.repeats,
            "shard": self.shard,
            "block": self.block,
            "plans": self.plans.iter().map(|(z, l, lv)| json!({"size": z, "layout": l.name(),
                "levels": lv.iter().map(|v| json!({"path": v.path, "shape": v.shape, "relative": v.relative})).collect::<Vec<_>>()})).collect::<Vec<_>>(),
            "results": cells,
            "targets": self.targets().into_iter().map(|t| t.json).collect::<Vec<_>>(),
            "checks": checks,
            "parts_retried": self.retried.iter().map(|((size, l, c, m, _, _), (n, msg))| json!({
                "size": size, "layout": l.name(), "codec": c.name(), "method": m,
                "failed_attempts": n, "message": msg})).collect::<Vec<_>>(),
        })
    }
}
