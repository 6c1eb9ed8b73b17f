//! The Linux sandbox: everything is built in eve's process ([`Prepared::new`]); a child
//! only makes system calls with it ([`Prepared::confine`]), in this order:
//!
//! 1. a private mount namespace (a user namespace too when eve is not root) in which
//!    the read-only paths are bound onto themselves read-only, and the folders above
//!    them onto themselves so they cannot be renamed away;
//! 2. `no_new_privs`;
//! 3. the Landlock ruleset: read everywhere, write beneath the writable folders;
//!    signals to processes outside the sandbox refused;
//! 4. the seccomp filter when the network is off: no IP sockets, no io_uring.

use super::{Enforced, Policy, Support};
use crate::manifest::SandboxMode;

#[cfg(target_os = "linux")]
pub use imp::Prepared;

#[cfg(not(target_os = "linux"))]
pub use other::Prepared;

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

    use super::{Enforced, Policy, SandboxMode, Support};

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

    /// What a child needs to enter a private mount namespace.
    #[derive(Debug)]
    struct Namespace {
        /// Also a user namespace (eve is not root), with these maps.
        user: Option<UserMaps>,
        binds: Vec<Bind>,
    }

    #[derive(Debug)]
    struct UserMaps {
        uid_map: Vec<u8>,
        gid_map: Vec<u8>,
    }

    /// A policy ready for children to apply.
    #[derive(Debug)]
    pub struct Prepared {
        off: bool,
        namespace: Option<Namespace>,
        ruleset: Option<OwnedFd>,
        seccomp: Option<BpfProgram>,
    }

    impl Prepared {
        pub fn new(policy: &Policy, support: &Support) -> Result<(Prepared, Enforced), String> {
            let mut enforced = Enforced {
                files: false,
                network: policy.network,
                read_only_paths: policy.read_only.is_empty(),
                missing: Vec::new(),
            };
            if policy.mode == SandboxMode::Off {
                enforced.network = true;
                enforced.read_only_paths = true;
                return Ok((
                    Prepared {
                        off: true,
                        namespace: None,
                        ruleset: None,
                        seccomp: None,
                    },
                    enforced,
                ));
            }
            let ruleset = if support.landlock_abi > 0 {
                enforced.files = true;
                Some(ruleset(policy)?)
            } else {
                enforced
                    .missing
                    .push("Landlock (writes outside the workspace are not stopped)".into());
                None
            };
            let seccomp = if policy.network {
                None
            } else if support.seccomp {
                enforced.network = true;
                Some(network_filter()?)
            } else {
                enforced
                    .missing
                    .push("seccomp (the network cannot be turned off)".into());
                None
            };
            let namespace = if policy.read_only.is_empty() {
                None
            } else if support.mount_namespace {
                enforced.read_only_paths = true;
                Some(namespace(policy)?)
            } else {
                enforced.missing.push(
                    "a private mount namespace (the agent's `.eve/` inside the workspace is not kept read-only)"
                        .into(),
                );
                None
            };
            Ok((
                Prepared {
                    off: false,
                    namespace,
                    ruleset,
                    seccomp,
                },
                enforced,
            ))
        }

        /// Applies the sandbox to the calling process (a child before `exec`). Only
        /// system calls on data prepared beforehand: safe between `fork` and `exec`.
        pub fn confine(&self) -> std::io::Result<()> {
            if self.off {
                return Ok(());
            }
            if let Some(namespace) = &self.namespace {
                enter(namespace)?;
            }
            // SAFETY: prctl with integer arguments only sets this process's flag.
            if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if let Some(ruleset) = &self.ruleset {
                // SAFETY: the descriptor is a Landlock ruleset this process owns.
                let done = unsafe {
                    libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32)
                };
                if done != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            if let Some(filter) = &self.seccomp {
                seccompiler::apply_filter(filter)
                    .map_err(|_| std::io::Error::from_raw_os_error(libc::EPERM))?;
            }
            Ok(())
        }
    }

    fn ruleset(policy: &Policy) -> Result<OwnedFd, String> {
        let fail = |e: landlock::RulesetError| format!("cannot prepare the Landlock sandbox: {e}");
        let read = AccessFs::from_read(ABI_USED);
        let all = AccessFs::from_all(ABI_USED);
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
            .add_rules(path_beneath_rules(&policy.writable, all))
            .map_err(fail)?
            .add_rules(path_beneath_rules(["/dev/null"], all))
            .map_err(fail)?;
        let fd: Option<OwnedFd> = created.into();
        fd.ok_or_else(|| "the kernel refused to create a Landlock ruleset".to_string())
    }

    fn network_filter() -> Result<BpfProgram, String> {
        let fail = |e: seccompiler::BackendError| format!("cannot prepare the network filter: {e}");
        let domain = |family: i32| {
            SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, family as u64)
                .and_then(|c| SeccompRule::new(vec![c]))
        };
        let ip = vec![
            domain(libc::AF_INET).map_err(fail)?,
            domain(libc::AF_INET6).map_err(fail)?,
        ];
        let mut rules = std::collections::BTreeMap::new();
        rules.insert(libc::SYS_socket, ip);
        // io_uring can open sockets without the socket system call.
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
    fn namespace(policy: &Policy) -> Result<Namespace, String> {
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
        // SAFETY: getuid and getgid have no preconditions.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let user = (!root).then(|| UserMaps {
            uid_map: format!("{uid} {uid} 1").into_bytes(),
            gid_map: format!("{gid} {gid} 1").into_bytes(),
        });
        Ok(Namespace { user, binds })
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

    /// Writes `bytes` to a `/proc/self` file (between fork and exec: raw calls only).
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

    fn enter(namespace: &Namespace) -> std::io::Result<()> {
        let flags = if namespace.user.is_some() {
            libc::CLONE_NEWUSER | libc::CLONE_NEWNS
        } else {
            libc::CLONE_NEWNS
        };
        // SAFETY: unshare only changes this process's namespaces.
        check(unsafe { libc::unshare(flags) })?;
        if let Some(maps) = &namespace.user {
            write_proc(b"/proc/self/setgroups\0", b"deny")?;
            write_proc(b"/proc/self/uid_map\0", &maps.uid_map)?;
            write_proc(b"/proc/self/gid_map\0", &maps.gid_map)?;
        }
        let none: *const libc::c_char = std::ptr::null();
        // SAFETY: mount is given NUL-terminated paths prepared in the parent, or null.
        unsafe {
            // Nothing done here may propagate back to eve's mounts.
            check(libc::mount(
                none,
                c"/".as_ptr(),
                none,
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ))?;
            for bind in &namespace.binds {
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

#[cfg(not(target_os = "linux"))]
mod other {
    use super::{Enforced, Policy, SandboxMode, Support};

    /// Outside Linux eve has no sandbox: the workspace guard and approvals remain.
    #[derive(Debug)]
    pub struct Prepared;

    impl Prepared {
        pub fn new(policy: &Policy, _support: &Support) -> Result<(Prepared, Enforced), String> {
            let off = policy.mode == SandboxMode::Off;
            Ok((
                Prepared,
                Enforced {
                    files: off,
                    network: off || policy.network,
                    read_only_paths: off || policy.read_only.is_empty(),
                    missing: if off {
                        Vec::new()
                    } else {
                        vec!["a sandbox on this operating system (eve confines processes on Linux only)".into()]
                    },
                },
            ))
        }

        pub fn confine(&self) -> std::io::Result<()> {
            Ok(())
        }
    }
}
