//! The API's errors: every failure reaches the client as `{code, message}` with an HTTP status, the codes being the
//! engine's where the meaning is the same (docs/errors.md).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use switchyard_engine::session::SessionError;
use switchyard_engine::store::postgres::PgError;
use switchyard_engine::store::StoreError;

/// A failure as the client sees it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ApiError {
    /// Stable: scripts branch on it.
    pub code: String,
    /// Says what went wrong and what to do.
    pub message: String,
    #[serde(skip)]
    pub status: StatusCode,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &str, message: impl Into<String>) -> ApiError {
        ApiError { code: code.to_string(), message: message.into(), status }
    }

    pub fn unauthorized(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", message)
    }

    /// The status a code answers with.
    pub(crate) fn status_of(code: &str) -> StatusCode {
        match code {
            "NO_SUCH_RUN" | "NO_SUCH_WORKFLOW" | "NO_SUCH_HOOK" => StatusCode::NOT_FOUND,
            "INSUFFICIENT_SCOPE" => StatusCode::FORBIDDEN,
            "INPUT_MISMATCH" | "INVALID_INPUT_SCHEMA" | "INVALID_DECISION" | "INVALID_BODY" => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            "NOT_RESUMABLE" | "NOT_PENDING" | "RUN_EXISTS" | "AMBIGUOUS_RUN_ID" => StatusCode::CONFLICT,
            "PG_CONNECT" | "PG_TIMEOUT" => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn coded(code: &str, message: String) -> ApiError {
        ApiError { status: ApiError::status_of(code), code: code.to_string(), message }
    }
}

impl From<PgError> for ApiError {
    fn from(e: PgError) -> ApiError {
        ApiError::coded(e.code(), e.to_string())
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        ApiError::coded(e.code(), e.to_string())
    }
}

impl From<SessionError> for ApiError {
    fn from(e: SessionError) -> ApiError {
        ApiError::coded(e.code(), e.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self)).into_response()
    }
}
