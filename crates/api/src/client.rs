//! A typed client of a server's commands, generated from the list: `client::open_run(&remote, run_id)` is the
//! server's `open_run`, its arguments sent as the generated TypeScript client sends them (`{"runId": …}`). Commands
//! the list marks `remote` have a function here: what the desktop asks a server about the server's runs (a run's
//! events are followed with `Remote::follow`).

use serde_json::{Map, Value};
use switchyard_engine::remote::Remote;

use crate::CommandError;

/// A parameter's name as the generated clients send it: `run_id` → `runId`.
pub fn camel(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// Adds one argument, named as the clients name it.
#[doc(hidden)]
pub fn arg(args: &mut Map<String, Value>, name: &str, value: impl serde::Serialize) -> Result<(), CommandError> {
    let value = serde_json::to_value(value)
        .map_err(|e| CommandError::new("INVALID_BODY", format!("argument `{name}` cannot be sent: {e}")))?;
    args.insert(camel(name), value);
    Ok(())
}

macro_rules! client_command {
    ([remote] $(#[$meta:meta])* $name:ident ( $($arg:ident : $ty:ty),* ) -> $ret:ty) => {
        $(#[$meta])*
        pub async fn $name(remote: &Remote, $($arg: $ty),*) -> Result<$ret, CommandError> {
            #[allow(unused_mut)]
            let mut args = Map::new();
            $( arg(&mut args, stringify!($arg), $arg)?; )*
            Ok(remote.call(stringify!($name), Value::Object(args)).await?)
        }
    };
    ([$($flag:ident)?] $(#[$meta:meta])* $name:ident ( $($arg:ident : $ty:ty),* $(; $ch:ident : $cht:ty)? ) -> $ret:ty) => {};
}

macro_rules! client {
    ($( $(#[$meta:meta])* $name:ident ( $($arg:ident : $ty:ty),* $(; $ch:ident : $cht:ty)? ) -> $ret:ty,
        $kind:ident, $needs:ident $(, $remote:ident $(($with:ident))?)?; )*) => {
        $( client_command! { [$($remote)?] $(#[$meta])* $name ( $($arg : $ty),* $(; $ch : $cht)? ) -> $ret } )*
    };
}

crate::for_each_command!(client);

#[cfg(test)]
mod tests {
    #[test]
    fn parameters_are_named_as_the_typescript_client_names_them() {
        assert_eq!(super::camel("run_id"), "runId");
        assert_eq!(super::camel("workflow_path"), "workflowPath");
        assert_eq!(super::camel("node"), "node");
    }
}
