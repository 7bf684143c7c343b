//! Notifications: one item per (organisation, key); a team notification is one per member,
//! keyed `KEY#RECIPIENT`, so each colleague gets exactly one copy. Both parts are encoded with
//! `key_part`, so no chosen key (`k1#u1`) can stand for the team copy of another (`k1`).

use super::job::Applied;
use super::Notification;
use crate::ids::{key_part, OrgId};
use crate::orgs;
use crate::store::item::{b, Builder, Read};
use crate::store::{Cond, Decision, Item, Plan, Seen, Step, Store, StoreError, Update, Written};
use crate::time;
use chrono::{DateTime, Utc};
use serde_json::Value;

fn pk(org: &OrgId, key: &str) -> String {
    org.pk(&format!("NOTIFICATION#{key}"))
}

fn inbox(org: &OrgId, recipient: &str) -> String {
    org.pk(&format!("NOTIFY#{}", key_part(recipient)))
}

/// `key` is already encoded: it is the notification's key as the API shows it.
fn item(n: &Notification, key: &str, recipient: &str) -> Item {
    let at = time::format(n.at);
    Builder::new(&pk(&n.org, key), "notification", n.org.as_str())
        .str("key", key)
        .str("recipient", recipient)
        .str("text", &n.text)
        .str("at", &at)
        .bool("read", false)
        .list(&inbox(&n.org, recipient), &format!("{at}#{key}"))
        .build()
}

/// The keys a notification's copies are stored under: one, or one per member of `team` for a
/// team notification. With `deliver`'s, the one place these keys are made.
pub fn copies(n: &Notification, team: &[String]) -> Vec<(String, String)> {
    let key = key_part(n.key.as_str());
    let keys: Vec<String> = match &n.recipient {
        Some(_) => vec![key.into_owned()],
        None => team
            .iter()
            .map(|m| format!("{key}#{}", key_part(m)))
            .collect(),
    };
    keys.into_iter().map(|k| (pk(&n.org, &k), k)).collect()
}

/// Delivers a notification: what was new and what a redelivery found already there.
/// `Ok(None)` means a team notification found no team. A team's is delivered to `team` when it
/// was read already, else to the members read now.
pub async fn deliver(
    store: &Store,
    n: &Notification,
    team: Option<&[String]>,
) -> Result<Option<Applied>, StoreError> {
    let key = key_part(n.key.as_str());
    let team: Vec<String> = match (&n.recipient, team) {
        (Some(_), _) => Vec::new(),
        (None, Some(team)) => team.to_vec(),
        (None, None) => orgs::members(store, &n.org)
            .await?
            .into_iter()
            .map(|m| m.user_id)
            .collect(),
    };
    let targets: Vec<(String, String)> = match &n.recipient {
        Some(r) => vec![(r.clone(), key.into_owned())],
        None => team
            .into_iter()
            .map(|member| (format!("{key}#{}", key_part(&member)), member))
            .map(|(k, r)| (r, k))
            .collect(),
    };
    if targets.is_empty() {
        return Ok(None);
    }
    let mut applied = Applied::default();
    // A copy or a few: one conditional put each is the fewest calls. A team: read and write
    // them a hundred at a time.
    if targets.len() <= ONE_BY_ONE {
        for (recipient, key) in &targets {
            let created = store.put_new(item(n, key, recipient)).await?.created();
            applied = applied.and(Applied::one(created));
        }
        return Ok(Some(applied));
    }
    for chunk in targets.chunks(COPIES_AT_ONCE) {
        applied = applied.and(deliver_chunk(store, n, chunk).await?);
    }
    Ok(Some(applied))
}

/// Copies put one conditional put each: fewer calls than a read and a transaction.
const ONE_BY_ONE: usize = 2;

/// Copies a transaction puts at once: a team of 1,000 is 10 reads and 10 transactions.
const COPIES_AT_ONCE: usize = 100;

/// One chunk of copies, as a decision: the ones there read in one batch, the rest put in one
/// transaction, each under its own conditional key. A copy put meanwhile by a redelivery
/// refuses the transaction: the chunk is read and decided again. A chunk all there is a repeat.
struct Chunk<'a> {
    n: &'a Notification,
    targets: &'a [(String, String)],
}

impl Decision for Chunk<'_> {
    type Out = Applied;
    type Error = StoreError;

    fn keys(&self) -> Vec<String> {
        self.targets
            .iter()
            .map(|(_, key)| pk(&self.n.org, key))
            .collect()
    }

    fn decide(&self, seen: &Seen, _now: DateTime<Utc>) -> Result<Plan<Applied>, StoreError> {
        let steps: Vec<Step> = self
            .targets
            .iter()
            .enumerate()
            .filter(|(i, _)| seen.get(*i).is_none())
            .map(|(_, (recipient, key))| Step::PutNew(item(self.n, key, recipient)))
            .collect();
        let out = Applied {
            written: steps.len(),
            absorbed: self.targets.len() - steps.len(),
        };
        Ok(match steps.is_empty() {
            true => Plan::Done(Written::Repeat { stored: out }),
            false => Plan::Write { steps, out },
        })
    }
}

async fn deliver_chunk(
    store: &Store,
    n: &Notification,
    targets: &[(String, String)],
) -> Result<Applied, StoreError> {
    let now = chrono::Utc::now();
    Ok(store
        .write(&mut Chunk { n, targets }, now)
        .await?
        .into_value())
}

/// A notification as a member's list shows it: the type the answer is made of and the OpenAPI
/// document describes (`Notification`).
#[derive(Clone, Debug, serde::Serialize, utoipa::ToSchema)]
#[schema(as = Notification)]
pub struct NotificationView {
    /// What `POST /api/notifications/read` takes.
    pub key: Option<String>,
    pub recipient: Option<String>,
    pub text: Option<String>,
    #[schema(format = DateTime)]
    pub at: Option<String>,
    pub read: bool,
}

/// A stored notification as the list shows it.
pub fn view(item: &Item) -> NotificationView {
    let text = |name: &str| item.opt_str(name).map(str::to_owned);
    NotificationView {
        key: text("key"),
        recipient: text("recipient"),
        text: text("text"),
        at: text("at"),
        read: item.bool_of("read"),
    }
}

pub fn to_json(item: &Item) -> Value {
    serde_json::to_value(view(item)).expect("a notification's view serialises")
}

/// A member's notifications, newest first.
pub async fn list(store: &Store, org: &OrgId, recipient: &str) -> Result<Vec<Value>, StoreError> {
    let items = store.list(&inbox(org, recipient), true, 200).await?;
    Ok(items.iter().map(to_json).collect())
}

/// Marks one notification read, by the key the list shows; `Ok(false)` when there is no such
/// notification.
pub async fn mark_read(store: &Store, org: &OrgId, key: &str) -> Result<bool, StoreError> {
    Ok(store
        .write(&mut marking(org, key), chrono::Utc::now())
        .await?
        .into_value())
}

/// One notification marked read, by the key the list shows, as a decision: its item read, and
/// marked while it is there and unread. `false`: there is no such notification; one read before
/// is a repeat.
pub fn marking(org: &OrgId, key: &str) -> MarkRead {
    MarkRead { pk: pk(org, key) }
}

pub struct MarkRead {
    pk: String,
}

impl Decision for MarkRead {
    type Out = bool;
    type Error = StoreError;

    fn keys(&self) -> Vec<String> {
        vec![self.pk.clone()]
    }

    fn decide(&self, seen: &Seen, _: DateTime<Utc>) -> Result<Plan<bool>, StoreError> {
        Ok(match seen.stored() {
            None => Plan::Done(Written::New(false)),
            Some(note) if note.bool_of("read") => Plan::Done(Written::Repeat { stored: true }),
            Some(_) => Plan::Write {
                steps: vec![Step::Update {
                    pk: self.pk.clone(),
                    update: Update::new().set("read", b(true)).when(Cond::Exists),
                }],
                out: true,
            },
        })
    }
}
