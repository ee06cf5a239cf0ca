//! Operating-system helpers: evicting files from the page cache (and checking
//! that it worked with mincore), dropping all caches, peak memory (VmHWM), and the
//! description of the machine and of the working directory's file system.

use std::ffi::CString;
use std::fs::{self, File};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;

/// How reads get a cold page cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheMode {
    /// fsync and posix_fadvise(POSIX_FADV_DONTNEED) on every file of the
    /// container before each read: no privileges needed, nothing else evicted.
    Fadvise,
    /// The same, then `sync; echo 3 > /proc/sys/vm/drop_caches` (root only),
    /// which also drops directory entries and inodes.
    Drop,
    /// No eviction: reads hit the page cache the write left behind.
    Warm,
}

impl CacheMode {
    /// The name used on the command line and in job descriptions.
    pub fn name(self) -> &'static str {
        match self {
            CacheMode::Fadvise => "fadvise",
            CacheMode::Drop => "drop",
            CacheMode::Warm => "warm",
        }
    }

    /// The mode called `name`.
    pub fn parse(name: &str) -> Option<CacheMode> {
        [CacheMode::Fadvise, CacheMode::Drop, CacheMode::Warm]
            .into_iter()
            .find(|m| m.name() == name)
    }
}

/// Every regular file below `root`, recursively.
pub fn files_below(root: &Path) -> io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir)? {
            let entry = entry?;
            let ft = entry.file_type()?;
            if ft.is_dir() {
                stack.push(entry.path());
            } else if ft.is_file() {
                out.push(entry.path());
            }
        }
    }
    Ok(out)
}

/// Total size in bytes of the regular files below `root`.
pub fn bytes_below(root: &Path) -> io::Result<u64> {
    files_below(root)?
        .iter()
        .map(|p| fs::metadata(p).map(|m| m.len()))
        .sum()
}

/// Writes back and evicts every file below `root` from the page cache
/// (`mode` Fadvise or Drop; Warm does nothing). Returns the fraction of the
/// files' pages still resident afterwards (mincore), 0 when it worked.
pub fn evict(root: &Path, mode: CacheMode) -> io::Result<f64> {
    if mode == CacheMode::Warm {
        return Ok(f64::NAN);
    }
    let files = files_below(root)?;
    for path in &files {
        let file = File::open(path)?;
        let fd = file.as_raw_fd();
        // SAFETY: `fd` is an open descriptor owned by `file` for the whole
        // call; fdatasync and posix_fadvise only take it and integers.
        let rc = unsafe {
            if libc::fdatasync(fd) != 0 {
                -1
            } else {
                libc::posix_fadvise(fd, 0, 0, libc::POSIX_FADV_DONTNEED)
            }
        };
        if rc != 0 {
            return Err(io::Error::other(format!(
                "evicting {} from the page cache failed",
                path.display()
            )));
        }
    }
    if mode == CacheMode::Drop {
        drop_caches()?;
    }
    let (mut resident, mut total) = (0u64, 0u64);
    for path in &files {
        let (r, t) = resident_pages(path)?;
        resident += r;
        total += t;
    }
    Ok(if total == 0 {
        0.0
    } else {
        resident as f64 / total as f64
    })
}

/// `sync; echo 3 > /proc/sys/vm/drop_caches`: fails without privileges.
pub fn drop_caches() -> io::Result<()> {
    sync_all();
    fs::write("/proc/sys/vm/drop_caches", b"3")
}

/// sync(2): write every dirty page of the system back, so that a timed write
/// does not pay for the previous one.
pub fn sync_all() {
    // SAFETY: sync takes no arguments and cannot fail.
    unsafe { libc::sync() }
}

/// (resident pages, pages) of the file at `path`, from mincore on a shared
/// read-only mapping (which does not fault pages in).
pub fn resident_pages(path: &Path) -> io::Result<(u64, u64)> {
    let file = File::open(path)?;
    let len = file.metadata()?.len() as usize;
    if len == 0 {
        return Ok((0, 0));
    }
    // SAFETY: sysconf has no memory effects.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
    let pages = len.div_ceil(page);
    let mut vec = vec![0u8; pages];
    // SAFETY: a fresh shared read-only mapping of `len` bytes of an open
    // file; it is only passed to mincore (never dereferenced) and unmapped
    // below. `vec` has one byte per page of the mapping, as mincore needs.
    unsafe {
        let addr = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        );
        if addr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let rc = libc::mincore(addr, len, vec.as_mut_ptr());
        let err = io::Error::last_os_error();
        libc::munmap(addr, len);
        if rc != 0 {
            return Err(err);
        }
    }
    let resident = vec.iter().filter(|&&b| b & 1 == 1).count() as u64;
    Ok((resident, pages as u64))
}

/// Peak resident set size of this process's image in KiB: VmHWM. Not
/// getrusage's ru_maxrss, which after a vfork-style spawn (as Rust's
/// Command does) also holds the parent's peak.
pub fn peak_rss_kib() -> u64 {
    proc_status_kib("VmHWM").unwrap_or(0)
}

/// User and system CPU seconds this process has used, all its threads.
pub fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes one struct into the zeroed value we own.
    let usage = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut u) != 0 {
            return f64::NAN;
        }
        u
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// A `kB` field of /proc/self/status, such as VmRSS or VmHWM.
pub fn proc_status_kib(key: &str) -> Option<u64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|l| {
        let rest = l.strip_prefix(key)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// Free bytes for unprivileged users on the file system holding `dir`.
pub fn free_bytes(dir: &Path) -> io::Result<u64> {
    let c = CString::new(dir.as_os_str().as_bytes()).map_err(io::Error::other)?;
    // SAFETY: `c` is NUL-terminated and outlives the call; statvfs writes one
    // struct into the zeroed value we own.
    unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c.as_ptr(), &mut st) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(st.f_bavail as u64 * st.f_frsize as u64)
    }
}

/// The file system type of `dir` (`df -T`), such as "ext4" or "tmpfs".
pub fn fs_type(dir: &Path) -> String {
    Command::new("df")
        .arg("-T")
        .arg(dir)
        .output()
        .ok()
        .and_then(|o| {
            let text = String::from_utf8_lossy(&o.stdout).into_owned();
            Some(text.lines().nth(1)?.split_whitespace().nth(1)?.to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// The machine: CPU model, logical cores, RAM and kernel.
#[derive(Clone, Debug)]
pub struct Machine {
    /// "model name" of /proc/cpuinfo.
    pub cpu: String,
    /// Logical CPUs available to this process.
    pub cores: usize,
    /// MemTotal in GiB.
    pub ram_gib: f64,
    /// The kernel release.
    pub kernel: String,
}

impl Machine {
    /// Reads /proc.
    pub fn detect() -> Machine {
        let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name")?.split_once(':'))
            .map_or("unknown".into(), |(_, v)| v.trim().to_string());
        let meminfo = fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let ram_kib: f64 = meminfo
            .lines()
            .find_map(|l| {
                l.strip_prefix("MemTotal:")?
                    .split_whitespace()
                    .next()?
                    .parse()
                    .ok()
            })
            .unwrap_or(0.0);
        let kernel = fs::read_to_string("/proc/sys/kernel/osrelease")
            .map_or("unknown".into(), |s| s.trim().to_string());
        Machine {
            cpu,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            ram_gib: ram_kib / (1024.0 * 1024.0),
            kernel,
        }
    }
}

/// From this output size on, libn5's region reads advise huge pages for
/// the caller's buffer (its `HUGE_PAGE_OUTPUT`); floor+out does the same.
pub const HUGE_PAGE_OUTPUT: usize = 16 << 20;

/// Advises the kernel to back the whole 2 MiB-aligned stretches of `buf`
/// with transparent huge pages, as libn5's region reads do with their
/// output buffer (`madvise(MADV_HUGEPAGE)`; ignored where unsupported).
pub fn advise_huge_pages(buf: &mut [u8]) {
    const HUGE: usize = 2 << 20;
    let start = buf.as_mut_ptr() as usize;
    let (first, end) = (
        start.next_multiple_of(HUGE),
        (start + buf.len()) & !(HUGE - 1),
    );
    if end > first {
        // SAFETY: [first, end) lies inside `buf`, borrowed mutably for the
        // call, and starts on a page boundary; MADV_HUGEPAGE changes how the
        // kernel backs the pages, never their contents, and a failure
        // leaves them as they were.
        unsafe {
            libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
        }
    }
}

/// Writes every page of a fresh buffer of `bytes` (advised to use huge
/// pages) and frees it, right before a measuring process starts. On a
/// virtual machine whose host backs guest memory lazily and takes back
/// what the guest frees, the first process to fill a large buffer after a
/// pause pays for backing it (for 256 MiB in huge pages about 300 ms of
/// CPU here, against about 35 ms right after another process freed as
/// much); without this, whichever implementation happens to run first
/// after a pause pays that, and the others do not. On bare metal it
/// changes nothing.
pub fn prime_memory(bytes: usize) {
    let mut buf = vec![0u8; bytes];
    advise_huge_pages(&mut buf);
    for i in (0..bytes).step_by(4096) {
        buf[i] = 1;
    }
    std::hint::black_box(&buf);
}

/// How long first writing fresh memory of the volume's size takes, in ms:
/// a buffer of `bytes` with 4 KiB pages, the same again right after (it
/// usually gets the pages the first gave back), and one advised to use huge
/// pages as libn5 advises its output buffer, twice. Every read of a whole
/// volume writes into fresh memory of that size; on a virtual machine whose
/// host backs guest memory only when it is first touched (or takes back
/// what the guest frees, as a balloon with free page reporting does), that
/// costs far more than on bare metal and varies from process to process.
pub fn fresh_memory_ms(bytes: usize) -> [f64; 4] {
    let once = |huge: bool| {
        let t = std::time::Instant::now();
        let mut buf = vec![0u8; bytes];
        if huge {
            advise_huge_pages(&mut buf);
        }
        for i in (0..bytes).step_by(4096) {
            buf[i] = 1;
        }
        std::hint::black_box(&buf);
        t.elapsed().as_secs_f64() * 1000.0
    };
    [once(false), once(false), once(true), once(true)]
}

/// The 1, 5 and 15 minute load averages (/proc/loadavg).
pub fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".into())
}

/// The CPU time the whole machine spent busy (not idle, not waiting for
/// I/O) and in all, in clock ticks, from the first line of /proc/stat.
fn cpu_ticks() -> Option<(u64, u64)> {
    let stat = fs::read_to_string("/proc/stat").ok()?;
    let ticks: Vec<u64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .filter_map(|t| t.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal ...
    let total: u64 = ticks.iter().take(8).sum();
    let idle = ticks.get(3)? + ticks.get(4).copied().unwrap_or(0);
    Some((total - idle, total))
}

/// How many cores the machine keeps busy, on average over `window` (NaN
/// when /proc/stat cannot be read).
pub fn busy_cores(window: std::time::Duration) -> f64 {
    let Some((busy0, total0)) = cpu_ticks() else {
        return f64::NAN;
    };
    std::thread::sleep(window);
    let Some((busy1, total1)) = cpu_ticks() else {
        return f64::NAN;
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    if total1 <= total0 {
        return f64::NAN;
    }
    (busy1 - busy0) as f64 / (total1 - total0) as f64 * cores
}

/// Waits until the machine keeps fewer than `max` cores busy (over half a
/// second, while the benchmark itself is idle), or `patience` has passed;
/// returns the last value seen and how long it waited.
pub fn wait_quiet(max: f64, patience: std::time::Duration) -> (f64, std::time::Duration) {
    let start = std::time::Instant::now();
    loop {
        let busy = busy_cores(std::time::Duration::from_millis(500));
        // NaN (no /proc/stat) counts as quiet.
        if busy.is_nan() || busy < max || start.elapsed() >= patience {
            return (busy, start.elapsed());
        }
        std::thread::sleep(std::time::Duration::from_secs(2));
    }
}

/// The 1-minute load average (NaN when unknown).
pub fn load1() -> f64 {
    fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

/// The current UTC time as `YYYY-MM-DD HH:MM UTC`.
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60
    )
}

/// How much more memory two threads copy in the same time as one: each
/// thread copies its own `bytes`-sized buffer into another `rounds` times;
/// the best of three tries of each is taken. Beyond the caches (64 MiB
/// buffers) this is the machine's memory bandwidth shared by two cores
/// (on a virtual machine, often no more than one core gets); within them
/// (1 MiB) it is the cores themselves. A build that only moves bytes
/// cannot run faster in two parts, or on two threads, than the first
/// figure allows.
pub fn two_thread_copy_scaling(bytes: usize, rounds: usize) -> f64 {
    let copy = || {
        let src = vec![1u8; bytes];
        let mut dst = vec![0u8; bytes];
        let t = std::time::Instant::now();
        for r in 0..rounds {
            dst.copy_from_slice(&src);
            std::hint::black_box(&mut dst);
            dst[r % bytes] ^= 1;
        }
        t.elapsed().as_secs_f64()
    };
    let best = |threads: usize| {
        (0..3)
            .map(|_| {
                std::thread::scope(|s| {
                    let handles: Vec<_> = (0..threads).map(|_| s.spawn(copy)).collect();
                    handles
                        .into_iter()
                        .map(|h| h.join().unwrap_or(f64::MAX))
                        .fold(0.0, f64::max)
                })
            })
            .fold(f64::MAX, f64::min)
    };
    let one = best(1);
    let two = best(2);
    2.0 * one / two
}
