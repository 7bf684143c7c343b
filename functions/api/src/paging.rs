//! The `limit` and `cursor` every paged list takes, read once.

use firmspace::http::{page_response, query, ApiError};
use firmspace::store::StoreError;
use lambda_http::{Body, Request, Response};

/// `limit`: `default` when absent, else 1 to `max`.
pub fn limit(req: &Request, default: i32, max: i32) -> Result<i32, ApiError> {
    match query(req, "limit") {
        None => Ok(default),
        Some(raw) => raw
            .parse::<i32>()
            .ok()
            .filter(|n| (1..=max).contains(n))
            .ok_or_else(|| ApiError::bad_request("invalid_limit", format!("limit is 1 to {max}"))),
    }
}

/// A list's page size at `path`, its default and its most: a list that was answered whole
/// before it was paged keeps its whole size as its default (a client that never pages sees
/// what it saw); every other list 50, at most 200.
pub fn sizes(path: &str) -> (i32, i32) {
    match path {
        "/api/contacts" => (500, 500),
        "/api/calls" | "/api/conversations" => (200, 200),
        // The ledger's export: a finance period's lines at once.
        "/api/ledger" => (1_000, 10_000),
        "/api/ledger.csv" => (10_000, 10_000),
        _ => (50, 200),
    }
}

/// `limit` of the list at `path`, by its [`sizes`].
pub fn limit_of(req: &Request, path: &str) -> Result<i32, ApiError> {
    let (default, max) = sizes(path);
    limit(req, default, max)
}

/// A page of the list at `path` as its answer: its `limit` and `cursor` read as that list takes
/// them, the page read by `read`, each item shown by `view`.
pub async fn answer<T, V, Fut>(
    req: &Request,
    path: &str,
    read: impl FnOnce(i32, Option<String>) -> Fut,
    view: impl Fn(&T) -> V,
) -> Result<Response<Body>, ApiError>
where
    Fut: std::future::Future<Output = Result<(Vec<T>, Option<String>), StoreError>>,
    V: serde::Serialize,
{
    let limit = limit_of(req, path)?;
    let cursor = query(req, "cursor");
    let (found, next) = read(limit, cursor.clone())
        .await
        .map_err(|e| read_error(e, cursor.as_deref()))?;
    Ok(page_response(found.iter().map(view).collect(), next))
}

/// A list's read error: a cursor the list did not give is the caller's 400.
pub fn read_error(e: StoreError, cursor: Option<&str>) -> ApiError {
    match e {
        StoreError::Malformed { .. } if cursor.is_some() => {
            ApiError::bad_request("invalid_cursor", "cursor is not one this list gave")
        }
        other => other.into(),
    }
}
