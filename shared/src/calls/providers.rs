//! Call integrations and what each provider posts: Twilio-style status callbacks (form-encoded,
//! `X-Twilio-Signature`) and a generic provider's Standard Webhooks JSON.

use super::CallFields;
use serde::Deserialize;
use std::collections::HashMap;

pub use crate::integrations::calls::{CallProvider, CallSettings};

/// Where a call integration's provider posts, under the public base URL: also the URL Twilio
/// signs, so the api (which tells it) and call-webhook (which verifies) build it the same way.
pub fn webhook_url(public_url: &str, id: &crate::ids::IntegrationId) -> String {
    format!("{}/hooks/{}/calls", public_url.trim_end_matches('/'), id.id)
}

/// What a callback says: the call's fields, or a type this source does not record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Posted {
    Fields(CallFields),
    Ignored(String),
}

/// A Twilio status callback: `CallSid`, `Direction` (`inbound`, `outbound-api`, `outbound-dial`),
/// `From`, `To`, `CallStatus`, `CallDuration`. The peer is `From` for an inbound call, else `To`.
pub fn twilio(body: &[u8]) -> Result<Posted, String> {
    let params: HashMap<String, String> = url::form_urlencoded::parse(body).into_owned().collect();
    let field = |name: &str| {
        params
            .get(name)
            .cloned()
            .ok_or_else(|| format!("{name} is missing"))
    };
    // A call that has not ended is not a call yet, whatever its other fields say.
    let status = field("CallStatus")?;
    if super::CallStatus::PENDING.contains(&status.as_str()) {
        return Ok(Posted::Ignored(status));
    }
    let direction = field("Direction")?;
    let (direction, peer) = if direction == "inbound" {
        ("inbound", field("From")?)
    } else if direction.starts_with("outbound") {
        ("outbound", field("To")?)
    } else {
        return Err(format!(
            "Direction {direction:?} is neither inbound nor outbound"
        ));
    };
    let duration = match params.get("CallDuration") {
        None => 0,
        Some(raw) => raw
            .parse()
            .map_err(|_| "CallDuration is not a number of seconds".to_owned())?,
    };
    Ok(Posted::Fields(CallFields {
        call_id: field("CallSid")?,
        direction: direction.into(),
        peer,
        status,
        duration,
    }))
}

/// A generic provider's call (Standard Webhooks signed JSON); Twilio posts its form fields
/// (`CallSid`, `Direction`, `From`, `To`, `CallStatus`, `CallDuration`) instead
/// (`StandardCall`).
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(as = StandardCall)]
pub struct Envelope {
    #[serde(rename = "type")]
    #[schema(example = "call.completed")]
    kind: String,
    data: Option<CallFields>,
}

/// A generic provider: `{"type": "call.completed", "data": {"call_id", "direction", "peer",
/// "status", "duration"}}`; any other type is ignored.
pub fn standard(body: &[u8]) -> Result<Posted, String> {
    let envelope: Envelope = serde_json::from_slice(body).map_err(|e| {
        format!(
            "not the call JSON: {}",
            crate::fields::plain(&e.to_string())
        )
    })?;
    if envelope.kind != "call.completed" {
        return Ok(Posted::Ignored(envelope.kind));
    }
    envelope
        .data
        .map(Posted::Fields)
        .ok_or_else(|| "call.completed without data".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_twilio_callback_names_the_peer_by_direction() {
        let inbound = b"CallSid=CA1&Direction=inbound&From=%2B14158675310&To=%2B18005551212&CallStatus=no-answer";
        let Ok(Posted::Fields(f)) = twilio(inbound) else {
            panic!("fields");
        };
        assert_eq!(
            (f.direction.as_str(), f.peer.as_str(), f.duration),
            ("inbound", "+14158675310", 0)
        );
        let outbound = b"CallSid=CA2&Direction=outbound-api&From=%2B14158675310&To=%2B18005551212&CallStatus=completed&CallDuration=42";
        let Ok(Posted::Fields(f)) = twilio(outbound) else {
            panic!("fields");
        };
        assert_eq!(
            (f.direction.as_str(), f.peer.as_str(), f.duration),
            ("outbound", "+18005551212", 42)
        );
        assert!(twilio(b"CallSid=CA3&Direction=sideways&CallStatus=completed").is_err());
        assert_eq!(
            twilio(b"CallSid=CA4&Direction=inbound&From=anonymous&CallStatus=ringing"),
            Ok(Posted::Ignored("ringing".into()))
        );
    }

    #[test]
    fn a_generic_provider_posts_call_completed() {
        let body = br#"{"type":"call.completed","data":{"call_id":"c1","direction":"inbound","peer":"+380441234567","status":"busy","duration":0}}"#;
        assert!(matches!(standard(body), Ok(Posted::Fields(f)) if f.status == "busy"));
        assert_eq!(
            standard(br#"{"type":"call.ringing"}"#),
            Ok(Posted::Ignored("call.ringing".into()))
        );
        assert!(standard(b"[]").is_err());
    }

    proptest! {
        #[test]
        fn parsers_never_panic(body in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = twilio(&body);
            let _ = standard(&body);
        }
    }
}
