//! Time-ordered ids (`evt_…`, `ses_…`, `turn_…`) and the little randomness eve needs.
//!
//! An id is a ULID: 48 bits of milliseconds since the Unix epoch and 80 random
//! bits, written as 26 characters of Crockford base32, so ids sort by creation
//! time. Within one process, ids minted in the same millisecond keep their order
//! (the random part is incremented, as ULID's monotonic mode does).

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// A random `u64` from the standard library's per-process random keys; not for cryptography.
pub fn random_u64() -> u64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    hasher.finish()
}

static LAST: Mutex<(u64, u128)> = Mutex::new((0, 0));

/// A new ULID string, strictly greater than every one this process minted before.
pub fn ulid() -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or_default()
        & 0xFFFF_FFFF_FFFF;
    let mut last = crate::sync::lock(&LAST);
    let (millis, random) = if now <= last.0 {
        (last.0, (last.1 + 1) & ((1u128 << 80) - 1))
    } else {
        let random =
            ((random_u64() as u128) << 16 | (random_u64() as u128 & 0xFFFF)) & ((1u128 << 80) - 1);
        (now, random)
    };
    *last = (millis, random);
    encode((millis as u128) << 80 | random)
}

fn encode(mut value: u128) -> String {
    let mut out = [0u8; 26];
    for slot in out.iter_mut().rev() {
        *slot = ALPHABET[(value & 31) as usize];
        value >>= 5;
    }
    out.iter().map(|&b| b as char).collect()
}

/// `prefix_` followed by a new ULID.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", ulid())
}

/// The current time as RFC 3339 with milliseconds, in UTC.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_26_crockford_characters_and_strictly_increasing() {
        let ids: Vec<String> = (0..1000).map(|_| ulid()).collect();
        for id in &ids {
            assert_eq!(id.len(), 26);
            assert!(id.bytes().all(|b| ALPHABET.contains(&b)), "{id}");
        }
        for pair in ids.windows(2) {
            assert!(pair[0] < pair[1], "{} !< {}", pair[0], pair[1]);
        }
        assert!(new_id("evt").starts_with("evt_"));
    }

    #[test]
    fn encoding_is_big_endian_base32() {
        assert_eq!(encode(0), "00000000000000000000000000");
        assert_eq!(encode(31), "0000000000000000000000000Z");
        assert_eq!(encode(32), "00000000000000000000000010");
    }
}
