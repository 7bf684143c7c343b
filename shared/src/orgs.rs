//! Organisations, their API keys (stored hashed), integrations and team members.

use crate::ids::{IntegrationId, OrgId};
use crate::payments::invoice::at_str;
use crate::store::item::{Builder, Read};
use crate::store::{Item, Store, StoreError};
use base64::{engine::general_purpose::URL_SAFE_NO_PAD as B64URL, Engine};
use chrono::{DateTime, Utc};
use secrecy::{ExposeSecret, SecretString};
use sha2::{Digest, Sha256};

fn key_hash(api_key: &str) -> String {
    hex::encode(Sha256::digest(api_key.as_bytes()))
}

/// Creates an organisation and its first API key (`fsk_{org}_{secret}`); only the key's SHA-256
/// is stored, so the key is shown once.
pub async fn create_org(
    store: &Store,
    name: &str,
    now: DateTime<Utc>,
) -> Result<(OrgId, SecretString), StoreError> {
    let org = OrgId::generate();
    let api_key = format!(
        "fsk_{org}_{}",
        B64URL.encode(crate::ids::random_bytes::<24>())
    );
    let org_item = Builder::new(&org.pk("ORG"), "org", org.as_str())
        .str("name", name)
        .str("created_at", at_str(now))
        .build();
    let key_item = Builder::new(
        &org.pk(&format!("APIKEY#{}", key_hash(&api_key))),
        "api_key",
        org.as_str(),
    )
    .str("created_at", at_str(now))
    .build();
    store
        .client
        .transact_write_items()
        .transact_items(store.put_new_step(org_item))
        .transact_items(store.put_new_step(key_item))
        .send()
        .await
        .map_err(StoreError::sdk)?;
    Ok((org, SecretString::from(api_key)))
}

/// The organisation an API key belongs to, if the key is one of its stored keys.
pub async fn authenticate(store: &Store, api_key: &str) -> Result<Option<OrgId>, StoreError> {
    let Some(org) = api_key
        .strip_prefix("fsk_")
        .and_then(|rest| rest.split_once('_'))
        .and_then(|(org, _)| OrgId::parse(org).ok())
    else {
        return Ok(None);
    };
    let found = store
        .get(&org.pk(&format!("APIKEY#{}", key_hash(api_key))))
        .await?;
    Ok(found.map(|_| org))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Provider {
    Standard,
    Stripe,
    Monobank,
}

impl Provider {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Standard => "standard",
            Self::Stripe => "stripe",
            Self::Monobank => "monobank",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        [Self::Standard, Self::Stripe, Self::Monobank]
            .into_iter()
            .find(|p| p.as_str() == raw)
    }
}

/// An integration: where a provider sends webhooks (`payments`), or where automation sends
/// messages (`outbound`). `Debug` never shows the secret.
#[derive(Clone, Debug)]
pub struct Integration {
    pub id: IntegrationId,
    pub kind: String,
    pub provider: Option<Provider>,
    pub secret: Option<SecretString>,
    pub public_key: Option<String>,
    pub url: Option<String>,
    /// Where an outbound target reports the state of an idempotency key (`{key}` is replaced).
    pub status_url: Option<String>,
    /// monobank merchant `X-Token`: lets the webhook refetch a rotated public key.
    pub token: Option<SecretString>,
    /// When the public key was last fetched from the provider (refetches are at most once a minute).
    pub key_fetched_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

pub fn integration_pk(id: &IntegrationId) -> String {
    id.org.pk(&format!("INTEGRATION#{}", id.id))
}

impl Integration {
    pub fn org(&self) -> &OrgId {
        &self.id.org
    }

    pub fn to_item(&self) -> Item {
        Builder::new(
            &integration_pk(&self.id),
            "integration",
            self.org().as_str(),
        )
        .str("id", &self.id.id)
        .str("integration_kind", &self.kind)
        .opt_str("provider", self.provider.map(Provider::as_str))
        .opt_str(
            "secret",
            self.secret.as_ref().map(|s| s.expose_secret().to_owned()),
        )
        .opt_str("public_key", self.public_key.clone())
        .opt_str("url", self.url.clone())
        .opt_str("status_url", self.status_url.clone())
        .opt_str(
            "token",
            self.token.as_ref().map(|s| s.expose_secret().to_owned()),
        )
        .opt_str("key_fetched_at", self.key_fetched_at.map(at_str))
        .str("created_at", at_str(self.created_at))
        .build()
    }

    pub fn from_item(id: IntegrationId, item: &Item) -> Result<Self, StoreError> {
        let created_at = item
            .str_of("created_at")?
            .parse()
            .map_err(|_| StoreError::Malformed {
                pk: integration_pk(&id),
                detail: "created_at is not a timestamp".into(),
            })?;
        Ok(Self {
            id,
            kind: item.str_of("integration_kind")?.to_owned(),
            provider: item.opt_str("provider").and_then(Provider::parse),
            secret: item.opt_str("secret").map(SecretString::from),
            public_key: item.opt_str("public_key").map(str::to_owned),
            url: item.opt_str("url").map(str::to_owned),
            status_url: item.opt_str("status_url").map(str::to_owned),
            token: item.opt_str("token").map(SecretString::from),
            key_fetched_at: item.opt_str("key_fetched_at").and_then(|t| t.parse().ok()),
            created_at,
        })
    }
}

pub async fn create_integration(
    store: &Store,
    integration: &Integration,
) -> Result<(), StoreError> {
    store.put_new(integration.to_item()).await.map(|_| ())
}

/// Stores a public key fetched from the provider.
pub async fn set_public_key(
    store: &Store,
    id: &IntegrationId,
    public_key: &str,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    store
        .client
        .update_item()
        .table_name(&store.table)
        .set_key(Some(Store::key(&integration_pk(id))))
        .update_expression("SET public_key = :k, key_fetched_at = :t")
        .condition_expression("attribute_exists(pk)")
        .expression_attribute_values(":k", crate::store::item::s(public_key))
        .expression_attribute_values(":t", crate::store::item::s(at_str(now)))
        .send()
        .await
        .map_err(StoreError::sdk)?;
    Ok(())
}

pub async fn get_integration(
    store: &Store,
    id: &IntegrationId,
) -> Result<Option<Integration>, StoreError> {
    store
        .get(&integration_pk(id))
        .await?
        .map(|item| Integration::from_item(id.clone(), &item))
        .transpose()
}

/// A colleague who receives notifications.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub user_id: String,
    pub name: String,
}

/// Adds a member; adding the same user id again changes nothing and returns `false`.
pub async fn add_member(
    store: &Store,
    org: &OrgId,
    member: &Member,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let item = Builder::new(
        &org.pk(&format!("MEMBER#{}", member.user_id)),
        "member",
        org.as_str(),
    )
    .str("user_id", &member.user_id)
    .str("name", &member.name)
    .str("created_at", at_str(now))
    .list(&org.pk("MEMBERS"), &member.user_id)
    .build();
    store.put_new(item).await
}

pub async fn members(store: &Store, org: &OrgId) -> Result<Vec<Member>, StoreError> {
    store
        .list(&org.pk("MEMBERS"), false, 1000)
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
