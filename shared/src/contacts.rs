//! Contacts and the lead filter. A contact is found by a channel identity (a phone number in
//! E.164; later a messenger's user id): one `IDENTITY#{channel}#{id}` item names the contact that
//! owns it. An unknown sender becomes one lead contact, written in one transaction with its
//! identity item under `attribute_not_exists`: however often and however concurrently the same
//! sender arrives, one identity item wins and every other attempt reads its contact.

use crate::fields::{self, FieldError};
use crate::ids::{key_part, LocalId, OrgId};
use crate::store::item::{Builder, Read};
use crate::store::{Decision, Index, Item, Plan, Seen, Step, Store, StoreError, Written};
use crate::time;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How a contact came to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ContactSource {
    /// Created through the API.
    Manual,
    /// Created from an unknown sender or caller.
    Lead,
}

/// An identity on a channel: the way a sender is recognised.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// `phone`, later `telegram`, ...
    pub channel: &'static str,
    pub id: String,
}

impl Identity {
    pub fn phone(e164: &str) -> Self {
        Self {
            channel: "phone",
            id: e164.to_owned(),
        }
    }

    /// An e-mail address, compared in lower case.
    pub fn email(address: &str) -> Self {
        Self {
            channel: "email",
            id: address.to_lowercase(),
        }
    }

    fn pk(&self, org: &OrgId) -> String {
        org.pk(&format!("IDENTITY#{}#{}", self.channel, key_part(&self.id)))
    }
}

/// The longest e-mail address (RFC 5321's path limit).
pub const EMAIL_MAX: usize = 254;

/// An e-mail address as a form gives it: one `@` between a local part and a domain with a dot,
/// at most 254 bytes, no white space or control characters; trimmed.
pub fn email(field: &'static str, raw: &str) -> Result<String, FieldError> {
    let address = raw.trim();
    let refused = || FieldError {
        field,
        reason: format!("must be an e-mail address (local@domain.tld, at most {EMAIL_MAX} bytes)"),
    };
    let (local, domain) = address.split_once('@').ok_or_else(refused)?;
    let clean = !address
        .chars()
        .any(|c| c.is_whitespace() || fields::forbidden(c));
    let shaped = !local.is_empty()
        && !domain.contains('@')
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.');
    (clean && shaped && address.len() <= EMAIL_MAX)
        .then(|| address.to_owned())
        .ok_or_else(refused)
}

/// A contact as every answer shows it: the type the answers are made of and the OpenAPI
/// document describes (`Contact`).
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Contact)]
pub struct ContactView {
    #[schema(example = "ct_0123456789abcdef")]
    pub contact_id: String,
    pub name: String,
    pub phones: Vec<String>,
    pub emails: Vec<String>,
    pub owner: Option<String>,
    pub source: ContactSource,
    #[schema(format = DateTime)]
    pub created_at: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Contact {
    pub org: OrgId,
    pub id: LocalId,
    pub name: String,
    pub phones: Vec<String>,
    pub emails: Vec<String>,
    /// The member who is told about this contact's calls and messages; the team when none.
    pub owner: Option<String>,
    pub source: ContactSource,
    pub created_at: DateTime<Utc>,
}

fn contact_pk(org: &OrgId, id: &str) -> String {
    org.pk(&format!("CONTACT#{id}"))
}

impl Contact {
    fn to_item(&self) -> Item {
        let mut item = Builder::new(
            &contact_pk(&self.org, self.id.as_str()),
            "contact",
            self.org.as_str(),
        )
        .str("contact_id", self.id.as_str())
        .str("name", &self.name)
        .opt_str("owner", self.owner.clone())
        .tag("source", &self.source)
        .time("created_at", self.created_at)
        .list(
            &self.org.pk("CONTACTS"),
            &format!("{}#{}", time::format(self.created_at), self.id),
        )
        .build();
        for (name, values) in [("phones", &self.phones), ("emails", &self.emails)] {
            if !values.is_empty() {
                item.insert(
                    name.into(),
                    aws_sdk_dynamodb::types::AttributeValue::Ss(values.clone()),
                );
            }
        }
        item
    }

    fn from_item(org: &OrgId, item: &Item) -> Result<Self, StoreError> {
        let id = LocalId::parse("contact_id", item.str_of("contact_id")?).map_err(|e| {
            StoreError::Malformed {
                pk: item.opt_str("pk").unwrap_or_default().to_owned(),
                detail: e.to_string(),
            }
        })?;
        Ok(Self {
            org: org.clone(),
            id,
            name: item.str_of("name")?.to_owned(),
            phones: strings(item, "phones"),
            emails: strings(item, "emails"),
            owner: item.opt_str("owner").map(str::to_owned),
            source: item.tag_of("source")?,
            created_at: item.time_of("created_at")?,
        })
    }

    /// The contact as every answer shows it.
    pub fn view(&self) -> ContactView {
        ContactView {
            contact_id: self.id.as_str().to_owned(),
            name: self.name.clone(),
            phones: self.phones.clone(),
            emails: self.emails.clone(),
            owner: self.owner.clone(),
            source: self.source,
            created_at: time::format(self.created_at),
        }
    }

    pub fn to_json(&self) -> Value {
        serde_json::to_value(self.view()).expect("a contact's view serialises")
    }
}

/// A string-set attribute, empty when absent.
fn strings(item: &Item, name: &str) -> Vec<String> {
    item.get(name)
        .and_then(|v| v.as_ss().ok())
        .cloned()
        .unwrap_or_default()
}

/// A phone number as E.164: `+`, then 8 to 15 digits, the first not 0. White space around it,
/// and spaces, dashes, dots and parentheses between the digits are dropped.
pub fn e164(field: &'static str, raw: &str) -> Result<String, FieldError> {
    let refused = || FieldError {
        field,
        reason: "must be a phone number in E.164 (+ and 8 to 15 digits)".into(),
    };
    let digits: String = raw
        .trim()
        .strip_prefix('+')
        .ok_or_else(refused)?
        .chars()
        .filter(|c| !matches!(c, ' ' | '-' | '.' | '(' | ')'))
        .collect();
    let ok = (8..=15).contains(&digits.len())
        && digits.bytes().all(|b| b.is_ascii_digit())
        && !digits.starts_with('0');
    ok.then(|| format!("+{digits}")).ok_or_else(refused)
}

/// What a new contact holds, checked.
#[derive(Clone, Debug)]
pub struct NewContact {
    pub name: String,
    pub phone: Option<String>,
    pub owner: Option<String>,
    pub source: ContactSource,
}

impl NewContact {
    /// A manual contact from the API's fields, each held to its limit.
    pub fn manual(
        name: &str,
        phone: Option<&str>,
        owner: Option<&str>,
    ) -> Result<Self, FieldError> {
        Ok(Self {
            name: fields::name("name", name, fields::NAME_MAX)?.to_owned(),
            phone: phone.map(|p| e164("phone", p)).transpose()?,
            owner: fields::optional(owner, |o| fields::reference("owner", o, fields::REF_MAX))?,
            source: ContactSource::Manual,
        })
    }
}

/// Why a contact was not created.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The phone already belongs to this contact.
    #[error("the phone belongs to contact {0}")]
    PhoneTaken(String),
}

/// A contact made by hand, as a decision: the identity item of its phone read, and the contact
/// put with it in one transaction; a phone that belongs to a contact already is refused,
/// naming that contact (a lost race reads again and finds it).
pub fn creating(org: &OrgId, new: NewContact, now: DateTime<Utc>) -> Creating {
    let contact = Contact {
        org: org.clone(),
        id: LocalId::generate("ct_"),
        name: new.name,
        phones: new.phone.iter().cloned().collect(),
        emails: Vec::new(),
        owner: new.owner,
        source: new.source,
        created_at: now,
    };
    let identity = new
        .phone
        .map(|phone| identity_item(org, &Identity::phone(&phone), &contact));
    Creating { contact, identity }
}

pub struct Creating {
    contact: Contact,
    identity: Option<Item>,
}

impl Creating {
    fn identity_pk(&self) -> Option<String> {
        self.identity
            .as_ref()
            .and_then(|i| i.opt_str("pk"))
            .map(str::to_owned)
    }
}

impl Decision for Creating {
    type Out = Contact;
    type Error = CreateError;

    /// The phone's identity item; a contact without a phone reads its own new key.
    fn keys(&self) -> Vec<String> {
        vec![self
            .identity_pk()
            .unwrap_or_else(|| contact_pk(&self.contact.org, self.contact.id.as_str()))]
    }

    fn decide(&self, seen: &Seen, _: DateTime<Utc>) -> Result<Plan<Contact>, CreateError> {
        match (seen.stored(), &self.identity) {
            (Some(holder), Some(_)) => {
                return Err(CreateError::PhoneTaken(
                    holder.str_of("contact_id")?.to_owned(),
                ))
            }
            // Its own key, written by an earlier round of this write.
            (Some(_), None) => {
                return Ok(Plan::Done(Written::Repeat {
                    stored: self.contact.clone(),
                }))
            }
            (None, _) => {}
        }
        let mut steps: Vec<Step> = self.identity.iter().cloned().map(Step::PutNew).collect();
        steps.push(Step::PutNew(self.contact.to_item()));
        Ok(Plan::Write {
            steps,
            out: self.contact.clone(),
        })
    }
}

fn identity_item(org: &OrgId, identity: &Identity, contact: &Contact) -> Item {
    Builder::new(&identity.pk(org), "identity", org.as_str())
        .str("channel", identity.channel)
        .str("identity", &identity.id)
        .str("contact_id", contact.id.as_str())
        .opt_str("owner", contact.owner.clone())
        .build()
}

/// The contact a sender belongs to: who owns it, and its id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Known {
    pub contact_id: String,
    pub owner: Option<String>,
}

impl Known {
    fn of(item: &Item) -> Result<Self, StoreError> {
        Ok(Self {
            contact_id: item.str_of("contact_id")?.to_owned(),
            owner: item.opt_str("owner").map(str::to_owned),
        })
    }
}

/// The identity's key, for a caller that reads it in one batch with other keys.
pub fn identity_pk(org: &OrgId, identity: &Identity) -> String {
    identity.pk(org)
}

/// Reads a stored identity item.
pub fn known(item: &Item) -> Result<Known, StoreError> {
    Known::of(item)
}

/// The steps that make `name` a lead contact for `identity`: its identity item (put only if
/// new) and the contact. Run them in the transaction that stores the event, so an event and
/// its lead are written together or not at all; a refusal of the first step means another
/// arrival made the lead first: read it again.
pub fn lead_steps(
    org: &OrgId,
    identity: &Identity,
    name: &str,
    now: DateTime<Utc>,
) -> (Known, Vec<Step>) {
    lead_steps_for(org, std::slice::from_ref(identity), name, now)
}

/// A lead contact's name as a sender gave it, as a name holds it: one line, without the marks
/// that reorder what follows them, at most [`fields::NAME_MAX`] characters; a sender that gave
/// none (or only such marks) is named by its first identity (its number, its id).
fn lead_name(given: &str, identities: &[Identity]) -> String {
    let line = fields::one_line(given);
    let name: String = line.trim().chars().take(fields::NAME_MAX).collect();
    match name.trim().is_empty() {
        false => name.trim().to_owned(),
        true => identities
            .first()
            .map_or_else(|| "unknown".to_owned(), |i| i.id.clone()),
    }
}

/// `lead_steps` for a sender known by several identities (a form's e-mail and phone): each
/// identity item, then the contact. With none, the contact alone.
pub fn lead_steps_for(
    org: &OrgId,
    identities: &[Identity],
    name: &str,
    now: DateTime<Utc>,
) -> (Known, Vec<Step>) {
    let on = |channel: &str| -> Vec<String> {
        identities
            .iter()
            .filter(|i| i.channel == channel)
            .map(|i| i.id.clone())
            .collect()
    };
    let contact = Contact {
        org: org.clone(),
        id: LocalId::generate("ct_"),
        name: lead_name(name, identities),
        phones: on("phone"),
        emails: on("email"),
        owner: None,
        source: ContactSource::Lead,
        created_at: now,
    };
    let mut steps: Vec<Step> = identities
        .iter()
        .map(|identity| Step::PutNew(identity_item(org, identity, &contact)))
        .collect();
    steps.push(Step::PutNew(contact.to_item()));
    (
        Known {
            contact_id: contact.id.as_str().to_owned(),
            owner: None,
        },
        steps,
    )
}

/// The organisation's contacts, newest first.
pub async fn list(store: &Store, org: &OrgId) -> Result<Vec<Contact>, StoreError> {
    Ok(page(store, org, 500, None).await?.0)
}

/// A page of the organisation's contacts, newest first, and the next page's cursor while
/// more remain.
pub async fn page(
    store: &Store,
    org: &OrgId,
    limit: i32,
    cursor: Option<&str>,
) -> Result<(Vec<Contact>, Option<String>), StoreError> {
    let read = |item: &Item| Contact::from_item(org, item);
    store
        .newest_page((Index::Lists, &org.pk("CONTACTS")), (limit, cursor), read)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn phone_numbers_become_e164() {
        assert_eq!(
            e164("peer", "+380 (44) 123-45-67").unwrap(),
            "+380441234567"
        );
        assert_eq!(e164("peer", "+14158675310").unwrap(), "+14158675310");
        // As a form gives it: space around it.
        assert_eq!(e164("phone", " +380441234567 ").unwrap(), "+380441234567");
        for bad in [
            "380441234567",
            "+0441234567",
            "+12",
            "+1234567890123456",
            "+1415abc5310",
            "",
            "+",
        ] {
            assert!(e164("peer", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_senders_name_is_one_line_of_a_name_or_its_identity() {
        let phone = [Identity::phone("+380441234567")];
        assert_eq!(lead_name("Ta\u{202E}ras\nK", &phone), "Taras K");
        assert_eq!(lead_name(" \u{200F} ", &phone), "+380441234567");
        assert_eq!(lead_name("", &phone), "+380441234567");
        assert_eq!(
            lead_name(&"ю".repeat(300), &phone).chars().count(),
            fields::NAME_MAX
        );
    }

    #[test]
    fn an_address_holds_nothing_a_queue_refuses() {
        assert_eq!(
            email("email", " Olena@example.com ").unwrap(),
            "Olena@example.com"
        );
        for bad in [
            "a\u{FFFF}@x.com",
            "a@x\u{FFFE}.com",
            "a\u{7}@x.com",
            "a b@x.com",
        ] {
            assert!(email("email", bad).is_err(), "{bad:?}");
        }
    }

    proptest! {
        #[test]
        fn an_accepted_number_is_plus_and_digits(raw in "\\PC{0,30}") {
            if let Ok(n) = e164("peer", &raw) {
                prop_assert!(n.starts_with('+') && n[1..].bytes().all(|b| b.is_ascii_digit()));
            }
        }
    }
}
