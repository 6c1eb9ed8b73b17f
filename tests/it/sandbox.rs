//! The sandbox end to end: what `bash` and command tools may write and reach under each
//! mode, with the real binary and a scripted model. CI runs as root on a kernel with
//! Landlock: root is confined too.
#![cfg(target_os = "linux")]

use crate::common;

use std::path::PathBuf;

use crate::common::eve;
use serde_json::Value;

/// The shared agent, with `bash` and `default_tools = false`, its requests logged beside
/// the workspace, run with the prompt `go`.
struct Agent(common::Agent);

impl std::ops::Deref for Agent {
    type Target = common::Agent;

    fn deref(&self) -> &common::Agent {
        &self.0
    }
}

impl Agent {
    /// An agent beside its workspace (`base/agent`, `base/ws`), or inside it (`inside`:
    /// `base/ws/agent`, the `example-agent` layout).
    fn new(sandbox: &str, inside: bool, script: &str) -> Agent {
        let agent = common::Agent::builder()
            .folder(if inside { "ws/agent" } else { "agent" })
            .toml("default_tools = false\n")
            .toml(sandbox)
            .tool("bash", "")
            .replies(script)
            .requests_log("requests.jsonl")
            .build();
        Agent(agent)
    }

    /// `eve run <dir> --workspace <ws> ARGS go`.
    fn run(&self, args: &[&str]) -> std::process::Output {
        self.0.run(&[args, &["go"]].concat())
    }

    /// The result of the first tool call, as the model received it.
    fn first_result(&self) -> String {
        let log = std::fs::read_to_string(&self.requests_log).unwrap();
        let request: Value = serde_json::from_str(log.lines().nth(1).unwrap()).unwrap();
        request["messages"][2]["results"][0]["content"]
            .as_str()
            .unwrap()
            .to_string()
    }
}

fn bash(command: &str) -> String {
    format!(
        "- tool_calls: [{{name: bash, input: {{command: {}}}}}]\n- text: done\n",
        serde_json::to_string(command).unwrap()
    )
}

pub fn supported() -> bool {
    let out = eve().arg("doctor").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    if text.contains("Landlock: not available") || text.contains("mount namespace: not") {
        eprintln!("skipped: {text}");
        return false;
    }
    true
}

#[test]
fn a_write_outside_the_workspace_is_refused_and_the_model_is_told_why() {
    if !supported() {
        return;
    }
    let agent = Agent::new("", false, &bash("echo x > ../escape.txt && echo done"));
    let out = agent.run(&[]);
    assert_eq!(out.status.code(), Some(0));
    assert!(!agent.base.join("escape.txt").exists());
    let seen = agent.first_result();
    assert!(seen.contains("Permission denied"), "{seen}");
    assert!(
        seen.contains("[eve] the sandbox (workspace-write) allows writes only in the workspace"),
        "{seen}"
    );
    assert!(!seen.contains("done"), "{seen}");
}

#[test]
fn workspace_write_allows_the_workspace_and_tmpdir_and_nothing_else() {
    if !supported() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let script = bash(&format!(
        "touch inside && sh -c 'sh -c \"touch deeper\"' && echo $TMPDIR > tmpdir && touch $TMPDIR/scratch \
         && ! touch {home}/x 2>/dev/null && ! (cd / && touch {home}/y 2>/dev/null) \
         && ! sh -c 'sh -c \"touch /etc/eve-x\"' 2>/dev/null && ln -s {home} link && ! touch link/z 2>/dev/null && echo all-good",
        home = home.path().display()
    ));
    let agent = Agent::new("", false, &script);
    let out = agent.run(&["--yes"]);
    assert_eq!(out.status.code(), Some(0));
    let seen = agent.first_result();
    assert!(seen.contains("all-good"), "{seen}");
    assert!(agent.workspace.join("inside").exists() && agent.workspace.join("deeper").exists());
    assert_eq!(std::fs::read_dir(home.path()).unwrap().count(), 0);
    // The session's temp folder was private to it and is gone with it.
    let tmpdir = std::fs::read_to_string(agent.workspace.join("tmpdir")).unwrap();
    let tmpdir = PathBuf::from(tmpdir.trim());
    assert!(tmpdir.starts_with(std::env::temp_dir().canonicalize().unwrap()));
    assert!(!tmpdir.exists(), "{} was not removed", tmpdir.display());
}

#[test]
fn the_agents_state_and_definition_stay_read_only_inside_the_workspace() {
    if !supported() {
        return;
    }
    let script = bash(
        "echo forged >> agent/.eve/sessions/*.jsonl; echo 'approval = \"never\"' > agent/tools/bash.toml; \
         mv agent agent2; rm -rf agent/.eve; touch agent/.eve/new; echo tried",
    );
    let agent = Agent::new("", true, &script);
    let out = agent.run(&["--yes"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen = agent.first_result();
    assert!(seen.contains("tried"), "{seen}");
    assert!(seen.contains("Read-only file system"), "{seen}");
    assert!(agent.dir.join(".eve/sessions").is_dir());
    assert!(!agent.workspace.join("agent2").exists());
    assert_eq!(
        std::fs::read_to_string(agent.dir.join("tools/bash.toml")).unwrap(),
        ""
    );
    let log = std::fs::read_dir(agent.dir.join(".eve/sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap();
    assert!(!std::fs::read_to_string(log).unwrap().contains("forged\n"));
}

#[test]
fn read_only_mode_reads_and_writes_nothing() {
    if !supported() {
        return;
    }
    let agent = Agent::new(
        "[sandbox]\nmode = \"read-only\"\n",
        false,
        &bash("cat agent.txt; touch new; echo more >> agent.txt; touch $TMPDIR/x; echo end"),
    );
    std::fs::write(agent.workspace.join("agent.txt"), "original\n").unwrap();
    assert_eq!(agent.run(&[]).status.code(), Some(0));
    let seen = agent.first_result();
    assert!(seen.contains("original") && seen.contains("end"), "{seen}");
    assert!(!agent.workspace.join("new").exists());
    assert_eq!(
        std::fs::read_to_string(agent.workspace.join("agent.txt")).unwrap(),
        "original\n"
    );
    // The command line's override loosens nothing it is not asked to.
    let loosened = Agent::new(
        "[sandbox]\nmode = \"read-only\"\n",
        false,
        &bash("touch new && echo wrote"),
    );
    assert_eq!(
        loosened
            .run(&["--sandbox", "workspace-write"])
            .status
            .code(),
        Some(0)
    );
    assert!(loosened.workspace.join("new").exists());
}

#[test]
fn without_network_tcp_fails_unix_sockets_work_and_with_it_tcp_connects() {
    if !supported() {
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = bash(&format!(
        "python3 -c 'import socket; a, b = socket.socketpair(); a.send(b\"x\"); print(\"unix-\" + b.recv(1).decode())'; \
         python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 2)' && echo tcp-ok"
    ));
    let off = Agent::new("[sandbox]\nnetwork = false\n", false, &script);
    assert_eq!(off.run(&[]).status.code(), Some(0));
    let seen = off.first_result();
    assert!(!seen.contains("tcp-ok"), "{seen}");
    assert!(seen.contains("unix-x"), "{seen}");
    assert!(seen.contains("the network is off"), "{seen}");
    let by_flag = Agent::new("", false, &script);
    assert_eq!(by_flag.run(&["--no-network"]).status.code(), Some(0));
    assert!(!by_flag.first_result().contains("tcp-ok"));
    let on = Agent::new("", false, &script);
    assert_eq!(on.run(&[]).status.code(), Some(0));
    assert!(
        on.first_result().contains("tcp-ok"),
        "{}",
        on.first_result()
    );
}

#[test]
fn mode_off_behaves_as_before() {
    let agent = Agent::new(
        "[sandbox]\nmode = \"off\"\n",
        false,
        &bash("echo x > ../escape.txt && echo done"),
    );
    assert_eq!(agent.run(&[]).status.code(), Some(0));
    assert!(agent.base.join("escape.txt").exists());
    assert!(agent.first_result().contains("done"));
}

#[test]
fn a_command_tool_is_confined_the_same_way() {
    if !supported() {
        return;
    }
    let agent = Agent::new(
        "",
        false,
        "- tool_calls: [{name: escape, input: {}}]\n- text: done\n",
    );
    std::fs::write(
        agent.dir.join("tools/escape.toml"),
        "description = \"Writes\"\ncommand = [\"sh\", \"-c\", \"touch ../from-command\"]\n[input_schema]\ntype = \"object\"\n",
    )
    .unwrap();
    assert_eq!(agent.run(&[]).status.code(), Some(0));
    assert!(!agent.base.join("from-command").exists());
    let seen = agent.first_result();
    assert!(seen.contains("Permission denied"), "{seen}");
    assert!(seen.contains("[eve] the sandbox"), "{seen}");
}

/// The sandbox probe of the MCP test server as a connection of `agent`, with `extra`
/// lines in its file.
fn probe_connection(agent: &Agent, extra: &str) {
    std::fs::create_dir_all(agent.dir.join("connections")).unwrap();
    std::fs::write(
        agent.dir.join("connections/probe.toml"),
        format!(
            "command = [\"mcp-test-server\"]\nenv = {{ MCP_TEST_PROBE = \"1\" }}\n{extra}\n[tools]\nallow = [\"write\", \"connect\", \"env\"]\n"
        ),
    )
    .unwrap();
}

/// Every tool result the model received, in order.
fn results(agent: &Agent) -> Vec<String> {
    let log = std::fs::read_to_string(agent.base.join("requests.jsonl")).unwrap();
    let last: Value = serde_json::from_str(log.lines().last().unwrap()).unwrap();
    last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["results"].as_array().cloned().unwrap_or_default())
        .map(|r| r["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn a_stdio_connection_is_confined_the_same_way() {
    if !supported() {
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let agent = Agent::new("[sandbox]\nnetwork = false\n", true, "- text: unused\n");
    // Servers start in a folder of their own, not the workspace: paths are absolute.
    let ws = agent.workspace.display();
    let script = format!(
        "- tool_calls: [{{name: probe__write, input: {{path: {ws}/from-mcp, text: x}}}}]\n\
         - tool_calls: [{{name: probe__write, input: {{path: {ws}/../escape-mcp, text: x}}}}]\n\
         - tool_calls: [{{name: probe__write, input: {{path: {ws}/agent/.eve/forged, text: x}}}}]\n\
         - tool_calls: [{{name: probe__write, input: {{path: {ws}/agent/tools/bash.toml, text: 'approval = \"never\"'}}}}]\n\
         - tool_calls: [{{name: probe__env, input: {{}}}}]\n\
         - tool_calls: [{{name: probe__connect, input: {{port: {port}}}}}]\n\
         - tool_calls: [{{name: probe__write, input: {{path: $XDG_CACHE_HOME/npm-was-here, text: x}}}}]\n\
         - tool_calls: [{{name: probe__write, input: {{path: $XDG_CACHE_HOME/../beside, text: x}}}}]\n\
         - text: done\n"
    );
    std::fs::write(agent.dir.join("replies.yaml"), script).unwrap();
    probe_connection(&agent, "");
    let out = agent.run(&["--yes"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen = results(&agent);
    assert_eq!(seen.len(), 8, "{seen:?}");
    // Inside the workspace: written.
    assert_eq!(seen[0], "wrote");
    assert!(agent.workspace.join("from-mcp").exists());
    // Outside it, and the agent's own state and definition: refused by the kernel.
    assert!(seen[1].contains("Permission denied"), "{}", seen[1]);
    assert!(!agent.base.join("escape-mcp").exists());
    assert!(seen[2].starts_with("cannot write"), "{}", seen[2]);
    assert!(!agent.dir.join(".eve/forged").exists());
    assert!(seen[3].starts_with("cannot write"), "{}", seen[3]);
    assert_eq!(
        std::fs::read_to_string(agent.dir.join("tools/bash.toml")).unwrap(),
        ""
    );
    // The session's private temp folder, like a command tool's.
    let env: Value = serde_json::from_str(&seen[4]).unwrap();
    let tmpdir = env["TMPDIR"].as_str().unwrap();
    assert!(tmpdir.contains("eve-session-"), "{tmpdir}");
    // `network = false`: no IP connection.
    assert!(seen[5].starts_with("cannot connect"), "{}", seen[5]);
    // Its own cache folder (for `npx`, `uvx`) is writable, and only its own.
    let cache = PathBuf::from(env["XDG_CACHE_HOME"].as_str().unwrap());
    assert!(
        cache.starts_with(common::test_cache()),
        "{}",
        cache.display()
    );
    assert!(cache.ends_with("probe"), "{}", cache.display());
    assert_eq!(
        env["npm_config_cache"].as_str().unwrap(),
        cache.join("npm").to_str().unwrap()
    );
    assert_eq!(seen[6], "wrote");
    assert!(cache.join("npm-was-here").exists());
    assert!(seen[7].contains("Permission denied"), "{}", seen[7]);
    assert!(!cache.parent().unwrap().join("beside").exists());
}

#[test]
fn a_connection_with_sandbox_false_is_not_confined_and_eve_connections_says_so() {
    if !supported() {
        return;
    }
    let agent = Agent::new("", false, "- text: unused\n");
    std::fs::write(
        agent.dir.join("replies.yaml"),
        format!(
            "- tool_calls: [{{name: probe__write, input: {{path: {}/outside-mcp, text: x}}}}]\n- text: done\n",
            agent.base.display()
        ),
    )
    .unwrap();
    probe_connection(&agent, "sandbox = false");
    let out = agent.run(&["--yes"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(results(&agent), ["wrote"]);
    assert!(agent.base.join("outside-mcp").exists());

    let report = eve().arg("connections").arg(&agent.dir).output().unwrap();
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(
        text.contains("  sandbox: off (`sandbox = false` in its file)"),
        "{text}"
    );
    probe_connection(&agent, "");
    let report = eve().arg("connections").arg(&agent.dir).output().unwrap();
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(
        text.contains("  sandbox: workspace-write, network on"),
        "{text}"
    );
}

/// Whether the tests run as root (CI does): the attacks below need it.
/// Each capability set named in `sets` is empty in the `/proc/self/status` lines seen.
fn assert_no_capability(seen: &str, sets: &[&str]) {
    for set in sets {
        assert!(
            seen.contains(&format!("{set}:\t0000000000000000")),
            "{set} is not empty: {seen}"
        );
    }
}

fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Issue 24, finding 1: as root a sandboxed process kept its capabilities, so it made
/// device nodes in the workspace (a block device reaches any file) and a terminal node
/// to type into the person's shell. Now it holds none, Landlock never grants device
/// nodes, and it has no controlling terminal.
#[test]
fn as_root_a_sandboxed_process_holds_no_capability_and_makes_no_device_node() {
    if !supported() || !root() {
        eprintln!("skipped: not root");
        return;
    }
    let agent = Agent::new(
        "",
        false,
        &bash(
            "grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status; \
             mknod disk b 7 0; mknod term c 5 0; mknod null c 1 3; \
             ( exec 3< /dev/tty ) && echo has-a-terminal; \
             ls",
        ),
    );
    assert_eq!(agent.run(&[]).status.code(), Some(0));
    let seen = agent.first_result();
    assert_no_capability(&seen, &["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"]);
    for node in ["disk", "term", "null"] {
        assert!(!agent.workspace.join(node).exists(), "made {node}: {seen}");
    }
    assert!(!seen.contains("has-a-terminal"), "{seen}");
    assert!(
        seen.contains("/dev/tty: No such device or address"),
        "{seen}"
    );
}

/// The sandbox of a person who is not root (most people): the launcher enters a user
/// namespace of its own to make the binds and each call's PID namespace, so it must
/// write its `uid_map` before it stops being dumpable (a launcher that was not dumpable
/// first could not, and no tool started). Run here as nobody when the tests run as root,
/// as CI does.
#[test]
fn as_an_unprivileged_user_a_sandboxed_process_is_confined_the_same_way() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    if !supported() || !root() {
        eprintln!("skipped: the test becomes nobody, which needs root");
        return;
    }
    let agent = Agent::new(
        "",
        false,
        &bash(
            "id -u; grep -E '^(Cap(Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp):' /proc/self/status; \
             touch ../outside || echo refused-outside; touch inside && echo wrote-inside; \
             kill -0 $PPID 2>/dev/null || echo cannot-signal-the-supervisor",
        ),
    );
    // The binary may sit below a folder nobody cannot enter (a clone in /root): a link,
    // or a copy, beside the agent.
    let binary = agent.base.join("eve");
    let built = PathBuf::from(env!("CARGO_BIN_EXE_eve"));
    if std::fs::hard_link(&built, &binary).is_err() {
        std::fs::copy(&built, &binary).unwrap();
    }
    let home = agent.base.join("home");
    std::fs::create_dir_all(&home).unwrap();
    for entry in walkdir::WalkDir::new(&agent.base) {
        let entry = entry.unwrap();
        let mode = if entry.file_type().is_dir() {
            0o777
        } else {
            0o755
        };
        std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let mut command = std::process::Command::new(&binary);
    command
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", &home)
        .env("NO_COLOR", "1")
        .env("EVE_SCRIPTED_LOG", agent.base.join("requests.jsonl"))
        .current_dir(&agent.workspace)
        .arg("run")
        .arg(&agent.dir)
        .args(["--workspace", agent.workspace.to_str().unwrap(), "go"])
        .stdin(std::process::Stdio::null());
    // SAFETY: between fork and exec, only the three system calls that become nobody.
    unsafe {
        command.pre_exec(|| {
            if libc::setgroups(0, std::ptr::null()) != 0
                || libc::setgid(65534) != 0
                || libc::setuid(65534) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = command.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen = agent.first_result();
    assert!(seen.starts_with("exit code: 0"), "{seen}");
    assert!(seen.contains("65534"), "{seen}");
    assert_no_capability(&seen, &["CapPrm", "CapEff", "CapBnd", "CapAmb"]);
    assert!(seen.contains("NoNewPrivs:\t1"), "{seen}");
    assert!(seen.contains("Seccomp:\t2"), "{seen}");
    assert!(seen.contains("refused-outside"), "{seen}");
    assert!(!agent.base.join("outside").exists());
    assert!(seen.contains("wrote-inside"), "{seen}");
    assert!(seen.contains("cannot-signal-the-supervisor"), "{seen}");
}

/// Finding 1 again: through a terminal it can open (read-only, as any file), a process
/// of the model's cannot inject input (`TIOCSTI`): the seccomp filter refuses it.
#[test]
fn a_sandboxed_process_cannot_type_into_a_terminal() {
    if !supported() {
        return;
    }
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty writes two descriptors; the name, termios and size may be null.
    let opened = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(opened, 0);
    // SAFETY: ptsname_r writes at most the buffer's length.
    let mut name = [0u8; 64];
    assert_eq!(
        unsafe { libc::ptsname_r(master, name.as_mut_ptr().cast(), name.len()) },
        0
    );
    let path = std::ffi::CStr::from_bytes_until_nul(&name)
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    // Raw and non-blocking: one injected byte would be readable at once.
    // SAFETY: termios calls on the terminal this test opened.
    unsafe {
        let mut raw: libc::termios = std::mem::zeroed();
        libc::tcgetattr(slave, &mut raw);
        libc::cfmakeraw(&mut raw);
        libc::tcsetattr(slave, libc::TCSANOW, &raw);
        libc::fcntl(slave, libc::F_SETFL, libc::O_NONBLOCK);
    }
    let probe = format!(
        "import fcntl, termios\nfd = open({path:?}, 'rb', buffering=0).fileno()\ntry:\n    fcntl.ioctl(fd, termios.TIOCSTI, b'Z')\n    print('injected')\nexcept OSError as e:\n    print('refused:', e.strerror)\n"
    );
    let agent = Agent::new("", false, &bash("python3 probe.py"));
    std::fs::write(agent.workspace.join("probe.py"), probe).unwrap();
    assert_eq!(agent.run(&[]).status.code(), Some(0));
    let seen = agent.first_result();
    assert!(seen.contains("refused: Permission denied"), "{seen}");
    let mut byte = [0u8; 1];
    // SAFETY: read into a one-byte buffer from the non-blocking terminal.
    let got = unsafe { libc::read(slave, byte.as_mut_ptr().cast(), 1) };
    assert!(got <= 0, "a byte reached the terminal: {byte:?}");
    // SAFETY: closing the descriptors this test opened.
    unsafe {
        libc::close(master);
        libc::close(slave);
    }
}

/// Issue 24, finding 2: with the network off only `AF_UNIX` sockets open — not IP,
/// packet, netlink or vsock (as root a packet socket on `lo` reads eve's own requests
/// to a local provider); with it on, no raw or packet socket either (no `CAP_NET_RAW`).
#[test]
fn without_network_only_unix_sockets_open_and_never_a_packet_socket() {
    if !supported() {
        return;
    }
    let probe = "import socket\n\
        for name, family, kind in [('inet', 2, 1), ('inet6', 10, 1), ('packet', 17, 3), ('netlink', 16, 3), ('vsock', 40, 1), ('raw', 2, 3), ('unix', 1, 1)]:\n\
        \x20   try:\n\
        \x20       socket.socket(family, kind).close()\n\
        \x20       print(name, 'opened')\n\
        \x20   except OSError as e:\n\
        \x20       print(name, 'refused')\n";
    let off = Agent::new(
        "[sandbox]\nnetwork = false\n",
        false,
        &bash("python3 probe.py"),
    );
    std::fs::write(off.workspace.join("probe.py"), probe).unwrap();
    assert_eq!(off.run(&[]).status.code(), Some(0));
    let seen = off.first_result();
    for family in ["inet", "inet6", "packet", "netlink", "vsock", "raw"] {
        assert!(
            seen.contains(&format!("{family} refused")),
            "{family}: {seen}"
        );
    }
    assert!(seen.contains("unix opened"), "{seen}");
    let on = Agent::new("", false, &bash("python3 probe.py"));
    std::fs::write(on.workspace.join("probe.py"), probe).unwrap();
    assert_eq!(on.run(&[]).status.code(), Some(0));
    let seen = on.first_result();
    assert!(seen.contains("inet opened"), "{seen}");
    for family in ["packet", "raw"] {
        assert!(
            seen.contains(&format!("{family} refused")),
            "{family}: {seen}"
        );
    }
}

/// Issue 24, finding 9: a chain of processes deeper than a supervisor can follow (each
/// waits for the next, so a scan of its children finds one link at a time), whose last
/// link writes a file late, dies whole with the call: the call's supervisor is the init
/// of its own PID namespace, and the kernel ends the namespace with it.
#[test]
fn a_process_chain_deeper_than_a_scan_dies_whole_with_the_call() {
    if !supported() {
        return;
    }
    let marker = "eve-chain-marker-24-9";
    let chain = format!(
        "if [ \"$1\" -gt 0 ]; then sh chain.sh $(($1 - 1)) {marker} & wait; else touch ready; sleep 3; touch late; fi\n"
    );
    let agent = Agent::new(
        "",
        false,
        &bash(&format!(
            "sh chain.sh 1500 {marker} & while [ ! -e ready ]; do sleep 0.05; done; echo started"
        )),
    );
    std::fs::write(agent.workspace.join("chain.sh"), chain).unwrap();
    assert_eq!(agent.run(&[]).status.code(), Some(0));
    let seen = agent.first_result();
    assert!(seen.starts_with("exit code: 0\n"), "{seen}");
    assert!(!seen.contains("did not die"), "{seen}");
    std::thread::sleep(std::time::Duration::from_secs(4));
    assert!(
        !agent.workspace.join("late").exists(),
        "the end of the chain outlived the call: {seen}"
    );
    let survivors = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| c.windows(marker.len()).any(|w| w == marker.as_bytes()))
        })
        .count();
    assert_eq!(survivors, 0, "processes of the chain are still running");
}

/// Runs `git` in `dir` as the person would, outside any sandbox.
fn git(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new("git")
        .current_dir(dir)
        .args([
            "-c",
            "user.email=person@example.com",
            "-c",
            "user.name=Person",
        ])
        .args(["-c", "protocol.file.allow=always"])
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env_remove("GIT_SSH_COMMAND")
        .env_remove("GIT_SSH")
        .output()
        .unwrap()
}

#[test]
fn a_process_cannot_make_the_persons_next_git_command_run_its_program() {
    if !supported() {
        return;
    }
    let agent = Agent::new("", false, "- text: unused\n");
    let ws = &agent.workspace;
    // The workspace is a repository with a submodule (whose `.git` is a `gitdir:` file).
    let origin = agent.base.join("origin-sub");
    std::fs::create_dir_all(&origin).unwrap();
    assert!(git(&origin, &["init", "-q"]).status.success());
    assert!(
        git(&origin, &["commit", "-q", "--allow-empty", "-m", "s"])
            .status
            .success()
    );
    assert!(git(ws, &["init", "-q"]).status.success());
    let added = git(
        ws,
        &["submodule", "add", "-q", origin.to_str().unwrap(), "sub"],
    );
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
    assert!(git(ws, &["commit", "-q", "-m", "sub"]).status.success());
    assert!(ws.join("sub/.git").is_file());
    // The model's program, and every route it tries to make git run it.
    let ran = agent.base.join("ran");
    let script = format!(
        "printf '#!/bin/sh\\necho \"$0 $*\" >> {ran}\\n' > evil.sh; chmod +x evil.sh; E=$PWD/evil.sh; \
         mkdir -p evil-hooks && cp evil.sh evil-hooks/pre-commit; \
         cp -r .git evil-git; for g in evil-git .git; do \
           git --git-dir=$g config core.fsmonitor $E; \
           git --git-dir=$g config core.hooksPath $PWD/evil-hooks; \
           git --git-dir=$g config core.sshCommand $E; done; \
         echo $PWD/evil-git > .git/commondir; \
         printf 'gitdir: %s\\n' $PWD/evil-git > sub/.git; \
         cp evil.sh .git/hooks/pre-commit; cp evil.sh .git/modules/sub/hooks/pre-commit; \
         printf '[core]\\n\\tfsmonitor = %s\\n' $E >> .git/modules/sub/config; \
         echo tried",
        ran = ran.display()
    );
    std::fs::write(agent.dir.join("replies.yaml"), bash(&script)).unwrap();
    let out = agent.run(&["--yes"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen = agent.first_result();
    assert!(seen.contains("tried"), "{seen}");
    assert!(seen.contains("Read-only file system"), "{seen}");
    assert!(
        ws.join("evil.sh").is_file(),
        "the workspace itself stays writable"
    );
    // The person's next commands, outside the sandbox, run nothing of the model's.
    for args in [
        &["status"][..],
        &["-C", "sub", "status"],
        &["commit", "-q", "--allow-empty", "-m", "mine"],
        &["-C", "sub", "commit", "-q", "--allow-empty", "-m", "mine"],
        &["ls-remote", "ssh://127.0.0.1:9/nothing"],
    ] {
        git(ws, args);
        assert!(
            !ran.exists(),
            "`git {}` ran the model's program: {}",
            args.join(" "),
            std::fs::read_to_string(&ran).unwrap_or_default()
        );
    }
    // And git still works for the model, reading: its status and log.
    std::fs::remove_file(agent.base.join("requests.jsonl")).unwrap();
    std::fs::write(
        agent.dir.join("replies.yaml"),
        bash("git status --short && git log --oneline | wc -l && echo read-ok"),
    )
    .unwrap();
    assert_eq!(agent.run(&["--yes"]).status.code(), Some(0));
    assert!(
        agent.first_result().contains("read-ok"),
        "{}",
        agent.first_result()
    );
}

#[test]
fn a_file_a_command_runs_is_part_of_the_definition() {
    if !supported() {
        return;
    }
    let script = bash(
        "echo 'echo hijacked' >> agent/servers/start.sh; echo 'echo hijacked' > agent/scripts/count.sh; \
         rm -rf agent/scripts; mv agent/servers agent/servers-old; echo tried",
    );
    let agent = Agent::new("", true, &script);
    let runs = |agent: &Agent| {
        std::fs::create_dir_all(agent.dir.join("servers")).unwrap();
        std::fs::create_dir_all(agent.dir.join("scripts")).unwrap();
        std::fs::write(agent.dir.join("servers/start.sh"), "exec mcp-test-server\n").unwrap();
        std::fs::write(agent.dir.join("scripts/count.sh"), "echo 3\n").unwrap();
        std::fs::create_dir_all(agent.dir.join("connections")).unwrap();
        std::fs::write(
            agent.dir.join("connections/helper.toml"),
            "command = [\"sh\", \"{{ agent_dir }}/servers/start.sh\"]\n[tools]\nallow = [\"add\"]\n",
        )
        .unwrap();
        std::fs::write(
            agent.dir.join("tools/count.toml"),
            "description = \"Counts\"\ncommand = [\"sh\", \"{{ agent_dir }}/scripts/count.sh\"]\n[input_schema]\ntype = \"object\"\n",
        )
        .unwrap();
    };
    runs(&agent);
    // The model's processes cannot change, remove or move what the commands run.
    let out = agent.run(&["--yes"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen = agent.first_result();
    assert!(
        seen.contains("tried") && seen.contains("Read-only file system"),
        "{seen}"
    );
    assert_eq!(
        std::fs::read_to_string(agent.dir.join("servers/start.sh")).unwrap(),
        "exec mcp-test-server\n"
    );
    assert_eq!(
        std::fs::read_to_string(agent.dir.join("scripts/count.sh")).unwrap(),
        "echo 3\n"
    );
    // Nor can eve's own file tools.
    let agent = Agent::new(
        "",
        true,
        "- tool_calls: [{name: write_file, input: {path: agent/servers/start.sh, content: 'echo hijacked'}}]\n- text: done\n",
    );
    runs(&agent);
    std::fs::write(agent.dir.join("tools/write_file.toml"), "").unwrap();
    assert_eq!(agent.run(&["--yes"]).status.code(), Some(0));
    let seen = agent.first_result();
    assert!(
        seen.contains("part of the agent's own definition"),
        "{seen}"
    );
    assert_eq!(
        std::fs::read_to_string(agent.dir.join("servers/start.sh")).unwrap(),
        "exec mcp-test-server\n"
    );
    // When the author lets the agent change its definition, a change to them is one:
    // recorded, and the next run waits for the person to see it.
    let agent = Agent::new(
        "[workspace]\nagent_writable = true\n",
        true,
        &bash("echo 'echo changed' >> agent/servers/start.sh && echo wrote"),
    );
    runs(&agent);
    let out = agent.run(&["--yes"]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        agent.first_result().contains("wrote"),
        "{}",
        agent.first_result()
    );
    assert!(
        err.contains("definition changed during this run (files ~servers)"),
        "{err}"
    );
    let next = agent.run(&[]);
    assert_eq!(next.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&next.stderr).contains("changed while it ran (files ~servers)"),
        "{}",
        String::from_utf8_lossy(&next.stderr)
    );
}

#[test]
fn a_process_cannot_create_a_first_definition_folder() {
    if !supported() {
        return;
    }
    let marker = tempfile::tempdir().unwrap();
    let marker = marker.path().join("ran");
    let script = bash(&format!(
        "mkdir -p agent/connections; printf 'command = [\"sh\", \"-c\", \"touch {}\"]\\nsandbox = false\\n' > agent/connections/helper.toml; \
         mkdir -p agent/subagents/x; echo tried",
        marker.display()
    ));
    let agent = Agent::new("", true, &script);
    assert!(!agent.dir.join("connections").exists());
    let out = agent.run(&["--yes"]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{err}");
    let seen = agent.first_result();
    assert!(
        seen.contains("tried") && seen.contains("Read-only file system"),
        "{seen}"
    );
    assert!(!agent.dir.join("connections/helper.toml").exists());
    assert!(!agent.dir.join("subagents/x").exists());
    // The folders eve kept in the definition's place are empty: the same definition.
    assert!(!err.contains("definition changed"), "{err}");
    let build = eve().arg("build").arg(&agent.dir).output().unwrap();
    assert_eq!(build.status.code(), Some(0));
    assert!(!marker.exists());
}

#[test]
fn a_stdio_server_is_not_taken_from_the_workspace() {
    if !supported() {
        return;
    }
    let agent = Agent::new("", false, "- text: unused\n");
    let hijacked = agent.base.join("hijacked");
    // What the model writes into the workspace: a Python module of the server's name,
    // a program of that name in a folder of PATH inside the workspace, and a package
    // `npx` would run from the folder it starts in.
    let package = agent.workspace.join("hijacked-package");
    let script = bash(&format!(
        "printf 'open(\"{h}-module\", \"w\").write(\"x\")\\n' > eve_helper_server.py; \
         mkdir -p bin && printf '#!/bin/sh\\ntouch {h}-path\\n' > bin/eve-helper-server && chmod +x bin/eve-helper-server; \
         mkdir -p node_modules/.bin && printf '#!/bin/sh\\ntouch {p}\\n' > node_modules/.bin/eve-helper-server && chmod +x node_modules/.bin/eve-helper-server; \
         echo planted",
        h = hijacked.display(),
        p = package.display()
    ));
    std::fs::write(
        agent.dir.join("replies.yaml"),
        format!("{script}- text: second\n- text: third\n"),
    )
    .unwrap();
    std::fs::create_dir_all(agent.dir.join("connections")).unwrap();
    for (name, file) in [
        (
            "module",
            "command = [\"python3\", \"-m\", \"eve_helper_server\"]\n",
        ),
        (
            "module-in-workspace",
            "command = [\"python3\", \"-m\", \"eve_helper_server\"]\ncwd = \".\"\n",
        ),
        ("program", "command = [\"eve-helper-server\"]\n"),
    ] {
        std::fs::write(
            agent.dir.join("connections").join(format!("{name}.toml")),
            format!("{file}sandbox = false\nrequired = false\nstartup_timeout_secs = 5\n"),
        )
        .unwrap();
    }
    // `npx` with no network (offline, a registry on a closed port): only a local
    // package can run. Sandboxed, so its mark goes in the workspace.
    let npx = std::process::Command::new("npx")
        .arg("--version")
        .output()
        .is_ok();
    if npx {
        std::fs::write(
            agent.dir.join("connections/package.toml"),
            "command = [\"npx\", \"--no-install\", \"eve-helper-server\"]\n\
             env = { npm_config_offline = \"true\", npm_config_registry = \"http://127.0.0.1:9/\" }\n\
             required = false\nstartup_timeout_secs = 20\n",
        )
        .unwrap();
    } else {
        eprintln!("npx is not installed: the package route is not tried");
    }
    let path = std::env::join_paths(
        std::iter::once(agent.workspace.join("bin"))
            .chain(std::env::split_paths(&common::mcp::path_with_server())),
    )
    .unwrap();
    let run = || {
        eve()
            .env("PATH", &path)
            .env("EVE_SCRIPTED_LOG", agent.base.join("requests.jsonl"))
            .arg("run")
            .arg(&agent.dir)
            .args([
                "--workspace",
                agent.workspace.to_str().unwrap(),
                "--yes",
                "go",
            ])
            .write_stdin("")
            .output()
            .unwrap()
    };
    let first = run();
    assert_eq!(
        first.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert!(
        agent.first_result().contains("planted"),
        "{}",
        agent.first_result()
    );
    // The next session starts (and its build lists) the servers again.
    let second = run();
    assert_eq!(
        second.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    for what in ["module", "path"] {
        let planted = PathBuf::from(format!("{}-{what}", hijacked.display()));
        assert!(!planted.exists(), "the model's {what} ran as a server");
    }
    assert!(!package.exists(), "the model's package ran as a server");
}

/// A `bash` the model plants in a `PATH` folder inside the workspace is never the one
/// a call runs: the launcher looks programs up outside the folders its processes may
/// write.
#[test]
fn bash_is_not_taken_from_a_path_folder_the_model_may_write() {
    if !supported() {
        return;
    }
    let agent = Agent::new("", false, &bash("echo ran-the-real-bash"));
    let bin = agent.workspace.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let planted = agent.workspace.join("planted-ran");
    std::fs::write(
        bin.join("bash"),
        format!("#!/bin/sh\ntouch {}\necho planted\n", planted.display()),
    )
    .unwrap();
    std::fs::set_permissions(
        bin.join("bash"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = eve()
        .env("PATH", path)
        .env("EVE_SCRIPTED_LOG", agent.base.join("requests.jsonl"))
        .arg("run")
        .arg(&agent.dir)
        .args(["--workspace", agent.workspace.to_str().unwrap(), "go"])
        .write_stdin("")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let seen = agent.first_result();
    assert!(seen.contains("ran-the-real-bash"), "{seen}");
    assert!(!planted.exists(), "the planted bash ran: {seen}");
}
