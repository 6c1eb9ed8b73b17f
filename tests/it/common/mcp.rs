//! The MCP servers the tests talk to: the test server cargo builds from
//! `examples/mcp-test-server`, and the reference servers `.ci/run` installs from npm
//! into `tests/npm/node_modules`.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

/// Where cargo puts the examples of the build the tests belong to.
fn examples_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    // target/<profile>/deps/<test> → target/<profile>/examples
    exe.parent().unwrap().parent().unwrap().join("examples")
}

/// The MCP test server (`cargo test` builds it; so does `cargo build --example mcp-test-server`).
pub fn test_server() -> PathBuf {
    let server = examples_dir().join(format!("mcp-test-server{}", std::env::consts::EXE_SUFFIX));
    assert!(
        server.is_file(),
        "the MCP test server is not built at {}: run `cargo test` (which builds the examples) or `cargo build --example mcp-test-server` first",
        server.display()
    );
    server
}

/// A folder outside the repository holding a copy of the test server. eve never looks
/// a program up in a folder of PATH inside the workspace, and the tests' workspace is
/// often the folder they run in, the repository, which holds `target/`.
fn server_folder() -> PathBuf {
    static FOLDER: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    FOLDER
        .get_or_init(|| {
            let server = test_server();
            let bytes = std::fs::read(&server).unwrap();
            let digest = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
            });
            let folder = std::env::temp_dir().join(format!("eve-test-server-{digest:016x}"));
            let name = server.file_name().unwrap();
            if !folder.join(name).is_file() {
                std::fs::create_dir_all(&folder).unwrap();
                // A copy by another test process may be under way: write beside, rename.
                let partial = folder.join(format!(
                    ".{}.{}",
                    std::process::id(),
                    name.to_string_lossy()
                ));
                std::fs::copy(&server, &partial).unwrap();
                std::fs::rename(&partial, folder.join(name)).unwrap();
            }
            folder
        })
        .clone()
}

/// PATH with the test server first, so `command = ["mcp-test-server"]` works.
pub fn path_with_server() -> std::ffi::OsString {
    let mut paths = vec![server_folder()];
    if let Some(path) = std::env::var_os("PATH") {
        paths.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(paths).unwrap()
}

/// An npm package `.ci/run` installs, or `None` (and a line saying why the test is
/// skipped) when it is not installed here.
pub fn npm_package(name: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/npm/node_modules")
        .join(name);
    if dir.join("package.json").is_file() {
        Some(dir)
    } else {
        eprintln!(
            "SKIPPED: {name} is not installed in tests/npm; `npm ci --prefix tests/npm` installs it (.ci/run does)"
        );
        None
    }
}

/// A free port on 127.0.0.1.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits until something listens on `port` (a server starting up).
pub fn wait_for_port(port: u16) {
    for _ in 0..600 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("nothing listens on 127.0.0.1:{port} after 30 s");
}

/// Waits until `file` exists and holds a port number (the test server writes it).
pub fn read_port(file: &Path) -> u16 {
    for _ in 0..600 {
        if let Some(port) = std::fs::read_to_string(file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            return port;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("the server wrote no port to {} in 30 s", file.display());
}

/// A server process killed when the test ends.
pub struct Running(pub std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The test server over streamable HTTP (`--http`) or HTTP+SSE (`--sse`); returns it
/// and its port.
pub fn start_http_server(flag: &str, env: &[(&str, &str)]) -> (Running, u16, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("port");
    let child = std::process::Command::new(test_server())
        .arg(flag)
        .arg(&file)
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let running = Running(child);
    let port = read_port(&file);
    (running, port, tmp)
}
