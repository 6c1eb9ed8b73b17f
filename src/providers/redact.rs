//! The secrets a provider holds (its key, the credentials in its base URL), and text with them masked.

/// What a secret is replaced by.
pub const MASK: &str = "***";

/// Values shorter than this are not masked: no provider issues keys that short, and
/// replacing every occurrence of a short string would garble the message around it.
pub const MIN_SECRET_CHARS: usize = 8;

/// The secret values of one provider; [`Secrets::redact`] masks each of them in a text.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secrets(Vec<String>);

impl Secrets {
    /// The secrets of a provider with this key, reached at this base URL.
    pub fn new(api_key: Option<&str>, base_url: &str) -> Secrets {
        let mut values: Vec<String> = api_key.into_iter().map(str::to_string).collect();
        if let Some(userinfo) = userinfo(base_url) {
            values.push(userinfo.to_string());
            for part in userinfo.split(':') {
                values.push(part.to_string());
                values.push(percent_decoded(part));
            }
        }
        values.retain(|v| v.chars().count() >= MIN_SECRET_CHARS);
        // Longest first, so a secret that contains another is masked whole.
        values.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        values.dedup();
        Secrets(values)
    }

    /// `text` with every secret replaced by [`MASK`].
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for secret in &self.0 {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), MASK);
            }
        }
        out
    }
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secrets({} values)", self.0.len())
    }
}

pub use crate::text::userinfo;

/// The URL with its user and password replaced by [`MASK`]: safe to print and log.
pub fn url_for_display(url: &str) -> String {
    match userinfo(url) {
        Some(info) => {
            let start = url.len() - url.split_once("://").map_or(url, |(_, rest)| rest).len();
            format!("{}{MASK}{}", &url[..start], &url[start + info.len()..])
        }
        None => url.to_string(),
    }
}

fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0)) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn finds_the_userinfo_of_a_url_and_masks_it_for_display() {
        assert_eq!(
            userinfo("http://user:PASSWORD@host:8080/v1"),
            Some("user:PASSWORD")
        );
        assert_eq!(userinfo("https://tok3n@host/a@b"), Some("tok3n"));
        assert_eq!(userinfo("https://host/v1?q=a@b"), None);
        assert_eq!(userinfo("https://api.openai.com/v1"), None);
        assert_eq!(
            url_for_display("http://user:PASSWORD@host:8080/v1/messages"),
            "http://***@host:8080/v1/messages"
        );
        assert_eq!(url_for_display("u:p@host/v1"), "***@host/v1");
        assert_eq!(
            url_for_display("https://api.anthropic.com"),
            "https://api.anthropic.com"
        );
    }

    #[test]
    fn masks_the_key_and_the_url_credentials_in_any_form() {
        let secrets = Secrets::new(
            Some("sk-ant-api03-secret-key"),
            "http://proxy-user:p%40ssw0rd-long@host/v1",
        );
        assert_eq!(
            secrets.redact(
                "bad key sk-ant-api03-secret-key for proxy-user:p%40ssw0rd-long, p@ssw0rd-long, p%40ssw0rd-long"
            ),
            "bad key *** for ***, ***, ***"
        );
        assert_eq!(secrets.redact("nothing secret"), "nothing secret");
        assert_eq!(format!("{secrets:?}"), "Secrets(5 values)");
    }

    #[test]
    fn short_values_are_not_masked() {
        let secrets = Secrets::new(Some("k"), "http://a:b@host");
        assert_eq!(secrets.redact("keep a key"), "keep a key");
    }
}
