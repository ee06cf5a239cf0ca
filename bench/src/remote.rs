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
//! The sharded Zarr v3 layout (`--format zarr3-sharded`) runs the same way,
//! with tensorstore's zarr3 driver and zarr-python 3 as peers, and adds a
//! table of the GET requests and bytes of every read next to what reading
//! the touched shards whole would take.
//!
//! This file owns the servers, the jobs of that part and its report.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use n5_testkit::client::Request;
use n5_testkit::{Proxy, S3Server};
use serde_json::{json, Value};

use crate::report;
use crate::sharded::Needed;
use crate::workload::{Codec, Impl, Job, Layout, Outcome, Workload};
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
    /// GET requests among `requests`.
    pub gets: Option<u64>,
    /// For libn5's sharded reads: the inner chunks the workload touches and
    /// its shards read whole, to compare the requests and bytes with.
    pub needed: Option<Needed>,
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

/// The peers of a layout on S3, in column order.
fn peers(layout: Layout) -> &'static [Impl] {
    match layout {
        Layout::N5 => &[Impl::Tensorstore],
        Layout::Zarr3Sharded => &[Impl::Tensorstore, Impl::ZarrPython],
    }
}

/// What `job` (a sharded read of libn5's array) needs at least, read from
/// the store (untimed, after the measurement); `None`, said, on failure.
fn needed(job: &Job) -> Option<Needed> {
    let store = job
        .options()
        .and_then(|options| {
            let url = job.container.to_str().ok_or("the location is not UTF-8")?;
            n5::storage::Location::parse(url)
                .and_then(|l| n5::storage::open(&l, &options.storage))
                .map_err(|e| e.to_string())
        })
        .and_then(|store| crate::sharded::needed(job, store.as_ref()));
    match store {
        Ok(n) => Some(n),
        Err(e) => {
            say!(
                "the touched inner chunks of {}: {e}",
                job.container.display()
            );
            None
        }
    }
}

/// Makes room for a write of `bytes` into `bucket`, untimed: grows the
/// bucket's volumes until the writable ones have room for twice `bytes`;
/// returns how many it grew.
///
/// SeaweedFS keeps a bucket's objects in volumes of its own, closed at
/// [`S3Server::VOLUME_SIZE_LIMIT`], and left alone holds one writable
/// volume and grows the next as it fills: every PUT of a write appends to
/// that one volume, and those that meet a growth wait for it (seen: the
/// same PUTs 0.5 to 2.8 s from round to round, 0.45 to 0.6 s with volumes
/// grown first). An object store's PUTs do not wait for its disks, so
/// every write starts with room to spare. The sizes are the volume
/// server's own (`/status`), as they are now: the master's (`/vol/status`)
/// are those of its last heartbeat, seconds old, which counted the volumes
/// the previous write had just filled as empty, so that every other write
/// found no room and took up to twice as long. Twice `bytes`, because
/// PUTs go to the writable volumes at random and one may fill before the
/// others.
fn make_room(server: &S3Server, bucket: &str, bytes: u64) -> Result<u64, String> {
    let get = |at: std::net::SocketAddr, target: &str| -> Result<Value, String> {
        let r = Request::new("GET", target)
            .send(at)
            .map_err(|e| format!("SeaweedFS {at}{target}: {e}"))?;
        if r.status != 200 {
            return Err(format!(
                "SeaweedFS {at}{target}: {} {}",
                r.status,
                String::from_utf8_lossy(&r.body)
            ));
        }
        serde_json::from_slice(&r.body).map_err(|e| format!("SeaweedFS {at}{target}: {e}"))
    };
    // {"Volumes": [{"Collection": ..., "Size": ..., "ReadOnly": ...}, ...]}
    let status = get(server.volume_addr(), "/status")?;
    let mut room = 0u64;
    for volume in status["Volumes"].as_array().into_iter().flatten() {
        if volume["Collection"] == bucket && volume["ReadOnly"] == false {
            let size = volume["Size"].as_u64().unwrap_or(u64::MAX);
            room += S3Server::VOLUME_SIZE_LIMIT.saturating_sub(size);
        }
    }
    let want = bytes.saturating_mul(2);
    if room >= want {
        return Ok(0);
    }
    let count = (want - room).div_ceil(S3Server::VOLUME_SIZE_LIMIT);
    let grown = get(
        server.master_addr(),
        &format!("/vol/grow?collection={bucket}&count={count}&replication=000"),
    )?;
    Ok(grown["count"].as_u64().unwrap_or(0))
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
    let raw_bytes = std::fs::metadata(&setup.raw)
        .map_err(|e| format!("{}: {e}", setup.raw.display()))?
        .len();
    let mut grown = 0;
    let mut room = |what: &str| match make_room(server, &bucket, raw_bytes) {
        Ok(n) => grown += n,
        Err(e) => {
            say!("object store: room for {what} not made, its PUTs may wait for new volumes: {e}")
        }
    };
    let mut cells = Vec::new();
    for &latency_ms in &config.latencies {
        proxy.set_latency(Duration::from_millis(latency_ms));
        say!("object store: {latency_ms} ms per request");
        for codec in codecs(config) {
            let url = |owner: &str| -> PathBuf {
                PathBuf::from(format!(
                    "s3://{bucket}/{latency_ms}ms/{owner}-{}.{}",
                    codec.name(),
                    setup.layout.suffix()
                ))
            };
            // Every reader reads the objects libn5 wrote: the same bytes,
            // stored alike. (SeaweedFS gzips a body uploaded untyped or as
            // application/octet-stream when it can shrink it, as it does
            // the peers' uploads, and then inflates a stored chunk for every
            // range read of it; libn5 names its uploads binary/octet-stream.)
            // A peer writes into a container of its own.
            let job = |imp: Impl, workload: Workload, threads: usize| {
                let owner = match imp {
                    Impl::Tensorstore | Impl::ZarrPython if workload == Workload::Write => {
                        imp.name()
                    }
                    // Writes and reads its own array of HDF5 shards.
                    Impl::Libn5Hdf5 => imp.name(),
                    _ => "libn5",
                };
                let mut j = setup.job(imp, workload, codec, threads);
                j.container = url(owner);
                j.scratch = url(&format!("floor-{}", imp.name()));
                j.storage = Some(storage.clone());
                j
            };

            let mut workloads = config.workloads.clone();
            // Why libn5 refused the array with HDF5 shards, if it did: its
            // reads are not applicable then either.
            let mut hdf5_refused = None;
            if !workloads.contains(&Workload::Write) {
                // Untimed: the containers the reads need.
                for imp in [Impl::Libn5, Impl::Libn5Hdf5] {
                    if imps.contains(&imp) {
                        room("the untimed write");
                        let outcome =
                            run_job(config, &job(imp, Workload::Write, config.threads[0]));
                        if let (Impl::Libn5Hdf5, Outcome::NotApplicable(why)) = (imp, outcome) {
                            hdf5_refused = Some(why);
                        }
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
                type Counted = (Outcome, Option<(u64, u64, u64)>);
                let mut results: HashMap<(Impl, usize), Counted> = HashMap::new();
                if let (Some(why), true) = (&hdf5_refused, workload != Workload::Write) {
                    for &t in &config.threads {
                        results.insert(
                            (Impl::Libn5Hdf5, t),
                            (Outcome::NotApplicable(why.clone()), None),
                        );
                    }
                }
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
                        if workload == Workload::Write {
                            room(j.imp.name());
                        }
                        proxy.reset_counters();
                        let outcome = run_job(config, j);
                        let counters = proxy.counters();
                        let requests = (counters.requests, counters.bytes_to_client, counters.get);
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
                    if let (Impl::Libn5Hdf5, Workload::Write, Outcome::NotApplicable(why)) =
                        (j.imp, workload, &outcome)
                    {
                        hdf5_refused = Some(why.clone());
                    }
                    // Requests of a measurement that did not run mean nothing.
                    let counted = requests.filter(|_| outcome.report().is_some());
                    let need = (setup.layout == Layout::Zarr3Sharded
                        && j.imp == Impl::Libn5
                        && workload != Workload::Write)
                        .then(|| needed(j))
                        .flatten();
                    cells.push(Cell {
                        latency_ms,
                        imp: j.imp,
                        workload,
                        codec,
                        threads: j.threads,
                        outcome,
                        requests: counted.map(|c| c.0),
                        bytes: counted.map(|c| c.1),
                        gets: counted.map(|c| c.2),
                        needed: need,
                    });
                }
            }
        }
    }
    proxy.set_latency(Duration::ZERO);
    say!("object store: {grown} volumes grown before writes, untimed");
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

/// The markdown section of the object-store part for `layout`.
pub fn markdown(config: &Config, layout: Layout, cells: &[Cell]) -> String {
    let mut s = String::new();
    let peers = peers(layout);
    match layout {
        Layout::N5 => {
            let _ = writeln!(s, "\n## Object store (S3)\n");
        }
        Layout::Zarr3Sharded => {
            let _ = writeln!(
                s,
                "\n## Object store (S3), sharded Zarr v3\n\nThe sharded array on S3; tensorstore's zarr3 driver on its s3 kvstore, zarr-python 3 through fsspec/s3fs (n/a without s3fs). The floor issues exactly the GETs libn5 must (the same ranges: whole shards for those whose every inner chunk the read touches, sent alongside the index suffixes of the others, then their coalesced inner chunks) through libn5's `Store`. The table after the times counts them.\n"
            );
        }
    }
    let _ = writeln!(
        s,
        "SeaweedFS (`weed mini`, anonymous) on 127.0.0.1 behind testkit's proxy, which adds the latency per request before forwarding it; libn5 with `io_concurrency` {IO_CONCURRENCY}, tensorstore's {driver} driver on its s3 kvstore with `s3_request_concurrency` {IO_CONCURRENCY}. Every reader reads the objects libn5's write made, so that all read the same bytes stored alike; each writer writes a container of its own. (SeaweedFS gzips a body uploaded without a Content-Type or as application/octet-stream when that shrinks it, as it stored the peers' uploads here, and then inflates the stored chunk again for every read of a range of it; libn5 names its uploads binary/octet-stream, S3's own default.) floor: the same GETs and PUTs through libn5's `Store` with {IO_CONCURRENCY} in flight (single blocks: one at a time), plus the codec work on the job's threads for compressed data. floor+out (whole-volume and region reads): the floor that also copies every block's bytes to their place in a fresh output buffer of the box's size (made before the timing and advised to use huge pages, as libn5's is), the work every reader that returns the data does. Times in ms (median); CPU: the median CPU time in ms (user and system, all threads) of the measuring process during the operation, the part of the wall time an implementation controls when the server shares the machine's cores; requests: what the proxy counted for one measuring process (opening the container included; for writes also deleting the previous dataset, untimed); peak RSS in MiB.",
        driver = match layout {
            Layout::N5 => "n5",
            Layout::Zarr3Sharded => "zarr3",
        }
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
        let peer_names: Vec<&str> = peers
            .iter()
            .map(|&p| match p {
                Impl::ZarrPython => "zarr-python",
                other => other.name(),
            })
            .collect();
        let peer_cols: String = peer_names
            .iter()
            .map(|n| format!(" {n} | libn5/{n} |"))
            .collect();
        let _ = writeln!(
            s,
            "| workload | codec | threads | libn5 | floor | libn5/floor | floor+out | libn5/floor+out |{peer_cols} requests libn5 / {names} | peak RSS libn5 / {names} | CPU libn5 / floor / floor+out / {names} |",
            names = peer_names.join(" / ")
        );
        let _ = writeln!(
            s,
            "|---|---|--:|--:|--:|--:|--:|--:|{}--:|--:|--:|",
            "--:|--:|".repeat(peers.len())
        );
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
                    let mut peer_cells = String::new();
                    for &p in peers {
                        let pt = time(cells, latency, p, w, c, t);
                        let shown = match find(cells, latency, p, w, c, t).map(|x| &x.outcome) {
                            Some(Outcome::NotApplicable(_)) => "n/a".to_string(),
                            _ => ms(pt),
                        };
                        let _ = write!(peer_cells, " {shown} | {} |", ratio(l, pt));
                    }
                    let each = |f: &dyn Fn(Impl) -> String| {
                        peers.iter().map(|&p| f(p)).collect::<Vec<_>>().join(" / ")
                    };
                    let _ = writeln!(
                        s,
                        "| {} | {} | {t} | {} | {} | {} | {} | {} |{peer_cells} {} / {} | {} / {} | {} / {} / {} / {} |",
                        w.name(),
                        c.name(),
                        ms(l),
                        ms(f),
                        ratio(l, f),
                        ms(out),
                        ratio(l, out),
                        req(Impl::Libn5),
                        each(&req),
                        rss(Impl::Libn5),
                        each(&rss),
                        cpu(Impl::Libn5),
                        cpu(floor_imp),
                        cpu(Impl::FloorOut),
                        each(&cpu),
                    );
                }
            }
        }
        // Why a peer's cells say n/a (the first reason of each peer).
        for &p in peers {
            let why = cells.iter().find_map(|x| match &x.outcome {
                Outcome::NotApplicable(why) if x.imp == p && x.latency_ms == latency => Some(why),
                _ => None,
            });
            if let Some(why) = why {
                let _ = writeln!(s, "\nn/a for {}: {why}.", p.name());
            }
        }
        if layout == Layout::Zarr3Sharded {
            let rows = hdf5_rows(config, latency, cells);
            if rows.iter().any(|r| r.hdf5.is_some()) {
                let _ = writeln!(
                    s,
                    "\nHDF5 shards on S3 at {latency} ms: libn5 with `hdf5_shards` over plain libn5. {}\n",
                    report::HDF5_INTRO
                );
                s.push_str(&report::hdf5_table(&rows));
            }
            requests_table(&mut s, config, latency, cells);
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

/// The sharded reads' requests: GETs and bytes received by libn5, the floor
/// (the same ranges, no metadata) and the peers, next to the touched
/// shards read whole.
fn requests_table(s: &mut String, config: &Config, latency: u64, cells: &[Cell]) {
    let _ = writeln!(
        s,
        "\nGET requests and MiB received per read (the proxy's count for one measuring process; libn5's include opening the array: its zarr.json and the like), the inner chunks the read touches (their stored bytes, from the shards' indexes; the fetched ranges also hold the gaps of ≤256 KiB coalescing bridges, and the indexes), and the shards it touches if each were read whole:\n"
    );
    let _ = writeln!(
        s,
        "| workload | codec | threads | libn5 GETs | libn5 MiB | floor GETs | floor MiB | tensorstore GETs | tensorstore MiB | zarr-python GETs | zarr-python MiB | touched inner chunks | their MiB | touched shards whole: GETs | MiB |"
    );
    let _ = writeln!(
        s,
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
    );
    let mib = |b: u64| format!("{:.2}", b as f64 / (1u64 << 20) as f64);
    for &w in &config.workloads {
        if w == Workload::Write {
            continue;
        }
        for c in codecs(config) {
            for &t in &config.threads {
                let count = |imp| {
                    let cell = find(cells, latency, imp, w, c, t);
                    (
                        cell.and_then(|x| x.gets)
                            .map_or("—".to_string(), |g| g.to_string()),
                        cell.and_then(|x| x.bytes).map_or("—".to_string(), mib),
                    )
                };
                let floor_imp = if c == Codec::Raw {
                    Impl::FloorIo
                } else {
                    Impl::FloorCodec
                };
                let (lg, lb) = count(Impl::Libn5);
                let (fg, fb) = count(floor_imp);
                let (tg, tb) = count(Impl::Tensorstore);
                let (zg, zb) = count(Impl::ZarrPython);
                let need = find(cells, latency, Impl::Libn5, w, c, t).and_then(|x| x.needed);
                let dash = || "—".to_string();
                let (nc, nb, wg, wb) = need.map_or((dash(), dash(), dash(), dash()), |n| {
                    (
                        n.chunks.to_string(),
                        mib(n.chunk_bytes),
                        n.shards.to_string(),
                        mib(n.shard_bytes),
                    )
                });
                let _ = writeln!(
                    s,
                    "| {} | {} | {t} | {lg} | {lb} | {fg} | {fb} | {tg} | {tb} | {zg} | {zb} | {nc} | {nb} | {wg} | {wb} |",
                    w.name(),
                    c.name()
                );
            }
        }
    }
}

/// The rows of the HDF5-shard comparison at `latency`.
fn hdf5_rows<'a>(config: &Config, latency: u64, cells: &'a [Cell]) -> Vec<report::Hdf5Row<'a>> {
    let mut rows = Vec::new();
    for &w in &config.workloads {
        for c in codecs(config) {
            for &t in &config.threads {
                let outcome = |imp| find(cells, latency, imp, w, c, t).map(|cell| &cell.outcome);
                rows.push(report::Hdf5Row {
                    label: w.name().to_string(),
                    workload: w,
                    codec: c,
                    threads: t,
                    plain: outcome(Impl::Libn5),
                    hdf5: outcome(Impl::Libn5Hdf5),
                });
            }
        }
    }
    rows
}

/// The HDF5-shard comparison of every latency as JSON (`[]` without
/// libn5's HDF5 cells).
pub fn hdf5_to_json(config: &Config, cells: &[Cell]) -> Value {
    if !cells.iter().any(|c| c.imp == Impl::Libn5Hdf5) {
        return json!([]);
    }
    Value::Array(
        config
            .latencies
            .iter()
            .map(|&latency| {
                json!({
                    "latency_ms": latency,
                    "cells": report::hdf5_json(&hdf5_rows(config, latency, cells)),
                })
            })
            .collect(),
    )
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
                    "get_requests": c.gets,
                    "needed": c.needed.map(|n| json!({
                        "inner_chunks": n.chunks, "inner_chunk_bytes": n.chunk_bytes,
                        "shards": n.shards, "shard_bytes": n.shard_bytes})),
                    "outcome": c.outcome.to_json(),
                })
            })
            .collect(),
    )
}
