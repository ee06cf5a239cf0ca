//! Multiscale pyramids (design: pyramid.md): the levels `s0…sN` of a numeric
//! dataset, built with tensorstore's downsampling semantics, and the metadata
//! viewers read. Sits above the API layer: it reads and writes through
//! [`Container`](crate::container::Container) and
//! [`Dataset`](crate::dataset::Dataset) and never names a storage backend.
//!
//! - [`downsample`]: the reduction kernels (stride, mean, median, mode, min,
//!   max) over one box of the previous level.
//! - [`plan`]: options, axes, units, factors and levels.
//! - [`meta`]: the N5, OME-NGFF 0.4/0.5 and BigDataViewer metadata documents.

pub mod build;
pub mod downsample;
pub mod grid;
pub mod meta;
pub mod plan;
