//! Operating-system calls libn5 makes beyond what std offers: the
//! huge-page advice and the faulting in ahead of large region reads'
//! outputs, read-ahead advice for files read in scattered small pieces,
//! positioned reads into a buffer's spare capacity, and whether a range of
//! a file is in the page cache. Each call is wrapped in a safe function
//! here, as the codec bindings wrap their C libraries; on systems without
//! it the wrapper does the same with std alone.

use std::fs::File;
use std::io;

/// Ask the kernel to back the parts of `buf` that are whole 2 MiB-aligned
/// stretches with transparent huge pages (`madvise(MADV_HUGEPAGE)`) before
/// a region read fills all of it. Where the caller's buffer is freshly
/// allocated, this takes the page faults of filling it from one per 4 KiB
/// to one per 2 MiB: for a 256 MiB buffer about 50 ms where it was
/// 140 ms. It changes no byte of `buf`; with transparent huge pages set to
/// `never` by the administrator, or on other systems, nothing happens.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) fn advise_huge_pages(buf: &mut [u8]) {
    const HUGE: usize = 2 << 20;
    let start = buf.as_mut_ptr() as usize;
    let (first, end) = (
        start.next_multiple_of(HUGE),
        (start + buf.len()) & !(HUGE - 1),
    );
    if end > first {
        // SAFETY: [first, end) lies inside `buf`, which is borrowed mutably
        // for the call, and starts on a page boundary as madvise requires.
        // MADV_HUGEPAGE only changes how the kernel backs those pages, never
        // their contents; a failure (such as an unsupported kernel) leaves
        // the memory as it was and is ignored.
        unsafe {
            libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
        }
    }
}

/// Without madvise the advice is skipped.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(crate) fn advise_huge_pages(_buf: &mut [u8]) {}

/// Fault in, writable, the pages of the `len` bytes at address `start`
/// (`madvise(MADV_POPULATE_WRITE)`, Linux 5.14 and later), a stretch at a
/// time, until done or until `stop` is set. A region read runs this on a
/// thread of its own over its fresh output while the first blocks are on
/// their way, so that the kernel's zeroing of new pages (on a virtual
/// machine also the host's backing of them: up to a second for 256 MiB)
/// is not on the decoding threads' path. Returns whether the kernel did
/// it (`false`: unsupported, or stopped).
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) fn prefault(start: usize, len: usize, stop: &std::sync::atomic::AtomicBool) -> bool {
    use std::sync::atomic::Ordering;
    const PAGE: usize = 4096;
    const STRETCH: usize = 8 << 20;
    let (first, end) = (start.next_multiple_of(PAGE), (start + len) & !(PAGE - 1));
    let mut at = first;
    while at < end {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let n = STRETCH.min(end - at);
        // SAFETY: [at, at + n) lies inside the caller's output buffer, which
        // stays allocated until this thread is joined, and starts on a page
        // boundary as madvise requires. MADV_POPULATE_WRITE only makes the
        // pages present and writable, as a write of each would, without
        // reading or changing a byte of them: a page already present is
        // left as it is, a new anonymous page reads as the zeros it would
        // have read anyway. So the threads writing the buffer meanwhile see
        // nothing of it. A failure (an older kernel) changes nothing.
        let r = unsafe { libc::madvise(at as *mut libc::c_void, n, libc::MADV_POPULATE_WRITE) };
        if r != 0 {
            return false;
        }
        at += n;
    }
    true
}

/// Whether every page of the `len` bytes at `start` is already present
/// (`mincore`): a buffer a program reads into again and again, which
/// needs no faulting in ahead. `false` when the kernel cannot tell.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) fn resident(start: usize, len: usize) -> bool {
    const PAGE: usize = 4096;
    if len == 0 {
        return true;
    }
    let first = start & !(PAGE - 1);
    let span = start + len - first;
    let mut pages = vec![0u8; span.div_ceil(PAGE)];
    // SAFETY: [first, first + span) covers only pages that hold bytes of
    // the caller's buffer, so they are mapped; `pages` has one byte per
    // page, which mincore fills; it changes no memory of the range.
    let r = unsafe { libc::mincore(first as *mut libc::c_void, span, pages.as_mut_ptr()) };
    r == 0 && pages.iter().all(|&p| p & 1 == 1)
}

/// Without mincore no buffer is known to be present.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(crate) fn resident(_start: usize, _len: usize) -> bool {
    false
}

/// Without madvise nothing is faulted in ahead.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(crate) fn prefault(_start: usize, _len: usize, _stop: &std::sync::atomic::AtomicBool) -> bool {
    false
}

/// How the kernel is to read ahead on one open file description
/// (`posix_fadvise` over the whole file).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// Reads fetch only the pages they ask for (`POSIX_FADV_RANDOM`): for
    /// a descriptor that reads small pieces at scattered places (HDF5
    /// metadata, a signature, single chunks). Without it the kernel takes
    /// such reads for the start of a stream and reads megabytes ahead,
    /// and the pages it marks make another descriptor's reads of the same
    /// file (a region's chunks) read on across every gap between them.
    Scattered,
    /// The kernel's usual read-ahead (`POSIX_FADV_NORMAL`).
    Normal,
}

/// Tells the kernel how `fd` will be read (see [`Access`]). Advice only:
/// it changes no data, and a failure (a pipe, an unsupported file system)
/// is ignored, leaving the kernel's default.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) fn advise_access(fd: std::os::fd::RawFd, access: Access) {
    let advice = match access {
        Access::Scattered => libc::POSIX_FADV_RANDOM,
        Access::Normal => libc::POSIX_FADV_NORMAL,
    };
    // SAFETY: posix_fadvise only takes the descriptor and integers; it
    // reads and writes no memory of ours, and on a closed or foreign
    // descriptor it fails with EBADF, which is ignored.
    unsafe {
        libc::posix_fadvise(fd, 0, 0, advice);
    }
}

/// Without posix_fadvise the kernel's default stays.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(crate) fn advise_access(_fd: i32, _access: Access) {}

/// [`advise_access`] for a file of ours.
#[cfg(unix)]
pub(crate) fn advise_file(file: &File, access: Access) {
    use std::os::fd::AsRawFd;
    advise_access(file.as_raw_fd(), access);
}

/// Without descriptors nothing is advised.
#[cfg(not(unix))]
pub(crate) fn advise_file(_file: &File, _access: Access) {}

/// Appends up to `len` bytes of `file` from `offset` to `out`, fewer where
/// the file ends first, and returns how many were appended. The bytes go
/// straight into `out`'s spare capacity with `pread` (one call for the
/// whole span in the usual case), with neither zero-filling the buffer
/// first nor the growing reads of `read_to_end`, nor moving the file's
/// position.
#[cfg(unix)]
pub(crate) fn read_at_into(
    file: &File,
    offset: u64,
    len: usize,
    out: &mut Vec<u8>,
) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    out.reserve(len);
    let mut got = 0usize;
    while got < len {
        let at = offset
            .checked_add(got as u64)
            .and_then(|a| libc::off_t::try_from(a).ok())
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "offset too large"))?;
        let spare = out.spare_capacity_mut();
        let want = (len - got).min(spare.len()).min(isize::MAX as usize);
        // SAFETY: `spare` is valid for writing `want` (≤ its length) bytes
        // and pread writes at most that many; the descriptor belongs to
        // `file`, borrowed for the call.
        let n = unsafe {
            libc::pread(
                file.as_raw_fd(),
                spare.as_mut_ptr().cast::<libc::c_void>(),
                want,
                at,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            break;
        }
        let n = n as usize;
        // SAFETY: pread initialised the first `n` (≤ want) bytes of the
        // spare capacity.
        unsafe { out.set_len(out.len() + n) };
        got += n;
    }
    Ok(got)
}

/// Whether all `len` bytes of `file` from `offset` are in the page cache
/// (`cachestat`, Linux 6.5 and later), asked without reading them, so
/// without starting any read-ahead; `None` when the kernel cannot tell
/// (older, or the call is filtered). Lets a reader that goes to the disk
/// in turns with others read what is in memory without waiting.
#[cfg(any(target_os = "linux", target_os = "android"))]
// Only the HDF5 backend reads ranges of one file in turns.
#[cfg_attr(not(feature = "hdf5"), allow(dead_code))]
pub(crate) fn in_page_cache(file: &File, offset: u64, len: u64) -> Option<bool> {
    use std::os::fd::AsRawFd;
    /// `cachestat`'s number, the same on every architecture (it came
    /// after the tables were unified).
    const SYS_CACHESTAT: libc::c_long = 451;
    #[repr(C)]
    struct Range {
        off: u64,
        len: u64,
    }
    #[repr(C)]
    #[derive(Default)]
    struct Stat {
        nr_cache: u64,
        nr_dirty: u64,
        nr_writeback: u64,
        nr_evicted: u64,
        nr_recently_evicted: u64,
    }
    const PAGE: u64 = 4096;
    if len == 0 {
        return Some(true);
    }
    let end = offset.checked_add(len)?;
    let pages = end.div_ceil(PAGE) - offset / PAGE;
    let range = Range { off: offset, len };
    let mut stat = Stat::default();
    let fd = libc::c_uint::try_from(file.as_raw_fd()).ok()?;
    // SAFETY: `range` and `stat` are live, correctly laid out (the
    // kernel's `struct cachestat_range` and `struct cachestat`, all u64)
    // for the call, which reads the one and writes the other; the
    // descriptor belongs to `file`, borrowed for the call.
    let r = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            fd,
            &range as *const Range,
            &mut stat as *mut Stat,
            0 as libc::c_uint,
        )
    };
    // Pages larger than 4 KiB count fewer: then this says "not all",
    // which only costs a wait for the turn.
    (r == 0).then_some(stat.nr_cache >= pages)
}

/// Without `cachestat` nothing is known to be in memory.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
#[cfg_attr(not(feature = "hdf5"), allow(dead_code))]
pub(crate) fn in_page_cache(_file: &File, _offset: u64, _len: u64) -> Option<bool> {
    None
}

/// Without pread: a seek and a bounded read.
#[cfg(not(unix))]
pub(crate) fn read_at_into(
    file: &File,
    offset: u64,
    len: usize,
    out: &mut Vec<u8>,
) -> io::Result<usize> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = file;
    file.seek(SeekFrom::Start(offset))?;
    let before = out.len();
    file.take(len as u64).read_to_end(out)?;
    Ok(out.len() - before)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positioned_reads_append_what_the_file_holds() {
        let dir = std::env::temp_dir().join(format!("n5-os-pread-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 253) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let file = File::open(&path).unwrap();
        let mut out = vec![9u8];
        assert_eq!(read_at_into(&file, 10, 5000, &mut out).unwrap(), 5000);
        assert_eq!(out[0], 9);
        assert_eq!(out[1..], data[10..5010]);
        // Past the end: what there is, then nothing.
        out.clear();
        assert_eq!(read_at_into(&file, 99_990, 50, &mut out).unwrap(), 10);
        assert_eq!(out, data[99_990..]);
        assert_eq!(read_at_into(&file, 200_000, 50, &mut out).unwrap(), 0);
        assert_eq!(out.len(), 10);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "needs a buffer of several MiB, far too slow to interpret"
    )]
    fn advice_changes_no_data() {
        let mut buf: Vec<u8> = (0..24 << 20).map(|i| (i % 251) as u8).collect();
        advise_huge_pages(&mut buf[1..]);
        assert!(buf.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
        let mut empty: [u8; 0] = [];
        advise_huge_pages(&mut empty);
    }

    #[test]
    #[cfg_attr(miri, ignore = "calls cachestat")]
    fn a_file_just_written_is_in_the_page_cache_and_nothing_past_its_end() {
        let dir = std::env::temp_dir().join(format!("n5-os-cachestat-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        std::fs::write(&path, vec![5u8; 3 << 20]).unwrap();
        let file = File::open(&path).unwrap();
        // Either the kernel tells (Linux 6.5 on) or it cannot.
        assert_ne!(in_page_cache(&file, 4096, 1 << 20), Some(false));
        assert_ne!(in_page_cache(&file, 10, 100), Some(false));
        assert!(!in_page_cache(&file, 8 << 20, 4096).unwrap_or(false));
        assert_eq!(in_page_cache(&file, 0, 0), Some(true));
        advise_file(&file, Access::Scattered);
        advise_file(&file, Access::Normal);
        let mut out = Vec::new();
        assert_eq!(read_at_into(&file, 0, 3 << 20, &mut out).unwrap(), 3 << 20);
        assert!(out.iter().all(|&b| b == 5));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    #[cfg_attr(miri, ignore = "calls mincore")]
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn a_buffer_is_resident_once_written() {
        let len = 8 << 20;
        // SAFETY: a fresh private anonymous mapping of `len` bytes (so none
        // of its pages present yet), used only through the slice below and
        // unmapped at the end.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(map, libc::MAP_FAILED);
        let start = map as usize;
        assert!(!resident(start + 1, len - 1));
        // SAFETY: the mapping is `len` bytes, readable and writable.
        let buf = unsafe { std::slice::from_raw_parts_mut(map.cast::<u8>(), len) };
        buf[..len / 2].fill(7);
        assert!(!resident(start + 1, len - 1));
        assert!(resident(start + 1, len / 2 - 1));
        buf.fill(7);
        assert!(resident(start + 1, len - 1));
        assert!(resident(start, 0));
        // SAFETY: unmaps the mapping made above; `buf` is not used again.
        unsafe { libc::munmap(map, len) };
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "needs a buffer of several MiB, far too slow to interpret"
    )]
    fn prefaulting_changes_no_data_even_while_the_buffer_is_written() {
        use std::sync::atomic::AtomicBool;
        let go = AtomicBool::new(false);
        // A fresh buffer (pages not yet present) stays zero.
        let mut fresh = vec![0u8; 20 << 20];
        let at = fresh.as_mut_ptr() as usize + 1;
        // MADV_POPULATE_WRITE exists from Linux 5.14 on; before, nothing
        // is done and the call says so.
        let supported = cfg!(any(target_os = "linux", target_os = "android"))
            && std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .ok()
                .and_then(|r| {
                    let mut v = r.split(|c: char| !c.is_ascii_digit());
                    Some((
                        v.next()?.parse::<u32>().ok()?,
                        v.next()?.parse::<u32>().ok()?,
                    ))
                })
                .is_some_and(|version| version >= (5, 14));
        assert_eq!(prefault(at, fresh.len() - 1, &go), supported);
        assert!(fresh.iter().all(|&b| b == 0));
        // Written by another thread meanwhile: what it wrote is there.
        let mut buf = vec![0u8; 40 << 20];
        let (start, len) = (buf.as_mut_ptr() as usize, buf.len());
        std::thread::scope(|s| {
            s.spawn(|| prefault(start, len, &go));
            for (i, b) in buf.iter_mut().enumerate() {
                *b = (i % 249) as u8;
            }
        });
        assert!(buf.iter().enumerate().all(|(i, &b)| b == (i % 249) as u8));
        // Stopped before it starts, it does nothing and says so.
        assert!(!prefault(start, len, &AtomicBool::new(true)));
    }
}
