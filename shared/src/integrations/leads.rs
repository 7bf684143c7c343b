//! Lead-form integrations: a website form or a form service, Standard Webhooks signed.

use crate::store::item::{Builder, Read};
use crate::store::{Item, StoreError};
use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LeadProvider {
    Standard,
}

#[derive(Clone, Debug)]
pub enum LeadSettings {
    /// `secret` (`whsec_...`) signs every delivery.
    Standard { secret: SecretString },
}

impl LeadSettings {
    pub fn provider(&self) -> LeadProvider {
        match self {
            Self::Standard { .. } => LeadProvider::Standard,
        }
    }

    pub(crate) fn write(&self, builder: Builder) -> Builder {
        builder.tag("provider", &self.provider())
    }

    pub(crate) fn secrets(&self) -> BTreeMap<&'static str, &SecretString> {
        match self {
            Self::Standard { secret } => BTreeMap::from([("secret", secret)]),
        }
    }

    pub(crate) fn read(
        item: &Item,
        secrets: &mut HashMap<String, SecretString>,
    ) -> Result<Self, StoreError> {
        Ok(match item.tag_of::<LeadProvider>("provider")? {
            LeadProvider::Standard => Self::Standard {
                secret: crate::vault::take_secret(secrets, "secret")?,
            },
        })
    }
}

/// Where the form posts, under the public base URL.
pub fn webhook_url(public_url: &str, id: &crate::ids::IntegrationId) -> String {
    format!("{}/hooks/{}/leads", public_url.trim_end_matches('/'), id.id)
}
