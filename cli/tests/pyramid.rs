//! `n5 pyramid` from outside (pyramid.md, "How it is checked"): random
//! volumes of the ten numeric types, ranks 2 to 5 and odd sizes in N5, Zarr
//! v2 and sharded Zarr v3 sources, built with every method and many factor
//! choices into N5, OME-NGFF 0.4, OME-NGFF 0.5 and BigDataViewer outputs,
//! every level checked against tensorstore's `downsample` of the stored
//! level before (tests/peers/pyramid_oracle.py); one build through
//! `n5_pyramid_build` and one plan through `n5_pyramid_plan` against the
//! tool's; one build with source and destination on S3 (SeaweedFS from
//! `n5-testkit` on 127.0.0.1); the levels and factors of the contract's
//! worked examples (`--plan` on large empty datasets); the refusals (exit
//! 2, nothing created) and the exit-1 cases; the result line, `--json`, and
//! a second run that writes nothing; the metadata of every format (the
//! contract's N5 and BDV examples exactly, NGFF validated with
//! ome-zarr-models plus what it does not check, N5 with cellmap-schemas),
//! the source's other attributes on the group, the in-place form and the
//! NGFF axis order; `n5 import --pyramid` of an ImageJ hyperstack (made by
//! tifffile) against `n5 import` then `n5 pyramid`, file for file, into
//! OME-NGFF 0.5 and 0.4 and BigDataViewer, and `n5 cp --pyramid` against
//! `n5 pyramid`. Peers: `N5_PEER_PYTHON`
//! (tensorstore, cellmap-schemas, tifffile) and `N5_ZARR3_PYTHON`
//! (ome-zarr-models); missing, the checks that need them are skipped with a
//! note, unless `N5_REQUIRE_PEERS=1`.

mod common;

use std::collections::BTreeMap;
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{json, ok, python_with, run, run_env, Run, TempDir};
use n5::format::Format;
use n5::{Compression, Container, DataType, DatasetAttributes, Mode, Options};
use n5_testkit::server_or_skip;
use serde_json::{json, Map, Value};

// ---------------------------------------------------------------------------
// Random volumes

/// splitmix64: a small deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// An odd number in `lo..=hi` (`lo` odd).
    fn odd(&mut self, lo: u64, hi: u64) -> u64 {
        lo + 2 * self.below((hi - lo) / 2 + 1)
    }

    /// A float in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn pick<T: Clone>(&mut self, from: &[T]) -> T {
        from[self.below(from.len() as u64) as usize].clone()
    }
}

/// The ten numeric types.
const TYPES: [DataType; 10] = [
    DataType::U8,
    DataType::U16,
    DataType::U32,
    DataType::U64,
    DataType::I8,
    DataType::I16,
    DataType::I32,
    DataType::I64,
    DataType::F32,
    DataType::F64,
];

/// Every method.
const METHODS: [&str; 6] = ["stride", "mean", "median", "mode", "min", "max"];

/// What a volume holds.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// Integers over the whole range (64-bit extremes among them), floats
    /// of many magnitudes with a few NaN, ±inf and −0.0.
    Image,
    /// Few distinct values, so windows tie: negative and positive ones of
    /// signed types, the extremes, and for floats NaN (often, so that some
    /// windows hold only NaN), ±inf, −0.0 and +0.0.
    Labels,
}

macro_rules! int_value {
    ($t:ty, $rng:expr, $kind:expr) => {{
        let v: $t = match $kind {
            Kind::Image => match $rng.below(20) {
                0 => <$t>::MIN,
                1 => <$t>::MAX,
                _ => $rng.next() as $t,
            },
            Kind::Labels => {
                let pool: [$t; 8] = [
                    <$t>::MIN,
                    <$t>::MIN.wrapping_add(1),
                    (0 as $t).wrapping_sub(2),
                    (0 as $t).wrapping_sub(1),
                    0,
                    1,
                    2,
                    <$t>::MAX,
                ];
                // Small values (ties) more often than the extremes.
                let r = $rng.below(16) as usize;
                pool[if r < 13 { 2 + r % 5 } else { [0, 1, 7][r - 13] }]
            }
        };
        v.to_ne_bytes().to_vec()
    }};
}

macro_rules! float_value {
    ($t:ty, $rng:expr, $kind:expr) => {{
        let specials: [$t; 5] = [<$t>::NAN, <$t>::INFINITY, <$t>::NEG_INFINITY, -0.0, 0.0];
        let v: $t = match $kind {
            Kind::Image => {
                if $rng.below(50) == 0 {
                    $rng.pick(&specials)
                } else {
                    let mag = 10f64.powi($rng.below(9) as i32 - 4);
                    ((($rng.unit() * 2.0 - 1.0) * 1000.0) * mag) as $t
                }
            }
            Kind::Labels => {
                if $rng.below(10) < 3 {
                    <$t>::NAN
                } else {
                    $rng.pick(&[
                        -2.5,
                        -0.0,
                        0.0,
                        1.0,
                        1.5,
                        <$t>::INFINITY,
                        <$t>::NEG_INFINITY,
                    ])
                }
            }
        };
        v.to_ne_bytes().to_vec()
    }};
}

/// `n` elements of `t`, native byte order.
fn values(t: &DataType, n: u64, kind: Kind, rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::with_capacity(n as usize * t.size());
    for _ in 0..n {
        let v = match t {
            DataType::U8 => int_value!(u8, rng, kind),
            DataType::U16 => int_value!(u16, rng, kind),
            DataType::U32 => int_value!(u32, rng, kind),
            DataType::U64 => int_value!(u64, rng, kind),
            DataType::I8 => int_value!(i8, rng, kind),
            DataType::I16 => int_value!(i16, rng, kind),
            DataType::I32 => int_value!(i32, rng, kind),
            DataType::I64 => int_value!(i64, rng, kind),
            DataType::F32 => float_value!(f32, rng, kind),
            DataType::F64 => float_value!(f64, rng, kind),
            _ => unreachable!("numeric types only"),
        };
        out.extend_from_slice(&v);
    }
    out
}

// ---------------------------------------------------------------------------
// Sources written with the library

/// The format of a source or an output.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Fmt {
    N5,
    Zarr2,
    /// Zarr v3, sharded.
    Zarr3,
    /// BigDataViewer (outputs only).
    Bdv,
}

impl Fmt {
    /// The `--format` name.
    fn name(self) -> &'static str {
        match self {
            Fmt::N5 => "n5",
            Fmt::Zarr2 => "zarr2",
            Fmt::Zarr3 => "zarr3",
            Fmt::Bdv => "bdv",
        }
    }

    /// tensorstore's driver.
    fn driver(self) -> &'static str {
        match self {
            Fmt::N5 | Fmt::Bdv => "n5",
            Fmt::Zarr2 => "zarr",
            Fmt::Zarr3 => "zarr3",
        }
    }

    /// The container suffix.
    fn suffix(self) -> &'static str {
        match self {
            Fmt::N5 | Fmt::Bdv => "n5",
            Fmt::Zarr2 | Fmt::Zarr3 => "zarr",
        }
    }

    fn library(self) -> Format {
        match self {
            Fmt::N5 | Fmt::Bdv => Format::N5,
            Fmt::Zarr2 => Format::Zarr2,
            Fmt::Zarr3 => Format::Zarr3,
        }
    }
}

/// The container at `root` in `fmt`, created when missing.
fn container(root: &str, fmt: Fmt) -> Container {
    let options = Options {
        format: Some(fmt.library()),
        ..Options::default()
    };
    Container::open_with(root, Mode::Create, options).unwrap()
}

/// Create the dataset `path` of `c` (`dims`, `block`, N5 order; Zarr v3
/// sharded with shards of two blocks per axis where the axis is longer
/// than a block) and write `data` whole.
fn write_source(c: &Container, path: &str, t: &DataType, dims: &[u64], block: &[u32], data: &[u8]) {
    let compression = Compression::Gzip {
        level: 1,
        use_zlib: false,
    };
    let attrs =
        DatasetAttributes::new(dims.to_vec(), block.to_vec(), t.clone(), compression).unwrap();
    let ds = if c.format() == Format::Zarr3 {
        let mut doc = Container::dataset_document(Format::Zarr3, &attrs).unwrap();
        let b: Vec<u64> = block.iter().map(|&b| b as u64).collect();
        let shard: Vec<u64> = b
            .iter()
            .zip(dims)
            .map(|(&b, &n)| if n > b { 2 * b } else { b })
            .collect();
        Container::shard_document(&mut doc, &b, &shard);
        c.create_dataset_json(path, &doc).unwrap()
    } else {
        c.create_dataset(path, attrs).unwrap()
    };
    ds.write_region(&vec![0; dims.len()], dims, data).unwrap();
}

/// The whole array of the dataset `path` of `c`: type, dimensions (N5
/// order) and bytes.
fn whole(c: &Container, path: &str) -> (DataType, Vec<u64>, Vec<u8>) {
    let ds = c.open_dataset(path).unwrap();
    let a = ds.attributes();
    let n: u64 = a.dimensions.iter().product();
    let mut buf = vec![0u8; n as usize * a.data_type.size()];
    ds.read_region(&vec![0; a.ndim()], &a.dimensions, &mut buf)
        .unwrap();
    (a.data_type.clone(), a.dimensions.clone(), buf)
}

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

/// The JSON document of the file `path`.
fn read_json(path: impl AsRef<Path>) -> Value {
    let p = path.as_ref();
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Every file below `dir` with its bytes, by path relative to `dir`.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

// ---------------------------------------------------------------------------
// Peers

/// tensorstore's Python (`N5_PEER_PYTHON`, else .venv).
fn tensorstore_python() -> Option<PathBuf> {
    python_with(
        "N5_PEER_PYTHON",
        ".venv",
        "tensorstore, numpy",
        "the tensorstore oracle",
    )
}

/// Run `python script args...` from tests/peers and check that it succeeds;
/// its standard output.
fn run_python(python: &Path, script: &str, args: &[&str]) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/peers")
        .join(script);
    let out = Command::new(python).arg(&path).args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{script} failed:\n{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprint!("{stdout}");
    stdout
}

// ---------------------------------------------------------------------------
// The oracle

/// One pyramid of the oracle.
struct Case {
    id: String,
    method: &'static str,
    out: Fmt,
    /// The source (format, container root, dataset path).
    src: (Fmt, String, String),
    /// The destination argument.
    dst: String,
    args: Vec<String>,
    /// The relative factor lists the levels must have, when the options
    /// fix them.
    expect_relative: Option<Vec<Vec<u64>>>,
    /// One factor list with its stop size (`--min-size`) and `--levels`:
    /// each level's factors are the list's, 1 where the axis is not longer
    /// than the stop size, until all would be 1 or the levels are there.
    one_list: Option<(Vec<u64>, u64, usize)>,
}

/// A factor list for the axes `movable` (true: may be downsampled) with
/// factors from 1..=4, at least one above 1.
fn factor_list(rng: &mut Rng, movable: &[bool]) -> Vec<u64> {
    loop {
        let f: Vec<u64> = movable
            .iter()
            .map(|&m| if m { rng.pick(&[1, 2, 2, 3, 4]) } else { 1 })
            .collect();
        if f.iter().any(|&x| x > 1) {
            return f;
        }
    }
}

fn list_text(l: &[u64]) -> String {
    l.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
}

/// The oracle's cases: every (type, method) pair once, ranks 2 to 5,
/// sources and outputs of every format, written under `t` (the volumes,
/// shapes and factors drawn from the seed `N5_PYRAMID_SEED`, else a fixed
/// one).
fn oracle_cases(t: &TempDir) -> Vec<Case> {
    // Another seed from N5_PYRAMID_SEED explores other volumes.
    let seed = std::env::var("N5_PYRAMID_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_f9a2_u64);
    let mut rng = Rng(seed);
    let sources = [
        (Fmt::N5, t.path("src.n5")),
        (Fmt::Zarr2, t.path("src2.zarr")),
        (Fmt::Zarr3, t.path("src3.zarr")),
    ];
    let containers: Vec<Container> = sources.iter().map(|(f, r)| container(r, *f)).collect();
    let mut cases = Vec::new();
    for i in 0..60usize {
        let dtype = TYPES[i % 10].clone();
        let method = METHODS[(i + i / 10) % 6];
        let rank = 2 + (i / 2 + i) % 4;
        let out = match i % 7 {
            0 | 3 => Fmt::N5,
            1 | 4 => Fmt::Zarr3,
            2 | 5 => Fmt::Zarr2,
            _ if rank == 3 => Fmt::Bdv,
            _ => Fmt::N5,
        };
        let src_i = (i / 3 + i) % 3;
        let (dims, block): (Vec<u64>, Vec<u32>) = match rank {
            2 => (
                vec![rng.odd(61, 199), rng.odd(41, 199)],
                vec![rng.pick(&[16, 24, 32]), rng.pick(&[16, 32])],
            ),
            3 => (
                vec![rng.odd(15, 41), rng.odd(15, 33), rng.odd(9, 27)],
                vec![8, rng.pick(&[8, 16]), 8],
            ),
            4 => (
                vec![
                    rng.odd(7, 17),
                    rng.odd(7, 15),
                    rng.odd(5, 13),
                    rng.odd(3, 7),
                ],
                vec![4, 8, 4, 2],
            ),
            _ => (
                vec![
                    rng.odd(5, 13),
                    rng.odd(5, 11),
                    rng.odd(5, 9),
                    rng.pick(&[2, 3]),
                    3,
                ],
                vec![4, 4, 4, 1, 2],
            ),
        };
        // Axis names and which axes may be downsampled.
        let (axes, movable): (Option<&str>, Vec<bool>) = match (rank, out) {
            (4, Fmt::N5) => (Some("u,v,w,q"), vec![true; 4]),
            (4, _) => (Some("x,y,z,t"), vec![true; 4]),
            (5, _) => (None, vec![true, true, true, false, true]),
            _ => (None, vec![true; rank]),
        };
        let kind = match method {
            "median" | "mode" => Kind::Labels,
            "mean" => Kind::Image,
            _ if i % 2 == 0 => Kind::Labels,
            _ => Kind::Image,
        };
        let n: u64 = dims.iter().product();
        let data = values(&dtype, n, kind, &mut rng);
        let (sf, sroot) = &sources[src_i];
        let spath = format!("c{i}");
        write_source(&containers[src_i], &spath, &dtype, &dims, &block, &data);

        let mut args: Vec<String> = vec!["--method".into(), method.into()];
        if let Some(a) = axes {
            args.extend(["--axes".into(), a.into()]);
        }
        // The output block size: the source's, or another one.
        let out_block: Vec<u64> = if i % 5 == 0 {
            let b: Vec<u64> = block.iter().map(|&b| (b as u64 / 2).max(1)).collect();
            args.extend(["-b".into(), list_text(&b)]);
            b
        } else {
            block.iter().map(|&b| b as u64).collect()
        };
        if out == Fmt::Zarr3 && i % 3 == 0 {
            let s: Vec<u64> = out_block.iter().map(|b| 2 * b).collect();
            args.extend(["--shard".into(), list_text(&s)]);
        }
        let mut expect_relative = None;
        let mut one_list = None;
        match i % 4 {
            // auto, anisotropic resolution, sometimes with --levels
            0 => {
                let res: Vec<String> = (0..rank)
                    .map(|a| match a {
                        0 => "1".to_string(),
                        1 => rng.pick(&["1", "1.5", "2"]).to_string(),
                        2 => rng.pick(&["2", "3", "0.5"]).to_string(),
                        _ => "1".to_string(),
                    })
                    .collect();
                args.extend(["--resolution".into(), res.join(",")]);
                if rank <= 3 {
                    args.extend(["--min-size".into(), "4".into()]);
                }
                if i % 8 == 0 {
                    args.extend(["--levels".into(), "3".into()]);
                }
            }
            // one list, with --levels
            1 => {
                let f = factor_list(&mut rng, &movable);
                let levels = rng.pick(&[2, 3, 4]);
                args.extend(["--factors".into(), list_text(&f)]);
                args.extend(["--levels".into(), levels.to_string()]);
                args.extend(["--min-size".into(), "2".into()]);
                one_list = Some((f, 2, levels));
            }
            // several lists: exactly those levels
            2 => {
                let mut lists = Vec::new();
                let mut extent = dims.clone();
                for _ in 0..rng.pick(&[2, 3]) {
                    // Some axis downsampled is longer than one voxel (see
                    // tensorstore's copy in pyramid_oracle.py).
                    let f = loop {
                        let f = factor_list(&mut rng, &movable);
                        if f.iter().zip(&extent).any(|(&f, &n)| f > 1 && n > 1) {
                            break f;
                        }
                    };
                    extent = extent.iter().zip(&f).map(|(n, f)| n.div_ceil(*f)).collect();
                    lists.push(f);
                }
                let text: Vec<String> = lists.iter().map(|l| list_text(l)).collect();
                args.extend(["--factors".into(), text.join("/")]);
                expect_relative = Some(lists);
            }
            // factors 3 and 4 on one list, no --levels
            _ => {
                let f: Vec<u64> = movable
                    .iter()
                    .enumerate()
                    .map(|(a, &m)| {
                        if !m {
                            1
                        } else if a % 2 == 0 {
                            3
                        } else {
                            4
                        }
                    })
                    .collect();
                args.extend(["--factors".into(), list_text(&f)]);
                args.extend(["--min-size".into(), "3".into()]);
            }
        }
        let dst = match out {
            Fmt::Bdv => t.path(&format!("o{i}.n5")),
            _ => format!("{}/raw", t.path(&format!("o{i}.{}", out.suffix()))),
        };
        args.extend(["--format".into(), out.name().into()]);
        cases.push(Case {
            id: format!(
                "c{i}-{}-{}-r{rank}-{}-to-{}",
                dtype.name(),
                method,
                sf.name(),
                out.name()
            ),
            method,
            out,
            src: (*sf, sroot.clone(), spath),
            dst,
            args,
            expect_relative,
            one_list,
        });
    }
    cases
}

/// The relative factors of each level from the `factors` (from `s0`) of
/// `--json`'s levels.
fn relatives(levels: &[Value]) -> Vec<Vec<u64>> {
    let f: Vec<Vec<u64>> = levels
        .iter()
        .map(|l| {
            l["factors"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap())
                .collect()
        })
        .collect();
    (0..f.len())
        .map(|k| {
            if k == 0 {
                vec![1; f[0].len()]
            } else {
                f[k].iter().zip(&f[k - 1]).map(|(a, b)| a / b).collect()
            }
        })
        .collect()
}

/// Build every case with the tool and describe its levels for the oracle.
fn build_cases(cases: &[Case]) -> Vec<Value> {
    let mut manifest = Vec::new();
    for c in cases {
        let src = format!("{}/{}", c.src.1, c.src.2);
        let mut args: Vec<&str> = vec!["pyramid", &src, &c.dst, "--json"];
        args.extend(c.args.iter().map(String::as_str));
        let out = json(&args);
        let levels = out["levels"].as_array().unwrap();
        assert!(levels.len() >= 2, "{}: {out}", c.id);
        let rel = relatives(levels);
        if let Some(expect) = &c.expect_relative {
            assert_eq!(&rel[1..], &expect[..], "{}: {args:?}", c.id);
        }
        if let Some((f, stop, max)) = &c.one_list {
            // The levels the rule gives from s0's shape.
            let mut shape: Vec<u64> = levels[0]["shape"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap())
                .collect();
            let mut expect = vec![vec![1; f.len()]];
            while expect.len() < *max {
                let r: Vec<u64> = f
                    .iter()
                    .zip(&shape)
                    .map(|(&f, &n)| if n > *stop { f } else { 1 })
                    .collect();
                if r.iter().all(|&x| x == 1) {
                    break;
                }
                shape = shape.iter().zip(&r).map(|(n, r)| n.div_ceil(*r)).collect();
                expect.push(r);
            }
            assert_eq!(rel, expect, "{}: {args:?}", c.id);
        }
        let level_path = |k: usize| match c.out {
            Fmt::Bdv => format!("{}/setup0/timepoint0/s{k}", c.dst),
            _ => format!("{}/s{k}", c.dst),
        };
        let lv: Vec<Value> = (0..levels.len())
            .map(|k| {
                assert_eq!(levels[k]["path"], json!(format!("s{k}")), "{}", c.id);
                json!({"driver": c.out.driver(), "path": level_path(k), "relative": rel[k]})
            })
            .collect();
        manifest.push(json!({
            "id": c.id,
            "method": c.method,
            "source": {"driver": c.src.0.driver(), "path": src},
            "levels": lv,
        }));
    }
    manifest
}

#[test]
fn every_level_is_tensorstores_downsampling_of_the_level_before() {
    let t = TempDir::new("pyr-oracle");
    let cases = oracle_cases(&t);
    let started = std::time::Instant::now();
    let manifest = build_cases(&cases);
    eprintln!(
        "{} pyramids built in {:.1?}",
        cases.len(),
        started.elapsed()
    );
    let path = t.path("manifest.json");
    std::fs::write(&path, serde_json::to_vec(&Value::Array(manifest)).unwrap()).unwrap();
    let Some(python) = tensorstore_python() else {
        return;
    };
    run_python(&python, "pyramid_oracle.py", &[&path]);
}

// ---------------------------------------------------------------------------
// The C functions

mod capi {
    use std::ffi::{c_char, CStr, CString};

    use n5::ffi::container::{n5_container_free, n5_container_open};
    use n5::ffi::{n5_container, n5_status, N5_OK};

    /// The message of the calling thread's last failed call.
    pub fn message() -> String {
        // SAFETY: the library returns a NUL-terminated string it owns.
        unsafe { CStr::from_ptr(n5::ffi::status::n5_last_error_message()) }
            .to_string_lossy()
            .into_owned()
    }

    /// An open container handle, freed on drop.
    pub struct Handle(pub *mut n5_container);

    impl Drop for Handle {
        fn drop(&mut self) {
            n5_container_free(self.0);
        }
    }

    /// `n5_container_open(root, mode, options)`.
    pub fn open(root: &str, mode: i32, options: Option<&str>) -> Handle {
        let r = CString::new(root).unwrap();
        let o = options.map(|o| CString::new(o).unwrap());
        let h = n5_container_open(
            r.as_ptr(),
            mode,
            o.as_ref().map_or(std::ptr::null(), |o| o.as_ptr()),
        );
        assert!(!h.is_null(), "{root}: {}", message());
        Handle(h)
    }

    /// A text output of the C API: a size query, then the call.
    pub fn text(call: impl Fn(*mut c_char, usize, *mut usize) -> n5_status) -> String {
        let mut len = 0usize;
        assert_eq!(
            call(std::ptr::null_mut(), 0, &mut len),
            N5_OK,
            "{}",
            message()
        );
        let mut buf = vec![0u8; len + 1];
        let mut got = 0usize;
        assert_eq!(
            call(buf.as_mut_ptr().cast(), len + 1, &mut got),
            N5_OK,
            "{}",
            message()
        );
        assert_eq!(got, len);
        String::from_utf8(buf[..len].to_vec()).unwrap()
    }
}

/// The C options of the tool's flags used by the C-API test.
const CAPI_OPTIONS: &str = r#"{"method": "median", "factors": [[2,2,1],[3,3,2]], "format": "zarr3",
 "block_size": [8,8,4], "shard_shape": [16,16,8], "resolution": [4,4,40],
 "units": ["nm","nm","nm"], "translation": [1,2,3]}"#;

/// The same options as the tool's flags.
const CAPI_FLAGS: [&str; 18] = [
    "--method",
    "median",
    "--factors",
    "2,2,1/3,3,2",
    "--format",
    "zarr3",
    "-b",
    "8,8,4",
    "--shard",
    "16,16,8",
    "--resolution",
    "4,4,40",
    "--units",
    "nm,nm,nm",
    "--translation",
    "1,2,3",
    "--threads",
    "2",
];

#[test]
fn c_functions_build_and_plan_what_the_tool_does() {
    use n5::ffi::pyramid::{n5_pyramid_build, n5_pyramid_plan};
    let t = TempDir::new("pyr-capi");
    let src_root = t.path("src.n5");
    let mut rng = Rng(7);
    let dims = [45u64, 37, 19];
    let data = values(
        &DataType::U16,
        dims.iter().product(),
        Kind::Labels,
        &mut rng,
    );
    write_source(
        &container(&src_root, Fmt::N5),
        "vol",
        &DataType::U16,
        &dims,
        &[8, 8, 8],
        &data,
    );
    let src = format!("{src_root}/vol");

    let tool = t.path("tool.zarr");
    let mut args = vec!["pyramid", &src, "DST"];
    args.extend(CAPI_FLAGS);
    let dst = format!("{tool}/raw");
    args[2] = &dst;
    ok(&args);

    let capi_root = t.path("capi.zarr");
    {
        let s = capi::open(&src_root, n5::ffi::N5_MODE_READ, None);
        let d = capi::open(
            &capi_root,
            n5::ffi::N5_MODE_CREATE,
            Some(r#"{"format": "zarr3"}"#),
        );
        let (sp, dp, o) = (
            CString::new("vol").unwrap(),
            CString::new("raw").unwrap(),
            CString::new(CAPI_OPTIONS).unwrap(),
        );
        let st = n5_pyramid_build(s.0, sp.as_ptr(), d.0, dp.as_ptr(), o.as_ptr());
        assert_eq!(st, n5::ffi::N5_OK, "{}", capi::message());
    }
    let (a, b) = (files(Path::new(&tool)), files(Path::new(&capi_root)));
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "the same files"
    );
    for (k, v) in &a {
        assert!(
            v == &b[k],
            "{k} differs between the tool's and n5_pyramid_build's pyramid"
        );
    }

    // The plan: the C text and `--plan` give the same document (the
    // format the source's, n5).
    let s = capi::open(&src_root, n5::ffi::N5_MODE_READ, None);
    let sp = CString::new("vol").unwrap();
    let n5_options = CAPI_OPTIONS
        .replace("\"zarr3\"", "\"n5\"")
        .replace(", \"shard_shape\": [16,16,8]", "");
    let o = CString::new(n5_options).unwrap();
    let text =
        capi::text(|buf, cap, len| n5_pyramid_plan(s.0, sp.as_ptr(), o.as_ptr(), buf, cap, len));
    let c_plan: Value = serde_json::from_str(&text).unwrap();
    let planned = t.path("planned.n5");
    let dst = format!("{planned}/raw");
    let mut args = vec!["pyramid", &src, &dst, "--plan"];
    // The same flags with the format n5 and no shards.
    let flags: Vec<&str> = CAPI_FLAGS
        .chunks(2)
        .filter(|p| p[0] != "--shard")
        .flat_map(|p| {
            if p[0] == "--format" {
                ["--format", "n5"]
            } else {
                [p[0], p[1]]
            }
        })
        .collect();
    args.extend(flags);
    let tool_plan = json(&args);
    assert_eq!(c_plan, tool_plan);
    assert_eq!(tool_plan["format"], "n5");
    assert_eq!(tool_plan["method"], "median");
    assert_eq!(tool_plan["levels"].as_array().unwrap().len(), 3);
    assert!(!Path::new(&planned).exists(), "--plan writes nothing");

    // Default options: the source's container format, mean, auto.
    let text = capi::text(|buf, cap, len| {
        n5_pyramid_plan(s.0, sp.as_ptr(), std::ptr::null(), buf, cap, len)
    });
    let c_plan: Value = serde_json::from_str(&text).unwrap();
    let dst = t.path("default.n5/raw");
    assert_eq!(c_plan, json(&["pyramid", &src, &dst, "--plan"]));
    assert_eq!(c_plan["format"], "n5");
    assert_eq!(c_plan["method"], "mean");
}

#[test]
fn c_plan_of_another_format_than_the_source_is_the_tools() {
    use n5::ffi::pyramid::n5_pyramid_plan;
    let t = TempDir::new("pyr-capi-plan");
    let src_root = t.path("src.n5");
    let data = vec![0u8; 45 * 37 * 19 * 2];
    write_source(
        &container(&src_root, Fmt::N5),
        "vol",
        &DataType::U16,
        &[45, 37, 19],
        &[8, 8, 8],
        &data,
    );
    let s = capi::open(&src_root, n5::ffi::N5_MODE_READ, None);
    let sp = CString::new("vol").unwrap();
    let o = CString::new(CAPI_OPTIONS).unwrap();
    let text =
        capi::text(|buf, cap, len| n5_pyramid_plan(s.0, sp.as_ptr(), o.as_ptr(), buf, cap, len));
    let c_plan: Value = serde_json::from_str(&text).unwrap();
    let dst = t.path("planned.zarr/raw");
    let src = format!("{src_root}/vol");
    let mut args = vec!["pyramid", &src, &dst, "--plan"];
    args.extend(CAPI_FLAGS);
    let tool_plan = json(&args);
    assert_eq!(c_plan, tool_plan);
    assert_eq!(tool_plan["format"], "zarr3");
}

// ---------------------------------------------------------------------------
// S3

#[test]
fn source_and_destination_on_s3() {
    let s3 = server_or_skip!(n5_testkit::s3_signed());
    let bucket = s3.unique_bucket("pyramid").unwrap();
    let creds = s3.credentials().unwrap();
    let endpoint = s3.endpoint();
    let env = [
        ("AWS_ACCESS_KEY_ID", creds.access_key_id.as_str()),
        ("AWS_SECRET_ACCESS_KEY", creds.secret_access_key.as_str()),
    ];
    let remote = |args: &[&str]| -> Run {
        let mut all = vec!["--endpoint", &endpoint];
        all.extend_from_slice(args);
        let r = run_env(&all, &env, None);
        assert_eq!(r.code, 0, "n5 {all:?}: {}{}", r.stderr, r.text());
        r
    };
    let t = TempDir::new("pyr-s3");
    let src_root = t.path("src.n5");
    let mut rng = Rng(11);
    let dims = [41u64, 33, 17];
    let data = values(&DataType::F32, dims.iter().product(), Kind::Image, &mut rng);
    write_source(
        &container(&src_root, Fmt::N5),
        "vol",
        &DataType::F32,
        &dims,
        &[8, 8, 8],
        &data,
    );

    let s3_src = format!("s3://{bucket}/src.n5/vol");
    let s3_dst = format!("s3://{bucket}/out.zarr/raw");
    remote(&["cp", &format!("{src_root}/vol"), &s3_src]);
    let flags = [
        "--format",
        "zarr3",
        "--method",
        "mean",
        "--shard",
        "16,16,16",
        "--min-size",
        "4",
    ];
    let mut args = vec!["pyramid", &s3_src, &s3_dst, "--json"];
    args.extend(flags);
    let built: Value = serde_json::from_slice(&remote(&args).stdout).unwrap();
    let levels = built["levels"].as_array().unwrap().clone();
    let n = levels.len();
    assert!(n >= 3, "{built}");

    // The same pyramid built locally; the S3 one copied back.
    let local = t.path("local.zarr");
    let mut args = vec!["pyramid", &src_root, "X"];
    let src_local = format!("{src_root}/vol");
    let dst_local = format!("{local}/raw");
    args[1] = &src_local;
    args[2] = &dst_local;
    args.extend(flags);
    ok(&args);
    let back = t.path("back.zarr");
    remote(&["cp", &format!("s3://{bucket}/out.zarr"), &back]);
    let (cl, cb) = (
        Container::open(&local, Mode::Read).unwrap(),
        Container::open(&back, Mode::Read).unwrap(),
    );
    for k in 0..n {
        let p = format!("raw/s{k}");
        assert!(whole(&cl, &p) == whole(&cb, &p), "{p}");
    }
    let mut la = obj(cl.attributes("raw").unwrap());
    let mut ba = obj(cb.attributes("raw").unwrap());
    la.remove("libn5_pyramid");
    ba.remove("libn5_pyramid");
    assert_eq!(la, ba);
    if let Some(python) = tensorstore_python() {
        let rel = relatives(&levels);
        let levels: Vec<Value> = (0..n)
            .map(|k| json!({"driver": "zarr3", "path": format!("{back}/raw/s{k}"), "relative": rel[k]}))
            .collect();
        let manifest = json!([{"id": "s3", "method": "mean",
            "source": {"driver": "n5", "path": src_local}, "levels": levels}]);
        let path = t.path("manifest.json");
        std::fs::write(&path, manifest.to_string()).unwrap();
        run_python(&python, "pyramid_oracle.py", &[&path]);
    }

    // A second run on S3 finds every shard identical.
    let mut args = vec!["pyramid", &s3_src, &s3_dst, "--json"];
    args.extend(flags);
    let again: Value = serde_json::from_slice(&remote(&args).stdout).unwrap();
    assert_eq!(again["written"], 0, "{again}");
}

// ---------------------------------------------------------------------------
// Levels and factors

/// An empty dataset (metadata only) at `root`/`path`.
fn empty_dataset(root: &str, fmt: Fmt, path: &str, dims: &[u64], block: &[u32], attrs: Value) {
    let c = container(root, fmt);
    let a = DatasetAttributes::new(
        dims.to_vec(),
        block.to_vec(),
        DataType::U16,
        Compression::Raw,
    )
    .unwrap();
    c.create_dataset(path, a).unwrap();
    if let Value::Object(m) = attrs {
        if !m.is_empty() {
            c.set_attributes(path, &m).unwrap();
        }
    }
}

/// Check a `--plan` document: levels `s0..`, the relative factors
/// `relative` (s0's included), their products as `factors`, `shapes`, and
/// the shard grid of each level in blocks of `block`.
fn check_plan(plan: &Value, shapes: &[&[u64]], relative: &[&[u64]], block: &[u64]) {
    let levels = plan["levels"].as_array().unwrap();
    assert_eq!(levels.len(), shapes.len(), "{plan}");
    let mut factors = vec![1u64; block.len()];
    for (k, l) in levels.iter().enumerate() {
        for (f, r) in factors.iter_mut().zip(relative[k]) {
            *f *= r;
        }
        assert_eq!(l["path"], json!(format!("s{k}")));
        assert_eq!(l["shape"], json!(shapes[k]), "s{k}: {plan}");
        assert_eq!(l["relative"], json!(relative[k]), "s{k}: {plan}");
        assert_eq!(l["factors"], json!(factors), "s{k}: {plan}");
        let grid: u64 = shapes[k]
            .iter()
            .zip(block)
            .map(|(n, b)| n.div_ceil(*b))
            .product();
        assert_eq!(l["shards"].as_array().unwrap().len() as u64, grid, "s{k}");
    }
}

#[test]
fn plans_of_the_worked_examples() {
    let t = TempDir::new("pyr-plan");
    let big = t.path("big.n5");
    // [2048,2048,300] at 4,4,40 nm, blocks 64 (resolution and units from
    // the source's attributes).
    empty_dataset(
        &big,
        Fmt::N5,
        "em",
        &[2048, 2048, 300],
        &[64, 64, 64],
        json!({"resolution": [4, 4, 40], "units": ["nm", "nm", "nm"]}),
    );
    let shapes: [&[u64]; 7] = [
        &[2048, 2048, 300],
        &[1024, 1024, 300],
        &[512, 512, 300],
        &[256, 256, 300],
        &[128, 128, 150],
        &[64, 64, 75],
        &[64, 64, 38],
    ];
    let relative: [&[u64]; 7] = [
        &[1, 1, 1],
        &[2, 2, 1],
        &[2, 2, 1],
        &[2, 2, 1],
        &[2, 2, 2],
        &[2, 2, 2],
        &[1, 1, 2],
    ];
    for fmt in ["n5", "zarr2", "zarr3"] {
        let dst = t.path(&format!("out-{fmt}/em"));
        let plan = json(&[
            "pyramid",
            &format!("{big}/em"),
            &dst,
            "--plan",
            "--format",
            fmt,
        ]);
        assert_eq!(plan["format"], fmt);
        assert_eq!(plan["method"], "mean");
        check_plan(&plan, &shapes, &relative, &[64, 64, 64]);
        assert!(!Path::new(&t.path(&format!("out-{fmt}"))).exists());
    }
    // The same with the resolution as an option (the source has none).
    empty_dataset(
        &big,
        Fmt::N5,
        "bare",
        &[2048, 2048, 300],
        &[64, 64, 64],
        json!({}),
    );
    let plan = json(&[
        "pyramid",
        &format!("{big}/bare"),
        &t.path("o.n5/x"),
        "--plan",
        "--resolution",
        "4,4,40",
        "--units",
        "nm,nm,nm",
    ]);
    check_plan(&plan, &shapes, &relative, &[64, 64, 64]);

    // [10000,7000], blocks 256, no sizes: [2,2] x5 then [2,1].
    empty_dataset(
        &big,
        Fmt::N5,
        "wide",
        &[10000, 7000],
        &[256, 256],
        json!({}),
    );
    let plan = json(&[
        "pyramid",
        &format!("{big}/wide"),
        &t.path("o.n5/w"),
        "--plan",
    ]);
    check_plan(
        &plan,
        &[
            &[10000, 7000],
            &[5000, 3500],
            &[2500, 1750],
            &[1250, 875],
            &[625, 438],
            &[313, 219],
            &[157, 219],
        ],
        &[
            &[1, 1],
            &[2, 2],
            &[2, 2],
            &[2, 2],
            &[2, 2],
            &[2, 2],
            &[2, 1],
        ],
        &[256, 256],
    );

    // [512,512,64,3,10] x,y,z,c,t at 0.1625,0.1625,1 um, blocks
    // [128,128,16,1,1]: [2,2,1,1,1] x2, then [1,1,2,1,1] x2.
    let z3 = t.path("big.zarr");
    empty_dataset(
        &z3,
        Fmt::Zarr3,
        "ls",
        &[512, 512, 64, 3, 10],
        &[128, 128, 16, 1, 1],
        json!({}),
    );
    let plan = json(&[
        "pyramid",
        &format!("{z3}/ls"),
        &t.path("o.zarr/ls"),
        "--plan",
        "--axes",
        "x,y,z,c,t",
        "--resolution",
        "0.1625,0.1625,1,1,1",
        "--units",
        "um,um,um,,",
    ]);
    assert_eq!(plan["format"], "zarr3");
    check_plan(
        &plan,
        &[
            &[512, 512, 64, 3, 10],
            &[256, 256, 64, 3, 10],
            &[128, 128, 64, 3, 10],
            &[128, 128, 32, 3, 10],
            &[128, 128, 16, 3, 10],
        ],
        &[
            &[1, 1, 1, 1, 1],
            &[2, 2, 1, 1, 1],
            &[2, 2, 1, 1, 1],
            &[1, 1, 2, 1, 1],
            &[1, 1, 2, 1, 1],
        ],
        &[128, 128, 16, 1, 1],
    );
    assert!(!Path::new(&t.path("o.n5")).exists() && !Path::new(&t.path("o.zarr")).exists());
}

// ---------------------------------------------------------------------------
// Refusals

/// The small sources of the refusal and output tests in `t`: `src.n5/vol`
/// (uint16 [20,18,10], blocks 8), `src.n5/v5` (uint8 [12,10,8,2,3] x, y,
/// z, c, t), `src.n5/str` (strings), `src.n5/grp` (a group).
fn small_sources(t: &TempDir) -> String {
    let root = t.path("src.n5");
    let c = container(&root, Fmt::N5);
    let mut rng = Rng(3);
    write_source(
        &c,
        "vol",
        &DataType::U16,
        &[20, 18, 10],
        &[8, 8, 8],
        &values(&DataType::U16, 3600, Kind::Image, &mut rng),
    );
    write_source(
        &c,
        "v5",
        &DataType::U8,
        &[12, 10, 8, 2, 3],
        &[8, 8, 8, 1, 1],
        &values(&DataType::U8, 5760, Kind::Image, &mut rng),
    );
    let a =
        DatasetAttributes::new(vec![4, 4], vec![4, 4], DataType::String, Compression::Raw).unwrap();
    c.create_dataset("str", a).unwrap();
    c.create_group("grp").unwrap();
    root
}

#[test]
fn refusals_exit_2_and_create_nothing() {
    let t = TempDir::new("pyr-refuse");
    let root = small_sources(&t);
    let vol = format!("{root}/vol");
    let v5 = format!("{root}/v5");
    let exact = run(&["pyramid", &vol, &t.path("d0.n5/raw"), "--method", "avg"]);
    assert_eq!(exact.code, 2);
    assert_eq!(
        exact.stderr,
        "n5: --method: unknown method 'avg' (stride, mean, median, mode, min, max)\n"
    );
    assert!(!Path::new(&t.path("d0.n5")).exists());

    // (source, arguments, what the message names)
    let cases: &[(&str, &[&str], &str)] = &[
        (&vol, &["--factors", "2,x,1"], "--factors"),
        (&vol, &["--factors", "2,,1"], "--factors"),
        (&vol, &["--factors", "2,2,1/"], "--factors"),
        (&vol, &["--factors", "2,0,1"], "--factors"),
        (&vol, &["--factors", "2,-1,1"], "--factors"),
        (&vol, &["--factors", "2,2"], "--factors"),
        (&vol, &["--factors", "2,2,1,1"], "--factors"),
        (&vol, &["--factors", "2,2,1/2,2"], "--factors"),
        (&vol, &["--factors", "1,1,1"], "--factors"),
        (&vol, &["--factors", "2,2,1/1,1,1"], "--factors"),
        (
            &vol,
            &["--axes", "x,y,c", "--factors", "2,2,2"],
            "--factors",
        ),
        (&v5, &["--factors", "2,2,2,2,1"], "--factors"),
        (
            &vol,
            &["--levels", "3", "--factors", "2,2,1/2,2,2"],
            "--levels",
        ),
        (&vol, &["--levels", "0"], "--levels"),
        (&vol, &["--min-size", "0"], "--min-size"),
        (&vol, &["--min-size", "8,0,8"], "--min-size"),
        (&vol, &["--min-size", "8,8"], "--min-size"),
        (&vol, &["--axes", "x,y"], "--axes"),
        (&vol, &["--axes", "x,y,z,t"], "--axes"),
        (&vol, &["--axes", "x,x,y"], "--axes"),
        (&vol, &["--axes", "x,,y"], "--axes"),
        (&vol, &["--axes", "x,y,q", "--format", "zarr3"], "--axes"),
        (&vol, &["--axes", "x,y,q", "--format", "zarr2"], "--axes"),
        (&vol, &["--axes", "x,c,t", "--format", "zarr3"], "--axes"),
        (&vol, &["--axes", "x,c,t", "--format", "zarr2"], "--axes"),
        (&vol, &["--axes", "x,y,t", "--format", "bdv"], "--axes"),
        (&vol, &["--axes", "x,y,q", "--format", "bdv"], "--axes"),
        (&vol, &["--units", "nm,parsec,nm"], "--units"),
        (&vol, &["--units", "nm,nm"], "--units"),
        (&vol, &["--units", "nm,nm,ms"], "--units"),
        (&vol, &["--axes", "x,y,t", "--units", "nm,nm,nm"], "--units"),
        (&vol, &["--resolution", "4,0,40"], "--resolution"),
        (&vol, &["--resolution", "4,-1,40"], "--resolution"),
        (&vol, &["--resolution", "4,nan,40"], "--resolution"),
        (&vol, &["--resolution", "4,inf,40"], "--resolution"),
        (&vol, &["--resolution", "4,4"], "--resolution"),
        (&vol, &["--translation", "0,inf,0"], "--translation"),
        (&vol, &["--translation", "nan,0,0"], "--translation"),
        (&vol, &["--part", "3/3"], "--part"),
        (&vol, &["--part", "x"], "--part"),
        (&vol, &["--part", "1/0"], "--part"),
        (&vol, &["--part", "1"], "--part"),
        (&vol, &["--part", "0/2", "--finalize"], "--part"),
        (&vol, &["--part", "0/2", "--plan"], "--p"),
        (&vol, &["--finalize", "--plan"], "--"),
        (&vol, &["--shard", "16,16,16", "--format", "n5"], "--shard"),
        (
            &vol,
            &["--shard", "16,16,16", "--format", "zarr2"],
            "--shard",
        ),
        (&vol, &["--shard", "16,16,16", "--format", "bdv"], "--shard"),
    ];
    let mut wrong = Vec::new();
    for (i, (src, args, needle)) in cases.iter().enumerate() {
        let dst = t.path(&format!("d{}.n5", i + 1));
        let bdv = args.contains(&"bdv");
        let target = if bdv {
            dst.clone()
        } else {
            format!("{dst}/raw")
        };
        let mut all = vec!["pyramid", src, &target];
        all.extend_from_slice(args);
        if let Some(why) = refused(&all, 2, needle, &dst) {
            wrong.push(format!("{args:?}: {why}"));
        }
    }
    // bdv into a group rather than the container root.
    let dst = t.path("bdv.n5");
    let grp = format!("{dst}/grp");
    if let Some(why) = refused(&["pyramid", &vol, &grp, "--format", "bdv"], 2, "", &dst) {
        wrong.push(format!("bdv into a group: {why}"));
    }
    assert!(
        wrong.is_empty(),
        "{} refusals went wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// What is wrong with a refusal of `n5 args...`: not exit `code`, not one
/// line `n5: ...` mentioning `needle`, or `dst` created; `None` when right.
fn refused(args: &[&str], code: i32, needle: &str, dst: &str) -> Option<String> {
    let r = run(args);
    let mut why = Vec::new();
    if r.code != code {
        why.push(format!("exit {} ({})", r.code, r.stderr.trim()));
    } else {
        let lines: Vec<&str> = r.stderr.lines().collect();
        if lines.len() != 1 || !lines[0].starts_with("n5: ") || !lines[0].contains(needle) {
            why.push(format!(
                "message {:?} (wanted one line naming {needle:?})",
                r.stderr
            ));
        }
    }
    if Path::new(dst).exists() {
        why.push(format!("created {dst}"));
    }
    (!why.is_empty()).then(|| why.join("; "))
}

#[test]
fn missing_non_numeric_and_occupied_are_exit_1() {
    let t = TempDir::new("pyr-exit1");
    let root = small_sources(&t);
    let vol = format!("{root}/vol");
    let cases: &[(String, &str)] = &[
        (format!("{root}/nothing"), "nothing"),
        (t.path("absent.n5/vol"), "absent.n5"),
        (format!("{root}/str"), "str"),
        (format!("{root}/grp"), "grp"),
    ];
    let mut wrong = Vec::new();
    for (i, (src, needle)) in cases.iter().enumerate() {
        let dst = t.path(&format!("e{i}.n5"));
        if let Some(why) = refused(&["pyramid", src, &format!("{dst}/raw")], 1, needle, &dst) {
            wrong.push(format!("{src}: {why}"));
        }
    }

    // A DST holding a dataset.
    let held = t.path("held.n5");
    write_source(
        &container(&held, Fmt::N5),
        "raw",
        &DataType::U8,
        &[4, 4],
        &[4, 4],
        &[7; 16],
    );
    let mut occupied = |args: &[&str], root: &str, what: &str| {
        let before = files(Path::new(root));
        let r = run(args);
        if r.code != 1 || !r.stderr.starts_with("n5: ") || r.stderr.lines().count() != 1 {
            wrong.push(format!("{what}: exit {}: {}{}", r.code, r.stderr, r.text()));
        }
        if files(Path::new(root)) != before {
            wrong.push(format!("{what}: {root} changed"));
        }
    };
    occupied(
        &["pyramid", &vol, &format!("{held}/raw")],
        &held,
        "a dataset at DST",
    );

    // A DST holding another pyramid: of another method, of another
    // source, of other factors.
    let other = t.path("other.n5");
    let dst = format!("{other}/raw");
    ok(&["pyramid", &vol, &dst]);
    let v5 = format!("{root}/v5");
    occupied(
        &["pyramid", &vol, &dst, "--method", "max"],
        &other,
        "another method",
    );
    occupied(&["pyramid", &v5, &dst], &other, "another source");
    occupied(
        &["pyramid", &vol, &dst, "--factors", "2,2,1"],
        &other,
        "other factors",
    );

    // --finalize with nothing to finalize.
    let fresh = t.path("fresh.n5");
    let args = ["pyramid", &vol, &format!("{fresh}/raw"), "--finalize"];
    if let Some(why) = refused(&args, 1, "", &fresh) {
        wrong.push(format!("--finalize on a fresh DST: {why}"));
    }
    assert!(
        wrong.is_empty(),
        "{} refusals went wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn result_line_json_and_a_second_run() {
    let t = TempDir::new("pyr-out");
    let root = small_sources(&t);
    let vol = format!("{root}/vol");
    let dst = t.path("out.n5/raw");
    // s0 [20,18,10], s1 [10,9,5], s2 [5,5,5]: 18 + 4 + 1 blocks.
    let r = ok(&["pyramid", &vol, &dst]);
    assert_eq!(
        r.text(),
        format!("{vol} -> {dst}: 3 levels (s0..s2), 23 shards written, 0 already identical\n")
    );
    let r = ok(&["pyramid", &vol, &dst]);
    assert_eq!(
        r.text(),
        format!("{vol} -> {dst}: 3 levels (s0..s2), 0 shards written, 23 already identical\n")
    );
    let j = json(&["pyramid", &vol, &dst, "--json"]);
    let keys: Vec<&String> = j.as_object().unwrap().keys().collect();
    let mut expect = vec![
        "finalized",
        "identical",
        "levels",
        "part",
        "partsDone",
        "written",
    ];
    expect.sort();
    let mut keys: Vec<&str> = keys.iter().map(|s| s.as_str()).collect();
    keys.sort();
    assert_eq!(keys, expect, "{j}");
    assert_eq!(j["written"], 0);
    assert_eq!(j["identical"], 23);
    assert_eq!(j["part"], Value::Null);
    assert_eq!(
        j["levels"],
        json!([
            {"path": "s0", "shape": [20, 18, 10], "factors": [1, 1, 1], "shards": 18},
            {"path": "s1", "shape": [10, 9, 5], "factors": [2, 2, 2], "shards": 4},
            {"path": "s2", "shape": [5, 5, 5], "factors": [4, 4, 2], "shards": 1},
        ])
    );
    // A fresh build with --json.
    let j = json(&[
        "pyramid",
        &vol,
        &t.path("fresh.zarr/raw"),
        "--json",
        "--format",
        "zarr3",
    ]);
    assert_eq!(j["written"], 23, "{j}");
    assert_eq!(j["identical"], 0, "{j}");
    assert_eq!(j["part"], Value::Null, "{j}");
    assert_eq!(j["finalized"], true, "{j}");
}

// ---------------------------------------------------------------------------
// Metadata

/// The contract's example source at `root`/`path`: uint16 [256,256,60]
/// (x, y, z), 4,4,40 nm, blocks 64, with two other user attributes.
fn example_source(root: &str, path: &str) {
    let c = container(root, Fmt::N5);
    let mut rng = Rng(5);
    let dims = [256u64, 256, 60];
    let data = values(&DataType::U16, dims.iter().product(), Kind::Image, &mut rng);
    write_source(&c, path, &DataType::U16, &dims, &[64, 64, 64], &data);
    c.set_attributes(
        path,
        &obj(
            json!({"axes": ["x", "y", "z"], "resolution": [4, 4, 40], "units": ["nm", "nm", "nm"],
                    "note": "from the microscope", "acquisition": {"id": 17, "tags": ["a", null]}}),
        ),
    )
    .unwrap();
}

/// The contract's NGFF multiscale object of the example (without version).
fn example_ngff_multiscale(version_string: &Value) -> Value {
    let axes = json!([{"name": "z", "type": "space", "unit": "nanometer"},
                      {"name": "y", "type": "space", "unit": "nanometer"},
                      {"name": "x", "type": "space", "unit": "nanometer"}]);
    json!({"name": "raw", "type": "mean",
        "metadata": {"method": "libn5 n5_pyramid_build", "version": version_string, "kwargs": {"method": "mean"}},
        "axes": axes,
        "datasets": [
         {"path": "s0", "coordinateTransformations": [{"type": "scale", "scale": [40.0,4.0,4.0]}, {"type": "translation", "translation": [0.0,0.0,0.0]}]},
         {"path": "s1", "coordinateTransformations": [{"type": "scale", "scale": [40.0,8.0,8.0]}, {"type": "translation", "translation": [0.0,2.0,2.0]}]},
         {"path": "s2", "coordinateTransformations": [{"type": "scale", "scale": [40.0,16.0,16.0]}, {"type": "translation", "translation": [0.0,6.0,6.0]}]}]})
}

/// The N5 dataset keys.
const N5_KEYS: [&str; 4] = ["dimensions", "blockSize", "dataType", "compression"];

/// `attrs` without the N5 dataset keys.
fn without_dataset_keys(attrs: &Value) -> Map<String, Value> {
    let mut m = obj(attrs.clone());
    for k in N5_KEYS {
        assert!(m.remove(k).is_some(), "{k} missing: {attrs}");
    }
    m
}

#[test]
fn n5_layout_of_the_contract_example() {
    let t = TempDir::new("pyr-n5meta");
    let root = t.path("vol.n5");
    example_source(&root, "raw");
    let out = t.path("out.n5");
    ok(&["pyramid", &format!("{root}/raw"), &format!("{out}/raw")]);
    let transform = |s: [f64; 3], tr: [f64; 3]| json!({"axes": ["z","y","x"], "units": ["nm","nm","nm"], "scale": s, "translate": tr});
    let t0 = transform([40.0, 4.0, 4.0], [0.0, 0.0, 0.0]);
    let t1 = transform([40.0, 8.0, 8.0], [0.0, 2.0, 2.0]);
    let t2 = transform([40.0, 16.0, 16.0], [0.0, 6.0, 6.0]);
    let mut expect = json!({"axes": ["x","y","z"], "units": ["nm","nm","nm"], "resolution": [4.0,4.0,40.0],
     "scales": [[1,1,1],[2,2,1],[4,4,1]], "multiScale": true,
     "pixelResolution": {"unit": "nm", "dimensions": [4.0,4.0,40.0]},
     "multiscales": [{"name": "raw", "datasets": [
      {"path": "s0", "transform": t0}, {"path": "s1", "transform": t1}, {"path": "s2", "transform": t2}]}]});
    // The source's other user attributes go to the group.
    expect["note"] = json!("from the microscope");
    expect["acquisition"] = json!({"id": 17, "tags": ["a", null]});
    let group = read_json(format!("{out}/raw/attributes.json"));
    assert_eq!(group, expect);

    let pixel = json!({"unit": "nm", "dimensions": [4.0,4.0,40.0]});
    for (k, (f, tr)) in [([1, 1, 1], &t0), ([2, 2, 1], &t1), ([4, 4, 1], &t2)]
        .iter()
        .enumerate()
    {
        let level = read_json(format!("{out}/raw/s{k}/attributes.json"));
        let extra = without_dataset_keys(&level);
        let expect =
            obj(json!({"downsamplingFactors": f, "pixelResolution": pixel, "transform": tr}));
        assert_eq!(
            extra, expect,
            "s{k}: only the metadata, no resolution, units or user attributes"
        );
    }
    let s1 = read_json(format!("{out}/raw/s1/attributes.json"));
    assert_eq!(s1["dimensions"], json!([128, 128, 60]));
    assert_eq!(s1["dataType"], "uint16");

    let python = python_with(
        "N5_PEER_PYTHON",
        ".venv",
        "cellmap_schemas.multiscale.cosem",
        "cellmap-schemas (the COSEM N5 metadata)",
    );
    if let Some(python) = python {
        run_python(
            &python,
            "check_pyramid_metadata.py",
            &["cosem", &out, "raw"],
        );
    }
}

/// ome-zarr-models' Python (`N5_ZARR3_PYTHON`, else .venv-zarr3).
fn ngff_python() -> Option<PathBuf> {
    python_with(
        "N5_ZARR3_PYTHON",
        ".venv-zarr3",
        "ome_zarr_models, zarr",
        "ome-zarr-models (the OME-NGFF metadata)",
    )
}

#[test]
fn ngff_05_and_04_of_the_contract_example() {
    let t = TempDir::new("pyr-ngff");
    let root = t.path("vol.n5");
    example_source(&root, "raw");
    let src = format!("{root}/raw");
    let z3 = t.path("out.zarr");
    let z2 = t.path("out2.zarr");
    ok(&["pyramid", &src, &format!("{z3}/raw"), "--format", "zarr3"]);
    ok(&["pyramid", &src, &format!("{z2}/raw"), "--format", "zarr2"]);

    // 0.5
    let doc = read_json(format!("{z3}/raw/zarr.json"));
    let version = &doc["attributes"]["ome"]["multiscales"][0]["metadata"]["version"];
    assert!(version.as_str().is_some_and(|v| !v.is_empty()), "{doc}");
    let expect = json!({"zarr_format": 3, "node_type": "group", "attributes": {
        "ome": {"version": "0.5", "multiscales": [example_ngff_multiscale(version)]},
        "note": "from the microscope", "acquisition": {"id": 17, "tags": ["a", null]}}});
    assert_eq!(doc, expect);
    for k in 0..3 {
        let level = read_json(format!("{z3}/raw/s{k}/zarr.json"));
        assert_eq!(level["dimension_names"], json!(["z", "y", "x"]), "s{k}");
        assert_eq!(level["node_type"], "array");
        let attrs = level.get("attributes").cloned().unwrap_or(json!({}));
        assert_eq!(attrs, json!({}), "s{k} carries no user attributes");
    }
    assert_eq!(
        read_json(format!("{z3}/raw/s1/zarr.json"))["shape"],
        json!([60, 128, 128])
    );

    // 0.4
    let mut ms = example_ngff_multiscale(version);
    ms["version"] = json!("0.4");
    let zattrs = read_json(format!("{z2}/raw/.zattrs"));
    assert_eq!(
        zattrs,
        json!({"multiscales": [ms], "note": "from the microscope", "acquisition": {"id": 17, "tags": ["a", null]}})
    );
    assert_eq!(
        read_json(format!("{z2}/raw/.zgroup")),
        json!({"zarr_format": 2})
    );
    for k in 0..3 {
        let zarray = read_json(format!("{z2}/raw/s{k}/.zarray"));
        assert_eq!(zarray["dimension_separator"], "/", "s{k}");
        let za = read_json(format!("{z2}/raw/s{k}/.zattrs"));
        assert_eq!(za, json!({"_ARRAY_DIMENSIONS": ["z", "y", "x"]}), "s{k}");
    }
    // The chunks are stored with the separator.
    assert!(Path::new(&format!("{z2}/raw/s1/0/0/0")).is_file());

    if let Some(python) = ngff_python() {
        run_python(
            &python,
            "check_pyramid_metadata.py",
            &["ngff", &format!("{z3}/raw"), &format!("{z2}/raw")],
        );
    }
}

/// A level's scale and translation.
type Transform = (Vec<f64>, Vec<f64>);

/// The `coordinateTransformations` of each level of the NGFF group `dir`
/// (0.5 `zarr.json` or 0.4 `.zattrs`): (scale, translation), checking that
/// the translation comes after the scale.
fn ngff_transforms(dir: &str) -> (Value, Vec<Transform>) {
    let ms = if Path::new(&format!("{dir}/zarr.json")).exists() {
        read_json(format!("{dir}/zarr.json"))["attributes"]["ome"]["multiscales"][0].clone()
    } else {
        read_json(format!("{dir}/.zattrs"))["multiscales"][0].clone()
    };
    let f = |v: &Value| -> Vec<f64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    let levels = ms["datasets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let ct = d["coordinateTransformations"].as_array().unwrap();
            assert_eq!(ct.len(), 2, "{d}");
            assert_eq!(ct[0]["type"], "scale", "{d}");
            assert_eq!(ct[1]["type"], "translation", "translation after scale: {d}");
            (f(&ct[0]["scale"]), f(&ct[1]["translation"]))
        })
        .collect();
    (ms, levels)
}

#[test]
fn ngff_scale_translation_units_and_axis_types() {
    let t = TempDir::new("pyr-ngff2");
    let root = t.path("vol.n5");
    let c = container(&root, Fmt::N5);
    let mut rng = Rng(9);
    let dims = [40u64, 36, 12, 2, 3];
    let n: u64 = dims.iter().product();
    write_source(
        &c,
        "v5",
        &DataType::F32,
        &dims,
        &[8, 8, 4, 1, 1],
        &values(&DataType::F32, n, Kind::Image, &mut rng),
    );
    let src = format!("{root}/v5");
    let mut groups = Vec::new();
    // (format, method, units, translation)
    let runs = [
        ("zarr3", "mean", "um,um,angstrom,,ms", "10,20,30,0,0"),
        ("zarr2", "stride", "micron,µm,A,,s", "10,20,30,0,0"),
        ("zarr3", "max", "nanometre,NM,nm,,h", "-1.5,0,2.25,0,0"),
    ];
    for (i, (fmt, method, units, tr)) in runs.iter().enumerate() {
        let dst = t.path(&format!("o{i}.zarr/img"));
        let built = json(&[
            "pyramid",
            &src,
            &dst,
            "--format",
            fmt,
            "--method",
            method,
            "--units",
            units,
            "--resolution",
            "0.5,0.5,2,1,3",
            &format!("--translation={tr}"),
            "--factors",
            "2,2,1,1,1/2,2,2,1,1",
            "--json",
        ]);
        assert_eq!(built["levels"].as_array().unwrap().len(), 3);
        let (ms, levels) = ngff_transforms(&dst);
        let unit_names: Vec<&str> = units
            .split(',')
            .map(|u| match u.to_lowercase().as_str() {
                "um" | "micron" | "µm" => "micrometer",
                "angstrom" | "a" => "angstrom",
                "nanometre" | "nm" => "nanometer",
                "ms" => "millisecond",
                "s" => "second",
                "h" => "hour",
                _ => "",
            })
            .collect();
        // Axes in C order: t, c, z, y, x.
        let names = ["t", "c", "z", "y", "x"];
        let types = ["time", "channel", "space", "space", "space"];
        for (j, a) in ms["axes"].as_array().unwrap().iter().enumerate() {
            let n5_axis = 4 - j;
            let mut e = json!({"name": names[j], "type": types[j]});
            if !unit_names[n5_axis].is_empty() {
                e["unit"] = json!(unit_names[n5_axis]);
            }
            assert_eq!(a, &e, "{fmt} axis {j}");
        }
        assert_eq!(ms["type"], json!(method));
        let res = [0.5, 0.5, 2.0, 1.0, 3.0];
        let t0: Vec<f64> = tr.split(',').map(|x| x.parse().unwrap()).collect();
        let factors = [[1u64, 1, 1, 1, 1], [2, 2, 1, 1, 1], [4, 4, 2, 1, 1]];
        for (k, (scale, translation)) in levels.iter().enumerate() {
            let f = factors[k];
            let es: Vec<f64> = (0..5).rev().map(|a| res[a] * f[a] as f64).collect();
            let et: Vec<f64> = (0..5)
                .rev()
                .map(|a| {
                    if *method == "stride" {
                        t0[a]
                    } else {
                        t0[a] + res[a] * (f[a] as f64 - 1.0) / 2.0
                    }
                })
                .collect();
            assert_eq!(scale, &es, "{fmt} {method} s{k} scale");
            assert_eq!(translation, &et, "{fmt} {method} s{k} translation");
        }
        let text = std::fs::read_to_string(if *fmt == "zarr3" {
            format!("{dst}/zarr.json")
        } else {
            format!("{dst}/.zattrs")
        })
        .unwrap();
        assert!(!text.contains("omero"), "no omero block");
        for short in ["\"um\"", "\"nm\"", "\"ms\"", "\"µm\""] {
            assert!(
                !text.contains(short),
                "{short} in {dst}: UDUNITS names only"
            );
        }
        groups.push(dst);
    }
    if let Some(python) = ngff_python() {
        let mut args = vec!["ngff"];
        args.extend(groups.iter().map(String::as_str));
        run_python(&python, "check_pyramid_metadata.py", &args);
    }
}

#[test]
fn ngff_axis_order_permutes_s0() {
    let t = TempDir::new("pyr-perm");
    let root = t.path("vol.n5");
    let c = container(&root, Fmt::N5);
    let mut rng = Rng(13);
    // An ImageJ hyperstack: x, y, c, z, t.
    let dims = [21u64, 19, 2, 9, 3];
    let n: u64 = dims.iter().product();
    let data = values(&DataType::U16, n, Kind::Image, &mut rng);
    write_source(&c, "hs", &DataType::U16, &dims, &[8, 8, 1, 4, 1], &data);
    c.set_attributes("hs", &obj(json!({"axes": ["x", "y", "c", "z", "t"]})))
        .unwrap();
    let out = t.path("out.zarr");
    ok(&[
        "pyramid",
        &format!("{root}/hs"),
        &format!("{out}/raw"),
        "--format",
        "zarr3",
        "--min-size",
        "4",
    ]);
    let level = read_json(format!("{out}/raw/s0/zarr.json"));
    assert_eq!(level["dimension_names"], json!(["t", "c", "z", "y", "x"]));
    let (_, got_dims, got) = whole(&Container::open(&out, Mode::Read).unwrap(), "raw/s0");
    assert_eq!(got_dims, vec![21, 19, 9, 2, 3]);
    let at = |d: &[u8], i: usize| u16::from_ne_bytes([d[2 * i], d[2 * i + 1]]);
    for tt in 0..3usize {
        for z in 0..9usize {
            for ch in 0..2usize {
                for y in 0..19usize {
                    for x in 0..21usize {
                        let src_i = x + 21 * (y + 19 * (ch + 2 * (z + 9 * tt)));
                        let dst_i = x + 21 * (y + 19 * (z + 9 * (ch + 2 * tt)));
                        assert_eq!(
                            at(&got, dst_i),
                            at(&data, src_i),
                            "x{x} y{y} c{ch} z{z} t{tt}"
                        );
                    }
                }
            }
        }
    }
    let (ms, _) = ngff_transforms(&format!("{out}/raw"));
    let names: Vec<&str> = ms["axes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["t", "c", "z", "y", "x"]);
    if let Some(python) = ngff_python() {
        run_python(
            &python,
            "check_pyramid_metadata.py",
            &["ngff", &format!("{out}/raw")],
        );
    }
}

/// The contract's dataset.xml of the example.
const EXAMPLE_XML: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<SpimData version="0.2">
  <BasePath type="relative">.</BasePath>
  <SequenceDescription>
    <ImageLoader format="bdv.n5" version="1.0"><n5 type="relative">.</n5></ImageLoader>
    <ViewSetups>
      <ViewSetup><id>0</id><name>0</name><size>256 256 60</size>
        <voxelSize><unit>nm</unit><size>4.0 4.0 40.0</size></voxelSize>
        <attributes><illumination>0</illumination><channel>0</channel><tile>0</tile><angle>0</angle></attributes>
      </ViewSetup>
      <Attributes name="illumination"><Illumination><id>0</id><name>0</name></Illumination></Attributes>
      <Attributes name="channel"><Channel><id>0</id><name>0</name></Channel></Attributes>
      <Attributes name="tile"><Tile><id>0</id><name>0</name></Tile></Attributes>
      <Attributes name="angle"><Angle><id>0</id><name>0</name></Angle></Attributes>
    </ViewSetups>
    <Timepoints type="range"><first>0</first><last>0</last></Timepoints>
  </SequenceDescription>
  <ViewRegistrations>
    <ViewRegistration timepoint="0" setup="0"><ViewTransform type="affine">
      <affine>4.0 0.0 0.0 0.0 0.0 4.0 0.0 0.0 0.0 0.0 40.0 0.0</affine></ViewTransform></ViewRegistration>
  </ViewRegistrations>
</SpimData>
"#;

#[test]
fn bdv_layout_and_xml_of_the_contract_example() {
    let t = TempDir::new("pyr-bdv");
    let root = t.path("vol.n5");
    example_source(&root, "raw");
    let out = t.path("out.n5");
    ok(&["pyramid", &format!("{root}/raw"), &out, "--format", "bdv"]);
    assert_eq!(
        read_json(format!("{out}/setup0/attributes.json")),
        json!({"downsamplingFactors": [[1,1,1],[2,2,1],[4,4,1]], "dataType": "uint16"})
    );
    assert_eq!(
        read_json(format!("{out}/setup0/timepoint0/attributes.json")),
        json!({"multiScale": true, "resolution": [4.0,4.0,40.0]})
    );
    for (k, f) in [[1, 1, 1], [2, 2, 1], [4, 4, 1]].iter().enumerate() {
        let level = read_json(format!("{out}/setup0/timepoint0/s{k}/attributes.json"));
        assert_eq!(
            without_dataset_keys(&level),
            obj(json!({"downsamplingFactors": f})),
            "s{k}"
        );
    }
    let xml = std::fs::read_to_string(format!("{out}/dataset.xml")).unwrap();
    assert_eq!(xml, EXAMPLE_XML);
    // s0 is the source.
    let (a, b) = (
        Container::open(&root, Mode::Read).unwrap(),
        Container::open(&out, Mode::Read).unwrap(),
    );
    assert!(whole(&a, "raw") == whole(&b, "setup0/timepoint0/s0"));
}

#[test]
fn bdv_setups_per_channel_and_timepoints_per_time_index() {
    let t = TempDir::new("pyr-bdv5");
    let root = t.path("vol.n5");
    let c = container(&root, Fmt::N5);
    let mut rng = Rng(17);
    let dims = [40u64, 36, 12, 2, 2];
    let n: u64 = dims.iter().product();
    let data = values(&DataType::U8, n, Kind::Image, &mut rng);
    write_source(&c, "v", &DataType::U8, &dims, &[16, 16, 8, 1, 1], &data);
    let out = t.path("out.n5");
    ok(&[
        "pyramid",
        &format!("{root}/v"),
        &out,
        "--format",
        "bdv",
        "--axes",
        "x,y,z,c,t",
        "--resolution",
        "0.5,0.5,2,1,1",
        "--units",
        "um,um,um,,s",
        "--min-size",
        "8",
    ]);
    let o = Container::open(&out, Mode::Read).unwrap();
    let stack = (40 * 36 * 12) as usize;
    for ch in 0..2usize {
        let setup = read_json(format!("{out}/setup{ch}/attributes.json"));
        assert_eq!(setup["dataType"], "uint8");
        for tt in 0..2usize {
            let (_, d, got) = whole(&o, &format!("setup{ch}/timepoint{tt}/s0"));
            assert_eq!(d, vec![40, 36, 12]);
            let first = (ch + 2 * tt) * stack;
            assert!(
                got == data[first..first + stack],
                "setup{ch}/timepoint{tt}/s0"
            );
            assert_eq!(
                read_json(format!("{out}/setup{ch}/timepoint{tt}/attributes.json")),
                json!({"multiScale": true, "resolution": [0.5, 0.5, 2.0]})
            );
        }
    }
    assert!(!Path::new(&format!("{out}/setup2")).exists());
    assert!(!Path::new(&format!("{out}/setup0/timepoint2")).exists());
    let xml = std::fs::read_to_string(format!("{out}/dataset.xml")).unwrap();
    assert_eq!(xml.matches("<ViewSetup>").count(), 2, "{xml}");
    assert_eq!(xml.matches("<Channel>").count(), 2, "{xml}");
    assert!(xml.contains("<channel>1</channel>"), "{xml}");
    assert!(
        xml.contains("<Channel><id>1</id><name>1</name></Channel>"),
        "{xml}"
    );
    assert!(xml.contains("<first>0</first><last>1</last>"), "{xml}");
    assert_eq!(xml.matches("<ViewRegistration ").count(), 4, "{xml}");
    for tt in 0..2 {
        for s in 0..2 {
            assert!(
                xml.contains(&format!(
                    "<ViewRegistration timepoint=\"{tt}\" setup=\"{s}\">"
                )),
                "{xml}"
            );
        }
    }
    assert!(xml.contains("<size>40 36 12</size>"), "{xml}");
    assert!(
        xml.contains("<unit>um</unit><size>0.5 0.5 2.0</size>"),
        "{xml}"
    );
    assert!(
        xml.contains("<affine>0.5 0.0 0.0 0.0 0.0 0.5 0.0 0.0 0.0 0.0 2.0 0.0</affine>"),
        "{xml}"
    );
}

#[test]
fn in_place_keeps_s0_and_moves_resolution_to_the_group() {
    let t = TempDir::new("pyr-inplace");
    let root = t.path("vol.n5");
    let c = container(&root, Fmt::N5);
    let mut rng = Rng(19);
    let dims = [64u64, 48, 20];
    let n: u64 = dims.iter().product();
    write_source(
        &c,
        "raw/s0",
        &DataType::U16,
        &dims,
        &[16, 16, 16],
        &values(&DataType::U16, n, Kind::Image, &mut rng),
    );
    c.set_attributes(
        "raw/s0",
        &obj(json!({"resolution": [4, 4, 40], "units": ["nm", "nm", "nm"], "note": "kept"})),
    )
    .unwrap();
    let s0 = PathBuf::from(format!("{root}/raw/s0"));
    let mut before = files(&s0);
    before.remove("attributes.json");
    let r = ok(&[
        "pyramid",
        &format!("{root}/raw/s0"),
        &format!("{root}/raw"),
        "-b",
        "8,8,8",
        "--json",
    ]);
    let j: Value = serde_json::from_slice(&r.stdout).unwrap();
    let mut after = files(&s0);
    after.remove("attributes.json");
    assert!(before == after, "s0's blocks are kept as they are");
    let levels = j["levels"].as_array().unwrap();
    assert!(levels.len() >= 3, "{j}");
    let group = read_json(format!("{root}/raw/attributes.json"));
    assert_eq!(group["resolution"], json!([4.0, 4.0, 40.0]), "{group}");
    assert_eq!(group["units"], json!(["nm", "nm", "nm"]), "{group}");
    assert_eq!(group["multiScale"], true);
    let s0_attrs = read_json(format!("{root}/raw/s0/attributes.json"));
    assert!(
        s0_attrs.get("resolution").is_none() && s0_attrs.get("units").is_none(),
        "{s0_attrs}"
    );
    assert_eq!(
        s0_attrs["blockSize"],
        json!([16, 16, 16]),
        "s0 not re-chunked"
    );
    let s1 = read_json(format!("{root}/raw/s1/attributes.json"));
    assert_eq!(
        s1["blockSize"],
        json!([8, 8, 8]),
        "-b applies to the levels"
    );
    assert_eq!(s1["dimensions"], levels[1]["shape"]);
}

#[test]
fn second_run_of_compressed_zarr_pyramids_writes_nothing() {
    let t = TempDir::new("pyr-again");
    let root = small_sources(&t);
    let vol = format!("{root}/vol");
    let mut wrong = Vec::new();
    for (fmt, c) in [
        ("zarr2", "gzip"),
        ("zarr3", "gzip"),
        ("zarr3", "zstd"),
        ("n5", "zstd"),
    ] {
        let dst = t.path(&format!("{fmt}-{c}.zarr/raw"));
        let first = json(&["pyramid", &vol, &dst, "--format", fmt, "-c", c, "--json"]);
        assert_eq!(first["written"], 23, "{first}");
        let r = run(&["pyramid", &vol, &dst, "--format", fmt, "-c", c, "--json"]);
        if r.code != 0 {
            wrong.push(format!("{fmt} {c}: exit {}: {}", r.code, r.stderr.trim()));
            continue;
        }
        let again: Value = serde_json::from_slice(&r.stdout).unwrap();
        if again["written"] != 0 || again["identical"] != 23 {
            wrong.push(format!("{fmt} {c}: {again}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn n5_units_are_si_symbols_and_pixel_resolution_needs_one_space_unit() {
    let t = TempDir::new("pyr-units");
    let root = small_sources(&t);
    let vol = format!("{root}/vol");
    // Ångström become nm (size x 0.1), in the group and the transforms.
    let dst = t.path("a.n5/raw");
    ok(&[
        "pyramid",
        &vol,
        &dst,
        "--units",
        "A,angstrom,Å",
        "--resolution",
        "10,20,40",
    ]);
    let g = read_json(format!("{dst}/attributes.json"));
    assert_eq!(g["units"], json!(["nm", "nm", "nm"]), "{g}");
    assert_eq!(g["resolution"], json!([1.0, 2.0, 4.0]), "{g}");
    assert_eq!(
        g["multiscales"][0]["datasets"][0]["transform"]["scale"],
        json!([4.0, 2.0, 1.0])
    );
    assert_eq!(
        g["multiscales"][0]["datasets"][0]["transform"]["units"],
        json!(["nm", "nm", "nm"])
    );
    // Mixed units: no pixelResolution (group and levels).
    let dst = t.path("b.n5/raw");
    ok(&[
        "pyramid",
        &vol,
        &dst,
        "--units",
        "um,um,nm",
        "--resolution",
        "1,1,40",
    ]);
    let g = read_json(format!("{dst}/attributes.json"));
    assert_eq!(g["units"], json!(["um", "um", "nm"]), "{g}");
    assert!(g.get("pixelResolution").is_none(), "{g}");
    assert!(read_json(format!("{dst}/s1/attributes.json"))
        .get("pixelResolution")
        .is_none());
    // Minutes become seconds (size x 60); a channel axis has "" in N5 and
    // no pixelResolution where an axis is not a space axis.
    let v5 = format!("{root}/v5");
    let dst = t.path("c.n5/raw");
    ok(&[
        "pyramid",
        &v5,
        &dst,
        "--units",
        "micron,micron,micron,,min",
        "--resolution",
        "0.5,0.5,2,1,2",
    ]);
    let g = read_json(format!("{dst}/attributes.json"));
    assert_eq!(g["units"], json!(["um", "um", "um", "", "s"]), "{g}");
    assert_eq!(g["resolution"], json!([0.5, 0.5, 2.0, 1.0, 120.0]), "{g}");
    assert_eq!(g["axes"], json!(["x", "y", "z", "c", "t"]), "{g}");
    assert!(g.get("pixelResolution").is_none(), "{g}");
    // The same in NGFF: UDUNITS names, sizes as given.
    let dst = t.path("c.zarr/raw");
    ok(&[
        "pyramid",
        &v5,
        &dst,
        "--format",
        "zarr3",
        "--units",
        "micron,micron,micron,,min",
        "--resolution",
        "0.5,0.5,2,1,2",
    ]);
    let (ms, levels) = ngff_transforms(&dst);
    assert_eq!(
        ms["axes"][0],
        json!({"name": "t", "type": "time", "unit": "minute"})
    );
    assert_eq!(ms["axes"][1], json!({"name": "c", "type": "channel"}));
    assert_eq!(levels[0].0, vec![2.0, 1.0, 2.0, 0.5, 0.5]);
}

#[test]
fn labels_is_mode() {
    let t = TempDir::new("pyr-labels");
    let root = small_sources(&t);
    let vol = format!("{root}/vol");
    let plan = json(&["pyramid", &vol, &t.path("l.n5/raw"), "--labels", "--plan"]);
    assert_eq!(plan["method"], "mode");
}

#[test]
fn zarr3_in_place_keeps_s0_and_names_its_dimensions() {
    let t = TempDir::new("pyr-inplace3");
    let z = t.path("z.zarr");
    let c = container(&z, Fmt::Zarr3);
    let mut rng = Rng(23);
    let data = values(&DataType::U16, 40 * 36 * 10, Kind::Image, &mut rng);
    write_source(
        &c,
        "good/s0",
        &DataType::U16,
        &[40, 36, 10],
        &[8, 8, 8],
        &data,
    );
    let before = files(Path::new(&format!("{z}/good/s0")));
    ok(&[
        "pyramid",
        &format!("{z}/good/s0"),
        &format!("{z}/good"),
        "--min-size",
        "8",
    ]);
    let after = files(Path::new(&format!("{z}/good/s0")));
    for (k, v) in &before {
        if k != "zarr.json" {
            assert!(after.get(k) == Some(v), "s0/{k} kept");
        }
    }
    assert!(Path::new(&format!("{z}/good/s1/zarr.json")).is_file());
    assert_eq!(
        read_json(format!("{z}/good/s0/zarr.json"))["dimension_names"],
        json!(["z", "y", "x"]),
        "in place, s0 gets the dimension names"
    );
    if let Some(python) = ngff_python() {
        let g = format!("{z}/good");
        run_python(&python, "check_pyramid_metadata.py", &["ngff", &g]);
    }
}

#[test]
fn zarr2_in_place_keeps_s0_and_names_its_dimensions() {
    let t = TempDir::new("pyr-inplace2");
    let mut rng = Rng(29);
    // s0 with the `/` separator.
    let z2 = t.path("z2.zarr");
    let c2 = container(&z2, Fmt::Zarr2);
    let a = DatasetAttributes::new(
        vec![40, 36, 10],
        vec![8, 8, 8],
        DataType::U16,
        Compression::Raw,
    )
    .unwrap();
    let mut doc = Container::dataset_document(Format::Zarr2, &a).unwrap();
    doc["dimension_separator"] = json!("/");
    let d = c2.create_dataset_json("good/s0", &doc).unwrap();
    let data = values(&DataType::U16, 14400, Kind::Image, &mut rng);
    d.write_region(&[0, 0, 0], &[40, 36, 10], &data).unwrap();
    ok(&[
        "pyramid",
        &format!("{z2}/good/s0"),
        &format!("{z2}/good"),
        "--min-size",
        "8",
    ]);
    let (_, _, got) = whole(&Container::open(&z2, Mode::Read).unwrap(), "good/s0");
    assert!(got == data, "s0 kept");
    assert_eq!(
        read_json(format!("{z2}/good/s0/.zattrs"))["_ARRAY_DIMENSIONS"],
        json!(["z", "y", "x"]),
        "in place, s0 gets the dimension names"
    );
    if let Some(python) = ngff_python() {
        let g = format!("{z2}/good");
        run_python(&python, "check_pyramid_metadata.py", &["ngff", &g]);
    }
}

#[test]
fn ngff_in_place_needs_s0_in_ngff_order_and_separator() {
    let t = TempDir::new("pyr-inplace-bad");
    let mut rng = Rng(31);
    // Zarr v3, s0 in x, y, c, z order.
    let z = t.path("z.zarr");
    let c = container(&z, Fmt::Zarr3);
    let data = values(&DataType::U16, 20 * 18 * 2 * 6, Kind::Image, &mut rng);
    write_source(
        &c,
        "bad/s0",
        &DataType::U16,
        &[20, 18, 2, 6],
        &[8, 8, 1, 8],
        &data,
    );
    let bad = Path::new(&z).join("bad");
    let before = files(&bad);
    let r = run(&[
        "pyramid",
        &format!("{z}/bad/s0"),
        &format!("{z}/bad"),
        "--axes",
        "x,y,c,z",
    ]);
    assert_eq!(r.code, 1, "{}{}", r.stderr, r.text());
    assert!(files(&bad) == before, "nothing written");
    // Zarr v2, s0 with the `.` separator.
    let z2 = t.path("z2.zarr");
    let c2 = container(&z2, Fmt::Zarr2);
    let a = DatasetAttributes::new(
        vec![20, 18, 6],
        vec![8, 8, 8],
        DataType::U16,
        Compression::Raw,
    )
    .unwrap();
    let mut doc = Container::dataset_document(Format::Zarr2, &a).unwrap();
    doc["dimension_separator"] = json!(".");
    c2.create_dataset_json("dot/s0", &doc).unwrap();
    let dot = Path::new(&z2).join("dot");
    let before = files(&dot);
    let r = run(&["pyramid", &format!("{z2}/dot/s0"), &format!("{z2}/dot")]);
    assert_eq!(r.code, 1, "{}{}", r.stderr, r.text());
    assert!(files(&dot) == before, "nothing written");
}

#[test]
fn stride_translation_bdv_affine_and_the_power_of_two_warning() {
    let t = TempDir::new("pyr-stride");
    let root = small_sources(&t);
    let vol = format!("{root}/vol");
    // Stride: the translation of every level is t0 (N5 transform, C order).
    let dst = t.path("s.n5/raw");
    ok(&[
        "pyramid",
        &vol,
        &dst,
        "--method",
        "stride",
        "--translation",
        "1,2,3",
        "--resolution",
        "4,4,40",
        "--units",
        "nm,nm,nm",
    ]);
    let g = read_json(format!("{dst}/attributes.json"));
    for d in g["multiscales"][0]["datasets"].as_array().unwrap() {
        assert_eq!(d["transform"]["translate"], json!([3.0, 2.0, 1.0]), "{d}");
    }
    // Pooling: t0 + res (F - 1) / 2.
    let dst = t.path("m.n5/raw");
    ok(&[
        "pyramid",
        &vol,
        &dst,
        "--translation",
        "1,2,3",
        "--resolution",
        "4,4,40",
        "--units",
        "nm,nm,nm",
    ]);
    let g = read_json(format!("{dst}/attributes.json"));
    let s1 = &g["multiscales"][0]["datasets"][1]["transform"];
    // z (40 nm) is not below twice the 4 nm of x and y: factors 2, 2, 1.
    assert_eq!(s1["scale"], json!([40.0, 8.0, 8.0]), "{s1}");
    assert_eq!(s1["translate"], json!([3.0, 4.0, 3.0]), "{s1}");
    // BDV: the affine is diag(res) + t0.
    let out = t.path("b.n5");
    ok(&[
        "pyramid",
        &vol,
        &out,
        "--format",
        "bdv",
        "--translation",
        "5,6,7",
        "--resolution",
        "0.5,0.5,2",
        "--units",
        "um,um,um",
    ]);
    let xml = std::fs::read_to_string(format!("{out}/dataset.xml")).unwrap();
    assert!(
        xml.contains("<affine>0.5 0.0 0.0 5.0 0.0 0.5 0.0 6.0 0.0 0.0 2.0 7.0</affine>"),
        "{xml}"
    );
    // Factors that are not powers of two: a warning on stderr, and the build.
    let r = ok(&["pyramid", &vol, &t.path("w.n5/raw"), "--factors", "3,3,1"]);
    assert!(r.stderr.to_lowercase().contains("power"), "{:?}", r.stderr);
}

/// `s0` in the source's own encoding is the source's stored units copied
/// as they are (no decoding and encoding again): a unit the source holds
/// compressed at another level than its metadata says reaches `s0` with
/// those very bytes, while another codec re-encodes; both pyramids hold
/// the same data.
#[test]
fn s0_in_the_sources_encoding_is_its_stored_units_copied() {
    let t = TempDir::new("pyr-units");
    // Compressible, so that gzip levels give other bytes.
    let data: Vec<u8> = (0..20 * 18 * 10u32)
        .flat_map(|i| ((i % 97 + i / 360) as u16).to_ne_bytes())
        .collect();
    for (fmt, ext) in [(Fmt::N5, "n5"), (Fmt::Zarr3, "zarr")] {
        let root = t.path(&format!("src.{ext}"));
        let c = container(&root, fmt);
        write_source(&c, "vol", &DataType::U16, &[20, 18, 10], &[8, 8, 8], &data);
        write_source(&c, "alt", &DataType::U16, &[20, 18, 10], &[8, 8, 8], &data);
        let (src, alt) = (
            c.open_dataset("vol").unwrap(),
            c.open_dataset("alt").unwrap(),
        );
        // `alt` at gzip level 9: the same data in other bytes.
        let level9 = Compression::Gzip {
            level: 9,
            use_zlib: false,
        };
        let a =
            DatasetAttributes::new(vec![20, 18, 10], vec![8, 8, 8], DataType::U16, level9).unwrap();
        let alt = if fmt == Fmt::Zarr3 {
            let mut doc = Container::dataset_document(Format::Zarr3, &a).unwrap();
            Container::shard_document(&mut doc, &[8, 8, 8], &src.shard_shape());
            c.create_dataset_json("alt9", &doc).unwrap()
        } else {
            drop(alt);
            c.create_dataset("alt9", a).unwrap()
        };
        alt.write_region(&[0, 0, 0], &[20, 18, 10], &data).unwrap();
        let (mut nine, mut one) = (Vec::new(), Vec::new());
        assert!(alt.read_stored_unit(&[0, 0, 0], &mut nine).unwrap());
        assert!(src.read_stored_unit(&[0, 0, 0], &mut one).unwrap());
        assert!(nine != one, "{ext}: gzip levels 1 and 9 give other bytes");
        src.write_stored_unit(&[0, 0, 0], Some(&nine)).unwrap();
        let vol = format!("{root}/vol");
        let (same, raw) = (
            t.path(&format!("same.{ext}")),
            t.path(&format!("raw.{ext}")),
        );
        ok(&["pyramid", &vol, &format!("{same}/p"), "-q"]);
        ok(&["pyramid", &vol, &format!("{raw}/p"), "-c", "raw", "-q"]);
        let (sc, rc) = (container(&same, fmt), container(&raw, fmt));
        let s0 = sc.open_dataset("p/s0").unwrap();
        let mut copied = Vec::new();
        assert!(s0.read_stored_unit(&[0, 0, 0], &mut copied).unwrap());
        assert!(
            copied == nine,
            "{ext}: s0's first unit is the source's as stored"
        );
        let mut other = Vec::new();
        assert!(s0.read_stored_unit(&[1, 1, 0], &mut other).unwrap());
        src.read_stored_unit(&[1, 1, 0], &mut one).unwrap();
        assert!(other == one, "{ext}: every unit as stored");
        let r0 = rc.open_dataset("p/s0").unwrap();
        r0.read_stored_unit(&[0, 0, 0], &mut other).unwrap();
        assert!(other != nine, "{ext}: another codec encodes again");
        for k in 0..2 {
            let level = format!("p/s{k}");
            assert!(whole(&sc, &level) == whole(&rc, &level), "{ext} s{k}");
        }
        assert!(whole(&sc, "p/s0").2 == data, "{ext}");
    }
}

/// Checks that the trees at `got` and `want` hold the same files: every
/// array file the same bytes, every metadata document the same JSON, and
/// BigDataViewer's dataset.xml the same text.
fn assert_same_tree(got: &str, want: &str) {
    let (g, w) = (files(Path::new(got)), files(Path::new(want)));
    assert_eq!(
        g.keys().collect::<Vec<_>>(),
        w.keys().collect::<Vec<_>>(),
        "{got} against {want}: other files"
    );
    for (k, v) in &w {
        let name = k.rsplit('/').next().unwrap_or(k);
        let metadata = matches!(
            name,
            "attributes.json" | "zarr.json" | ".zattrs" | ".zarray" | ".zgroup"
        );
        if metadata {
            let parse = |b: &[u8]| serde_json::from_slice::<Value>(b).unwrap();
            assert_eq!(parse(&g[k]), parse(v), "{got} against {want}: {k}");
        } else {
            assert!(g[k] == *v, "{got} against {want}: {k} differs");
        }
    }
}

/// `n5 import --pyramid` of an ImageJ hyperstack (`[x, y, c, z, t]`, with
/// pixel sizes, slice spacing and frame interval) gives what `n5 import`
/// and then `n5 pyramid` with the same options give, file for file: into
/// sharded Zarr v3 (OME-NGFF 0.5) and Zarr v2 (0.4), whose `s0` is in
/// NGFF's axis order `t, c, z, y, x` holding the stack's elements so
/// arranged and whose axes carry the description's units and sizes; and
/// into BigDataViewer, one setup per channel and a time point per frame.
#[test]
fn import_pyramid_of_a_hyperstack_is_import_then_pyramid() {
    let Some(python) = python_with(
        "N5_PEER_PYTHON",
        ".venv",
        "tifffile, numpy",
        "import --pyramid of a hyperstack",
    ) else {
        return;
    };
    let t = TempDir::new("pyr-import-hs");
    let tif = common::hyperstack_tiff(&python, &t);
    let ngff = std::fs::read(t.path("hs-ngff.raw")).unwrap();
    let levels = ["--min-size", "8"];
    // (--format, the other options of both imports).
    let cases: [(&str, &[&str]); 3] = [
        ("zarr3", &["-b", "16,16,1,2,1", "--shard", "32,32,2,4,2"]),
        ("zarr2", &["-b", "16,16,1,2,1", "-c", "zstd"]),
        ("bdv", &["-b", "16,16,1,2,1"]),
    ];
    for (name, import_opts) in cases {
        let format = ["--format", name];
        let ext = if name == "bdv" { "n5" } else { "zarr" };
        let (got_root, want_root) = (
            t.path(&format!("{name}-got.{ext}")),
            t.path(&format!("{name}-want.{ext}")),
        );
        let group = |root: &str| {
            if name == "bdv" {
                root.to_string()
            } else {
                format!("{root}/raw")
            }
        };
        let mut a: Vec<String> = vec!["import".into(), tif.clone(), group(&got_root)];
        a.extend(import_opts.iter().map(|s| s.to_string()));
        a.extend(format.iter().chain(&levels).map(|s| s.to_string()));
        a.push("--pyramid".into());
        let r = ok(&a.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(r.text().contains("levels"), "{name}: {}", r.text());
        // The volume as `n5 import` writes it (BigDataViewer's source: N5).
        let tmp = t.path(&format!("{name}-imported.{ext}/raw"));
        let mut a = vec!["import".to_string(), tif.clone(), tmp.clone()];
        a.extend(import_opts.iter().map(|s| s.to_string()));
        if name != "bdv" {
            a.extend(format.iter().map(|s| s.to_string()));
        }
        ok(&a.iter().map(String::as_str).collect::<Vec<_>>());
        let want = group(&want_root);
        let mut a = vec!["pyramid", tmp.as_str(), want.as_str()];
        a.extend(format.iter().chain(&levels));
        ok(&a);
        assert_same_tree(&got_root, &want_root);
        let got = Container::open(&got_root, Mode::Read).unwrap();
        if name == "bdv" {
            // Channel c at frame t: the stack's z, y, x planes.
            let (x, y, z) = (45usize, 37, 5);
            let stack = x * y * z * 2;
            for (c, f) in [(0usize, 0usize), (1, 0), (0, 2), (1, 1)] {
                let (_, dims, data) = whole(&got, &format!("setup{c}/timepoint{f}/s0"));
                assert_eq!(dims, vec![45, 37, 5]);
                let at = (f * 2 + c) * stack;
                assert!(data == ngff[at..at + stack], "setup{c}/timepoint{f}/s0");
            }
            assert!(!Path::new(&format!("{got_root}/setup2")).exists());
            assert!(!Path::new(&format!("{got_root}/setup0/timepoint3")).exists());
            let xml = std::fs::read_to_string(format!("{got_root}/dataset.xml")).unwrap();
            assert!(
                xml.contains("<unit>um</unit><size>0.25 0.5 2.0</size>"),
                "{xml}"
            );
            continue;
        }
        let (_, dims, data) = whole(&got, "raw/s0");
        assert_eq!(dims, vec![45, 37, 5, 2, 3], "{name}: s0 is x, y, z, c, t");
        assert!(data == ngff, "{name}: s0 holds the stack in NGFF order");
        let (names, multiscale) = if name == "zarr3" {
            let level = read_json(format!("{got_root}/raw/s0/zarr.json"));
            let group = read_json(format!("{got_root}/raw/zarr.json"));
            (
                level["dimension_names"].clone(),
                group["attributes"]["ome"]["multiscales"][0].clone(),
            )
        } else {
            let level = read_json(format!("{got_root}/raw/s0/.zattrs"));
            let group = read_json(format!("{got_root}/raw/.zattrs"));
            (
                level["_ARRAY_DIMENSIONS"].clone(),
                group["multiscales"][0].clone(),
            )
        };
        assert_eq!(names, json!(["t", "c", "z", "y", "x"]), "{name}");
        // The description's sizes and units (micrometres as imported, in
        // nanometres), in UDUNITS names.
        assert_eq!(
            multiscale["axes"],
            json!([
                {"name": "t", "type": "time", "unit": "second"},
                {"name": "c", "type": "channel"},
                {"name": "z", "type": "space", "unit": "nanometer"},
                {"name": "y", "type": "space", "unit": "nanometer"},
                {"name": "x", "type": "space", "unit": "nanometer"}
            ]),
            "{name}"
        );
        assert_eq!(
            multiscale["datasets"][0]["coordinateTransformations"][0]["scale"],
            json!([1.5, 1.0, 2000.0, 500.0, 250.0]),
            "{name}"
        );
    }
    if let Some(python) = ngff_python() {
        let groups = [t.path("zarr3-got.zarr/raw"), t.path("zarr2-got.zarr/raw")];
        let mut args = vec!["ngff"];
        args.extend(groups.iter().map(String::as_str));
        run_python(&python, "check_pyramid_metadata.py", &args);
    }
}

/// `n5 cp SRC DST --pyramid` is `n5 pyramid SRC DST`: here from an N5
/// hyperstack (`x, y, c, z, t`) into sharded OME-NGFF 0.5, `s0` permuted.
#[test]
fn cp_pyramid_is_pyramid() {
    let t = TempDir::new("pyr-cp");
    let root = t.path("vol.n5");
    let c = container(&root, Fmt::N5);
    let mut rng = Rng(37);
    let dims = [23u64, 17, 2, 7, 3];
    let n: u64 = dims.iter().product();
    let data = values(&DataType::I16, n, Kind::Image, &mut rng);
    write_source(&c, "hs", &DataType::I16, &dims, &[8, 8, 1, 4, 1], &data);
    c.set_attributes(
        "hs",
        &obj(
            json!({"axes": ["x", "y", "c", "z", "t"], "resolution": [4, 4, 1, 40, 2],
            "units": ["nm", "nm", "", "nm", "s"], "note": "kept"}),
        ),
    )
    .unwrap();
    let src = format!("{root}/hs");
    let opts = [
        "--format",
        "zarr3",
        "-b",
        "8,8,1,4,1",
        "--shard",
        "16,16,2,4,1",
        "-c",
        "zstd",
        "--min-size",
        "4",
    ];
    let (by_cp, by_pyramid) = (t.path("cp.zarr"), t.path("pyramid.zarr"));
    let cp_dst = format!("{by_cp}/raw");
    let mut a = vec!["cp", src.as_str(), cp_dst.as_str(), "--pyramid"];
    a.extend(opts);
    ok(&a);
    let dst = format!("{by_pyramid}/raw");
    let mut a = vec!["pyramid", src.as_str(), dst.as_str()];
    a.extend(opts);
    ok(&a);
    assert_same_tree(&by_cp, &by_pyramid);
    assert_eq!(
        read_json(format!("{by_cp}/raw/s0/zarr.json"))["dimension_names"],
        json!(["t", "c", "z", "y", "x"])
    );
    let (_, got_dims, _) = whole(&Container::open(&by_cp, Mode::Read).unwrap(), "raw/s0");
    assert_eq!(got_dims, vec![23, 17, 7, 2, 3]);
}

/// BigDataViewer stacks are `x, y, z` whatever the source's order: a
/// source named `z, y, x` is transposed into them.
#[test]
fn bdv_stacks_are_x_y_z_whatever_the_source_order() {
    let t = TempDir::new("pyr-bdv-zyx");
    let root = t.path("vol.n5");
    let c = container(&root, Fmt::N5);
    let dims = [3u64, 4, 5];
    let data: Vec<u8> = (0..60u8).collect();
    write_source(&c, "v", &DataType::U8, &dims, &[3, 4, 5], &data);
    let out = t.path("out.n5");
    ok(&[
        "pyramid",
        &format!("{root}/v"),
        &out,
        "--format",
        "bdv",
        "--axes",
        "z,y,x",
        "--levels",
        "1",
    ]);
    let (_, got_dims, got) = whole(
        &Container::open(&out, Mode::Read).unwrap(),
        "setup0/timepoint0/s0",
    );
    assert_eq!(got_dims, vec![5, 4, 3]);
    for z in 0..3usize {
        for y in 0..4usize {
            for x in 0..5usize {
                assert_eq!(
                    got[x + 5 * (y + 4 * z)],
                    data[z + 3 * (y + 4 * x)],
                    "x{x} y{y} z{z}"
                );
            }
        }
    }
}
