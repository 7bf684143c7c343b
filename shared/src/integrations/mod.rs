//! Integrations: where a provider sends webhooks (`payments`), or where automation sends
//! messages (`outbound`). One variant per kind with exactly its own fields; the item mapping
//! lives here once. `Debug` never shows a secret, and no secret is stored in clear: the signing
//! secrets and provider tokens are sealed with KMS (`vault`), the rest is plain attributes.

pub mod bank;
pub mod calls;
pub mod leads;
pub mod messages;
pub mod pause;
pub mod payments;
pub mod rotation;
mod signed;
pub mod sms;

use self::bank::BankSettings;
use self::calls::CallSettings;
use self::leads::LeadSettings;
use self::messages::{MessageProvider, MessageSettings};
use self::payments::PaymentSettings;
use self::sms::SmsSettings;
use crate::egress::OutboundTarget;
use crate::ids::{IntegrationId, OrgId};
use crate::store::item::{Builder, Read};
use crate::store::{Item, Store, StoreError};
use crate::time;
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};
use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// What an integration is for; the last segment of its webhook route (`/hooks/{id}/payments`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum IntegrationKind {
    Payments,
    Outbound,
    Calls,
    Messages,
    Bank,
    Sms,
    Leads,
}

#[derive(Clone, Debug)]
pub enum Settings {
    Payments(PaymentSettings),
    Outbound(OutboundTarget),
    Calls(CallSettings),
    Messages(MessageSettings),
    Bank(BankSettings),
    Sms(SmsSettings),
    Leads(LeadSettings),
}

impl Settings {
    /// The messenger of a messages integration.
    pub fn message_provider(&self) -> Option<MessageProvider> {
        match self {
            Self::Messages(m) => Some(m.provider()),
            _ => None,
        }
    }
}

/// The settings of one kind of integration: found in an integration's settings, and named for
/// metrics and logs by their provider.
pub trait ProviderSettings: Send + Sync {
    fn of(settings: &Settings) -> Option<&Self>;
    /// The provider's name, for metrics and logs.
    fn label(&self) -> &'static str;
}

macro_rules! provider {
    ($type:ty, $variant:ident, |$me:ident| $label:expr) => {
        impl ProviderSettings for $type {
            fn of(settings: &Settings) -> Option<&Self> {
                match settings {
                    Settings::$variant(s) => Some(s),
                    _ => None,
                }
            }

            fn label(&self) -> &'static str {
                let $me = self;
                $label
            }
        }
    };
}

provider!(PaymentSettings, Payments, |s| match s.provider() {
    payments::Provider::Standard => "standard",
    payments::Provider::Stripe => "stripe",
    payments::Provider::Monobank => "monobank",
});
provider!(MessageSettings, Messages, |s| match s.provider() {
    MessageProvider::Telegram => "telegram",
    MessageProvider::Whatsapp => "whatsapp",
    MessageProvider::Standard => "standard",
    MessageProvider::Sms => "messages",
});
provider!(CallSettings, Calls, |s| match s.provider() {
    calls::CallProvider::Twilio => "twilio",
    calls::CallProvider::Standard => "standard",
});
provider!(BankSettings, Bank, |s| match s.provider() {
    bank::BankProvider::Monobank => "monobank_personal",
    bank::BankProvider::Csv => "csv",
});
provider!(SmsSettings, Sms, |_s| "sms");
provider!(LeadSettings, Leads, |_s| "leads");

#[derive(Clone, Debug)]
pub struct Integration {
    pub id: IntegrationId,
    pub settings: Settings,
    pub created_at: DateTime<Utc>,
}

pub fn integration_pk(id: &IntegrationId) -> String {
    id.org.pk(&format!("INTEGRATION#{}", id.id))
}

impl Integration {
    pub fn org(&self) -> &OrgId {
        &self.id.org
    }

    pub fn kind(&self) -> IntegrationKind {
        match self.settings {
            Settings::Payments(_) => IntegrationKind::Payments,
            Settings::Outbound(_) => IntegrationKind::Outbound,
            Settings::Calls(_) => IntegrationKind::Calls,
            Settings::Messages(_) => IntegrationKind::Messages,
            Settings::Bank(_) => IntegrationKind::Bank,
            Settings::Sms(_) => IntegrationKind::Sms,
            Settings::Leads(_) => IntegrationKind::Leads,
        }
    }

    pub fn pk(&self) -> String {
        integration_pk(&self.id)
    }

    /// The item with its clear fields; the secrets go into `sealed` (see `create`).
    fn clear_item(&self) -> Item {
        let builder = Builder::new(&self.pk(), "integration", self.org().as_str())
            .str("id", &self.id.id)
            .tag("integration_kind", &self.kind())
            .str("created_at", time::format(self.created_at));
        match &self.settings {
            Settings::Payments(p) => p.write(builder),
            Settings::Outbound(o) => o.write(builder),
            Settings::Calls(c) => c.write(builder),
            Settings::Messages(m) => m.write(builder),
            Settings::Bank(b) => b.write(builder, &self.id.id),
            Settings::Sms(s) => s.write(builder),
            Settings::Leads(l) => l.write(builder),
        }
        .build()
    }

    fn secrets(&self) -> BTreeMap<&'static str, &SecretString> {
        match &self.settings {
            Settings::Payments(p) => p.secrets(),
            Settings::Outbound(o) => BTreeMap::from([("secret", &o.secret)]),
            Settings::Calls(c) => c.secrets(),
            Settings::Messages(m) => m.secrets(),
            Settings::Bank(b) => b.secrets(),
            Settings::Sms(s) => s.secrets(),
            Settings::Leads(l) => l.secrets(),
        }
    }

    /// The item as stored: clear fields, and the secrets sealed with the store's KMS key under
    /// this integration's key as encryption context; a provider's API key sealed apart.
    pub async fn to_item(&self, store: &Store) -> Result<Item, StoreError> {
        let mut item = self.clear_item();
        let secrets = self.secrets();
        if !secrets.is_empty() {
            let vault = store.vault()?;
            let sealed = vault.seal(&self.pk(), &secrets).await?;
            item.insert(SEALED.into(), AttributeValue::B(Blob::new(sealed)));
            if let Some(digest) = vault.digest(&self.pk(), &secrets).await? {
                item.insert(SEALED_DIGEST.into(), AttributeValue::B(Blob::new(digest)));
            }
        }
        let apart = match &self.settings {
            Settings::Payments(p) => p.apart(),
            _ => BTreeMap::new(),
        };
        if !apart.is_empty() {
            let sealed = store.vault()?.seal(&self.pk(), &apart).await?;
            item.insert(SEALED_APART.into(), AttributeValue::B(Blob::new(sealed)));
        }
        Ok(item)
    }

    fn from_item(
        id: IntegrationId,
        item: &Item,
        mut secrets: HashMap<String, SecretString>,
    ) -> Result<Self, StoreError> {
        let settings = match kind_of(item)? {
            IntegrationKind::Payments => {
                Settings::Payments(PaymentSettings::read(item, &mut secrets)?)
            }
            IntegrationKind::Outbound => {
                Settings::Outbound(OutboundTarget::read(item, &mut secrets)?)
            }
            IntegrationKind::Calls => Settings::Calls(CallSettings::read(item, &mut secrets)?),
            IntegrationKind::Messages => {
                Settings::Messages(MessageSettings::read(item, &mut secrets)?)
            }
            IntegrationKind::Bank => Settings::Bank(BankSettings::read(item, &mut secrets)?),
            IntegrationKind::Sms => Settings::Sms(SmsSettings::read(item, &mut secrets)?),
            IntegrationKind::Leads => Settings::Leads(LeadSettings::read(item, &mut secrets)?),
        };
        Ok(Self {
            id,
            settings,
            created_at: item.time_of("created_at")?,
        })
    }
}

/// The attribute holding an integration's sealed secrets.
const SEALED: &str = "sealed";
/// The keyed digest of what `sealed` holds ([`crate::vault::Digests`]): a rotation to the same
/// secrets is seen without opening them.
const SEALED_DIGEST: &str = "sealed_digest";
/// Secrets set on their own later (a Stripe API key), sealed apart from the rest: opened with
/// them, and winning over a value of the same name.
const SEALED_APART: &str = "sealed_apart";
/// Where secrets were kept in clear before they were sealed.
const CLEAR: [&str; 5] = ["secret", "token", "auth_token", "bot_token", "app_secret"];

fn kind_of(item: &Item) -> Result<IntegrationKind, StoreError> {
    item.tag_of::<IntegrationKind>("integration_kind")
}

pub async fn create(store: &Store, integration: &Integration) -> Result<(), StoreError> {
    store
        .put_new(integration.to_item(store).await?)
        .await
        .map(|_| ())
}

/// Its creation as made by `by` (a key's id, or the admin's public name), as a decision: its
/// item sealed now (the KMS call made before any write), put new.
pub async fn creating(
    store: &Store,
    integration: &Integration,
    by: &str,
) -> Result<crate::store::PutOnce, StoreError> {
    Ok(crate::store::PutOnce(
        made_by(store, integration, by).await?,
    ))
}

/// Its item, sealed, naming who made it.
async fn made_by(store: &Store, integration: &Integration, by: &str) -> Result<Item, StoreError> {
    let mut item = integration.to_item(store).await?;
    item.insert("created_by".into(), crate::store::item::s(by));
    Ok(item)
}

/// The most monobank bank integrations an organisation holds (paused ones included), unless
/// `BANK_IMPORTS_MAX` says otherwise: each is a statement import every period.
pub const BANK_IMPORTS_MAX: u64 = 20;

/// A monobank bank integration's creation as made by `by`, as a decision: its item sealed now,
/// counted in the same transaction and held under `max` per organisation (two at once cannot
/// pass it).
pub async fn counting(
    store: &Store,
    integration: &Integration,
    by: &str,
    max: u64,
) -> Result<crate::store::UnderCap, StoreError> {
    let item = made_by(store, integration, by).await?;
    let (org, counter) = (
        integration.org(),
        integration.org().pk("BANK_IMPORTS_COUNT"),
    );
    let counted = (counter.as_str(), "bank_import_count", org.as_str());
    // A new integration's id is random: the cap refuses it, and a second of one token's account
    // (its marker's key taken), whose every row would be stored and matched twice.
    let put = crate::store::UnderCap::new(item, counted, max);
    Ok(match bank::account_marker(integration) {
        Some(marker) => put.alone_as(marker),
        None => put,
    })
}

/// Replaces an integration's settings (a rotated secret or key); the id and its creator stay.
pub async fn replace(store: &Store, integration: &Integration) -> Result<(), StoreError> {
    let mut item = integration.to_item(store).await?;
    let stored = store.get(&integration_pk(&integration.id)).await?;
    if let Some(by) = stored.as_ref().and_then(|i| i.opt_str("created_by")) {
        item.insert("created_by".into(), crate::store::item::s(by));
    }
    store.replace(item).await
}

/// The integration with every secret opened, a provider's API key too (one KMS `Decrypt` for
/// each sealing the process has not opened before): for what calls out with them.
pub async fn get(store: &Store, id: &IntegrationId) -> Result<Option<Integration>, StoreError> {
    let pk = integration_pk(id);
    let Some(item) = store.get(&pk).await? else {
        return Ok(None);
    };
    opened(store, id, &item, true).await.map(Some)
}

/// The integration with every secret opened ([`get`]) for what calls out with them; an outbound
/// target's previous secret too while a rotation's overlap lasts (one more KMS `Decrypt`, then
/// only), so its calls are signed with both.
pub async fn get_signing(
    store: &Store,
    id: &IntegrationId,
    now: DateTime<Utc>,
) -> Result<Option<Integration>, StoreError> {
    let Some(item) = store.get(&integration_pk(id)).await? else {
        return Ok(None);
    };
    let mut integration = opened(store, id, &item, true).await?;
    if let Settings::Outbound(target) = &mut integration.settings {
        if let Some(previous) = rotation::previous(store, id, &item, now).await? {
            if let Settings::Outbound(before) = previous.settings {
                target.previous = Some(before.secret);
            }
        }
    }
    Ok(Some(integration))
}

/// The integration with its secrets opened but a provider's API key (left sealed), and while a
/// rotation's overlap lasts the settings it had before: what a webhook verifies a delivery
/// with. A sealing the process opened before costs no KMS call.
pub async fn get_verifying(
    store: &Store,
    id: &IntegrationId,
    now: DateTime<Utc>,
) -> Result<Option<(Integration, Option<rotation::Previous>)>, StoreError> {
    let Some(item) = store.get(&integration_pk(id)).await? else {
        return Ok(None);
    };
    let integration = opened(store, id, &item, false).await?;
    let previous = rotation::previous(store, id, &item, now).await?;
    Ok(Some((integration, previous)))
}

/// The integration of `item` with its secrets opened, and those sealed apart (a provider's API
/// key) when `apart`.
async fn opened(
    store: &Store,
    id: &IntegrationId,
    item: &Item,
    apart: bool,
) -> Result<Integration, StoreError> {
    let pk = integration_pk(id);
    let secrets = match item.get(SEALED) {
        Some(AttributeValue::B(sealed)) => store.vault()?.open(&pk, sealed.as_ref()).await?,
        // Stored before secrets were sealed: refused, never read as "no token" (which would
        // switch monobank's confirmation off) nor used in clear.
        _ if CLEAR.iter().any(|name| item.contains_key(*name)) => {
            return Err(StoreError::Malformed {
                pk,
                detail:
                    "holds a secret in clear (stored before secrets were sealed): create it again"
                        .into(),
            })
        }
        _ => HashMap::new(),
    };
    let mut secrets = secrets;
    if let (true, Some(AttributeValue::B(sealed))) = (apart, item.get(SEALED_APART)) {
        secrets.extend(store.vault()?.open(&pk, sealed.as_ref()).await?);
    }
    Integration::from_item(id.clone(), item, secrets)
}

/// The integration with its secrets left sealed (each reads as empty), with no KMS call: for a
/// function that never uses them and may not open them (`webhook::Source::OPENS_SECRETS`).
pub async fn get_sealed(
    store: &Store,
    id: &IntegrationId,
) -> Result<Option<Integration>, StoreError> {
    let Some(item) = store.get(&integration_pk(id)).await? else {
        return Ok(None);
    };
    Integration::from_item(id.clone(), &item, crate::vault::left_sealed()).map(Some)
}

/// The stored item with its clear fields only, its secrets left sealed: for a function that may
/// not open them (the api) and needs the provider or another clear field.
pub async fn clear_item(store: &Store, id: &IntegrationId) -> Result<Option<Item>, StoreError> {
    store.get(&integration_pk(id)).await
}

/// What an integration is for, without opening its secrets (for a function that may not).
pub async fn kind(
    store: &Store,
    id: &IntegrationId,
) -> Result<Option<IntegrationKind>, StoreError> {
    store
        .get(&integration_pk(id))
        .await?
        .map(|item| kind_of(&item))
        .transpose()
}
