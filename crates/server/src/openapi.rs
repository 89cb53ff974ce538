//! The OpenAPI document at `/openapi.json`, generated from the handlers' annotations.

use axum::Json;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::{api, commands, error, hooks, metrics, workers};

#[derive(OpenApi)]
#[openapi(
    info(title = "Switchyard", description = "Start, follow, decide and cancel workflow runs that workers run."),
    paths(api::workflows, api::workflow_versions, api::start_run, api::list_runs, api::show_run, api::follow_run, api::decide, api::cancel,
        workers::workers, hooks::deliver, commands::call, metrics::scrape),
    components(schemas(error::ApiError, api::Workflows, api::WorkflowInfo, api::WorkflowVersion, api::StartRun, api::Started, api::Decide,
        api::Decided, api::Cancelled, workers::WorkerInfo, hooks::Pong)),
    modifiers(&Token)
)]
pub struct Doc;

/// The bearer token every `/api/` route needs.
struct Token;

impl Modify for Token {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "token",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("`switchyard token create NAME` prints one"))
                    .build(),
            ),
        );
    }
}

pub async fn document() -> Json<utoipa::openapi::OpenApi> {
    Json(Doc::openapi())
}
