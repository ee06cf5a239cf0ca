//! The object-store part of the benchmark (`--storage s3`): the same
//! workloads on S3, served by SeaweedFS on 127.0.0.1 (started through
//! n5-testkit, anonymous) behind testkit's proxy, which delays every
//! request by a fixed latency (0 ms: loopback as it is; 20 ms: an object
//! store's time to first byte) and counts the requests.
//!
//! Measured in the same run, one process per timed operation, round robin:
//! libn5 (`s3://` location), the I/O floor (the same GETs and PUTs through
//! libn5's own `Store` and client, `io_concurrency` in flight, no N5 work),
//! the codec floor (that plus the codec work of the blocks on the job's
//! threads), and tensorstore's n5 driver on its s3 kvstore. For each
//! latency above zero, the ideal of a whole-volume read is
//! `requests / in flight × latency + bytes / bandwidth`, the bandwidth being
//! the I/O floor's whole raw read at 0 ms.
//!
//! This file owns the servers, the jobs of that part and its report.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use n5_testkit::Proxy;
use serde_json::{json, Value};

use crate::workload::{Codec, Impl, Job, Outcome, Workload};
use crate::{run_job, Config, Setup};

/// libn5's requests in flight on object stores (its default).
const IO_CONCURRENCY: usize = n5::storage::options::REMOTE_IO_CONCURRENCY;

/// One measurement of the object-store part.
#[derive(Clone, Debug)]
pub struct Cell {
    /// Latency added per request (ms).
    pub latency_ms: u64,
    /// Who ran it.
    pub imp: Impl,
    /// What was timed.
    pub workload: Workload,
    /// The compression.
    pub codec: Codec,
    /// Threads.
    pub threads: usize,
    /// Times and memory, or why not.
    pub outcome: Outcome,
    /// Requests the proxy saw from the measuring process (the last
    /// round's; the untimed opening and, for writes, deleting included).
    pub requests: Option<u64>,
    /// Bytes the proxy sent to the client in that operation.
    pub bytes: Option<u64>,
}

/// The codecs of the object-store part (the four; lz4 has no
/// tensorstore counterpart).
fn codecs(config: &Config) -> Vec<Codec> {
    config
        .codecs
        .iter()
        .copied()
        .filter(|&c| c != Codec::Lz4)
        .collect()
}

/// Runs the object-store part; returns its cells.
pub fn run(config: &Config, setup: &Setup, imps: &[Impl]) -> Result<Vec<Cell>, String> {
    let server = n5_testkit::s3_anonymous().map_err(|e| format!("SeaweedFS: {e}"))?;
    let proxy = Proxy::start(server.addr());
    let bucket = server
        .unique_bucket("bench")
        .map_err(|e| format!("SeaweedFS: {e}"))?;
    say!(
        "object store: SeaweedFS at {} (anonymous) behind the proxy at {}, bucket {bucket}",
        server.endpoint(),
        proxy.url()
    );
    let storage = json!({
        "s3": {"endpoint": proxy.url(), "region": "us-east-1", "anonymous": true},
        "io_concurrency": IO_CONCURRENCY,
    });
    let imps: Vec<Impl> = imps.iter().copied().filter(|&i| i != Impl::Z5py).collect();
    let mut cells = Vec::new();
    for &latency_ms in &config.latencies {
        proxy.set_latency(Duration::from_millis(latency_ms));
        say!("object store: {latency_ms} ms per request");
        for codec in codecs(config) {
            let url = |owner: &str| -> PathBuf {
                PathBuf::from(format!(
                    "s3://{bucket}/{latency_ms}ms/{owner}-{}.n5",
                    codec.name()
                ))
            };
            let job = |imp: Impl, workload: Workload, threads: usize| {
                let owner = match imp {
                    Impl::Tensorstore => "tensorstore",
                    _ => "libn5",
                };
                let mut j = setup.job(imp, workload, codec, threads);
                j.container = url(owner);
                j.scratch = url(&format!("floor-{}", imp.name()));
                j.storage = Some(storage.clone());
                j
            };

            let mut workloads = config.workloads.clone();
            if !workloads.contains(&Workload::Write) {
                // Untimed: the containers the reads need.
                for imp in [Impl::Libn5, Impl::Tensorstore] {
                    if imps.contains(&imp) {
                        run_job(config, &job(imp, Workload::Write, config.threads[0]));
                    }
                }
            } else {
                // The writes first: they make the containers.
                workloads.retain(|&w| w != Workload::Write);
                workloads.insert(0, Workload::Write);
            }
            for workload in workloads {
                let jobs: Vec<Job> = imps
                    .iter()
                    .filter(|imp| imp.measures(workload, codec))
                    .flat_map(|&imp| config.threads.iter().map(move |&t| (imp, t)))
                    .map(|(imp, t)| job(imp, workload, t))
                    .collect();
                type Counted = (Outcome, Option<(u64, u64)>);
                let mut results: HashMap<(Impl, usize), Counted> = HashMap::new();
                for round in 0..config.repeats {
                    if config.repeats > 1 {
                        say!("round {}/{}", round + 1, config.repeats);
                    }
                    for j in &jobs {
                        let key = (j.imp, j.threads);
                        let previous = results.remove(&key);
                        if let Some((
                            done @ (Outcome::Failed(_) | Outcome::NotApplicable(_)),
                            requests,
                        )) = previous
                        {
                            results.insert(key, (done, requests));
                            continue;
                        }
                        proxy.reset_counters();
                        let outcome = run_job(config, j);
                        let counters = proxy.counters();
                        let requests = (counters.requests, counters.bytes_to_client);
                        let merged = match previous {
                            Some((p, _)) => p.merge(outcome),
                            None => outcome,
                        };
                        results.insert(key, (merged, Some(requests)));
                    }
                }
                for j in &jobs {
                    let (outcome, requests) = results
                        .remove(&(j.imp, j.threads))
                        .unwrap_or((Outcome::Failed("not run".into()), None));
                    // Requests of a measurement that did not run mean nothing.
                    let counted = requests.filter(|_| outcome.report().is_some());
                    cells.push(Cell {
                        latency_ms,
                        imp: j.imp,
                        workload,
                        codec,
                        threads: j.threads,
                        outcome,
                        requests: counted.map(|c| c.0),
                        bytes: counted.map(|c| c.1),
                    });
                }
            }
        }
    }
    proxy.set_latency(Duration::ZERO);
    Ok(cells)
}

/// The median time (s) of a cell, if it ran.
fn time(cells: &[Cell], latency: u64, imp: Impl, w: Workload, c: Codec, t: usize) -> Option<f64> {
    find(cells, latency, imp, w, c, t)
        .and_then(|cell| cell.outcome.report())
        .map(|r| r.median())
}

fn find(cells: &[Cell], latency: u64, imp: Impl, w: Workload, c: Codec, t: usize) -> Option<&Cell> {
    cells.iter().find(|x| {
        x.latency_ms == latency && x.imp == imp && x.workload == w && x.codec == c && x.threads == t
    })
}

/// Bytes per second of the I/O floor's whole raw read at 0 ms, its bytes
/// as the proxy counted them (`None` without that cell).
fn bandwidth(cells: &[Cell], threads: &[usize]) -> Option<f64> {
    threads
        .iter()
        .filter_map(|&t| {
            let cell = find(cells, 0, Impl::FloorIo, Workload::ReadAll, Codec::Raw, t)?;
            Some(cell.bytes? as f64 / cell.outcome.report()?.median())
        })
        .fold(None, |best: Option<f64>, b| {
            Some(best.map_or(b, |x| x.max(b)))
        })
}

/// The ideal time (s) of a whole-volume read of `codec` at `latency_ms`:
/// libn5's requests, `IO_CONCURRENCY` in flight, each taking the latency,
/// plus the bytes libn5 received over the 0 ms bandwidth. `None` when a
/// part is missing.
fn ideal(
    cells: &[Cell],
    latency_ms: u64,
    codec: Codec,
    threads: usize,
    bw: Option<f64>,
) -> Option<f64> {
    let cell = find(
        cells,
        latency_ms,
        Impl::Libn5,
        Workload::ReadAll,
        codec,
        threads,
    )?;
    let waves = cell.requests? as f64 / IO_CONCURRENCY as f64;
    Some(waves * latency_ms as f64 / 1000.0 + cell.bytes? as f64 / bw?)
}

fn ms(s: Option<f64>) -> String {
    s.map_or("—".into(), |s| format!("{:.0}", s * 1000.0))
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
        _ => "—".into(),
    }
}

/// The markdown section of the object-store part.
pub fn markdown(config: &Config, cells: &[Cell]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "\n## Object store (S3)\n");
    let _ = writeln!(
        s,
        "SeaweedFS (`weed mini`, anonymous) on 127.0.0.1 behind testkit's proxy, which adds the latency per request before forwarding it; libn5 with `io_concurrency` {IO_CONCURRENCY}, tensorstore's n5 driver on its s3 kvstore with `s3_request_concurrency` {IO_CONCURRENCY}. floor: the same GETs and PUTs through libn5's `Store` with {IO_CONCURRENCY} in flight (single blocks: one at a time), plus the codec work on the job's threads for compressed data. floor+out (whole-volume and region reads): the floor that also copies every block's bytes to their place in a fresh output buffer of the box's size (made before the timing and advised to use huge pages, as libn5's is), the work every reader that returns the data does. Times in ms (median); CPU: the median CPU time in ms (user and system, all threads) of the measuring process during the operation, the part of the wall time an implementation controls when the server shares the machine's cores; requests: what the proxy counted for one measuring process (opening the container included; for writes also deleting the previous dataset, untimed); peak RSS in MiB."
    );
    let bw = bandwidth(cells, &config.threads);
    if let Some(bw) = bw {
        let _ = writeln!(
            s,
            "\nBandwidth through the proxy at 0 ms (the I/O floor's whole raw read): {:.0} MiB/s.",
            bw / (1 << 20) as f64
        );
    }
    for &latency in &config.latencies {
        let _ = writeln!(s, "\n### {latency} ms per request\n");
        let _ = writeln!(
            s,
            "| workload | codec | threads | libn5 | floor | libn5/floor | floor+out | libn5/floor+out | tensorstore | libn5/tensorstore | requests libn5 / tensorstore | peak RSS libn5 / tensorstore | CPU libn5 / floor / floor+out / tensorstore |"
        );
        let _ = writeln!(s, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
        for &w in &config.workloads {
            for c in codecs(config) {
                for &t in &config.threads {
                    let floor_imp = if c == Codec::Raw {
                        Impl::FloorIo
                    } else {
                        Impl::FloorCodec
                    };
                    let l = time(cells, latency, Impl::Libn5, w, c, t);
                    let f = time(cells, latency, floor_imp, w, c, t);
                    let out = time(cells, latency, Impl::FloorOut, w, c, t);
                    let ts = time(cells, latency, Impl::Tensorstore, w, c, t);
                    let req = |imp| {
                        find(cells, latency, imp, w, c, t)
                            .and_then(|x| x.requests)
                            .map_or("—".to_string(), |r| r.to_string())
                    };
                    let rss = |imp| {
                        find(cells, latency, imp, w, c, t)
                            .and_then(|x| x.outcome.report())
                            .map_or("—".to_string(), |r| (r.maxrss_kib / 1024).to_string())
                    };
                    let cpu = |imp| {
                        ms(find(cells, latency, imp, w, c, t)
                            .and_then(|x| x.outcome.report())
                            .map(|r| r.median_cpu())
                            .filter(|c| c.is_finite()))
                    };
                    let _ = writeln!(
                        s,
                        "| {} | {} | {t} | {} | {} | {} | {} | {} | {} | {} | {} / {} | {} / {} | {} / {} / {} / {} |",
                        w.name(),
                        c.name(),
                        ms(l),
                        ms(f),
                        ratio(l, f),
                        ms(out),
                        ratio(l, out),
                        ms(ts),
                        ratio(l, ts),
                        req(Impl::Libn5),
                        req(Impl::Tensorstore),
                        rss(Impl::Libn5),
                        rss(Impl::Tensorstore),
                        cpu(Impl::Libn5),
                        cpu(floor_imp),
                        cpu(Impl::FloorOut),
                        cpu(Impl::Tensorstore),
                    );
                }
            }
        }
        if latency > 0 && config.workloads.contains(&Workload::ReadAll) {
            let _ = writeln!(
                s,
                "\nWhole-volume read against the ideal (requests / {IO_CONCURRENCY} in flight × {latency} ms + bytes / bandwidth):\n"
            );
            let _ = writeln!(s, "| codec | threads | libn5 | ideal | libn5/ideal |");
            let _ = writeln!(s, "|---|--:|--:|--:|--:|");
            for c in codecs(config) {
                for &t in &config.threads {
                    let l = time(cells, latency, Impl::Libn5, Workload::ReadAll, c, t);
                    let i = ideal(cells, latency, c, t, bw);
                    let _ = writeln!(
                        s,
                        "| {} | {t} | {} | {} | {} |",
                        c.name(),
                        ms(l),
                        ms(i),
                        ratio(l, i)
                    );
                }
            }
        }
    }
    s
}

/// The cells as JSON.
pub fn to_json(cells: &[Cell]) -> Value {
    Value::Array(
        cells
            .iter()
            .map(|c| {
                json!({
                    "latency_ms": c.latency_ms,
                    "impl": c.imp.name(),
                    "workload": c.workload.name(),
                    "codec": c.codec.name(),
                    "threads": c.threads,
                    "requests": c.requests,
                    "bytes_to_client": c.bytes,
                    "outcome": c.outcome.to_json(),
                })
            })
            .collect(),
    )
}
