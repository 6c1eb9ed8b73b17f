//! Starting the processes eve runs for the model — `bash`, command tools, stdio servers
//! — through one door: [`Launcher::spawn`] of a [`Command`].
//!
//! On Linux each sandbox (and the unconfined one, for `mode = "off"`) has a launcher
//! process, started at its first call and kept for the session: a fresh image of eve
//! (see `zygote.rs`) that enters the sandbox's namespaces once and forks a small
//! supervisor per call. So a call costs two forks of a small process instead of a fork
//! of eve, and nothing a call starts outlives it: the supervisor is the init of the
//! call's own PID namespace where the kernel allows (the kernel kills the whole
//! namespace when it ends), else a subreaper that hunts its descendants through `/proc`.
//! Elsewhere the program runs in its own process group, which is killed at the end.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{Policy, Support};
use crate::manifest::SandboxMode;

/// A program to start: everything it gets is written here (its environment starts
/// empty).
#[derive(Debug, Clone)]
pub struct Command {
    program: OsString,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    cwd: PathBuf,
    stdin: bool,
}

impl Command {
    /// `program` (a path, or a name looked up on the command's `PATH`) in `cwd`, with an
    /// empty environment and stdin closed.
    pub fn new(program: impl AsRef<OsStr>, cwd: &Path) -> Command {
        Command {
            program: program.as_ref().to_os_string(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: cwd.to_path_buf(),
            stdin: false,
        }
    }

    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut Command {
        self.args.push(arg.as_ref().to_os_string());
        self
    }

    pub fn args<I, S>(&mut self, args: I) -> &mut Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
        self
    }

    /// Sets a variable (replacing one of that name).
    pub fn env(&mut self, name: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Command {
        let name = name.as_ref();
        self.env.retain(|(n, _)| n != name);
        self.env
            .push((name.to_os_string(), value.as_ref().to_os_string()));
        self
    }

    /// eve's own environment, but the variables named in `hidden`.
    pub fn inherit_env(&mut self, hidden: &[String]) -> &mut Command {
        for (name, value) in std::env::vars_os() {
            if !hidden.iter().any(|h| OsStr::new(h) == name) {
                self.env(name, value);
            }
        }
        self
    }

    /// Gives the program a pipe as stdin ([`Child::stdin`]).
    pub fn stdin_piped(&mut self) -> &mut Command {
        self.stdin = true;
        self
    }

    pub fn program(&self) -> &OsStr {
        &self.program
    }

    /// The program's variables, as it will get them.
    pub fn envs(&self) -> &[(OsString, OsString)] {
        &self.env
    }
}

/// How a call's processes were stopped.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Stopped {
    /// Processes still running when the call was stopped, killed.
    pub killed: u32,
    /// Killed processes that had not died when the supervisor stopped waiting.
    pub survivors: u32,
    /// The supervisor was gone before it could say (killed from inside the call, where
    /// it is not a namespace's init).
    pub lost: bool,
}

/// How long eve waits for a supervisor to kill its call and say so.
const STOP_WAIT: Duration = Duration::from_secs(5);

/// The setup message of a launcher: `0` (unconfined) or `1`, the policy and support.
fn encode_setup(confine: Option<(&Policy, &Support)>) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    let mut w = super::wire::Writer::new();
    let Some((policy, support)) = confine else {
        return w.u32(0).finish();
    };
    let mode = match policy.mode {
        SandboxMode::Off => 0,
        SandboxMode::ReadOnly => 1,
        SandboxMode::WorkspaceWrite => 2,
    };
    w.u32(1)
        .u32(mode)
        .u32(u32::from(policy.network))
        .list(policy.writable.iter().map(|p| p.as_os_str().as_bytes()))
        .list(policy.read_only.iter().map(|p| p.as_os_str().as_bytes()))
        .u32(u32::try_from(support.landlock_abi).unwrap_or(0))
        .u32(u32::from(support.seccomp))
        .u32(u32::from(support.mount_namespace))
        .finish()
}

/// Reads what [`encode_setup`] wrote after its first number.
pub(super) fn decode_setup(r: &mut super::wire::Reader<'_>) -> Option<(Policy, Support)> {
    use std::os::unix::ffi::OsStrExt;
    let mode = match r.u32()? {
        0 => SandboxMode::Off,
        1 => SandboxMode::ReadOnly,
        _ => SandboxMode::WorkspaceWrite,
    };
    let network = r.u32()? != 0;
    let paths = |list: Vec<&[u8]>| -> Vec<PathBuf> {
        list.into_iter()
            .map(|b| PathBuf::from(OsStr::from_bytes(b)))
            .collect()
    };
    let writable = paths(r.list()?);
    let read_only = paths(r.list()?);
    let support = Support {
        landlock_abi: i32::try_from(r.u32()?).unwrap_or(0),
        seccomp: r.u32()? != 0,
        mount_namespace: r.u32()? != 0,
    };
    Some((
        Policy {
            mode,
            network,
            writable,
            read_only,
        },
        support,
    ))
}

#[cfg(target_os = "linux")]
pub use linux::{Child, Launcher};

#[cfg(not(target_os = "linux"))]
pub use other::{Child, Launcher};

/// A child's stdin, stdout and stderr, as eve holds them.
#[cfg(target_os = "linux")]
pub type ChildStdin = tokio::net::unix::pipe::Sender;
#[cfg(target_os = "linux")]
pub type ChildStdout = tokio::net::unix::pipe::Receiver;
#[cfg(target_os = "linux")]
pub type ChildStderr = tokio::net::unix::pipe::Receiver;
#[cfg(not(target_os = "linux"))]
pub type ChildStdin = tokio::process::ChildStdin;
#[cfg(not(target_os = "linux"))]
pub type ChildStdout = tokio::process::ChildStdout;
#[cfg(not(target_os = "linux"))]
pub type ChildStderr = tokio::process::ChildStderr;

#[cfg(target_os = "linux")]
mod linux {
    use std::io;
    use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    use std::process::{ExitStatus, Stdio};
    use std::sync::Mutex;

    use tokio::io::AsyncWriteExt;
    use tokio::net::unix::pipe;

    use super::super::supervisor::{RECORD, Report, Stage, TERMINATE};
    use super::super::wire::Writer;
    use super::super::zygote;
    use super::{Command, Policy, STOP_WAIT, Stopped, Support};
    use crate::sync::lock;

    /// The door to a sandbox's launcher process (started at the first call).
    #[derive(Debug)]
    pub struct Launcher {
        setup: Vec<u8>,
        running: Mutex<Option<Running>>,
    }

    /// A launcher process and eve's end of its control socket.
    #[derive(Debug)]
    struct Running {
        control: Option<OwnedFd>,
        process: std::process::Child,
    }

    impl Drop for Running {
        fn drop(&mut self) {
            // The launcher exits when its control socket closes; its supervisors go on
            // until eve closes their sockets.
            drop(self.control.take());
            let _ = self.process.wait();
        }
    }

    impl Launcher {
        /// A launcher for processes confined by `policy` (`None`: unconfined).
        pub fn new(confine: Option<(&Policy, &Support)>) -> Launcher {
            Launcher {
                setup: super::encode_setup(confine),
                running: Mutex::new(None),
            }
        }

        /// Starts `command`; returns once its program runs (its `exec` succeeded), or
        /// with the error that kept it from starting (`NotFound` for a missing program).
        pub async fn spawn(&self, command: &Command) -> io::Result<Child> {
            let description = describe(command)?;
            let (stdout_r, stdout_w) = pipe_pair()?;
            let (stderr_r, stderr_w) = pipe_pair()?;
            let stdin = if command.stdin {
                Some(pipe_pair()?)
            } else {
                None
            };
            let (ours, theirs) = std::os::unix::net::UnixStream::pair()?;
            let flags = if stdin.is_some() {
                zygote::STDIN_PIPED
            } else {
                0
            };
            let header = Writer::new().u32(flags).finish();
            let mut fds = vec![
                description.as_fd(),
                stdout_w.as_fd(),
                stderr_w.as_fd(),
                theirs.as_fd(),
            ];
            if let Some((read, _)) = &stdin {
                fds.push(read.as_fd());
            }
            self.send(&header, &fds)?;
            drop(fds);
            drop((description, stdout_w, stderr_w, theirs));
            let stdin = stdin.map(|(read, write)| {
                drop(read);
                write
            });
            ours.set_nonblocking(true)?;
            let mut reports = Reports::new(tokio::net::UnixStream::from_std(ours)?);
            match reports.next().await {
                Some(Report::Started) => Ok(Child {
                    stdin: stdin.map(pipe::Sender::from_owned_fd).transpose()?,
                    stdout: Some(pipe::Receiver::from_owned_fd(stdout_r)?),
                    stderr: Some(pipe::Receiver::from_owned_fd(stderr_r)?),
                    reports,
                    status: None,
                }),
                Some(Report::Failed { errno, stage }) => {
                    let error = io::Error::from_raw_os_error(errno);
                    Err(match stage {
                        Stage::Exec => error,
                        Stage::Directory => io::Error::new(
                            error.kind(),
                            format!("cannot enter its working directory: {error}"),
                        ),
                        Stage::Confine => io::Error::new(
                            error.kind(),
                            format!("cannot confine it in the sandbox: {error}"),
                        ),
                        Stage::Supervisor => io::Error::new(
                            error.kind(),
                            format!("eve's launcher could not start it: {error}"),
                        ),
                    })
                }
                _ => Err(io::Error::other(
                    "eve's launcher ended before the program started",
                )),
            }
        }

        /// Sends one call to the launcher, starting it first (again, if it died).
        fn send(&self, header: &[u8], fds: &[BorrowedFd<'_>]) -> io::Result<()> {
            let mut running = lock(&self.running);
            for attempt in 0..2 {
                if running.is_none() {
                    *running = Some(Running::start(&self.setup)?);
                }
                let control = running
                    .as_ref()
                    .and_then(|r| r.control.as_ref())
                    .map(|c| c.as_raw_fd())
                    .ok_or_else(|| io::Error::other("eve's launcher is gone"))?;
                match send_fds(control, header, fds) {
                    Ok(()) => return Ok(()),
                    Err(e)
                        if attempt == 0
                            && matches!(
                                e.raw_os_error(),
                                Some(libc::EPIPE | libc::ECONNRESET | libc::ENOTCONN)
                            ) =>
                    {
                        *running = None;
                    }
                    Err(e) => return Err(e),
                }
            }
            Err(io::Error::other("eve's launcher keeps dying"))
        }
    }

    impl Running {
        /// Starts a launcher: a fresh image of this program, in its own process group
        /// (a Ctrl-C at the terminal is eve's to handle), with an empty environment.
        fn start(setup: &[u8]) -> io::Result<Running> {
            // The launcher is this image's `.init_array` entry: keep it linked.
            std::hint::black_box(&zygote::ENTRY);
            let (ours, theirs) = seqpacket_pair()?;
            let process = std::process::Command::new("/proc/self/exe")
                .arg(zygote::ARG)
                .env_clear()
                .stdin(Stdio::from(theirs))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .process_group(0)
                .spawn()
                .map_err(|e| {
                    io::Error::new(e.kind(), format!("cannot start eve's launcher: {e}"))
                })?;
            let mut running = Running {
                control: Some(ours),
                process,
            };
            let control = running
                .control
                .as_ref()
                .map(|c| c.as_raw_fd())
                .unwrap_or(-1);
            send_fds(control, setup, &[])?;
            let mut answer = [0u8; 4096];
            let n = recv_timeout(control, &mut answer, std::time::Duration::from_secs(10))?;
            let mut r = super::super::wire::Reader::new(&answer[..n]);
            match r.u32() {
                Some(0) => Ok(running),
                Some(_) => {
                    let why = r
                        .bytes()
                        .map(|b| String::from_utf8_lossy(b).into_owned())
                        .unwrap_or_default();
                    running.control = None;
                    Err(io::Error::other(why))
                }
                None => Err(io::Error::other("eve's launcher did not start")),
            }
        }
    }

    /// A call's description, in a memfd the launcher reads.
    fn describe(command: &Command) -> io::Result<OwnedFd> {
        let mut argv: Vec<&[u8]> = vec![command.program.as_bytes()];
        argv.extend(command.args.iter().map(|a| a.as_bytes()));
        let env: Vec<Vec<u8>> = command
            .env
            .iter()
            .map(|(n, v)| [n.as_bytes(), b"=", v.as_bytes()].concat())
            .collect();
        let bytes = Writer::new()
            .bytes(command.program.as_bytes())
            .list(argv.into_iter())
            .list(env.iter().map(Vec::as_slice))
            .bytes(command.cwd.as_os_str().as_bytes())
            .finish();
        if bytes.len() > zygote::MAX_CALL {
            return Err(io::Error::from_raw_os_error(libc::E2BIG));
        }
        // SAFETY: memfd_create with a NUL-terminated name returns a new descriptor.
        let fd = unsafe { libc::memfd_create(c"eve-call".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: memfd_create returned a descriptor this process owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut file = std::fs::File::from(fd);
        std::io::Write::write_all(&mut file, &bytes)?;
        Ok(OwnedFd::from(file))
    }

    fn pipe_pair() -> io::Result<(OwnedFd, OwnedFd)> {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: pipe2 writes two descriptors this process then owns.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both are new descriptors owned here.
        Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
    }

    fn seqpacket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: socketpair writes two descriptors this process then owns.
        if unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        } != 0
        {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both are new descriptors owned here.
        Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
    }

    /// Sends `bytes` with `fds` attached, in one message.
    fn send_fds(socket: RawFd, bytes: &[u8], fds: &[BorrowedFd<'_>]) -> io::Result<()> {
        let raw: Vec<RawFd> = fds.iter().map(|f| f.as_raw_fd()).collect();
        let payload = std::mem::size_of_val(raw.as_slice());
        // SAFETY: CMSG_SPACE only computes a size.
        let space = unsafe { libc::CMSG_SPACE(payload as u32) } as usize;
        let mut control = vec![0u64; space.div_ceil(8).max(1)];
        let mut iov = libc::iovec {
            iov_base: bytes.as_ptr().cast_mut().cast(),
            iov_len: bytes.len(),
        };
        // SAFETY: msghdr points at buffers that outlive the call; the control message
        // is written within the space CMSG_SPACE gave.
        unsafe {
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            if !raw.is_empty() {
                msg.msg_control = control.as_mut_ptr().cast();
                msg.msg_controllen = space as _;
                let cmsg = libc::CMSG_FIRSTHDR(&msg);
                (*cmsg).cmsg_level = libc::SOL_SOCKET;
                (*cmsg).cmsg_type = libc::SCM_RIGHTS;
                (*cmsg).cmsg_len = libc::CMSG_LEN(payload as u32) as _;
                std::ptr::copy_nonoverlapping(
                    raw.as_ptr(),
                    libc::CMSG_DATA(cmsg).cast::<RawFd>(),
                    raw.len(),
                );
            }
            loop {
                if libc::sendmsg(socket, &msg, libc::MSG_NOSIGNAL) >= 0 {
                    return Ok(());
                }
                let error = io::Error::last_os_error();
                if error.raw_os_error() != Some(libc::EINTR) {
                    return Err(error);
                }
            }
        }
    }

    /// Receives one message, waiting at most `wait`.
    fn recv_timeout(socket: RawFd, buf: &mut [u8], wait: std::time::Duration) -> io::Result<usize> {
        let deadline = std::time::Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "eve's launcher did not answer",
                ));
            }
            let mut fd = libc::pollfd {
                fd: socket,
                events: libc::POLLIN,
                revents: 0,
            };
            let ms = libc::c_int::try_from(left.as_millis()).unwrap_or(libc::c_int::MAX);
            // SAFETY: poll writes the struct; recv writes at most `buf.len()` bytes.
            unsafe {
                if libc::poll(&mut fd, 1, ms.max(1)) <= 0 {
                    continue;
                }
                let n = libc::recv(socket, buf.as_mut_ptr().cast(), buf.len(), 0);
                if n >= 0 {
                    return Ok(n as usize);
                }
            }
            let error = io::Error::last_os_error();
            if error.raw_os_error() != Some(libc::EINTR) {
                return Err(error);
            }
        }
    }

    /// A started program, and everything it starts.
    #[derive(Debug)]
    pub struct Child {
        pub stdin: Option<pipe::Sender>,
        pub stdout: Option<pipe::Receiver>,
        pub stderr: Option<pipe::Receiver>,
        reports: Reports,
        status: Option<ExitStatus>,
    }

    impl Child {
        /// Waits for the program to exit.
        pub async fn wait(&mut self) -> io::Result<ExitStatus> {
            if let Some(status) = self.status {
                return Ok(status);
            }
            loop {
                match self.reports.next().await {
                    Some(Report::Exited(raw)) => {
                        let status = ExitStatus::from_raw(raw);
                        self.status = Some(status);
                        return Ok(status);
                    }
                    Some(_) => {}
                    None => {
                        return Err(io::Error::other(
                            "its supervisor was killed, so its exit status is unknown",
                        ));
                    }
                }
            }
        }

        /// The program's exit status, if it has exited (without waiting).
        pub fn try_wait(&mut self) -> Option<ExitStatus> {
            while self.status.is_none() {
                match self.reports.try_next() {
                    Some(Report::Exited(raw)) => self.status = Some(ExitStatus::from_raw(raw)),
                    Some(_) => {}
                    None => break,
                }
            }
            self.status
        }

        /// Reads stdout and stderr to their end, waits for the program, then stops the
        /// call: for tests.
        #[cfg(test)]
        pub async fn output(mut self) -> io::Result<(ExitStatus, Vec<u8>, Vec<u8>)> {
            use tokio::io::AsyncReadExt;
            let (mut out, mut err) = (Vec::new(), Vec::new());
            let (stdout, stderr) = (self.stdout.take(), self.stderr.take());
            let read_out = async {
                if let Some(mut stdout) = stdout {
                    stdout.read_to_end(&mut out).await?;
                }
                Ok::<(), io::Error>(())
            };
            let read_err = async {
                if let Some(mut stderr) = stderr {
                    stderr.read_to_end(&mut err).await?;
                }
                Ok::<(), io::Error>(())
            };
            let (a, b) = tokio::join!(read_out, read_err);
            a?;
            b?;
            let status = self.wait().await?;
            self.stop().await;
            Ok((status, out, err))
        }

        /// Asks every process of the call to stop (SIGTERM).
        pub async fn terminate(&mut self) {
            let _ = self.reports.stream.write_all(&[TERMINATE]).await;
        }

        /// Kills every process of the call that is left, and says how many there were.
        pub async fn stop(mut self) -> Stopped {
            // The supervisor reads the end of eve's half of the socket as the word to stop.
            let _ = self.reports.stream.shutdown().await;
            let ended = tokio::time::timeout(STOP_WAIT, async {
                loop {
                    match self.reports.next().await {
                        Some(Report::Ended { killed, survivors }) => {
                            return Some((killed, survivors));
                        }
                        Some(_) => {}
                        None => return None,
                    }
                }
            })
            .await;
            match ended {
                Ok(Some((killed, survivors))) => Stopped {
                    killed,
                    survivors,
                    lost: false,
                },
                Ok(None) | Err(_) => Stopped {
                    lost: true,
                    ..Stopped::default()
                },
            }
        }
    }

    /// The supervisor's reports, read record by record; cancel-safe (a partial record
    /// waits in the buffer).
    #[derive(Debug)]
    struct Reports {
        stream: tokio::net::UnixStream,
        buf: [u8; RECORD],
        have: usize,
    }

    impl Reports {
        fn new(stream: tokio::net::UnixStream) -> Reports {
            Reports {
                stream,
                buf: [0; RECORD],
                have: 0,
            }
        }

        /// The next report; `None` once the supervisor is gone.
        async fn next(&mut self) -> Option<Report> {
            use tokio::io::AsyncReadExt;
            loop {
                match self.stream.read(&mut self.buf[self.have..]).await {
                    Ok(0) | Err(_) => return None,
                    Ok(n) => self.have += n,
                }
                if let Some(report) = self.complete() {
                    return Some(report);
                }
            }
        }

        /// The next report if one has arrived.
        fn try_next(&mut self) -> Option<Report> {
            loop {
                match self.stream.try_read(&mut self.buf[self.have..]) {
                    Ok(0) | Err(_) => return None,
                    Ok(n) => self.have += n,
                }
                if let Some(report) = self.complete() {
                    return Some(report);
                }
            }
        }

        fn complete(&mut self) -> Option<Report> {
            if self.have < self.buf.len() {
                return None;
            }
            self.have = 0;
            Report::decode(&self.buf)
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod other {
    use std::io;
    use std::process::{ExitStatus, Stdio};

    use super::{Command, Policy, Stopped, Support};

    /// Outside Linux: each program in its own process group, killed at the end.
    #[derive(Debug)]
    pub struct Launcher;

    impl Launcher {
        pub fn new(_confine: Option<(&Policy, &Support)>) -> Launcher {
            Launcher
        }

        pub async fn spawn(&self, command: &Command) -> io::Result<Child> {
            let mut std = tokio::process::Command::new(&command.program);
            std.args(&command.args)
                .env_clear()
                .envs(command.env.iter().map(|(k, v)| (k, v)))
                .current_dir(&command.cwd)
                .stdin(if command.stdin {
                    Stdio::piped()
                } else {
                    Stdio::null()
                })
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true);
            #[cfg(unix)]
            std.process_group(0);
            let mut child = std.spawn()?;
            Ok(Child {
                stdin: child.stdin.take(),
                stdout: child.stdout.take(),
                stderr: child.stderr.take(),
                child,
            })
        }
    }

    #[derive(Debug)]
    pub struct Child {
        pub stdin: Option<tokio::process::ChildStdin>,
        pub stdout: Option<tokio::process::ChildStdout>,
        pub stderr: Option<tokio::process::ChildStderr>,
        child: tokio::process::Child,
    }

    impl Child {
        pub async fn wait(&mut self) -> io::Result<ExitStatus> {
            self.child.wait().await
        }

        pub fn try_wait(&mut self) -> Option<ExitStatus> {
            self.child.try_wait().ok().flatten()
        }

        pub async fn terminate(&mut self) {
            #[cfg(unix)]
            self.signal(libc::SIGTERM);
        }

        #[cfg(unix)]
        fn signal(&self, signal: i32) {
            if let Some(pid) = self.child.id().and_then(|p| i32::try_from(p).ok()) {
                // SAFETY: killpg only sends a signal; a stale group fails with ESRCH.
                unsafe {
                    libc::killpg(pid, signal);
                }
            }
        }

        pub async fn stop(mut self) -> Stopped {
            #[cfg(unix)]
            self.signal(libc::SIGKILL);
            let _ = self.child.start_kill();
            let _ = self.child.wait().await;
            Stopped::default()
        }
    }
}
