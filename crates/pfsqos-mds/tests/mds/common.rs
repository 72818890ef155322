//! What every area's tests share: the keys.

/// The cluster's key: clients prove it.
pub const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";
/// The servers' own key: the server roles (`Lctl`, `Mds`, `Oss`) prove it.
pub const SERVER_KEY: &[u8] = b"test-server-key-fedcba9876543210";
