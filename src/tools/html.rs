//! HTML to Markdown that no page can turn into a crash or a runaway: nesting is bounded
//! before the parser sees it and again before htmd's recursive walk, the work runs on its
//! own thread with a large stack, and a call that gives up on it (a timeout, an aborted
//! turn) stops it at the next chunk of input.
//!
//! html5ever's tree builder spends time in proportion to the depth of the open elements
//! for every tag, so 100,000 nested `<div>`s take minutes; and htmd walks the tree
//! recursively, so 1,000 nested lists overflow a thread's stack. A first pass with
//! html5ever's tokenizer (linear) writes the page back out without the start and end tags
//! that would nest deeper than [`MAX_DEPTH`] (their text stays); the parsed tree is then cut
//! at [`MAX_DEPTH`] for certain, whatever the tree builder made of the tags.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{
    BufferQueue, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};
use markup5ever_rcdom::{Handle, NodeData, RcDom};

/// Elements nested deeper than this lose their tags; their text is kept.
pub const MAX_DEPTH: usize = 100;
/// Formatting elements (`<b>`, `<font>`…) left open at once, beyond which more are dropped:
/// the tree builder reopens open formatting elements after every block, nesting them again.
const MAX_FORMATTING: usize = 24;
/// Bytes fed to the parser between two looks at whether to stop.
const CHUNK: usize = 16 * 1024;
/// The conversion thread's stack: room for htmd's walk over [`MAX_DEPTH`] levels many times over.
const STACK: usize = 64 * 1024 * 1024;

const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr", "keygen", "frame",
];
const FORMATTING: &[&str] = &[
    "a", "b", "big", "code", "em", "font", "i", "nobr", "s", "small", "strike", "strong", "tt", "u",
];

/// Converts `html` to Markdown, leaving out the elements in `skip` (scripts, styles…).
/// Dropping the future stops the conversion.
pub async fn to_markdown(html: String, skip: &'static [&'static str]) -> Result<String, String> {
    struct StopOnDrop(Arc<AtomicBool>);
    impl Drop for StopOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    let _guard = StopOnDrop(stop.clone());
    let (send, receive) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("eve-html".into())
        .stack_size(STACK)
        .spawn(move || {
            let _ = send.send(convert(&html, skip, &stop));
        })
        .map_err(|e| format!("cannot start the conversion: {e}"))?;
    receive
        .await
        .map_err(|_| "the conversion ended without a result".to_string())?
}

/// The conversion itself, on the calling thread; `Err` once `stop` is set.
pub fn convert(html: &str, skip: &[&str], stop: &AtomicBool) -> Result<String, String> {
    let stopped = || "the conversion was stopped".to_string();
    let flat = flatten(html, stop).ok_or_else(stopped)?;
    let mut parser = html5ever::parse_document(RcDom::default(), Default::default());
    let mut rest = flat.as_str();
    while !rest.is_empty() {
        if stop.load(Ordering::Relaxed) {
            return Err(stopped());
        }
        let mut end = rest.len().min(CHUNK);
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        parser.process(StrTendril::from(&rest[..end]));
        rest = &rest[end..];
    }
    let dom = parser.finish();
    cap_depth(&dom.document, MAX_DEPTH, skip);
    if stop.load(Ordering::Relaxed) {
        return Err(stopped());
    }
    let options = htmd::options::Options {
        bullet_list_marker: htmd::options::BulletListMarker::Dash,
        ul_bullet_spacing: 1,
        ol_number_spacing: 1,
        ..Default::default()
    };
    let converter = htmd::HtmlToMarkdown::builder()
        .options(options)
        .skip_tags(skip.to_vec())
        .build();
    Ok(converter.tree_to_markdown(&dom.document).trim().to_string())
}

/// The page written back out from its tokens, without the tags that would nest deeper
/// than [`MAX_DEPTH`] or keep more than [`MAX_FORMATTING`] formatting elements open;
/// `None` once `stop` is set.
fn flatten(html: &str, stop: &AtomicBool) -> Option<String> {
    let tokenizer = Tokenizer::new(Flattener::default(), TokenizerOpts::default());
    let mut rest = html;
    while !rest.is_empty() {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        let mut end = rest.len().min(CHUNK);
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        let input = BufferQueue::default();
        input.push_back(StrTendril::from(&rest[..end]));
        let _ = tokenizer.feed(&input);
        rest = &rest[end..];
    }
    tokenizer.end();
    Some(tokenizer.sink.state.take().out)
}

#[derive(Default)]
struct Flattener {
    state: RefCell<Flat>,
}

#[derive(Default)]
struct Flat {
    out: String,
    /// The elements open, as a forgiving model of the tree builder's stack.
    open: Vec<String>,
    /// Formatting elements open (the tree builder keeps reopening them).
    formatting: Vec<String>,
    /// Start tags dropped and not yet closed, by name, so their end tags go too.
    dropped: Vec<String>,
    /// Inside an element whose text is raw (script, style…): no escaping.
    raw: Option<String>,
}

impl TokenSink for Flattener {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        let mut flat = self.state.borrow_mut();
        match token {
            Token::TagToken(tag) => {
                let name = tag.name.to_string();
                match tag.kind {
                    TagKind::StartTag => return flat.start(&name, &tag),
                    TagKind::EndTag => flat.end(&name),
                }
            }
            Token::CharacterTokens(text) => {
                if flat.raw.is_some() {
                    flat.out.push_str(&text);
                } else {
                    escape(&text, &mut flat.out);
                }
            }
            Token::NullCharacterToken => flat.out.push('\u{FFFD}'),
            Token::DoctypeToken(_) => flat.out.push_str("<!DOCTYPE html>"),
            Token::CommentToken(_) | Token::EOFToken | Token::ParseError(_) => {}
        }
        TokenSinkResult::Continue
    }
}

impl Flat {
    fn start(&mut self, name: &str, tag: &html5ever::tokenizer::Tag) -> TokenSinkResult<()> {
        let void = VOID.contains(&name);
        if !void {
            self.close_implied(name);
        }
        let formatting = FORMATTING.contains(&name);
        let too_deep = !void && self.open.len() >= MAX_DEPTH;
        let too_many = formatting && self.formatting.len() >= MAX_FORMATTING;
        if too_deep || too_many {
            self.dropped.push(name.to_string());
            return TokenSinkResult::Continue;
        }
        self.out.push('<');
        self.out.push_str(name);
        for attr in &tag.attrs {
            self.out.push(' ');
            self.out.push_str(&attr.name.local);
            self.out.push_str("=\"");
            for c in attr.value.chars() {
                match c {
                    '&' => self.out.push_str("&amp;"),
                    '"' => self.out.push_str("&quot;"),
                    c => self.out.push(c),
                }
            }
            self.out.push('"');
        }
        if tag.self_closing {
            self.out.push('/');
        }
        self.out.push('>');
        if !void {
            self.open.push(name.to_string());
        }
        if formatting {
            self.formatting.push(name.to_string());
        }
        let raw = match name {
            "script" => Some(RawKind::ScriptData),
            "style" | "xmp" | "iframe" | "noembed" | "noframes" => Some(RawKind::Rawtext),
            "textarea" | "title" => Some(RawKind::Rcdata),
            _ => None,
        };
        match raw {
            Some(kind) => {
                if kind != RawKind::Rcdata {
                    self.raw = Some(name.to_string());
                }
                TokenSinkResult::RawData(kind)
            }
            None if name == "plaintext" => {
                self.raw = Some(name.to_string());
                TokenSinkResult::Plaintext
            }
            None => TokenSinkResult::Continue,
        }
    }

    fn end(&mut self, name: &str) {
        if self.raw.as_deref() == Some(name) {
            self.raw = None;
        }
        if let Some(i) = self.dropped.iter().rposition(|d| d == name) {
            self.dropped.remove(i);
            return;
        }
        if let Some(i) = self.formatting.iter().rposition(|f| f == name) {
            self.formatting.remove(i);
        }
        if let Some(i) = self.open.iter().rposition(|o| o == name) {
            self.open.truncate(i);
        }
        self.out.push_str("</");
        self.out.push_str(name);
        self.out.push('>');
    }

    /// Start tags that close an open element of their kind, as the tree builder does
    /// (`<li>` after an `<li>`, `<p>` or a block after a `<p>`…).
    fn close_implied(&mut self, name: &str) {
        let closes: &[&str] = match name {
            "li" => &["li"],
            "dt" | "dd" => &["dt", "dd"],
            "option" => &["option"],
            "tr" => &["tr", "td", "th"],
            "td" | "th" => &["td", "th"],
            "thead" | "tbody" | "tfoot" => &["thead", "tbody", "tfoot", "tr", "td", "th"],
            "p" | "div" | "ul" | "ol" | "dl" | "table" | "section" | "article" | "aside"
            | "header" | "footer" | "nav" | "main" | "blockquote" | "pre" | "form" | "h1"
            | "h2" | "h3" | "h4" | "h5" | "h6" | "figure" | "details" | "address" | "hr" => &["p"],
            _ => return,
        };
        let boundary = [
            "ul", "ol", "table", "div", "body", "html", "td", "th", "button",
        ];
        for i in (0..self.open.len()).rev() {
            let open = self.open[i].as_str();
            if closes.contains(&open) {
                self.open.truncate(i);
                return;
            }
            if boundary.contains(&open) {
                return;
            }
        }
    }
}

fn escape(text: &str, out: &mut String) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
}

/// Replaces the children of every element at depth `max` with the text of its subtree
/// (without the text of `skip` elements), so that no path in the tree is longer than `max`.
fn cap_depth(root: &Handle, max: usize, skip: &[&str]) {
    let mut stack: Vec<(Handle, usize)> = vec![(root.clone(), 0)];
    while let Some((node, depth)) = stack.pop() {
        if depth >= max {
            let texts = texts_below(&node, skip);
            for text in &texts {
                text.parent.set(Some(Rc::downgrade(&node)));
            }
            *node.children.borrow_mut() = texts;
            continue;
        }
        for child in node.children.borrow().iter() {
            stack.push((child.clone(), depth + 1));
        }
    }
}

/// The text nodes under `node`, in document order, found without recursion.
fn texts_below(node: &Handle, skip: &[&str]) -> Vec<Handle> {
    let mut texts = Vec::new();
    let mut stack: Vec<Handle> = node.children.borrow().iter().rev().cloned().collect();
    while let Some(next) = stack.pop() {
        match &next.data {
            NodeData::Text { .. } => texts.push(next.clone()),
            NodeData::Element { name, .. } if skip.contains(&&*name.local) => {}
            _ => stack.extend(next.children.borrow().iter().rev().cloned()),
        }
    }
    texts
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn md(html: &str) -> String {
        convert(html, &["script", "style"], &AtomicBool::new(false)).unwrap()
    }

    #[test]
    fn ordinary_pages_convert_as_before() {
        assert_eq!(
            md(
                "<h1>Title</h1><p>Some <b>bold</b> &amp; <a href=\"https://x.y/?a=1&amp;b=2\">link</a>.</p><ul><li>one<li>two</ul><script>x()</script>"
            ),
            "# Title\n\nSome **bold** & [link](https://x.y/?a=1&b=2).\n\n- one\n- two"
        );
        // The first pass changes nothing htmd would see on an ordinary page.
        for page in [
            "<!DOCTYPE html><html><head><title>T &amp; U</title><style>p{}</style></head><body><pre><code>a &lt; b</code></pre><table><tr><td>1<td>2</table><p>x<p>y<textarea>&lt;t&gt;</textarea><img src=\"a.png\" alt='\"q\"'></body></html>",
            "<p>un<b>closed <i>tags<p>and <font color=red>more",
        ] {
            let direct = htmd::HtmlToMarkdown::builder()
                .options(htmd::options::Options {
                    bullet_list_marker: htmd::options::BulletListMarker::Dash,
                    ul_bullet_spacing: 1,
                    ol_number_spacing: 1,
                    ..Default::default()
                })
                .skip_tags(vec!["script", "style"])
                .build()
                .convert(page)
                .unwrap();
            assert_eq!(md(page), direct.trim(), "{page}");
        }
    }

    #[test]
    fn deep_nesting_is_cut_and_its_text_kept() {
        let lists = format!(
            "{}deep{}",
            "<ul><li>".repeat(1000),
            "</li></ul>".repeat(1000)
        );
        assert!(md(&lists).contains("deep"));
        let divs = format!("{}x{}", "<div>".repeat(100_000), "</div>".repeat(100_000));
        assert_eq!(md(&divs), "x");
        let unclosed = format!("{}y", "<div><b class=c>".repeat(50_000));
        assert!(md(&unclosed).contains('y'));
    }

    #[test]
    fn a_stop_ends_the_conversion() {
        let stop = AtomicBool::new(true);
        assert!(convert("<p>x</p>", &[], &stop).is_err());
    }
}
