//! The chat page of `eve serve` in a real browser: headless Chromium driven through
//! chromedriver (WebDriver, with fantoccini) is let in by the one-time link the server
//! printed, sends a message to a scripted agent and sees the reply and the tool call
//! rendered. Everything stays on 127.0.0.1.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::serve::{Served, agent};
use fantoccini::{Client, ClientBuilder, Locator};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// chromedriver on a free loopback port; killed when dropped.
struct Driver {
    child: Child,
    port: u16,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_driver() -> Driver {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(CHROMEDRIVER)
        .arg(format!("--port={port}"))
        .arg("--allowed-ips=127.0.0.1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let driver = Driver { child, port };
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return driver;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("chromedriver did not start on port {port}");
}

async fn browser(driver: &Driver, profile: &Path) -> Client {
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        serde_json::json!({
            "binary": CHROMIUM,
            "args": [
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--no-first-run",
                "--disable-component-update",
                "--disable-sync",
                "--window-size=1280,800",
                format!("--user-data-dir={}", profile.display()),
                // Nothing but this machine's loopback is resolved.
                "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
            ],
        }),
    );
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    ClientBuilder::new(connector)
        .capabilities(caps)
        .connect(&format!("http://127.0.0.1:{}", driver.port))
        .await
        .unwrap()
}

/// Waits (at most a minute) until the element of `css` has a text containing `wanted`.
async fn wait_for_text(client: &Client, css: &str, wanted: &str) -> String {
    let mut last = String::new();
    for _ in 0..600 {
        if let Ok(elements) = client.find_all(Locator::Css(css)).await {
            for element in elements {
                let text = element.text().await.unwrap_or_default();
                if text.contains(wanted) {
                    return text;
                }
                last = text;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let page = client.source().await.unwrap_or_default();
    panic!("no `{css}` with `{wanted}` (last: {last:?}); the page:\n{page}");
}

#[tokio::test]
async fn the_page_sends_a_message_and_shows_the_reply_and_the_tool_call() {
    if !Path::new(CHROMIUM).exists() || !Path::new(CHROMEDRIVER).exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have Chromium: .ci/run installs the `chromium` and `chromium-driver` packages"
        );
        eprintln!(
            "skipped: the page test needs {CHROMIUM} and {CHROMEDRIVER} (apt-get install chromium chromium-driver)"
        );
        return;
    }
    let dir = agent(
        "- text: \"Let me read the instructions.\"\n  tool_calls: [{name: read_file, input: {path: instructions.md}}]\n- text: \"They say I am a test agent.\"\n",
        &[("read_file", "")],
    );
    let server = Served::start(dir.path(), &[], &[]);
    let driver = start_driver();
    let profile = tempfile::tempdir().unwrap();
    let client = browser(&driver, profile.path()).await;
    // Without the cookie the page is let in by nothing: it asks for the token.
    client.goto(&format!("{}/", server.url)).await.unwrap();
    wait_for_text(&client, "#status", "needs its token").await;
    // The one-time link eve printed lets it in, and goes on to `/`.
    client.goto(&server.login).await.unwrap();
    wait_for_text(&client, "#agent-name", "served").await;
    assert_eq!(
        client.current_url().await.unwrap().as_str(),
        format!("{}/", server.url),
        "no login code stays in the address bar"
    );
    client
        .find(Locator::Css("#message"))
        .await
        .unwrap()
        .send_keys("What do your instructions say?")
        .await
        .unwrap();
    client
        .find(Locator::Css("#send"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_for_text(&client, ".user", "What do your instructions say?").await;
    wait_for_text(&client, ".assistant", "Let me read the instructions.").await;
    wait_for_text(&client, ".tool .tool-name", "read_file").await;
    wait_for_text(&client, ".tool .tool-input", "instructions.md").await;
    wait_for_text(&client, ".tool .tool-result", "You are a test agent.").await;
    wait_for_text(&client, ".assistant", "They say I am a test agent.").await;
    wait_for_text(&client, ".usage", "completed · 2 steps").await;
    wait_for_text(&client, "#sessions li", "What do your instructions say?").await;
    if let Some(path) = std::env::var_os("EVE_PAGE_SCREENSHOT") {
        std::fs::write(path, client.screenshot().await.unwrap()).unwrap();
    }
    client.close().await.unwrap();
}
