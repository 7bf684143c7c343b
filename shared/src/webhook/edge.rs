//! The generic webhook handler over one source: route, size limit, cached integration, verify,
//! parse, record, answer, and the metrics of every delivery.

use super::answer::{Ignored, IgnoredDelivery, Unparseable, UnparseableDelivery};
use super::cache::{Built, Cache, Cached, Entry};
use super::{unparseable, Parsed, Source};
use crate::http::{body_bytes, route_path, typed_response, ApiError, MAX_BODY};
use crate::ids::IntegrationId;
use crate::integrations::rotation::Previous;
use crate::integrations::{self, Integration};
use crate::signature::{SignatureError, Verified, Verify};
use crate::store::item::tag_name;
use crate::store::Store;
use chrono::{DateTime, Utc};
use http::HeaderMap;
use lambda_http::{Body, Request, Response};
use serde_json::json;
use std::convert::Infallible;
use std::sync::Arc;
use tracing::Instrument;

/// The generic webhook handler over one source.
pub struct Edge<S: Source> {
    source: S,
    store: Store,
    cache: Cache<S::Verifier>,
    duplicates: crate::ops::chart::Duplicates,
    /// What the deliveries cost, per organisation (`store::spent`).
    spent: crate::store::spent::Spent,
    /// Deliveries that failed verification, per integration and minute: a budget apart.
    junk: super::limit::Limiter,
    /// Whether a delivery stored a new event since what was spent was last looked at.
    stored: std::sync::atomic::AtomicBool,
    /// Whether a delivery was verified since then: only a verified one's organisation is
    /// charged (a forged request names any organisation it likes).
    verified_one: std::sync::atomic::AtomicBool,
    limiter: super::limit::Limiter,
}

/// When the invocation serving `req` ends, less half a second to answer: from Lambda's context.
fn invocation_deadline(req: &Request) -> Option<std::time::Instant> {
    use lambda_http::RequestExt;
    let context = req.lambda_context_ref()?;
    let left = context
        .deadline()
        .duration_since(std::time::SystemTime::now())
        .ok()?;
    let left = left.checked_sub(std::time::Duration::from_millis(500))?;
    Some(std::time::Instant::now() + left)
}

/// The kind of event an integration kind's deliveries are.
fn event_kind(integration_kind: &str) -> Option<crate::store::lists::EventKind> {
    use crate::store::lists::EventKind;
    Some(match integration_kind {
        "payments" => EventKind::Payment,
        "messages" => EventKind::Message,
        "calls" => EventKind::Call,
        "bank" => EventKind::BankRow,
        "sms" => EventKind::Sms,
        "leads" => EventKind::Lead,
        _ => return None,
    })
}

fn count(source: impl Into<metrics::SharedString>, outcome: &'static str) {
    metrics::counter!("deliveries", "source" => source, "outcome" => outcome).increment(1);
}

impl<S: Source> Edge<S> {
    pub fn new(source: S, store: Store) -> Self {
        Self {
            source,
            store,
            cache: Cache::default(),
            duplicates: Default::default(),
            spent: Default::default(),
            stored: Default::default(),
            verified_one: Default::default(),
            limiter: super::limit::Limiter::from_env(),
            junk: super::limit::Limiter::from_env().for_junk(),
        }
    }

    /// The deployed function's edge: its configuration read from the environment, and the
    /// store and the source made from it (every webhook function starts so).
    pub async fn from_env() -> Result<Self, crate::config::ConfigError> {
        let config = crate::config::Config::from_env()?;
        let source = S::from_config(&config).await?;
        Ok(Self::new(source, config.store().await))
    }

    /// The same edge with another limit of deliveries per integration and minute.
    pub fn with_deliveries_per_minute(mut self, per_minute: u64) -> Self {
        self.limiter = super::limit::Limiter::new(per_minute);
        self.junk = super::limit::Limiter::new(per_minute).for_junk();
        self
    }

    pub fn source(&self) -> &S {
        &self.source
    }

    /// The Lambda entry point: the delivery at the time it arrived.
    pub async fn handle(&self, req: Request) -> Result<Response<Body>, Infallible> {
        let started = std::time::Instant::now();
        // Every write of the delivery, nested retries included, ends before the invocation does
        // (less a moment to answer).
        let deadline = invocation_deadline(&req).unwrap_or(started + crate::store::write::BUDGET);
        let now = Utc::now();
        let response = crate::store::write::within(deadline, self.respond(&req, now))
            .await
            .unwrap_or_else(ApiError::into_response);
        self.spent(&req, now).await;
        metrics::histogram!("latency_ms", "kind" => tag_name(&S::KIND))
            .record(started.elapsed().as_secs_f64() * 1000.0);
        crate::telemetry::flush_metrics();
        Ok(response)
    }

    /// The whole decision for one delivery at time `now`.
    pub async fn respond(
        &self,
        req: &Request,
        now: DateTime<Utc>,
    ) -> Result<Response<Body>, ApiError> {
        let id = self.route(req)?;
        if req.method() == http::Method::GET {
            return self.handshake(req, &id, now).await;
        }
        let span = tracing::info_span!("delivery", integration = %id.digest(), event_key = tracing::field::Empty);
        let result = self.deliver(req, &id, now).instrument(span).await;
        if let Err(e) = &result {
            let outcome = if e.status < 500 { "rejected" } else { "failed" };
            count(tag_name(&S::KIND), outcome);
        }
        result
    }

    /// What the invocation cost is its organisation's events' of this kind (`store::spent`),
    /// written at most once per 10 s and only after a new event was stored: a refused
    /// delivery or a duplicate writes nothing.
    async fn spent(&self, req: &Request, now: DateTime<Utc>) {
        use std::sync::atomic::Ordering::Relaxed;
        let verified = self.verified_one.swap(false, Relaxed);
        let about = match (self.route(req), event_kind(&tag_name(&S::KIND)), verified) {
            (Ok(id), Some(kind), true) => vec![(id.org, kind)],
            // What a refused request spent is nobody's events': let go.
            _ => Vec::new(),
        };
        self.spent.invocation(&self.store, 0, &about, now);
        if self.stored.swap(false, Relaxed) {
            self.spent.flush_due(&self.store).await;
        }
    }

    fn route(&self, req: &Request) -> Result<IntegrationId, ApiError> {
        let kind = tag_name(&S::KIND);
        let id = route_path(req)
            .strip_prefix("/hooks/")
            .and_then(|rest| rest.split_once('/'))
            .filter(|(_, tail)| tail.trim_end_matches('/') == kind)
            .map(|(id, _)| id)
            .ok_or_else(|| ApiError::not_found("route"))?;
        let get = S::HANDSHAKE && req.method() == http::Method::GET;
        if req.method() != http::Method::POST && !get {
            let methods: &[&str] = if S::HANDSHAKE {
                &["GET", "POST"]
            } else {
                &["POST"]
            };
            return Err(ApiError::method_not_allowed(methods));
        }
        IntegrationId::parse(id).map_err(|_| ApiError::not_found("integration"))
    }

    async fn deliver(
        &self,
        req: &Request,
        id: &IntegrationId,
        now: DateTime<Utc>,
    ) -> Result<Response<Body>, ApiError> {
        let body = body_bytes(req);
        if body.len() > MAX_BODY {
            return Err(ApiError::new(
                413,
                "payload_too_large",
                "body exceeds 256 KiB",
            ));
        }
        let (entry, verified) = self.verified(id, req.headers(), body, now).await?;
        self.verified_one
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let integration = &entry.integration;
        let label = self.source.label(integration);
        let event = match self.source.parse(integration, &verified, body, now) {
            Ok(Parsed::Event(event)) => event,
            Ok(Parsed::Ignored(status)) => {
                count(label, "ignored");
                let answer = IgnoredDelivery {
                    status: Ignored::Ignored,
                    provider_status: status,
                };
                return Ok(typed_response(200, &answer));
            }
            Err(reason) => {
                count(label, "review");
                return self
                    .keep_unparseable(integration, &verified, body, &reason, now)
                    .await;
            }
        };
        self.answer(integration, label, event, now).await
    }

    /// Records a parsed event and answers it: the edge's one vocabulary (`webhook::answer`).
    async fn answer(
        &self,
        integration: &Integration,
        label: &'static str,
        event: S::Event,
        now: DateTime<Utc>,
    ) -> Result<Response<Body>, ApiError> {
        let recorded = self
            .source
            .record(&self.store, integration, event, now)
            .await?;
        if let Some(key) = recorded.key() {
            tracing::Span::current().record("event_key", key.as_str());
        }
        let context = json!({"integration": integration.id.digest()});
        let org = integration.org();
        let told =
            super::answer::tell(&self.store, org, S::REVIEW, &recorded, context, now).await?;
        count(label, told.outcome);
        // The operator's chart of duplicates per hour: counted in memory on a duplicate's path
        // (which writes nothing), written on a new event's, at most once per 10 s.
        match recorded.is_new() {
            false => self.duplicates.count(org, now),
            true => {
                self.duplicates.flush_due(&self.store).await;
                self.stored
                    .store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
        let status = S::status(recorded.is_new());
        Ok(crate::http::replayed_response(
            status,
            &told.answer,
            !recorded.is_new(),
        ))
    }

    /// A subscription handshake: the integration (cached like a delivery's), then the source's
    /// answer as `text/plain`.
    async fn handshake(
        &self,
        req: &Request,
        id: &IntegrationId,
        now: DateTime<Utc>,
    ) -> Result<Response<Body>, ApiError> {
        let entry = match self.cache.get(&id.id, now) {
            Cached::Found(entry) => entry,
            Cached::Missing => return Err(ApiError::not_found("integration")),
            Cached::Unknown => self.load(id, now).await?,
        };
        let answer = self.source.handshake(&entry.integration, req);
        count(
            tag_name(&S::KIND),
            if answer.is_ok() {
                "handshake"
            } else {
                "rejected"
            },
        );
        let text = answer?;
        Ok(Response::builder()
            .status(200)
            .header("content-type", "text/plain")
            .header(crate::http::NOSNIFF.0, crate::http::NOSNIFF.1)
            .body(Body::Text(text))
            .expect("status and header are valid"))
    }

    /// A verified body that cannot be read: kept raw for a person, answered 200.
    async fn keep_unparseable(
        &self,
        integration: &Integration,
        verified: &Verified,
        body: &[u8],
        reason: &str,
        now: DateTime<Utc>,
    ) -> Result<Response<Body>, ApiError> {
        let new = unparseable::keep(&self.store, integration, verified, body, reason, now).await?;
        tracing::warn!(%reason, "verified body could not be read; kept for review");
        let answer = UnparseableDelivery {
            status: Unparseable::Unparseable,
            duplicate: !new,
            review: unparseable::REASON,
            detail: reason.to_owned(),
        };
        Ok(typed_response(200, &answer))
    }

    /// The integration and what its verifier proved, or 404 / 401; counted against the
    /// integration's budget of the minute (429 when spent): a verified delivery against the
    /// provider's, one that fails verification against a smaller one of its own, so junk sent
    /// at a known URL never spends what the genuine provider may send.
    async fn verified(
        &self,
        id: &IntegrationId,
        headers: &HeaderMap,
        body: &[u8],
        now: DateTime<Utc>,
    ) -> Result<(Entry<S::Verifier>, Verified), ApiError> {
        let result = self.verify_delivery(id, headers, body, now).await;
        let budget = match &result {
            Ok(_) => &self.limiter,
            Err(e) if e.status == 401 => &self.junk,
            Err(_) => return result,
        };
        if let Err(retry_after) = budget.count(&self.store, id, now).await {
            count(tag_name(&S::KIND), "limited");
            return Err(ApiError::rate_limited(budget.per_minute(), retry_after));
        }
        result
    }

    /// The integration and what its verifier proved, or 404 / 401.
    async fn verify_delivery(
        &self,
        id: &IntegrationId,
        headers: &HeaderMap,
        body: &[u8],
        now: DateTime<Utc>,
    ) -> Result<(Entry<S::Verifier>, Verified), ApiError> {
        let (mut entry, fresh) = match self.cache.get(&id.id, now) {
            Cached::Found(entry) => (entry, false),
            Cached::Missing => return Err(ApiError::not_found("integration")),
            Cached::Unknown => (self.load(id, now).await?, true),
        };
        let mut result = verify(&entry, headers, body, now);
        if result.is_err() && !fresh && self.cache.try_reload(&id.id, now) {
            entry = self.load(id, now).await?;
            result = verify(&entry, headers, body, now);
        }
        if result.is_err() {
            if let Some(updated) = self
                .source
                .refresh(&self.store, &entry.integration, now)
                .await
            {
                let previous = entry.previous.clone();
                let candidate = Entry {
                    previous,
                    ..self.entry(updated, None, now)
                };
                if let Ok(v) = verify(&candidate, headers, body, now) {
                    self.cache.put(&id.id, Some(candidate.clone()), now);
                    return Ok((candidate, v));
                }
            }
        }
        match result {
            Ok(verified) => Ok((entry, verified)),
            Err(e) => {
                // By its digest: a monobank integration's id is its webhook's credential.
                tracing::warn!(integration = %id.digest(), reason = %e, "refused webhook");
                Err(ApiError::unauthorized("invalid_signature", e.to_string()))
            }
        }
    }

    fn entry(
        &self,
        integration: Integration,
        previous: Option<Previous>,
        now: DateTime<Utc>,
    ) -> Entry<S::Verifier> {
        let previous = previous.map(|p| {
            let verifier = self.source.verifier(&p.integration(&integration));
            (verifier.map(Arc::new), p.until)
        });
        Entry {
            verifier: self.source.verifier(&integration).map(Arc::new),
            previous,
            integration: Arc::new(integration),
            loaded_at: now,
        }
    }

    async fn load(
        &self,
        id: &IntegrationId,
        now: DateTime<Utc>,
    ) -> Result<Entry<S::Verifier>, ApiError> {
        let found = match S::OPENS_SECRETS {
            true => integrations::get_verifying(&self.store, id, now).await?,
            false => integrations::get_sealed(&self.store, id)
                .await?
                .map(|i| (i, None)),
        };
        let found = found
            .filter(|(i, _)| i.kind() == S::KIND && self.source.serves(i))
            .map(|(i, previous)| self.entry(i, previous, now));
        self.cache.put(&id.id, found.clone(), now);
        found.ok_or_else(|| ApiError::not_found("integration"))
    }
}

fn verify<V: Verify>(
    entry: &Entry<V>,
    headers: &HeaderMap,
    body: &[u8],
    now: DateTime<Utc>,
) -> Result<Verified, SignatureError> {
    let with = |verifier: &Built<V>| match verifier {
        Ok(v) => v.verify(headers, body, now),
        Err(e) => Err(e.clone()),
    };
    let current = with(&entry.verifier);
    match &entry.previous {
        // A sender still on the previous secret, within the rotation's overlap.
        Some((previous, until)) if current.is_err() && now < *until => with(previous).or(current),
        _ => current,
    }
}
