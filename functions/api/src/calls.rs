//! Calls from the browser softphone, and contacts: the CRM's side of the channels.

use crate::route::{doc, Answer, Asked, FromRoute, Method, Op, OrgOp, Route, CREATED};
use crate::Ctx;
use firmspace::calls::{self, CallFields};
use firmspace::commands::answers::CallRecorded;
use firmspace::commands::records::{CreateContact, RecordCall};
use firmspace::contacts::{self};
use firmspace::http::ApiError;
use firmspace::store::lists::EventKind;
use firmspace::store::Store;
use lambda_http::{Body, Response};
use serde::Deserialize;
use utoipa::ToSchema;

/// The softphone's report of a call: stored once under `call:CALL_ID:DIRECTION`; 201 the first
/// time, 200 with `duplicate: true` and the stored call after.
impl FromRoute for RecordCall {
    const SPENDS: Option<EventKind> = Some(EventKind::Call);

    /// A call stored now, not a report of one that has not ended.
    fn stored_now(answer: &CallRecorded) -> bool {
        matches!(answer, CallRecorded::Call(call) if !call.is_repeat())
    }
    const ROUTES: &'static [Route] = &[
            Route {
                method: Method::Post,
                path: "/api/calls",
                op: Op::Org(OrgOp::CreateCall),
                summary: "A call from the browser softphone, stored once under call:CALL_ID:DIRECTION",
                params: &[],
                body: Some(doc::<CallFields>),
                ok: &[
                    (201, "the first report of this call"),
                    (200, "a repeat (`duplicate: true`, the stored call), or a status before the end (`status: ignored`)"),
                ],
                answer: Answer::Performed,
                errors: &[(
                    400,
                    "`malformed`, `invalid_field` (`call_id` 1-255 bytes, `direction`, `peer` in \
                     E.164, `status`, `duration` 0-86400)",
                )],
            },
    ];

    async fn from_route(asked: &Asked<'_>) -> Result<Self, ApiError> {
        let call: CallFields = asked.body()?;
        Ok(Self(Box::new(call)))
    }
}

/// The organisation's calls, newest first.
pub async fn list(store: &Store, ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let org = &ctx.org;
    let read = |limit, cursor: Option<String>| async move {
        calls::page(store, org, limit, cursor.as_deref()).await
    };
    crate::paging::answer(ctx.req, "/api/calls", read, calls::Call::to_json).await
}

#[derive(Deserialize, ToSchema)]
pub struct NewContactBody {
    /// 1-200 characters.
    #[schema(min_length = 1, max_length = 200)]
    name: String,
    /// E.164; one contact per number.
    phone: Option<String>,
    /// The member told about this contact's calls and messages (a member's id: `POST
    /// /api/members`; 1 to 128 bytes).
    #[schema(
        min_length = 1,
        max_length = 128,
        pattern = "^[^\\s#\\x00-\\x1f\\x7f-\\x9f\\uFFFE\\uFFFF]+$"
    )]
    owner: Option<String>,
}

/// A manual contact; a phone that already belongs to a contact is a 409 naming it.
impl FromRoute for CreateContact {
    const ROUTES: &'static [Route] = &[Route {
        method: Method::Post,
        path: "/api/contacts",
        op: Op::Org(OrgOp::CreateContact),
        summary: "A contact; its phone (E.164) finds it when it calls or writes",
        params: &[],
        body: Some(doc::<NewContactBody>),
        ok: CREATED,
        answer: Answer::Performed,
        errors: &[
            (
                400,
                "`malformed`, `invalid_field` (`name`, `phone`, `owner`)",
            ),
            (409, "`phone_in_use`: the phone belongs to another contact"),
        ],
    }];

    async fn from_route(asked: &Asked<'_>) -> Result<Self, ApiError> {
        let body: NewContactBody = asked.body()?;
        Ok(Self {
            name: body.name,
            phone: body.phone,
            owner: body.owner,
        })
    }
}

/// The organisation's contacts, newest first.
pub async fn list_contacts(store: &Store, ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let org = &ctx.org;
    let read = |limit, cursor: Option<String>| async move {
        contacts::page(store, org, limit, cursor.as_deref()).await
    };
    crate::paging::answer(ctx.req, "/api/contacts", read, contacts::Contact::to_json).await
}
