//! Call integrations: a SIP provider posting Twilio-style status callbacks, or a generic provider
//! posting Standard Webhooks JSON.

use crate::store::item::{Builder, Read};
use crate::store::{Item, StoreError};
use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CallProvider {
    Twilio,
    Standard,
}

#[derive(Clone, Debug)]
pub enum CallSettings {
    /// The account's auth token signs every callback.
    Twilio {
        auth_token: SecretString,
    },
    Standard {
        secret: SecretString,
    },
}

impl CallSettings {
    pub fn provider(&self) -> CallProvider {
        match self {
            Self::Twilio { .. } => CallProvider::Twilio,
            Self::Standard { .. } => CallProvider::Standard,
        }
    }

    pub(crate) fn write(&self, builder: Builder) -> Builder {
        builder.tag("provider", &self.provider())
    }

    pub(crate) fn secrets(&self) -> BTreeMap<&'static str, &SecretString> {
        match self {
            Self::Twilio { auth_token } => BTreeMap::from([("auth_token", auth_token)]),
            Self::Standard { secret } => BTreeMap::from([("secret", secret)]),
        }
    }

    pub(crate) fn read(
        item: &Item,
        secrets: &mut HashMap<String, SecretString>,
    ) -> Result<Self, StoreError> {
        let mut take = |name| crate::vault::take_secret(secrets, name);
        Ok(match item.tag_of::<CallProvider>("provider")? {
            CallProvider::Twilio => Self::Twilio {
                auth_token: take("auth_token")?,
            },
            CallProvider::Standard => Self::Standard {
                secret: take("secret")?,
            },
        })
    }
}
