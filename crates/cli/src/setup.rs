//! What this machine offers a workflow: the model providers and MCP servers the settings configure, checked.

use serde_json::json;
use switchyard_engine::providers::{Providers, Settings};

use crate::check::settings;
use crate::out::{counted, outln};
use crate::Unusable;

pub(crate) async fn cmd_mcp(json: bool) -> Result<u8, Unusable> {
    let settings = settings()?;
    if settings.mcp_servers.is_empty() && !json {
        outln!("no MCP servers configured: add them under mcp_servers in {}", Settings::default_path().display());
        return Ok(0);
    }
    let mut rows = Vec::new();
    let mut failed = false;
    for (name, config) in &settings.mcp_servers {
        let transport = match config {
            switchyard_engine::mcp::McpServerConfig::Stdio(_) => "stdio",
            switchyard_engine::mcp::McpServerConfig::Http(_) => "http",
        };
        let probed = switchyard_engine::mcp::probe(name, config).await;
        failed |= probed.is_err();
        if !json {
            match &probed {
                Ok(tools) => {
                    outln!("✓ {name} ({transport}): {}", counted(tools.len() as u64, "tool"));
                    for t in tools {
                        let marker = if t.destructive { " [changes things]" } else { "" };
                        outln!("    {name}__{}{marker}  {}", t.name, t.description.lines().next().unwrap_or(""));
                    }
                }
                Err(e) => outln!("✗ {name} ({transport}): {e}"),
            }
        }
        rows.push(match probed {
            Ok(tools) => json!({"name": name, "transport": transport, "ok": true, "tools": tools.iter().map(|t| json!({"name": t.name, "description": t.description, "destructive": t.destructive})).collect::<Vec<_>>()}),
            Err(e) => json!({"name": name, "transport": transport, "ok": false, "error": e.to_string(), "tools": []}),
        });
    }
    if json {
        outln!("{}", serde_json::to_string_pretty(&rows).unwrap());
    }
    Ok(if failed { 1 } else { 0 })
}

pub(crate) async fn cmd_providers() -> Result<u8, Unusable> {
    let settings = settings()?;
    outln!("settings: {}", Settings::default_path().display());
    let mut all_ok = true;
    for (id, status) in Providers::check(&settings).await {
        match status {
            Ok(detail) => outln!("{id:<12} ok       {detail}"),
            Err(why) => {
                all_ok = false;
                outln!("{id:<12} no       {why}");
            }
        }
    }
    if let Some(model) = &settings.default_model {
        outln!("default model: {model}");
    }
    Ok(if all_ok { 0 } else { 1 })
}
