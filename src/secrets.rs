//! Provider keys held in eve's memory only, never in its environment.
//!
//! A process's environment block stays readable (`/proc/PID/environ`, `ps eww`) for as
//! long as it runs, whatever it unsets later, and any process the model starts can read
//! it. So a command that runs tools calls [`isolate`] first: when a secret variable is
//! set, eve re-executes itself with those variables removed from the environment and
//! passes their values through an inherited pipe, which the new image reads once and
//! closes. It also marks itself non-dumpable, so processes of the same user cannot read
//! its memory or its `/proc` files (root still can; the sandbox stops its children).

use std::collections::HashMap;
use std::sync::OnceLock;

/// The variable that tells the re-executed eve where its secrets are.
const FD_VAR: &str = "EVE_SECRETS_FD";

/// The most secret bytes passed on (a pipe holds 64 KiB without a reader).
const MAX_PAYLOAD: usize = 60 * 1024;

static STORE: OnceLock<HashMap<String, String>> = OnceLock::new();

/// The value of a variable: from the secrets eve took out of its environment, else
/// from the environment.
pub fn var(name: &str) -> Option<String> {
    STORE
        .get()
        .and_then(|store| store.get(name).cloned())
        .or_else(|| std::env::var(name).ok())
}

/// Whether a variable's name says it holds a key, whatever eve knows of it.
pub fn looks_secret(name: &str) -> bool {
    name.ends_with("_API_KEY")
}

/// Moves the secret variables out of eve's environment (see the module docs). `known`
/// names the variables the agent reads keys from; any variable whose name
/// [`looks_secret`] counts too. Returns only when eve goes on in this image: nothing
/// (more) was secret, or re-executing failed (the reason is returned so the caller can
/// warn).
///
/// The variables whose names say they are keys move first, before `known` is asked:
/// learning the others takes a build, and the image that makes it is then the one
/// that goes on, so the build is made once (the common case, a provider key in the
/// environment, costs one re-execution and one build). A variable only the agent's
/// definition names (a custom provider's `api_key_env`, a connection's `${VAR}`)
/// moves in one more re-execution, with the secrets taken over so far.
pub fn isolate(known: impl FnOnce() -> Vec<String>) -> Result<(), String> {
    harden();
    #[cfg(unix)]
    {
        let mut store = match std::env::var_os(FD_VAR) {
            Some(fd) => unix::adopt(&fd)?,
            None => HashMap::new(),
        };
        let mut secrets = set_vars(&looks_secret);
        if secrets.is_empty() {
            let known = known();
            secrets = set_vars(&|n| known.iter().any(|k| k == n));
        }
        if secrets.is_empty() {
            let _ = STORE.set(store);
            return Ok(());
        }
        // What the next image takes over: the secrets taken over so far, and these.
        let moving: Vec<(String, String)> = store
            .iter()
            .filter(|(name, _)| !secrets.iter().any(|(n, _)| n == *name))
            .map(|(n, v)| (n.clone(), v.clone()))
            .chain(secrets.iter().cloned())
            .collect();
        let error = unix::reexec(&moving, &secrets);
        // Still here: eve goes on in this image, with what it has taken over.
        store.extend(secrets);
        let _ = STORE.set(store);
        error
    }
    #[cfg(not(unix))]
    {
        let _ = known;
        Ok(())
    }
}

/// The variables set (not empty) whose names `wanted` picks. The environment is read
/// as the OS holds it: `std::env::vars` panics on a name or value that is not UTF-8,
/// which anyone who starts eve can put there. A secret's value that is not UTF-8 moves
/// out all the same (read back with its bad bytes replaced: no provider takes it anyway).
#[cfg(unix)]
fn set_vars(wanted: &dyn Fn(&str) -> bool) -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(name, value)| {
            let name = name.into_string().ok()?;
            (!value.is_empty() && wanted(&name))
                .then(|| (name, value.to_string_lossy().into_owned()))
        })
        .collect()
}

/// `bytes` random bytes from the operating system's generator, as lowercase hex: a
/// secret no one can guess (a server's token, a one-time login code).
pub fn random_hex(bytes: usize) -> Result<String, String> {
    use std::io::Read;
    let mut buf = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut random| random.read_exact(&mut buf))
        .map_err(|e| format!("cannot read random bytes from /dev/urandom: {e}"))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// No core dumps, no same-user reads of eve's memory or `/proc` files.
fn harden() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with PR_SET_DUMPABLE takes plain integers and changes only this
    // process's dumpable flag.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
}

#[cfg(unix)]
mod unix {
    use std::collections::HashMap;
    use std::ffi::OsStr;
    use std::io::{Read, Write};
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::os::unix::process::CommandExt;

    use super::{FD_VAR, MAX_PAYLOAD};

    /// Encodes `NAME\0VALUE\0` pairs.
    fn encode(secrets: &[(String, String)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (name, value) in secrets {
            out.extend_from_slice(name.as_bytes());
            out.push(0);
            out.extend_from_slice(value.as_bytes());
            out.push(0);
        }
        out
    }

    fn decode(bytes: &[u8]) -> HashMap<String, String> {
        let mut parts = bytes.split(|b| *b == 0);
        let mut out = HashMap::new();
        while let (Some(name), Some(value)) = (parts.next(), parts.next()) {
            if name.is_empty() {
                break;
            }
            out.insert(
                String::from_utf8_lossy(name).into_owned(),
                String::from_utf8_lossy(value).into_owned(),
            );
        }
        out
    }

    /// Replaces this process with eve again, without the variables `removed`, passing
    /// `secrets` on through a pipe; on success it does not return.
    pub fn reexec(
        secrets: &[(String, String)],
        removed: &[(String, String)],
    ) -> Result<(), String> {
        let payload = encode(secrets);
        if payload.len() > MAX_PAYLOAD {
            return Err("the secret variables are too large to pass on".into());
        }
        let exe = std::env::current_exe()
            .map_err(|e| format!("cannot find eve's own executable: {e}"))?;
        let mut fds = [0; 2];
        // SAFETY: pipe writes two new descriptors into the array it is given.
        if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
            return Err(format!(
                "cannot create a pipe: {}",
                std::io::Error::last_os_error()
            ));
        }
        // SAFETY: both descriptors were just created and are owned here alone.
        let (read_end, write_end) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let mut writer = std::fs::File::from(write_end);
        writer
            .write_all(&payload)
            .map_err(|e| format!("cannot pass the secrets on: {e}"))?;
        drop(writer);
        let names: Vec<&str> = removed.iter().map(|(n, _)| n.as_str()).collect();
        let mut args = std::env::args_os();
        let arg0 = args.next().unwrap_or_else(|| exe.clone().into_os_string());
        let mut command = std::process::Command::new(&exe);
        command
            .arg0(arg0)
            .args(args)
            .env_clear()
            .envs(
                std::env::vars_os()
                    .filter(|(name, _)| !names.iter().any(|n| OsStr::new(n) == name)),
            )
            .env(FD_VAR, {
                use std::os::fd::AsRawFd;
                read_end.as_raw_fd().to_string()
            });
        // The read end is inherited (pipe does not set close-on-exec); exec only returns on failure.
        let error = command.exec();
        Err(format!("cannot restart eve without its secrets: {error}"))
    }

    /// Reads the secrets a previous image passed on, and closes the pipe.
    pub fn adopt(fd: &OsStr) -> Result<HashMap<String, String>, String> {
        // SAFETY: removing a variable before any other thread exists (this runs first
        // thing in the process) cannot race with a reader of the environment.
        unsafe { std::env::remove_var(FD_VAR) };
        let fd: i32 = fd
            .to_str()
            .and_then(|s| s.parse().ok())
            .filter(|fd| *fd > 2)
            .ok_or_else(|| format!("{FD_VAR} is not a descriptor"))?;
        // SAFETY: the previous image left exactly this descriptor open for this image
        // to own; validity is checked by the read below.
        let file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
        let mut bytes = Vec::new();
        file.take(MAX_PAYLOAD as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read the secrets eve passed on: {e}"))?;
        Ok(decode(&bytes))
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn secrets_survive_the_pipe_format() {
            let secrets = vec![
                ("ANTHROPIC_API_KEY".to_string(), "sk-ant-1".to_string()),
                ("EMPTYISH".to_string(), "a=b c".to_string()),
            ];
            let decoded = decode(&encode(&secrets));
            assert_eq!(decoded.len(), 2);
            assert_eq!(decoded["ANTHROPIC_API_KEY"], "sk-ant-1");
            assert_eq!(decoded["EMPTYISH"], "a=b c");
            assert!(decode(b"").is_empty());
        }
    }
}
