//! The settings of a kind whose only provider is our own contract, Standard Webhooks signed (an
//! SMS carrier, a lead form): one secret (`whsec_…`) signs every delivery. Each such kind
//! has its own two types, made here once, so one kind's settings cannot stand for another's.

/// `$settings` and `$provider` for the kind whose deliveries arrive at `/hooks/{id}/$segment`.
macro_rules! standard_signed {
    ($(#[$doc:meta])* $settings:ident, $provider:ident, $segment:literal) => {
        #[derive(
            Clone,
            Copy,
            Debug,
            PartialEq,
            Eq,
            Hash,
            serde::Serialize,
            serde::Deserialize,
            utoipa::ToSchema,
        )]
        #[serde(rename_all = "snake_case")]
        pub enum $provider {
            Standard,
        }

        $(#[$doc])*
        #[derive(Clone, Debug)]
        pub enum $settings {
            /// `secret` (`whsec_...`) signs every delivery.
            Standard { secret: secrecy::SecretString },
        }

        impl $settings {
            pub fn provider(&self) -> $provider {
                match self {
                    Self::Standard { .. } => $provider::Standard,
                }
            }

            /// The verifier of the deliveries this secret signs.
            pub fn verifier(
                &self,
            ) -> Result<crate::signature::standard::Verifier, crate::signature::SignatureError>
            {
                use secrecy::ExposeSecret;
                match self {
                    Self::Standard { secret } => {
                        crate::signature::standard::Verifier::new(secret.expose_secret())
                    }
                }
            }

            pub(crate) fn write(
                &self,
                builder: crate::store::item::Builder,
            ) -> crate::store::item::Builder {
                builder.tag("provider", &self.provider())
            }

            pub(crate) fn secrets(
                &self,
            ) -> std::collections::BTreeMap<&'static str, &secrecy::SecretString> {
                match self {
                    Self::Standard { secret } => std::collections::BTreeMap::from([("secret", secret)]),
                }
            }

            pub(crate) fn read(
                item: &crate::store::Item,
                secrets: &mut std::collections::HashMap<String, secrecy::SecretString>,
            ) -> Result<Self, crate::store::StoreError> {
                use crate::store::item::Read;
                Ok(match item.tag_of::<$provider>("provider")? {
                    $provider::Standard => Self::Standard {
                        secret: crate::vault::take_secret(secrets, "secret")?,
                    },
                })
            }
        }

        /// Where the sender posts, under the public base URL.
        pub fn webhook_url(public_url: &str, id: &crate::ids::IntegrationId) -> String {
            format!("{}/hooks/{}/{}", public_url.trim_end_matches('/'), id.id, $segment)
        }
    };
}

pub(crate) use standard_signed;
