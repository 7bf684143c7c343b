//! Integrations cached in the warm function, each with its verifier built once. A copy is kept
//! for a bounded time; a verification failure against a cached copy re-reads it, at most once
//! per `RELOAD_EVERY` per integration, so a rotated secret works at once while a stream of forged
//! requests cannot become a stream of reads. Unknown ids are remembered briefly for the same reason.

use crate::integrations::Integration;
use crate::signature::SignatureError;
use chrono::{DateTime, Duration, Utc};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// How long a cached copy is used without reading it again.
pub const TTL: Duration = Duration::seconds(60);
/// At most one re-read per integration in this time, whatever fails to verify.
pub const RELOAD_EVERY: Duration = Duration::seconds(5);
/// How long an unknown integration id is answered 404 without a read.
pub const MISSING_TTL: Duration = Duration::seconds(5);
/// Entries kept before the cache starts over (a function serves a bounded set of integrations).
const CAPACITY: usize = 10_000;

/// A verifier built from an integration's key, or why none could be.
pub type Built<V> = Result<Arc<V>, SignatureError>;

/// One integration and its verifier (or why none could be built from its key); during a
/// rotation's overlap also the verifier of its previous secrets, and until when it holds.
pub struct Entry<V> {
    pub integration: Arc<Integration>,
    pub verifier: Built<V>,
    pub previous: Option<(Built<V>, DateTime<Utc>)>,
    pub loaded_at: DateTime<Utc>,
}

impl<V> Clone for Entry<V> {
    fn clone(&self) -> Self {
        Self {
            integration: Arc::clone(&self.integration),
            verifier: self.verifier.clone(),
            previous: self.previous.clone(),
            loaded_at: self.loaded_at,
        }
    }
}

enum Slot<V> {
    Found(Entry<V>),
    Missing(DateTime<Utc>),
}

/// What the cache knows about an id at `now`.
pub enum Cached<V> {
    Found(Entry<V>),
    Missing,
    Unknown,
}

pub struct Cache<V> {
    slots: Mutex<HashMap<String, Slot<V>>>,
    /// When each integration was last re-read because a delivery failed to verify.
    reloads: Mutex<HashMap<String, DateTime<Utc>>>,
}

impl<V> Default for Cache<V> {
    fn default() -> Self {
        Self {
            slots: Mutex::new(HashMap::new()),
            reloads: Mutex::new(HashMap::new()),
        }
    }
}

impl<V> Cache<V> {
    pub fn get(&self, id: &str, now: DateTime<Utc>) -> Cached<V> {
        let slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        match slots.get(id) {
            Some(Slot::Found(e)) if now - e.loaded_at < TTL => Cached::Found(e.clone()),
            Some(Slot::Missing(at)) if now - *at < MISSING_TTL => Cached::Missing,
            _ => Cached::Unknown,
        }
    }

    pub fn put(&self, id: &str, entry: Option<Entry<V>>, now: DateTime<Utc>) {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        if slots.len() >= CAPACITY && !slots.contains_key(id) {
            slots.clear();
        }
        let slot = match entry {
            Some(e) => Slot::Found(e),
            None => Slot::Missing(now),
        };
        slots.insert(id.to_owned(), slot);
    }

    /// Whether the integration may be re-read now after a failed verification: at most once
    /// per `RELOAD_EVERY`. A `true` counts as the re-read.
    pub fn try_reload(&self, id: &str, now: DateTime<Utc>) -> bool {
        let mut reloads = self.reloads.lock().unwrap_or_else(|p| p.into_inner());
        if reloads.len() >= CAPACITY && !reloads.contains_key(id) {
            reloads.clear();
        }
        match reloads.get(id) {
            Some(at) if now - *at < RELOAD_EVERY => false,
            _ => {
                reloads.insert(id.to_owned(), now);
                true
            }
        }
    }
}
