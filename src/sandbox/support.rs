//! What this kernel can do for a sandbox: the Landlock ABI, seccomp, a private mount
//! namespace. Probed once per process.

use std::sync::OnceLock;

/// What the kernel offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Support {
    /// The Landlock ABI version (0: none).
    pub landlock_abi: i32,
    /// Whether seccomp filters can be installed.
    pub seccomp: bool,
    /// Whether a child can get a private mount namespace (as root, or through an
    /// unprivileged user namespace) to bind folders read-only.
    pub mount_namespace: bool,
}

impl Support {
    /// Nothing at all: not Linux, or everything disabled.
    pub const NONE: Support = Support {
        landlock_abi: 0,
        seccomp: false,
        mount_namespace: false,
    };

    /// What this machine offers (probed on first use).
    pub fn detect() -> Support {
        static DETECTED: OnceLock<Support> = OnceLock::new();
        *DETECTED.get_or_init(probe)
    }

    /// The lines `eve doctor` prints about the kernel.
    pub fn describe(&self) -> Vec<String> {
        let yes_no = |b: bool| if b { "available" } else { "not available" };
        vec![
            if self.landlock_abi > 0 {
                format!("Landlock: ABI {}", self.landlock_abi)
            } else {
                "Landlock: not available".to_string()
            },
            format!("seccomp: {}", yes_no(self.seccomp)),
            format!("private mount namespace: {}", yes_no(self.mount_namespace)),
        ]
    }
}

#[cfg(target_os = "linux")]
fn probe() -> Support {
    // landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) returns the ABI.
    // SAFETY: with a null attribute and the version flag the call only returns a number.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32,
        )
    };
    // SAFETY: PR_GET_SECCOMP reads this thread's seccomp mode; it has no arguments.
    let seccomp = unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) } >= 0;
    Support {
        landlock_abi: i32::try_from(abi.max(0)).unwrap_or(0),
        seccomp,
        mount_namespace: probe_mount_namespace(),
    }
}

#[cfg(not(target_os = "linux"))]
fn probe() -> Support {
    Support::NONE
}

/// Whether a child can unshare its mount namespace: forks one that tries.
#[cfg(target_os = "linux")]
fn probe_mount_namespace() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let flags = if root {
        libc::CLONE_NEWNS
    } else {
        libc::CLONE_NEWUSER | libc::CLONE_NEWNS
    };
    // SAFETY: the child only calls unshare and _exit, both async-signal-safe; the parent
    // waits for it.
    unsafe {
        let pid = libc::fork();
        if pid == 0 {
            let code = if libc::unshare(flags) == 0 { 0 } else { 1 };
            libc::_exit(code);
        }
        if pid < 0 {
            return false;
        }
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0) == pid
            && libc::WIFEXITED(status)
            && libc::WEXITSTATUS(status) == 0
    }
}
