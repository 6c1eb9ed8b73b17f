//! The Linux sandbox. eve decides what a policy needs ([`enforced`]); the launcher
//! process of a sandbox (see `launcher.rs`) builds it once ([`Prepared::build`]), enters
//! its namespaces once ([`Prepared::enter`]), and each call's program restricts itself
//! before `exec` ([`Prepared::restrict`]), in this order:
//!
//! 1. at the launcher's start, once: a private mount namespace (a user namespace too
//!    when eve is not root, which also lets the launcher give each call a PID namespace
//!    of its own) in which the read-only paths are bound onto themselves read-only, and
//!    the folders above them onto themselves so they cannot be renamed away;
//! 2. at the launcher's start, once ([`Prepared::settle`], inherited by every process
//!    of the sandbox): `no_new_privs`; an empty bounding set and no ambient or
//!    inheritable capability, so no `exec` gains one (as root too, so no device nodes,
//!    raw sockets or terminal injection); the seccomp filter: no terminal injection
//!    (`TIOCSTI`, `TIOCLINUX`), no io_uring, and when the network is off no socket but
//!    `AF_UNIX`;
//! 3. in each program, before `exec` ([`Prepared::restrict`]): the capabilities the
//!    launcher kept (to make PID namespaces) dropped, and the Landlock ruleset: read
//!    everywhere, write beneath the writable folders (never device nodes); signals to
//!    processes outside the program's own domain refused, the launcher and its
//!    supervisor among them.

use super::{Enforced, Policy, Support};
use crate::manifest::SandboxMode;

#[cfg(target_os = "linux")]
pub use imp::Prepared;

/// What `policy` gets on a machine that offers `support`, and what it cannot.
pub fn enforced(policy: &Policy, support: &Support) -> Enforced {
    if policy.mode == SandboxMode::Off {
        return Enforced {
            files: false,
            network: true,
            read_only_paths: true,
            missing: Vec::new(),
        };
    }
    if !cfg!(target_os = "linux") {
        return Enforced {
            files: false,
            network: policy.network,
            read_only_paths: policy.read_only.is_empty(),
            missing: vec![
                "a sandbox on this operating system (eve confines processes on Linux only)".into(),
            ],
        };
    }
    let mut enforced = Enforced {
        files: support.landlock_abi > 0,
        network: policy.network || support.seccomp,
        read_only_paths: policy.read_only.is_empty() || support.mount_namespace,
        missing: Vec::new(),
    };
    if !enforced.files {
        enforced
            .missing
            .push("Landlock (writes outside the workspace are not stopped)".into());
    }
    if !enforced.network {
        enforced
            .missing
            .push("seccomp (the network cannot be turned off)".into());
    }
    if !enforced.read_only_paths {
        enforced.missing.push(
            "a private mount namespace (the agent's `.eve/` inside the workspace is not kept read-only)"
                .into(),
        );
    }
    enforced
}

#[cfg(target_os = "linux")]
mod imp {
    use std::ffi::CString;
    use std::os::fd::{AsRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    use std::path::{Path, PathBuf};

    use landlock::{
        ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
        Scope, path_beneath_rules,
    };
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };

    use super::{Policy, Support};

    /// The newest Landlock ABI whose rights eve asks for; older kernels get what they
    /// support (best effort), newer ones nothing more.
    const ABI_USED: ABI = ABI::V6;

    /// One bind mount of a path onto itself.
    #[derive(Debug)]
    struct Bind {
        path: CString,
        /// Remount flags: read-only plus the flags the mount already has (a user
        /// namespace may not clear them).
        remount: Option<libc::c_ulong>,
    }

    #[derive(Debug)]
    struct UserMaps {
        uid_map: Vec<u8>,
        gid_map: Vec<u8>,
    }

    /// A policy built for the kernel, in the launcher process of a sandbox.
    #[derive(Debug)]
    pub struct Prepared {
        /// A user namespace to enter first (eve is not root): needed for the binds, and
        /// for the launcher to make PID namespaces.
        user: Option<UserMaps>,
        /// The binds of a private mount namespace; empty: none is needed.
        binds: Vec<Bind>,
        ruleset: Option<OwnedFd>,
        seccomp: Option<BpfProgram>,
        /// The highest capability this kernel knows.
        last_cap: libc::c_int,
    }

    impl Prepared {
        /// Builds what a confining `policy` needs with what `support` offers.
        pub fn build(policy: &Policy, support: &Support) -> Result<Prepared, String> {
            let ruleset = if support.landlock_abi > 0 {
                Some(ruleset(policy)?)
            } else {
                None
            };
            let seccomp = if support.seccomp {
                Some(filter(policy.network)?)
            } else {
                None
            };
            let binds = if support.mount_namespace {
                binds(policy)?
            } else {
                Vec::new()
            };
            // SAFETY: getuid, getgid and geteuid have no preconditions.
            let (uid, gid, euid) = unsafe { (libc::getuid(), libc::getgid(), libc::geteuid()) };
            let user = (euid != 0).then(|| UserMaps {
                uid_map: format!("{uid} {uid} 1").into_bytes(),
                gid_map: format!("{gid} {gid} 1").into_bytes(),
            });
            let last_cap = std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(63);
            Ok(Prepared {
                user,
                binds,
                ruleset,
                seccomp,
                last_cap,
            })
        }

        /// Enters the sandbox's namespaces: called once, by the launcher process while it
        /// is single-threaded; what it starts inherits them. A user namespace that cannot
        /// be made is an error only when the binds need it.
        pub fn enter(&self) -> Result<(), String> {
            let fail = |what: &str| {
                format!(
                    "cannot enter the sandbox's {what}: {}",
                    std::io::Error::last_os_error()
                )
            };
            if let Some(maps) = &self.user {
                let flags = if self.binds.is_empty() {
                    libc::CLONE_NEWUSER
                } else {
                    libc::CLONE_NEWUSER | libc::CLONE_NEWNS
                };
                // SAFETY: unshare only changes this process's namespaces.
                if unsafe { libc::unshare(flags) } != 0 {
                    if self.binds.is_empty() {
                        return Ok(());
                    }
                    return Err(fail("user and mount namespaces"));
                }
                write_proc(b"/proc/self/setgroups\0", b"deny")
                    .map_err(|_| fail("user namespace"))?;
                write_proc(b"/proc/self/uid_map\0", &maps.uid_map)
                    .map_err(|_| fail("user namespace"))?;
                write_proc(b"/proc/self/gid_map\0", &maps.gid_map)
                    .map_err(|_| fail("user namespace"))?;
            } else if !self.binds.is_empty() {
                // SAFETY: unshare only changes this process's namespaces.
                if unsafe { libc::unshare(libc::CLONE_NEWNS) } != 0 {
                    return Err(fail("mount namespace"));
                }
            }
            if !self.binds.is_empty() {
                mount_binds(&self.binds)
                    .map_err(|e| format!("cannot bind the read-only paths: {e}"))?;
            }
            Ok(())
        }

        /// Settles what every process of the sandbox shares, once, in the launcher after
        /// [`Prepared::enter`] (each call's supervisor and program inherit it):
        /// `no_new_privs`, an empty bounding set, no ambient or inheritable capability
        /// (so no `exec` in the sandbox ever gains one, setuid root included), and the
        /// seccomp filter. The launcher keeps its effective capabilities, which it needs
        /// to give each call a PID namespace; each program drops them ([`restrict`]).
        ///
        /// [`restrict`]: Prepared::restrict
        pub fn settle(&self) -> Result<(), String> {
            let fail = |what: &str, e: std::io::Error| format!("cannot {what}: {e}");
            // SAFETY: prctl with integer arguments only sets this process's flag.
            if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
                return Err(fail("set no_new_privs", std::io::Error::last_os_error()));
            }
            empty_bounding_set(self.last_cap)
                .map_err(|e| fail("drop the capability bounding set", e))?;
            clear_inheritable().map_err(|e| fail("clear the inheritable capabilities", e))?;
            if let Some(filter) = &self.seccomp {
                seccompiler::apply_filter(filter)
                    .map_err(|e| format!("cannot apply the seccomp filter: {e}"))?;
            }
            Ok(())
        }

        /// Restricts the calling process (a call's program between `fork` and `exec`),
        /// beyond what [`Prepared::settle`] gave the launcher: no capability at all, and a
        /// Landlock domain of its own (nested in the launcher's when it has one), so it
        /// can neither signal nor trace its supervisor or the launcher. Only system calls
        /// on data built beforehand: no allocation, no locks.
        pub fn restrict(&self) -> std::io::Result<()> {
            drop_capabilities()?;
            if let Some(ruleset) = &self.ruleset {
                // SAFETY: the descriptor is a Landlock ruleset this process owns.
                let done = unsafe {
                    libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32)
                };
                if done != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        }
    }

    #[repr(C)]
    struct CapHeader {
        version: u32,
        pid: libc::c_int,
    }

    #[repr(C)]
    #[derive(Clone, Copy)]
    struct CapData {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }

    const CAP_VERSION_3: u32 = 0x2008_0522;

    fn capget() -> std::io::Result<[CapData; 2]> {
        let mut header = CapHeader {
            version: CAP_VERSION_3,
            pid: 0,
        };
        let mut held = [CapData {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        // SAFETY: capget writes the two data structs it is given.
        let got = unsafe {
            libc::syscall(
                libc::SYS_capget,
                &mut header as *mut CapHeader,
                held.as_mut_ptr(),
            )
        };
        if got != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(held)
    }

    fn capset(sets: &[CapData; 2]) -> std::io::Result<()> {
        let header = CapHeader {
            version: CAP_VERSION_3,
            pid: 0,
        };
        // SAFETY: capset reads the header and the two data structs.
        if unsafe { libc::syscall(libc::SYS_capset, &header as *const CapHeader, sets.as_ptr()) }
            != 0
        {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// Empties the bounding set, so no `exec` gains a capability (setuid root included).
    /// A process that may not shrink it (no `CAP_SETPCAP`) is fine when it holds no
    /// capability anyway.
    fn empty_bounding_set(last_cap: libc::c_int) -> std::io::Result<()> {
        for cap in 0..=last_cap {
            // SAFETY: prctl with integer arguments changes only this process's sets.
            if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) } != 0 {
                let error = std::io::Error::last_os_error();
                if error.raw_os_error() == Some(libc::EINVAL) {
                    break;
                }
                let held = capget()?;
                if held.iter().any(|d| d.permitted != 0 || d.effective != 0) {
                    return Err(error);
                }
                break;
            }
        }
        Ok(())
    }

    /// Clears the ambient and inheritable sets, keeping the effective and permitted ones.
    fn clear_inheritable() -> std::io::Result<()> {
        // SAFETY: prctl with integer arguments; kernels before 4.3 have no ambient set.
        unsafe {
            libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_CLEAR_ALL,
                0,
                0,
                0,
            );
        }
        let mut held = capget()?;
        for data in &mut held {
            data.inheritable = 0;
        }
        capset(&held)
    }

    /// Drops every capability left (the permitted, effective and inheritable sets, and
    /// the ambient one), in a program before its `exec`.
    fn drop_capabilities() -> std::io::Result<()> {
        // SAFETY: prctl with integer arguments; kernels before 4.3 have no ambient set.
        unsafe {
            libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_CLEAR_ALL,
                0,
                0,
                0,
            );
        }
        capset(
            &[CapData {
                effective: 0,
                permitted: 0,
                inheritable: 0,
            }; 2],
        )
    }

    fn ruleset(policy: &Policy) -> Result<OwnedFd, String> {
        let fail = |e: landlock::RulesetError| format!("cannot prepare the Landlock sandbox: {e}");
        let read = AccessFs::from_read(ABI_USED);
        let all = AccessFs::from_all(ABI_USED);
        // Device nodes are never made nor driven, even beneath a writable folder: a
        // block device would reach any file, a terminal's node the person's shell.
        let write = all & !(AccessFs::MakeChar | AccessFs::MakeBlock | AccessFs::IoctlDev);
        let created = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(all)
            .map_err(fail)?
            .scope(Scope::Signal)
            .map_err(fail)?
            .create()
            .map_err(fail)?
            .add_rules(path_beneath_rules(["/"], read))
            .map_err(fail)?
            .add_rules(path_beneath_rules(&policy.writable, write))
            .map_err(fail)?
            .add_rules(path_beneath_rules(["/dev/null"], write))
            .map_err(fail)?;
        let fd: Option<OwnedFd> = created.into();
        fd.ok_or_else(|| "the kernel refused to create a Landlock ruleset".to_string())
    }

    /// The seccomp filter of a sandbox: no terminal injection, no io_uring (it reaches
    /// sockets and files without the calls filtered here), and without the network no
    /// socket of any family but `AF_UNIX` (not IP, nor packet, netlink or vsock).
    fn filter(network: bool) -> Result<BpfProgram, String> {
        let fail = |e: seccompiler::BackendError| format!("cannot prepare the seccomp filter: {e}");
        let arg = |index: u8, op: SeccompCmpOp, value: u64| {
            SeccompCondition::new(index, SeccompCmpArgLen::Dword, op, value)
                .and_then(|c| SeccompRule::new(vec![c]))
        };
        let mut rules = std::collections::BTreeMap::new();
        rules.insert(
            libc::SYS_ioctl,
            vec![
                arg(1, SeccompCmpOp::Eq, libc::TIOCSTI).map_err(fail)?,
                arg(1, SeccompCmpOp::Eq, libc::TIOCLINUX).map_err(fail)?,
            ],
        );
        if !network {
            rules.insert(
                libc::SYS_socket,
                vec![arg(0, SeccompCmpOp::Ne, libc::AF_UNIX as u64).map_err(fail)?],
            );
        }
        for call in [
            libc::SYS_io_uring_setup,
            libc::SYS_io_uring_enter,
            libc::SYS_io_uring_register,
        ] {
            rules.insert(call, Vec::new());
        }
        let arch = if cfg!(target_arch = "aarch64") {
            TargetArch::aarch64
        } else if cfg!(target_arch = "riscv64") {
            TargetArch::riscv64
        } else {
            TargetArch::x86_64
        };
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EACCES as u32),
            arch,
        )
        .map_err(fail)?;
        BpfProgram::try_from(filter).map_err(fail)
    }

    fn c_path(path: &Path) -> Result<CString, String> {
        CString::new(path.as_os_str().as_bytes())
            .map_err(|_| format!("`{}` cannot be a mount path", path.display()))
    }

    /// The binds that keep `policy.read_only` read-only: each folder between a writable
    /// folder and a read-only path pinned (bound onto itself, so it cannot be renamed
    /// away), then each read-only path bound read-only.
    fn binds(policy: &Policy) -> Result<Vec<Bind>, String> {
        let mut pinned: Vec<PathBuf> = Vec::new();
        for path in &policy.read_only {
            let Some(root) = policy.writable.iter().find(|w| path.starts_with(w)) else {
                continue;
            };
            let mut dir = path.parent();
            while let Some(d) = dir {
                if d == root.as_path() || !d.starts_with(root) {
                    break;
                }
                if !pinned.iter().any(|p| p == d) {
                    pinned.push(d.to_path_buf());
                }
                dir = d.parent();
            }
        }
        // Outer folders first, so the inner binds land on the pinned ones.
        pinned.sort_by_key(|p| p.components().count());
        let mut binds = Vec::new();
        for dir in pinned {
            binds.push(Bind {
                path: c_path(&dir)?,
                remount: None,
            });
        }
        for path in &policy.read_only {
            binds.push(Bind {
                path: c_path(path)?,
                remount: Some(libc::MS_RDONLY | existing_flags(path)),
            });
        }
        Ok(binds)
    }

    /// The flags of the mount `path` is on that a user namespace may not clear.
    fn existing_flags(path: &Path) -> libc::c_ulong {
        let Ok(c) = c_path(path) else {
            return 0;
        };
        // SAFETY: statvfs writes into the struct it is given.
        let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statvfs(c.as_ptr(), &mut stat) } != 0 {
            return 0;
        }
        let mut flags = 0;
        for (st, ms) in [
            (libc::ST_NOSUID, libc::MS_NOSUID),
            (libc::ST_NODEV, libc::MS_NODEV),
            (libc::ST_NOEXEC, libc::MS_NOEXEC),
            (libc::ST_NOATIME, libc::MS_NOATIME),
            (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
            (libc::ST_RELATIME, libc::MS_RELATIME),
        ] {
            if stat.f_flag & st != 0 {
                flags |= ms;
            }
        }
        flags
    }

    fn check(result: libc::c_int) -> std::io::Result<()> {
        if result == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }

    /// Writes `bytes` to a `/proc/self` file.
    fn write_proc(path: &'static [u8], bytes: &[u8]) -> std::io::Result<()> {
        // SAFETY: `path` is a NUL-terminated literal; the descriptor is closed below.
        unsafe {
            let fd = libc::open(path.as_ptr().cast(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
            libc::close(fd);
            if written < 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }

    fn mount_binds(binds: &[Bind]) -> std::io::Result<()> {
        let none: *const libc::c_char = std::ptr::null();
        // SAFETY: mount is given NUL-terminated paths prepared beforehand, or null.
        unsafe {
            // Nothing done here may propagate back to eve's mounts.
            check(libc::mount(
                none,
                c"/".as_ptr(),
                none,
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ))?;
            for bind in binds {
                check(libc::mount(
                    bind.path.as_ptr(),
                    bind.path.as_ptr(),
                    none,
                    libc::MS_BIND | libc::MS_REC,
                    std::ptr::null(),
                ))?;
                if let Some(extra) = bind.remount {
                    check(libc::mount(
                        none,
                        bind.path.as_ptr(),
                        none,
                        libc::MS_BIND | libc::MS_REMOUNT | extra,
                        std::ptr::null(),
                    ))?;
                }
            }
        }
        Ok(())
    }
}
