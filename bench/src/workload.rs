//! What is measured: the codecs, the workloads, the job description a child
//! process receives (`--one JOB`) and the report it prints, and libn5's own
//! measurements (one `write_region` or `read_region` call per operation),
//! on an N5 dataset or a sharded Zarr v3 array ([`Layout`]).

use std::fs;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use n5::{Compression, Container, DataType, DatasetAttributes, Mode, Options};
use serde_json::{json, Value};

use crate::sys::{self, CacheMode};

/// The dataset's path inside every container.
pub const DATASET: &str = "vol";

/// The key (below the container) of the sharded layout's shard at shard
/// grid position `p` (N5 order): `vol/c/z/y/x`.
pub fn shard_key(p: [u64; 3]) -> String {
    format!("{DATASET}/c/{}/{}/{}", p[2], p[1], p[0])
}

/// The member of zarr.json that makes every shard libn5 writes an HDF5
/// file too.
pub const HDF5_SHARDS: &str = "hdf5_shards";

/// The first 8 bytes of an HDF5 file (at its base address: byte 0 of a
/// shard whose index is at the end).
pub const HDF5_SIGNATURE: &[u8; 8] = b"\x89HDF\r\n\x1a\n";

/// The codecs every workload runs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Codec {
    /// No compression.
    Raw,
    /// gzip, level -1 (zlib's default, 6).
    Gzip,
    /// lz4 (Java's LZ4Block framing, 64 KiB pieces).
    Lz4,
    /// zstd level 3.
    Zstd,
    /// blosc with lz4, clevel 5, byte shuffle.
    Blosc,
}

impl Codec {
    /// Every codec, in table order.
    pub const ALL: [Codec; 5] = [
        Codec::Raw,
        Codec::Gzip,
        Codec::Lz4,
        Codec::Zstd,
        Codec::Blosc,
    ];

    /// The N5 compression type name.
    pub fn name(self) -> &'static str {
        match self {
            Codec::Raw => "raw",
            Codec::Gzip => "gzip",
            Codec::Lz4 => "lz4",
            Codec::Zstd => "zstd",
            Codec::Blosc => "blosc",
        }
    }

    /// The codec called `name`.
    pub fn parse(name: &str) -> Option<Codec> {
        Codec::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The `compression` object of attributes.json (also given to the peers).
    pub fn n5_json(self) -> Value {
        match self {
            Codec::Raw => json!({"type": "raw"}),
            Codec::Gzip => json!({"type": "gzip", "level": -1}),
            Codec::Lz4 => json!({"type": "lz4", "blockSize": 65536}),
            Codec::Zstd => json!({"type": "zstd", "level": 3}),
            Codec::Blosc => json!({"type": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1}),
        }
    }

    /// The Zarr v3 bytes → bytes codecs of an inner chunk (after `bytes`,
    /// little endian); `None` for lz4, which Zarr v3 does not have.
    pub fn zarr3_codecs(self) -> Option<Vec<Value>> {
        Some(match self {
            Codec::Raw => vec![],
            Codec::Gzip => vec![json!({"name": "gzip", "configuration": {"level": 6}})],
            Codec::Lz4 => return None,
            Codec::Zstd => {
                vec![json!({"name": "zstd", "configuration": {"level": 3, "checksum": false}})]
            }
            Codec::Blosc => vec![json!({"name": "blosc", "configuration": {
                "cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 2, "blocksize": 0}})],
        })
    }
}

/// How the volume is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// An N5 dataset, one file or object per block.
    N5,
    /// A Zarr v3 array with `sharding_indexed`: shards of [`Job::shard`]
    /// holding inner chunks of [`Job::block`], the index at the end.
    Zarr3Sharded,
}

impl Layout {
    /// Every layout, in report order.
    pub const ALL: [Layout; 2] = [Layout::N5, Layout::Zarr3Sharded];

    /// The name on the command line and in job descriptions.
    pub fn name(self) -> &'static str {
        match self {
            Layout::N5 => "n5",
            Layout::Zarr3Sharded => "zarr3-sharded",
        }
    }

    /// The layout called `name`.
    pub fn parse(name: &str) -> Option<Layout> {
        Layout::ALL.into_iter().find(|l| l.name() == name)
    }

    /// Whether `codec` exists in this layout (Zarr v3 has no LZ4Block).
    pub fn has_codec(self, codec: Codec) -> bool {
        self == Layout::N5 || codec != Codec::Lz4
    }

    /// The suffix of container names.
    pub fn suffix(self) -> &'static str {
        match self {
            Layout::N5 => "n5",
            Layout::Zarr3Sharded => "zarr",
        }
    }
}

/// The operations timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Workload {
    /// Write the whole volume with one call.
    Write,
    /// Read the whole volume with one call.
    ReadAll,
    /// Read single blocks at random grid positions, one call each.
    ReadBlocks,
    /// Read an unaligned region with one call.
    ReadRegion,
}

impl Workload {
    /// Every workload, in table order.
    pub const ALL: [Workload; 4] = [
        Workload::Write,
        Workload::ReadAll,
        Workload::ReadBlocks,
        Workload::ReadRegion,
    ];

    /// The name in job descriptions and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Write => "write",
            Workload::ReadAll => "read_all",
            Workload::ReadBlocks => "read_blocks",
            Workload::ReadRegion => "read_region",
        }
    }

    /// The workload called `name`.
    pub fn parse(name: &str) -> Option<Workload> {
        Workload::ALL.into_iter().find(|w| w.name() == name)
    }
}

/// Who performs a measurement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Impl {
    /// libn5 through its Rust API.
    Libn5,
    /// libn5 writing (and reading) the sharded array with the
    /// `hdf5_shards` member, every shard an HDF5 file too, in a container
    /// of its own (sharded layout only; [`Job::zarr3_metadata`]).
    Libn5Hdf5,
    /// The file I/O floor: the same files, plain std::fs.
    FloorIo,
    /// The codec floor: the codec library alone plus the file I/O.
    FloorCodec,
    /// The floor of a read that returns its data: the codec floor (the I/O
    /// floor for raw) that also copies every block's bytes to their place
    /// in a fresh output buffer of the box's size, as a reader must.
    FloorOut,
    /// tensorstore's n5 driver, or its zarr3 driver for the sharded layout
    /// (bench/peers.py).
    Tensorstore,
    /// z5py (bench/peers.py).
    Z5py,
    /// zarr-python 3 (bench/peers_zarr3.py, in its own venv), sharded
    /// layout only.
    ZarrPython,
}

impl Impl {
    /// The name in job descriptions and reports.
    pub fn name(self) -> &'static str {
        match self {
            Impl::Libn5 => "libn5",
            Impl::Libn5Hdf5 => "libn5_hdf5",
            Impl::FloorIo => "floor_io",
            Impl::FloorCodec => "floor_codec",
            Impl::FloorOut => "floor_out",
            Impl::Tensorstore => "tensorstore",
            Impl::Z5py => "z5py",
            Impl::ZarrPython => "zarr_python",
        }
    }

    /// The implementation called `name`.
    pub fn parse(name: &str) -> Option<Impl> {
        [
            Impl::Libn5,
            Impl::Libn5Hdf5,
            Impl::FloorIo,
            Impl::FloorCodec,
            Impl::FloorOut,
            Impl::Tensorstore,
            Impl::Z5py,
            Impl::ZarrPython,
        ]
        .into_iter()
        .find(|i| i.name() == name)
    }

    /// Whether it measures `workload` with `codec`: the codec floor is
    /// the I/O floor for raw data, and the output floor is one of reads
    /// into one box.
    pub fn measures(self, workload: Workload, codec: Codec) -> bool {
        match self {
            Impl::FloorCodec => codec != Codec::Raw,
            Impl::FloorOut => matches!(workload, Workload::ReadAll | Workload::ReadRegion),
            _ => true,
        }
    }

    /// Whether it is libn5 (plain or with HDF5 shards), run by
    /// [`run_libn5`].
    pub fn is_libn5(self) -> bool {
        matches!(self, Impl::Libn5 | Impl::Libn5Hdf5)
    }

    /// Whether bench/peers.py runs it.
    pub fn is_peer(self) -> bool {
        matches!(self, Impl::Tensorstore | Impl::Z5py | Impl::ZarrPython)
    }
}

/// A box of voxels: offset and shape, N5 order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    /// First voxel.
    pub offset: [u64; 3],
    /// Extent.
    pub shape: [u64; 3],
}

/// One measurement, run `repeats` times in one child process.
#[derive(Clone, Debug)]
pub struct Job {
    /// Who runs it.
    pub imp: Impl,
    /// What is timed.
    pub workload: Workload,
    /// The compression.
    pub codec: Codec,
    /// Threads (libn5's Options.threads, the floors' workers, the peers'
    /// concurrency limits).
    pub threads: usize,
    /// How many times the operation is timed.
    pub repeats: usize,
    /// Cold or warm page cache for reads.
    pub cache: CacheMode,
    /// The volume as native-endian uint16, dimension 0 fastest.
    pub raw: PathBuf,
    /// Volume dimensions.
    pub dims: [u64; 3],
    /// Block size (in the sharded layout: the inner chunks).
    pub block: [u64; 3],
    /// How the volume is stored.
    pub layout: Layout,
    /// The shard shape of the sharded layout (N5 order; ignored for N5).
    pub shard: [u64; 3],
    /// The implementation's container (for the floors: libn5's, whose block
    /// files they read).
    pub container: PathBuf,
    /// Where the floors write (a fresh directory per repeat).
    pub scratch: PathBuf,
    /// The region of `ReadRegion`.
    pub region: Region,
    /// The block grid positions of `ReadBlocks`.
    pub positions: Vec<[u64; 3]>,
    /// For a container on an object store: the storage options (as for
    /// `options_json`), with `container` and `scratch` then being URLs
    /// (`s3://bucket/prefix`). `None` on the local disk.
    pub storage: Option<Value>,
}

/// The 3-element integer array `key` of a job.
fn arr3(v: &Value, key: &str) -> Result<[u64; 3], String> {
    let a = v
        .get(key)
        .and_then(Value::as_array)
        .filter(|a| a.len() == 3)
        .ok_or_else(|| format!("job: '{key}' must be an array of 3 integers"))?;
    let mut out = [0u64; 3];
    for (o, x) in out.iter_mut().zip(a) {
        *o = x
            .as_u64()
            .ok_or_else(|| format!("job: '{key}' must hold integers"))?;
    }
    Ok(out)
}

/// The string `key` of a job.
fn string(v: &Value, key: &str) -> Result<String, String> {
    v.get(key)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| format!("job: '{key}' must be a string"))
}

impl Job {
    /// The job as JSON, for `--one` and for bench/peers.py.
    pub fn to_json(&self) -> Value {
        json!({
            "impl": self.imp.name(),
            "workload": self.workload.name(),
            "codec": self.codec.name(),
            "compression": self.codec.n5_json(),
            "threads": self.threads,
            "repeats": self.repeats,
            "cache": self.cache.name(),
            "raw": self.raw,
            "dims": self.dims,
            "block": self.block,
            "format": self.layout.name(),
            "shard": self.shard,
            "zarr3_metadata": self.zarr3_metadata(),
            "container": self.container,
            "dataset": DATASET,
            "scratch": self.scratch,
            "region": {"offset": self.region.offset, "shape": self.region.shape},
            "positions": self.positions,
            "storage": self.storage,
        })
    }

    /// Parses [`Job::to_json`]'s output.
    pub fn from_json(v: &Value) -> Result<Job, String> {
        let positions = v
            .get("positions")
            .and_then(Value::as_array)
            .ok_or("job: 'positions' must be an array")?
            .iter()
            .map(|p| arr3(&json!({ "p": p }), "p"))
            .collect::<Result<_, _>>()?;
        let region = v.get("region").ok_or("job: 'region' missing")?;
        let count = |key: &str| {
            v.get(key)
                .and_then(Value::as_u64)
                .filter(|&n| n > 0)
                .map(|n| n as usize)
                .ok_or_else(|| format!("job: '{key}' must be a positive integer"))
        };
        Ok(Job {
            imp: Impl::parse(&string(v, "impl")?).ok_or("job: unknown 'impl'")?,
            workload: Workload::parse(&string(v, "workload")?).ok_or("job: unknown 'workload'")?,
            codec: Codec::parse(&string(v, "codec")?).ok_or("job: unknown 'codec'")?,
            threads: count("threads")?,
            repeats: count("repeats")?,
            cache: CacheMode::parse(&string(v, "cache")?).ok_or("job: unknown 'cache'")?,
            raw: string(v, "raw")?.into(),
            dims: arr3(v, "dims")?,
            block: arr3(v, "block")?,
            layout: Layout::parse(&string(v, "format")?).ok_or("job: unknown 'format'")?,
            shard: arr3(v, "shard")?,
            container: string(v, "container")?.into(),
            scratch: string(v, "scratch")?.into(),
            region: Region {
                offset: arr3(region, "offset")?,
                shape: arr3(region, "shape")?,
            },
            positions,
            storage: v.get("storage").filter(|s| !s.is_null()).cloned(),
        })
    }

    /// Bytes per voxel (uint16).
    pub const ELEM: u64 = 2;

    /// Whether the container is on an object store.
    pub fn is_remote(&self) -> bool {
        self.storage.is_some()
    }

    /// libn5's options for this job: `threads`, the storage options of a
    /// remote container and, for the sharded layout, `"format": "zarr3"`.
    pub fn options(&self) -> Result<Options, String> {
        let mut doc = self.storage.clone().unwrap_or_else(|| json!({}));
        if self.layout == Layout::Zarr3Sharded {
            doc["format"] = json!("zarr3");
        }
        let mut options = Options::from_json(&doc.to_string()).map_err(|e| e.to_string())?;
        options.threads = self.threads;
        Ok(options)
    }

    /// The zarr.json of the sharded array (`null` for N5): uint16 of
    /// `dims`, shards of `shard` (the chunk grid) holding inner chunks of
    /// `block` (`sharding_indexed`: bytes little endian + the codec; index
    /// bytes + crc32c at the end), fill value 0, `/`-separated keys; for
    /// [`Impl::Libn5Hdf5`] also `"hdf5_shards": {"must_understand": false}`.
    /// Shapes in Zarr's order (C order: N5's reversed).
    pub fn zarr3_metadata(&self) -> Value {
        let Some(inner) = self.codec.zarr3_codecs() else {
            return Value::Null;
        };
        if self.layout != Layout::Zarr3Sharded {
            return Value::Null;
        }
        let rev = |a: [u64; 3]| [a[2], a[1], a[0]];
        let mut codecs = vec![json!({"name": "bytes", "configuration": {"endian": "little"}})];
        codecs.extend(inner);
        let mut doc = json!({
            "zarr_format": 3,
            "node_type": "array",
            "shape": rev(self.dims),
            "data_type": "uint16",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": rev(self.shard)}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 0,
            "codecs": [{"name": "sharding_indexed", "configuration": {
                "chunk_shape": rev(self.block),
                "codecs": codecs,
                "index_codecs": [
                    {"name": "bytes", "configuration": {"endian": "little"}},
                    {"name": "crc32c"}
                ],
                "index_location": "end"
            }}]
        });
        if self.imp == Impl::Libn5Hdf5 {
            doc[HDF5_SHARDS] = json!({"must_understand": false});
        }
        doc
    }

    /// Blocks per dimension.
    pub fn grid(&self) -> [u64; 3] {
        [0, 1, 2].map(|d| self.dims[d].div_ceil(self.block[d]))
    }

    /// The boxes a read workload reads, one per call.
    pub fn read_boxes(&self) -> Vec<Region> {
        match self.workload {
            Workload::Write | Workload::ReadAll => vec![Region {
                offset: [0; 3],
                shape: self.dims,
            }],
            Workload::ReadRegion => vec![self.region.clone()],
            Workload::ReadBlocks => self
                .positions
                .iter()
                .map(|p| {
                    let offset = [0, 1, 2].map(|d| p[d] * self.block[d]);
                    Region {
                        offset,
                        shape: [0, 1, 2].map(|d| self.block[d].min(self.dims[d] - offset[d])),
                    }
                })
                .collect(),
        }
    }

    /// The grid positions of the blocks the workload touches, in the order
    /// libn5 visits them (dimension 0 fastest; for single blocks, the random
    /// order, repetitions included).
    pub fn touched_blocks(&self) -> Vec<[u64; 3]> {
        if self.workload == Workload::ReadBlocks {
            return self.positions.clone();
        }
        let r = self.read_boxes().remove(0);
        let first = [0, 1, 2].map(|d| r.offset[d] / self.block[d]);
        let last = [0, 1, 2].map(|d| (r.offset[d] + r.shape[d] - 1) / self.block[d]);
        let mut out = Vec::new();
        for z in first[2]..=last[2] {
            for y in first[1]..=last[1] {
                for x in first[0]..=last[0] {
                    out.push([x, y, z]);
                }
            }
        }
        out
    }

    /// The block file of grid position `p` in `container`.
    pub fn block_path(container: &Path, p: [u64; 3]) -> PathBuf {
        container
            .join(DATASET)
            .join(p[0].to_string())
            .join(p[1].to_string())
            .join(p[2].to_string())
    }
}

/// The median of `values` (NaN for none).
fn median(values: &[f64]) -> f64 {
    let mut t = values.to_vec();
    t.sort_by(f64::total_cmp);
    match t.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => t[n / 2],
        n => (t[n / 2 - 1] + t[n / 2]) / 2.0,
    }
}

/// What a child process reports.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Seconds per repeat.
    pub times: Vec<f64>,
    /// CPU seconds (user and system, every thread of the process) per
    /// repeat: on a machine whose cores the server shares, the part of the
    /// wall time an implementation controls.
    pub cpu: Vec<f64>,
    /// Peak resident set size of the process (KiB).
    pub maxrss_kib: u64,
    /// Resident set size just before the first timed operation (KiB): the
    /// input or output buffers, the interpreter and libraries.
    pub baseline_kib: u64,
    /// Largest fraction of the container's pages still resident after an
    /// eviction (NaN when nothing was evicted).
    pub resident_after_evict: f64,
    /// The 1-minute load average when the process of each repeat started
    /// (taken by the benchmark, not the child).
    pub load: Vec<f64>,
    /// The cores the machine kept busy right before the process of each
    /// repeat started, the benchmark idle (with `--quiet` only).
    pub busy: Vec<f64>,
}

impl Report {
    /// The median time in seconds.
    pub fn median(&self) -> f64 {
        median(&self.times)
    }

    /// The median CPU time in seconds (NaN when not measured).
    pub fn median_cpu(&self) -> f64 {
        median(&self.cpu)
    }

    /// The report as JSON (`status` ok).
    pub fn to_json(&self) -> Value {
        json!({
            "status": "ok",
            "times": self.times,
            "cpu": self.cpu,
            "maxrss_kib": self.maxrss_kib,
            "baseline_kib": self.baseline_kib,
            "resident_after_evict": if self.resident_after_evict.is_nan() { Value::Null } else { json!(self.resident_after_evict) },
            "load": self.load,
            "busy_cores_before": self.busy,
        })
    }

    /// Parses a report whose `status` is ok.
    pub fn from_json(v: &Value) -> Result<Report, String> {
        let times = v
            .get("times")
            .and_then(Value::as_array)
            .ok_or("report: no 'times'")?
            .iter()
            .map(|t| t.as_f64().ok_or("report: a time is not a number"))
            .collect::<Result<Vec<_>, _>>()?;
        let kib = |key: &str| v.get(key).and_then(Value::as_u64).unwrap_or(0);
        let numbers = |key: &str| -> Vec<f64> {
            v.get(key)
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_f64).collect())
                .unwrap_or_default()
        };
        // Older reports and peers without it: no CPU times.
        let cpu = numbers("cpu");
        Ok(Report {
            times,
            cpu,
            maxrss_kib: kib("maxrss_kib"),
            baseline_kib: kib("baseline_kib"),
            resident_after_evict: v
                .get("resident_after_evict")
                .and_then(Value::as_f64)
                .unwrap_or(f64::NAN),
            load: numbers("load"),
            busy: numbers("busy_cores_before"),
        })
    }
}

/// Times `op` `repeats` times, each time on a fresh state made by `prepare`
/// (untimed, after the previous state is dropped), which also returns the
/// fraction of pages left resident by its eviction (NaN for none). Returns
/// the report, with the baseline memory taken after the first `prepare`, and
/// the last state.
pub fn measure<S>(
    repeats: usize,
    mut prepare: impl FnMut() -> Result<(S, f64), String>,
    mut op: impl FnMut(&mut S) -> Result<(), String>,
) -> Result<(Report, S), String> {
    let mut report = Report {
        resident_after_evict: f64::NAN,
        ..Report::default()
    };
    let mut last = None;
    for i in 0..repeats {
        drop(last.take());
        let (mut state, resident) = prepare()?;
        // f64::max ignores a NaN operand.
        report.resident_after_evict = report.resident_after_evict.max(resident);
        if i == 0 {
            report.baseline_kib = sys::proc_status_kib("VmRSS").unwrap_or(0);
        }
        let (t, cpu) = (Instant::now(), sys::cpu_seconds());
        op(&mut state)?;
        report.times.push(t.elapsed().as_secs_f64());
        report.cpu.push(sys::cpu_seconds() - cpu);
        last = Some(state);
    }
    report.maxrss_kib = sys::peak_rss_kib();
    Ok((report, last.ok_or("no repeats")?))
}

/// Where [`retire_tree`] puts the trees it empties: `.retired` beside
/// them in the working directory (removed with it at the end of the run).
const RETIRED: &str = ".retired";

/// Empties the tree at `path` and moves it out of the way, rather than
/// deleting it: each file is truncated to nothing (its blocks freed) and
/// the tree renamed into [`RETIRED`] beside it, its files keeping their
/// inodes until the run ends. On an ext4 file system without a journal
/// (as the benchmark machine's) every file created scans past each inode
/// freed in the last one to five minutes (`recently_deleted`), so a build
/// right after the deletion of another's tree of thousands of files spent
/// most of its time there (an N5 1024³ build 3.8–5.6 s after a deletion,
/// 1.6–2.3 s after this).
pub fn retire_tree(path: &Path) -> Result<(), String> {
    fn empty(dir: &Path) -> Result<(), String> {
        let entries = match fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(format!("{}: {e}", dir.display())),
        };
        for entry in entries {
            let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
            let p = entry.path();
            let kind = entry
                .file_type()
                .map_err(|e| format!("{}: {e}", p.display()))?;
            if kind.is_dir() {
                empty(&p)?;
            } else if kind.is_file() {
                fs::OpenOptions::new()
                    .write(true)
                    .open(&p)
                    .and_then(|f| f.set_len(0))
                    .map_err(|e| format!("emptying {}: {e}", p.display()))?;
            }
        }
        Ok(())
    }
    if !path.exists() {
        return Ok(());
    }
    if path.is_file() {
        return fs::remove_file(path).map_err(|e| format!("{}: {e}", path.display()));
    }
    empty(path)?;
    let parent = path.parent().ok_or("a tree at the root")?;
    let retired = parent.join(RETIRED);
    fs::create_dir_all(&retired).map_err(|e| format!("{}: {e}", retired.display()))?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let name = path
        .file_name()
        .map_or("tree".into(), |n| n.to_string_lossy().into_owned());
    let to = retired.join(format!("{name}.{}.{nanos}", std::process::id()));
    fs::rename(path, &to).map_err(|e| format!("{} -> {}: {e}", path.display(), to.display()))
}

/// Checks that `out` holds the box `r` of the volume in `raw` (read row by row).
pub fn verify(raw: &Path, dims: [u64; 3], r: &Region, out: &[u8]) -> Result<(), String> {
    let file = fs::File::open(raw).map_err(|e| format!("{}: {e}", raw.display()))?;
    let row = (r.shape[0] * Job::ELEM) as usize;
    let mut expected = vec![0u8; row];
    let mut at = 0usize;
    for z in 0..r.shape[2] {
        for y in 0..r.shape[1] {
            let voxel = r.offset[0] + dims[0] * ((r.offset[1] + y) + dims[1] * (r.offset[2] + z));
            file.read_exact_at(&mut expected, voxel * Job::ELEM)
                .map_err(|e| format!("{}: {e}", raw.display()))?;
            if out[at..at + row] != expected[..] {
                return Err(format!(
                    "wrong data read in row y={y} z={z} of the box at {:?}",
                    r.offset
                ));
            }
            at += row;
        }
    }
    Ok(())
}

/// Runs a libn5 job ([`Impl::Libn5`] or [`Impl::Libn5Hdf5`]) in this
/// (child) process. An HDF5-shard array libn5 refuses to create
/// (`N5_ERR_UNSUPPORTED`: a codec HDF5 shards cannot hold, gzip) is not
/// applicable, with libn5's reason.
pub fn run_libn5(job: &Job) -> Outcome {
    let refused = std::cell::RefCell::new(None);
    match libn5(job, &refused) {
        Ok(report) => Outcome::Ok(report),
        Err(msg) => match refused.into_inner() {
            Some(why) => Outcome::NotApplicable(why),
            None => Outcome::Failed(msg),
        },
    }
}

/// [`run_libn5`]; sets `refused` when libn5 refuses the HDF5-shard array.
fn libn5(job: &Job, refused: &std::cell::RefCell<Option<String>>) -> Result<Report, String> {
    let e = |e: n5::Error| e.to_string();
    let hdf5 = job.imp == Impl::Libn5Hdf5;
    if hdf5 && job.layout != Layout::Zarr3Sharded {
        return Err("HDF5 shards exist in the sharded Zarr v3 layout only".into());
    }
    if job.workload == Workload::Write {
        let data = fs::read(&job.raw).map_err(|err| format!("{}: {err}", job.raw.display()))?;
        if !job.layout.has_codec(job.codec) {
            return Err(format!(
                "{} has no {} codec",
                job.layout.name(),
                job.codec.name()
            ));
        }
        let compression = Compression::from_user_json(&job.codec.n5_json()).map_err(e)?;
        let (report, _) = measure(
            job.repeats,
            || {
                let c = if job.is_remote() {
                    // Untimed: the dataset's objects from the previous write go.
                    let c = Container::open_with(&job.container, Mode::Create, job.options()?)
                        .map_err(e)?;
                    c.remove(DATASET).map_err(e)?;
                    c
                } else {
                    retire_tree(&job.container)?;
                    sys::sync_all();
                    Container::open_with(&job.container, Mode::Create, job.options()?).map_err(e)?
                };
                if job.layout == Layout::Zarr3Sharded {
                    let ds = c
                        .create_dataset_json(DATASET, &job.zarr3_metadata())
                        .map_err(|err| {
                            if hdf5 && err.kind() == n5::ErrorKind::Unsupported {
                                *refused.borrow_mut() = Some(format!(
                                    "libn5 refuses {HDF5_SHARDS} with {}: {}",
                                    job.codec.name(),
                                    err.message()
                                ));
                            }
                            e(err)
                        })?;
                    return Ok((ds, f64::NAN));
                }
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
        if hdf5 {
            check_hdf5_shard(job)?;
        }
        return Ok(report);
    }
    time_libn5_reads(job, &job.container, || {
        if job.is_remote() {
            Ok(f64::NAN)
        } else {
            sys::evict(&job.container, job.cache)
                .map_err(|err| format!("evicting {}: {err}", job.container.display()))
        }
    })
}

/// Times libn5 reading every box of `job`'s read workload from the dataset
/// of the container at `location` with `read_region` into one output
/// buffer, as large as the largest box, reused by every call; each repeat
/// opens the container (untimed) after `prepare` readied the page cache
/// (it returns the fraction of the data left resident, NaN where not
/// measured). The last box read is checked against the volume.
pub fn time_libn5_reads(
    job: &Job,
    location: &Path,
    mut prepare: impl FnMut() -> Result<f64, String>,
) -> Result<Report, String> {
    let e = |e: n5::Error| e.to_string();
    let boxes = job.read_boxes();
    let out_len = boxes.iter().map(box_bytes).max().unwrap_or(0);
    let (report, (_, out)) = measure(
        job.repeats,
        || {
            let resident = prepare()?;
            let c = Container::open_with(location, Mode::Read, job.options()?).map_err(e)?;
            let ds = c.open_dataset(DATASET).map_err(e)?;
            Ok(((ds, vec![0u8; out_len]), resident))
        },
        |(ds, out)| {
            for r in &boxes {
                ds.read_region(&r.offset, &r.shape, &mut out[..box_bytes(r)])
                    .map_err(e)?;
            }
            Ok(())
        },
    )?;
    let last = boxes.last().expect("at least one box");
    verify(&job.raw, job.dims, last, &out[..box_bytes(last)])?;
    Ok(report)
}

/// Checks, untimed, that the first shard of the array `job` wrote is an
/// HDF5 file: it begins with the HDF5 signature (the index is at the end,
/// so the superblock is at byte 0).
fn check_hdf5_shard(job: &Job) -> Result<(), String> {
    let key = shard_key([0; 3]);
    let head = if job.is_remote() {
        let url = job.container.to_str().ok_or("the location is not UTF-8")?;
        let options = job.options()?;
        let store = n5::storage::Location::parse(url)
            .and_then(|l| n5::storage::open(&l, &options.storage))
            .map_err(|err| err.to_string())?;
        store
            .get_range(&key, n5::storage::ByteRange::Span { offset: 0, len: 8 })
            .map_err(|err| err.to_string())?
            .ok_or_else(|| format!("{}: missing", store.describe(&key)))?
    } else {
        let path = job.container.join(&key);
        let mut head = vec![0u8; 8];
        fs::File::open(&path)
            .and_then(|f| f.read_exact_at(&mut head, 0))
            .map_err(|err| format!("{}: {err}", path.display()))?;
        head
    };
    if head != HDF5_SIGNATURE {
        return Err(format!(
            "the shard {key} of {} is not an HDF5 file (it begins {head:02x?})",
            job.container.display()
        ));
    }
    Ok(())
}

/// Bytes of a box of uint16 voxels.
pub fn box_bytes(r: &Region) -> usize {
    (r.shape.iter().product::<u64>() * Job::ELEM) as usize
}

/// The result of one measurement.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// Measured.
    Ok(Report),
    /// Not applicable (a peer without the codec), with the reason.
    NotApplicable(String),
    /// Failed, with the message.
    Failed(String),
}

impl Outcome {
    /// Runs `job` in a fresh process of this binary (`mode`: the hidden
    /// `--one` or `--one-hdf5`) and reads its report. With
    /// `N5_BENCH_SHOW_JOBS` set, prints the job first, to run it again alone
    /// (under a profiler, say).
    pub fn of_child(mode: &str, job: &Value) -> Outcome {
        if std::env::var_os("N5_BENCH_SHOW_JOBS").is_some() {
            eprintln!("JOB {job}");
        }
        match std::env::current_exe().and_then(|exe| {
            std::process::Command::new(exe)
                .arg(mode)
                .arg(job.to_string())
                .output()
        }) {
            Ok(out) => Outcome::from_output(&out),
            Err(e) => Outcome::Failed(format!("cannot start a child: {e}")),
        }
    }

    /// Reads the JSON report a child printed as its last stdout line.
    pub fn from_output(output: &std::process::Output) -> Outcome {
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let parsed = stdout
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .and_then(|l| serde_json::from_str::<Value>(l).ok());
        let Some(v) = parsed else {
            let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
            return Outcome::Failed(format!(
                "no report ({}); stderr: {}",
                output.status,
                tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
            ));
        };
        let text = |key: &str| v.get(key).and_then(Value::as_str).unwrap_or("").to_string();
        match v.get("status").and_then(Value::as_str) {
            Some("ok") => match Report::from_json(&v) {
                Ok(r) => Outcome::Ok(r),
                Err(e) => Outcome::Failed(e),
            },
            Some("n/a") => Outcome::NotApplicable(text("reason")),
            _ => Outcome::Failed(text("message")),
        }
    }

    /// This outcome and a later one of the same measurement: the times of
    /// both, the larger peaks; a failure or n/a wins.
    pub fn merge(self, later: Outcome) -> Outcome {
        match (self, later) {
            (Outcome::Ok(mut a), Outcome::Ok(b)) => {
                a.times.extend(b.times);
                a.cpu.extend(b.cpu);
                a.load.extend(b.load);
                a.busy.extend(b.busy);
                a.maxrss_kib = a.maxrss_kib.max(b.maxrss_kib);
                a.baseline_kib = a.baseline_kib.max(b.baseline_kib);
                a.resident_after_evict = a.resident_after_evict.max(b.resident_after_evict);
                Outcome::Ok(a)
            }
            (f @ Outcome::Failed(_), _) | (_, f @ Outcome::Failed(_)) => f,
            (Outcome::NotApplicable(r), _) | (_, Outcome::NotApplicable(r)) => {
                Outcome::NotApplicable(r)
            }
        }
    }

    /// The report, when measured.
    pub fn report(&self) -> Option<&Report> {
        match self {
            Outcome::Ok(r) => Some(r),
            _ => None,
        }
    }

    /// The outcome as JSON.
    pub fn to_json(&self) -> Value {
        match self {
            Outcome::Ok(r) => {
                let mut v = r.to_json();
                v["median_s"] = json!(r.median());
                v
            }
            Outcome::NotApplicable(reason) => json!({"status": "n/a", "reason": reason}),
            Outcome::Failed(message) => json!({"status": "error", "message": message}),
        }
    }
}
