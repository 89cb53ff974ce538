//! The Tauri commands, generated from the list of commands (`switchyard_api::for_each_command!`): each calls the
//! command of its name with the app as its host; a channel becomes the command's `Events`. Their signatures are what
//! the TypeScript bindings are generated from (`ui/src/bindings.ts`).

use switchyard_api::{CommandError, Events, Plain};
use tauri::ipc::Channel;
use tauri::{AppHandle, Manager};

use crate::commands::AppState;

/// A window's channel as a command's stream of values.
fn events<T: tauri::ipc::IpcResponse + Send + Sync + 'static>(channel: Channel<T>) -> Events<T> {
    Events::to(move |value| channel.send(value).is_ok())
}

/// One command. Async, so that none runs on the main thread: a command there freezes the window's painting in
/// WebKitGTK while it runs (reading or validating a 5,000-node document takes a second in a debug build).
macro_rules! tauri_command {
    (fallible $(#[$meta:meta])* $name:ident ( $($arg:ident : $ty:ty),* $(; $ch:ident : $cht:ty)? ) -> $ret:ty) => {
        $(#[$meta])*
        #[tauri::command]
        #[specta::specta]
        pub async fn $name(app: AppHandle, $($arg: $ty,)* $($ch: Channel<$cht>)?) -> Result<$ret, CommandError> {
            let state = app.state::<AppState>();
            switchyard_api::$name(&*state, $($arg,)* $(events::<$cht>($ch))?).await
        }
    };
    (plain $(#[$meta:meta])* $name:ident ( $($arg:ident : $ty:ty),* ) -> $ret:ty) => {
        $(#[$meta])*
        #[tauri::command]
        #[specta::specta]
        pub async fn $name(app: AppHandle, $($arg: $ty),*) -> $ret {
            let state = app.state::<AppState>();
            switchyard_api::$name(&*state, $($arg),*).await.unwrap_or_else(Plain::instead)
        }
    };
}

macro_rules! tauri_commands {
    ($( $(#[$meta:meta])* $name:ident ( $($arg:ident : $ty:ty),* $(; $ch:ident : $cht:ty)? ) -> $ret:ty,
        $kind:ident, $needs:ident $(, $flag:ident $(($with:ident))?)?; )*) => {
        $( tauri_command! { $kind $(#[$meta])* $name ( $($arg : $ty),* $(; $ch : $cht)? ) -> $ret } )*

        /// The command set, shared by the app and by the bindings export.
        pub fn specta_builder() -> tauri_specta::Builder<tauri::Wry> {
            tauri_specta::Builder::<tauri::Wry>::new().commands(tauri_specta::collect_commands![$($name),*])
        }
    };
}

switchyard_api::for_each_command!(tauri_commands);
