//! Leads: a website form's submission made into one contact and one deal card, once. The
//! submission is keyed within its integration (`lead:INTEGRATION:SUBMISSION_ID`; without a
//! `submission_id` the signed `webhook-id`), so a form service that sends it again, under the
//! same or a new `webhook-id`, finds it stored. One consistent `BatchGetItem` reads the key and
//! the sender's identities (the same e-mail and phone identities that messages and calls use);
//! one transaction stores the lead, its deal card and, for an unknown sender, its contact.

use crate::consequences::{ActivityLine, Consequence, EntityKind, Fired, Notification, Trigger};
use crate::contacts::{self, Identity, Known};
use crate::deals::{Deal, Stage};
use crate::fields::{self, FieldError, NAME_MAX, REF_MAX, TEXT_MAX};
use crate::ids::{key_part, EventKey, ExternalId, LocalId, OrgId};
use crate::store::item::{Builder, Read};
use crate::store::lists::EventKind;
use crate::store::{
    Answer, Decision, Item, Mismatch, Plan, Seen, Step, Store, StoreError, Written,
};
use crate::time;
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// The stored item's `kind`: one of the event kinds the stream hands to the fan-out.
pub const KIND: &str = "lead";

/// The only type a lead form posts; any other is answered "ignored".
pub const SUBMITTED: &str = "lead.submitted";

/// One submission, parsed and checked at the edge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeadInput {
    pub org: OrgId,
    /// The integration whose submission ids these are.
    pub integration: String,
    pub submission_id: ExternalId,
    pub name: String,
    pub email: Option<String>,
    pub phone: Option<String>,
    pub message: Option<String>,
    pub source: Option<String>,
    pub at: DateTime<Utc>,
}

/// What a form posts as `data`: `name` is required, the rest optional (`Submission`). A field
/// besides these (a form service's tracking or consent fields) is not the lead's and is left
/// unread: it never costs the lead.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[schema(as = Submission)]
pub struct Submitted {
    /// The form's own id of the submission (1 to 255 bytes): its key within the integration;
    /// without it, the signed `webhook-id`.
    #[schema(min_length = 1, max_length = 255)]
    submission_id: Option<String>,
    /// 1 to 200 characters.
    #[schema(min_length = 1, max_length = 200)]
    name: String,
    /// An e-mail address, at most 254 bytes: the contact's identity, compared in lower case.
    #[schema(max_length = 254)]
    email: Option<String>,
    /// E.164 (+ and 8 to 15 digits; spaces, dashes, dots and parentheses dropped).
    #[schema(max_length = 32)]
    phone: Option<String>,
    /// At most 4000 characters.
    #[schema(max_length = 4000)]
    message: Option<String>,
    /// Where the form is (a reference of at most 128 bytes: `website`, `landing-spring`).
    #[schema(max_length = 128)]
    source: Option<String>,
}

/// A form's delivery: `lead.submitted` makes a lead, any other type is ignored (`LeadPayload`).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[schema(as = LeadPayload)]
pub struct Envelope {
    #[serde(rename = "type")]
    #[schema(example = "lead.submitted")]
    kind: String,
    #[schema(value_type = Option<Submitted>)]
    data: Option<serde_json::Value>,
}

/// What a delivery says: a submission, or another type (answered "ignored", nothing written).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Posted {
    Lead(Box<LeadInput>),
    Ignored(String),
}

/// Reads `{"type": "lead.submitted", "data": {"submission_id"?, "name", "email"?, "phone"?,
/// "message"?, "source"?}}`, each field held to its limit (a name of 1 to 200 characters, an
/// e-mail address of at most 254 bytes, a phone in E.164, a message of 4000 characters, a source
/// reference of 128 bytes). `webhook_id` keys a submission without its own id.
pub fn parse(
    org: &OrgId,
    integration: &str,
    webhook_id: &str,
    body: &[u8],
    at: DateTime<Utc>,
) -> Result<Posted, FieldError> {
    let refused = |field: &'static str, reason: String| FieldError { field, reason };
    let envelope: Envelope = serde_json::from_slice(body).map_err(|e| {
        refused(
            "body",
            format!("not the lead JSON: {}", fields::plain(&e.to_string())),
        )
    })?;
    if envelope.kind != SUBMITTED {
        return Ok(Posted::Ignored(envelope.kind));
    }
    let data: Submitted = serde_json::from_value(envelope.data.unwrap_or(Value::Null))
        .map_err(|e| refused("data", fields::plain(&e.to_string())))?;
    let submission = data.submission_id.as_deref().unwrap_or(webhook_id);
    let submission_id = ExternalId::parse("submission_id", submission)
        .map_err(|e| refused("submission_id", e.reason.into()))?;
    let optional = |raw: Option<String>, check: &dyn Fn(&str) -> Result<String, FieldError>| {
        raw.filter(|v| !v.trim().is_empty())
            .map(|v| check(&v))
            .transpose()
    };
    Ok(Posted::Lead(Box::new(LeadInput {
        org: org.clone(),
        integration: integration.to_owned(),
        submission_id,
        // What a customer typed: its reordering marks (an RTL keyboard's U+200F) dropped and
        // its line breaks a space, not a reason to lose the lead.
        name: fields::line("name", &fields::one_line(&data.name), NAME_MAX)?.to_owned(),
        email: optional(data.email, &|v| contacts::email("email", v))?,
        phone: optional(data.phone, &|v| contacts::e164("phone", v))?,
        message: optional(data.message, &|v| {
            fields::text("message", v, TEXT_MAX).map(str::to_owned)
        })?,
        source: optional(data.source, &|v| {
            fields::reference("source", v, REF_MAX).map(str::to_owned)
        })?,
        at,
    })))
}

impl LeadInput {
    pub fn key(&self) -> EventKey {
        EventKey::new(
            KIND,
            &format!("{}:{}", self.integration, self.submission_id),
        )
    }

    fn pk(&self) -> String {
        self.org.pk(&format!(
            "LEAD#{}#{}",
            key_part(&self.integration),
            key_part(self.submission_id.as_str())
        ))
    }

    /// What the submission says: the same id with other fields is another payload.
    pub fn fingerprint(&self) -> String {
        let canonical = json!([self.name, self.email, self.phone, self.message, self.source]);
        hex::encode(Sha256::digest(canonical.to_string()))[..32].to_owned()
    }

    /// The sender's identities, e-mail first.
    fn identities(&self) -> Vec<Identity> {
        let email = self.email.as_deref().map(Identity::email);
        let phone = self.phone.as_deref().map(Identity::phone);
        email.into_iter().chain(phone).collect()
    }
}

/// A stored lead: the item the stream hands to the fan-out, read back through this type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lead {
    pub input: LeadInput,
    pub contact_id: String,
    pub deal_id: String,
    pub fingerprint: String,
}

impl Lead {
    pub fn key(&self) -> EventKey {
        self.input.key()
    }

    pub fn to_item(&self) -> Item {
        let i = &self.input;
        Builder::new(&i.pk(), KIND, i.org.as_str())
            .str("key", self.key().as_str())
            .str("integration_id", &i.integration)
            .str("submission_id", i.submission_id.as_str())
            .str("name", &i.name)
            .opt_str("email", i.email.clone())
            .opt_str("phone", i.phone.clone())
            .opt_str("message", i.message.clone())
            .opt_str("source", i.source.clone())
            .str("contact_id", &self.contact_id)
            .str("deal_id", &self.deal_id)
            .str("fingerprint", &self.fingerprint)
            .time("at", i.at)
            .list(
                &i.org.pk("LEADS"),
                &format!("{}#{}", time::format(i.at), self.key()),
            )
            .on_events(&i.org, EventKind::Lead, (i.at, self.key().as_str()))
            .build()
    }

    pub fn from_item(item: &Item) -> Result<Self, StoreError> {
        let bad = |e: crate::ids::IdError| crate::store::item::malformed(item, &e.to_string());
        let text = |name: &str| item.opt_str(name).map(str::to_owned);
        Ok(Self {
            input: LeadInput {
                org: OrgId::parse(item.str_of("org")?).map_err(bad)?,
                integration: item.str_of("integration_id")?.to_owned(),
                submission_id: ExternalId::parse("submission_id", item.str_of("submission_id")?)
                    .map_err(bad)?,
                name: item.str_of("name")?.to_owned(),
                email: text("email"),
                phone: text("phone"),
                message: text("message"),
                source: text("source"),
                at: item.time_of("at")?,
            },
            contact_id: item.str_of("contact_id")?.to_owned(),
            deal_id: item.str_of("deal_id")?.to_owned(),
            fingerprint: item.str_of("fingerprint")?.to_owned(),
        })
    }

    /// An activity line on the contact, a notification to every member of the team, and
    /// `lead.created` for the rules: each keyed by the lead's key.
    pub fn consequences(&self) -> Vec<Consequence> {
        let i = &self.input;
        let via = i.source.as_deref().unwrap_or("a form");
        let text = format!("New lead from {via}: {}", i.name);
        vec![
            ActivityLine {
                org: i.org.clone(),
                entity_kind: EntityKind::Contact,
                entity_id: self.contact_id.clone(),
                key: self.key().to_string(),
                kind: "lead".into(),
                text: text.clone(),
                at: i.at,
                money: None,
            }
            .into(),
            Notification {
                org: i.org.clone(),
                key: self.key(),
                recipient: None,
                text,
                at: i.at,
            }
            .into(),
            Fired {
                org: i.org.clone(),
                trigger: Trigger::LeadCreated,
                event_key: self.key(),
                at: i.at,
                context: json!({"deal_id": self.deal_id, "contact_id": self.contact_id,
                    "name": i.name, "email": i.email, "phone": i.phone, "source": i.source}),
            }
            .into(),
        ]
    }
}

impl Answer for Lead {
    /// `{"deal_id", "contact_id"}`: the card and the contact the first delivery made.
    fn answer(&self) -> Value {
        let answer = LeadAnswer {
            duplicate: false,
            key: self.key().as_str().to_owned(),
            deal_id: self.deal_id.clone(),
            contact_id: self.contact_id.clone(),
        };
        serde_json::to_value(answer).expect("a lead's answer serialises")
    }
}

/// The card and the contact the submission made (a repeat: the first delivery's, with
/// `duplicate`, set by the arrival: `Written::answer`).
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct LeadAnswer {
    pub duplicate: bool,
    /// `lead:INTEGRATION_ID:SUBMISSION_ID`.
    pub key: String,
    pub deal_id: String,
    pub contact_id: String,
}

/// How recording a submission ended: stored now, or the lead stored under its key.
pub type Recorded = Written<Lead>;

/// Stores a submission once: its key and the sender's identities read together, then the lead,
/// its deal card and (for an unknown sender) its contact in one transaction.
pub async fn record(store: &Store, input: &LeadInput) -> Result<Recorded, StoreError> {
    store.write(&mut RecordLead { input }, input.at).await
}

struct RecordLead<'a> {
    input: &'a LeadInput,
}

impl Decision for RecordLead<'_> {
    type Out = Lead;
    type Error = StoreError;

    fn keys(&self) -> Vec<String> {
        let org = &self.input.org;
        let identities = self.input.identities();
        let mut keys = vec![self.input.pk()];
        keys.extend(identities.iter().map(|i| contacts::identity_pk(org, i)));
        keys
    }

    fn decide(&self, seen: &Seen, _: DateTime<Utc>) -> Result<Plan<Lead>, StoreError> {
        let input = self.input;
        if let Some(item) = seen.stored() {
            let stored = Lead::from_item(item)?;
            let s = &stored.input;
            let mismatch = Mismatch::of(
                &stored.fingerprint,
                &input.fingerprint(),
                &[
                    ("name", s.name != input.name),
                    ("email", s.email != input.email),
                    ("phone", s.phone != input.phone),
                    ("message", s.message != input.message),
                ],
            );
            return Ok(Plan::Done(Written::again(stored, mismatch)));
        }
        // The first identity stored names the contact; a sender nobody knows is a new lead
        // contact with every identity the form gave.
        let identities = self.input.identities();
        let known = (1..=identities.len()).find_map(|i| seen.get(i));
        let (known, mut steps): (Known, Vec<Step>) = match known {
            Some(item) => (contacts::known(item)?, Vec::new()),
            None => contacts::lead_steps_for(&input.org, &identities, &input.name, input.at),
        };
        let deal = Deal {
            org: input.org.clone(),
            id: LocalId::generate("dl_"),
            title: input.name.clone(),
            contact_id: known.contact_id.clone(),
            stage: Stage::New,
            source: input.key().to_string(),
            created_at: input.at,
            updated_at: input.at,
            version: 1,
        };
        let lead = Lead {
            input: input.clone(),
            contact_id: known.contact_id,
            deal_id: deal.id.as_str().to_owned(),
            fingerprint: input.fingerprint(),
        };
        steps.insert(0, Step::PutNew(lead.to_item()));
        steps.insert(1, Step::PutNew(deal.to_item()));
        steps.extend(self.lookalike(seen, &identities, &lead)?.map(Step::PutNew));
        Ok(Plan::Write { steps, out: lead })
    }
}

impl RecordLead<'_> {
    /// A sender whose e-mail belongs to one contact and whose phone to another: the card goes
    /// to the first, and a person is asked whether the two are one (`possible_same_contact`,
    /// in the lead's own transaction, so filed once). Never merged.
    fn lookalike(
        &self,
        seen: &Seen,
        identities: &[Identity],
        lead: &Lead,
    ) -> Result<Option<Item>, StoreError> {
        let mut named: Vec<Value> = Vec::new();
        for (i, identity) in identities.iter().enumerate() {
            let Some(item) = seen.get(i + 1) else {
                continue;
            };
            let contact = contacts::known(item)?.contact_id;
            if named.iter().all(|n| n["contact_id"] != contact.as_str()) {
                named.push(json!({"contact_id": contact, "by": identity.channel}));
            }
        }
        if named.len() < 2 {
            return Ok(None);
        }
        let input = self.input;
        let item = crate::review::ReviewItem {
            org: input.org.clone(),
            kind: crate::review::Kind::Lead,
            reason: crate::review::Reason::PossibleSameContact,
            key: lead.key().as_str().to_owned(),
            at: input.at,
            detail: json!({
                "name": input.name, "email": input.email, "phone": input.phone,
                "contacts": named, "contact_id": lead.contact_id, "deal_id": lead.deal_id,
            }),
        };
        Ok(Some(item.to_item()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn posted(body: &str) -> Result<Posted, FieldError> {
        parse(
            &OrgId::parse("o0123456789ab").unwrap(),
            "o0123456789ab_00ff",
            "msg_1",
            body.as_bytes(),
            chrono::DateTime::UNIX_EPOCH,
        )
    }

    fn lead(body: &str) -> LeadInput {
        match posted(body) {
            Ok(Posted::Lead(input)) => *input,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_submission_is_keyed_by_its_id_within_the_integration_else_by_the_webhook_id() {
        let with_id = lead(
            r#"{"type":"lead.submitted","data":{"submission_id":"s-1","name":" Olena ","email":"Olena@Example.com","phone":"+380 44 123 45 67"}}"#,
        );
        assert_eq!(with_id.key().as_str(), "lead:o0123456789ab_00ff:s-1");
        assert_eq!(with_id.name, "Olena");
        assert_eq!(with_id.phone.as_deref(), Some("+380441234567"));
        let identities = with_id.identities();
        assert_eq!(identities[0], Identity::email("olena@example.com"));
        let without = lead(r#"{"type":"lead.submitted","data":{"name":"Olena"}}"#);
        assert_eq!(without.key().as_str(), "lead:o0123456789ab_00ff:msg_1");
        assert!(without.identities().is_empty());
    }

    #[test]
    fn other_types_are_ignored_and_a_bad_field_is_named() {
        assert_eq!(
            posted(r#"{"type":"lead.viewed","data":{}}"#).unwrap(),
            Posted::Ignored("lead.viewed".into())
        );
        for (body, field) in [
            (r#"{"type":"lead.submitted","data":{"name":""}}"#, "name"),
            (
                r#"{"type":"lead.submitted","data":{"name":"A","email":"not-an-address"}}"#,
                "email",
            ),
            (
                r#"{"type":"lead.submitted","data":{"name":"A","phone":"12"}}"#,
                "phone",
            ),
            (r#"{"type":"lead.submitted","data":{"nome":"A"}}"#, "data"),
        ] {
            assert_eq!(posted(body).unwrap_err().field, field, "{body}");
        }
    }

    #[test]
    fn a_stored_lead_reads_back_as_itself_with_its_consequences_keyed_by_it() {
        let input = lead(
            r#"{"type":"lead.submitted","data":{"submission_id":"s-1","name":"Olena","source":"website"}}"#,
        );
        let stored = Lead {
            fingerprint: input.fingerprint(),
            input,
            contact_id: "ct_1".into(),
            deal_id: "dl_1".into(),
        };
        assert_eq!(Lead::from_item(&stored.to_item()).unwrap(), stored);
        let keys: Vec<String> = stored.consequences().iter().map(Consequence::key).collect();
        assert_eq!(
            keys,
            [
                "activity:contact:ct_1:lead:o0123456789ab_00ff:s-1",
                "notification:lead:o0123456789ab_00ff:s-1",
                "trigger:lead.created:lead:o0123456789ab_00ff:s-1"
            ]
        );
    }
}
