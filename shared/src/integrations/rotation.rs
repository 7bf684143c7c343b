//! Secret rotation: an integration's secrets replaced in one conditional update, the previous
//! ones kept sealed beside them for an overlap during which both verify a delivery (a provider
//! that still signs with the old secret is not refused while the new one is rolled out), and
//! removed after it. The previous secrets are never opened outside the overlap.

use super::{integration_pk, Integration, Settings, SEALED, SEALED_DIGEST};
use crate::ids::IntegrationId;
use crate::store::item::{s, Read};
use crate::store::{Cond, Item, Store, StoreError, Update};
use crate::time;
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Duration, Utc};
use secrecy::SecretString;
use std::collections::HashMap;
use thiserror::Error;

/// How long the previous secrets verify when the request names no overlap.
pub const DEFAULT_OVERLAP: Duration = Duration::hours(24);
/// The longest overlap a rotation may ask for.
pub const MAX_OVERLAP: Duration = Duration::days(7);

const PREVIOUS_SEALED: &str = "previous_sealed";
const PREVIOUS_UNTIL: &str = "previous_until";
const ROTATED_AT: &str = "rotated_at";

/// The settings an integration had before its last rotation, accepted until `until`.
#[derive(Clone, Debug)]
pub struct Previous {
    pub settings: Settings,
    pub until: DateTime<Utc>,
}

impl Previous {
    /// The integration as it was before the rotation (its previous secrets).
    pub fn integration(&self, current: &Integration) -> Integration {
        Integration {
            settings: self.settings.clone(),
            ..current.clone()
        }
    }
}

/// What an integration's item says about its secrets, without opening them: the names, the
/// last rotation, and until when the previous secrets still verify (`SecretsInfo`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[schema(as = SecretsInfo)]
pub struct SecretsState {
    /// The names of the secrets it holds (`secret`, `token`, `auth_token`, ...).
    pub names: Vec<&'static str>,
    #[schema(format = DateTime)]
    pub rotated_at: Option<String>,
    /// Until when the previous secrets still verify; absent when none are kept.
    #[schema(format = DateTime)]
    pub previous_valid_until: Option<String>,
}

impl SecretsState {
    pub fn of(integration: &Integration, item: &Item, now: DateTime<Utc>) -> Self {
        let mut names: Vec<&'static str> = integration.secrets().keys().copied().collect();
        // Stripe's API key, sealed apart, is named by its mark in clear.
        if item.bool_of(super::payments::HOLDS_API_KEY) {
            names.insert(0, "api_key");
        }
        Self {
            names,
            rotated_at: item.opt_str(ROTATED_AT).map(str::to_owned),
            previous_valid_until: previous_until(item)
                .filter(|until| *until > now)
                .map(time::format),
        }
    }
}

#[derive(Debug, Error)]
pub enum RotateError {
    #[error("no such integration")]
    NotFound,
    #[error("this integration holds no secret")]
    NothingToRotate,
    /// The request must name exactly the integration's secrets.
    #[error("give every secret of this integration, and only those: {0}")]
    Names(String),
    /// Another rotation changed the secrets between the read and the write: nothing written.
    #[error("the integration's secrets changed meanwhile")]
    Moved,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The integration's clear item and the integration read from it with its secrets left sealed:
/// what a function that may not open secrets (the api) knows of it.
pub async fn sealed(
    store: &Store,
    id: &IntegrationId,
) -> Result<Option<(Integration, Item)>, StoreError> {
    let Some(item) = store.get(&integration_pk(id)).await? else {
        return Ok(None);
    };
    let integration = Integration::from_item(id.clone(), &item, crate::vault::left_sealed())?;
    Ok(Some((integration, item)))
}

/// Replaces `id`'s secrets with `new` (every one it holds, by name), keeping the current ones
/// sealed as the previous until `now + overlap`. The current secrets are moved as sealed, never
/// opened; the write is conditioned on them, so two rotations at once cannot lose one.
pub async fn rotate(
    store: &Store,
    id: &IntegrationId,
    new: HashMap<String, SecretString>,
    overlap: Duration,
    now: DateTime<Utc>,
) -> Result<SecretsState, RotateError> {
    let (current, item) = sealed(store, id).await?.ok_or(RotateError::NotFound)?;
    let names: Vec<&'static str> = current.secrets().keys().copied().collect();
    if names.is_empty() {
        return Err(RotateError::NothingToRotate);
    }
    let mut given: Vec<String> = new.keys().cloned().collect();
    given.sort_unstable();
    let stripe = matches!(
        current.settings,
        Settings::Payments(super::payments::PaymentSettings::Stripe { .. })
    );
    if stripe && given == ["api_key"] {
        return set_api_key(store, id, &new["api_key"], now).await;
    }
    // Stripe's API key is sealed apart: given with the signing secret, it is set apart after
    // the secret's rotation.
    let mut new = new;
    let key = match stripe {
        true => new.remove("api_key"),
        false => None,
    };
    // Stored before the API key was sealed apart, it is in the sealing being replaced: a
    // rotation of the secret alone would lose it, so it is given again with it.
    let sealed_with_secret = stripe
        && item.bool_of(super::payments::HOLDS_API_KEY)
        && !item.contains_key(super::SEALED_APART);
    if sealed_with_secret && key.is_none() {
        return Err(RotateError::Names("api_key, secret".into()));
    }
    let given: Vec<String> = given
        .into_iter()
        .filter(|n| n != "api_key" || !stripe)
        .collect();
    if given != names {
        let mut allowed = names.clone();
        if stripe {
            allowed.insert(0, "api_key");
        }
        return Err(RotateError::Names(allowed.join(", ")));
    }
    let state = rotate_sealed(store, (id, &current, &item), new, overlap, now).await?;
    match key {
        Some(key) => {
            set_api_key(store, id, &key, now).await?;
            Ok(SecretsState {
                names: vec!["api_key", "secret"],
                ..state
            })
        }
        None => Ok(state),
    }
}

/// The rotation of the secrets sealed together (every one of them given in `new`).
async fn rotate_sealed(
    store: &Store,
    (id, current, item): (&IntegrationId, &Integration, &Item),
    new: HashMap<String, SecretString>,
    overlap: Duration,
    now: DateTime<Utc>,
) -> Result<SecretsState, RotateError> {
    let names: Vec<&'static str> = current.secrets().keys().copied().collect();
    let item = item.clone();
    let rotated = Integration::from_item(id.clone(), &item, new)?;
    let pk = integration_pk(id);
    let vault = store.vault()?;
    let digest = vault
        .digest(&pk, &rotated.secrets())
        .await
        .map_err(StoreError::from)?;
    if let (Some(digest), Some(AttributeValue::B(kept))) = (&digest, item.get(SEALED_DIGEST)) {
        if kept.as_ref() == digest.as_slice() {
            // The secrets it holds already (a retried rotation): nothing changes, so the
            // previous secret keeps its overlap.
            return Ok(SecretsState::of(current, &item, now));
        }
    }
    let until = now + overlap;
    replace_sealed(store, (&item, &rotated), digest, until, now).await?;
    Ok(SecretsState {
        names,
        rotated_at: Some(time::format(now)),
        previous_valid_until: (overlap > Duration::zero()).then(|| time::format(until)),
    })
}

/// `rotated`'s secrets sealed in place of `item`'s, which are kept as the previous until
/// `until`; conditioned on the sealed secrets read, so a rotation meanwhile is not lost.
async fn replace_sealed(
    store: &Store,
    (item, rotated): (&Item, &Integration),
    digest: Option<Vec<u8>>,
    until: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<(), RotateError> {
    let pk = rotated.pk();
    let sealed_now = store
        .vault()?
        .seal(&pk, &rotated.secrets())
        .await
        .map_err(StoreError::from)?;
    let old = item
        .get(SEALED)
        .cloned()
        .ok_or_else(|| StoreError::Malformed {
            pk: pk.clone(),
            detail: "holds secrets but no sealed attribute".into(),
        })?;
    let update = match digest {
        Some(digest) => Update::new().set(SEALED_DIGEST, AttributeValue::B(Blob::new(digest))),
        None => Update::new().remove(SEALED_DIGEST),
    };
    // A monobank token's clear digest names the token's one call a minute (the statement
    // lease): it names the new token from now on, with it.
    let update = match &rotated.settings {
        super::Settings::Bank(super::bank::BankSettings::Monobank { token, .. }) => {
            update.set("token_digest", s(super::bank::token_digest(token)))
        }
        _ => update,
    };
    let update = update
        .set(SEALED, AttributeValue::B(Blob::new(sealed_now)))
        .set(PREVIOUS_SEALED, old.clone())
        .set(PREVIOUS_UNTIL, s(time::format(until)))
        .set(ROTATED_AT, s(time::format(now)))
        // A provider's API key stays sealed apart.
        .when(Cond::Equals(SEALED.into(), old));
    match store.update_if(&pk, &update).await? {
        true => Ok(()),
        false => Err(RotateError::Moved),
    }
}

/// A Stripe integration's API key set (or replaced) on its own, its signing secret kept as it
/// is: sealed apart (`SEALED_APART`), never opened here. The key verifies nothing, so there is
/// no overlap.
async fn set_api_key(
    store: &Store,
    id: &IntegrationId,
    key: &SecretString,
    now: DateTime<Utc>,
) -> Result<SecretsState, RotateError> {
    let pk = integration_pk(id);
    let apart = std::collections::BTreeMap::from([("api_key", key)]);
    let sealed = store
        .vault()?
        .seal(&pk, &apart)
        .await
        .map_err(StoreError::from)?;
    let update = Update::new()
        .set(super::SEALED_APART, AttributeValue::B(Blob::new(sealed)))
        .set(super::payments::HOLDS_API_KEY, AttributeValue::Bool(true))
        .set(
            super::payments::LIVE,
            AttributeValue::Bool(super::payments::is_live(key)),
        )
        .set(ROTATED_AT, s(time::format(now)))
        .when(Cond::Exists);
    if !store.update_if(&pk, &update).await? {
        return Err(RotateError::NotFound);
    }
    Ok(SecretsState {
        names: vec!["api_key", "secret"],
        rotated_at: Some(time::format(now)),
        previous_valid_until: None,
    })
}

fn previous_until(item: &Item) -> Option<DateTime<Utc>> {
    item.opt_str(PREVIOUS_UNTIL).and_then(time::parse)
}

/// The previous settings of a stored integration while its overlap lasts (one KMS `Decrypt`);
/// after the overlap, none, and the kept secrets are removed (conditioned on the overlap read,
/// so a rotation meanwhile is not undone).
pub(super) async fn previous(
    store: &Store,
    id: &IntegrationId,
    item: &Item,
    now: DateTime<Utc>,
) -> Result<Option<Previous>, StoreError> {
    let (Some(AttributeValue::B(sealed)), Some(until)) =
        (item.get(PREVIOUS_SEALED), previous_until(item))
    else {
        return Ok(None);
    };
    let pk = integration_pk(id);
    if until <= now {
        let remove = Update::new()
            .remove(PREVIOUS_SEALED)
            .remove(PREVIOUS_UNTIL)
            .when(Cond::Equals(
                PREVIOUS_UNTIL.into(),
                s(item.str_of(PREVIOUS_UNTIL)?),
            ));
        store.update_if(&pk, &remove).await?;
        tracing::info!("the previous secrets' overlap ended; removed");
        return Ok(None);
    }
    let secrets = store.vault()?.open(&pk, sealed.as_ref()).await?;
    let settings = Integration::from_item(id.clone(), item, secrets)?.settings;
    Ok(Some(Previous { settings, until }))
}
