//! `n5 pyramid --part I/N` and `--finalize` from outside, with real
//! processes (pyramid.md, "Parts: one pyramid built on many machines" and
//! "Streaming and memory"):
//!
//! - parts 0/3, 1/3 and 2/3 run as concurrent processes, then
//!   `--finalize`, give the single-process build of the same source and
//!   options byte for byte (every shard file or object of every level,
//!   equal metadata documents, no `libn5_pyramid` left), for N5 and
//!   sharded Zarr v3 (OME-NGFF 0.5) on disk and sharded Zarr v3 on S3
//!   (SeaweedFS on 127.0.0.1, from `n5-testkit`; skipped without it unless
//!   `N5_REQUIRE_SERVERS=1`);
//! - part 1/3 alone writes exactly the shards of its columns, computed here
//!   from the contract's column rule, and `--finalize` then exits 4 with
//!   `n5: <dst>: parts 0/3, 2/3 have not finished; nothing finalized`,
//!   changing nothing in the store;
//! - run one after the other, the part that completes the set finalizes
//!   (`; finalized`);
//! - a part killed (SIGKILL) in the middle and rerun, then the others, give
//!   the single-process build; a part rerun after finalization writes no
//!   shard and changes nothing; a part with another `--method` than the one
//!   recorded fails with exit 1 before writing;
//! - a finished pyramid built again writes nothing (N5, Zarr v2, Zarr v3,
//!   sharded, compressed), and a part with another `--method` after
//!   finalization is refused like one during the build;
//! - `n5 import --pyramid --part I/N` of a raw file and of an ImageJ
//!   hyperstack (tifffile; `s0` written in OME-NGFF's axis order and in
//!   BigDataViewer's stacks) gives one `import --pyramid`;
//! - memory (Linux): the peak resident memory of a 512³ uint16 build
//!   (64³ blocks, 2 threads, raw) is at most 64 MiB above the 256³ one;
//! - throughput (ignored, prints figures): two single-threaded parts side
//!   by side against one single-threaded process.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{hyperstack_tiff, python_with, TempDir, STORAGE_ENV};
use n5::{Compression, Container, DataType, DatasetAttributes, Mode};
use n5_testkit::client::Request;
use n5_testkit::server_or_skip;
use serde_json::Value;

/// How long one `n5` process of these tests may take.
const LIMIT: Duration = Duration::from_secs(120);

/// The source's voxel at `(x, y, z)`: never 0, so that no shard is empty.
fn voxel(x: u64, y: u64, z: u64) -> u16 {
    let h = (x * 31 + y * 17 + z * 7 + (x * y * 3 + y * z * 5 + x * z) % 97) % 65000;
    (h + 1) as u16
}

/// Writes the uint16 dataset `vol` of `shape` (raw, blocks `block`) into
/// a new N5 container at `root`; returns its path for the tool.
fn source(root: &str, shape: [u64; 3], block: u32) -> String {
    let c = Container::open(root, Mode::Create).unwrap();
    let attrs = DatasetAttributes::new(
        shape.to_vec(),
        vec![block; 3],
        DataType::U16,
        Compression::Raw,
    )
    .unwrap();
    let ds = c.create_dataset("vol", attrs).unwrap();
    let slab = u64::from(block);
    let mut z0 = 0;
    while z0 < shape[2] {
        let nz = slab.min(shape[2] - z0);
        let mut data = Vec::with_capacity((shape[0] * shape[1] * nz * 2) as usize);
        for z in z0..z0 + nz {
            for y in 0..shape[1] {
                for x in 0..shape[0] {
                    data.extend_from_slice(&voxel(x, y, z).to_ne_bytes());
                }
            }
        }
        ds.write_region(&[0, 0, z0], &[shape[0], shape[1], nz], &data)
            .unwrap();
        z0 += nz;
    }
    format!("{root}/vol")
}

/// What one finished `n5` process gave.
struct Done {
    args: Vec<String>,
    /// The exit code (`None` when a signal ended it).
    code: Option<i32>,
    signal: Option<i32>,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

impl Done {
    /// Checks that it succeeded; itself.
    fn ok(self) -> Done {
        assert_eq!(
            self.code,
            Some(0),
            "n5 {:?} failed: {}{}",
            self.args,
            self.stderr,
            self.stdout
        );
        self
    }

    /// Its standard output as JSON.
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("n5 {:?} printed no JSON ({e}): {}", self.args, self.stdout))
    }

    /// Checks that it failed with `code` and said one line `n5: ...`;
    /// that line.
    fn fails(&self, code: i32) -> String {
        assert_eq!(
            self.code,
            Some(code),
            "n5 {:?}: {}{}",
            self.args,
            self.stderr,
            self.stdout
        );
        let lines: Vec<&str> = self.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "n5 {:?}: {:?}", self.args, self.stderr);
        assert!(lines[0].starts_with("n5: "), "{:?}", lines[0]);
        lines[0].to_string()
    }
}

/// A running `n5` process, its output going to files; killed and reaped
/// when dropped unfinished.
struct Proc {
    child: Option<Child>,
    args: Vec<String>,
    out: PathBuf,
    err: PathBuf,
    started: Instant,
}

impl Proc {
    /// Waits (at most `LIMIT`, else kills it and fails) for the end.
    fn finish(mut self) -> Done {
        let mut child = self.child.take().expect("running");
        let mut status = None;
        for _ in 0..(LIMIT.as_millis() / 5) {
            if let Some(s) = child.try_wait().unwrap() {
                status = Some(s);
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let Some(status) = status else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("n5 {:?} took more than {LIMIT:?}", self.args);
        };
        Done {
            args: self.args.clone(),
            code: status.code(),
            signal: status.signal(),
            stdout: std::fs::read_to_string(&self.out).unwrap_or_default(),
            stderr: std::fs::read_to_string(&self.err).unwrap_or_default(),
            elapsed: self.started.elapsed(),
        }
    }

    /// Whether it has ended.
    fn ended(&mut self) -> bool {
        let child = self.child.as_mut().expect("running");
        child.try_wait().unwrap().is_some()
    }

    /// Sends SIGKILL; what it gave.
    fn kill(mut self) -> Done {
        if let Some(c) = self.child.as_mut() {
            let _ = c.kill();
        }
        self.finish()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// How the `n5` processes of one test run: global arguments, environment
/// (only the storage credentials given reach them) and where their output
/// goes.
struct Tool {
    global: Vec<String>,
    env: Vec<(String, String)>,
    logs: TempDir,
}

impl Tool {
    /// Local paths only.
    fn local() -> Tool {
        Tool {
            global: Vec::new(),
            env: Vec::new(),
            logs: TempDir::new("pyramid-parts-logs"),
        }
    }

    /// The signed SeaweedFS, by `--endpoint` and credentials.
    fn s3(server: &n5_testkit::S3Server) -> Tool {
        let c = server.credentials().expect("signed server");
        Tool {
            global: vec!["--endpoint".into(), server.endpoint()],
            env: vec![
                ("AWS_ACCESS_KEY_ID".into(), c.access_key_id.clone()),
                ("AWS_SECRET_ACCESS_KEY".into(), c.secret_access_key.clone()),
            ],
            logs: TempDir::new("pyramid-parts-logs"),
        }
    }

    /// The command `n5 GLOBAL... args...`, its output going to two new
    /// files: with its arguments and those files.
    fn command(&self, args: &[&str]) -> (Command, Vec<String>, PathBuf, PathBuf) {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let out = self.logs.0.join(format!("{n}.out"));
        let err = self.logs.0.join(format!("{n}.err"));
        let mut all: Vec<String> = self.global.clone();
        all.extend(args.iter().map(|s| s.to_string()));
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_n5"));
        cmd.args(&all)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap());
        for k in STORAGE_ENV {
            cmd.env_remove(k);
        }
        cmd.env("HOME", "/nonexistent/n5-cli-test-home");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        (cmd, all, out, err)
    }

    /// Starts `n5 GLOBAL... args...`.
    fn spawn(&self, args: &[&str]) -> Proc {
        let (mut cmd, args, out, err) = self.command(args);
        Proc {
            child: Some(cmd.spawn().expect("the n5 binary starts")),
            args,
            out,
            err,
            started: Instant::now(),
        }
    }

    /// Runs `n5 GLOBAL... args...` to its end.
    fn run(&self, args: &[&str]) -> Done {
        self.spawn(args).finish()
    }
}

/// `n5 pyramid SRC DST OPTS... EXTRA...` as arguments.
fn pyramid<'a>(src: &'a str, dst: &'a str, opts: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["pyramid", src, dst];
    a.extend_from_slice(opts);
    a.extend_from_slice(extra);
    a
}

/// Every file or object of a store, by its key below the container root.
type Snapshot = BTreeMap<String, Vec<u8>>;

/// Where a pyramid is written: a local container or a prefix of a bucket.
enum Store<'a> {
    Dir(PathBuf),
    S3 {
        server: &'a n5_testkit::S3Server,
        bucket: String,
        root: String,
    },
}

impl Store<'_> {
    /// The container root as the tool names it.
    fn url(&self) -> String {
        match self {
            Store::Dir(p) => p.to_string_lossy().into_owned(),
            Store::S3 { bucket, root, .. } => format!("s3://{bucket}/{root}"),
        }
    }

    /// Every file or object under the root, with its contents.
    fn snapshot(&self) -> Snapshot {
        match self {
            Store::Dir(p) => {
                let mut out = Snapshot::new();
                walk(p, p, &mut out, 0);
                out
            }
            Store::S3 {
                server,
                bucket,
                root,
            } => {
                let prefix = format!("{root}/");
                let mut out = Snapshot::new();
                for key in s3_keys(server, bucket, &prefix) {
                    let r = server
                        .send(Request::new("GET", &format!("/{bucket}/{key}")))
                        .unwrap();
                    assert_eq!(r.status, 200, "GET {key}: {}", r.text());
                    out.insert(key[prefix.len()..].to_string(), r.body);
                }
                out
            }
        }
    }
}

/// The files below `dir`, keyed by their path relative to `root`.
fn walk(root: &Path, dir: &Path, out: &mut Snapshot, depth: usize) {
    assert!(depth < 16, "{} is too deep", dir.display());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries {
        let e = e.unwrap();
        let p = e.path();
        if e.file_type().unwrap().is_dir() {
            walk(root, &p, out, depth + 1);
        } else if let Ok(bytes) = std::fs::read(&p) {
            let key = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            out.insert(key, bytes);
        }
    }
}

/// The keys of `bucket` under `prefix` (ListObjectsV2, every page).
fn s3_keys(server: &n5_testkit::S3Server, bucket: &str, prefix: &str) -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    let mut token: Option<String> = None;
    for _ in 0..1000 {
        let mut target = format!("/{bucket}?list-type=2&prefix={}", encode(prefix));
        if let Some(t) = &token {
            target.push_str(&format!("&continuation-token={}", encode(t)));
        }
        let r = server.send(Request::new("GET", &target)).unwrap();
        assert_eq!(r.status, 200, "{}", r.text());
        let text = r.text();
        keys.extend(elements(&text, "Key"));
        token = elements(&text, "NextContinuationToken").into_iter().next();
        if !text.contains("<IsTruncated>true</IsTruncated>") {
            return keys;
        }
    }
    panic!("endless listing of {bucket}");
}

/// The text of every element `name` of an XML document.
fn elements(xml: &str, name: &str) -> Vec<String> {
    let (open, close) = (format!("<{name}>"), format!("</{name}>"));
    let unescape = |v: &str| {
        v.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&#34;", "\"")
            .replace("&apos;", "'")
            .replace("&#39;", "'")
            .replace("&amp;", "&")
    };
    xml.split(&open)
        .skip(1)
        .filter_map(|rest| rest.split_once(&close).map(|(v, _)| unescape(v)))
        .collect()
}

/// Percent-encoding of a query value.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The output layouts under test.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// N5: one file per block, `s{k}/x/y/z`.
    N5,
    /// Sharded Zarr v3: one object per shard, `s{k}/c/z/y/x`.
    Zarr3,
}

/// One output layout with its options.
struct Case {
    kind: Kind,
    /// The container root's name.
    root: &'static str,
    /// The options every run gets.
    opts: &'static [&'static str],
    /// The shard edge (every axis).
    shard: u64,
}

/// N5, blocks 32, gzip.
const N5_CASE: Case = Case {
    kind: Kind::N5,
    root: "out.n5",
    opts: &[
        "--format", "n5", "-b", "32,32,32", "-c", "gzip", "--units", "nm,nm,nm",
    ],
    shard: 32,
};

/// Sharded Zarr v3 (OME-NGFF 0.5), inner chunks 32, shards 64, zstd.
const ZARR3_CASE: Case = Case {
    kind: Kind::Zarr3,
    root: "out.zarr",
    opts: &[
        "--format", "zarr3", "-b", "32,32,32", "--shard", "64,64,64", "-c", "zstd", "--units",
        "nm,nm,nm",
    ],
    shard: 64,
};

/// The main test volume: with blocks 32 its levels are s0..s4 (below).
const SHAPE: [u64; 3] = [300, 260, 90];

/// The levels of `SHAPE` with blocks 32 (the auto rule: x and y stop at
/// 32 before z reaches it), shapes and factors from `s0`.
fn shape_levels() -> Vec<(Vec<u64>, Vec<u64>)> {
    vec![
        (vec![300, 260, 90], vec![1, 1, 1]),
        (vec![150, 130, 45], vec![2, 2, 2]),
        (vec![75, 65, 23], vec![4, 4, 4]),
        (vec![38, 33, 23], vec![8, 8, 4]),
        (vec![19, 17, 23], vec![16, 16, 4]),
    ]
}

/// Whether `key` is a metadata document.
fn is_metadata(key: &str) -> bool {
    let name = key.rsplit('/').next().unwrap_or(key);
    matches!(
        name,
        "attributes.json" | "zarr.json" | ".zattrs" | ".zarray" | ".zgroup"
    )
}

/// The shard grid position a key of level `level` of group `raw` names,
/// in N5 order.
fn shard_of(kind: Kind, key: &str, level: usize) -> Option<Vec<u64>> {
    let rest = key.strip_prefix(&format!("raw/s{level}/"))?;
    let parts: Vec<&str> = match kind {
        Kind::N5 => rest.split('/').collect(),
        Kind::Zarr3 => rest.strip_prefix("c/")?.split('/').rev().collect(),
    };
    let pos: Option<Vec<u64>> = parts.iter().map(|p| p.parse().ok()).collect();
    pos.filter(|p| p.len() == 3)
}

/// The shard positions stored for level `level`.
fn stored_shards(snap: &Snapshot, kind: Kind, level: usize) -> BTreeSet<Vec<u64>> {
    snap.keys()
        .filter_map(|k| shard_of(kind, k, level))
        .collect()
}

/// The group's attributes.
fn group_attributes(snap: &Snapshot, kind: Kind) -> Value {
    let key = match kind {
        Kind::N5 => "raw/attributes.json",
        Kind::Zarr3 => "raw/zarr.json",
    };
    let doc: Value = serde_json::from_slice(
        snap.get(key)
            .unwrap_or_else(|| panic!("no {key}: {:?}", snap.keys())),
    )
    .unwrap();
    match kind {
        Kind::N5 => doc,
        Kind::Zarr3 => doc["attributes"].clone(),
    }
}

/// Checks that `got` is `want`: the same keys, every shard the same bytes,
/// every metadata document the same JSON.
fn assert_same(got: &Snapshot, want: &Snapshot, what: &str) {
    let g: BTreeSet<&String> = got.keys().collect();
    let w: BTreeSet<&String> = want.keys().collect();
    let extra: Vec<_> = g.difference(&w).take(10).collect();
    let missing: Vec<_> = w.difference(&g).take(10).collect();
    assert!(
        extra.is_empty() && missing.is_empty(),
        "{what}: keys differ: extra {extra:?}, missing {missing:?}"
    );
    let mut differ = Vec::new();
    for (k, v) in want {
        let same = if is_metadata(k) {
            serde_json::from_slice::<Value>(&got[k]).unwrap()
                == serde_json::from_slice::<Value>(v).unwrap()
        } else {
            &got[k] == v
        };
        if !same {
            differ.push(k.clone());
        }
    }
    assert!(
        differ.is_empty(),
        "{what}: {} of {} files differ, first {:?}",
        differ.len(),
        want.len(),
        &differ[..differ.len().min(10)]
    );
}

/// Checks that `got` equals `want` byte for byte, metadata included.
fn assert_unchanged(got: &Snapshot, want: &Snapshot, what: &str) {
    let changed: Vec<&String> = got
        .keys()
        .chain(want.keys())
        .filter(|k| got.get(*k) != want.get(*k))
        .take(10)
        .collect();
    assert!(changed.is_empty(), "{what}: changed {changed:?}");
}

/// Checks a finished pyramid's group: multiscale metadata, no bookkeeping.
fn assert_finished(snap: &Snapshot, kind: Kind, what: &str) {
    let g = group_attributes(snap, kind);
    assert!(g.get("libn5_pyramid").is_none(), "{what}: {g}");
    match kind {
        Kind::N5 => assert!(g.get("multiscales").is_some(), "{what}: {g}"),
        Kind::Zarr3 => assert_eq!(g["ome"]["version"], "0.5", "{what}: {g}"),
    }
}

/// The levels of the plan, `(shape, factors from s0)`, from `--plan`.
fn plan_levels(tool: &Tool, src: &str, dst: &str, case: &Case) -> Vec<(Vec<u64>, Vec<u64>)> {
    let plan = tool
        .run(&pyramid(src, dst, case.opts, &["--plan"]))
        .ok()
        .json();
    let nums = |v: &Value| -> Vec<u64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect()
    };
    plan["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (nums(&l["shape"]), nums(&l["factors"])))
        .collect()
}

/// The shard grid of a level.
fn grid(shape: &[u64], shard: u64) -> Vec<u64> {
    shape.iter().map(|n| n.div_ceil(shard)).collect()
}

/// The column level of a build in `n` parts: the highest level whose shard
/// grid has at least `n` positions, 0 if none.
fn column_level(levels: &[(Vec<u64>, Vec<u64>)], shard: u64, n: u64) -> usize {
    (0..levels.len())
        .rev()
        .find(|&k| grid(&levels[k].0, shard).iter().product::<u64>() >= n)
        .unwrap_or(0)
}

/// The shards part `part` of `n` writes, per level (none above the column
/// level): a level-k shard at g is in column g / (F_c / F_k), columns
/// numbered dimension 0 fastest, part I owning those ≡ I mod N.
fn expected_shards(
    levels: &[(Vec<u64>, Vec<u64>)],
    shard: u64,
    part: u64,
    n: u64,
) -> Vec<BTreeSet<Vec<u64>>> {
    let c = column_level(levels, shard, n);
    let cgrid = grid(&levels[c].0, shard);
    let fc = &levels[c].1;
    let mut out = vec![BTreeSet::new(); levels.len()];
    for (k, (shape, fk)) in levels.iter().enumerate().take(c + 1) {
        let gk = grid(shape, shard);
        for z in 0..gk[2] {
            for y in 0..gk[1] {
                for x in 0..gk[0] {
                    let g = [x, y, z];
                    let col: Vec<u64> = (0..3).map(|a| g[a] / (fc[a] / fk[a])).collect();
                    let index = col[0] + cgrid[0] * (col[1] + cgrid[1] * col[2]);
                    if index % n == part {
                        out[k].insert(g.to_vec());
                    }
                }
            }
        }
    }
    out
}

/// Parts 0/3, 1/3 and 2/3 started together, then `--finalize`, against
/// one process into another root of `store`'s kind.
fn concurrent_parts(tool: &Tool, src: &str, case: &Case, parts: &Store, single: &Store) {
    let dst = format!("{}/raw", parts.url());
    let one = format!("{}/raw", single.url());
    let procs: Vec<Proc> = (0..3)
        .map(|i| {
            let part = format!("{i}/3");
            tool.spawn(&pyramid(src, &dst, case.opts, &["--part", &part, "--json"]))
        })
        .collect();
    let done: Vec<Done> = procs.into_iter().map(|p| p.finish().ok()).collect();
    let finalized: Vec<bool> = done
        .iter()
        .map(|d| d.json()["finalized"].as_bool().unwrap())
        .collect();
    // The last to record itself finalizes; `--finalize` then finds the
    // finished pyramid and has nothing to do.
    assert_eq!(
        finalized.iter().filter(|f| **f).count(),
        1,
        "{:?}",
        done.iter().map(|d| &d.stdout).collect::<Vec<_>>()
    );
    let levels = plan_levels(tool, src, &dst, case);
    let expect_written: u64 = (0..3)
        .map(|i| {
            expected_shards(&levels, case.shard, i, 3)
                .iter()
                .map(|s| s.len() as u64)
                .sum::<u64>()
        })
        .sum();
    let c = column_level(&levels, case.shard, 3);
    let above: u64 = levels[c + 1..]
        .iter()
        .map(|(s, _)| grid(s, case.shard).iter().product::<u64>())
        .sum();
    let written: u64 = done
        .iter()
        .map(|d| d.json()["written"].as_u64().unwrap())
        .sum();
    assert_eq!(
        written,
        expect_written + above,
        "shards written by the parts"
    );
    tool.run(&pyramid(src, &dst, case.opts, &["--finalize"]))
        .ok();
    tool.run(&pyramid(src, &one, case.opts, &[])).ok();
    let (got, want) = (parts.snapshot(), single.snapshot());
    assert_finished(&got, case.kind, "parts");
    assert_finished(&want, case.kind, "single");
    for k in 0..levels.len() {
        assert!(
            !stored_shards(&want, case.kind, k).is_empty(),
            "level s{k} has no shards"
        );
    }
    assert_same(
        &got,
        &want,
        &format!("{:?} parts against one process", case.kind),
    );
}

#[test]
fn concurrent_parts_equal_one_process_n5() {
    let t = TempDir::new("pyramid-parts-n5");
    let src = source(&t.path("src.n5"), SHAPE, 64);
    let tool = Tool::local();
    let levels = plan_levels(&tool, &src, &t.path("plan.n5/raw"), &N5_CASE);
    assert_eq!(levels, shape_levels());
    // Column level 3 of s0..s4: s4 is built by finalization.
    assert_eq!(column_level(&levels, N5_CASE.shard, 3), 3);
    let parts = Store::Dir(t.0.join("parts").join(N5_CASE.root));
    let single = Store::Dir(t.0.join("single").join(N5_CASE.root));
    concurrent_parts(&tool, &src, &N5_CASE, &parts, &single);
}

#[test]
fn concurrent_parts_equal_one_process_zarr3() {
    let t = TempDir::new("pyramid-parts-zarr3");
    let src = source(&t.path("src.n5"), SHAPE, 64);
    let tool = Tool::local();
    let levels = plan_levels(&tool, &src, &t.path("plan.zarr/raw"), &ZARR3_CASE);
    assert_eq!(levels, shape_levels());
    // Column level 2 of s0..s4: s3 and s4 are built by finalization.
    assert_eq!(column_level(&levels, ZARR3_CASE.shard, 3), 2);
    let parts = Store::Dir(t.0.join("parts").join(ZARR3_CASE.root));
    let single = Store::Dir(t.0.join("single").join(ZARR3_CASE.root));
    concurrent_parts(&tool, &src, &ZARR3_CASE, &parts, &single);
}

#[test]
fn concurrent_parts_equal_one_process_zarr3_on_s3() {
    let t = TempDir::new("pyramid-parts-s3");
    let s3 = server_or_skip!(n5_testkit::s3_signed());
    let bucket = s3.unique_bucket("pyramid-parts").unwrap();
    let src = source(&t.path("src.n5"), SHAPE, 64);
    let tool = Tool::s3(s3);
    let parts = Store::S3 {
        server: s3,
        bucket: bucket.clone(),
        root: format!("parts/{}", ZARR3_CASE.root),
    };
    let single = Store::S3 {
        server: s3,
        bucket,
        root: format!("single/{}", ZARR3_CASE.root),
    };
    concurrent_parts(&tool, &src, &ZARR3_CASE, &parts, &single);
}

/// Part 1/3 alone, then an early `--finalize`.
fn part_alone(case: &Case) {
    let t = TempDir::new("pyramid-part-alone");
    let src = source(&t.path("src.n5"), SHAPE, 64);
    let tool = Tool::local();
    let store = Store::Dir(t.0.join(case.root));
    let dst = format!("{}/raw", store.url());
    let levels = plan_levels(&tool, &src, &dst, case);
    assert!(!t.0.join(case.root).exists(), "--plan wrote");
    let r = tool
        .run(&pyramid(&src, &dst, case.opts, &["--part", "1/3"]))
        .ok();
    let want = expected_shards(&levels, case.shard, 1, 3);
    let total: usize = want.iter().map(BTreeSet::len).sum();
    assert_eq!(
        r.stdout.trim(),
        format!(
            "{src} -> {dst}: part 1/3: {total} shards written, 0 already identical; parts done 1/3"
        )
    );
    let snap = store.snapshot();
    for (k, w) in want.iter().enumerate() {
        assert_eq!(
            &stored_shards(&snap, case.kind, k),
            w,
            "{:?}: level s{k} of part 1/3",
            case.kind
        );
    }
    // Nothing besides those shards and the metadata documents.
    let strays: Vec<&String> = snap
        .keys()
        .filter(|k| {
            !is_metadata(k) && !(0..levels.len()).any(|l| shard_of(case.kind, k, l).is_some())
        })
        .collect();
    assert!(strays.is_empty(), "{strays:?}");
    let g = group_attributes(&snap, case.kind);
    assert_eq!(g["libn5_pyramid"]["parts"], 3, "{g}");
    assert_eq!(g["libn5_pyramid"]["done"], serde_json::json!([1]), "{g}");
    assert!(
        g.get("multiscales").is_none() && g.get("ome").is_none(),
        "{g}"
    );
    let line = tool
        .run(&pyramid(&src, &dst, case.opts, &["--finalize"]))
        .fails(4);
    assert_eq!(
        line,
        format!("n5: {dst}: parts 0/3, 2/3 have not finished; nothing finalized")
    );
    assert_unchanged(&store.snapshot(), &snap, "an early --finalize");
}

#[test]
fn one_part_writes_its_columns_and_finalize_waits() {
    part_alone(&N5_CASE);
    part_alone(&ZARR3_CASE);
}

#[test]
fn the_part_that_completes_the_set_finalizes() {
    let t = TempDir::new("pyramid-parts-sequential");
    let src = source(&t.path("src.n5"), SHAPE, 64);
    let tool = Tool::local();
    let case = &ZARR3_CASE;
    let store = Store::Dir(t.0.join("parts").join(case.root));
    let single = Store::Dir(t.0.join("single").join(case.root));
    let dst = format!("{}/raw", store.url());
    let levels = plan_levels(&tool, &src, &dst, case);
    for i in 0..3u64 {
        let part = format!("{i}/3");
        let r = tool
            .run(&pyramid(&src, &dst, case.opts, &["--part", &part]))
            .ok();
        let mine: usize = expected_shards(&levels, case.shard, i, 3)
            .iter()
            .map(BTreeSet::len)
            .sum();
        let c = column_level(&levels, case.shard, 3);
        let above: u64 = levels[c + 1..]
            .iter()
            .map(|(s, _)| grid(s, case.shard).iter().product::<u64>())
            .sum();
        let (written, tail) = if i == 2 {
            (mine as u64 + above, "; finalized")
        } else {
            (mine as u64, "")
        };
        assert_eq!(
            r.stdout.trim(),
            format!(
                "{src} -> {dst}: part {i}/3: {written} shards written, 0 already identical; parts done {}/3{tail}",
                i + 1
            )
        );
        let g = group_attributes(&store.snapshot(), case.kind);
        assert_eq!(g.get("libn5_pyramid").is_some(), i < 2, "{g}");
    }
    let single_dst = format!("{}/raw", single.url());
    tool.run(&pyramid(&src, &single_dst, case.opts, &[])).ok();
    let got = store.snapshot();
    assert_finished(&got, case.kind, "sequential parts");
    assert_same(
        &got,
        &single.snapshot(),
        "sequential parts against one process",
    );
}

/// A finished pyramid built again without `--part` finds every shard
/// identical and writes none, in each layout and with compression (a
/// level array that is there must be recognised as the plan's).
#[test]
fn a_finished_pyramid_built_again_writes_nothing() {
    let t = TempDir::new("pyramid-parts-again");
    let src = source(&t.path("src.n5"), [100, 90, 40], 32);
    let tool = Tool::local();
    let cases: [(&str, &[&str]); 4] = [
        ("n5.n5", &["--format", "n5", "-c", "gzip"]),
        ("v2.zarr", &["--format", "zarr2", "-c", "gzip"]),
        ("v3.zarr", &["--format", "zarr3", "-c", "zstd"]),
        (
            "sharded.zarr",
            &["--format", "zarr3", "-c", "zstd", "--shard", "64,64,64"],
        ),
    ];
    let mut failed = Vec::new();
    for (root, opts) in cases {
        let dst = t.path(&format!("{root}/raw"));
        let first = tool
            .run(&pyramid(&src, &dst, opts, &["--json"]))
            .ok()
            .json();
        let store = Store::Dir(t.0.join(root));
        let before = store.snapshot();
        let again = tool.run(&pyramid(&src, &dst, opts, &["--json"]));
        if again.code != Some(0) {
            failed.push(format!("{root}: {}", again.stderr.trim()));
            continue;
        }
        let again = again.json();
        assert_eq!(again["written"], 0, "{root}: {again}");
        assert_eq!(again["identical"], first["written"], "{root}: {again}");
        assert_unchanged(&store.snapshot(), &before, root);
    }
    assert!(failed.is_empty(), "{failed:#?}");
}

/// After finalization no bookkeeping records the method; a part with
/// another method must still not turn some of the shards of a finished
/// pyramid into another pyramid's (pyramid.md: "levels of another plan"
/// are exit 1, nothing written).
#[test]
fn another_method_after_finalization_is_refused() {
    let t = TempDir::new("pyramid-parts-other-method");
    let src = source(&t.path("src.n5"), SHAPE, 64);
    let tool = Tool::local();
    let case = &N5_CASE;
    let store = Store::Dir(t.0.join(case.root));
    let dst = format!("{}/raw", store.url());
    tool.run(&pyramid(&src, &dst, case.opts, &[])).ok();
    let before = store.snapshot();
    let r = tool.run(&pyramid(
        &src,
        &dst,
        case.opts,
        &["--method", "max", "--part", "1/3"],
    ));
    let after = store.snapshot();
    assert_unchanged(&after, &before, &format!("a max part: {}", r.stdout));
    r.fails(1);
}

/// The number of N5 block files below `dir`.
fn block_files(dir: &Path) -> usize {
    let mut snap = Snapshot::new();
    walk(dir, dir, &mut snap, 0);
    snap.len()
}

#[test]
fn killed_part_rerun_gives_the_same_pyramid() {
    let t = TempDir::new("pyramid-parts-killed");
    // Large enough that part 0/3 on one thread runs for a while.
    let src = source(&t.path("src.n5"), [512, 512, 128], 64);
    let tool = Tool::local();
    let case = &N5_CASE;
    let store = Store::Dir(t.0.join("parts").join(case.root));
    let single = Store::Dir(t.0.join("single").join(case.root));
    let dst = format!("{}/raw", store.url());
    let levels = plan_levels(&tool, &src, &dst, case);
    let opts: Vec<&str> = case
        .opts
        .iter()
        .copied()
        .chain(["--threads", "1"])
        .collect();
    let s0 = t.0.join("parts").join(case.root).join("raw/s0");
    let mut p = tool.spawn(&pyramid(&src, &dst, &opts, &["--part", "0/3"]));
    let start = Instant::now();
    while block_files(&s0) < 20 && !p.ended() && start.elapsed() < LIMIT {
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(!p.ended(), "part 0/3 ended before it could be killed");
    let killed = p.kill();
    assert_eq!(killed.signal, Some(9), "{}", killed.stderr);
    let before = store.snapshot();
    let g = group_attributes(&before, case.kind);
    assert_eq!(g["libn5_pyramid"]["done"], serde_json::json!([]), "{g}");
    // The blocks of s0 the killed part completed (not its metadata, not a
    // temporary file a write in flight left).
    let completed = before
        .keys()
        .filter(|k| k.starts_with("raw/s0/") && !k.ends_with("attributes.json"))
        .filter(|k| !k.rsplit('/').next().unwrap_or("").starts_with(".n5tmp."))
        .count() as u64;
    // Another method than the one recorded: refused before writing.
    let other: Vec<&str> = opts.iter().copied().chain(["--method", "max"]).collect();
    tool.run(&pyramid(&src, &dst, &other, &["--part", "1/3"]))
        .fails(1);
    assert_unchanged(&store.snapshot(), &before, "a part with another method");
    // The rerun finds the shards written before the kill.
    let r = tool
        .run(&pyramid(&src, &dst, &opts, &["--part", "0/3", "--json"]))
        .ok()
        .json();
    let mine: u64 = expected_shards(&levels, case.shard, 0, 3)
        .iter()
        .map(|s| s.len() as u64)
        .sum();
    let (written, identical) = (
        r["written"].as_u64().unwrap(),
        r["identical"].as_u64().unwrap(),
    );
    assert_eq!(written + identical, mine, "{r}");
    assert!(
        identical >= completed,
        "{completed} blocks were complete: {r}"
    );
    let rest: Vec<Proc> = ["1/3", "2/3"]
        .iter()
        .map(|part| tool.spawn(&pyramid(&src, &dst, &opts, &["--part", part])))
        .collect();
    for p in rest {
        p.finish().ok();
    }
    tool.run(&pyramid(&src, &format!("{}/raw", single.url()), &opts, &[]))
        .ok();
    // The write the kill interrupted may have left its temporary file,
    // which readers ignore; `n5 clean` removes it, as after any killed
    // writer.
    tool.run(&["clean", "--older-than", "0", &store.url()]).ok();
    let got = store.snapshot();
    assert_finished(&got, case.kind, "killed and rerun");
    assert_same(
        &got,
        &single.snapshot(),
        "killed and rerun against one process",
    );
    // A part rerun after finalization: every shard identical, nothing
    // recorded, nothing changed.
    let r = tool
        .run(&pyramid(&src, &dst, &opts, &["--part", "1/3", "--json"]))
        .ok()
        .json();
    let theirs: u64 = expected_shards(&levels, case.shard, 1, 3)
        .iter()
        .map(|s| s.len() as u64)
        .sum();
    assert_eq!(r["written"], 0, "{r}");
    assert_eq!(r["identical"].as_u64(), Some(theirs), "{r}");
    assert_eq!(r["finalized"], false, "{r}");
    assert_unchanged(&store.snapshot(), &got, "a part rerun after finalization");
}

/// The peak resident memory of a child, from wait4(2)'s rusage.
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
mod peak {
    use std::process::Child;
    use std::time::{Duration, Instant};

    /// `struct rusage` of 64-bit Linux: two timevals, then 14 longs of
    /// which `ru_maxrss` (KiB) is the first.
    #[repr(C)]
    struct Rusage {
        times: [i64; 4],
        maxrss: i64,
        rest: [i64; 13],
    }

    extern "C" {
        fn wait4(pid: i32, status: *mut i32, options: i32, rusage: *mut Rusage) -> i32;
    }

    const WNOHANG: i32 = 1;

    /// Reaps `child` (waiting at most `limit`, else killing it and
    /// failing): whether it exited with 0, and its peak resident memory in
    /// bytes.
    pub fn reap(mut child: Child, limit: Duration) -> (bool, u64) {
        let pid = child.id() as i32;
        let start = Instant::now();
        let mut usage = Rusage {
            times: [0; 4],
            maxrss: 0,
            rest: [0; 13],
        };
        let mut status = 0i32;
        loop {
            // SAFETY: `status` and `usage` are valid for writes and sized
            // as the kernel's; `pid` is this process's own child, reaped
            // only here (std never waits for it: its `Child` is dropped
            // unwaited, which neither kills nor waits).
            let r = unsafe { wait4(pid, &mut status, WNOHANG, &mut usage) };
            assert!(r >= 0, "wait4: {}", std::io::Error::last_os_error());
            if r == pid {
                break;
            }
            if start.elapsed() > limit {
                let _ = child.kill();
                // SAFETY: as above, blocking this time.
                unsafe { wait4(pid, &mut status, 0, &mut usage) };
                panic!("the child took more than {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // WIFEXITED && WEXITSTATUS == 0
        let ok = status & 0x7f == 0 && (status >> 8) & 0xff == 0;
        (ok, usage.maxrss as u64 * 1024)
    }
}

/// Builds the pyramid of a `side`³ uint16 volume (64³ blocks, raw, 2
/// threads) under `t`; its peak resident memory in bytes and wall time.
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
fn build_peak(t: &TempDir, tool: &Tool, side: u64) -> (u64, Duration) {
    let src = source(&t.path(&format!("src{side}.n5")), [side; 3], 64);
    let dst = t.path(&format!("out{side}.n5/raw"));
    let (mut cmd, args, _, err) = tool.command(&[
        "--threads",
        "2",
        "pyramid",
        &src,
        &dst,
        "-b",
        "64,64,64",
        "-c",
        "raw",
    ]);
    let start = Instant::now();
    let (ok, peak) = peak::reap(cmd.spawn().unwrap(), LIMIT);
    let elapsed = start.elapsed();
    assert!(
        ok,
        "n5 {args:?}: {}",
        std::fs::read_to_string(err).unwrap_or_default()
    );
    (peak, elapsed)
}

/// pyramid.md: "building a 512³ uint16 pyramid (64³ blocks, 2 threads)
/// peaks at most 64 MiB above the 256³ one" (the peak resident memory of
/// the child, from wait4(2)). It writes a 256 MiB source and about 300 MiB
/// of pyramid; a few seconds here.
#[test]
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
fn peak_memory_does_not_grow_with_the_volume() {
    let t = TempDir::new("pyramid-parts-memory");
    let tool = Tool::local();
    let (small, small_time) = build_peak(&t, &tool, 256);
    let (large, large_time) = build_peak(&t, &tool, 512);
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    eprintln!(
        "peak RSS: 256³ {:.1} MiB in {small_time:?}, 512³ {:.1} MiB in {large_time:?}",
        mib(small),
        mib(large)
    );
    assert!(
        large <= small + (64 << 20),
        "512³ peaks at {:.1} MiB, 256³ at {:.1} MiB",
        mib(large),
        mib(small)
    );
}

/// Two single-threaded parts side by side against one single-threaded
/// process, on 256³ and 512³ uint16 (64³ blocks, raw): wall times, printed.
/// Not a check; run it with `cargo test --release -p n5-cli --test
/// pyramid_parts -- --ignored --nocapture throughput`.
#[test]
#[ignore = "prints timings only"]
fn throughput_of_two_parts_against_one_process() {
    let t = TempDir::new("pyramid-parts-throughput");
    let tool = Tool::local();
    for side in [256u64, 512] {
        let src = source(&t.path(&format!("src{side}.n5")), [side; 3], 64);
        let opts = ["-b", "64,64,64", "-c", "raw", "--threads", "1"];
        let one = t.path(&format!("one{side}.n5/raw"));
        let start = Instant::now();
        tool.run(&pyramid(&src, &one, &opts, &[])).ok();
        let single = start.elapsed();
        let two = t.path(&format!("two{side}.n5/raw"));
        let start = Instant::now();
        let procs: Vec<Proc> = ["0/2", "1/2"]
            .iter()
            .map(|p| tool.spawn(&pyramid(&src, &two, &opts, &["--part", p])))
            .collect();
        let times: Vec<Duration> = procs.into_iter().map(|p| p.finish().ok().elapsed).collect();
        let parts = start.elapsed();
        eprintln!(
            "{side}³: one process {single:?}; two parts {parts:?} (each {:?}, {:?})",
            times[0], times[1]
        );
        std::fs::remove_dir_all(t.0.join(format!("one{side}.n5"))).unwrap();
        std::fs::remove_dir_all(t.0.join(format!("two{side}.n5"))).unwrap();
    }
}

/// pyramid.md, Parts: three concurrent `n5 cp --part` processes copying an
/// N5 volume into sharded Zarr v3 on S3 give exactly what one `n5 cp`
/// gives, byte for byte; each part writes only the shards numbered I mod 3
/// (dimension 0 fastest); a part run again writes nothing new.
#[test]
fn concurrent_cp_parts_into_sharded_zarr3_on_s3() {
    let t = TempDir::new("cp-parts-s3");
    let s3 = server_or_skip!(n5_testkit::s3_signed());
    let bucket = s3.unique_bucket("cp-parts").unwrap();
    let src = source(&t.path("src.n5"), SHAPE, 64);
    let tool = Tool::s3(s3);
    let parts = Store::S3 {
        server: s3,
        bucket: bucket.clone(),
        root: "parts/vol.zarr".into(),
    };
    let single = Store::S3 {
        server: s3,
        bucket,
        root: "single/vol.zarr".into(),
    };
    let opts = ["-b", "32,32,32", "--shard", "64,64,64", "-c", "zstd"];
    let dst = format!("{}/raw", parts.url());
    let args = |part: &'static str| -> Vec<String> {
        let mut a: Vec<String> = vec!["cp".into(), src.clone(), dst.clone()];
        a.extend(opts.iter().map(|s| s.to_string()));
        a.extend(["--part".to_string(), part.to_string()]);
        a
    };
    let procs: Vec<Proc> = ["0/3", "1/3", "2/3"]
        .iter()
        .map(|p| {
            let a = args(p);
            let a: Vec<&str> = a.iter().map(String::as_str).collect();
            tool.spawn(&a)
        })
        .collect();
    let grid = grid(&SHAPE, 64);
    let total: u64 = grid.iter().product();
    let mut written = 0u64;
    for (i, p) in procs.into_iter().enumerate() {
        let r = p.finish().ok();
        let mine = (0..total).filter(|k| k % 3 == i as u64).count() as u64;
        assert!(
            r.stdout
                .contains(&format!("part {i}/3: 1 dataset, {mine} shards written")),
            "{}",
            r.stdout
        );
        written += mine;
    }
    assert_eq!(written, total);
    let whole = format!("{}/raw", single.url());
    let mut a: Vec<&str> = vec!["cp", &src, &whole];
    a.extend(opts);
    tool.run(&a).ok();
    let got = parts.snapshot();
    assert_same(&got, &single.snapshot(), "three cp parts against one cp");
    // Each shard of the grid is there once, numbered dimension 0 fastest.
    let shards: BTreeSet<Vec<u64>> = got
        .keys()
        .filter_map(|k| k.strip_prefix("raw/c/"))
        .map(|k| k.split('/').rev().map(|n| n.parse().unwrap()).collect())
        .collect();
    assert_eq!(shards.len() as u64, total);
    // A part run again finds its shards there and writes none.
    let again = args("1/3");
    let again: Vec<&str> = again.iter().map(String::as_str).collect();
    let r = tool.run(&again).ok();
    assert!(
        r.stdout.contains("part 1/3: 1 dataset, 0 shards written"),
        "{}",
        r.stdout
    );
    assert_same(&parts.snapshot(), &got, "a cp part run again");
}

/// `n5 import --part I/N` of a raw file: two concurrent parts give what one
/// import gives, byte for byte; with `--pyramid` (each part writing the s0
/// shards of its pyramid columns) the same as one `import --pyramid`.
#[test]
fn import_parts_equal_one_import() {
    let t = TempDir::new("import-parts");
    let shape = [150u64, 130, 45];
    let mut raw = Vec::new();
    for z in 0..shape[2] {
        for y in 0..shape[1] {
            for x in 0..shape[0] {
                raw.extend_from_slice(&voxel(x, y, z).to_le_bytes());
            }
        }
    }
    let input = t.path("vol.raw");
    std::fs::write(&input, &raw).unwrap();
    let tool = Tool::local();
    let common = [
        "--dtype",
        "uint16",
        "--shape",
        "150,130,45",
        "-b",
        "32,32,32",
    ];
    for (name, extra) in [
        ("plain.n5/vol", vec!["-c", "gzip"]),
        (
            "pyr.zarr/raw",
            vec!["-c", "zstd", "--shard", "64,64,64", "--pyramid"],
        ),
    ] {
        let run = |root: &str, part: Option<&'static str>| -> Vec<String> {
            let mut a: Vec<String> = vec!["import".into(), input.clone(), format!("{root}/{name}")];
            a.extend(common.iter().chain(&extra).map(|s| s.to_string()));
            if let Some(p) = part {
                a.extend(["--part".to_string(), p.to_string()]);
            }
            a
        };
        let parts_root = t.path(&format!("parts-{}", name.replace('/', "-")));
        let single_root = t.path(&format!("single-{}", name.replace('/', "-")));
        let procs: Vec<Proc> = ["0/2", "1/2"]
            .iter()
            .map(|p| {
                let a = run(&parts_root, Some(p));
                let a: Vec<&str> = a.iter().map(String::as_str).collect();
                tool.spawn(&a)
            })
            .collect();
        for p in procs {
            p.finish().ok();
        }
        let a = run(&single_root, None);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        tool.run(&a).ok();
        let root = name.split('/').next().unwrap();
        let got = Store::Dir(Path::new(&parts_root).join(root)).snapshot();
        let want = Store::Dir(Path::new(&single_root).join(root)).snapshot();
        assert!(got.len() > 10, "{name}: {} files", got.len());
        assert_same(&got, &want, &format!("two import parts into {name}"));
    }
}

/// `n5 import --pyramid --part I/N` of an ImageJ hyperstack (`[x, y, c, z,
/// t]`), whose `s0` each part writes in the pyramid's own layout (the
/// shards of its columns): parts 0/2 and 1/2 as concurrent processes into
/// sharded OME-NGFF 0.5 (`s0` permuted to `x, y, z, c, t`), and one after
/// the other into BigDataViewer (stacks per channel and frame), give what
/// one `import --pyramid` gives, file for file; a part run again after
/// the build changes nothing.
#[test]
fn import_parts_of_a_hyperstack_equal_one_import() {
    let Some(python) = python_with(
        "N5_PEER_PYTHON",
        ".venv",
        "tifffile, numpy",
        "import --pyramid --part of a hyperstack",
    ) else {
        return;
    };
    let t = TempDir::new("import-parts-hs");
    let tif = hyperstack_tiff(&python, &t);
    let tool = Tool::local();
    let cases: [(&str, &str, &[&str], bool); 2] = [
        (
            "zarr3",
            "hs.zarr/raw",
            &[
                "--format",
                "zarr3",
                "-b",
                "16,16,1,2,1",
                "--shard",
                "16,16,2,4,1",
            ],
            true,
        ),
        (
            "bdv",
            "hs.n5",
            &["--format", "bdv", "-b", "16,16,1,2,1"],
            false,
        ),
    ];
    for (name, dst, opts, concurrent) in cases {
        let args = |root: &str, part: Option<&str>| -> Vec<String> {
            let mut a = vec!["import".to_string(), tif.clone(), format!("{root}/{dst}")];
            a.extend(opts.iter().map(|s| s.to_string()));
            a.extend(["--pyramid", "--min-size", "8"].map(String::from));
            if let Some(p) = part {
                a.extend(["--part".to_string(), p.to_string()]);
            }
            a
        };
        let parts_root = t.path(&format!("parts-{name}"));
        let single_root = t.path(&format!("single-{name}"));
        if concurrent {
            let procs: Vec<Proc> = ["0/2", "1/2"]
                .iter()
                .map(|p| {
                    let a = args(&parts_root, Some(p));
                    tool.spawn(&a.iter().map(String::as_str).collect::<Vec<_>>())
                })
                .collect();
            for p in procs {
                p.finish().ok();
            }
        } else {
            for p in ["1/2", "0/2"] {
                let a = args(&parts_root, Some(p));
                let r = tool
                    .run(&a.iter().map(String::as_str).collect::<Vec<_>>())
                    .ok();
                assert!(r.stdout.contains(&format!("part {p}:")), "{}", r.stdout);
            }
        }
        let a = args(&single_root, None);
        tool.run(&a.iter().map(String::as_str).collect::<Vec<_>>())
            .ok();
        let root = dst.split('/').next().unwrap();
        let got = Store::Dir(Path::new(&parts_root).join(root)).snapshot();
        let want = Store::Dir(Path::new(&single_root).join(root)).snapshot();
        assert!(got.len() > 20, "{name}: {} files", got.len());
        assert_same(&got, &want, &format!("two import parts into {name}"));
        let a = args(&parts_root, Some("0/2"));
        tool.run(&a.iter().map(String::as_str).collect::<Vec<_>>())
            .ok();
        let again = Store::Dir(Path::new(&parts_root).join(root)).snapshot();
        assert_unchanged(&again, &got, &format!("{name}: a part run again"));
    }
}
