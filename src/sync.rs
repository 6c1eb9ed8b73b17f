//! A mutex lock that survives poisoning: a panic elsewhere must not take the data with it.

use std::sync::{Mutex, MutexGuard};

/// Locks `mutex`, taking the data back from a poisoned lock.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}
