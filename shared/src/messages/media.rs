//! The messengers' APIs as one client (Telegram's Bot API, WhatsApp's Graph API, a generic
//! sender's file URLs), and attachments stored once in S3: under a key derived from the message
//! key, written with `If-None-Match: *`, so concurrent first deliveries leave one object.

pub use super::files::{served_type, Files};
use super::providers::MessageSettings;
use super::{Attachment, AttachmentRef, MediaRef};
use crate::egress::targets;
use crate::integrations::{Integration, Settings};
use secrecy::ExposeSecret;
use sha2::{Digest, Sha256};
use std::time::{Duration, Instant};

/// The largest file we store.
pub const FILE_MAX: u64 = 20 * 1024 * 1024;

pub use crate::egress::{Apis, TELEGRAM_API, WHATSAPP_API};

impl Apis {
    /// The API base for an integration: its own `api_url` where the stage allows one, else the
    /// configured one. Checked at call time like every outgoing URL.
    pub fn base(&self, settings: &MessageSettings) -> Result<String, String> {
        let base = match (settings, settings.api_url()) {
            (_, Some(own)) if self.allow_loopback => own.trim_end_matches('/').to_owned(),
            (MessageSettings::Whatsapp { .. }, _) => self.whatsapp.clone(),
            _ => self.telegram.clone(),
        };
        targets::check_url(&base, self.allow_loopback)?;
        Ok(base)
    }
}

/// Why an attachment is not stored.
enum Failure {
    TooLarge(u64),
    Failed(String),
}

/// A lookup that tells the file's size (`file_size`) refuses a file over the limit before its
/// download.
fn within_limit(info: &serde_json::Value) -> Result<(), Failure> {
    match info.get("file_size").and_then(serde_json::Value::as_u64) {
        Some(size) if size > FILE_MAX => Err(Failure::TooLarge(size)),
        _ => Ok(()),
    }
}

fn failed(e: impl std::fmt::Display) -> Failure {
    Failure::Failed(crate::fields::plain(&e.to_string()))
}

/// Attachments: fetched through the messengers' APIs, stored in one bucket.
#[derive(Clone, Debug)]
pub struct Media {
    pub apis: Apis,
    pub files: Files,
}

impl Media {
    pub fn new(apis: Apis, files: Files) -> Self {
        Self { apis, files }
    }

    /// Each attachment fetched and stored, or recorded with why it is not; never an error, so a
    /// failed download never loses the message.
    /// Nothing is started after `deadline`, and no call outlasts it.
    pub async fn fetch_all(
        &self,
        integration: &Integration,
        message_pk: &str,
        refs: &[AttachmentRef],
        deadline: Instant,
    ) -> Vec<Attachment> {
        let mut out = Vec::with_capacity(refs.len());
        for (index, r) in refs.iter().enumerate() {
            let object = object_key(message_pk, index);
            let mut attachment = Attachment {
                name: r.name.clone(),
                content_type: r
                    .content_type
                    .clone()
                    .unwrap_or_else(|| "application/octet-stream".into()),
                size: r.size.unwrap_or(0),
                sha256: None,
                object: None,
                error: None,
            };
            let left = deadline.saturating_duration_since(Instant::now());
            let fetched = if left < Duration::from_millis(500) {
                Err(Failure::Failed(
                    "not fetched: the time for this delivery's downloads ran out".into(),
                ))
            } else {
                self.fetch(integration, r, deadline).await
            };
            match fetched {
                Ok(bytes) => {
                    attachment.size = bytes.len() as u64;
                    attachment.sha256 = Some(hex::encode(Sha256::digest(&bytes)));
                    match self
                        .files
                        .put(&object, bytes, &attachment.content_type)
                        .await
                    {
                        Ok(()) => attachment.object = Some(object),
                        Err(why) => attachment.error = Some(format!("not stored: {why}")),
                    }
                }
                Err(Failure::TooLarge(size)) => {
                    attachment.size = size;
                    attachment.error = Some(format!("too large: more than {FILE_MAX} bytes"));
                }
                Err(Failure::Failed(why)) => {
                    attachment.error = Some(format!("download failed: {why}"));
                }
            }
            if let Some(error) = &attachment.error {
                tracing::warn!(%error, name = %attachment.name, "attachment not stored");
            }
            out.push(attachment);
        }
        out
    }

    async fn fetch(
        &self,
        integration: &Integration,
        r: &AttachmentRef,
        deadline: Instant,
    ) -> Result<Vec<u8>, Failure> {
        if r.size.is_some_and(|size| size > FILE_MAX) {
            return Err(Failure::TooLarge(r.size.unwrap_or_default()));
        }
        let settings = match &integration.settings {
            Settings::Messages(m) => m,
            _ => return Err(Failure::Failed("not a messages integration".into())),
        };
        let http = &self.apis.http;
        let request = match (&r.media, settings) {
            (MediaRef::TelegramFile(file_id), MessageSettings::Telegram { bot_token, .. }) => {
                let base = self.apis.base(settings).map_err(failed)?;
                let token = bot_token.expose_secret();
                let info = self
                    .json(
                        http.get(format!("{base}/bot{token}/getFile"))
                            .query(&[("file_id", file_id)]),
                        deadline,
                    )
                    .await?;
                let result = info
                    .get("result")
                    .ok_or_else(|| failed("getFile answered no result"))?;
                within_limit(result)?;
                let path = result
                    .get("file_path")
                    .and_then(|v| v.as_str())
                    .ok_or_else(|| failed("getFile answered no file_path"))?;
                http.get(format!("{base}/file/bot{token}/{path}"))
            }
            (MediaRef::WhatsappMedia(id), MessageSettings::Whatsapp { access_token, .. }) => {
                let base = self.apis.base(settings).map_err(failed)?;
                let token = access_token.expose_secret();
                let info = self
                    .json(
                        http.get(format!("{base}/{id}")).bearer_auth(token),
                        deadline,
                    )
                    .await?;
                within_limit(&info)?;
                let url = info
                    .get("url")
                    .and_then(|v| v.as_str())
                    .ok_or_else(|| failed("the media answer has no url"))?;
                targets::check_url(url, self.apis.allow_loopback).map_err(failed)?;
                http.get(url).bearer_auth(token)
            }
            (MediaRef::Url(url), MessageSettings::Standard { .. }) => {
                targets::check_url(url, self.apis.allow_loopback).map_err(failed)?;
                http.get(url)
            }
            _ => return Err(failed("the attachment does not belong to this channel")),
        };
        self.download(request, deadline).await
    }

    async fn json(
        &self,
        request: reqwest::RequestBuilder,
        deadline: Instant,
    ) -> Result<serde_json::Value, Failure> {
        let res = self.answered(request, deadline, "the API").await?;
        res.json().await.map_err(|e| failed(e.without_url()))
    }

    /// A 2xx answer to `request` within the deadline; errors told without the URL (a Bot API
    /// URL carries the bot's token).
    async fn answered(
        &self,
        request: reqwest::RequestBuilder,
        deadline: Instant,
        who: &str,
    ) -> Result<reqwest::Response, Failure> {
        let res = request
            .timeout(self.call_timeout(deadline))
            .send()
            .await
            .map_err(|e| failed(e.without_url()))?;
        if !res.status().is_success() {
            return Err(failed(format!("{who} answered {}", res.status().as_u16())));
        }
        Ok(res)
    }

    /// One call's timeout: the API's, cut to what is left before the deadline.
    fn call_timeout(&self, deadline: Instant) -> Duration {
        self.apis
            .timeout
            .min(deadline.saturating_duration_since(Instant::now()))
            .max(Duration::from_millis(1))
    }

    /// The body, read chunk by chunk and given up on past `FILE_MAX`.
    async fn download(
        &self,
        request: reqwest::RequestBuilder,
        deadline: Instant,
    ) -> Result<Vec<u8>, Failure> {
        let mut res = self.answered(request, deadline, "the file").await?;
        if let Some(size) = res.content_length().filter(|size| *size > FILE_MAX) {
            return Err(Failure::TooLarge(size));
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = res.chunk().await.map_err(|e| failed(e.without_url()))? {
            if (bytes.len() + chunk.len()) as u64 > FILE_MAX {
                return Err(Failure::TooLarge((bytes.len() + chunk.len()) as u64));
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(bytes)
    }
}

/// The object key of a message's attachment: derived from the message's key, so every copy of
/// the message names the same object.
pub fn object_key(message_pk: &str, index: usize) -> String {
    let digest = hex::encode(Sha256::digest(message_pk.as_bytes()));
    format!("attachments/{}/{index}", &digest[..40])
}
