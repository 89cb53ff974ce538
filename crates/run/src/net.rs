//! What every HTTP client of the engine shares — the model providers' and MCP's: TLS set-up, once per process.

use std::sync::OnceLock;

/// Installs rustls' crypto provider (ring) once, before any HTTP client is built (also a shell's or a test's own).
pub fn install_crypto() {
    static CRYPTO: OnceLock<()> = OnceLock::new();
    CRYPTO.get_or_init(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
