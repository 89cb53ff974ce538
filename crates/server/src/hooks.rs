//! Webhooks: `POST /hooks/NAME` starts a run of the workflow whose trigger names the hook. Its input is the request:
//! `{"body", "headers", "query"}` (`request_input`): the body as JSON (or form fields), the headers by lower-cased
//! name, the query's parameters.
//!
//! Invariants:
//! - A delivery is authenticated before anything else is read: by its HMAC-SHA256 signature when the trigger names
//!   a secret (`secret_env`: the variable holding it on the server), as GitHub (`X-Hub-Signature-256`) and Stripe
//!   sign theirs (`X-Switchyard-Signature: sha256=HEX`), else by a bearer token. Signatures are compared in constant
//!   time.
//! - A delivery with an idempotency key (`Idempotency-Key`, or GitHub's `X-GitHub-Delivery`) starts at most one run
//!   per key and hook, across every server instance and restart (`team::deliver`); a redelivery answers with the run
//!   the first started, also once that run was pruned (200, `pruned: true`: the key outlives its run).
//! - No secret reaches the run (or the store): `Authorization`, `Cookie`, the signature headers and whatever else
//!   `SECRET_HEADERS` names are left out of its headers.
//! - GitHub's `ping` (sent when a webhook is added) starts nothing: it is answered 200 once authenticated.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

use crate::api::{Start, Started};
use crate::error::ApiError;
use crate::request::{self, Segment};
use crate::AppState;
use switchyard_engine::store::postgres::team::Scope;

/// Headers never given to a run: they carry credentials (a token, a session, a signature over the body).
pub const SECRET_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "x-switchyard-signature",
    "x-hub-signature",
    "x-hub-signature-256",
    "stripe-signature",
    "x-api-key",
];

/// The answer to GitHub's `ping`: authenticated, and no run started.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct Pong {
    /// Always true.
    pub pong: bool,
    pub message: String,
}

/// The longest idempotency key kept (in bytes): longer ones are refused, not cut (two keys cut alike would be one).
const MAX_KEY: usize = 1024;

#[utoipa::path(post, path = "/hooks/{name}", tag = "webhooks",
    params(("name" = String, Path, description = "The webhook's name, as its trigger gives it"),
        ("Idempotency-Key" = Option<String>, Header,
            description = "Deliveries with the same key start one run (UTF-8, at most 1024 bytes)"),
        ("X-Switchyard-Signature" = Option<String>, Header, description = "sha256=HEX: HMAC-SHA256 of the body")),
    request_body(content = Object, description = "The run's input's `body`: JSON, form fields \
        (application/x-www-form-urlencoded), or empty for none"),
    responses((status = 202, body = Started), (status = 200, body = Pong, description = "GitHub's ping: no run; \
        or `Started` with `pruned: true`: a redelivery whose run was pruned (retention), which started nothing"), (status = 400, body = ApiError), (status = 401, body = ApiError),
        (status = 404, body = ApiError), (status = 413, body = ApiError), (status = 422, body = ApiError)))]
pub async fn deliver(
    State(state): State<AppState>,
    Segment(name): Segment,
    request: Request,
) -> Result<Response, ApiError> {
    let headers = request.headers().clone();
    let query = request.uri().query().unwrap_or("").to_string();
    // The body is read once its sender is known (by the signature over it, for a signed hook).
    let read =
        |request: Request| async move { Bytes::from_request(request, &()).await.map_err(request::body_rejection) };
    let found = state.registry.catalog.read().expect("not poisoned").hooks.get(&name).cloned();
    let Some((workflow, trigger)) = found else {
        // Only someone with a token learns which hooks exist; a sender without one is told where to look.
        if crate::auth::check(&state, &headers).await.is_err() {
            return Err(ApiError::unauthorized(format!(
                "no webhook takes this delivery to `{name}`: check the hook's name in the URL against the workflow's \
                 `webhook:` trigger (whether a hook exists is said only to a request with a valid token)"
            )));
        }
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "NO_SUCH_HOOK",
            format!("no workflow here has webhook `{name}`"),
        ));
    };
    let body = match &trigger.secret_env {
        Some(var) => {
            let Ok(secret) = std::env::var(var) else {
                return Err(ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "HOOK_SECRET_MISSING",
                    format!("webhook `{name}` is signed with the secret in ${var}, which is not set on this server"),
                ));
            };
            let body = read(request).await?;
            verify(&secret, &headers, &body)?;
            body
        }
        None => {
            let caller = crate::auth::check(&state, &headers).await?;
            crate::auth::require(&caller, Scope::Run, "start a run through a webhook")?;
            read(request).await?
        }
    };
    if headers.get("x-github-event").is_some_and(|e| e.as_bytes() == b"ping") {
        let message = format!("pong: webhook `{name}` is set up; GitHub's ping starts no run");
        return Ok((StatusCode::OK, Json(Pong { pong: true, message })).into_response());
    }
    let input = request_input(&headers, &query, &body)?;
    let key = idempotency_key(&headers)?
        // No key: every delivery is a new one.
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let started = state.start(&workflow, Some(input), Start::Delivery { hook: name, key }).await?;
    // A redelivery whose run was pruned started nothing, and nothing is under way: 200, not 202.
    let status = if started.pruned { StatusCode::OK } else { StatusCode::ACCEPTED };
    Ok((status, Json(started)).into_response())
}

/// A delivery as its run's input: `{"body", "headers", "query"}`. The body is JSON, form fields as the query's
/// parameters are (for `application/x-www-form-urlencoded`), or `null` when empty; headers by lower-cased name,
/// without `SECRET_HEADERS`, a header sent several times as its values joined by `, `; query parameters by name, a
/// parameter given several times as the list of its values.
pub fn request_input(headers: &HeaderMap, query: &str, body: &[u8]) -> Result<Value, ApiError> {
    let form = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().to_ascii_lowercase().starts_with("application/x-www-form-urlencoded"));
    let body = if body.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else if form {
        fields(body)
    } else {
        serde_json::from_slice(body).map_err(|e| {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "INVALID_BODY",
                format!(
                    "the body is not JSON (nor form fields with Content-Type: application/x-www-form-urlencoded): {e}"
                ),
            )
        })?
    };
    let mut kept = serde_json::Map::new();
    for (name, value) in headers {
        let name = name.as_str(); // the http crate keeps names lower-cased
        if SECRET_HEADERS.contains(&name) {
            continue;
        }
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        match kept.get_mut(name) {
            Some(Value::String(before)) => *before = format!("{before}, {value}"),
            _ => {
                kept.insert(name.to_string(), Value::String(value));
            }
        }
    }
    Ok(serde_json::json!({ "body": body, "headers": kept, "query": fields(query.as_bytes()) }))
}

/// `a=1&b=x+y&a=2` as `{"a": ["1", "2"], "b": "x y"}`.
fn fields(text: &[u8]) -> Value {
    let mut fields = serde_json::Map::new();
    for pair in text.split(|b| *b == b'&').filter(|p| !p.is_empty()) {
        let (name, value) = match pair.iter().position(|b| *b == b'=') {
            Some(at) => (&pair[..at], &pair[at + 1..]),
            None => (pair, &b""[..]),
        };
        let (name, value) = (unescape(name), Value::String(unescape(value)));
        match fields.get_mut(&name) {
            Some(Value::Array(values)) => values.push(value),
            Some(first) => *first = Value::Array(vec![first.take(), value]),
            None => {
                fields.insert(name, value);
            }
        }
    }
    Value::Object(fields)
}

/// Form encoding undone: `+` is a space, `%XX` a byte; the bytes read as UTF-8 (lossily).
fn unescape(text: &[u8]) -> String {
    let mut bytes = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'+' => bytes.push(b' '),
            b'%' if i + 2 < text.len() => {
                match std::str::from_utf8(&text[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(byte) => {
                        bytes.push(byte);
                        i += 2;
                    }
                    None => bytes.push(b'%'),
                }
            }
            b => bytes.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A delivery's idempotency key (`Idempotency-Key`, else `X-GitHub-Delivery`), as UTF-8 text: a key that is not
/// is refused, never ignored (ignored, a redelivery would start a second run).
fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    for header in ["idempotency-key", "x-github-delivery"] {
        let Some(value) = headers.get(header) else { continue };
        let refuse = |why: &str| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "INVALID_HEADER",
                format!(
                    "{header}: {why}; nothing was started: send the key again as UTF-8 text of at most {MAX_KEY} bytes"
                ),
            )
        };
        let key = std::str::from_utf8(value.as_bytes()).map_err(|_| refuse("the key is not UTF-8 text"))?.trim();
        if key.len() > MAX_KEY {
            return Err(refuse(&format!("the key is {} bytes long", key.len())));
        }
        if !key.is_empty() {
            return Ok(Some(key.to_string()));
        }
    }
    Ok(None)
}

/// The signature header's HMAC, checked against the body's.
fn verify(secret: &str, headers: &HeaderMap, body: &[u8]) -> Result<(), ApiError> {
    let given = ["x-switchyard-signature", "x-hub-signature-256"]
        .iter()
        .find_map(|h| headers.get(*h).and_then(|v| v.to_str().ok()))
        .ok_or_else(|| ApiError::unauthorized("this webhook is signed: send X-Switchyard-Signature: sha256=HEX"))?;
    let Some(bytes) = given.trim().strip_prefix("sha256=").and_then(unhex) else {
        return Err(ApiError::unauthorized("the signature is not sha256=HEX"));
    };
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes a key of any length");
    mac.update(body);
    mac.verify_slice(&bytes).map_err(|_| ApiError::unauthorized("the signature does not match the body"))
}

/// `sha256=HEX` for `body` signed with `secret`: what a sender puts in `X-Switchyard-Signature`.
pub fn sign(secret: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes a key of any length");
    mac.update(body);
    format!("sha256={}", switchyard_engine::store::postgres::team::hex(&mac.finalize().into_bytes()))
}

fn unhex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok()).collect()
}
