//! Calls from the browser softphone, and contacts: the CRM's side of the channels.

use crate::Ctx;
use firmspace::calls::{self, CallFields, Checked};
use firmspace::contacts::{self, Created, NewContact};
use firmspace::fields::FieldError;
use firmspace::http::{body_bytes, json_response, parse_json, ApiError};
use firmspace::orgs;
use firmspace::review::Kind;
use firmspace::store::Store;
use firmspace::webhook::answer::{tell, Recorded};
use lambda_http::{Body, Response};
use serde::Deserialize;
use serde_json::{json, Value};
use utoipa::ToSchema;

/// The softphone's report of a call: stored once under `call:CALL_ID:DIRECTION`; 201 the first
/// time, 200 with `duplicate: true` and the stored call after.
pub async fn create(store: &Store, ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let body: CallFields = parse_json(body_bytes(ctx.req))?;
    let input = match body.check(&ctx.org, "softphone", ctx.now)? {
        Checked::Call(input) => input,
        Checked::Pending(status) => {
            return Ok(json_response(
                200,
                &json!({"status": "ignored", "call_status": status}),
            ))
        }
    };
    let written = calls::record(store, &input).await?;
    let status = if written.is_new() { 201 } else { 200 };
    let recorded = Recorded::one(input.key(), written);
    let told = tell(store, &ctx.org, Kind::Call, &recorded, json!({}), ctx.now).await?;
    Ok(json_response(status, &told.answer))
}

/// The organisation's calls, newest first.
pub async fn list(store: &Store, ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let items: Vec<Value> = calls::list(store, &ctx.org)
        .await?
        .iter()
        .map(calls::Call::to_json)
        .collect();
    Ok(json_response(200, &json!({ "items": items })))
}

#[derive(Deserialize, ToSchema)]
pub struct NewContactBody {
    /// 1-200 characters.
    name: String,
    /// E.164; one contact per number.
    phone: Option<String>,
    /// The member told about this contact's calls and messages.
    owner: Option<String>,
}

/// A manual contact; a phone that already belongs to a contact is a 409 naming it.
pub async fn create_contact(store: &Store, ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let body: NewContactBody = parse_json(body_bytes(ctx.req))?;
    let new = NewContact::manual(&body.name, body.phone.as_deref(), body.owner.as_deref())?;
    // The owner is told about this contact's missed calls: it must be someone who reads them.
    if let Some(owner) = &new.owner {
        if !orgs::is_member(store, &ctx.org, owner).await? {
            return Err(FieldError {
                field: "owner",
                reason: "is not a member of this organisation (POST /api/members first)".into(),
            }
            .into());
        }
    }
    match contacts::create(store, &ctx.org, new, ctx.now).await? {
        Created::New(contact) => Ok(json_response(201, &contact.to_json())),
        Created::Taken(contact_id) => Err(ApiError::new(
            409,
            "phone_in_use",
            format!("the phone belongs to contact {contact_id}"),
        )),
    }
}

/// The organisation's contacts, newest first.
pub async fn list_contacts(store: &Store, ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let items: Vec<Value> = contacts::list(store, &ctx.org)
        .await?
        .iter()
        .map(contacts::Contact::to_json)
        .collect();
    Ok(json_response(200, &json!({ "items": items })))
}
