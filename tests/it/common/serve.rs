//! `eve serve` on an agent in a temporary folder, for end-to-end tests of the API: the
//! real binary on 127.0.0.1 with a port the system chose, and an HTTP client for it that
//! sends the server's token (`EVE_SERVE_TOKEN` when the test sets it, else the one the
//! server printed), as any client must.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use serde_json::Value;

/// A scripted agent: `replies.yaml` holds `script`; each `(name, toml)` is a tool file.
pub fn agent(script: &str, tools: &[(&str, &str)]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(
        dir.join("agent.toml"),
        "name = \"served\"\nmodel = \"scripted:replies.yaml\"\ndefault_tools = false\n[workspace]\nroot = \".\"\n",
    )
    .unwrap();
    std::fs::write(dir.join("instructions.md"), "You are a test agent.").unwrap();
    std::fs::write(dir.join("replies.yaml"), script).unwrap();
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    // A name with a folder (`hooks/bye`) is another file of the definition.
    for (name, toml) in tools {
        let path = if name.contains('/') {
            dir.join(format!("{name}.toml"))
        } else {
            dir.join("tools").join(format!("{name}.toml"))
        };
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, toml).unwrap();
    }
    tmp
}

/// A running `eve serve`.
pub struct Served {
    pub child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    pub dir: PathBuf,
    /// The token every API request carries.
    pub token: String,
    /// The page's one-time login link, as printed.
    pub login: String,
    stderr: Arc<Mutex<String>>,
}

impl Served {
    /// Starts `eve serve DIR --addr 127.0.0.1:0 ARGS` in `dir` with `env`, and waits
    /// until it listens.
    pub fn start(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Served {
        let mut command = Command::new(assert_cmd::cargo::cargo_bin("eve"));
        command
            .current_dir(dir)
            .args(["serve", ".", "--addr", "127.0.0.1:0"])
            .args(args)
            .env("NO_COLOR", "1")
            .env_remove("EVE_MODEL")
            .env_remove("EVE_SERVE_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = command.spawn().unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let pipe = child.stderr.take().unwrap();
        let collected = stderr.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let after = |mark: &str, end: char| {
                    line.split(mark)
                        .nth(1)
                        .map(|rest| rest.split(end).next().unwrap_or_default().to_string())
                };
                if let Some(addr) = after("listening on http://", '/') {
                    let _ = tx.send(("addr", addr));
                }
                if let Some(link) = after("eve serve: open ", ' ') {
                    let _ = tx.send(("login", link));
                }
                if let Some(token) = after("API clients send `Authorization: Bearer ", '`') {
                    let _ = tx.send(("token", token));
                }
                let mut all = collected.lock().unwrap();
                all.push_str(&line);
                all.push('\n');
            }
        });
        let chosen = env
            .iter()
            .find(|(k, _)| *k == "EVE_SERVE_TOKEN")
            .map(|(_, v)| v.to_string());
        let (mut addr, mut login, mut token) = (None, None, chosen.clone());
        while addr.is_none() || login.is_none() || token.is_none() {
            match rx.recv_timeout(Duration::from_secs(60)) {
                Ok(("addr", value)) => addr = Some(value),
                Ok(("login", value)) => login = Some(value),
                // The line names the variable when the test chose the token.
                Ok(("token", value)) if chosen.is_none() => token = Some(value),
                Ok(_) => {}
                Err(_) => {
                    let _ = child.kill();
                    panic!("eve serve did not start:\n{}", stderr.lock().unwrap());
                }
            }
        }
        Served {
            child,
            url: format!("http://{}", addr.unwrap()),
            dir: dir.to_path_buf(),
            token: token.unwrap(),
            login: login.unwrap(),
            stderr,
        }
    }

    /// What it printed on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Sends SIGTERM and waits for the exit code.
    pub fn terminate(&mut self) -> Option<i32> {
        unsafe_kill(self.child.id(), libc::SIGTERM);
        self.child.wait().unwrap().code()
    }

    /// Kills it with SIGKILL, as a crash would.
    pub fn kill9(&mut self) {
        unsafe_kill(self.child.id(), libc::SIGKILL);
        let _ = self.child.wait();
    }
}

fn unsafe_kill(pid: u32, signal: i32) {
    // SAFETY: kill only sends a signal to the child this test started.
    unsafe {
        libc::kill(pid as i32, signal);
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A status and a JSON body.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
    pub session_header: Option<String>,
}

/// A small blocking HTTP client over one TCP connection per request (no proxy, no pool).
pub fn request(
    url: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> (u16, Vec<(String, String)>, Vec<u8>) {
    use std::io::{Read, Write};
    let addr = url.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        head.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(body) = body {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    if let Some(body) = body {
        // A server that answers before the whole body is read may close early.
        let _ = stream.write_all(body);
    }
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    parse_response(&raw)
}

fn parse_response(raw: &[u8]) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no HTTP response: {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.lines();
    let status: u16 = lines
        .next()
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    if headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"))
    {
        body = dechunk(&body);
    }
    (status, headers, body)
}

fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(end) = body.windows(2).position(|w| w == b"\r\n") {
        let size =
            usize::from_str_radix(String::from_utf8_lossy(&body[..end]).trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        let start = end + 2;
        out.extend_from_slice(&body[start..(start + size).min(body.len())]);
        body = &body[(start + size + 2).min(body.len())..];
    }
    out
}

impl Served {
    /// `METHOD PATH` with a JSON body (or none).
    pub fn call(&self, method: &str, path: &str, body: Option<&str>) -> Answer {
        self.call_with(method, path, body, &[])
    }

    /// Like [`Served::call`], with more headers (an `Authorization` among them replaces
    /// the server's token).
    pub fn call_with(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
        headers: &[(&str, &str)],
    ) -> Answer {
        self.anonymous(method, path, body, &self.with_token(headers))
    }

    /// `headers` and, unless they hold one, the server's token.
    pub fn with_token<'a>(&'a self, headers: &[(&'a str, &'a str)]) -> Vec<(&'a str, String)> {
        let mut all: Vec<(&str, String)> =
            headers.iter().map(|(k, v)| (*k, v.to_string())).collect();
        if !headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("authorization"))
        {
            all.push(("Authorization", format!("Bearer {}", self.token)));
        }
        all
    }

    /// `METHOD PATH` with exactly `headers`: no token unless they carry one.
    pub fn anonymous(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
        headers: &[(&str, String)],
    ) -> Answer {
        let mut all = vec![("Content-Type", "application/json")];
        all.extend(headers.iter().map(|(k, v)| (*k, v.as_str())));
        let (status, headers, body) =
            request(&self.url, method, path, &all, body.map(str::as_bytes));
        let session_header = headers
            .iter()
            .find(|(k, _)| k == "x-eve-session-id")
            .map(|(_, v)| v.clone());
        let body = serde_json::from_slice(&body).unwrap_or_else(|_| {
            panic!(
                "{method} {path}: {status}, not JSON: {:?}",
                String::from_utf8_lossy(&body)
            )
        });
        Answer {
            status,
            body,
            session_header,
        }
    }

    /// `POST /eve/v1/session` with a message: the new session's id.
    pub fn create(&self, message: &str) -> String {
        let answer = self.call(
            "POST",
            "/eve/v1/session",
            Some(&serde_json::json!({ "message": message }).to_string()),
        );
        assert_eq!(answer.status, 202, "{:?}", answer.body);
        answer.body["sessionId"].as_str().unwrap().to_string()
    }

    /// A raw request with the server's token (unless `headers` hold an
    /// `Authorization`): status, headers, body.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> (u16, Vec<(String, String)>, Vec<u8>) {
        let all = self.with_token(headers);
        let all: Vec<(&str, &str)> = all.iter().map(|(k, v)| (*k, v.as_str())).collect();
        request(&self.url, method, path, &all, body)
    }

    /// The stream of a session with `query`, read to its end: the lines as JSON.
    pub fn stream(&self, id: &str, query: &str) -> Vec<Value> {
        let (status, _, body) = self.request(
            "GET",
            &format!("/eve/v1/session/{id}/stream{query}"),
            &[],
            None,
        );
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        String::from_utf8(body)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// Follows the stream of session `id` from its start and returns the first line
    /// whose `type` is `wanted`, as soon as it has arrived (the stream stays open
    /// until then; nothing after it is read).
    pub fn first_line(&self, id: &str, wanted: &str) -> Value {
        use std::io::{Read, Write};
        let addr = self.url.trim_start_matches("http://");
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(120)))
            .unwrap();
        let head = format!(
            "GET /eve/v1/session/{id}/stream HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n",
            self.token
        );
        stream.write_all(head.as_bytes()).unwrap();
        let mut raw = Vec::new();
        let mut buf = [0u8; 4096];
        let mut body_at = None;
        loop {
            let n = stream.read(&mut buf).unwrap();
            assert!(n > 0, "the stream ended before a `{wanted}` line");
            raw.extend_from_slice(&buf[..n]);
            if body_at.is_none() {
                body_at = raw.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4);
            }
            let Some(at) = body_at else { continue };
            // Chunk framing aside, the body is NDJSON: look at each whole line.
            let text = String::from_utf8_lossy(&raw[at..]).into_owned();
            for line in text.lines().filter(|l| l.starts_with('{')) {
                if let Ok(value) = serde_json::from_str::<Value>(line)
                    && value["type"] == wanted
                {
                    return value;
                }
            }
        }
    }

    /// The session's entry in `GET /eve/v1/sessions`.
    pub fn session(&self, id: &str) -> Value {
        let answer = self.call("GET", "/eve/v1/sessions?limit=1000", None);
        answer.body["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["sessionId"] == id)
            .cloned()
            .unwrap_or(Value::Null)
    }

    /// Waits (at most a minute) until the session's status is `status`.
    pub fn wait_for(&self, id: &str, status: &str) -> Value {
        for _ in 0..1200 {
            let session = self.session(id);
            if session["status"] == status {
                return session;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "session {id} never became {status}: {:?}\n{}",
            self.session(id),
            self.stderr()
        );
    }
}

/// The lines that carry an index (the session's events), as `type`s.
pub fn types(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l.get("index").is_some())
        .map(|l| l["type"].as_str().unwrap().to_string())
        .collect()
}
