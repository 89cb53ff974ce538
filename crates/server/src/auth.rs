//! Who may use the API: a bearer token (`switchyard token create NAME [--scope S] [--expires D]`), looked up by its
//! hash on every request, so that a revoked, rotated or expired token is refused from the next request on. No request
//! reaches a run without one; webhooks are authenticated by their signature instead when their trigger names a
//! secret (`hooks.rs`).
//!
//! Invariants:
//! - A token's scope bounds what its requests do: `read` reads (runs, events, workflows, metrics); `run` also starts
//!   runs (the API, a webhook without a secret, `/mcp`); `decide` also decides approvals and cancels runs; `admin`
//!   may do everything. The act checks it (`Caller::may`), wherever the request came in: a route, a command or an
//!   MCP call.
//! - The caller (the token's name and scope) is in every authenticated request's extensions, for the handlers.

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use switchyard_engine::store::postgres::team::{token_hash, Caller, Scope, TokenFound};

use crate::error::ApiError;
use crate::AppState;

/// The bearer token of a request, if it carries one.
pub fn bearer(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(axum::http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim().to_string()).filter(|t| !t.is_empty())
}

/// Checks a request's token: who it comes from, or why it is refused.
pub async fn check(state: &AppState, headers: &HeaderMap) -> Result<Caller, ApiError> {
    let Some(token) = bearer(headers) else {
        return Err(ApiError::unauthorized(
            "this request carries no token: send `Authorization: Bearer TOKEN` (create one with `switchyard token create NAME`)",
        ));
    };
    match state.store.token_named(&token_hash(&token)).await? {
        TokenFound::Live(caller) => Ok(caller),
        TokenFound::Expired { name, at } => Err(ApiError::unauthorized(format!(
            "token `{name}` expired at {at}: ask for a new one (`switchyard token create NAME --expires …`)"
        ))),
        TokenFound::Unknown => {
            Err(ApiError::unauthorized("this token is not valid: it was revoked or rotated, or never created here"))
        }
    }
}

/// Refuses a caller whose scope is below `needed` for `act` ("start a run"), with 403 `INSUFFICIENT_SCOPE`.
pub fn require(caller: &Caller, needed: Scope, act: &str) -> Result<(), ApiError> {
    if caller.scope >= needed {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::FORBIDDEN,
        "INSUFFICIENT_SCOPE",
        format!(
            "token `{}` has scope `{}`, and to {act} needs scope `{}` or above: use a token made with \
             `switchyard token create NAME --scope {}`",
            caller.name,
            caller.scope.as_str(),
            needed.as_str(),
            needed.as_str()
        ),
    ))
}

/// The middleware in front of `/api/` and `/mcp`: the caller goes into the request's extensions.
pub async fn require_token(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let caller = check(&state, request.headers()).await?;
    request.extensions_mut().insert(caller);
    Ok(next.run(request).await)
}
