//! The downsampling kernels (`n5::pyramid::downsample`) against tensorstore's
//! `downsample` driver, run by tests/peers/downsample_oracle.py.
//!
//! Random arrays of the ten numeric types (ranks 2–5, odd sizes, factors 1–4
//! per axis; full-range values, label-like values with many ties including
//! negative ones and 64-bit extremes, float specials: NaN, ±inf, −0.0,
//! subnormals) go through every method here and through tensorstore, and the
//! results must agree: bit for bit, except that a float mean may differ by
//! 2·m·ε·mean|x| over its window (m the window size), ±0 are alike, and a
//! median or mode over a window holding NaN is checked against the contract's
//! rule (the non-NaN values; NaN when there are none), where tensorstore's
//! result depends on its sort. Every axis has extent ≥ 2, so tensorstore's
//! copy of single-voxel inputs never applies.
//!
//! The peers' Python comes from `N5_PEER_PYTHON`; without it the test says so
//! and passes, unless `N5_REQUIRE_PEERS=1`.

mod common;

use std::path::Path;
use std::process::Command;

use n5::pyramid::downsample::{downsample, out_shape, Method};
use n5::DataType;
use serde_json::json;

/// splitmix64: a small deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.below(from.len() as u64) as usize]
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// What the values of a test array look like.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// Any value of the type (floats: spread over many magnitudes, finite).
    Random,
    /// A few values, so that windows have ties (negative ones for signed types).
    Labels,
    /// Extremes of the type, and for floats NaN, ±inf, ±0 and subnormals.
    Specials,
}

/// One element type as the test sees it.
trait TestElem: Copy + PartialEq + PartialOrd {
    const DTYPE: DataType;
    const NUMPY: &'static str;
    const SIZE: usize;
    const FLOAT: bool;
    fn make(rng: &mut Rng, kind: Kind) -> Self;
    fn load(b: &[u8]) -> Self;
    fn put(self, out: &mut Vec<u8>);
    fn f64(self) -> f64;
    fn epsilon() -> f64;
}

macro_rules! int_elem {
    ($t:ty, $dtype:ident, $np:literal, [$($label:expr),*]) => {
        impl TestElem for $t {
            const DTYPE: DataType = DataType::$dtype;
            const NUMPY: &'static str = $np;
            const SIZE: usize = std::mem::size_of::<$t>();
            const FLOAT: bool = false;
            fn make(rng: &mut Rng, kind: Kind) -> Self {
                match kind {
                    Kind::Random => rng.next() as $t,
                    Kind::Labels => rng.pick(&[$($label as $t),*]),
                    Kind::Specials => rng.pick(&[
                        <$t>::MIN,
                        <$t>::MAX,
                        <$t>::MIN.wrapping_add(1),
                        <$t>::MAX - 1,
                        0 as $t,
                        1 as $t,
                        <$t>::MAX / 2,
                        <$t>::MAX / 2 + 1,
                    ]),
                }
            }
            fn load(b: &[u8]) -> Self {
                <$t>::from_ne_bytes(b.try_into().unwrap())
            }
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_ne_bytes());
            }
            fn f64(self) -> f64 {
                self as f64
            }
            fn epsilon() -> f64 {
                0.0
            }
        }
    };
}
int_elem!(u8, U8, "uint8", [0, 1, 2, 7, 255]);
int_elem!(u16, U16, "uint16", [0, 3, 4, 1000, 65535]);
int_elem!(u32, U32, "uint32", [0, 5, 6, 70000, u32::MAX]);
int_elem!(u64, U64, "uint64", [0, 1, 2, u64::MAX, u64::MAX - 1]);
int_elem!(i8, I8, "int8", [-128, -3, -2, -1, 0, 1, 2, 127]);
int_elem!(i16, I16, "int16", [-32768, -3, -2, -1, 0, 1, 2, 32767]);
int_elem!(i32, I32, "int32", [i32::MIN, -3, -2, -1, 0, 1, 2, i32::MAX]);
int_elem!(
    i64,
    I64,
    "int64",
    [i64::MIN, i64::MIN + 1, -3, -2, -1, 0, 1, 2, i64::MAX]
);

macro_rules! float_elem {
    ($t:ty, $dtype:ident, $np:literal) => {
        impl TestElem for $t {
            const DTYPE: DataType = DataType::$dtype;
            const NUMPY: &'static str = $np;
            const SIZE: usize = std::mem::size_of::<$t>();
            const FLOAT: bool = true;
            fn make(rng: &mut Rng, kind: Kind) -> Self {
                let normal = |rng: &mut Rng| {
                    let mag = 10f64.powi(rng.below(9) as i32 - 4);
                    ((rng.unit() * 2.0 - 1.0) * mag) as $t
                };
                match kind {
                    Kind::Random => normal(rng),
                    Kind::Labels => rng.pick(&[-2.5, -1.0, -0.0, 0.0, 1.0, 3.0, 3.0]),
                    Kind::Specials => match rng.below(12) {
                        0 => <$t>::NAN,
                        1 => -<$t>::NAN,
                        2 => <$t>::INFINITY,
                        3 => <$t>::NEG_INFINITY,
                        4 => -0.0,
                        5 => 0.0,
                        6 => <$t>::MIN_POSITIVE / 4.0,
                        7 => rng.pick(&[1.0, 2.0, -1.0]),
                        _ => normal(rng),
                    },
                }
            }
            fn load(b: &[u8]) -> Self {
                <$t>::from_ne_bytes(b.try_into().unwrap())
            }
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_ne_bytes());
            }
            fn f64(self) -> f64 {
                self as f64
            }
            fn epsilon() -> f64 {
                <$t>::EPSILON as f64
            }
        }
    };
}
float_elem!(f32, F32, "float32");
float_elem!(f64, F64, "float64");

/// One array and how to downsample it.
struct Case {
    id: usize,
    dtype: DataType,
    numpy: &'static str,
    shape: Vec<u64>,
    factors: Vec<u64>,
    method: Method,
    kind: Kind,
    input: Vec<u8>,
}

/// Shapes and factors (N5 order) every type and method goes through, besides
/// random ones.
const GEOMETRIES: &[(&[u64], &[u64])] = &[
    (&[9, 7], &[2, 3]),
    (&[17, 11], &[4, 1]),
    (&[2, 13], &[1, 4]),
    (&[7, 5, 9], &[2, 2, 2]),
    (&[33, 15, 9], &[2, 2, 2]),
    (&[131, 10, 6], &[2, 2, 3]),
    (&[11, 6, 5], &[3, 2, 1]),
    (&[5, 3, 7, 3], &[3, 1, 2, 2]),
    (&[5, 3, 3, 5, 3], &[2, 3, 1, 4, 2]),
];

fn make_cases<E: TestElem>(rng: &mut Rng, cases: &mut Vec<Case>) {
    for method in [
        Method::Stride,
        Method::Mean,
        Method::Median,
        Method::Mode,
        Method::Min,
        Method::Max,
    ] {
        for kind in [Kind::Random, Kind::Labels, Kind::Specials] {
            let mut geoms: Vec<(Vec<u64>, Vec<u64>)> = GEOMETRIES
                .iter()
                .map(|(s, f)| (s.to_vec(), f.to_vec()))
                .collect();
            for _ in 0..2 {
                let rank = 2 + rng.below(4) as usize;
                let shape: Vec<u64> = (0..rank).map(|_| 2 + rng.below(10)).collect();
                let mut factors: Vec<u64> = (0..rank).map(|_| 1 + rng.below(4)).collect();
                if factors.iter().all(|&f| f == 1) {
                    factors[rng.below(rank as u64) as usize] = 2;
                }
                geoms.push((shape, factors));
            }
            for (shape, factors) in geoms {
                let total: u64 = shape.iter().product();
                let mut input = Vec::with_capacity(total as usize * E::SIZE);
                for _ in 0..total {
                    E::make(rng, kind).put(&mut input);
                }
                cases.push(Case {
                    id: cases.len(),
                    dtype: E::DTYPE,
                    numpy: E::NUMPY,
                    shape,
                    factors,
                    method,
                    kind,
                    input,
                });
            }
        }
    }
}

/// Linear indices (dimension 0 fastest) of the window of output voxel `k`.
fn window(shape: &[u64], factors: &[u64], k: usize) -> Vec<usize> {
    let oshape = out_shape(shape, factors);
    let rank = shape.len();
    let mut rest = k as u64;
    let mut lo = vec![0u64; rank];
    let mut hi = vec![0u64; rank];
    for d in 0..rank {
        let p = rest % oshape[d];
        rest /= oshape[d];
        lo[d] = p * factors[d];
        hi[d] = (lo[d] + factors[d]).min(shape[d]);
    }
    let mut idx = lo.clone();
    let mut out = Vec::new();
    'all: loop {
        let mut lin = 0u64;
        let mut stride = 1u64;
        for d in 0..rank {
            lin += idx[d] * stride;
            stride *= shape[d];
        }
        out.push(lin as usize);
        for d in 0..rank {
            idx[d] += 1;
            if idx[d] < hi[d] {
                continue 'all;
            }
            idx[d] = lo[d];
        }
        break;
    }
    out
}

/// The contract's median or mode of `values`: over the non-NaN values, NaN
/// when there are none.
fn rule(mode: bool, values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    if !mode {
        return v[(v.len() - 1) / 2];
    }
    let (mut best, mut best_len, mut i) = (v[0], 0, 0);
    while i < v.len() {
        let run = v[i..].iter().take_while(|&&x| x == v[i]).count();
        if run > best_len {
            best = v[i];
            best_len = run;
        }
        i += run;
    }
    best
}

/// Whether two floats are the same value for the comparison (NaN is NaN, ±0 alike).
fn same(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

/// Tallies of the comparison.
#[derive(Default)]
struct Tally {
    voxels: usize,
    float_means: usize,
    float_means_exact: usize,
    by_rule: usize,
    failures: Vec<String>,
}

/// Compares libn5's output with tensorstore's for one case of type `E`.
fn compare<E: TestElem>(case: &Case, ours: &[u8], theirs: &[u8], tally: &mut Tally) {
    let fail = |tally: &mut Tally, k: usize, what: String| {
        if tally.failures.len() < 30 {
            tally.failures.push(format!(
                "case {} ({} {} {:?} shape {:?} factors {:?}) voxel {k}: {what}",
                case.id,
                case.numpy,
                case.method.name(),
                case.kind,
                case.shape,
                case.factors
            ));
        } else {
            tally.failures.push(String::new());
        }
    };
    if ours.len() != theirs.len() {
        fail(
            tally,
            0,
            format!(
                "{} bytes from libn5, {} from tensorstore",
                ours.len(),
                theirs.len()
            ),
        );
        return;
    }
    let input: Vec<E> = case.input.chunks_exact(E::SIZE).map(E::load).collect();
    for (k, (a, b)) in ours
        .chunks_exact(E::SIZE)
        .zip(theirs.chunks_exact(E::SIZE))
        .enumerate()
    {
        tally.voxels += 1;
        if !E::FLOAT {
            if a != b {
                let w: Vec<f64> = window(&case.shape, &case.factors, k)
                    .into_iter()
                    .map(|i| input[i].f64())
                    .collect();
                fail(
                    tally,
                    k,
                    format!(
                        "libn5 {} tensorstore {} (window {w:?})",
                        E::load(a).f64(),
                        E::load(b).f64()
                    ),
                );
            }
            continue;
        }
        let (x, y) = (E::load(a).f64(), E::load(b).f64());
        let w: Vec<f64> = window(&case.shape, &case.factors, k)
            .into_iter()
            .map(|i| input[i].f64())
            .collect();
        let ok = match case.method {
            Method::Mean => {
                tally.float_means += 1;
                // Identical bits, or both NaN (whose sign and payload vary).
                if a == b || (x.is_nan() && y.is_nan()) {
                    tally.float_means_exact += 1;
                }
                let mean_abs = w.iter().map(|v| v.abs()).sum::<f64>() / w.len() as f64;
                let tolerance = 2.0 * w.len() as f64 * E::epsilon() * mean_abs;
                same(x, y) || (x.is_finite() && y.is_finite() && (x - y).abs() <= tolerance)
            }
            Method::Median | Method::Mode if w.iter().any(|v| v.is_nan()) => {
                tally.by_rule += 1;
                same(x, rule(case.method == Method::Mode, &w))
            }
            _ => same(x, y),
        };
        if !ok {
            fail(
                tally,
                k,
                format!("libn5 {x:e} tensorstore {y:e} (window {w:?})"),
            );
        }
    }
}

#[test]
fn kernels_match_tensorstore() {
    let Some(python) = common::peer_python("downsample_oracle") else {
        return;
    };
    let mut rng = Rng(0x5EED_D0C5_A3F1_0001);
    let mut cases = Vec::new();
    make_cases::<u8>(&mut rng, &mut cases);
    make_cases::<u16>(&mut rng, &mut cases);
    make_cases::<u32>(&mut rng, &mut cases);
    make_cases::<u64>(&mut rng, &mut cases);
    make_cases::<i8>(&mut rng, &mut cases);
    make_cases::<i16>(&mut rng, &mut cases);
    make_cases::<i32>(&mut rng, &mut cases);
    make_cases::<i64>(&mut rng, &mut cases);
    make_cases::<f32>(&mut rng, &mut cases);
    make_cases::<f64>(&mut rng, &mut cases);

    let scratch = common::Scratch::new("downsample-oracle");
    let dir = scratch.path();
    let manifest: Vec<_> = cases
        .iter()
        .map(|c| {
            std::fs::write(dir.join(format!("{}.in", c.id)), &c.input).unwrap();
            json!({"id": c.id, "dtype": c.numpy, "shape": c.shape, "factors": c.factors,
                   "method": c.method.name()})
        })
        .collect();
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_vec(&manifest).unwrap(),
    )
    .unwrap();

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/downsample_oracle.py");
    let output = Command::new(&python)
        .arg(&script)
        .arg(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} {}: {e}", python.display(), script.display()));
    eprint!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "{} failed: {}",
        script.display(),
        output.status
    );

    let mut tally = Tally::default();
    for case in &cases {
        let n: u64 = out_shape(&case.shape, &case.factors).iter().product();
        let mut ours =
            vec![0u8; n as usize * case.input.len() / case.shape.iter().product::<u64>() as usize];
        downsample(
            &case.dtype,
            case.method,
            &case.input,
            &case.shape,
            &case.factors,
            &mut ours,
        )
        .unwrap_or_else(|e| panic!("case {}: {e}", case.id));
        let theirs = std::fs::read(dir.join(format!("{}.out", case.id))).unwrap();
        match case.dtype {
            DataType::U8 => compare::<u8>(case, &ours, &theirs, &mut tally),
            DataType::U16 => compare::<u16>(case, &ours, &theirs, &mut tally),
            DataType::U32 => compare::<u32>(case, &ours, &theirs, &mut tally),
            DataType::U64 => compare::<u64>(case, &ours, &theirs, &mut tally),
            DataType::I8 => compare::<i8>(case, &ours, &theirs, &mut tally),
            DataType::I16 => compare::<i16>(case, &ours, &theirs, &mut tally),
            DataType::I32 => compare::<i32>(case, &ours, &theirs, &mut tally),
            DataType::I64 => compare::<i64>(case, &ours, &theirs, &mut tally),
            DataType::F32 => compare::<f32>(case, &ours, &theirs, &mut tally),
            DataType::F64 => compare::<f64>(case, &ours, &theirs, &mut tally),
            _ => unreachable!(),
        }
    }
    eprintln!(
        "downsample_oracle: {} arrays, {} output voxels compared; float means bit-identical: {} of {}; \
         median/mode windows with NaN checked by the rule: {}",
        cases.len(),
        tally.voxels,
        tally.float_means_exact,
        tally.float_means,
        tally.by_rule
    );
    let count = tally.failures.len();
    let shown: Vec<&String> = tally.failures.iter().filter(|f| !f.is_empty()).collect();
    assert!(
        tally.failures.is_empty(),
        "{count} output voxels differ from tensorstore's:\n{}",
        shown
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}
