//! What a request may carry, checked at the door so that every refusal is `{code, message}` and nothing the run
//! store cannot keep reaches it.
//!
//! Invariants:
//! - No text with a NUL character (`\u0000`) is written to the store: PostgreSQL cannot keep it in text, and reading
//!   it back out of JSON fails for every query that touches the row. A request holding one is refused (422
//!   `NUL_CHARACTER`, naming the field), whether in a path segment, a body's field or a key.
//! - A path segment that is not UTF-8 once its %-escapes are decoded is 400 `INVALID_PATH`; a body over
//!   [`BODY_LIMIT`] is 413 `BODY_TOO_LARGE`, and a webhook's or command's body is read only after its sender is
//!   authenticated (a signed webhook's signature is over its body: that one is read first, up to the limit).
//! - A refused request's body is read to its end (up to a bound) before the refusal is sent ([`linger`]): the sender
//!   gets the answer, not a reset connection.
//! - Any failure that would leave without a body of ours (axum's or a file service's own text) leaves as
//!   `{code, message}` ([`json_failures`]).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequestParts, Path, Request};
use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::Value;

use crate::error::ApiError;

/// The largest body a route reads (axum's default limit, said here so that the docs and the refusal agree).
pub const BODY_LIMIT: usize = 2 * 1024 * 1024;

/// The one path parameter of a route (a run's id, a hook's or a command's name), decoded and free of NUL.
pub struct Segment(pub String);

impl<S: Send + Sync> FromRequestParts<S> for Segment {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Segment, ApiError> {
        let Path(mut params) = Path::<Vec<(String, String)>>::from_request_parts(parts, state).await.map_err(|e| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "INVALID_PATH",
                format!(
                    "{}: a path segment must be UTF-8 text once its %-escapes are decoded; /openapi.json gives the \
                     routes",
                    e.body_text()
                ),
            )
        })?;
        let (name, value) = params.pop().unwrap_or_default();
        if value.contains('\0') {
            return Err(nul(&format!("the path's `{name}`")));
        }
        Ok(Segment(value))
    }
}

/// The refusal of a NUL character in `field`.
fn nul(field: &str) -> ApiError {
    ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "NUL_CHARACTER",
        format!(
            "{field} holds a NUL character (\\u0000, %00), which the run store cannot keep: nothing was recorded; send \
             the text without it"
        ),
    )
}

/// Refuses `text` when it holds a NUL character, naming `field`.
pub fn text(field: &str, text: &str) -> Result<(), ApiError> {
    if text.contains('\0') {
        return Err(nul(&format!("`{field}`")));
    }
    Ok(())
}

/// Refuses `value` when any of its strings or keys holds a NUL character, naming where (`input.items[2].name`).
pub fn json(field: &str, value: &Value) -> Result<(), ApiError> {
    match value {
        Value::String(s) => text(field, s),
        Value::Array(items) => items.iter().enumerate().try_for_each(|(i, v)| json(&format!("{field}[{i}]"), v)),
        Value::Object(map) => map.iter().try_for_each(|(k, v)| {
            if k.contains('\0') {
                return Err(nul(&format!("a key of `{field}`")));
            }
            json(&format!("{field}.{k}"), v)
        }),
        _ => Ok(()),
    }
}

/// A body that could not be read, as `{code, message}`: over the limit, or cut off.
pub fn body_rejection(e: BytesRejection) -> ApiError {
    too_large(e.status()).unwrap_or_else(|| {
        ApiError::new(e.status(), "INVALID_BODY", format!("the body could not be read: {}", e.body_text()))
    })
}

/// The refusal of a body over the limit, when `status` says it was.
pub fn too_large(status: StatusCode) -> Option<ApiError> {
    (status == StatusCode::PAYLOAD_TOO_LARGE).then(|| {
        ApiError::new(
            status,
            "BODY_TOO_LARGE",
            format!("the body is over {} MiB, the most a route reads: send less", BODY_LIMIT / (1024 * 1024)),
        )
    })
}

/// The most of a refused request's body that is read (and dropped) before its answer is sent, and for how long.
const LINGER_BYTES: usize = 64 * 1024 * 1024;
const LINGER_TIME: std::time::Duration = std::time::Duration::from_secs(5);

/// Middleware: a request refused before its body was read (no token, a body over the limit) has the rest of its body
/// read and dropped, up to [`LINGER_BYTES`] for [`LINGER_TIME`], before the answer goes. Closed with unread bytes,
/// the connection would be reset, and the sender, still writing, would lose the answer with it.
pub async fn linger(request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let source = Arc::new(tokio::sync::Mutex::new(body.into_data_stream()));
    let given = futures::stream::unfold(source.clone(), |source| async move {
        let chunk = source.lock().await.next().await;
        chunk.map(|chunk| (chunk, source))
    });
    let response = next.run(Request::from_parts(parts, Body::from_stream(given))).await;
    if response.status().is_client_error() || response.status().is_server_error() {
        let drain = async {
            let mut rest = source.lock().await;
            let mut read = 0;
            while let Some(Ok(chunk)) = rest.next().await {
                read += chunk.len();
                if read > LINGER_BYTES {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout(LINGER_TIME, drain).await;
    }
    response
}

/// Middleware: a failure that is not `{code, message}` (axum's plain-text refusals, a file service's empty ones)
/// is made one, keeping its status and its text.
pub async fn json_failures(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    let json = response.headers().get(CONTENT_TYPE).is_some_and(|t| t.as_bytes().starts_with(b"application/json"));
    if !(status.is_client_error() || status.is_server_error()) || json {
        return response;
    }
    let (_, body) = response.into_parts();
    let text = axum::body::to_bytes(body, 4096).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&text).trim().to_string();
    let (code, hint) = match status {
        StatusCode::PAYLOAD_TOO_LARGE => return too_large(status).expect("413").into_response(),
        StatusCode::NOT_FOUND => ("NO_SUCH_ROUTE", "/openapi.json lists the routes"),
        StatusCode::METHOD_NOT_ALLOWED => ("METHOD_NOT_ALLOWED", "/openapi.json says which methods a route takes"),
        s if s.is_client_error() => ("INVALID_REQUEST", "/openapi.json gives what each route takes"),
        _ => ("INTERNAL", "report it, with the server's log"),
    };
    let what = if text.is_empty() { status.canonical_reason().unwrap_or("refused").to_string() } else { text };
    ApiError::new(status, code, format!("{what}: {hint}")).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nul_is_named_where_it_is_in_a_body() {
        let value = serde_json::json!({"a": [1, {"b": "x\u{0}y"}]});
        let e = json("input", &value).unwrap_err();
        assert_eq!((e.status, e.code.as_str()), (StatusCode::UNPROCESSABLE_ENTITY, "NUL_CHARACTER"));
        assert!(e.message.starts_with("`input.a[1].b` holds a NUL character"), "{}", e.message);
        let key = serde_json::json!({"k\u{0}": 1});
        assert!(json("input", &key).unwrap_err().message.starts_with("a key of `input`"));
        assert!(json("input", &serde_json::json!({"fine": ["text", 1, null]})).is_ok());
    }
}
