//! Command tools against a hostile model: an argument from the input may not become an
//! option, and the examples in the docs keep paths inside the workspace. `eve run` with the
//! scripted provider, asserting what is left on disk and what the model was told.

use std::path::Path;

use crate::common::{Agent, eve};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// An agent with `tools` whose scripted model makes the `calls` in one reply (given the
/// path of the folder outside); a workspace with two files, and a folder beside it holding
/// a secret.
fn setup(tools: &[(&str, &str)], calls: impl FnOnce(&Path) -> Value) -> Agent {
    let mut agent = Agent::builder()
        .name("lister")
        .toml("default_tools = false\n")
        .instructions("List things.\n")
        .workspace("workspace")
        .workspace_file("README.md", "read me\n")
        .workspace_file("src/main.rs", "fn main() {}\n")
        .requests_log("agent/log.jsonl");
    for (name, text) in tools {
        agent = agent.tool(name, text);
    }
    let agent = agent.build();
    let outside = agent.base.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "secret\n").unwrap();
    let script = json!([{ "tool_calls": calls(&outside) }, { "text": "done" }]);
    std::fs::write(agent.dir.join("replies.yaml"), script.to_string()).unwrap();
    agent
}

fn run(setup: &Agent) -> Vec<Value> {
    let output = setup.run_cmd().arg("go").output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    setup.requests()[1]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["results"]
        .as_array()
        .unwrap()
        .clone()
}

/// The `tools/list_files.toml` example of docs/running.md, as a reader would copy it.
fn documented_list_files() -> String {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/running.md"))
            .unwrap();
    let start = doc.find("# tools/list_files.toml\n").unwrap();
    let block = &doc[start..];
    block[..block.find("```").unwrap()].to_string()
}

/// The same example as docs/running.md showed it before option injection was handled.
const OLD_LIST_FILES: &str = r#"
description = "Lists the files under a folder of the workspace, one path per line"
command = ["find", "{{ input.path | default('.') }}", "-type", "f", "-not", "-path", "*/.git/*"]
timeout_secs = 10
[input_schema]
type = "object"
properties.path = { type = "string" }
"#;

fn workspace_is_intact(s: &Agent) {
    assert_eq!(
        std::fs::read_to_string(s.workspace.join("README.md")).unwrap(),
        "read me\n"
    );
    assert!(s.workspace.join("src/main.rs").exists());
}

#[test]
fn an_input_that_starts_with_a_dash_is_refused_and_deletes_nothing() {
    let s = setup(
        &[("list_files", OLD_LIST_FILES)],
        |_| json!([{ "name": "list_files", "input": { "path": "-delete" } }]),
    );
    let results = run(&s);
    assert_eq!(
        results[0]["content"],
        "Refused: argument 2 of `list_files` would be `-delete`, built from the value of `path`. It starts with `-`, so the program would read it as an option, not as a value. Pass a value that does not start with `-` (for a file or folder, write `./` before its name)."
    );
    assert_eq!(results[0]["is_error"], true);
    workspace_is_intact(&s);
}

#[test]
fn the_documented_list_files_stays_in_the_workspace_and_deletes_nothing() {
    let tool = documented_list_files();
    let s = setup(&[("list_files", &tool)], |outside| {
        json!([
            { "name": "list_files", "input": {} },
            { "name": "list_files", "input": { "path": "-delete" } },
            { "name": "list_files", "input": { "path": outside } },
            { "name": "list_files", "input": { "path": "../outside" } },
            { "name": "list_files", "input": { "path": "src" } },
        ])
    });
    let results = run(&s);

    let mut all: Vec<&str> = results[0]["content"].as_str().unwrap().lines().collect();
    all.sort();
    assert_eq!(all, ["./README.md", "./src/main.rs"]);
    assert_eq!(results[1]["is_error"], true);
    assert!(
        results[1]["content"]
            .as_str()
            .unwrap()
            .contains("./-delete"),
        "{}",
        results[1]["content"]
    );
    assert_eq!(results[2]["is_error"], true);
    assert!(
        !results[2]["content"].as_str().unwrap().contains("secret"),
        "{}",
        results[2]["content"]
    );
    assert_eq!(results[3]["is_error"], true);
    assert!(
        results[3]["content"].as_str().unwrap().contains("path"),
        "{}",
        results[3]["content"]
    );
    assert_eq!(results[4]["content"], "./src/main.rs\n");
    workspace_is_intact(&s);
    assert!(s.base.join("outside/secret.txt").exists());
}

#[test]
fn an_authors_option_with_a_model_value_passes_and_the_opt_out_lets_options_through() {
    let tools = [
        (
            "head_lines",
            r#"
description = "First lines of README.md"
command = ["head", "--lines={{ input.n }}", "README.md"]
[input_schema]
type = "object"
properties.n = { type = "integer" }
"#,
        ),
        (
            "wc_flag",
            r#"
description = "Counts README.md with a wc flag"
command = ["wc", "{{ input.flag }}", "README.md"]
allow_option_arguments = true
[input_schema]
type = "object"
properties.flag = { type = "string", enum = ["-l", "-w"] }
"#,
        ),
    ];
    let s = setup(&tools, |_| {
        json!([
            { "name": "head_lines", "input": { "n": -1 } },
            { "name": "wc_flag", "input": { "flag": "-w" } },
        ])
    });
    let results = run(&s);
    assert_eq!(results[0]["is_error"], false, "{}", results[0]["content"]);
    assert_eq!(results[1]["content"], "2 README.md\n");
}

#[test]
fn allow_option_arguments_belongs_to_command_tools() {
    let s = setup(
        &[(
            "fetch_it",
            r#"
description = "Fetches"
allow_option_arguments = true
[input_schema]
type = "object"
[http]
url = "https://example.com/"
"#,
        )],
        |_| json!([]),
    );
    let output = eve().arg("build").arg(&s.dir).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("error[E0006]: `allow_option_arguments` applies only to command tools"),
        "{stderr}"
    );
}
