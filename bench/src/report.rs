//! The results of a run and their presentation: the markdown report (main
//! table, 2-thread speedups, peak memory, scaling) and the JSON document,
//! one per layout (N5, sharded Zarr v3).

use std::collections::HashMap;
use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::sys::Machine;
use crate::workload::{Codec, Impl, Job, Layout, Outcome, Region, Workload};

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
            "scaling": self.scaling.iter().map(|r| json!({
                "dims": r.dims, "codec": r.codec.name(), "threads": r.threads,
                "write": r.write.to_json(), "read": r.read.to_json(),
            })).collect::<Vec<_>>(),
        })
    }
}
