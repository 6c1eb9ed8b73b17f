//! The supervisor of one call (Linux): a child of the sandbox's launcher that starts the
//! call's program and stays the ancestor of everything the program starts — `setsid`,
//! `nohup`, double forks and all. Where the kernel allows, it is the init of a PID
//! namespace of its own: when it ends, the kernel kills every process of the call at
//! once, so no chain of forks can outrun it. Elsewhere it is a child subreaper that
//! finds and kills its descendants through `/proc`. It reports on the call's socket;
//! when eve closes its end (the call is over, or eve died) it kills the rest, reaps
//! them, reports and exits; a byte `T` from eve first asks the call's processes to stop
//! (SIGTERM).
//!
//! Everything here runs in a forked child of the launcher: raw system calls on data
//! prepared before the fork, no allocation, nothing that can panic.

use std::ffi::c_char;
use std::os::fd::RawFd;

/// Bytes of one report on the socket.
pub const RECORD: usize = 12;
const EXITED: u32 = 1;
const ENDED: u32 = 2;
const STARTED: u32 = 3;
const FAILED: u32 = 4;
/// The byte eve writes to ask the call's processes to stop (SIGTERM).
pub const TERMINATE: u8 = b'T';
/// How long the supervisor keeps killing before it reports the processes that would not die
/// (a process stuck in the kernel, in uninterruptible sleep, dies only when it wakes).
const KILL_DEADLINE_MS: i64 = 2_000;
/// Children handled per round of killing; more are left to the next round.
const BATCH: usize = 256;
/// Processes remembered as already killed, so that a dying one is not counted twice.
const PENDING: usize = 1024;

/// Where starting the program failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Its working directory.
    Directory,
    /// The sandbox.
    Confine,
    /// `exec` itself.
    Exec,
    /// The supervisor's own set-up.
    Supervisor,
}

impl Stage {
    fn code(self) -> u32 {
        match self {
            Stage::Directory => 1,
            Stage::Confine => 2,
            Stage::Exec => 3,
            Stage::Supervisor => 4,
        }
    }

    fn from_code(code: u32) -> Option<Stage> {
        Some(match code {
            1 => Stage::Directory,
            2 => Stage::Confine,
            3 => Stage::Exec,
            4 => Stage::Supervisor,
            _ => return None,
        })
    }
}

/// What the supervisor tells eve, one record each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Report {
    /// The program runs (its `exec` succeeded).
    Started,
    /// The program could not start: an `errno`, and where.
    Failed { errno: i32, stage: Stage },
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
            STARTED => Some(Report::Started),
            FAILED => Some(Report::Failed {
                errno: i32::from_ne_bytes(a),
                stage: Stage::from_code(u32::from_ne_bytes(b))?,
            }),
            EXITED => Some(Report::Exited(i32::from_ne_bytes(a))),
            ENDED => Some(Report::Ended {
                killed: u32::from_ne_bytes(a),
                survivors: u32::from_ne_bytes(b),
            }),
            _ => None,
        }
    }

    pub fn encode(self) -> [u8; RECORD] {
        let (kind, a, b) = match self {
            Report::Started => (STARTED, [0; 4], [0; 4]),
            Report::Failed { errno, stage } => {
                (FAILED, errno.to_ne_bytes(), stage.code().to_ne_bytes())
            }
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

/// One call, everything built by the launcher before it forks the supervisor.
pub struct Call<'a> {
    pub path: *const c_char,
    pub argv: *const *const c_char,
    pub envp: *const *const c_char,
    pub cwd: *const c_char,
    pub stdin: RawFd,
    pub stdout: RawFd,
    pub stderr: RawFd,
    /// The supervisor's end of the call's socket.
    pub report: RawFd,
    /// The launcher's own descriptors, closed first.
    pub close: &'a [RawFd],
    /// The sandbox the program restricts itself to before `exec`.
    pub confine: Option<&'a super::linux::Prepared>,
    /// The supervisor is the init of a PID namespace of its own.
    pub pid_namespace: bool,
}

/// Sends one report; `MSG_NOSIGNAL` because eve may have closed its end.
fn send(socket: RawFd, report: Report) {
    let bytes = report.encode();
    // SAFETY: send reads `bytes`.
    unsafe {
        libc::send(
            socket,
            bytes.as_ptr().cast(),
            bytes.len(),
            libc::MSG_NOSIGNAL,
        );
    }
}

/// Reports that the call could not start (the launcher, before any fork) and closes the
/// socket.
pub fn refuse(socket: RawFd, errno: i32, stage: Stage) {
    send(socket, Report::Failed { errno, stage });
}

fn errno() -> i32 {
    // SAFETY: reading errno.
    unsafe { *libc::__errno_location() }
}

/// The supervisor's life, in the launcher's child: start the program, wait for it and
/// for eve's word, kill the rest, report, exit.
pub fn run(call: &Call<'_>) -> ! {
    // SAFETY: plain system calls on memory prepared before the fork.
    unsafe {
        for &fd in call.close {
            libc::close(fd);
        }
        let socket = call.report;
        libc::prctl(libc::PR_SET_NAME, c"eve-supervisor".as_ptr());
        if !call.pid_namespace && libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0 {
            give_up(socket);
        }
        let sigfd = child_signals();

        // The program's word on its exec: nothing (closed by exec) or (stage, errno).
        let mut status_pipe = [0 as RawFd; 2];
        if libc::pipe2(status_pipe.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            give_up(socket);
        }
        let program = libc::fork();
        if program < 0 {
            give_up(socket);
        }
        if program == 0 {
            libc::close(status_pipe[0]);
            start_program(call, status_pipe[1]);
        }
        libc::close(status_pipe[1]);
        for fd in [call.stdin, call.stdout, call.stderr] {
            libc::close(fd);
        }
        let mut word = [0u8; 8];
        let got = read_word(status_pipe[0], &mut word);
        libc::close(status_pipe[0]);
        if got == word.len() {
            let stage = u32::from_ne_bytes([word[0], word[1], word[2], word[3]]);
            let code = i32::from_ne_bytes([word[4], word[5], word[6], word[7]]);
            let mut status = 0;
            libc::waitpid(program, &mut status, 0);
            send(
                socket,
                Report::Failed {
                    errno: code,
                    stage: Stage::from_code(stage).unwrap_or(Stage::Exec),
                },
            );
            libc::_exit(0);
        }
        send(socket, Report::Started);

        let mut tree = Tree {
            me: if call.pid_namespace {
                outer_pid()
            } else {
                libc::getpid()
            },
            program,
            program_done: false,
            socket,
            pid_namespace: call.pid_namespace,
            pending: [0; PENDING],
            pending_len: 0,
        };
        watch(&mut tree, socket, sigfd);
        tree.kill_all(sigfd)
    }
}

/// Reports that the supervisor itself failed (errno as it stands) and exits.
unsafe fn give_up(socket: RawFd) -> ! {
    send(
        socket,
        Report::Failed {
            errno: errno(),
            stage: Stage::Supervisor,
        },
    );
    // SAFETY: exits the process, as the supervisor does.
    unsafe { libc::_exit(101) }
}

/// Blocks every signal and returns a signalfd for SIGCHLD (negative when there is none).
unsafe fn child_signals() -> RawFd {
    // SAFETY: system calls on signal sets on the stack.
    unsafe {
        // SIGCHLD is read from a signalfd; it must not be ignored, or the kernel reaps
        // children and their status is lost.
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::sigprocmask(libc::SIG_SETMASK, &all, std::ptr::null_mut());
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(libc::SIGCHLD, &default, std::ptr::null_mut());
        let mut chld: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut chld);
        libc::sigaddset(&mut chld, libc::SIGCHLD);
        libc::signalfd(-1, &chld, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC)
    }
}

/// Reads up to `word.len()` bytes from `fd` (retrying on EINTR) until it is full, closed
/// or failing; returns how many were read.
unsafe fn read_word(fd: RawFd, word: &mut [u8; 8]) -> usize {
    let mut got = 0usize;
    while got < word.len() {
        // SAFETY: read writes at most the rest of `word`.
        let n = unsafe { libc::read(fd, word[got..].as_mut_ptr().cast(), word.len() - got) };
        if n > 0 {
            got += n as usize;
        } else if n == 0 || errno() != libc::EINTR {
            break;
        }
    }
    got
}

/// Waits for the program and its descendants, and for eve's word on `socket`: returns
/// when eve is done with the call (EOF, an error or another byte than TERMINATE); ends
/// the call itself when the supervisor has no child left and the program is done.
unsafe fn watch(tree: &mut Tree, socket: RawFd, sigfd: RawFd) {
    // SAFETY: system calls on memory on the stack.
    unsafe {
        loop {
            if tree.reap(&mut 0) && tree.program_done {
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
                let mut byte = 0u8;
                let n = libc::recv(socket, (&mut byte as *mut u8).cast(), 1, libc::MSG_DONTWAIT);
                if n == 1 && byte == TERMINATE {
                    tree.signal_all(libc::SIGTERM);
                    continue;
                }
                if n < 0 && errno() == libc::EAGAIN {
                    continue;
                }
                // EOF, an error or another byte: eve is done with the call (or gone).
                return;
            }
        }
    }
}

/// The program's side of the fork: its stdio, its own session (no controlling
/// terminal), its directory, the sandbox, then `exec`. On failure it writes (stage,
/// errno) to `status` and exits.
unsafe fn start_program(call: &Call<'_>, status: RawFd) -> ! {
    // SAFETY: system calls on descriptors and memory prepared before the fork.
    unsafe {
        let fail = |stage: Stage| -> ! {
            let code = errno();
            let mut word = [0u8; 8];
            word[..4].copy_from_slice(&stage.code().to_ne_bytes());
            word[4..].copy_from_slice(&code.to_ne_bytes());
            libc::write(status, word.as_ptr().cast(), word.len());
            libc::_exit(127)
        };
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        for signal in 1..libc::SIGRTMAX() {
            if signal != libc::SIGKILL && signal != libc::SIGSTOP {
                libc::sigaction(signal, &default, std::ptr::null_mut());
            }
        }
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        // Above any number the three could hold, then onto 0, 1 and 2.
        let mut high = [0 as RawFd; 3];
        for (i, fd) in [call.stdin, call.stdout, call.stderr]
            .into_iter()
            .enumerate()
        {
            high[i] = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 10);
            if high[i] < 0 {
                fail(Stage::Supervisor);
            }
        }
        for (target, fd) in high.into_iter().enumerate() {
            if libc::dup2(fd, target as RawFd) < 0 {
                fail(Stage::Supervisor);
            }
        }
        libc::setsid();
        if libc::chdir(call.cwd) != 0 {
            fail(Stage::Directory);
        }
        if let Some(confine) = call.confine
            && confine.restrict().is_err()
        {
            fail(Stage::Confine);
        }
        // Every other descriptor closes at exec (the status pipe among them).
        if libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        ) != 0
        {
            let mut limit = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
            let last = limit.rlim_cur.min(1 << 16) as libc::c_int;
            for fd in 3..last {
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            }
        }
        libc::execve(call.path, call.argv, call.envp);
        fail(Stage::Exec)
    }
}

/// This process's pid as `/proc` (mounted in the first PID namespace) knows it.
unsafe fn outer_pid() -> libc::pid_t {
    let mut buf = [0u8; 32];
    // SAFETY: readlink writes at most `buf.len()` bytes.
    let n = unsafe { libc::readlink(c"/proc/self".as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if n <= 0 {
        return 0;
    }
    parse_pid(&buf[..n as usize]).unwrap_or(0)
}

/// The supervisor's children and what it has told eve.
struct Tree {
    /// The supervisor's pid in `/proc` (0: unknown).
    me: libc::pid_t,
    program: libc::pid_t,
    program_done: bool,
    socket: RawFd,
    pid_namespace: bool,
    /// Children killed and not yet reaped.
    pending: [libc::pid_t; PENDING],
    pending_len: usize,
}

impl Tree {
    /// Reaps every child that has ended (reporting the program's status), counting them
    /// in `reaped`; true when the supervisor has no child left.
    unsafe fn reap(&mut self, reaped: &mut u32) -> bool {
        loop {
            let mut status = 0;
            // SAFETY: waitpid writes only `status`.
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if pid > 0 {
                self.forget(pid);
                if pid == self.program {
                    self.program_done = true;
                    send(self.socket, Report::Exited(status));
                }
                *reaped = reaped.saturating_add(1);
                continue;
            }
            if pid == 0 {
                return false;
            }
            if errno() != libc::EINTR {
                return true;
            }
        }
    }

    /// Sends `signal` to every process of the call.
    unsafe fn signal_all(&mut self, signal: libc::c_int) {
        // SAFETY: kill only sends signals; in its own PID namespace, -1 means every
        // process of the namespace but the supervisor.
        unsafe {
            if self.pid_namespace {
                libc::kill(-1, signal);
                return;
            }
            let mut batch = [0 as libc::pid_t; BATCH];
            let found = live_children(self.me, &mut batch);
            for &pid in batch.iter().take(found) {
                libc::kill(pid, signal);
            }
        }
    }

    /// Kills every process of the call, reaps them, reports and exits.
    unsafe fn kill_all(mut self, sigfd: RawFd) -> ! {
        // SAFETY: plain system calls.
        unsafe {
            let deadline = now_ms() + KILL_DEADLINE_MS;
            let mut killed: u32 = 0;
            loop {
                if self.pid_namespace {
                    // Whatever was still running when eve said stop: every child reaped
                    // from here on (the program among them, if it still ran).
                    let mut reaped = 0;
                    let empty = self.reap(&mut reaped);
                    killed = killed.saturating_add(reaped);
                    if empty {
                        self.end(killed, 0);
                    }
                    if now_ms() > deadline {
                        let mut batch = [0 as libc::pid_t; BATCH];
                        let left = if self.me > 0 {
                            live_children(self.me, &mut batch)
                        } else {
                            1
                        };
                        self.end(killed, left as u32);
                    }
                    libc::kill(-1, libc::SIGKILL);
                } else {
                    if self.reap(&mut 0) {
                        self.end(killed, 0);
                    }
                    let mut batch = [0 as libc::pid_t; BATCH];
                    let found = live_children(self.me, &mut batch);
                    if now_ms() > deadline {
                        self.end(killed, found as u32);
                    }
                    for &pid in batch.iter().take(found) {
                        if self.remember(pid) {
                            killed = killed.saturating_add(1);
                        }
                        libc::kill(pid, libc::SIGKILL);
                    }
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

    fn end(&self, killed: u32, survivors: u32) -> ! {
        send(self.socket, Report::Ended { killed, survivors });
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
            Report::Started,
            Report::Failed {
                errno: libc::ENOENT,
                stage: Stage::Exec,
            },
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
