//! Integrations: where a provider sends webhooks (`payments`), or where automation sends
//! messages (`outbound`). One variant per kind with exactly its own fields; the item mapping
//! lives here once. `Debug` never shows a secret.

use crate::effects::outbound::OutboundTarget;
use crate::ids::{IntegrationId, OrgId};
use crate::payments::providers::PaymentSettings;
use crate::store::item::{Builder, Read};
use crate::store::{Item, Store, StoreError};
use crate::time;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// What an integration is for; the last segment of its webhook route (`/hooks/{id}/payments`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum IntegrationKind {
    Payments,
    Outbound,
}

#[derive(Clone, Debug)]
pub enum Settings {
    Payments(PaymentSettings),
    Outbound(OutboundTarget),
}

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
        }
    }

    pub fn pk(&self) -> String {
        integration_pk(&self.id)
    }

    pub fn to_item(&self) -> Item {
        let builder = Builder::new(&self.pk(), "integration", self.org().as_str())
            .str("id", &self.id.id)
            .tag("integration_kind", &self.kind())
            .str("created_at", time::format(self.created_at));
        match &self.settings {
            Settings::Payments(p) => p.write(builder),
            Settings::Outbound(o) => o.write(builder),
        }
        .build()
    }

    pub fn from_item(id: IntegrationId, item: &Item) -> Result<Self, StoreError> {
        let settings = match item.tag_of::<IntegrationKind>("integration_kind")? {
            IntegrationKind::Payments => Settings::Payments(PaymentSettings::read(item)?),
            IntegrationKind::Outbound => Settings::Outbound(OutboundTarget::read(item)?),
        };
        Ok(Self {
            id,
            settings,
            created_at: item.time_of("created_at")?,
        })
    }
}

pub async fn create(store: &Store, integration: &Integration) -> Result<(), StoreError> {
    store.put_new(integration.to_item()).await.map(|_| ())
}

/// Replaces an integration's settings (a rotated secret or key); the id stays.
pub async fn replace(store: &Store, integration: &Integration) -> Result<(), StoreError> {
    store.replace(integration.to_item()).await
}

pub async fn get(store: &Store, id: &IntegrationId) -> Result<Option<Integration>, StoreError> {
    store
        .get(&integration_pk(id))
        .await?
        .map(|item| Integration::from_item(id.clone(), &item))
        .transpose()
}
