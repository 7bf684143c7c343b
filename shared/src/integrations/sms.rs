//! SMS carrier integrations: our own contract, Standard Webhooks signed.

use crate::store::item::{Builder, Read};
use crate::store::{Item, StoreError};
use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SmsProvider {
    Standard,
}

#[derive(Clone, Debug)]
pub enum SmsSettings {
    /// `secret` (`whsec_...`) signs every delivery.
    Standard { secret: SecretString },
}

impl SmsSettings {
    pub fn provider(&self) -> SmsProvider {
        match self {
            Self::Standard { .. } => SmsProvider::Standard,
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
        Ok(match item.tag_of::<SmsProvider>("provider")? {
            SmsProvider::Standard => Self::Standard {
                secret: crate::vault::take_secret(secrets, "secret")?,
            },
        })
    }
}

/// Where the carrier posts, under the public base URL.
pub fn webhook_url(public_url: &str, id: &crate::ids::IntegrationId) -> String {
    format!("{}/hooks/{}/sms", public_url.trim_end_matches('/'), id.id)
}
