//! Secrets at rest: envelope encryption with KMS. A record's secret fields (a signing secret, a
//! provider token) are sealed together under a fresh data key (AES-256-GCM); KMS keeps the key
//! that wraps the data key, and the record's id is the encryption context of both the KMS call
//! and the cipher, so a sealed blob copied onto another record does not open. Only a function
//! whose role may `kms:Decrypt` can open one; the api function may only seal
//! (`kms:GenerateDataKey`).

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use aws_sdk_kms::primitives::Blob;
use aws_sdk_kms::types::DataKeySpec;
use secrecy::{ExposeSecret, SecretString};
use std::collections::{BTreeMap, HashMap};
use std::error::Error as StdError;
use thiserror::Error;

/// The layout's version, the first byte of every sealed blob.
const VERSION: u8 = 1;
/// The encryption context's one key.
const CONTEXT: &str = "record";

#[derive(Debug, Error)]
pub enum VaultError {
    #[error("KMS call failed")]
    Kms {
        retryable: bool,
        #[source]
        source: Box<dyn StdError + Send + Sync>,
    },
    #[error("sealed secrets are malformed: {0}")]
    Malformed(&'static str),
    #[error("no KMS key is configured to seal secrets (SECRETS_KEY_ID)")]
    NotConfigured,
    /// A record lacks a secret it must have: a malformed record, not a KMS failure.
    #[error("no sealed {0}")]
    Missing(&'static str),
}

impl VaultError {
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Self::Kms {
                retryable: true,
                ..
            }
        )
    }

    fn kms<E, R>(err: aws_sdk_kms::error::SdkError<E, R>) -> Self
    where
        E: aws_sdk_kms::error::ProvideErrorMetadata + StdError + Send + Sync + 'static,
        R: std::fmt::Debug + Send + Sync + 'static,
    {
        use aws_sdk_kms::error::SdkError;
        let retryable = match &err {
            SdkError::ServiceError(e) => matches!(
                e.err().code(),
                Some(
                    "KMSInternalException"
                        | "DependencyTimeoutException"
                        | "ThrottlingException"
                        | "LimitExceededException"
                        | "KMSInvalidStateException"
                )
            ),
            SdkError::ConstructionFailure(_) => false,
            _ => true,
        };
        Self::Kms {
            retryable,
            source: Box::new(err),
        }
    }
}

/// Keyed digests: an HMAC-SHA-256 under a KMS key of its own (`DIGEST_KEY_ID`, key spec
/// `HMAC_256`), which never leaves KMS. A digest tells two equal secrets apart from two different
/// ones without opening either, and names a token without letting anyone guess it offline: the
/// key is needed to compute one. One `GenerateMac` call each.
#[derive(Clone, Debug)]
pub struct Digests {
    kms: aws_sdk_kms::Client,
    key_id: String,
}

impl Digests {
    pub fn new(kms: aws_sdk_kms::Client, key_id: impl Into<String>) -> Self {
        Self {
            kms,
            key_id: key_id.into(),
        }
    }

    /// The digest of `message` under `context` (what it is of: two contexts never share a
    /// digest, whatever their messages).
    pub async fn digest(&self, context: &str, message: &[u8]) -> Result<Vec<u8>, VaultError> {
        let mut framed = Vec::with_capacity(8 + context.len() + message.len());
        framed.extend_from_slice(&(context.len() as u64).to_be_bytes());
        framed.extend_from_slice(context.as_bytes());
        framed.extend_from_slice(message);
        let out = self
            .kms
            .generate_mac()
            .key_id(&self.key_id)
            .mac_algorithm(aws_sdk_kms::types::MacAlgorithmSpec::HmacSha256)
            .message(Blob::new(framed))
            .send()
            .await
            .map_err(VaultError::kms)?;
        out.mac
            .map(Blob::into_inner)
            .ok_or(VaultError::Malformed("KMS returned no MAC"))
    }
}

/// Seals and opens the secret fields of a record with one KMS key; with [`Digests`], every
/// sealing has a keyed digest of the fields beside it.
#[derive(Clone)]
pub struct Vault {
    kms: aws_sdk_kms::Client,
    key_id: String,
    digests: Option<Digests>,
    /// Data keys this process unwrapped, by their record and wrapped form: a sealing opened
    /// again (a warm function re-reading an integration whose secrets did not move) costs no
    /// KMS call. A sealing that moved has another wrapped key, and is opened by KMS.
    unwrapped: std::sync::Arc<std::sync::Mutex<HashMap<[u8; 32], Vec<u8>>>>,
}

/// Names the key, never a data key it holds unwrapped.
impl std::fmt::Debug for Vault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vault")
            .field("key_id", &self.key_id)
            .field("digests", &self.digests.is_some())
            .finish_non_exhaustive()
    }
}

/// The most data keys a process keeps unwrapped; past it, they are forgotten and opened again.
const UNWRAPPED_MAX: usize = 512;

impl Vault {
    pub fn new(kms: aws_sdk_kms::Client, key_id: impl Into<String>) -> Self {
        Self {
            kms,
            key_id: key_id.into(),
            digests: None,
            unwrapped: Default::default(),
        }
    }

    /// The data key `wrapped` for `record`: kept from an earlier opening, or one `Decrypt`.
    async fn data_key(&self, record: &str, wrapped: &[u8]) -> Result<Vec<u8>, VaultError> {
        use sha2::Digest;
        let mut hasher = sha2::Sha256::new();
        hasher.update(record.as_bytes());
        hasher.update([0]);
        hasher.update(wrapped);
        let id: [u8; 32] = hasher.finalize().into();
        let kept = self
            .unwrapped
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .cloned();
        if let Some(key) = kept {
            return Ok(key);
        }
        let out = self
            .kms
            .decrypt()
            .key_id(&self.key_id)
            .ciphertext_blob(Blob::new(wrapped))
            .encryption_context(CONTEXT, record)
            .send()
            .await
            .map_err(VaultError::kms)?;
        let key = out
            .plaintext
            .ok_or(VaultError::Malformed("KMS returned no plaintext"))?
            .into_inner();
        let mut unwrapped = self.unwrapped.lock().unwrap_or_else(|p| p.into_inner());
        if unwrapped.len() >= UNWRAPPED_MAX {
            unwrapped.clear();
        }
        unwrapped.insert(id, key.clone());
        Ok(key)
    }

    pub fn with_digests(mut self, digests: Digests) -> Self {
        self.digests = Some(digests);
        self
    }

    /// The keyed digest of `fields` for the record `record`, as kept beside their sealing:
    /// equal for equal fields, and for nothing else. `None` without [`Digests`].
    pub async fn digest(
        &self,
        record: &str,
        fields: &BTreeMap<&str, &SecretString>,
    ) -> Result<Option<Vec<u8>>, VaultError> {
        let Some(digests) = &self.digests else {
            return Ok(None);
        };
        let clear: BTreeMap<&str, &str> = fields
            .iter()
            .map(|(name, value)| (*name, value.expose_secret()))
            .collect();
        let text = serde_json::to_vec(&clear).expect("strings serialize");
        Ok(Some(digests.digest(record, &text).await?))
    }

    /// Seals `fields` for the record `record` (its key): one `GenerateDataKey` call.
    pub async fn seal(
        &self,
        record: &str,
        fields: &BTreeMap<&str, &SecretString>,
    ) -> Result<Vec<u8>, VaultError> {
        let out = self
            .kms
            .generate_data_key()
            .key_id(&self.key_id)
            .key_spec(DataKeySpec::Aes256)
            .encryption_context(CONTEXT, record)
            .send()
            .await
            .map_err(VaultError::kms)?;
        let (Some(key), Some(wrapped)) = (out.plaintext, out.ciphertext_blob) else {
            return Err(VaultError::Malformed("KMS returned no data key"));
        };
        let clear: BTreeMap<&str, &str> = fields
            .iter()
            .map(|(name, value)| (*name, value.expose_secret()))
            .collect();
        let mut text = serde_json::to_vec(&clear).expect("strings serialize");
        let nonce = crate::ids::random_bytes::<NONCE_LEN>();
        cipher(key.as_ref())?
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(record.as_bytes()),
                &mut text,
            )
            .map_err(|_| VaultError::Malformed("the cipher refused to seal"))?;
        let wrapped = wrapped.into_inner();
        let wrapped_len =
            u16::try_from(wrapped.len()).map_err(|_| VaultError::Malformed("data key too long"))?;
        let mut sealed = Vec::with_capacity(3 + wrapped.len() + NONCE_LEN + text.len());
        sealed.push(VERSION);
        sealed.extend_from_slice(&wrapped_len.to_be_bytes());
        sealed.extend_from_slice(&wrapped);
        sealed.extend_from_slice(&nonce);
        sealed.extend_from_slice(&text);
        Ok(sealed)
    }

    /// Opens what `seal` sealed for the same record: one `Decrypt` call the first time this
    /// process opens it, none after.
    pub async fn open(
        &self,
        record: &str,
        sealed: &[u8],
    ) -> Result<HashMap<String, SecretString>, VaultError> {
        let (wrapped, nonce, text) = split(sealed)?;
        let key = self.data_key(record, wrapped).await?;
        let mut text = text.to_vec();
        let nonce: [u8; NONCE_LEN] = nonce.try_into().expect("split gives NONCE_LEN bytes");
        let clear = cipher(key.as_ref())?
            .open_in_place(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(record.as_bytes()),
                &mut text,
            )
            .map_err(|_| VaultError::Malformed("sealed for another record or altered"))?;
        let fields: HashMap<String, String> = serde_json::from_slice(clear)
            .map_err(|_| VaultError::Malformed("the sealed fields are not a map"))?;
        Ok(fields
            .into_iter()
            .map(|(name, value)| (name, SecretString::from(value)))
            .collect())
    }
}

fn cipher(key: &[u8]) -> Result<LessSafeKey, VaultError> {
    UnboundKey::new(&AES_256_GCM, key)
        .map(LessSafeKey::new)
        .map_err(|_| VaultError::Malformed("the data key is not 256 bits"))
}

/// A sealed blob's parts: the wrapped data key, the nonce and the ciphertext.
type Parts<'a> = (&'a [u8], &'a [u8], &'a [u8]);

/// A sealed blob in its parts.
fn split(sealed: &[u8]) -> Result<Parts<'_>, VaultError> {
    let malformed = VaultError::Malformed("not a sealed blob of this layout");
    let (&version, rest) = sealed.split_first().ok_or(VaultError::Malformed("empty"))?;
    if version != VERSION || rest.len() < 2 {
        return Err(malformed);
    }
    let len = usize::from(u16::from_be_bytes([rest[0], rest[1]]));
    let rest = &rest[2..];
    if rest.len() < len + NONCE_LEN {
        return Err(malformed);
    }
    let (wrapped, rest) = rest.split_at(len);
    let (nonce, text) = rest.split_at(NONCE_LEN);
    Ok((wrapped, nonce, text))
}

/// A secret a record must have, out of its opened secrets.
pub fn take_secret(
    secrets: &mut std::collections::HashMap<String, SecretString>,
    name: &'static str,
) -> Result<SecretString, VaultError> {
    match secrets.remove(name) {
        Some(secret) => Ok(secret),
        None if secrets.contains_key(LEFT_SEALED) => Ok(SecretString::from(String::new())),
        None => Err(VaultError::Missing(name)),
    }
}

/// The mark of secrets left sealed (`left_sealed`).
const LEFT_SEALED: &str = "\0left-sealed";

/// Secrets a function may not open, left sealed: each reads as empty. For a function that
/// never uses them (the bank webhook, whose URL is its only credential), so its role needs no
/// `kms:Decrypt`.
pub fn left_sealed() -> std::collections::HashMap<String, SecretString> {
    std::collections::HashMap::from([(LEFT_SEALED.to_owned(), SecretString::from(String::new()))])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn secrets_left_sealed_read_as_empty_and_opened_ones_as_themselves() {
        use secrecy::ExposeSecret;
        let mut sealed = left_sealed();
        assert_eq!(
            take_secret(&mut sealed, "token").unwrap().expose_secret(),
            ""
        );
        let mut opened = std::collections::HashMap::from([(
            "token".to_owned(),
            SecretString::from("t0k".to_owned()),
        )]);
        assert_eq!(
            take_secret(&mut opened, "token").unwrap().expose_secret(),
            "t0k"
        );
        assert!(
            take_secret(&mut opened, "token").is_err(),
            "an opened map has no stand-in"
        );
    }

    #[test]
    fn a_sealed_blob_splits_into_its_parts() {
        let mut blob = vec![VERSION, 0, 3, 7, 7, 7];
        blob.extend_from_slice(&[1; NONCE_LEN]);
        blob.extend_from_slice(b"ciphertext");
        let (wrapped, nonce, text) = split(&blob).unwrap();
        assert_eq!(
            (wrapped, nonce, text),
            (&[7u8, 7, 7][..], &[1u8; NONCE_LEN][..], &b"ciphertext"[..])
        );
        assert!(split(&[2, 0, 0]).is_err());
        assert!(split(&[VERSION, 0, 9, 1]).is_err());
    }

    proptest! {
        #[test]
        fn splitting_never_panics(blob in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = split(&blob);
        }
    }
}
