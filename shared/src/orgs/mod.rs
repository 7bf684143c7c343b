//! Organisations, their API keys (`keys`: stored hashed, with scopes) and team members.

use crate::ids::OrgId;
use crate::store::item::{Builder, Read};
use crate::store::{CapError, Item, Step, Store, StoreError, Transacted, UnderCap, Written};
use chrono::{DateTime, Utc};
use keys::Scopes;
use secrecy::SecretString;

pub mod keys;
pub mod rate;

pub use keys::{authenticate, key_id, Key, Scope};

/// The deployment's list of organisations, oldest first: what the admin's summary adds up.
const ORGS: &str = "ORGS";

/// Every organisation (id and name), oldest first, a page at a time.
pub async fn page(
    store: &Store,
    limit: i32,
    cursor: Option<&str>,
) -> Result<(Vec<(OrgId, String)>, Option<String>), StoreError> {
    let (items, next) = store.page(ORGS, false, limit, cursor).await?;
    let orgs = items
        .iter()
        .filter_map(|i| {
            let org = OrgId::parse(i.opt_str("org")?).ok()?;
            Some((org, i.opt_str("name").unwrap_or_default().to_owned()))
        })
        .collect();
    Ok((orgs, next))
}

/// Creates an organisation and its first API key (`fsk_{org}_{secret}`), which has every scope;
/// only the key's SHA-256 is stored, so the key is shown once.
pub async fn create_org(
    store: &Store,
    name: &str,
    now: DateTime<Utc>,
) -> Result<(OrgId, SecretString), StoreError> {
    let org = OrgId::generate();
    let org_item = Builder::new(&org.pk("ORG"), "org", org.as_str())
        .str("name", name)
        .time("created_at", now)
        .list(ORGS, &format!("{}#{org}", crate::time::format(now)))
        .build();
    let (api_key, key_item) = keys::new_key(&org, "first", Scopes::FULL, None, now);
    match store
        .transact(vec![
            Step::PutNew(org_item),
            Step::PutNew(key_item),
            // Its keys counted from the first: another key is made under the cap
            // (`keys::another`).
            Step::PutNew(keys::first_count(&org)),
        ])
        .await?
    {
        Transacted::Done => Ok((org, api_key)),
        _ => Err(StoreError::Contended { pk: org.pk("ORG") }),
    }
}

/// A colleague who receives notifications.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub user_id: String,
    pub name: String,
}

/// Adds a member: new, or a repeat (nothing changed) for a user id that is a member already;
/// `CapError::Full` when the organisation holds its cap of members.
pub async fn add_member(
    store: &Store,
    org: &OrgId,
    member: &Member,
    max: u64,
    now: DateTime<Utc>,
) -> Result<Written<Member>, CapError> {
    let written = store.write(&mut adding(org, member, max, now), now).await?;
    Ok(written.map(|item| stored_member(&item)))
}

/// A member's addition, as a decision: the member's item put if its user id is new, counted
/// in the same transaction and held under `max` (two at once cannot pass it); a repeat is the
/// member as added before.
pub fn adding(org: &OrgId, member: &Member, max: u64, now: DateTime<Utc>) -> UnderCap {
    let item = Builder::new(
        &org.pk(&format!("MEMBER#{}", member.user_id)),
        "member",
        org.as_str(),
    )
    .str("user_id", &member.user_id)
    .str("name", &member.name)
    .time("created_at", now)
    .list(&org.pk("MEMBERS"), &member.user_id)
    .build();
    let counter = org.pk("MEMBER_COUNT");
    UnderCap::new(item, (&counter, "member_count", org.as_str()), max)
}

/// A member as its item holds it.
pub fn stored_member(item: &Item) -> Member {
    Member {
        user_id: item.opt_str("user_id").unwrap_or_default().to_owned(),
        name: item.opt_str("name").unwrap_or_default().to_owned(),
    }
}

/// The most members any deployment lets an organisation hold (the template's `MembersMax` at
/// its highest): a read of the team takes them all, whatever this deployment's cap.
const MEMBERS_READ: i32 = 5000;

/// The most members an organisation holds, unless `MEMBERS_MAX` says otherwise: what a team
/// notification writes a copy for, within one worker's invocation.
pub const MEMBERS_MAX: u64 = 1000;

/// Whether `user_id` is a member of the organisation.
pub async fn is_member(store: &Store, org: &OrgId, user_id: &str) -> Result<bool, StoreError> {
    Ok(store
        .get(&org.pk(&format!("MEMBER#{user_id}")))
        .await?
        .is_some())
}

pub async fn members(store: &Store, org: &OrgId) -> Result<Vec<Member>, StoreError> {
    members_up_to(store, org, MEMBERS_READ).await
}

/// The organisation's first `limit` members.
pub async fn members_up_to(
    store: &Store,
    org: &OrgId,
    limit: i32,
) -> Result<Vec<Member>, StoreError> {
    store
        .list(&org.pk("MEMBERS"), false, limit)
        .await?
        .iter()
        .map(|item| {
            Ok(Member {
                user_id: item.str_of("user_id")?.to_owned(),
                name: item.opt_str("name").unwrap_or_default().to_owned(),
            })
        })
        .collect()
}
