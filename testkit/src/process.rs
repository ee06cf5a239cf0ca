//! Owns the server processes' lives: the one long-lived thread that spawns
//! every server (so that `PR_SET_PDEATHSIG` kills them all when the test
//! process ends, however it ends), the stop on drop (SIGTERM, a grace
//! period, SIGKILL), the temp dirs `n5-testkit-<pid>-<n>` and the removal of
//! those left by dead processes, free loopback ports, and the bounded
//! readiness wait that reports the tail of a server's log.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::Error;

// --- temp dirs ---------------------------------------------------------------

const DIR_PREFIX: &str = "n5-testkit-";
/// Paths outside a temp dir that belong to its server (SeaweedFS's gRPC
/// sockets in /tmp), one a line, removed with the dir.
const CLEANUP_LIST: &str = ".n5-testkit-cleanup";

/// A fresh directory `<temp>/n5-testkit-<pid>-<n>`, removed on drop with the
/// paths recorded by [`TempDir::also_remove`].
pub(crate) struct TempDir {
    path: PathBuf,
}

impl TempDir {
    pub(crate) fn new() -> io::Result<TempDir> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        remove_stale_dirs();
        let base = std::env::temp_dir();
        let pid = std::process::id();
        for _ in 0..1000 {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let path = base.join(format!("{DIR_PREFIX}{pid}-{n}"));
            match fs::create_dir(&path) {
                Ok(()) => return Ok(TempDir { path }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!("creating {}: {e}", path.display()),
                    ))
                }
            }
        }
        Err(io::Error::other(
            "no free n5-testkit temp dir name after 1000 tries",
        ))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Records `paths` (outside the dir) to be removed with it, also by the
    /// next process when this one dies without removing them.
    pub(crate) fn also_remove(&self, paths: &[PathBuf]) -> io::Result<()> {
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.path.join(CLEANUP_LIST))?;
        for p in paths {
            writeln!(f, "{}", p.display())?;
        }
        Ok(())
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        remove_dir_and_extras(&self.path);
    }
}

fn remove_dir_and_extras(dir: &Path) {
    if let Ok(list) = fs::read_to_string(dir.join(CLEANUP_LIST)) {
        for line in list.lines().filter(|l| !l.is_empty()) {
            let _ = fs::remove_file(line);
        }
    }
    let _ = fs::remove_dir_all(dir);
}

/// Removes the `n5-testkit-<pid>-*` dirs of processes that no longer run
/// (their servers died with them; see `spawn`). Run before each new dir: a
/// look at the temp dir's names costs little.
fn remove_stale_dirs() {
    let Ok(entries) = fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    let own = std::process::id();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(DIR_PREFIX)) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if pid != own && !Path::new(&format!("/proc/{pid}")).exists() {
            remove_dir_and_extras(&entry.path());
        }
    }
}

// --- ports -------------------------------------------------------------------

/// A TCP port on 127.0.0.1 that was free a moment ago (the kernel's pick for
/// port 0). Another process may take it before it is used; the servers'
/// start retries on that.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("binding 127.0.0.1:0")
}

/// `n` distinct free loopback ports `p`, each with `p + offset` free too
/// when `offset` is given (SeaweedFS dials a service's gRPC at port+10000).
pub(crate) fn free_ports(n: usize, offset: Option<u16>) -> io::Result<Vec<u16>> {
    let mut held = Vec::new();
    let mut ports = Vec::new();
    for _ in 0..(n * 50 + 50) {
        if ports.len() == n {
            return Ok(ports);
        }
        let l = TcpListener::bind("127.0.0.1:0")?;
        let port = l.local_addr()?.port();
        if let Some(off) = offset {
            let Some(other) = port.checked_add(off) else {
                held.push(l);
                continue;
            };
            match TcpListener::bind(("127.0.0.1", other)) {
                Ok(o) => held.push(o),
                Err(_) => {
                    held.push(l);
                    continue;
                }
            }
        }
        held.push(l);
        ports.push(port);
    }
    if ports.len() == n {
        Ok(ports)
    } else {
        Err(io::Error::other(format!(
            "found only {} of {n} free loopback ports",
            ports.len()
        )))
    }
}

// --- spawning ------------------------------------------------------------------

struct SpawnRequest {
    command: Command,
    reply: mpsc::Sender<io::Result<Child>>,
}

/// The channel to the thread that spawns every server. PR_SET_PDEATHSIG
/// fires when the *thread* that forked the child exits, so the children
/// must come from a thread that lives as long as the process: this one
/// waits for requests forever and ends only with the process.
fn spawner() -> &'static mpsc::Sender<SpawnRequest> {
    static SPAWNER: OnceLock<mpsc::Sender<SpawnRequest>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("n5-testkit-spawner".into())
            .spawn(move || {
                for mut req in rx {
                    let _ = req.reply.send(req.command.spawn());
                }
            })
            .expect("starting the n5-testkit spawner thread");
        tx
    })
}

/// Spawns `command` from the spawner thread, with SIGKILL as its parent
/// death signal.
fn spawn(mut command: Command) -> io::Result<Child> {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the child between fork and exec, where only
    // async-signal-safe functions may be called: prctl(2) and getppid(2) are
    // plain system calls, and the closure neither allocates nor locks
    // (from_raw_os_error and last_os_error build errors without allocating).
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died before prctl: then no signal comes.
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
    let (reply, answer) = mpsc::channel();
    spawner()
        .send(SpawnRequest { command, reply })
        .map_err(|_| io::Error::other("the n5-testkit spawner thread is gone"))?;
    answer
        .recv_timeout(Duration::from_secs(60))
        .map_err(|_| io::Error::other("the n5-testkit spawner thread did not answer in 60 s"))?
}

/// A running server: its process, its temp dir and its log (stdout and
/// stderr). Dropping it stops the process (SIGTERM, then SIGKILL after the
/// grace period) and removes the dir.
pub(crate) struct ServerProcess {
    name: &'static str,
    child: Mutex<Child>,
    log: PathBuf,
    grace: Duration,
    // Held for its Drop, declared last: removed after the process stopped.
    _dir: TempDir,
}

impl ServerProcess {
    /// A command for `program` with a clean environment (PATH only, HOME and
    /// TMPDIR in `dir`, which is also its working directory), so nothing of
    /// the test's environment (AWS_* variables, say) reaches the server.
    pub(crate) fn command(program: &Path, dir: &TempDir) -> Command {
        let mut c = Command::new(program);
        c.env_clear()
            .env(
                "PATH",
                std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
            )
            .env("HOME", dir.path())
            .env("TMPDIR", dir.path())
            .env("LC_ALL", "C")
            .current_dir(dir.path())
            .stdin(Stdio::null());
        c
    }

    /// Starts `command` (from [`ServerProcess::command`]) with its output
    /// going to `<dir>/server.log`.
    pub(crate) fn spawn(
        name: &'static str,
        mut command: Command,
        dir: TempDir,
        grace: Duration,
    ) -> Result<ServerProcess, Error> {
        let log = dir.path().join("server.log");
        let out = File::create(&log)
            .map_err(|e| Error::Failed(format!("{name}: creating {}: {e}", log.display())))?;
        let err = out
            .try_clone()
            .map_err(|e| Error::Failed(format!("{name}: {e}")))?;
        command.stdout(out).stderr(err);
        let line = command_line(&command);
        let child = spawn(command)
            .map_err(|e| Error::Failed(format!("{name}: could not start `{line}`: {e}")))?;
        Ok(ServerProcess {
            name,
            child: Mutex::new(child),
            log,
            grace,
            _dir: dir,
        })
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.lock().unwrap_or_else(|e| e.into_inner()).id()
    }

    /// How the process ended, if it has.
    pub(crate) fn exit_status(&self) -> Option<String> {
        let mut child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        match child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            Ok(None) => None,
            Err(e) => Some(format!("unknown ({e})")),
        }
    }

    /// The last `lines` lines of the server's log.
    pub(crate) fn log_tail(&self, lines: usize) -> String {
        let mut text = String::new();
        if let Ok(mut f) = File::open(&self.log) {
            let len = f.metadata().map(|m| m.len()).unwrap_or(0);
            let _ = f.seek(SeekFrom::Start(len.saturating_sub(64 * 1024)));
            let mut bytes = Vec::new();
            let _ = f.read_to_end(&mut bytes);
            text = String::from_utf8_lossy(&bytes).into_owned();
        }
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// An error about this server, with the tail of its log.
    pub(crate) fn failure(&self, message: impl std::fmt::Display) -> Error {
        Error::Failed(format!(
            "{}: {message}\n--- last lines of {}:\n{}\n---",
            self.name,
            self.log.display(),
            self.log_tail(30)
        ))
    }

    /// Calls `probe` every 100 ms until it succeeds, the process exits or
    /// `timeout` passes (bounded in time and in count).
    pub(crate) fn wait_ready(
        &self,
        timeout: Duration,
        mut probe: impl FnMut() -> Result<(), String>,
    ) -> Result<(), Error> {
        let start = Instant::now();
        let tries = timeout.as_millis() / 100 + 1;
        let mut last = String::from("not probed");
        for _ in 0..tries {
            if let Some(status) = self.exit_status() {
                return Err(self.failure(format!(
                    "exited while starting ({status}); last probe: {last}"
                )));
            }
            match probe() {
                Ok(()) => return Ok(()),
                Err(e) => last = e,
            }
            if start.elapsed() >= timeout {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(self.failure(format!(
            "not ready after {:.1} s: {last}",
            start.elapsed().as_secs_f64()
        )))
    }

    /// Sends SIGTERM, unless the process has ended.
    pub(crate) fn terminate(&self) {
        let mut child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        if let Ok(None) = child.try_wait() {
            if let Ok(pid) = libc::pid_t::try_from(child.id()) {
                // SAFETY: kill(2) only sends a signal; `pid` is our own
                // child, not yet reaped (try_wait above, under the lock
                // that every reaping takes, says it runs), so the pid
                // cannot have been reused by another process.
                unsafe {
                    libc::kill(pid, libc::SIGTERM);
                }
            }
        }
    }

    /// Waits for the process to end until `deadline`, then kills it
    /// (SIGKILL), reaps it and removes its dir.
    pub(crate) fn finish(&self, deadline: Instant) {
        let mut child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        while Instant::now() < deadline {
            match child.try_wait() {
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                _ => break,
            }
        }
        if let Ok(None) = child.try_wait() {
            let _ = child.kill();
        }
        let _ = child.wait();
        remove_dir_and_extras(self._dir.path());
    }

    /// SIGTERM, the grace period, SIGKILL; then the dir is removed.
    pub(crate) fn stop(&self) {
        self.terminate();
        self.finish(Instant::now() + self.grace);
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

fn command_line(c: &Command) -> String {
    let mut s = c.get_program().to_string_lossy().into_owned();
    for a in c.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}
