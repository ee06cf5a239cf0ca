//! Test data: a tiny deterministic PRNG (splitmix64 with Box-Muller normals),
//! the synthetic microscopy-like uint16 volume and the random block positions.
//!
//! The volume has a few smooth blobs (about 30% of the voxels) with values
//! around 1000-3000 and Gaussian noise of sigma 30, over a background near 100
//! with sigma 3. Every z slice has its own generator seeded from the slice
//! index, so the volume is the same whatever the number of threads.

use std::thread;

/// splitmix64: a 64-bit generator that passes BigCrush, in four lines.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
    /// The second normal of the last Box-Muller pair, when unused.
    spare: Option<f64>,
}

impl SplitMix64 {
    /// A generator started at `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64 {
            state: seed,
            spare: None,
        }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform number in (0, 1].
    fn next_unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A uniform integer in `0..n` (n > 0; the modulo bias is negligible here).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// A standard normal number (Box-Muller, both values of a pair used).
    pub fn normal(&mut self) -> f64 {
        if let Some(z) = self.spare.take() {
            return z;
        }
        let r = (-2.0 * self.next_unit().ln()).sqrt();
        let (s, c) = (std::f64::consts::TAU * self.next_unit()).sin_cos();
        self.spare = Some(r * s);
        r * c
    }
}

/// Seed of the volume's noise (the slice index is mixed in).
const VOLUME_SEED: u64 = 0x6E35_B0B5_2024_0001;
/// Seed of the random block positions.
const POSITIONS_SEED: u64 = 0x6E35_B0B5_2024_0002;

/// One blob: centre and radius in units of the volume's extent (0..1 on
/// each axis, so blobs stretch with non-cubic volumes).
struct Blob {
    centre: [f64; 3],
    radius: f64,
}

/// The blobs. With the threshold below they cover about 30% of the volume.
const BLOBS: [Blob; 7] = [
    Blob {
        centre: [0.28, 0.30, 0.30],
        radius: 0.37,
    },
    Blob {
        centre: [0.74, 0.27, 0.62],
        radius: 0.34,
    },
    Blob {
        centre: [0.33, 0.73, 0.70],
        radius: 0.36,
    },
    Blob {
        centre: [0.76, 0.76, 0.24],
        radius: 0.32,
    },
    Blob {
        centre: [0.55, 0.52, 0.48],
        radius: 0.225,
    },
    Blob {
        centre: [0.12, 0.62, 0.18],
        radius: 0.225,
    },
    Blob {
        centre: [0.85, 0.55, 0.88],
        radius: 0.205,
    },
];
/// A voxel is foreground where the summed blob field exceeds this.
const THRESHOLD: f64 = 0.25;

/// The blob field at a point: the sum over blobs of the compact, smooth
/// kernel `(1 - d²/r²)²` (zero beyond the radius).
fn field(p: [f64; 3]) -> f64 {
    BLOBS
        .iter()
        .map(|b| {
            let d2: f64 = (0..3).map(|i| (p[i] - b.centre[i]).powi(2)).sum();
            let q = 1.0 - d2 / (b.radius * b.radius);
            if q > 0.0 {
                q * q
            } else {
                0.0
            }
        })
        .sum()
}

/// The voxel at (x, y, z) of a volume of `dims`, with noise from `rng`;
/// returns the value and whether it is foreground.
fn voxel(dims: [u64; 3], x: u64, y: u64, z: u64, rng: &mut SplitMix64) -> (u16, bool) {
    let p = [
        (x as f64 + 0.5) / dims[0] as f64,
        (y as f64 + 0.5) / dims[1] as f64,
        (z as f64 + 0.5) / dims[2] as f64,
    ];
    let f = field(p);
    let (mean, sigma, fg) = if f > THRESHOLD {
        // 1000 at the surface rising smoothly to 3000 deep inside.
        let t = ((f - THRESHOLD) / 0.75).min(1.0);
        (1000.0 + 2000.0 * t, 30.0, true)
    } else {
        (100.0, 3.0, false)
    };
    let v = (mean + sigma * rng.normal()).round().clamp(0.0, 65535.0);
    (v as u16, fg)
}

/// The volume of `dims` (dimension 0 fastest) as native-endian uint16 bytes,
/// and its foreground fraction. Uses every core; the result does not depend
/// on their number.
pub fn generate_volume(dims: [u64; 3]) -> (Vec<u8>, f64) {
    let slice_bytes = (dims[0] * dims[1]) as usize * 2;
    let mut out = vec![0u8; slice_bytes * dims[2] as usize];
    let workers = thread::available_parallelism().map_or(1, |n| n.get());
    let slices_per_worker = (dims[2] as usize).div_ceil(workers).max(1);
    let foreground: u64 = thread::scope(|s| {
        let handles: Vec<_> = out
            .chunks_mut(slice_bytes * slices_per_worker)
            .enumerate()
            .map(|(w, part)| {
                s.spawn(move || {
                    let mut fg = 0u64;
                    for (i, slice) in part.chunks_mut(slice_bytes).enumerate() {
                        let z = (w * slices_per_worker + i) as u64;
                        let mut rng = SplitMix64::new(VOLUME_SEED ^ z.wrapping_mul(0x9E37_79B9));
                        for (j, px) in slice.chunks_exact_mut(2).enumerate() {
                            let (x, y) = (j as u64 % dims[0], j as u64 / dims[0]);
                            let (v, is_fg) = voxel(dims, x, y, z, &mut rng);
                            px.copy_from_slice(&v.to_ne_bytes());
                            fg += u64::from(is_fg);
                        }
                    }
                    fg
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("volume generator thread"))
            .sum()
    });
    let fraction = foreground as f64 / (dims.iter().product::<u64>()) as f64;
    (out, fraction)
}

/// `count` random block grid positions (with repetition) in a grid of `grid`
/// blocks, always the same for the same grid.
pub fn random_positions(grid: [u64; 3], count: usize) -> Vec<[u64; 3]> {
    let mut rng = SplitMix64::new(POSITIONS_SEED);
    (0..count)
        .map(|_| [rng.below(grid[0]), rng.below(grid[1]), rng.below(grid[2])])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normals_have_unit_variance() {
        let mut rng = SplitMix64::new(1);
        let n = 100_000;
        let xs: Vec<f64> = (0..n).map(|_| rng.normal()).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(mean.abs() < 0.02, "mean {mean}");
        assert!((var - 1.0).abs() < 0.02, "variance {var}");
    }

    #[test]
    fn volume_is_deterministic_and_about_30_percent_foreground() {
        let (a, fa) = generate_volume([64, 48, 40]);
        let (b, _) = generate_volume([64, 48, 40]);
        assert_eq!(a, b);
        assert!((0.2..0.4).contains(&fa), "foreground {fa}");
    }
}
