//! Memory the file tools use is bounded by what they return, not by the file: a
//! counting allocator measures the peak while a tool reads a 4 GiB sparse file or a
//! file whose only line is tens of MiB long. Allocations over 1 GiB are refused, so a
//! regression aborts this test instead of exhausting the machine.
// clippy.toml's disallowed reads are the compiler's rule, not this crate's.
#![allow(clippy::disallowed_methods)]
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use eve::tools::builtin::grep::GrepTool;
use eve::tools::builtin::read_file::ReadFile;
use eve::tools::{ToolContext, ToolExec, ToolOutput};
use serde_json::{Value, json};

const MIB: usize = 1024 * 1024;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, Ordering::SeqCst) + by;
    PEAK.fetch_max(now, Ordering::SeqCst);
}

// SAFETY: every call is forwarded to the system allocator with the caller's layout;
// the counters are only bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > 1024 * MIB {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's layout is passed on unchanged.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            grew(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::SeqCst);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > 1024 * MIB {
            return std::ptr::null_mut();
        }
        // SAFETY: `ptr` was allocated by this allocator with `layout`.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            if new_size > layout.size() {
                grew(new_size - layout.size());
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::SeqCst);
            }
        }
        new
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// One measurement at a time: the counters are global.
static SERIAL: Mutex<()> = Mutex::new(());

/// The call's output and how many bytes it held at most above what was live before.
fn measure(tool: &dyn ToolExec, input: Value, ctx: &ToolContext) -> (ToolOutput, usize) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let before = LIVE.load(Ordering::SeqCst);
    PEAK.store(before, Ordering::SeqCst);
    let out = runtime.block_on(tool.call(&input, ctx));
    let peak = PEAK.load(Ordering::SeqCst).saturating_sub(before);
    (out, peak)
}

fn workspace() -> (tempfile::TempDir, PathBuf, ToolContext) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let ctx = ToolContext::new(root.clone(), root.join("agent"));
    (tmp, root, ctx)
}

#[test]
fn a_page_of_a_4_gib_sparse_file_costs_kilobytes() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (_tmp, root, ctx) = workspace();
    // 12 KB of text, then a hole: 4 GiB on paper, nothing more on disk.
    let path = root.join("huge.log");
    std::fs::write(&path, "a line of text\n".repeat(800)).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(4 * 1024 * MIB as u64)
        .unwrap();
    let (out, peak) = measure(&ReadFile, json!({"path": "huge.log", "limit": 1}), &ctx);
    assert_eq!(
        out,
        ToolOutput::error(
            "`huge.log` is a binary file (it contains NUL bytes); read_file only reads text"
        )
    );
    assert!(peak < 2 * MIB, "read_file held {peak} bytes");
    let (out, peak) = measure(&GrepTool::default(), json!({"pattern": "text"}), &ctx);
    assert!(
        out.content.contains("skipped as binary: `huge.log`"),
        "{}",
        out.content
    );
    assert!(peak < 4 * MIB, "grep held {peak} bytes");
}

#[test]
fn a_32_mib_line_costs_what_is_shown() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (_tmp, root, ctx) = workspace();
    let mut line = vec![b'x'; 32 * MIB];
    line.extend_from_slice(b" needle\nshort needle\n");
    std::fs::write(root.join("wide.txt"), &line).unwrap();
    drop(line);

    let (out, peak) = measure(&ReadFile, json!({"path": "wide.txt", "limit": 1}), &ctx);
    assert!(
        out.content
            .starts_with(&format!("     1\t{}", "x".repeat(2000))),
        "{}",
        &out.content[..100]
    );
    assert!(
        out.content.contains(&format!(
            " … [line cut at 2000 of {} characters]",
            32 * MIB + 7
        )),
        "{}",
        &out.content[out.content.len() - 200..]
    );
    assert!(peak < 2 * MIB, "read_file held {peak} bytes");

    let (out, peak) = measure(
        &GrepTool::default(),
        json!({"pattern": "needle", "output_mode": "content"}),
        &ctx,
    );
    assert_eq!(
        out.content,
        "No matches for `needle` in `.`.\n(1 file skipped: a line longer than 8 MiB: `wide.txt`)"
    );
    assert!(peak < 20 * MIB, "grep held {peak} bytes");
}
