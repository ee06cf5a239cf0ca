//! The HDF5 file signature and where libhdf5 looks for it: byte 0, then
//! 512, 1024, 2048, … (every power of two from 512) up to the file's size.
//! A file with a user block (libn5's own HDF5 shards with the index at the
//! start, files made with `h5jam`) has its superblock at one of those
//! offsets. Pure Rust and usable without the `hdf5` feature: it decides
//! whether an existing regular file is HDF5 (format detection), and the
//! libhdf5 layer refuses files without it before libhdf5 sees them.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The 8 bytes at the start of every HDF5 superblock.
pub const SIGNATURE: [u8; 8] = *b"\x89HDF\r\n\x1a\n";

/// The offsets libhdf5 searches for the signature in a file of `size`
/// bytes: 0, 512, 1024, 2048, …, each with room for the 8 signature bytes.
pub(crate) fn candidate_offsets(size: u64) -> impl Iterator<Item = u64> {
    std::iter::once(0u64)
        .chain(std::iter::successors(Some(512u64), |&o| o.checked_mul(2)))
        .take_while(move |&o| {
            o.checked_add(SIGNATURE.len() as u64)
                .is_some_and(|end| end <= size)
        })
}

/// The offset of the HDF5 signature in `file` (of `size` bytes), that is
/// the size of its user block; `None` when there is no signature at any
/// offset libhdf5 searches. The few bytes are read without the kernel's
/// read-ahead (see `os::Access`), which is back on for `file` after.
pub(crate) fn find_in(file: &File, size: u64) -> io::Result<Option<u64>> {
    use crate::os::{advise_file, Access};
    advise_file(file, Access::Scattered);
    let found = search(file, size);
    advise_file(file, Access::Normal);
    found
}

/// [`find_in`] with the descriptor's read-ahead as it is.
fn search(file: &File, size: u64) -> io::Result<Option<u64>> {
    let mut bytes = [0u8; 8];
    for offset in candidate_offsets(size) {
        match file.read_exact_at(&mut bytes, offset) {
            Ok(()) if bytes == SIGNATURE => return Ok(Some(offset)),
            Ok(()) => {}
            // The file shrank while it was searched: no signature further on.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

/// The offset of the HDF5 signature in the regular file at `path`;
/// `None` when it has none. Errors are those of opening and reading the
/// file (a missing file is [`io::ErrorKind::NotFound`]).
pub(crate) fn find(path: &Path) -> io::Result<Option<u64>> {
    let file = File::open(path)?;
    let size = file.metadata()?.len();
    find_in(&file, size)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let path =
            std::env::temp_dir().join(format!("n5-hdf5-signature-{}-{name}", std::process::id()));
        std::fs::write(&path, bytes).unwrap();
        path
    }

    #[test]
    fn offsets_are_zero_then_powers_of_two_from_512_within_the_file() {
        let offsets: Vec<u64> = candidate_offsets(4104).collect();
        assert_eq!(offsets, vec![0, 512, 1024, 2048, 4096]);
        assert_eq!(candidate_offsets(4103).last(), Some(2048));
        assert_eq!(candidate_offsets(7).count(), 0);
        assert_eq!(candidate_offsets(8).collect::<Vec<_>>(), vec![0]);
        // A huge size never overflows.
        assert_eq!(candidate_offsets(u64::MAX).count(), 1 + 55);
    }

    #[test]
    fn finds_the_signature_at_each_searched_offset_and_nowhere_else() {
        for at in [0usize, 512, 1024, 2048, 8192] {
            let mut bytes = vec![0u8; at + 100];
            bytes[at..at + 8].copy_from_slice(&SIGNATURE);
            let path = scratch(&format!("at-{at}"), &bytes);
            assert_eq!(find(&path).unwrap(), Some(at as u64), "signature at {at}");
            std::fs::remove_file(&path).unwrap();
        }
        // Offsets libhdf5 does not search: 256, 768, 513.
        for at in [256usize, 768, 513] {
            let mut bytes = vec![0u8; 4096];
            bytes[at..at + 8].copy_from_slice(&SIGNATURE);
            let path = scratch(&format!("not-{at}"), &bytes);
            assert_eq!(find(&path).unwrap(), None, "signature at {at}");
            std::fs::remove_file(&path).unwrap();
        }
        // A signature cut off by the end of the file, and an empty file.
        let path = scratch("cut", &SIGNATURE[..7]);
        assert_eq!(find(&path).unwrap(), None);
        std::fs::write(&path, b"").unwrap();
        assert_eq!(find(&path).unwrap(), None);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(
            find(Path::new("/nonexistent/n5-signature"))
                .unwrap_err()
                .kind(),
            io::ErrorKind::NotFound
        );
    }
}
