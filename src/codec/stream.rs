//! Reading a streaming decompressor into a fixed output buffer: the shared
//! decode loop of the gzip, zlib, bzip2, xz and zstd codecs.

use std::io::{ErrorKind as IoKind, Read};

use crate::error::{Error, Result};

/// Fills `out` from `reader`, a decompressor over a block payload.
///
/// Reads exactly `out.len()` bytes; a stream that ends earlier is an
/// [`ErrorKind::Codec`](crate::error::ErrorKind::Codec) error. Afterwards it asks for
/// one more byte: when the stream ends right there, the decompressor thereby
/// checks its trailer (gzip CRC32, zlib Adler-32, xz CRC64, zstd checksum); when
/// it holds more data, that data is ignored and decoded no further.
pub(crate) fn read_exact_then_probe(
    mut reader: impl Read,
    out: &mut [u8],
    what: &str,
) -> Result<()> {
    let mut filled = 0;
    while filled < out.len() {
        match reader.read(&mut out[filled..]) {
            Ok(0) => {
                return Err(Error::codec(format!(
                    "{what}: the stream ends after {filled} of the {} bytes expected",
                    out.len()
                )))
            }
            Ok(n) => filled += n,
            Err(e) if e.kind() == IoKind::Interrupted => {}
            Err(e) => {
                return Err(Error::codec(format!(
                    "{what}: corrupt data after {filled} of {} bytes: {e}",
                    out.len()
                )))
            }
        }
    }
    let mut probe = [0u8; 1];
    loop {
        match reader.read(&mut probe) {
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == IoKind::Interrupted => {}
            Err(e) => {
                return Err(Error::codec(format!(
                    "{what}: corrupt data at the end of the stream: {e}"
                )))
            }
        }
    }
}

/// `ceil(log2(n))` for `n >= 1` (0 for `n <= 1`).
pub(crate) fn ceil_log2(n: usize) -> u32 {
    if n <= 1 {
        0
    } else {
        usize::BITS - (n - 1).leading_zeros()
    }
}
