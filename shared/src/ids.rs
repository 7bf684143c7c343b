//! Identities parsed at the edge; past it, code never handles raw strings for these.

use serde::{Deserialize, Serialize};
use std::fmt;
use thiserror::Error;

#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("{field} is invalid: {reason}")]
pub struct IdError {
    pub field: &'static str,
    pub reason: &'static str,
}

fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).expect("the operating system provides randomness");
    hex::encode(buf)
}

/// Random bytes for secrets and keys.
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut buf = [0u8; N];
    getrandom::fill(&mut buf).expect("the operating system provides randomness");
    buf
}

/// An organisation: `o` followed by 12 lower-case hex characters.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct OrgId(String);

impl TryFrom<String> for OrgId {
    type Error = IdError;
    fn try_from(raw: String) -> Result<Self, IdError> {
        Self::parse(&raw)
    }
}

impl From<OrgId> for String {
    fn from(org: OrgId) -> String {
        org.0
    }
}

impl OrgId {
    pub fn generate() -> Self {
        Self(format!("o{}", random_hex(6)))
    }

    pub fn parse(raw: &str) -> Result<Self, IdError> {
        let ok = raw.len() == 13
            && raw.starts_with('o')
            && raw[1..]
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase());
        ok.then(|| Self(raw.to_owned())).ok_or(IdError {
            field: "org_id",
            reason: "expected o + 12 hex characters",
        })
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The prefix of every key this organisation owns.
    pub fn pk(&self, rest: &str) -> String {
        format!("ORG#{}#{}", self.0, rest)
    }
}

impl fmt::Display for OrgId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a [`LocalId`] (and a member's user id) is, as the document says it.
pub const LOCAL_ID_PATTERN: &str = "^[A-Za-z0-9_.-]{1,64}$";

/// An identifier minted by us inside an organisation (invoice, integration, rule, ...).
/// Integration ids carry their organisation (`{org}_{hex}`) so a webhook URL routes without a
/// global lookup item.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LocalId(String);

impl LocalId {
    pub fn generate(prefix: &str) -> Self {
        Self(format!("{prefix}{}", random_hex(8)))
    }

    pub fn parse(field: &'static str, raw: &str) -> Result<Self, IdError> {
        let ok = !raw.is_empty()
            && raw.len() <= 64
            && raw
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.');
        ok.then(|| Self(raw.to_owned())).ok_or(IdError {
            field,
            reason: "expected 1-64 characters of A-Z a-z 0-9 _ - .",
        })
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for LocalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An integration id: `{org}_{32 hex}` (128 random bits: a webhook URL that carries no signature,
/// monobank's personal webhook, has the id as its only secret); ids made before carry 16 hex.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct IntegrationId {
    pub org: OrgId,
    pub id: String,
}

impl IntegrationId {
    pub fn generate(org: &OrgId) -> Self {
        Self {
            org: org.clone(),
            id: format!("{}_{}", org, random_hex(16)),
        }
    }

    /// The id's public name, `int_` and 16 hex digits of its SHA-256: what logs, review items
    /// and rows carry where the id itself is a credential (a bank webhook's URL is its only one).
    pub fn digest(&self) -> String {
        integration_digest(&self.id)
    }

    pub fn parse(raw: &str) -> Result<Self, IdError> {
        let err = IdError {
            field: "integration_id",
            reason: "expected {org}_{hex}",
        };
        let (org, rest) = raw.split_once('_').ok_or(err.clone())?;
        let org = OrgId::parse(org).map_err(|_| err.clone())?;
        if !matches!(rest.len(), 16 | 32) || !rest.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(err);
        }
        Ok(Self {
            org,
            id: raw.to_owned(),
        })
    }
}

/// `IntegrationId::digest` of a raw id.
pub fn integration_digest(raw: &str) -> String {
    use sha2::{Digest, Sha256};
    format!("int_{}", &hex::encode(Sha256::digest(raw.as_bytes()))[..16])
}

impl TryFrom<String> for IntegrationId {
    type Error = IdError;
    fn try_from(raw: String) -> Result<Self, IdError> {
        Self::parse(&raw)
    }
}

impl From<IntegrationId> for String {
    fn from(id: IntegrationId) -> String {
        id.id
    }
}

impl fmt::Display for IntegrationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.id)
    }
}

/// One part of a composite key (`ACTIVITY#contact#{entity}#{key}`): `#`, our separator, and `%`,
/// the escape, percent-encoded, so no value can reach into the next part and no two different
/// pairs of parts make the same key.
pub fn key_part(raw: &str) -> std::borrow::Cow<'_, str> {
    if raw.contains(['#', '%']) {
        raw.replace('%', "%25").replace('#', "%23").into()
    } else {
        raw.into()
    }
}

/// An event's identity from its source: a provider payment id, an `Idempotency-Key`, a body hash.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ExternalId(String);

impl ExternalId {
    /// 1 to 255 bytes, without control characters, white space or `#`.
    pub fn parse(field: &'static str, raw: &str) -> Result<Self, IdError> {
        crate::fields::reference(field, raw, crate::fields::KEY_MAX)
            .map(|ok| Self(ok.to_owned()))
            .map_err(|_| IdError {
                field,
                reason: "expected 1-255 bytes without control characters, white space or '#'",
            })
    }

    /// The identity of a payload that carries none of its own: the first 32 hex characters of the
    /// SHA-256 of the raw body.
    pub fn of_body(body: &[u8]) -> Self {
        use sha2::{Digest, Sha256};
        Self(hex::encode(Sha256::digest(body))[..32].to_owned())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ExternalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An event's key inside its organisation, in its one format `KIND:ID`
/// (`payment:stripe:pi_1`): the event item stores it, and notifications, triggers, runs and
/// review items name the event by it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct EventKey(String);

impl EventKey {
    pub fn new(kind: &str, id: &str) -> Self {
        Self(format!("{kind}:{id}"))
    }

    pub fn parse(raw: &str) -> Option<Self> {
        let ok = raw
            .split_once(':')
            .is_some_and(|(k, id)| !k.is_empty() && !id.is_empty());
        ok.then(|| Self(raw.to_owned()))
    }

    /// The part after the kind (`stripe:pi_1`).
    pub fn id(&self) -> &str {
        self.0.split_once(':').map_or("", |(_, id)| id)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for EventKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_parse_back() {
        let org = OrgId::generate();
        assert_eq!(OrgId::parse(org.as_str()), Ok(org.clone()));
        let integration = IntegrationId::generate(&org);
        assert_eq!(IntegrationId::parse(&integration.id), Ok(integration));
    }

    #[test]
    fn foreign_shapes_are_rejected() {
        assert!(OrgId::parse("ORG#x").is_err());
        assert!(IntegrationId::parse("o123456789abc_zz").is_err());
        assert!(ExternalId::parse("key", "").is_err());
        assert!(ExternalId::parse("key", "a\nb").is_err());
        assert!(LocalId::parse("id", "a#b").is_err());
    }

    #[test]
    fn key_parts_cannot_reach_into_the_next_part() {
        let joined = |a: &str, b: &str| format!("{}#{}", key_part(a), key_part(b));
        assert_ne!(joined("k1#u1", "x"), joined("k1", "u1#x"));
        assert_ne!(joined("a%23", "b"), joined("a#", "b"));
        assert_eq!(key_part("pi_1"), "pi_1");
        assert!(ExternalId::parse("payment_id", "k1#u1").is_err());
        assert!(ExternalId::parse("payment_id", &"k".repeat(256)).is_err());
    }

    #[test]
    fn body_identity_is_32_hex_of_sha256() {
        let id = ExternalId::of_body(b"abc");
        assert_eq!(id.as_str(), "ba7816bf8f01cfea414140de5dae2223");
    }
}
