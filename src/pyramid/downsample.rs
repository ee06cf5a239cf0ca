//! The downsampling kernels of pyramid.md: one box of the previous level in, one box of the next out.
