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
    /// Prune runs that ended longer ago than this (30d, 12h), with their events: once as the server starts and every
    /// hour after, each prune logged. Off unless given (docs/server.md, "Keeping the database small").
    #[arg(long, value_name = "AGE")]
    prune_older_than: Option<String>,
    /// With --prune-older-than: keep webhook delivery keys and schedule firings this long after they came (and always
    /// while their run is kept), so that a late redelivery of a pruned run's key starts nothing.
    #[arg(long, value_name = "AGE", default_value = switchyard_engine::store::KEEP_DELIVERIES, requires = "prune_older_than")]
    keep_deliveries: String,
}

#[derive(Subcommand)]
pub enum TokenCommand {
    /// Create an API token and print it (once: only its hash is kept).
    Create {
        name: String,
        /// What it may do: read (runs, events, workflows), run (also start runs), decide (also decide approvals and
        /// cancel runs), admin (everything).
        #[arg(long, default_value = "admin")]
        scope: String,
        /// When it stops working, from now: 90d, 12h, 30m (none: never).
        #[arg(long)]
        expires: Option<String>,
    },
    /// Give a token a new value, keeping its name and scope (and its expiry, unless --expires gives a new one): the
    /// old value is refused from now on.
    Rotate {
        name: String,
        /// A new lifetime, from now: 90d, 12h, 30m (needed for a token that has expired).
        #[arg(long)]
        expires: Option<String>,
    },
    /// Revoke a token: requests with it are refused from now on.
    Revoke { name: String },
    /// List tokens (names and dates; never the tokens).
    List,
}

/// A token's lifetime as `--expires` takes it (`90d`, `12h`, `30m`), in seconds.
#[cfg(feature = "postgres")]
fn expiry(text: &str) -> Result<u64, Unusable> {
    let text = text.trim();
    let at = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let unit = match &text[at..] {
        "m" => Some(60),
        "h" => Some(3600),
        "d" => Some(86_400),
        _ => None,
    };
    // At most 100 years: what the database's time can hold, with room to spare.
    match (text[..at].parse::<u64>().ok().filter(|n| *n > 0), unit) {
        (Some(n), Some(unit)) if n.saturating_mul(unit) <= 36_500 * 86_400 => Ok(n * unit),
        _ => Err(coded(
            "INVALID_EXPIRY",
            format!("--expires {text}: give a number of days, hours or minutes (90d, 12h, 30m), at most 36500d"),
        )),
    }
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

    use switchyard_engine::store::postgres::PgStore;

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
    let retention = match &args.prune_older_than {
        Some(older_than) => {
            let age = |flag: &str, text: &str| {
                switchyard_engine::store::parse_age(text)
                    .map_err(|why| coded("INVALID_ARGUMENTS", format!("--{flag}: {why}")))
            };
            Some(switchyard_server::retention::Retention {
                runs: age("prune-older-than", older_than)?,
                keys: age("keep-deliveries", &args.keep_deliveries)?,
                every: std::time::Duration::from_secs(3600),
            })
        }
        None => None,
    };
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
        retention,
    };
    // Every line of the server's log starts with when it was written (RFC 3339, UTC).
    let report = Arc::new(|line: String| crate::out::logln!("{line}"));
    switchyard_server::serve(store, options, report, crate::worker::stop_signal())
        .await
        .map_err(|e| coded(e.code(), e.to_string()))?;
    crate::out::logln!("server stopped");
    Ok(0)
}

#[cfg(feature = "postgres")]
pub fn cmd_token(db: Option<&str>, command: TokenCommand) -> Result<u8, Unusable> {
    use switchyard_engine::store::postgres::team::{new_token, valid_token_name, Rotated, Scope};
    use switchyard_engine::store::postgres::{PgStore, Wait};

    use crate::out::errln;

    let url = postgres_url(db, "token")?;
    let store = PgStore::open(url).map_err(|e| coded(e.code(), e.to_string()))?;
    let failed = |e: switchyard_engine::store::postgres::PgError| coded(e.code(), e.to_string());
    match command {
        TokenCommand::Create { name, scope, expires } => {
            if !valid_token_name(&name) {
                return Err(coded(
                    "INVALID_TOKEN_NAME",
                    format!("token name `{name}`: use 1 to 64 letters, digits, `-`, `_` or `.`"),
                ));
            }
            let Some(scope) = Scope::parse(scope.trim()) else {
                return Err(coded("INVALID_SCOPE", format!("--scope {scope}: give one of read, run, decide, admin")));
            };
            let expires_in = expires.as_deref().map(expiry).transpose()?;
            let (token, hash) = new_token();
            store.create_scoped_token(&name, &hash, scope, expires_in).wait().map_err(failed)?;
            println!("{token}");
            let until = expires.map(|e| format!(", for {e}")).unwrap_or_default();
            errln!(
                "token `{name}` created (scope {}{until}): keep it now; it is not shown again (send it as \
                 Authorization: Bearer TOKEN)",
                scope.as_str()
            );
        }
        TokenCommand::Rotate { name, expires } => {
            let expires_in = expires.as_deref().map(expiry).transpose()?;
            let (token, hash) = new_token();
            match store.rotate_token(&name, &hash, expires_in).wait().map_err(failed)? {
                Rotated::Yes => {}
                Rotated::NoSuchToken => {
                    return Err(coded(
                        "NO_SUCH_TOKEN",
                        format!("no live token named `{name}`; `switchyard token list` lists them"),
                    ))
                }
                Rotated::Expired { at } => {
                    return Err(coded(
                        "TOKEN_EXPIRED",
                        format!(
                            "token `{name}` expired at {at}: give it a new lifetime as you rotate it \
                             (`switchyard token rotate {name} --expires 90d`)"
                        ),
                    ))
                }
            }
            println!("{token}");
            errln!("token `{name}` rotated: its old value is refused from now on; keep this one now");
        }
        TokenCommand::Revoke { name } => {
            if !store.revoke_token(&name).wait().map_err(failed)? {
                return Err(coded(
                    "NO_SUCH_TOKEN",
                    format!("no token named `{name}`; `switchyard token list` lists them"),
                ));
            }
            errln!("token `{name}` revoked");
        }
        TokenCommand::List => {
            for t in store.tokens().wait().map_err(failed)? {
                let state = if t.revoked {
                    "revoked"
                } else if t.expired {
                    "expired"
                } else {
                    "live"
                };
                let expires = t.expires.map(|e| format!("expires {e}")).unwrap_or_else(|| "no expiry".into());
                let used = t.last_used.map(|u| format!("last used {u}")).unwrap_or_else(|| "never used".into());
                println!("{}\t{}\t{state}\t{}\t{expires}\t{used}", t.name, t.created, t.scope.as_str());
            }
        }
    }
    Ok(0)
}
