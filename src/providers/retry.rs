//! When to try a failed model call again, and how long to wait first.

use std::time::Duration;

use crate::ids::random_u64;

/// Exponential backoff with jitter, honouring the provider's `retry-after`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt; 0 never retries.
    pub max_retries: u32,
    /// The wait before the first retry; it doubles each time.
    pub base_delay: Duration,
    /// No wait is longer than this, `retry-after` included.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 6,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The default policy, with `EVE_MAX_RETRIES` applied when it holds a number.
    pub fn from_env() -> RetryPolicy {
        let mut policy = RetryPolicy::default();
        if let Some(n) = std::env::var("EVE_MAX_RETRIES")
            .ok()
            .and_then(|v| v.trim().parse().ok())
        {
            policy.max_retries = n;
        }
        policy
    }

    /// The wait before retry number `retry` (0-based): `retry-after` when given, else
    /// `base × 2^retry` with up to 25% random jitter, capped at `max_delay`.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(wait) = retry_after {
            return wait.min(self.max_delay);
        }
        let exp = self
            .base_delay
            .saturating_mul(1u32.checked_shl(retry.min(20)).unwrap_or(u32::MAX));
        let capped = exp.min(self.max_delay);
        let jitter_ms = capped.as_millis() as u64 / 4;
        let jitter = if jitter_ms == 0 {
            0
        } else {
            random_u64() % (jitter_ms + 1)
        };
        (capped + Duration::from_millis(jitter)).min(self.max_delay)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_bounded_jitter_and_a_cap() {
        let policy = RetryPolicy::default();
        for retry in 0..4 {
            let base = 500u64 << retry;
            let d = policy.delay(retry, None).as_millis() as u64;
            assert!(d >= base && d <= base + base / 4, "retry {retry}: {d} ms");
        }
        assert_eq!(policy.delay(30, None), policy.max_delay);
    }

    #[test]
    fn retry_after_wins_but_is_capped() {
        let policy = RetryPolicy::default();
        assert_eq!(
            policy.delay(3, Some(Duration::from_secs(2))),
            Duration::from_secs(2)
        );
        assert_eq!(
            policy.delay(0, Some(Duration::from_secs(3600))),
            policy.max_delay
        );
    }
}
