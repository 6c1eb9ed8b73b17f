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

tokio::task_local! {
    /// Ids minted from a seed in this task instead of the clock and the system's
    /// randomness (see [`seeded`]).
    static SEEDED: std::cell::RefCell<Seeded>;
}

/// A seeded sequence of ULIDs: the same seed gives the same ids in the same order.
#[derive(Debug)]
struct Seeded {
    millis: u64,
    random: u128,
}

impl Seeded {
    fn next(&mut self) -> String {
        self.random = (self.random + 1) & ((1u128 << 80) - 1);
        encode((self.millis as u128) << 80 | self.random)
    }
}

/// Runs `future` with every id it mints (`new_id`, `ulid`) taken from `seed` and the
/// time `millis`, in order. A durable engine that replays a turn after a crash runs the
/// turn again in such a scope with the seed it journaled, so the turn, its tool calls
/// and its requests get the same ids as the first time, and the names of the journal's
/// entries, which hold them, match.
pub async fn seeded<F: std::future::Future>(millis: u64, seed: u64, future: F) -> F::Output {
    let mut state = seed;
    let high = splitmix(&mut state) as u128;
    let low = splitmix(&mut state) as u128;
    let cell = std::cell::RefCell::new(Seeded {
        millis: millis & 0xFFFF_FFFF_FFFF,
        // Room below the top so that incrementing never wraps within a turn.
        random: ((high << 64 | low) & ((1u128 << 79) - 1)),
    });
    SEEDED.scope(cell, future).await
}

/// One step of SplitMix64: a well-spread `u64` from a counter.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A new ULID string, strictly greater than every one this process minted before (or,
/// in a [`seeded`] scope, the next of its sequence).
pub fn ulid() -> String {
    if let Ok(id) = SEEDED.try_with(|s| s.borrow_mut().next()) {
        return id;
    }
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

    #[tokio::test]
    async fn a_seeded_scope_mints_the_same_ids_again() {
        let mint = || async { (new_id("turn"), new_id("call"), ulid()) };
        let first = seeded(1_700_000_000_000, 42, mint()).await;
        let again = seeded(1_700_000_000_000, 42, mint()).await;
        let other = seeded(1_700_000_000_000, 43, mint()).await;
        assert_eq!(first, again);
        assert_ne!(first, other);
        assert!(first.0.starts_with("turn_") && first.0.len() == 31);
        assert!(first.0[5..] < first.1[5..], "in order");
        assert_ne!(new_id("turn"), first.0, "outside the scope, ids are fresh");
    }

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
