//! A real `restate-server` on 127.0.0.1 for end-to-end tests of `eve serve --restate`,
//! and a load balancer in front of the eve workers, as a deployment behind one address
//! has in production.
//!
//! The server is the one `.ci/run` installs from the npm registry
//! (`npm ci --prefix tests/npm`: `@restatedev/restate-server`), which also sets
//! `EVE_RESTATE_SERVER` to it. Without it, a test skips with a message saying how to
//! install it, except under CI (`CI` set), where it fails.
//! The server starts with telemetry off, and in a mount namespace whose
//! `/etc/resolv.conf` names only 127.0.0.1: it looks for a newer release at every
//! start, and nothing in a test may reach beyond this machine.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Where the server binary is: `EVE_RESTATE_SERVER`, or what npm installed.
pub fn binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("EVE_RESTATE_SERVER") {
        return Some(PathBuf::from(path));
    }
    let arch = match std::env::consts::ARCH {
        "aarch64" => "arm64",
        _ => "x64",
    };
    let installed = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
        "tests/npm/node_modules/@restatedev/restate-server-linux-{arch}/bin/restate-server"
    ));
    installed.is_file().then_some(installed)
}

/// The server binary, or `None` after saying why the test is skipped. Under CI a
/// missing server is a failure: `.ci/run` installs it.
pub fn binary_or_skip(test: &str) -> Option<PathBuf> {
    match binary() {
        Some(path) => Some(path),
        None if std::env::var_os("CI").is_some() => {
            panic!(
                "restate-server is not installed: `.ci/run` installs it with `npm ci --prefix tests/npm`"
            )
        }
        None => {
            eprintln!(
                "skipping {test}: restate-server is not installed; run `npm ci --prefix tests/npm` (or set EVE_RESTATE_SERVER)"
            );
            None
        }
    }
}

/// A free port on 127.0.0.1 (free when this returns).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running `restate-server`.
pub struct RestateServer {
    child: Child,
    pub ingress: String,
    pub admin: String,
    _data: tempfile::TempDir,
}

impl RestateServer {
    /// Starts a server with its own data folder and ports, and waits until it serves.
    pub fn start(binary: &Path) -> RestateServer {
        let data = tempfile::tempdir().unwrap();
        let (node, ingress, admin, pg) = (free_port(), free_port(), free_port(), free_port());
        let resolv = data.path().join("resolv.conf");
        std::fs::write(&resolv, "nameserver 127.0.0.1\n").unwrap();
        let mut command = isolated(binary, &resolv);
        command
            .arg("--no-logo")
            .arg("--base-dir")
            .arg(data.path().join("restate"))
            .env("RESTATE_DISABLE_TELEMETRY", "true")
            .env("DO_NOT_TRACK", "1")
            .env("RESTATE_LISTEN_MODE", "tcp")
            .env("RESTATE_BIND_ADDRESS", format!("127.0.0.1:{node}"))
            .env(
                "RESTATE_ADVERTISED_ADDRESS",
                format!("http://127.0.0.1:{node}/"),
            )
            .env(
                "RESTATE_INGRESS__BIND_ADDRESS",
                format!("127.0.0.1:{ingress}"),
            )
            .env("RESTATE_ADMIN__BIND_ADDRESS", format!("127.0.0.1:{admin}"))
            .env(
                "RESTATE_ADMIN__QUERY_ENGINE__PGSQL_BIND_ADDRESS",
                format!("127.0.0.1:{pg}"),
            )
            // Few partitions: a test server starts in a moment and idles cheaply.
            .env("RESTATE_DEFAULT_NUM_PARTITIONS", "4")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(
                std::fs::File::create(data.path().join("restate.log")).unwrap(),
            ));
        let child = command.spawn().unwrap();
        let server = RestateServer {
            child,
            ingress: format!("http://127.0.0.1:{ingress}"),
            admin: format!("http://127.0.0.1:{admin}"),
            _data: data,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let admin_up = http(&server.admin, "GET", "/health", None).0 == 200;
            let ingress_up = http(&server.ingress, "GET", "/restate/health", None).0 == 200;
            // Healthy is not yet ready: until every partition has its leader, a query
            // of the state (what the session list is) fails.
            if admin_up && ingress_up && server.queryable() {
                return server;
            }
            assert!(
                Instant::now() < deadline,
                "restate-server did not start:\n{}",
                server.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Whether the admin API answers a query of the state table.
    fn queryable(&self) -> bool {
        let query = r#"{"query":"SELECT service_key FROM state LIMIT 1"}"#;
        http(&self.admin, "POST", "/query", Some(query)).0 == 200
    }

    /// What the server wrote.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self._data.path().join("restate.log")).unwrap_or_default()
    }

    /// Registers the deployment at `uri` (the balancer in front of the workers).
    pub fn register(&self, uri: &str) {
        let body = format!("{{\"uri\":\"{uri}\"}}");
        let (status, body) = http(&self.admin, "POST", "/deployments", Some(&body));
        assert!(
            (200..300).contains(&status),
            "registering {uri}: {status} {body}"
        );
    }
}

/// The server's command: in a mount namespace where `/etc/resolv.conf` is `resolv`
/// when this process may make one (root, `unshare` there), as it is otherwise.
fn isolated(binary: &Path, resolv: &Path) -> Command {
    // SAFETY: geteuid only reads the process's user id.
    let root = unsafe { libc::geteuid() } == 0;
    let unshare = ["/usr/bin/unshare", "/bin/unshare"]
        .into_iter()
        .find(|p| Path::new(p).is_file());
    match (root, unshare) {
        (true, Some(unshare)) => {
            let mut command = Command::new(unshare);
            command
                .args(["--mount", "--propagation", "private", "sh", "-c"])
                .arg("mount --bind \"$1\" /etc/resolv.conf && shift && exec \"$@\"")
                .arg("sh")
                .arg(resolv)
                .arg(binary);
            command
        }
        _ => Command::new(binary),
    }
}

impl Drop for RestateServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A plain HTTP/1.1 request: the status and the body.
pub fn http(base: &str, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
    let addr = base.trim_start_matches("http://");
    let Ok(mut stream) = TcpStream::connect(addr) else {
        return (0, String::new());
    };
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let body = body.unwrap_or("");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    if stream.write_all(head.as_bytes()).is_err() || stream.write_all(body.as_bytes()).is_err() {
        return (0, String::new());
    }
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// A TCP load balancer on 127.0.0.1: each new connection goes to the next backend in
/// turn, or the one after when it does not answer (a worker that was killed).
pub struct Balancer {
    pub port: u16,
    backends: Arc<Mutex<Vec<u16>>>,
}

impl Balancer {
    pub fn start() -> Balancer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let backends: Arc<Mutex<Vec<u16>>> = Arc::default();
        let next = Arc::new(AtomicUsize::new(0));
        let shared = backends.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let ports = shared.lock().unwrap().clone();
                let start = next.fetch_add(1, Ordering::SeqCst);
                let upstream = (0..ports.len()).find_map(|i| {
                    TcpStream::connect(("127.0.0.1", ports[(start + i) % ports.len()])).ok()
                });
                let Some(upstream) = upstream else { continue };
                pipe(client, upstream);
            }
        });
        Balancer { port, backends }
    }

    /// `http://127.0.0.1:PORT/`.
    pub fn uri(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    pub fn add(&self, port: u16) {
        self.backends.lock().unwrap().push(port);
    }
}

/// Copies bytes both ways until either side closes.
fn pipe(a: TcpStream, b: TcpStream) {
    let _ = a.set_nodelay(true);
    let _ = b.set_nodelay(true);
    for (mut from, mut to) in [(a.try_clone().unwrap(), b.try_clone().unwrap()), (b, a)] {
        std::thread::spawn(move || {
            let mut buffer = [0u8; 16 * 1024];
            loop {
                match from.read(&mut buffer) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if to.write_all(&buffer[..n]).is_err() {
                            break;
                        }
                    }
                }
            }
            let _ = to.shutdown(std::net::Shutdown::Both);
            let _ = from.shutdown(std::net::Shutdown::Both);
        });
    }
}
