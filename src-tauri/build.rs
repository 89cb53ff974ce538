fn main() {
    // The window's files (`dist/`, built by Vite) are embedded when the app is built with the UI inside; a new build
    // of them must rebuild the app, or it would show the previous UI.
    println!("cargo:rerun-if-changed=../dist");
    tauri_build::build()
}
