//! Webhooks: `POST /hooks/NAME` starts a run of the workflow whose trigger names the hook, with the request's JSON
//! body as its input.
//!
//! Invariants:
//! - A delivery is authenticated before anything else is read: by its HMAC-SHA256 signature when the trigger names
//!   a secret (`secret_env`: the variable holding it on the server), as GitHub (`X-Hub-Signature-256`) and Stripe
//!   sign theirs (`X-Switchyard-Signature: sha256=HEX`), else by a bearer token. Signatures are compared in constant
//!   time.
//! - A delivery with an idempotency key (`Idempotency-Key`, or GitHub's `X-GitHub-Delivery`) starts at most one run
//!   per key and hook, across every server instance and restart (`team::deliver`); a redelivery answers with the run
//!   the first started.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

use crate::api::{Start, Started};
use crate::error::ApiError;
use crate::request::{self, Segment};
use crate::AppState;

/// The longest idempotency key kept (in bytes): longer ones are refused, not cut (two keys cut alike would be one).
const MAX_KEY: usize = 1024;

#[utoipa::path(post, path = "/hooks/{name}", tag = "webhooks",
    params(("name" = String, Path, description = "The webhook's name, as its trigger gives it"),
        ("Idempotency-Key" = Option<String>, Header,
            description = "Deliveries with the same key start one run (UTF-8, at most 1024 bytes)"),
        ("X-Switchyard-Signature" = Option<String>, Header, description = "sha256=HEX: HMAC-SHA256 of the body")),
    request_body(content = Object, description = "The run's input (JSON); empty for none"),
    responses((status = 202, body = Started), (status = 400, body = ApiError), (status = 401, body = ApiError),
        (status = 404, body = ApiError), (status = 413, body = ApiError), (status = 422, body = ApiError)))]
pub async fn deliver(
    State(state): State<AppState>,
    Segment(name): Segment,
    request: Request,
) -> Result<(StatusCode, Json<Started>), ApiError> {
    let headers = request.headers().clone();
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
            crate::auth::check(&state, &headers).await?;
            read(request).await?
        }
    };
    let input: Option<Value> = if body.iter().all(u8::is_ascii_whitespace) {
        None
    } else {
        Some(serde_json::from_slice(&body).map_err(|e| {
            ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "INVALID_BODY", format!("the body is not JSON: {e}"))
        })?)
    };
    let key = idempotency_key(&headers)?
        // No key: every delivery is a new one.
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let started = state.start(&workflow, input, Start::Delivery { hook: name, key }).await?;
    Ok((StatusCode::ACCEPTED, Json(started)))
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
    format!("sha256={}", switchyard_engine::postgres::team::hex(&mac.finalize().into_bytes()))
}

fn unhex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok()).collect()
}
