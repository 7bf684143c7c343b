//! What each messenger posts: Telegram updates, WhatsApp Cloud API deliveries (a batch of
//! messages and statuses), and a generic sender's Standard Webhooks JSON. Pure, and never panics
//! on any bytes; what this CRM does not record (an edited message, a reaction, a member update)
//! is `Ignored`.

use super::{AttachmentRef, Incoming, MediaRef, OutStatus, Posted, Sender, StatusEvent};
use chrono::{DateTime, TimeZone, Utc};
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;

fn str_of(v: &Value, name: &str) -> Option<String> {
    match v.get(name)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn need(v: &Value, name: &str, what: &str) -> Result<String, String> {
    str_of(v, name).ok_or_else(|| format!("{what} has no {name}"))
}

fn unix(v: &Value, name: &str) -> Option<DateTime<Utc>> {
    let secs = match v.get(name)? {
        Value::Number(n) => n.as_i64()?,
        Value::String(s) => s.parse().ok()?,
        _ => return None,
    };
    Utc.timestamp_opt(secs, 0).single()
}

fn json(body: &[u8]) -> Result<Value, String> {
    serde_json::from_slice(body)
        .map_err(|e| format!("not JSON: {}", crate::fields::plain(&e.to_string())))
}

/// A Telegram update: `message` with text, caption, the largest `photo[]` size or a `document`
/// (voice, audio and video too). The provider id is `chat.id:message_id` (ids are per chat).
pub fn telegram(body: &[u8]) -> Result<Posted, String> {
    let update = json(body)?;
    let Some(message) = update.get("message") else {
        let kind = update
            .as_object()
            .and_then(|o| o.keys().find(|k| *k != "update_id").cloned())
            .unwrap_or_else(|| "unknown".into());
        return Ok(Posted::Ignored(kind));
    };
    let chat = message.get("chat").ok_or("message has no chat")?;
    let chat_id = need(chat, "id", "chat")?;
    let message_id = need(message, "message_id", "message")?;
    let from = message.get("from").unwrap_or(chat);
    let user_id = need(from, "id", "from")?;
    let name = telegram_name(from, &user_id);
    let attachments = telegram_attachments(message, &message_id)?;
    let text = str_of(message, "text")
        .or_else(|| str_of(message, "caption"))
        .or_else(|| {
            message
                .get("venue")
                .or(message.get("location"))
                .and_then(location_text)
        })
        .or_else(|| message.get("contact").and_then(card_text))
        .unwrap_or_default();
    if text.is_empty() && attachments.is_empty() {
        // A service message (a member joined, a message pinned), a poll, a dice: nothing a
        // customer wrote.
        return Ok(Posted::Ignored("message_without_text".into()));
    }
    Ok(Posted::Delivery {
        messages: vec![Incoming {
            provider_id: format!("{chat_id}:{message_id}"),
            chat_id,
            from: Sender {
                identity: user_id,
                name,
                phone: None,
            },
            text,
            attachments,
            sent_at: unix(message, "date"),
            reply_via: None,
            notes: Vec::new(),
            raw: Some(message.to_string()),
        }],
        statuses: Vec::new(),
        unread: Vec::new(),
        batch: false,
    })
}

/// How a Telegram sender is called: first and last name, else the username, else the id.
fn telegram_name(from: &Value, user_id: &str) -> String {
    let full = [str_of(from, "first_name"), str_of(from, "last_name")]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
    if full.trim().is_empty() {
        str_of(from, "username").unwrap_or_else(|| user_id.to_owned())
    } else {
        full
    }
}

/// A Telegram message's files: the largest photo size, and a document, voice, audio or video.
fn telegram_attachments(message: &Value, message_id: &str) -> Result<Vec<AttachmentRef>, String> {
    let mut attachments = Vec::new();
    if let Some(Value::Array(sizes)) = message.get("photo") {
        let largest = sizes.iter().max_by_key(|p| {
            let dim = |n| p.get(n).and_then(Value::as_u64).unwrap_or(0);
            (dim("width").saturating_mul(dim("height")), dim("file_size"))
        });
        if let Some(photo) = largest {
            attachments.push(AttachmentRef {
                media: MediaRef::TelegramFile(need(photo, "file_id", "photo")?),
                name: format!("photo_{message_id}.jpg"),
                content_type: Some("image/jpeg".into()),
                size: photo.get("file_size").and_then(Value::as_u64),
            });
        }
    }
    for kind in [
        "document",
        "voice",
        "audio",
        "video",
        "video_note",
        "sticker",
    ] {
        if let Some(file) = message.get(kind) {
            attachments.push(AttachmentRef {
                media: MediaRef::TelegramFile(need(file, "file_id", kind)?),
                name: str_of(file, "file_name").unwrap_or_else(|| format!("{kind}_{message_id}")),
                content_type: str_of(file, "mime_type"),
                size: file.get("file_size").and_then(Value::as_u64),
            });
        }
    }
    Ok(attachments)
}

/// A shared place as one line: its name and address when it has them, and its coordinates
/// (Telegram's `location` or `venue`, WhatsApp's `location`).
fn location_text(v: &Value) -> Option<String> {
    let place = v.get("location").unwrap_or(v);
    let (lat, lon) = (str_of(place, "latitude")?, str_of(place, "longitude")?);
    let named: Vec<String> = ["title", "name", "address"]
        .iter()
        .filter_map(|n| str_of(v, n))
        .filter(|t| !t.trim().is_empty())
        .collect();
    Some(match named.is_empty() {
        true => format!("Location: {lat}, {lon}"),
        false => format!("Location: {} ({lat}, {lon})", named.join(", ")),
    })
}

/// A shared contact card as one line: its name and phone numbers (Telegram's `contact`, one of
/// WhatsApp's `contacts[]`).
fn card_text(v: &Value) -> Option<String> {
    let name = v
        .get("name")
        .and_then(|n| str_of(n, "formatted_name"))
        .or_else(|| {
            let parts: Vec<String> = ["first_name", "last_name"]
                .iter()
                .filter_map(|n| str_of(v, n))
                .collect();
            (!parts.is_empty()).then(|| parts.join(" "))
        });
    let mut phones: Vec<String> = array(v, "phones")
        .filter_map(|p| str_of(p, "phone"))
        .collect();
    phones.extend(str_of(v, "phone_number"));
    if name.is_none() && phones.is_empty() {
        return None;
    }
    let mut line = format!("Contact: {}", name.unwrap_or_default());
    if !phones.is_empty() {
        line = format!("{} {}", line.trim_end(), phones.join(", "));
    }
    Some(line)
}

/// A WhatsApp Cloud API delivery: `entry[].changes[].value` with `messages[]` (and `contacts[]`
/// naming their senders) and `statuses[]` of our own messages. Always answered in the batch form.
pub fn whatsapp(body: &[u8]) -> Result<Posted, String> {
    let delivery = json(body)?;
    let (mut messages, mut statuses, mut unread) = (Vec::new(), Vec::new(), Vec::new());
    let entries = delivery
        .get("entry")
        .and_then(Value::as_array)
        .ok_or("no entry[]")?;
    for change in entries
        .iter()
        .filter_map(|e| e.get("changes").and_then(Value::as_array))
        .flatten()
    {
        let Some(value) = change.get("value") else {
            continue;
        };
        let phone_number_id = value
            .get("metadata")
            .and_then(|m| str_of(m, "phone_number_id"));
        let names = whatsapp_names(value);
        for m in array(value, "messages") {
            match whatsapp_message(m, &names, phone_number_id.clone()) {
                Ok(Some(incoming)) => messages.push(incoming),
                Ok(None) => {}
                Err(reason) => unread.push((as_far_as_read(m), reason)),
            }
        }
        statuses.extend(array(value, "statuses").filter_map(whatsapp_status));
    }
    if messages.is_empty() && statuses.is_empty() && unread.is_empty() {
        return Ok(Posted::Ignored("no_messages_or_statuses".into()));
    }
    Ok(Posted::Delivery {
        messages,
        statuses,
        unread,
        batch: true,
    })
}

/// A message that could not be read, as far as it was: its id and sender when it names them,
/// its JSON as posted for a person.
fn as_far_as_read(m: &Value) -> Incoming {
    let wa_id = str_of(m, "from").unwrap_or_default();
    Incoming {
        provider_id: str_of(m, "id").unwrap_or_default(),
        chat_id: wa_id.clone(),
        from: Sender {
            identity: wa_id.clone(),
            name: wa_id,
            phone: None,
        },
        text: String::new(),
        attachments: Vec::new(),
        sent_at: None,
        reply_via: None,
        notes: Vec::new(),
        raw: Some(m.to_string()),
    }
}

/// The values of `value[name]`, none when it is not an array.
fn array<'a>(value: &'a Value, name: &str) -> impl Iterator<Item = &'a Value> {
    value
        .get(name)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// The senders' names a WhatsApp change carries, by `wa_id`.
fn whatsapp_names(value: &Value) -> HashMap<String, String> {
    array(value, "contacts")
        .filter_map(|c| {
            let name = c.get("profile").and_then(|p| str_of(p, "name"))?;
            Some((str_of(c, "wa_id")?, name))
        })
        .collect()
}

/// A status of one of our messages. One we cannot read (no id, an unknown name such as
/// `deleted`) is not ours to decide: skipped, never a reason to refuse the messages beside it.
fn whatsapp_status(s: &Value) -> Option<StatusEvent> {
    let status =
        str_of(s, "status").and_then(|raw| crate::store::item::parse_tag::<OutStatus>(&raw));
    let (Some(status), Some(provider_id)) = (status, str_of(s, "id")) else {
        tracing::info!("skipped a WhatsApp status without a known status or an id");
        return None;
    };
    Some(StatusEvent {
        provider_id,
        status,
        at: unix(s, "timestamp"),
    })
}

fn whatsapp_message(
    m: &Value,
    names: &HashMap<String, String>,
    reply_via: Option<String>,
) -> Result<Option<Incoming>, String> {
    let kind = need(m, "type", "message")?;
    let wa_id = need(m, "from", "message")?;
    let mut attachments = Vec::new();
    let Some(text) = whatsapp_text(m, (&kind, &wa_id), &mut attachments)? else {
        return Ok(None);
    };
    Ok(Some(Incoming {
        provider_id: need(m, "id", "message")?,
        chat_id: wa_id.clone(),
        from: Sender {
            name: names
                .get(&wa_id)
                .cloned()
                .unwrap_or_else(|| format!("+{wa_id}")),
            phone: Some(format!("+{wa_id}")),
            identity: wa_id,
        },
        text,
        attachments,
        sent_at: unix(m, "timestamp"),
        reply_via,
        notes: Vec::new(),
        raw: Some(m.to_string()),
    }))
}

/// What a WhatsApp message of `kind` from `wa_id` says, its media put on `attachments`; `None`
/// for a reaction, which is no message; refused for a type not read here.
fn whatsapp_text(
    m: &Value,
    (kind, wa_id): (&str, &str),
    attachments: &mut Vec<AttachmentRef>,
) -> Result<Option<String>, String> {
    let text = match kind {
        "text" => m
            .get("text")
            .and_then(|t| str_of(t, "body"))
            .unwrap_or_default(),
        "image" | "document" | "audio" | "video" | "sticker" => {
            let media = m.get(kind).ok_or("media message without its media")?;
            attachments.push(AttachmentRef {
                media: MediaRef::WhatsappMedia(need(media, "id", "media")?),
                name: str_of(media, "filename").unwrap_or_else(|| format!("{kind}_{}", wa_id)),
                content_type: str_of(media, "mime_type"),
                size: None,
            });
            str_of(media, "caption").unwrap_or_default()
        }
        // A quick-reply button's tap, a list's or a reply button's choice: what the customer
        // chose is its text.
        "button" => m
            .get("button")
            .and_then(|b| str_of(b, "text"))
            .ok_or("button message without its text")?,
        "interactive" => m
            .get("interactive")
            .and_then(|i| i.get("button_reply").or_else(|| i.get("list_reply")))
            .and_then(|r| str_of(r, "title"))
            .ok_or("interactive message without its reply's title")?,
        "location" => m
            .get("location")
            .and_then(location_text)
            .ok_or("location message without its coordinates")?,
        "contacts" => {
            let cards: Vec<String> = array(m, "contacts").filter_map(card_text).collect();
            if cards.is_empty() {
                return Err("contacts message without a contact".into());
            }
            cards.join("\n")
        }
        // A reaction to a message is no message of its own.
        "reaction" => return Ok(None),
        // Anything else (`unsupported`, `system`, `order`, a type Meta adds): set aside for a
        // person with its JSON, never dropped.
        other => {
            return Err(format!(
                "a message of type {other} is not one this CRM reads"
            ))
        }
    };
    Ok(Some(text))
}

#[derive(Deserialize)]
struct Envelope {
    #[serde(rename = "type")]
    kind: String,
    data: Option<Value>,
}

/// A generic sender's message (Standard Webhooks signed JSON): what [`standard`] reads, as the
/// OpenAPI document shows it (a test posts one through [`standard`]). Telegram posts its
/// updates and WhatsApp Cloud its `entry[].changes[].value` deliveries instead.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct GenericMessage {
    /// `message.received`; any other type is ignored.
    #[serde(rename = "type")]
    #[schema(example = "message.received")]
    pub kind: String,
    pub data: GenericMessageData,
}

#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct GenericMessageData {
    /// Unique within the integration (1-255 bytes): the message's key.
    #[schema(min_length = 1, max_length = 255)]
    pub message_id: String,
    /// The conversation (1-128 bytes).
    #[schema(min_length = 1, max_length = 128)]
    pub chat_id: String,
    pub from: GenericSender,
    /// At most 4096 characters.
    #[schema(max_length = 4096)]
    pub text: String,
    /// At most 10.
    #[schema(max_items = 10)]
    pub attachments: Option<Vec<GenericAttachment>>,
    /// RFC 3339.
    #[schema(format = DateTime)]
    pub sent_at: Option<String>,
}

/// The sender of a generic message.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct GenericSender {
    /// The sender's id on the channel (1-128 bytes).
    #[schema(min_length = 1, max_length = 128)]
    pub id: String,
    /// 1-200 characters.
    #[schema(min_length = 1, max_length = 200)]
    pub name: String,
    /// E.164; links the sender to a caller's contact.
    #[schema(max_length = 32)]
    pub phone: Option<String>,
}

/// A generic message's attachment, fetched once (https to a public host, at most 20 MB).
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct GenericAttachment {
    #[schema(max_length = 2048)]
    pub url: String,
    #[schema(max_length = 255)]
    pub name: String,
    #[schema(max_length = 255)]
    pub content_type: Option<String>,
}

/// A generic sender: `{"type": "message.received", "data": {"message_id", "chat_id", "from":
/// {"id", "name", "phone"?}, "text", "attachments": [{"url", "name", "content_type"}]?,
/// "sent_at"?}}`; any other type is ignored.
pub fn standard(body: &[u8]) -> Result<Posted, String> {
    let envelope: Envelope = serde_json::from_slice(body).map_err(|e| {
        format!(
            "not the message JSON: {}",
            crate::fields::plain(&e.to_string())
        )
    })?;
    if envelope.kind != "message.received" {
        return Ok(Posted::Ignored(envelope.kind));
    }
    let data = envelope.data.ok_or("message.received without data")?;
    let from = data.get("from").ok_or("data has no from")?;
    let mut attachments = Vec::new();
    for a in data
        .get("attachments")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        attachments.push(AttachmentRef {
            media: MediaRef::Url(need(a, "url", "attachment")?),
            name: need(a, "name", "attachment")?,
            content_type: str_of(a, "content_type"),
            size: None,
        });
    }
    let sent_at = match data.get("sent_at") {
        None | Some(Value::Null) => None,
        Some(Value::String(raw)) => {
            Some(crate::time::parse(raw).ok_or("sent_at is not an RFC 3339 time")?)
        }
        Some(_) => return Err("sent_at is not an RFC 3339 time".into()),
    };
    Ok(Posted::Delivery {
        messages: vec![Incoming {
            provider_id: need(&data, "message_id", "data")?,
            chat_id: need(&data, "chat_id", "data")?,
            from: Sender {
                identity: need(from, "id", "from")?,
                name: need(from, "name", "from")?,
                phone: str_of(from, "phone"),
            },
            text: str_of(&data, "text").unwrap_or_default(),
            attachments,
            sent_at,
            reply_via: None,
            notes: Vec::new(),
            raw: Some(data.to_string()),
        }],
        statuses: Vec::new(),
        unread: Vec::new(),
        batch: false,
    })
}

#[cfg(test)]
mod tests;
