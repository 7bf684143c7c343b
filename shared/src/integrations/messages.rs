//! Message integrations: one variant per messenger with exactly its own fields and secrets.

use crate::store::item::{Builder, Read};
use crate::store::{Item, StoreError};
use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MessageProvider {
    Telegram,
    Whatsapp,
    Standard,
    /// An SMS carrier's incoming message (an `sms` integration, see `ledger`): no messages
    /// integration has it.
    Sms,
}

impl MessageProvider {
    /// Whether a rule can send a reply through this channel's API.
    pub fn can_reply(self) -> bool {
        matches!(self, Self::Telegram | Self::Whatsapp)
    }
}

#[derive(Clone, Debug)]
pub enum MessageSettings {
    /// `secret_token` is what Telegram sends back in `X-Telegram-Bot-Api-Secret-Token`.
    Telegram {
        bot_token: SecretString,
        secret_token: SecretString,
        /// Another Bot API base URL (a loopback stand-in), on the local and test stages only.
        api_url: Option<String>,
    },
    /// `app_secret` signs deliveries; `access_token` reads media and sends replies;
    /// `verify_token` answers the subscription handshake.
    Whatsapp {
        app_secret: SecretString,
        access_token: SecretString,
        verify_token: SecretString,
        api_url: Option<String>,
    },
    Standard {
        secret: SecretString,
    },
}

impl MessageSettings {
    pub fn provider(&self) -> MessageProvider {
        match self {
            Self::Telegram { .. } => MessageProvider::Telegram,
            Self::Whatsapp { .. } => MessageProvider::Whatsapp,
            Self::Standard { .. } => MessageProvider::Standard,
        }
    }

    pub fn api_url(&self) -> Option<&str> {
        match self {
            Self::Telegram { api_url, .. } | Self::Whatsapp { api_url, .. } => api_url.as_deref(),
            Self::Standard { .. } => None,
        }
    }

    pub(crate) fn write(&self, builder: Builder) -> Builder {
        builder
            .tag("provider", &self.provider())
            .opt_str("api_url", self.api_url())
    }

    pub(crate) fn secrets(&self) -> BTreeMap<&'static str, &SecretString> {
        match self {
            Self::Telegram {
                bot_token,
                secret_token,
                ..
            } => BTreeMap::from([("bot_token", bot_token), ("secret_token", secret_token)]),
            Self::Whatsapp {
                app_secret,
                access_token,
                verify_token,
                ..
            } => BTreeMap::from([
                ("app_secret", app_secret),
                ("access_token", access_token),
                ("verify_token", verify_token),
            ]),
            Self::Standard { secret } => BTreeMap::from([("secret", secret)]),
        }
    }

    pub(crate) fn read(
        item: &Item,
        secrets: &mut HashMap<String, SecretString>,
    ) -> Result<Self, StoreError> {
        let mut take = |name| crate::vault::take_secret(secrets, name);
        let api_url = item.opt_str("api_url").map(str::to_owned);
        Ok(match item.tag_of::<MessageProvider>("provider")? {
            MessageProvider::Telegram => Self::Telegram {
                bot_token: take("bot_token")?,
                secret_token: take("secret_token")?,
                api_url,
            },
            MessageProvider::Whatsapp => Self::Whatsapp {
                app_secret: take("app_secret")?,
                access_token: take("access_token")?,
                verify_token: take("verify_token")?,
                api_url,
            },
            MessageProvider::Standard => Self::Standard {
                secret: take("secret")?,
            },
            MessageProvider::Sms => {
                return Err(StoreError::Malformed {
                    pk: item.opt_str("pk").unwrap_or_default().to_owned(),
                    detail: "sms is not a messages integration's provider".into(),
                })
            }
        })
    }
}

/// Where a messenger posts, under the public base URL.
pub fn webhook_url(public_url: &str, id: &crate::ids::IntegrationId) -> String {
    format!(
        "{}/hooks/{}/messages",
        public_url.trim_end_matches('/'),
        id.id
    )
}
