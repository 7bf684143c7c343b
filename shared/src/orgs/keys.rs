//! An organisation's API keys: each stored as its SHA-256 only (the key is shown once), with a
//! public name (`key_…`), a label and the scopes it grants. A key made before scopes existed
//! carries none and keeps every right; a revoked key stays listed with when it was revoked and
//! authenticates nothing.

use crate::ids::OrgId;
use crate::store::item::{Builder, Read};
use crate::store::{item, Cond, Decision, Item, Plan, Seen, Step, Store, StoreError, Update};
use crate::store::{UnderCap, Written};
use base64::{engine::general_purpose::URL_SAFE_NO_PAD as B64URL, Engine};
use chrono::{DateTime, Utc};
use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Keys an organisation may hold, revoked ones included: counted as each is made, in its own
/// transaction (`KEY_COUNT`).
pub const KEYS_MAX: usize = 100;
/// The most entries a read of the list takes: every key of the cap, and the legacy keys a
/// first use listed besides (keys made before they were counted), so none is out of sight.
const LIST_READ: i32 = 1000;

/// The kind of an organisation's count of keys.
const KEY_COUNT: &str = "key_count";

/// The count of the organisation's keys, kept with each key made.
pub fn count_pk(org: &OrgId) -> String {
    org.pk("KEY_COUNT")
}

/// An organisation's first count: its first key.
pub(crate) fn first_count(org: &OrgId) -> Item {
    Builder::new(&count_pk(org), KEY_COUNT, org.as_str())
        .num("count", 1)
        .build()
}
/// A key's label: 1 to this many characters.
pub const NAME_MAX: usize = 100;

/// What a key may do: `read` the lists, `write` (every other `/api` request), `ops` (the
/// operator's actions and managing keys).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    Read,
    Write,
    Ops,
}

impl Scope {
    pub const ALL: [Self; 3] = [Self::Read, Self::Write, Self::Ops];

    pub fn name(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::Ops => "ops",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == raw)
    }
}

/// A set of scopes, in the order of `Scope::ALL`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scopes([bool; 3]);

impl Scopes {
    pub const FULL: Self = Self([true; 3]);

    pub fn of(scopes: &[Scope]) -> Self {
        let mut set = [false; 3];
        for s in scopes {
            set[*s as usize] = true;
        }
        Self(set)
    }

    pub fn has(self, scope: Scope) -> bool {
        self.0[scope as usize]
    }

    /// Whether every scope of `other` is one of these.
    pub fn covers(self, other: Self) -> bool {
        Scope::ALL.iter().all(|s| !other.has(*s) || self.has(*s))
    }

    pub fn list(self) -> Vec<Scope> {
        Scope::ALL.into_iter().filter(|s| self.has(*s)).collect()
    }

    fn stored(self) -> String {
        let names: Vec<&str> = self.list().into_iter().map(Scope::name).collect();
        names.join(",")
    }

    fn read(raw: Option<&str>) -> Self {
        match raw {
            None => Self::FULL,
            Some(raw) => Self::of(&raw.split(',').filter_map(Scope::parse).collect::<Vec<_>>()),
        }
    }
}

/// An authenticated key: whose it is, its public name and what it may do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Key {
    pub org: OrgId,
    pub id: String,
    pub scopes: Scopes,
}

impl Key {
    /// `Ok` when the key has `scope`; otherwise the scope it lacks.
    pub fn may(&self, scope: Scope) -> Result<(), Scope> {
        match self.scopes.has(scope) {
            true => Ok(()),
            false => Err(scope),
        }
    }
}

/// A key as it is listed: never the key itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct KeyInfo {
    pub key_id: String,
    pub name: String,
    pub scopes: Vec<Scope>,
    #[schema(format = DateTime)]
    pub created_at: String,
    pub created_by: Option<String>,
    #[schema(format = DateTime)]
    pub revoked_at: Option<String>,
    pub revoked_by: Option<String>,
    /// Made before keys had scopes: it holds every scope until revoked.
    pub legacy: bool,
}

fn hash(api_key: &str) -> String {
    hex::encode(Sha256::digest(api_key.as_bytes()))
}

/// A key's public name, `key_` and 16 hex digits of its digest: who did something, in records
/// and logs, without the key.
pub fn key_id(api_key: &str) -> String {
    format!("key_{}", &hash(api_key)[..16])
}

fn key_pk(org: &OrgId, api_key: &str) -> String {
    org.pk(&format!("APIKEY#{}", hash(api_key)))
}

fn list_pk(org: &OrgId) -> String {
    org.pk("APIKEYS")
}

/// A new key for `org` (`fsk_{org}_{secret}`) and its item; the key is shown once.
pub(super) fn new_key(
    org: &OrgId,
    name: &str,
    scopes: Scopes,
    by: Option<&str>,
    now: DateTime<Utc>,
) -> (SecretString, Item) {
    let api_key = format!(
        "fsk_{org}_{}",
        B64URL.encode(crate::ids::random_bytes::<24>())
    );
    let id = key_id(&api_key);
    let item = Builder::new(&key_pk(org, &api_key), "api_key", org.as_str())
        .str("key_id", &id)
        .str("name", name)
        .str("scopes", scopes.stored())
        .opt_str("created_by", by)
        .time("created_at", now)
        .list(&list_pk(org), &format!("{}#{id}", crate::time::format(now)))
        .build();
    (SecretString::from(api_key), item)
}

/// Another key for `org`, granting `scopes`, made `by`: its listing, the key (shown once) and
/// the put that stores it once with one more on the organisation's count, held under
/// `KEYS_MAX` (two at once cannot pass it: `CapError::Full`). An organisation made before keys
/// were counted has its count begun at the keys it lists.
pub async fn another(
    store: &Store,
    org: &OrgId,
    (name, scopes): (&str, Scopes),
    by: &str,
    now: DateTime<Utc>,
) -> Result<(KeyInfo, SecretString, UnderCap), StoreError> {
    let counter = count_pk(org);
    let listed = async { Ok(list(store, org).await?.len()) };
    store
        .begin_count((&counter, KEY_COUNT, org.as_str()), listed)
        .await?;
    let (key, item) = new_key(org, name, scopes, Some(by), now);
    let info = info(&item)?;
    let put = UnderCap::new(item, (&counter, KEY_COUNT, org.as_str()), KEYS_MAX as u64);
    Ok((info, key, put))
}

/// The organisation a key names (`fsk_{org}_…`), whether or not it is a key of it.
pub fn named_org(api_key: &str) -> Option<OrgId> {
    api_key
        .strip_prefix("fsk_")
        .and_then(|rest| rest.split_once('_'))
        .and_then(|(org, _)| OrgId::parse(org).ok())
}

/// The key, if it is one of the organisation's keys and not revoked.
pub async fn authenticate(store: &Store, api_key: &str) -> Result<Option<Key>, StoreError> {
    let Some(org) = named_org(api_key) else {
        return Ok(None);
    };
    let Some(found) = store.get(&key_pk(&org, api_key)).await? else {
        return Ok(None);
    };
    if found.opt_str("revoked_at").is_some() {
        return Ok(None);
    }
    if found.opt_str("key_id").is_none() {
        listed_as_legacy(store, &found).await?;
    }
    Ok(Some(Key {
        org,
        id: key_id(api_key),
        scopes: Scopes::read(found.opt_str("scopes")),
    }))
}

/// A key made before keys had scopes and a list (it keeps every scope) put on its organisation's
/// list, marked `legacy`, so a person sees it and can revoke it: from its stored item alone (the
/// item is stored under the key's digest, which its public id is derived from). `false` when it
/// was listed before.
async fn listed_as_legacy(store: &Store, found: &Item) -> Result<bool, StoreError> {
    let pk = found.str_of("pk")?;
    let malformed = |detail: &str| StoreError::Malformed {
        pk: pk.to_owned(),
        detail: detail.to_owned(),
    };
    let org = OrgId::parse(found.str_of("org")?).map_err(|_| malformed("no organisation"))?;
    let digest = pk
        .rsplit_once("APIKEY#")
        .map(|(_, d)| d)
        .unwrap_or_default();
    let id = format!(
        "key_{}",
        digest.get(..16).ok_or_else(|| malformed("no digest"))?
    );
    let created = found
        .opt_str("created_at")
        .map(str::to_owned)
        .unwrap_or_else(|| crate::time::format(Utc::now()));
    let update = Update::new()
        .set("key_id", item::s(&id))
        .set("name", item::s(found.opt_str("name").unwrap_or("legacy")))
        .set("created_at", item::s(&created))
        .set("legacy", item::s("true"))
        .set("gsi1pk", item::s(list_pk(&org)))
        .set("gsi1sk", item::s(format!("{created}#{id}")))
        .when(Cond::Lacks("key_id".into()));
    store.update_if(pk, &update).await
}

/// Every key made before keys were listed, put on its organisation's list (`legacy`): the
/// one-off migration `cargo xtask migrate-keys` runs. A key used since was listed on that use
/// already. How many it listed now.
pub async fn list_legacy(store: &Store) -> Result<usize, StoreError> {
    let (mut listed, mut start) = (0, None);
    loop {
        let (items, next) = store.scan_kind("api_key", start).await?;
        for found in items.iter().filter(|i| i.opt_str("key_id").is_none()) {
            listed += usize::from(listed_as_legacy(store, found).await?);
        }
        match next {
            Some(next) => start = Some(next),
            None => return Ok(listed),
        }
    }
}

/// The organisation's keys, oldest first; a key made before keys were listed is among them
/// from its first use on (`legacy`).
pub async fn list(store: &Store, org: &OrgId) -> Result<Vec<KeyInfo>, StoreError> {
    let items = store.list(&list_pk(org), false, LIST_READ).await?;
    items.iter().map(info).collect()
}

/// The revocation of the key named `key_id`, by `by`: `None` when the organisation has no such
/// key (its list names it).
pub async fn revoking(
    store: &Store,
    org: &OrgId,
    key_id: &str,
    by: &str,
) -> Result<Option<Revoking>, StoreError> {
    let items = store.list(&list_pk(org), false, LIST_READ).await?;
    let Some(found) = items.iter().find(|i| i.opt_str("key_id") == Some(key_id)) else {
        return Ok(None);
    };
    Ok(Some(Revoking {
        pk: found.str_of("pk")?.to_owned(),
        by: by.to_owned(),
    }))
}

/// A key revoked once: its item read, marked revoked while it is not; a revoked key changes
/// nothing and is answered as it is (a repeat). `None`: the key its list named is gone.
pub struct Revoking {
    pk: String,
    by: String,
}

impl Decision for Revoking {
    type Out = Option<KeyInfo>;
    type Error = StoreError;

    fn keys(&self) -> Vec<String> {
        vec![self.pk.clone()]
    }

    fn decide(&self, seen: &Seen, now: DateTime<Utc>) -> Result<Plan<Option<KeyInfo>>, StoreError> {
        let Some(stored) = seen.stored() else {
            return Ok(Plan::Done(Written::New(None)));
        };
        if stored.opt_str("revoked_at").is_some() {
            return Ok(Plan::Done(Written::Repeat {
                stored: Some(info(stored)?),
            }));
        }
        let at = item::s(crate::time::format(now));
        let mut revoked = stored.clone();
        revoked.insert("revoked_at".into(), at.clone());
        revoked.insert("revoked_by".into(), item::s(&self.by));
        let update = Update::new()
            .set("revoked_at", at)
            .set("revoked_by", item::s(&self.by))
            .when(Cond::Lacks("revoked_at".into()));
        Ok(Plan::Write {
            steps: vec![Step::Update {
                pk: self.pk.clone(),
                update,
            }],
            out: Some(info(&revoked)?),
        })
    }
}

fn info(item: &Item) -> Result<KeyInfo, StoreError> {
    Ok(KeyInfo {
        key_id: item.str_of("key_id")?.to_owned(),
        name: item.opt_str("name").unwrap_or_default().to_owned(),
        scopes: Scopes::read(item.opt_str("scopes")).list(),
        created_at: item.str_of("created_at")?.to_owned(),
        created_by: item.opt_str("created_by").map(str::to_owned),
        revoked_at: item.opt_str("revoked_at").map(str::to_owned),
        revoked_by: item.opt_str("revoked_by").map(str::to_owned),
        legacy: item.opt_str("legacy").is_some(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_without_stored_scopes_keeps_every_right() {
        assert_eq!(Scopes::read(None), Scopes::FULL);
        assert_eq!(Scopes::read(Some("read")).list(), [Scope::Read]);
        assert_eq!(Scopes::read(Some("")).list(), []);
    }

    #[test]
    fn scopes_are_stored_in_one_order_and_read_back() {
        let scopes = Scopes::of(&[Scope::Ops, Scope::Read]);
        assert_eq!(scopes.stored(), "read,ops");
        assert_eq!(Scopes::read(Some(&scopes.stored())), scopes);
    }

    #[test]
    fn a_key_covers_only_what_it_has() {
        let read = Scopes::of(&[Scope::Read]);
        assert!(Scopes::FULL.covers(read));
        assert!(!read.covers(Scopes::of(&[Scope::Read, Scope::Write])));
        assert!(read.covers(Scopes::of(&[])));
    }

    #[test]
    fn a_key_names_the_scope_it_lacks() {
        let key = Key {
            org: OrgId::generate(),
            id: "key_1".into(),
            scopes: Scopes::of(&[Scope::Read]),
        };
        assert_eq!(key.may(Scope::Read), Ok(()));
        assert_eq!(key.may(Scope::Ops), Err(Scope::Ops));
    }
}
