//! Tools that reach the network against hostile servers on 127.0.0.1: `web_fetch` on pages
//! built to crash a converter, compressed bodies, and HTTP tools whose URL a model value
//! tries to move to another host. `eve run` with the scripted provider.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use crate::common::Agent;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// A response: status line, headers, body.
type Response = (&'static str, Vec<(String, String)>, Vec<u8>);

/// A tiny HTTP/1.1 server on 127.0.0.1 answering each path from `routes` (404 otherwise);
/// returns its base URL and the paths it was asked for.
fn serve(routes: BTreeMap<String, Response>) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let routes = Arc::new(routes);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let routes = routes.clone();
            let log = log.clone();
            std::thread::spawn(move || {
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let request = String::from_utf8_lossy(&request).into_owned();
                let path = request.split(' ').nth(1).unwrap_or("/").to_string();
                log.lock().unwrap().push(path.clone());
                let (status, headers, body) =
                    routes
                        .get(&path)
                        .cloned()
                        .unwrap_or(("404 Not Found", vec![], b"no".to_vec()));
                let mut head = format!(
                    "HTTP/1.1 {status}\r\nconnection: close\r\ncontent-length: {}\r\n",
                    body.len()
                );
                for (name, value) in headers {
                    head.push_str(&format!("{name}: {value}\r\n"));
                }
                head.push_str("\r\n");
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(&body);
            });
        }
    });
    (base, seen)
}

fn html(body: String) -> Response {
    (
        "200 OK",
        vec![("content-type".into(), "text/html; charset=utf-8".into())],
        body.into_bytes(),
    )
}

/// An agent, its own workspace, with `tools` whose scripted model makes `calls` in one
/// reply.
fn agent(tools: &[(&str, String)], calls: Value) -> Agent {
    let mut agent = Agent::builder()
        .name("fetcher")
        .toml("default_tools = false\n")
        .instructions("Fetch.\n")
        .in_place()
        .requests_log("agent/log.jsonl");
    for (name, text) in tools {
        agent = agent.tool(name, text);
    }
    let script = json!([{ "tool_calls": calls }, { "text": "done" }]);
    agent.replies(&script.to_string()).build()
}

/// Runs the turn; eve must exit normally. Returns the tool results.
fn run(agent: &Agent) -> Vec<Value> {
    let output = agent
        .run_cmd()
        .arg("go")
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "eve did not finish normally: {:?}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    agent.requests()[1]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["results"]
        .as_array()
        .unwrap()
        .clone()
}

const WEB_FETCH_PRIVATE: &str = "[settings]\nallow_private = true\n";

#[test]
fn web_fetch_survives_pages_nested_to_crash_a_converter() {
    let routes = BTreeMap::from([
        (
            "/lists".to_string(),
            html(format!(
                "<html><body>{}deep list{}</body></html>",
                "<ul><li>".repeat(1000),
                "</li></ul>".repeat(1000)
            )),
        ),
        (
            "/divs".to_string(),
            html(format!(
                "<html><body>{}ten thousand</body></html>",
                "<div>".repeat(10_000)
            )),
        ),
        (
            "/abyss".to_string(),
            html(format!(
                "<html><body>{}a hundred thousand{}</body></html>",
                "<div>".repeat(100_000),
                "</div>".repeat(100_000)
            )),
        ),
        (
            "/formatting".to_string(),
            html(format!(
                "<html><body>{}bold</body></html>",
                "<div><b class=x>".repeat(20_000)
            )),
        ),
    ]);
    let (base, _) = serve(routes);
    let calls: Vec<Value> = ["lists", "divs", "abyss", "formatting"]
        .iter()
        .map(|p| json!({ "name": "web_fetch", "input": { "url": format!("{base}/{p}") } }))
        .collect();
    let agent = agent(
        &[("web_fetch", WEB_FETCH_PRIVATE.to_string())],
        Value::Array(calls),
    );
    let results = run(&agent);
    for (result, text) in
        results
            .iter()
            .zip(["deep list", "ten thousand", "a hundred thousand", "bold"])
    {
        assert_eq!(result["is_error"], false, "{}", result["content"]);
        assert!(
            result["content"].as_str().unwrap().contains(text),
            "{text}: {}",
            result["content"]
        );
    }
}

#[test]
fn web_fetch_decodes_gzip_and_brotli_bodies() {
    let page = b"<html><body><h1>Compressed</h1><p>plain words</p></body></html>";
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gzip.write_all(page).unwrap();
    let gzip = gzip.finish().unwrap();
    let mut brotli = Vec::new();
    {
        let mut writer = brotli::CompressorWriter::new(&mut brotli, 4096, 5, 22);
        writer.write_all(page).unwrap();
    }
    let encoded = |body: Vec<u8>, encoding: &str| -> Response {
        (
            "200 OK",
            vec![
                ("content-type".into(), "text/html".into()),
                ("content-encoding".into(), encoding.into()),
            ],
            body,
        )
    };
    let routes = BTreeMap::from([
        ("/gzip".to_string(), encoded(gzip, "gzip")),
        ("/br".to_string(), encoded(brotli, "br")),
    ]);
    let (base, _) = serve(routes);
    let agent = agent(
        &[("web_fetch", WEB_FETCH_PRIVATE.to_string())],
        json!([
            { "name": "web_fetch", "input": { "url": format!("{base}/gzip") } },
            { "name": "web_fetch", "input": { "url": format!("{base}/br") } },
        ]),
    );
    for result in run(&agent) {
        let content = result["content"].as_str().unwrap();
        assert!(
            content.ends_with("\n\n# Compressed\n\nplain words"),
            "{content}"
        );
    }
}

fn http_tool(url: &str, extra: &str) -> String {
    format!(
        "description = \"Calls the API\"\n[input_schema]\ntype = \"object\"\nproperties.path = {{ type = \"string\" }}\nproperties.tag = {{ type = \"string\" }}\n[http]\nurl = {}\n{extra}",
        toml_edit::Value::from(url)
    )
}

#[test]
fn an_http_tool_cannot_be_moved_to_another_host_or_reach_loopback() {
    let routes = BTreeMap::from([
        (
            "/secret".to_string(),
            ("200 OK", vec![], b"the secret".to_vec()),
        ),
        (
            "/api/ok".to_string(),
            ("200 OK", vec![], b"public answer".to_vec()),
        ),
    ]);
    let (base, seen) = serve(routes);
    let port = base.rsplit(':').next().unwrap().to_string();
    // A host written in the template; a model value right after it.
    let fixed = http_tool(
        &format!("http://localhost:{port}{{{{ input.path }}}}"),
        "allow_private = true\n",
    );
    // The model picks the whole URL; the address policy is the guard.
    let open = http_tool("{{ input.path }}", "");
    let redirecting = http_tool(
        &format!("http://localhost:{port}/api/{{{{ input.path }}}}"),
        "allow_private = true\n",
    );
    let agent = agent(
        &[
            ("fixed", fixed),
            ("open", open),
            ("redirecting", redirecting),
        ],
        json!([
            { "name": "fixed", "input": { "path": "/api/ok" } },
            { "name": "fixed", "input": { "path": format!("@127.0.0.1:{port}/secret") } },
            { "name": "open", "input": { "path": format!("{base}/secret") } },
            { "name": "redirecting", "input": { "path": "ok" } },
        ]),
    );
    let results = run(&agent);
    assert_eq!(results[0]["content"], "public answer");
    assert_eq!(results[1]["is_error"], true);
    assert_eq!(
        results[1]["content"],
        format!(
            "Refused to fetch http://localhost:{port}@127.0.0.1:{port}/secret: the tool's URL is on `http://localhost:{port}`, and this one is on `http://127.0.0.1:{port}`."
        )
    );
    assert_eq!(results[2]["is_error"], true);
    assert!(
        results[2]["content"]
            .as_str()
            .unwrap()
            .contains("127.0.0.1 is a loopback address"),
        "{}",
        results[2]["content"]
    );
    assert_eq!(results[3]["content"], "public answer");
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        ["/api/ok", "/api/ok"],
        "the secret was never asked for"
    );
}

#[test]
fn an_http_tool_follows_no_redirect_to_another_host() {
    let routes = BTreeMap::from([(
        "/api/away".to_string(),
        (
            "302 Found",
            vec![("location".into(), "http://127.0.0.1:9/secret".into())],
            vec![],
        ),
    )]);
    let (base, _) = serve(routes);
    let port = base.rsplit(':').next().unwrap().to_string();
    let tool = http_tool(
        &format!("http://localhost:{port}/api/{{{{ input.path }}}}"),
        "allow_private = true\n",
    );
    let agent = agent(
        &[("redirecting", tool)],
        json!([{ "name": "redirecting", "input": { "path": "away" } }]),
    );
    let results = run(&agent);
    assert_eq!(
        results[0]["content"],
        format!(
            "Refused to fetch http://127.0.0.1:9/secret (redirected from http://localhost:{port}/api/away): the tool's URL is on `http://localhost:{port}`, and this one is on `http://127.0.0.1:9`."
        )
    );
}

#[test]
fn an_http_tool_pinned_to_an_origin_follows_no_redirect_to_another_port_or_scheme() {
    // Another server on the same host: the tool's URL names one port, the redirect
    // another, where something the tool was never meant to reach answers.
    let (other, asked) = serve(BTreeMap::from([(
        "/secret".to_string(),
        ("200 OK", vec![], b"the other server's secret".to_vec()),
    )]));
    let other_port = other.rsplit(':').next().unwrap().to_string();
    let (base, seen) = serve(BTreeMap::from([
        (
            "/api".to_string(),
            (
                "307 Temporary Redirect",
                vec![("location".into(), format!("{other}/secret"))],
                vec![],
            ),
        ),
        (
            "/api/tls".to_string(),
            (
                "302 Found",
                vec![(
                    "location".into(),
                    format!("https://127.0.0.1:{other_port}/api"),
                )],
                vec![],
            ),
        ),
        (
            "/api/here".to_string(),
            (
                "302 Found",
                vec![("location".into(), "/api/ok".into())],
                vec![],
            ),
        ),
        (
            "/api/ok".to_string(),
            ("200 OK", vec![], b"same origin".to_vec()),
        ),
    ]));
    let port = base.rsplit(':').next().unwrap().to_string();
    let pinned = http_tool(&format!("{base}/api"), "allow_private = true\n");
    let paths = http_tool(
        &format!("{base}/api/{{{{ input.path }}}}"),
        "allow_private = true\n",
    );
    let agent = agent(
        &[("pinned", pinned), ("paths", paths)],
        json!([
            { "name": "pinned", "input": {} },
            { "name": "paths", "input": { "path": "tls" } },
            { "name": "paths", "input": { "path": "here" } },
        ]),
    );
    let results = run(&agent);
    assert_eq!(
        results[0]["content"],
        format!(
            "Refused to fetch http://127.0.0.1:{other_port}/secret (redirected from http://127.0.0.1:{port}/api): the tool's URL is on `http://127.0.0.1:{port}`, and this one is on `http://127.0.0.1:{other_port}`."
        )
    );
    assert_eq!(results[0]["is_error"], true);
    assert!(
        results[1]["content"]
            .as_str()
            .unwrap()
            .contains(&format!("the tool's URL is on `http://127.0.0.1:{port}`, and this one is on `https://127.0.0.1:{other_port}`")),
        "{}",
        results[1]["content"]
    );
    assert_eq!(results[2]["content"], "same origin");
    assert!(
        asked.lock().unwrap().is_empty(),
        "the other server was never asked"
    );
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        ["/api", "/api/tls", "/api/here", "/api/ok"]
    );
}

#[test]
fn a_line_break_in_a_header_value_is_refused_naming_the_header() {
    let (base, seen) = serve(BTreeMap::new());
    let tool = http_tool(
        &format!("{base}/api"),
        "allow_private = true\nheaders = { X-Tag = \"{{ input.tag }}\" }\n",
    );
    let agent = agent(
        &[("tagged", tool)],
        json!([{ "name": "tagged", "input": { "tag": "a\r\nX-Injected: 1" } }]),
    );
    let results = run(&agent);
    assert_eq!(
        results[0]["content"],
        "cannot send the `X-Tag` header: its value contains a line break or another control character"
    );
    assert!(seen.lock().unwrap().is_empty());
}
