//! The launcher process of a sandbox (Linux): a fresh image of eve, started by
//! `launcher.rs` with [`ARG`] as its only argument and caught before `main` by
//! [`ENTRY`], so it is single-threaded and small (forking it copies almost nothing). It
//! enters the sandbox's namespaces once, then for each call eve sends it forks one
//! supervisor (`supervisor.rs`) — in a PID namespace of its own where the kernel allows —
//! which starts the program. It holds no provider key: it starts with an empty
//! environment, and each call brings the environment of its program.

use std::collections::HashMap;
use std::ffi::{CStr, CString, c_char, c_int};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use super::supervisor::{self, Call, Stage};
use super::wire::{Reader, Writer};

/// The argument that makes an image of eve a launcher.
pub const ARG: &str = "\u{1}eve-launcher-1";
/// The control socket, the launcher's stdin.
const CONTROL: RawFd = 0;
/// The largest call eve sends (program, arguments, environment, directory).
pub const MAX_CALL: usize = 8 * 1024 * 1024;
/// The descriptors a call carries at most: its description, stdout, stderr, its
/// socket, and stdin when it is piped.
pub const MAX_FDS: usize = 5;
/// A call's stdin is a pipe eve sends (else the launcher's `/dev/null`).
pub const STDIN_PIPED: u32 = 1;
/// The `PATH` searched when a call's environment has none.
const DEFAULT_PATH: &[u8] = b"/usr/local/bin:/usr/bin:/bin";

/// Runs before `main` in every image of a program that links eve (eve itself, and the
/// test and benchmark binaries that run eve's library): when the image was started as a
/// launcher, it becomes one and never returns; otherwise it does nothing.
#[used]
#[unsafe(link_section = ".init_array")]
pub static ENTRY: extern "C" fn(c_int, *const *const c_char, *const *const c_char) = entry;

extern "C" fn entry(argc: c_int, argv: *const *const c_char, _envp: *const *const c_char) {
    if started_as_launcher(argc, argv) {
        main()
    }
}

/// glibc passes `main`'s arguments to the functions of `.init_array`.
#[cfg(target_env = "gnu")]
fn started_as_launcher(argc: c_int, argv: *const *const c_char) -> bool {
    if argc != 2 || argv.is_null() {
        return false;
    }
    // SAFETY: glibc gives `argc` valid NUL-terminated strings in `argv`.
    unsafe {
        let arg = *argv.add(1);
        !arg.is_null() && CStr::from_ptr(arg).to_bytes() == ARG.as_bytes()
    }
}

/// Other C libraries pass nothing: the command line is read from `/proc`.
#[cfg(not(target_env = "gnu"))]
fn started_as_launcher(_argc: c_int, _argv: *const *const c_char) -> bool {
    let Ok(line) = std::fs::read("/proc/self/cmdline") else {
        return false;
    };
    let mut args = line.split(|&b| b == 0);
    args.next();
    args.next() == Some(ARG.as_bytes()) && args.all(<[u8]>::is_empty)
}

/// What the launcher knows across calls.
struct Launcher {
    confine: Option<super::linux::Prepared>,
    /// The folders the sandbox lets its processes write: no program is looked up there.
    writable: Vec<Vec<u8>>,
    /// Whether calls still get a PID namespace (cleared at the first refusal).
    pid_namespace: bool,
    /// Programs found on a `PATH`: (name, `PATH`) → path.
    found: HashMap<(Vec<u8>, Vec<u8>), CString>,
    /// The supervisors running.
    supervisors: Vec<libc::pid_t>,
    devnull: RawFd,
    sigfd: RawFd,
}

fn main() -> ! {
    // SAFETY: signal, prctl and close_range change only this process.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        libc::prctl(libc::PR_SET_NAME, c"eve-launcher".as_ptr());
        // The orphans of a supervisor killed from inside its call land here.
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0);
    }
    let mut setup = vec![0u8; 1 << 20];
    let (confine, writable) = match receive(CONTROL, &mut setup, &mut Vec::new()) {
        Some(len) => match prepare(&setup[..len]) {
            Ok(confine) => confine,
            Err(why) => {
                reply(&Writer::new().u32(1).bytes(why.as_bytes()).finish());
                exit(1)
            }
        },
        None => exit(1),
    };
    drop(setup);
    // Not dumpable from here on: no process of the sandbox may trace the launcher or read
    // its memory. Not before the sandbox is entered: the `/proc/self` files of a process
    // that is not dumpable belong to root, so an unprivileged launcher could not write
    // its user namespace's `uid_map` (it holds nothing secret until then: it starts with
    // an empty environment and has received only the policy).
    // SAFETY: prctl with integer arguments changes only this process.
    unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
    // SAFETY: plain system calls; the signalfd reports the ends of supervisors.
    let (sigfd, devnull) = unsafe {
        let mut chld: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut chld);
        libc::sigaddset(&mut chld, libc::SIGCHLD);
        libc::sigprocmask(libc::SIG_BLOCK, &chld, std::ptr::null_mut());
        let sigfd = libc::signalfd(-1, &chld, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC);
        let devnull = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
        (sigfd, devnull)
    };
    let mut launcher = Launcher {
        confine,
        writable,
        pid_namespace: true,
        found: HashMap::new(),
        supervisors: Vec::new(),
        devnull,
        sigfd,
    };
    reply(&Writer::new().u32(0).finish());
    let mut header = [0u8; 64];
    let mut fds = Vec::with_capacity(MAX_FDS);
    loop {
        let mut polled = [
            libc::pollfd {
                fd: CONTROL,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: sigfd,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        let wait = if sigfd < 0 { 100 } else { -1 };
        // SAFETY: poll writes the two structs.
        unsafe { libc::poll(polled.as_mut_ptr(), 2, wait) };
        launcher.reap();
        if polled[0].revents == 0 {
            continue;
        }
        fds.clear();
        match receive(CONTROL, &mut header, &mut fds) {
            Some(len) => launcher.call(&header[..len], std::mem::take(&mut fds)),
            // eve closed its end: it is done with this sandbox, or gone.
            None => exit(0),
        }
    }
}

fn exit(code: c_int) -> ! {
    // SAFETY: _exit ends the process at once.
    unsafe { libc::_exit(code) }
}

/// Sends eve a message on the control socket.
fn reply(message: &[u8]) {
    // SAFETY: send reads `message`.
    unsafe {
        libc::send(
            CONTROL,
            message.as_ptr().cast(),
            message.len(),
            libc::MSG_NOSIGNAL,
        );
    }
}

/// What the launcher is set up with: the sandbox built and entered, and the folders its
/// processes may write.
type Setup = (Option<super::linux::Prepared>, Vec<Vec<u8>>);

/// The setup message: `0` (unconfined) or `1`, a policy and what the kernel offers.
fn prepare(message: &[u8]) -> Result<Setup, String> {
    use std::os::unix::ffi::OsStrExt;
    let mut r = Reader::new(message);
    let bad = || "eve sent the launcher a setup it cannot read".to_string();
    match r.u32().ok_or_else(bad)? {
        0 => Ok((None, Vec::new())),
        _ => {
            let (policy, support) = super::launcher::decode_setup(&mut r).ok_or_else(bad)?;
            let prepared = super::linux::Prepared::build(&policy, &support)?;
            prepared.enter()?;
            prepared.settle()?;
            let writable = policy
                .writable
                .iter()
                .map(|p| p.as_os_str().as_bytes().to_vec())
                .collect();
            Ok((Some(prepared), writable))
        }
    }
}

/// One message and the descriptors it carries (at most [`MAX_FDS`], close-on-exec);
/// `None` at the end of the socket or on an error other than an interruption.
fn receive(socket: RawFd, buf: &mut [u8], fds: &mut Vec<OwnedFd>) -> Option<usize> {
    const SPACE: usize = 128;
    let mut control = [0u64; SPACE / 8];
    loop {
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        // SAFETY: msghdr points at the buffers above, which outlive the call.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = SPACE as _;
        // SAFETY: recvmsg writes into the buffers msghdr points at.
        let n = unsafe { libc::recvmsg(socket, &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if n < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return None;
        }
        // SAFETY: walking the control messages recvmsg wrote, within msg_controllen.
        unsafe {
            let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
            while !cmsg.is_null() {
                if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                    let data = libc::CMSG_DATA(cmsg).cast::<RawFd>();
                    let bytes = (*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                    for i in 0..bytes / std::mem::size_of::<RawFd>() {
                        fds.push(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                    }
                }
                cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
            }
        }
        if n == 0 && fds.is_empty() {
            return None;
        }
        if msg.msg_flags & (libc::MSG_CTRUNC | libc::MSG_TRUNC) != 0 {
            // More than a call carries: drop it whole (the descriptors close).
            fds.clear();
            return Some(0);
        }
        return Some(n as usize);
    }
}

impl Launcher {
    /// Reaps the supervisors that ended. A supervisor killed by a signal (from inside its
    /// call, where it is not a namespace's init) leaves orphans, which land here: they
    /// are killed.
    fn reap(&mut self) {
        let mut buf = [0u8; 128 * 8];
        // SAFETY: read into a stack buffer; the signalfd is non-blocking.
        while self.sigfd >= 0
            && unsafe { libc::read(self.sigfd, buf.as_mut_ptr().cast(), buf.len()) } > 0
        {}
        let mut orphans = false;
        loop {
            let mut status = 0;
            // SAFETY: waitpid writes only `status`.
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if pid <= 0 {
                break;
            }
            if let Some(i) = self.supervisors.iter().position(|&p| p == pid) {
                self.supervisors.swap_remove(i);
                orphans |= libc::WIFSIGNALED(status);
            }
        }
        if orphans {
            // SAFETY: getpid has no preconditions.
            let me = unsafe { libc::getpid() };
            let mut batch = [0 as libc::pid_t; 256];
            let found = supervisor::live_children(me, &mut batch);
            for &pid in batch.iter().take(found) {
                if !self.supervisors.contains(&pid) {
                    // SAFETY: `pid` is this process's child, not reaped: it names it.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
            }
        }
    }

    /// Starts one call: `header` is its flags, `fds` its description, stdout, stderr,
    /// socket and (when piped) stdin. Whatever is wrong is reported on its socket.
    fn call(&mut self, header: &[u8], fds: Vec<OwnedFd>) {
        let flags = Reader::new(header).u32();
        let piped = flags.is_some_and(|f| f & STDIN_PIPED != 0);
        let wanted = if piped { 5 } else { 4 };
        if flags.is_none() || fds.len() != wanted {
            if let Some(report) = fds.get(3) {
                supervisor::refuse(report.as_raw_fd(), libc::EINVAL, Stage::Supervisor);
            }
            return;
        }
        let report = fds[3].as_raw_fd();
        let Some(description) = read_all(&fds[0]) else {
            supervisor::refuse(report, libc::E2BIG, Stage::Supervisor);
            return;
        };
        let Some(call) = Described::read(&description) else {
            supervisor::refuse(report, libc::EINVAL, Stage::Exec);
            return;
        };
        let Some(path) = self.resolve(&call) else {
            supervisor::refuse(report, libc::ENOENT, Stage::Exec);
            return;
        };
        let argv: Vec<*const c_char> = call
            .argv
            .iter()
            .map(|a| a.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect();
        let envp: Vec<*const c_char> = call
            .env
            .iter()
            .map(|a| a.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect();
        let close = [CONTROL, self.sigfd];
        let start = |pid_namespace: bool| Call {
            path: path.as_ptr(),
            argv: argv.as_ptr(),
            envp: envp.as_ptr(),
            cwd: call.cwd.as_ptr(),
            stdin: if piped {
                fds[4].as_raw_fd()
            } else {
                self.devnull
            },
            stdout: fds[1].as_raw_fd(),
            stderr: fds[2].as_raw_fd(),
            report,
            close: &close,
            confine: self.confine.as_ref(),
            pid_namespace,
        };
        let mut pid = -1;
        if self.pid_namespace {
            let prepared = start(true);
            pid = fork(libc::CLONE_NEWPID, &prepared);
            if pid < 0 {
                // No PID namespaces here (not root and no user namespace, or a
                // container forbids them): supervisors fall back to /proc.
                self.pid_namespace = false;
            }
        }
        if pid < 0 {
            let prepared = start(false);
            pid = fork(0, &prepared);
        }
        if pid < 0 {
            supervisor::refuse(report, errno(), Stage::Supervisor);
            return;
        }
        self.supervisors.push(pid);
    }

    /// The program's path: as given when it holds a `/`, else the first executable of
    /// that name on the call's `PATH`, found once — absolute entries only (a relative one
    /// would be looked up in the workspace), and none beneath a folder the sandbox lets
    /// its processes write (a program planted there is never taken for the one named).
    fn resolve(&mut self, call: &Described) -> Option<CString> {
        let name = call.program.as_bytes();
        if name.contains(&b'/') {
            return Some(call.program.clone());
        }
        if name.is_empty() {
            return None;
        }
        let path = call
            .env
            .iter()
            .find_map(|e| e.as_bytes().strip_prefix(b"PATH="))
            .unwrap_or(DEFAULT_PATH);
        let key = (name.to_vec(), path.to_vec());
        if let Some(found) = self.found.get(&key)
            && executable(found)
        {
            return Some(found.clone());
        }
        for dir in path.split(|&b| b == b':') {
            if !dir.starts_with(b"/") || self.writable.iter().any(|w| beneath(dir, w)) {
                continue;
            }
            let mut candidate = dir.to_vec();
            if !candidate.ends_with(b"/") {
                candidate.push(b'/');
            }
            candidate.extend_from_slice(name);
            let Ok(candidate) = CString::new(candidate) else {
                continue;
            };
            if executable(&candidate) {
                self.found.insert(key, candidate.clone());
                return Some(candidate);
            }
        }
        None
    }
}

/// Whether the folder `dir` is `folder` or lies beneath it (both absolute).
fn beneath(dir: &[u8], folder: &[u8]) -> bool {
    let folder = folder.strip_suffix(b"/").unwrap_or(folder);
    dir.strip_prefix(folder)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(b"/"))
}

/// Whether `path` is a regular file this process may execute.
fn executable(path: &CStr) -> bool {
    // SAFETY: stat writes the struct; access only checks.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        libc::stat(path.as_ptr(), &mut st) == 0
            && st.st_mode & libc::S_IFMT == libc::S_IFREG
            && libc::access(path.as_ptr(), libc::X_OK) == 0
    }
}

/// Forks the supervisor of `call` (with `flags` such as `CLONE_NEWPID`); the parent
/// gets its pid, or -1.
fn fork(flags: c_int, call: &Call<'_>) -> libc::pid_t {
    // SAFETY: clone with fork semantics (no stack given: the child runs on a copy of
    // this one); this process is single-threaded.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            (flags | libc::SIGCHLD) as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        )
    };
    if pid == 0 {
        supervisor::run(call)
    }
    pid as libc::pid_t
}

fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// The bytes of a call's description (a memfd eve wrote), at most [`MAX_CALL`].
fn read_all(fd: &OwnedFd) -> Option<Vec<u8>> {
    // SAFETY: fstat writes the struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return None;
    }
    let len = usize::try_from(st.st_size)
        .ok()
        .filter(|&l| l <= MAX_CALL)?;
    let mut buf = vec![0u8; len];
    let mut got = 0;
    while got < len {
        // SAFETY: pread writes at most `len - got` bytes into `buf`.
        let n = unsafe {
            libc::pread(
                fd.as_raw_fd(),
                buf[got..].as_mut_ptr().cast(),
                len - got,
                got as libc::off_t,
            )
        };
        if n <= 0 {
            return None;
        }
        got += n as usize;
    }
    Some(buf)
}

/// A call as eve described it.
struct Described {
    program: CString,
    argv: Vec<CString>,
    env: Vec<CString>,
    cwd: CString,
}

impl Described {
    fn read(bytes: &[u8]) -> Option<Described> {
        let mut r = Reader::new(bytes);
        let c = |b: &[u8]| CString::new(b).ok();
        Some(Described {
            program: c(r.bytes()?)?,
            argv: r.list()?.into_iter().map(c).collect::<Option<_>>()?,
            env: r.list()?.into_iter().map(c).collect::<Option<_>>()?,
            cwd: c(r.bytes()?)?,
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_folder_beneath_a_writable_one_is_recognised_by_whole_names() {
        assert!(super::beneath(b"/w/bin", b"/w"));
        assert!(super::beneath(b"/w", b"/w/"));
        assert!(!super::beneath(b"/workspace/bin", b"/w"));
        assert!(!super::beneath(b"/usr/bin", b"/w"));
    }
}
