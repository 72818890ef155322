//! What every area's tests share: the keys and a client connected by role.

use std::net::SocketAddr;

use pfsqos_wire::client::OssClient;
use pfsqos_wire::protocol::Role;

/// The cluster's key: clients prove it.
pub const KEY: &[u8] = b"test-cluster-key-0123456789abcdef";
/// The servers' own key: the server roles (`Lctl`, `Mds`, `Oss`) prove it.
pub const SERVER_KEY: &[u8] = b"test-server-key-fedcba9876543210";

/// The key a peer of `role` proves: the servers' own for a server role, else the cluster's.
pub fn key_for(role: Role) -> &'static [u8] {
    if role.is_server_role() {
        SERVER_KEY
    } else {
        KEY
    }
}

/// A client of the ossd at `addr` in `role`, holding that role's key.
pub async fn connect(addr: SocketAddr, role: Role) -> OssClient {
    OssClient::connect(addr, key_for(role), role).await.unwrap()
}
