//! Bank integrations: monobank's personal API (a token and an account), or CSV uploads.

use crate::ids::key_part;
use crate::store::item::{Builder, Read};
use crate::store::{Item, StoreError};
use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum BankProvider {
    Monobank,
    Csv,
}

#[derive(Clone, Debug)]
pub enum BankSettings {
    /// `token` is the personal API's `X-Token`; `account` the statement's account (`0`: the
    /// default one).
    Monobank {
        token: SecretString,
        account: String,
        /// Another personal API base URL (a loopback stand-in), on the local and test stages.
        api_url: Option<String>,
    },
    Csv {
        name: String,
    },
}

/// The list every monobank bank integration is on, whatever its organisation: what the
/// scheduled import walks.
pub const IMPORTS_LIST: &str = "BANK_IMPORTS";

impl BankSettings {
    pub fn provider(&self) -> BankProvider {
        match self {
            Self::Monobank { .. } => BankProvider::Monobank,
            Self::Csv { .. } => BankProvider::Csv,
        }
    }

    /// The account rows of this integration belong to.
    pub fn account(&self) -> &str {
        match self {
            Self::Monobank { account, .. } => account,
            Self::Csv { .. } => "csv",
        }
    }

    pub(crate) fn write(&self, builder: Builder, integration_id: &str) -> Builder {
        let builder = builder.tag("provider", &self.provider());
        match self {
            Self::Monobank {
                token,
                account,
                api_url,
            } => builder
                .str("account", account)
                .str("token_digest", token_digest(token))
                .opt_str("api_url", api_url.as_deref())
                .list(IMPORTS_LIST, integration_id),
            Self::Csv { name } => builder.str("name", name),
        }
    }

    pub(crate) fn secrets(&self) -> BTreeMap<&'static str, &SecretString> {
        match self {
            Self::Monobank { token, .. } => BTreeMap::from([("token", token)]),
            Self::Csv { .. } => BTreeMap::new(),
        }
    }

    pub(crate) fn read(
        item: &Item,
        secrets: &mut HashMap<String, SecretString>,
    ) -> Result<Self, StoreError> {
        Ok(match item.tag_of::<BankProvider>("provider")? {
            BankProvider::Monobank => Self::Monobank {
                token: crate::vault::take_secret(secrets, "token")?,
                account: item.str_of("account")?.to_owned(),
                api_url: item.opt_str("api_url").map(str::to_owned),
            },
            BankProvider::Csv => Self::Csv {
                name: item.str_of("name")?.to_owned(),
            },
        })
    }
}

/// What holds a monobank token's account to one integration of its organisation, put in the
/// transaction that makes it: a second would store every row and match it twice. `None` for
/// another integration.
pub fn account_marker(integration: &super::Integration) -> Option<Item> {
    let super::Settings::Bank(BankSettings::Monobank { token, account, .. }) =
        &integration.settings
    else {
        return None;
    };
    let org = integration.org();
    let named = format!("BANK_ACCOUNT#{}#{}", token_digest(token), key_part(account));
    // By its digest: a bank integration's id is its webhook's credential.
    let marker = Builder::new(&org.pk(&named), "bank_account", org.as_str())
        .str("integration", integration.id.digest())
        .build();
    Some(marker)
}

/// A monobank token's digest, kept in clear on its integration: what names the token's one call a
/// minute (the statement lease) for a function that may not open the token itself.
pub fn token_digest(token: &SecretString) -> String {
    use secrecy::ExposeSecret;
    use sha2::{Digest, Sha256};
    let digest = hex::encode(Sha256::digest(format!(
        "monobank-token|{}",
        token.expose_secret()
    )));
    digest[..32].to_owned()
}

/// Where monobank pushes new rows, under the public base URL.
pub fn webhook_url(public_url: &str, id: &crate::ids::IntegrationId) -> String {
    format!("{}/hooks/{}/bank", public_url.trim_end_matches('/'), id.id)
}

/// Where a CSV file is uploaded.
pub fn upload_url(public_url: &str, id: &crate::ids::IntegrationId) -> String {
    format!(
        "{}/api/integrations/{}/csv",
        public_url.trim_end_matches('/'),
        id.id
    )
}
