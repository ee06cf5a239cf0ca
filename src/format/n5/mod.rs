//! N5: a node's attributes.json holds its user attributes and, for a
//! dataset, its metadata (`metadata`); blocks carry a big-endian header
//! before their compressed payload (`block`).

pub(crate) mod array;
pub mod block;
pub mod metadata;
