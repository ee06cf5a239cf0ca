//! The downsampling kernels of pyramid.md: one box of the previous level in, one box of the next out.

/// How the voxels of one window become one voxel of the next level
/// (pyramid.md, "Downsampling": tensorstore's semantics).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// The window's first voxel.
    Stride,
    /// The mean, rounded to nearest with ties to even for integers.
    Mean,
    /// The lower median.
    Median,
    /// The most frequent value, the smallest among ties.
    Mode,
    /// The smallest value.
    Min,
    /// The largest value.
    Max,
}

impl Method {
    /// The method named `name` (`"mean"`), or `None`.
    pub fn parse(name: &str) -> Option<Method> {
        Some(match name {
            "stride" => Method::Stride,
            "mean" => Method::Mean,
            "median" => Method::Median,
            "mode" => Method::Mode,
            "min" => Method::Min,
            "max" => Method::Max,
            _ => return None,
        })
    }

    /// The method's name as options and metadata spell it (`"mean"`).
    pub fn name(self) -> &'static str {
        match self {
            Method::Stride => "stride",
            Method::Mean => "mean",
            Method::Median => "median",
            Method::Mode => "mode",
            Method::Min => "min",
            Method::Max => "max",
        }
    }

    /// Whether a level voxel stands for its whole window (every method but
    /// `stride`), which places it at the window's centre (pyramid.md, "Geometry").
    pub fn is_pooling(self) -> bool {
        self != Method::Stride
    }
}
