//! The supervisor of one process tree (Linux): a forked copy of eve, made a child subreaper,
//! that starts the program and so stays the ancestor of everything the program starts —
//! `setsid`, `nohup`, double forks and all. When eve closes its end of the supervisor's
//! socket (the call is over, or eve died), the supervisor kills every descendant, reaps
//! them, reports and exits.
//!
//! Everything here after the fork runs in the child of a multithreaded program: raw system
//! calls only, no allocation, no locks, nothing that can panic.

use std::os::fd::RawFd;

/// Bytes of one report on the socket.
pub const RECORD: usize = 12;
const EXITED: u32 = 1;
const ENDED: u32 = 2;
/// How long the supervisor keeps killing before it reports the processes that would not die
/// (a process stuck in the kernel, in uninterruptible sleep, dies only when it wakes).
const KILL_DEADLINE_MS: i64 = 2_000;
/// Children handled per round of killing; more are left to the next round.
const BATCH: usize = 256;
/// Processes remembered as already killed, so that a dying one is not counted twice.
const PENDING: usize = 1024;

/// What the supervisor tells eve, one record each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Report {
    /// The program exited; a raw wait status.
    Exited(i32),
    /// The supervisor stopped its tree and exits: how many processes it killed, and how many
    /// of them had still not died at its deadline.
    Ended { killed: u32, survivors: u32 },
}

impl Report {
    /// The report in a record, or `None` for bytes no supervisor writes.
    pub fn decode(bytes: &[u8; RECORD]) -> Option<Report> {
        let word = |i: usize| [bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]];
        let (a, b) = (word(4), word(8));
        match u32::from_ne_bytes(word(0)) {
            EXITED => Some(Report::Exited(i32::from_ne_bytes(a))),
            ENDED => Some(Report::Ended {
                killed: u32::from_ne_bytes(a),
                survivors: u32::from_ne_bytes(b),
            }),
            _ => None,
        }
    }

    fn encode(self) -> [u8; RECORD] {
        let (kind, a, b) = match self {
            Report::Exited(status) => (EXITED, status.to_ne_bytes(), [0; 4]),
            Report::Ended { killed, survivors } => {
                (ENDED, killed.to_ne_bytes(), survivors.to_ne_bytes())
            }
        };
        let mut out = [0u8; RECORD];
        out[..4].copy_from_slice(&kind.to_ne_bytes());
        out[4..8].copy_from_slice(&a);
        out[8..].copy_from_slice(&b);
        out
    }
}

/// Makes `command` start under a supervisor that reports on `socket` (its end of a stream
/// socket pair; eve keeps the other). The program keeps `command`'s stdio, directory,
/// environment and process group; the supervisor holds none of its pipes.
pub fn install(command: &mut tokio::process::Command, socket: RawFd) {
    // SAFETY: `start` only makes system calls that are safe between fork and exec.
    unsafe {
        command.pre_exec(move || start(socket));
    }
}

/// Runs in the forked child, after std set up stdio, directory and process group: the child
/// becomes the supervisor and forks again; the grandchild returns, and std execs it.
fn start(socket: RawFd) -> std::io::Result<()> {
    // Before the fork, so that no orphan of the program can ever miss it.
    // SAFETY: prctl and fork are async-signal-safe system calls.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    match unsafe { libc::fork() } {
        -1 => Err(std::io::Error::last_os_error()),
        0 => Ok(()),
        program => supervise(socket, program),
    }
}

/// The supervisor's life: wait for the program and for eve's word, kill the rest, exit.
fn supervise(socket: RawFd, program: libc::pid_t) -> ! {
    // SAFETY: plain system calls on memory owned by this stack frame.
    unsafe {
        // No handler eve installed may run here; SIGCHLD is read from a signalfd instead.
        // SIGCHLD must not be ignored, or the kernel reaps children and their status is lost.
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::sigprocmask(libc::SIG_SETMASK, &all, std::ptr::null_mut());
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(libc::SIGCHLD, &default, std::ptr::null_mut());

        // Keep only the socket: holding the program's pipes would keep its output open, and
        // std's exec-error channel must close when the program execs.
        let socket = if socket == 3 || libc::dup2(socket, 3) == 3 {
            3
        } else {
            libc::_exit(101)
        };
        close_from(4);
        for fd in 0..3 {
            libc::close(fd);
        }
        let mut chld: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut chld);
        libc::sigaddset(&mut chld, libc::SIGCHLD);
        let sigfd = libc::signalfd(-1, &chld, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC);

        let mut tree = Tree {
            me: libc::getpid(),
            program,
            program_done: false,
            socket,
            pending: [0; PENDING],
            pending_len: 0,
        };
        loop {
            if tree.reap() && tree.program_done {
                tree.end(0, 0);
            }
            let mut fds = [
                libc::pollfd {
                    fd: socket,
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: sigfd,
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            // Without a signalfd, look at the children every 50 ms.
            let wait = if sigfd < 0 { 50 } else { -1 };
            libc::poll(fds.as_mut_ptr(), 2, wait);
            drain(sigfd);
            if fds[0].revents != 0 {
                // EOF, an error or a byte: eve is done with the call (or gone).
                break;
            }
        }
        let deadline = now_ms() + KILL_DEADLINE_MS;
        let mut killed: u32 = 0;
        loop {
            if tree.reap() {
                tree.end(killed, 0);
            }
            let mut batch = [0 as libc::pid_t; BATCH];
            let found = live_children(tree.me, &mut batch);
            if now_ms() > deadline {
                tree.end(killed, found as u32);
            }
            for &pid in batch.iter().take(found) {
                if tree.remember(pid) {
                    killed = killed.saturating_add(1);
                }
                libc::kill(pid, libc::SIGKILL);
            }
            let mut fd = libc::pollfd {
                fd: sigfd,
                events: libc::POLLIN,
                revents: 0,
            };
            libc::poll(&mut fd, 1, 10);
            drain(sigfd);
        }
    }
}

/// The supervisor's children and what it has told eve.
struct Tree {
    me: libc::pid_t,
    program: libc::pid_t,
    program_done: bool,
    socket: RawFd,
    /// Children killed and not yet reaped.
    pending: [libc::pid_t; PENDING],
    pending_len: usize,
}

impl Tree {
    /// Reaps every child that has ended (reporting the program's status); true when the
    /// supervisor has no child left.
    unsafe fn reap(&mut self) -> bool {
        loop {
            let mut status = 0;
            // SAFETY: waitpid writes only `status`.
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if pid > 0 {
                self.forget(pid);
                if pid == self.program {
                    self.program_done = true;
                    self.send(Report::Exited(status));
                }
                continue;
            }
            if pid == 0 {
                return false;
            }
            // SAFETY: reading errno.
            let errno = unsafe { *libc::__errno_location() };
            if errno != libc::EINTR {
                return true;
            }
        }
    }

    /// Notes a killed child; false when it was already noted.
    fn remember(&mut self, pid: libc::pid_t) -> bool {
        if self.pending[..self.pending_len].contains(&pid) {
            return false;
        }
        if self.pending_len < PENDING {
            self.pending[self.pending_len] = pid;
            self.pending_len += 1;
        }
        true
    }

    fn forget(&mut self, pid: libc::pid_t) {
        if let Some(i) = self.pending[..self.pending_len]
            .iter()
            .position(|&p| p == pid)
        {
            self.pending_len -= 1;
            self.pending[i] = self.pending[self.pending_len];
        }
    }

    fn send(&self, report: Report) {
        let bytes = report.encode();
        // SAFETY: send reads `bytes`; MSG_NOSIGNAL because eve may have closed its end.
        unsafe {
            libc::send(
                self.socket,
                bytes.as_ptr().cast(),
                bytes.len(),
                libc::MSG_NOSIGNAL,
            );
        }
    }

    fn end(&self, killed: u32, survivors: u32) -> ! {
        self.send(Report::Ended { killed, survivors });
        // SAFETY: _exit ends the process without running anything of eve's.
        unsafe { libc::_exit(0) }
    }
}

/// Discards the pending signals of a signalfd.
unsafe fn drain(sigfd: RawFd) {
    if sigfd < 0 {
        return;
    }
    let mut buf = [0u8; 128 * 8];
    // SAFETY: read into a stack buffer; the fd is non-blocking.
    while unsafe { libc::read(sigfd, buf.as_mut_ptr().cast(), buf.len()) } > 0 {}
}

fn now_ms() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes `ts`.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec.saturating_mul(1000) + ts.tv_nsec / 1_000_000
}

/// Closes every file descriptor from `first` up.
unsafe fn close_from(first: u32) {
    // SAFETY: close_range and close only close descriptors.
    unsafe {
        if libc::syscall(libc::SYS_close_range, first, u32::MAX, 0) == 0 {
            return;
        }
        // Kernels before 5.9.
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
        let last = limit.rlim_cur.min(1 << 16) as libc::c_int;
        for fd in first as libc::c_int..last {
            libc::close(fd);
        }
    }
}

/// Fills `out` with children of `parent` that have not ended yet, read from `/proc`;
/// returns how many.
pub fn live_children(parent: libc::pid_t, out: &mut [libc::pid_t]) -> usize {
    let mut found = 0;
    for_each_process(|pid, state, ppid| {
        if ppid == parent && state != b'Z' && state != b'X' && found < out.len() {
            out[found] = pid;
            found += 1;
        }
    });
    found
}

/// Calls `f(pid, state, ppid)` for every process in `/proc`, without allocating.
pub fn for_each_process(mut f: impl FnMut(libc::pid_t, u8, libc::pid_t)) {
    // SAFETY: open/read/close on stack buffers; the directory fd is closed before returning.
    unsafe {
        let dir = libc::open(
            c"/proc".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        );
        if dir < 0 {
            return;
        }
        let mut buf = [0u8; 8192];
        loop {
            let n = libc::syscall(libc::SYS_getdents64, dir, buf.as_mut_ptr(), buf.len());
            if n <= 0 {
                break;
            }
            let n = n as usize;
            let mut at = 0;
            while at + 19 < n {
                let reclen = u16::from_ne_bytes([buf[at + 16], buf[at + 17]]) as usize;
                if reclen == 0 {
                    break;
                }
                let name = &buf[at + 19..(at + reclen).min(n)];
                let name = name.split(|&b| b == 0).next().unwrap_or(&[]);
                if let Some(pid) = parse_pid(name)
                    && let Some((state, ppid)) = stat(name)
                {
                    f(pid, state, ppid);
                }
                at += reclen;
            }
        }
        libc::close(dir);
    }
}

fn parse_pid(digits: &[u8]) -> Option<libc::pid_t> {
    if digits.is_empty() || digits.len() > 9 {
        return None;
    }
    let mut pid: libc::pid_t = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        pid = pid * 10 + libc::pid_t::from(d - b'0');
    }
    Some(pid)
}

/// The state letter and parent of the process whose `/proc` entry is `name`.
fn stat(name: &[u8]) -> Option<(u8, libc::pid_t)> {
    let mut path = [0u8; 32];
    let prefix = b"/proc/";
    let suffix = b"/stat\0";
    let len = prefix.len() + name.len() + suffix.len();
    if len > path.len() {
        return None;
    }
    path[..prefix.len()].copy_from_slice(prefix);
    path[prefix.len()..prefix.len() + name.len()].copy_from_slice(name);
    path[prefix.len() + name.len()..len].copy_from_slice(suffix);
    let mut buf = [0u8; 1024];
    // SAFETY: open/read/close with stack buffers.
    let n = unsafe {
        let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return None;
        }
        let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
        libc::close(fd);
        n
    };
    if n <= 0 {
        return None;
    }
    parse_stat(&buf[..n as usize])
}

/// `pid (comm) S ppid …`: the command name may hold spaces and parentheses, so the fields
/// start after the last `)`.
fn parse_stat(stat: &[u8]) -> Option<(u8, libc::pid_t)> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    let rest = stat.get(close + 2..)?;
    let state = *rest.first()?;
    let ppid = rest.get(2..)?.split(|&b| b == b' ').next()?;
    Some((state, parse_pid(ppid)?))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn reports_survive_the_socket() {
        for report in [
            Report::Exited(0x0900),
            Report::Exited(-1),
            Report::Ended {
                killed: 3,
                survivors: 1,
            },
        ] {
            assert_eq!(Report::decode(&report.encode()), Some(report));
        }
        assert_eq!(Report::decode(&[9; RECORD]), None);
    }

    #[test]
    fn stat_lines_with_odd_command_names_parse() {
        assert_eq!(parse_stat(b"42 (a) b (c)) S 7 42 42 0 -1"), Some((b'S', 7)));
        assert_eq!(parse_stat(b"1 (init) Z 0 1"), Some((b'Z', 0)));
        assert_eq!(parse_stat(b"garbage"), None);
        assert_eq!(parse_pid(b"123"), Some(123));
        assert_eq!(parse_pid(b"self"), None);
    }

    #[test]
    fn the_proc_scan_finds_this_process_and_its_parent() {
        let me = std::process::id() as libc::pid_t;
        // SAFETY: getppid has no preconditions.
        let parent = unsafe { libc::getppid() };
        let mut seen = None;
        for_each_process(|pid, _, ppid| {
            if pid == me {
                seen = Some(ppid);
            }
        });
        assert_eq!(seen, Some(parent));
    }
}
