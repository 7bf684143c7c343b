//! The `limit` and `cursor` every paged list takes, read once.

use firmspace::http::{query, ApiError};
use firmspace::store::StoreError;
use lambda_http::Request;

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

/// A list's read error: a cursor the list did not give is the caller's 400.
pub fn read_error(e: StoreError, cursor: Option<&str>) -> ApiError {
    match e {
        StoreError::Malformed { .. } if cursor.is_some() => {
            ApiError::bad_request("invalid_cursor", "cursor is not one this list gave")
        }
        other => other.into(),
    }
}
