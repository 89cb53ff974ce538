//! Who may use the API: a bearer token (`switchyard token create NAME`), looked up by its hash on every request, so
//! that a revoked token is refused from the next request on. No request reaches a run without one; webhooks are
//! authenticated by their signature instead when their trigger names a secret (`hooks.rs`).

use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::Response;
use switchyard_engine::postgres::team::token_hash;

use crate::error::{blocking, ApiError};
use crate::AppState;

/// The bearer token of a request, if it carries one.
pub fn bearer(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(axum::http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim().to_string()).filter(|t| !t.is_empty())
}

/// Checks a request's token; the token's name, or why it is refused.
pub async fn check(state: &AppState, headers: &HeaderMap) -> Result<String, ApiError> {
    let Some(token) = bearer(headers) else {
        return Err(ApiError::unauthorized(
            "this request carries no token: send `Authorization: Bearer TOKEN` (create one with `switchyard token create NAME`)",
        ));
    };
    let store = state.store.clone();
    let name = blocking(move || Ok(store.token_named(&token_hash(&token))?)).await?;
    name.ok_or_else(|| ApiError::unauthorized("this token is not valid: it was revoked, or never created here"))
}

/// The middleware in front of `/api/`.
pub async fn require_token(State(state): State<AppState>, request: Request, next: Next) -> Result<Response, ApiError> {
    check(&state, request.headers()).await?;
    Ok(next.run(request).await)
}
