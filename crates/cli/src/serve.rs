//! `switchyard serve` and `switchyard token`: their arguments and what they print. The server itself is
//! `switchyard_server`; tokens are kept (hashed) in the PostgreSQL run store.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::{coded, Unusable};

#[derive(Args)]
pub struct ServeArgs {
    /// Where to listen: ADDR:PORT. The default takes requests from this machine only; put a TLS proxy in front
    /// before listening on other addresses.
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "ADDR:PORT")]
    listen: String,
    /// The folder of workflow files to serve (read again when a file changes).
    #[arg(long, default_value = ".", value_name = "DIR")]
    workflows: PathBuf,
    /// Answer every run this server starts from this answers file, calling no model (demos, tests).
    #[arg(long, value_name = "FILE")]
    answers: Option<PathBuf>,
    /// Also serve the static files of DIR at / (the built web app: `npm run build` makes dist/). The web app does
    /// not use the API yet (docs/server.md, "Not yet").
    #[arg(long, value_name = "DIR")]
    ui: Option<PathBuf>,
}

#[derive(Subcommand)]
pub enum TokenCommand {
    /// Create an API token and print it (once: only its hash is kept).
    Create { name: String },
    /// Revoke a token: requests with it are refused from now on.
    Revoke { name: String },
    /// List tokens (names and dates; never the tokens).
    List,
}

/// The PostgreSQL URL a server command needs.
fn postgres_url<'a>(db: Option<&'a str>, what: &str) -> Result<&'a str, Unusable> {
    match db {
        Some(db) if db.starts_with("postgres://") || db.starts_with("postgresql://") => Ok(db),
        _ => Err(coded(
            "SERVE_NEEDS_POSTGRES",
            format!(
                "{what} uses a PostgreSQL run store that workers share: pass --db postgres://… (or set SWITCHYARD_DB)"
            ),
        )),
    }
}

#[cfg(not(feature = "postgres"))]
pub async fn cmd_serve(_db: Option<&str>, _args: ServeArgs) -> Result<u8, Unusable> {
    Err(coded(
        "POSTGRES_NOT_BUILT",
        "this switchyard was built without PostgreSQL support (the `postgres` feature), which a server needs",
    ))
}

#[cfg(not(feature = "postgres"))]
pub fn cmd_token(_db: Option<&str>, _command: TokenCommand) -> Result<u8, Unusable> {
    Err(coded(
        "POSTGRES_NOT_BUILT",
        "this switchyard was built without PostgreSQL support (the `postgres` feature), which tokens need",
    ))
}

#[cfg(feature = "postgres")]
pub async fn cmd_serve(db: Option<&str>, args: ServeArgs) -> Result<u8, Unusable> {
    use std::sync::Arc;

    use switchyard_engine::postgres::PgStore;

    use crate::out::errln;

    let url = postgres_url(db, "serve")?;
    let listen = args.listen.parse().map_err(|_| {
        coded(
            "INVALID_LISTEN",
            format!("--listen {}: write an IP address and a port, e.g. 127.0.0.1:8080 (not a host name)", args.listen),
        )
    })?;
    if !args.workflows.is_dir() {
        return Err(coded(
            "SERVE_WORKFLOWS",
            format!(
                "--workflows {}: no such folder; give the folder that holds the workflow files",
                args.workflows.display()
            ),
        ));
    }
    if let Some(answers) = &args.answers {
        if !answers.is_file() {
            return Err(coded("ANSWERS_UNREADABLE", format!("--answers {}: no such file", answers.display())));
        }
    }
    if let Some(ui) = &args.ui {
        if !ui.join("index.html").is_file() {
            return Err(coded(
                "SERVE_UI",
                format!(
                    "--ui {}: no index.html there; build the web app first (npm run build makes dist/)",
                    ui.display()
                ),
            ));
        }
    }
    let url = url.to_string();
    let store = tokio::task::spawn_blocking(move || PgStore::open(&url))
        .await
        .expect("opening does not panic")
        .map_err(|e| coded(e.code(), e.to_string()))?;
    let options = switchyard_server::Options {
        listen,
        workflows: args.workflows,
        answers: args.answers.map(|a| std::fs::canonicalize(&a).unwrap_or(a)),
        ui: args.ui,
    };
    let report = Arc::new(|line: String| errln!("{line}"));
    switchyard_server::serve(store, options, report, crate::worker::stop_signal())
        .await
        .map_err(|e| coded(e.code(), e.to_string()))?;
    errln!("server stopped");
    Ok(0)
}

#[cfg(feature = "postgres")]
pub fn cmd_token(db: Option<&str>, command: TokenCommand) -> Result<u8, Unusable> {
    use switchyard_engine::postgres::team::{new_token, valid_token_name};
    use switchyard_engine::postgres::PgStore;

    use crate::out::errln;

    let url = postgres_url(db, "token")?;
    let store = PgStore::open(url).map_err(|e| coded(e.code(), e.to_string()))?;
    let failed = |e: switchyard_engine::postgres::PgError| coded(e.code(), e.to_string());
    match command {
        TokenCommand::Create { name } => {
            if !valid_token_name(&name) {
                return Err(coded(
                    "INVALID_TOKEN_NAME",
                    format!("token name `{name}`: use 1 to 64 letters, digits, `-`, `_` or `.`"),
                ));
            }
            let (token, hash) = new_token();
            store.create_token(&name, &hash).map_err(failed)?;
            println!("{token}");
            errln!(
                "token `{name}` created: keep it now; it is not shown again (send it as Authorization: Bearer TOKEN)"
            );
        }
        TokenCommand::Revoke { name } => {
            if !store.revoke_token(&name).map_err(failed)? {
                return Err(coded(
                    "NO_SUCH_TOKEN",
                    format!("no token named `{name}`; `switchyard token list` lists them"),
                ));
            }
            errln!("token `{name}` revoked");
        }
        TokenCommand::List => {
            for t in store.tokens().map_err(failed)? {
                println!("{}\t{}\t{}", t.name, t.created, if t.revoked { "revoked" } else { "live" });
            }
        }
    }
    Ok(0)
}
