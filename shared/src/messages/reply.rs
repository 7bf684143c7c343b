//! A text sent back through a conversation's channel: Telegram's `sendMessage`, WhatsApp's
//! `POST /{phone_number_id}/messages`. Neither takes an idempotency key, so what happened is
//! classified and an unclear outcome is never sent again blindly.

use super::media::Apis;
use super::providers::MessageSettings;
use super::Conversation;
use secrecy::ExposeSecret;
use serde_json::{json, Value};

/// What one send tells.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Replied {
    /// Sent; the channel's id of the new message.
    Sent(String),
    /// Certainly not sent (connection refused, 429): safe to send again.
    NotSent(String),
    /// The channel refused it (4xx): sending again cannot help.
    Rejected(String),
    /// Timeout, a broken connection, a 5xx or an answer we cannot read: it may have been sent.
    Unclear(String),
}

/// Reads the id of the message the channel made out of its answer.
type ReadId = fn(&Value) -> Option<String>;

/// Sends `text` into the conversation's chat.
pub async fn send(
    apis: &Apis,
    settings: &MessageSettings,
    conversation: &Conversation,
    text: &str,
) -> Replied {
    let (request, read_id) = match request(apis, settings, conversation, text) {
        Ok(request) => request,
        Err(refused) => return refused,
    };
    // Errors are told without the URL: a Bot API URL carries the bot's token.
    match request.timeout(apis.timeout).send().await {
        Ok(res) => {
            let code = res.status().as_u16();
            match code {
                200..=299 => match res.json::<Value>().await.ok().as_ref().and_then(read_id) {
                    Some(id) => Replied::Sent(id),
                    None => Replied::Unclear(format!(
                        "the channel answered {code} without a message id"
                    )),
                },
                429 => Replied::NotSent("the channel answered 429".into()),
                400..=499 => Replied::Rejected(format!("the channel answered {code}")),
                _ => Replied::Unclear(format!("the channel answered {code}")),
            }
        }
        Err(e) if e.is_connect() => {
            Replied::NotSent(format!("connection failed: {}", e.without_url()))
        }
        Err(e) if e.is_timeout() => Replied::Unclear("timed out waiting for the answer".into()),
        Err(e) => Replied::Unclear(format!("request failed: {}", e.without_url())),
    }
}

/// The channel's send request for `text`, and how its answer names the message; a refusal
/// when the channel cannot send into this conversation.
fn request(
    apis: &Apis,
    settings: &MessageSettings,
    conversation: &Conversation,
    text: &str,
) -> Result<(reqwest::RequestBuilder, ReadId), Replied> {
    let base = apis.base(settings).map_err(Replied::Rejected)?;
    match settings {
        MessageSettings::Telegram { bot_token, .. } => Ok((
            apis.http
                .post(format!(
                    "{base}/bot{}/sendMessage",
                    bot_token.expose_secret()
                ))
                .json(&json!({"chat_id": conversation.chat_id, "text": text})),
            |answer| {
                let result = answer.get("result")?;
                let chat = result.get("chat")?.get("id")?;
                Some(format!("{chat}:{}", result.get("message_id")?))
            },
        )),
        MessageSettings::Whatsapp { access_token, .. } => {
            let via = conversation.reply_via.as_ref().ok_or_else(|| {
                Replied::Rejected("the conversation has no business number to reply from".into())
            })?;
            Ok((
                apis.http
                    .post(format!("{base}/{via}/messages"))
                    .bearer_auth(access_token.expose_secret())
                    .json(&json!({
                        "messaging_product": "whatsapp",
                        "recipient_type": "individual",
                        "to": conversation.chat_id,
                        "type": "text",
                        "text": {"body": text},
                    })),
                |answer| {
                    let id = answer.get("messages")?.get(0)?.get("id")?.as_str()?;
                    Some(id.to_owned())
                },
            ))
        }
        MessageSettings::Standard { .. } => Err(Replied::Rejected(
            "the generic channel cannot send replies".into(),
        )),
    }
}
