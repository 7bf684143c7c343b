//! Messenger integrations and conversations: the CRM's side of messages.

use crate::Ctx;
use firmspace::http::{json_response, ApiError};
use firmspace::messages::media::Files;
use firmspace::messages::{self, Message};
use firmspace::store::Store;
use lambda_http::{Body, Response};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::Duration;

/// How long a listed attachment's URL reads its file.
const URL_TTL: Duration = Duration::from_secs(15 * 60);

/// The organisation's conversations, the latest message first.
pub async fn list(store: &Store, ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let org = &ctx.org;
    let read = |limit, cursor: Option<String>| async move {
        messages::conversations_page(store, org, limit, cursor.as_deref()).await
    };
    let view = messages::Conversation::to_json;
    crate::paging::answer(ctx.req, "/api/conversations", read, view).await
}

/// A conversation's messages in time order; each stored attachment with a presigned URL.
pub async fn list_messages(
    store: &Store,
    files: Option<&Files>,
    ctx: &Ctx<'_>,
    id: &str,
) -> Result<Response<Body>, ApiError> {
    if messages::conversation(store, &ctx.org, id).await?.is_none() {
        return Err(ApiError::not_found("conversation"));
    }
    let found = messages::messages(store, &ctx.org, id).await?;
    let mut urls = HashMap::new();
    if let Some(files) = files {
        for (object, claimed) in found
            .iter()
            .flat_map(|m| &m.attachments)
            .filter_map(|a| Some((a.object.as_ref()?, &a.content_type)))
        {
            if let Some(url) = files.presign(object, claimed, URL_TTL).await {
                urls.insert(object.clone(), url);
            }
        }
    }
    let items: Vec<Value> = found.iter().map(|m: &Message| m.to_json(&urls)).collect();
    Ok(json_response(200, &json!({ "items": items })))
}
