//! The shared cluster key every role authenticates with (see [`crate::conn`]'s handshake), read
//! from its file.

use std::path::Path;

use anyhow::{bail, Context};

/// Default cluster key file.
pub const DEFAULT_KEY_FILE: &str = "/etc/pfsqos/cluster.key";

/// Reads a key file: its bytes without trailing whitespace.
pub fn read_key_file(path: &Path) -> anyhow::Result<Vec<u8>> {
    let meta = std::fs::metadata(path).with_context(|| format!("key file {}", path.display()))?;
    if meta.len() > 4096 {
        bail!("key file {} is larger than 4096 bytes", path.display());
    }
    let mut key = std::fs::read(path).with_context(|| format!("key file {}", path.display()))?;
    while key.last().is_some_and(|b| b.is_ascii_whitespace()) {
        key.pop();
    }
    if key.len() < 16 {
        bail!("key file {} holds fewer than 16 bytes", path.display());
    }
    Ok(key)
}

/// Reads the servers' own key (`--server-key-file`; see [`crate::conn::ServerKeys`]),
/// refusing one equal to `cluster_key`: every client node holds that one, so it would let
/// clients assume the server roles again.
pub fn read_server_key_file(path: &Path, cluster_key: &[u8]) -> anyhow::Result<Vec<u8>> {
    let server_key = read_key_file(path)?;
    if server_key == cluster_key {
        bail!(
            "the server key in {} is the cluster key: clients hold that one",
            path.display()
        );
    }
    Ok(server_key)
}
