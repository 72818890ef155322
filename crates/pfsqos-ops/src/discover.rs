//! Finding the cluster a client tool (`lctl`, `stat`, `getstripe`) talks to, so that after
//! `pfsqos up` nothing needs `--server` or `--key-file`.
//!
//! Places, in order (the first that holds a cluster wins):
//!
//! 1. `./pfsqos-state`, the state directory `pfsqos up` and `pfsqos down` use in the current
//!    directory;
//! 2. `$PFSQOS_CLUSTER`, a cluster file, then `$PFSQOS_STATE`, a state directory (a variable
//!    that is set but names nothing usable is an error, never skipped);
//! 3. `/etc/pfsqos`: `cluster.toml` there, else `cluster.key` with the default addresses.
//!
//! A state directory holds a cluster when it has [`ENDPOINTS_FILE`] (which `up` writes: the
//! addresses the roles really listen on, ports chosen at start included, and the key file) or
//! a `cluster.key` (then the default addresses, [`crate::cluster::OSS_LISTEN_DEFAULT`] and
//! [`crate::cluster::MDS_LISTEN_DEFAULT`]). A cluster file gives its roles' addresses, or the
//! endpoints its own state directory records. `--server` and `--key-file` override what is
//! found. When nothing is found the error lists every place looked at and what to run.

use std::ffi::OsString;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::cluster::{reach_addr, Cluster, MDS_LISTEN_DEFAULT, OSS_LISTEN_DEFAULT};

/// The state directory `up` and `down` use in the working directory (without a cluster file).
pub const STATE_DIR_NAME: &str = "pfsqos-state";
/// What `up` writes into the state directory for the client tools.
pub const ENDPOINTS_FILE: &str = "endpoints.toml";
/// Names a cluster file.
pub const ENV_CLUSTER: &str = "PFSQOS_CLUSTER";
/// Names a state directory.
pub const ENV_STATE: &str = "PFSQOS_STATE";
/// The system-wide place.
pub const ETC_DIR: &str = "/etc/pfsqos";
/// Longest `HOST:PORT` accepted (a 253-byte host name, `:`, a port; brackets for IPv6).
pub const HOST_PORT_LEN_MAX: usize = 261;
/// How long a host name may take to resolve.
pub const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest endpoints file read.
const ENDPOINTS_LEN_BYTES_MAX: u64 = 1 << 20;

/// Where a cluster's daemons and key are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoints {
    /// `HOST:PORT` of every ossd, in the cluster's OSS order.
    pub osses: Vec<String>,
    /// `HOST:PORT` of the MDS.
    pub mds: String,
    pub key_file: PathBuf,
    /// The servers' own key, which the administrator's tools (`lctl`, `stat`: role `Lctl`)
    /// prove where the cluster has one (see [`Endpoints::admin_key_file`]).
    pub server_key_file: Option<PathBuf>,
    /// The mount point, when the cluster has a mount.
    pub mount: Option<PathBuf>,
    /// Where this was found, for messages (`./pfsqos-state/endpoints.toml`).
    pub source: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct EndpointsFile {
    key_file: PathBuf,
    #[serde(default)]
    server_key_file: Option<PathBuf>,
    mds: String,
    oss: Vec<String>,
    mount: Option<PathBuf>,
}

/// Writes `STATE_DIR/endpoints.toml` (what `up` started, for the client tools).
pub fn write_endpoints(state_dir: &Path, e: &Endpoints) -> anyhow::Result<()> {
    let file = EndpointsFile {
        key_file: e.key_file.clone(),
        server_key_file: e.server_key_file.clone(),
        mds: e.mds.clone(),
        oss: e.osses.clone(),
        mount: e.mount.clone(),
    };
    let text = format!(
        "# Written by `pfsqos up`; `pfsqos lctl`, `stat` and `getstripe` read it to find this \
         cluster.\n{}",
        toml::to_string(&file)?
    );
    let path = state_dir.join(ENDPOINTS_FILE);
    let tmp = state_dir.join(format!("{ENDPOINTS_FILE}.tmp"));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, &path)?;
    Ok(())
}

/// The endpoints a state directory holds: `Ok(None)` when it holds no cluster.
pub fn read_state_dir(dir: &Path) -> Result<Option<Endpoints>, String> {
    let file = dir.join(ENDPOINTS_FILE);
    if file.exists() {
        let len = std::fs::metadata(&file)
            .map_err(|e| format!("{}: {e}", file.display()))?
            .len();
        if len > ENDPOINTS_LEN_BYTES_MAX {
            return Err(format!("{}: {len} bytes, too long", file.display()));
        }
        let text =
            std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        let f: EndpointsFile =
            toml::from_str(&text).map_err(|e| format!("{}: {}", file.display(), e.message()))?;
        return Ok(Some(Endpoints {
            osses: f.oss,
            mds: f.mds,
            key_file: f.key_file,
            server_key_file: f.server_key_file,
            mount: f.mount,
            source: file.display().to_string(),
        }));
    }
    let key = dir.join("cluster.key");
    if key.exists() {
        return Ok(Some(Endpoints {
            osses: vec![OSS_LISTEN_DEFAULT.to_string()],
            mds: MDS_LISTEN_DEFAULT.to_string(),
            key_file: key.clone(),
            server_key_file: Some(dir.join("server.key")),
            mount: None,
            source: key.display().to_string(),
        }));
    }
    Ok(None)
}

/// The endpoints of a cluster file: those its state directory records, else its roles'.
pub fn from_cluster(c: &Cluster) -> Result<Endpoints, String> {
    if let Some(e) = read_state_dir(&c.state_dir)?.filter(|e| e.source.ends_with(ENDPOINTS_FILE)) {
        return Ok(e);
    }
    Ok(Endpoints {
        osses: c
            .osses
            .iter()
            .map(|o| reach_addr(o.host.as_deref(), o.listen))
            .collect(),
        mds: reach_addr(c.mds.host.as_deref(), c.mds.listen),
        key_file: c.key_file.clone(),
        server_key_file: Some(c.server_key_file.clone()),
        mount: c.mount.enabled.then(|| c.mount.path.clone()),
        source: c
            .file
            .as_ref()
            .map_or("<defaults>".to_string(), |f| f.display().to_string()),
    })
}

/// What discovery reads from the process: the working directory, the two variables and the
/// system directory (a value, so tests need not change the process's environment).
#[derive(Clone, Debug)]
pub struct Lookup {
    pub cwd: PathBuf,
    pub env_cluster: Option<OsString>,
    pub env_state: Option<OsString>,
    pub etc: PathBuf,
}

impl Lookup {
    pub fn from_process() -> Lookup {
        Lookup {
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            env_cluster: std::env::var_os(ENV_CLUSTER).filter(|v| !v.is_empty()),
            env_state: std::env::var_os(ENV_STATE).filter(|v| !v.is_empty()),
            etc: PathBuf::from(ETC_DIR),
        }
    }
}

/// No cluster anywhere, or a variable naming something unusable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotFound {
    /// Each place, with what was there.
    pub looked: Vec<String>,
    /// Set when a variable names something unusable (then the search stopped there).
    pub broken: Option<String>,
}

impl fmt::Display for NotFound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(b) = &self.broken {
            return write!(f, "{b}");
        }
        writeln!(f, "no pfsqos cluster found; looked at:")?;
        for l in &self.looked {
            writeln!(f, "  {l}")?;
        }
        write!(
            f,
            "start one here with `pfsqos up` (then run this from the same directory), or set \
             {ENV_CLUSTER}=FILE (a cluster file) or {ENV_STATE}=DIR (the state directory `pfsqos \
             up` used), or give --server HOST:PORT and --key-file FILE"
        )
    }
}

impl std::error::Error for NotFound {}

/// Searches the places in order (see the module docs).
pub fn discover(l: &Lookup) -> Result<Endpoints, NotFound> {
    let mut looked = Vec::new();
    let broken = |looked: &Vec<String>, msg: String| NotFound {
        looked: looked.clone(),
        broken: Some(msg),
    };
    let here = l.cwd.join(STATE_DIR_NAME);
    match read_state_dir(&here) {
        Ok(Some(mut e)) => {
            if !e.source.ends_with(ENDPOINTS_FILE) {
                // No record of `up`: the defaults relative to this directory, as `down` uses.
                let c = Cluster::defaults(&l.cwd);
                e.mount = Some(c.mount.path);
            }
            return Ok(e);
        }
        Ok(None) => looked.push(format!(
            "{}: no {ENDPOINTS_FILE} or cluster.key (no `pfsqos up` here)",
            here.display()
        )),
        Err(e) => looked.push(e),
    }
    match &l.env_cluster {
        Some(file) => {
            let path = l.cwd.join(file);
            let c =
                Cluster::load(&path).map_err(|e| broken(&looked, format!("{ENV_CLUSTER}: {e}")))?;
            return from_cluster(&c).map_err(|e| broken(&looked, format!("{ENV_CLUSTER}: {e}")));
        }
        None => looked.push(format!("{ENV_CLUSTER}: not set")),
    }
    match &l.env_state {
        Some(dir) => {
            let dir = l.cwd.join(dir);
            return match read_state_dir(&dir) {
                Ok(Some(e)) => Ok(e),
                Ok(None) => Err(broken(
                    &looked,
                    format!(
                        "{ENV_STATE}={}: no {ENDPOINTS_FILE} or cluster.key there (is it the \
                         state directory of `pfsqos up`?)",
                        dir.display()
                    ),
                )),
                Err(e) => Err(broken(&looked, format!("{ENV_STATE}: {e}"))),
            };
        }
        None => looked.push(format!("{ENV_STATE}: not set")),
    }
    let etc_file = l.etc.join("cluster.toml");
    if etc_file.exists() {
        let c = Cluster::load(&etc_file).map_err(|e| broken(&looked, e.to_string()))?;
        return from_cluster(&c).map_err(|e| broken(&looked, e));
    }
    looked.push(format!("{}: does not exist", etc_file.display()));
    let etc_key = l.etc.join("cluster.key");
    if etc_key.exists() {
        return Ok(Endpoints {
            osses: vec![OSS_LISTEN_DEFAULT.to_string()],
            mds: MDS_LISTEN_DEFAULT.to_string(),
            key_file: etc_key.clone(),
            server_key_file: Some(l.etc.join("server.key")),
            mount: None,
            source: etc_key.display().to_string(),
        });
    }
    looked.push(format!("{}: does not exist", etc_key.display()));
    Err(NotFound {
        looked,
        broken: None,
    })
}

impl Endpoints {
    /// The key an administrator's tool (`lctl`, `stat`, which speak role `Lctl` to the
    /// ossds) proves: the servers' own where it is present here (as Lustre's `lctl` runs on
    /// a server), else the cluster key, which the ossds refuse for that role: on a client
    /// node, which has only the cluster key, the tools fail authentication, as Lustre's
    /// `lctl` cannot set a server's parameters from a client.
    pub fn admin_key_file(&self) -> &Path {
        match &self.server_key_file {
            Some(k) if k.exists() => k,
            _ => &self.key_file,
        }
    }
}

/// The ossds and key an administrator's tool uses: the explicit ones where given, the
/// discovered ones for the rest ([`Endpoints::admin_key_file`]). With `--key-file` alone and
/// nothing discovered, the ossd at [`crate::lctl::DEFAULT_SERVER`].
pub fn client_target(
    servers: &[String],
    key_file: Option<&Path>,
    l: &Lookup,
) -> Result<(Vec<String>, PathBuf), NotFound> {
    if let (false, Some(k)) = (servers.is_empty(), key_file) {
        return Ok((servers.to_vec(), k.to_path_buf()));
    }
    match (discover(l), key_file) {
        (Ok(e), k) => {
            let key = k.map_or_else(|| e.admin_key_file().to_path_buf(), Path::to_path_buf);
            Ok((
                if servers.is_empty() {
                    e.osses
                } else {
                    servers.to_vec()
                },
                key,
            ))
        }
        (Err(_), Some(k)) => Ok((
            vec![crate::lctl::DEFAULT_SERVER.to_string()],
            k.to_path_buf(),
        )),
        (Err(e), None) => Err(e),
    }
}

/// Resolves `HOST:PORT` (a name or an address; `[v6]:PORT`) to its first address, within
/// [`RESOLVE_TIMEOUT`].
pub async fn resolve(text: &str) -> Result<SocketAddr, String> {
    if let Ok(a) = text.parse::<SocketAddr>() {
        return Ok(a);
    }
    let ok_chars = text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-._:[]".contains(c));
    let has_port = text
        .rsplit_once(':')
        .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
    if text.len() > HOST_PORT_LEN_MAX || !ok_chars || !has_port {
        return Err(format!(
            "server `{text}`: expected HOST:PORT (a host name or IP address and a port, e.g. \
             oss1:7988 or 127.0.0.1:7988), at most {HOST_PORT_LEN_MAX} bytes"
        ));
    }
    match tokio::time::timeout(RESOLVE_TIMEOUT, tokio::net::lookup_host(text)).await {
        Err(_) => Err(format!(
            "server `{text}`: name not resolved within {RESOLVE_TIMEOUT:?}"
        )),
        Ok(Err(e)) => Err(format!("server `{text}`: {e}")),
        Ok(Ok(mut addrs)) => addrs
            .next()
            .ok_or_else(|| format!("server `{text}`: resolves to no address")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(cwd: &Path, etc: &Path) -> Lookup {
        Lookup {
            cwd: cwd.to_path_buf(),
            env_cluster: None,
            env_state: None,
            etc: etc.to_path_buf(),
        }
    }

    #[test]
    fn nothing_found_names_every_place_and_what_to_run() {
        let dir = tempfile::tempdir().unwrap();
        let e = discover(&lookup(dir.path(), &dir.path().join("etc"))).unwrap_err();
        let text = e.to_string();
        assert_eq!(e.looked.len(), 5, "{text}");
        for want in [
            "pfsqos-state: no endpoints.toml or cluster.key",
            "PFSQOS_CLUSTER: not set",
            "PFSQOS_STATE: not set",
            "etc/cluster.toml: does not exist",
            "etc/cluster.key: does not exist",
            "`pfsqos up`",
            "--server HOST:PORT and --key-file FILE",
        ] {
            assert!(text.contains(want), "{want}: {text}");
        }
    }

    #[test]
    fn places_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let etc = dir.path().join("etc");
        std::fs::create_dir_all(&etc).unwrap();
        std::fs::write(etc.join("cluster.key"), "k").unwrap();
        let mut l = lookup(dir.path(), &etc);
        // /etc/pfsqos/cluster.key: the default addresses.
        let e = discover(&l).unwrap();
        assert_eq!(e.key_file, etc.join("cluster.key"));
        assert_eq!(e.osses, [OSS_LISTEN_DEFAULT]);
        // A cluster file in the environment comes before /etc.
        std::fs::write(
            dir.path().join("c.toml"),
            "[cluster]\nstate_dir = \"st\"\n[[oss]]\nhost = \"oss1\"\nlisten = \"0.0.0.0:7000\"\nosts = [\"a\"]\n",
        )
        .unwrap();
        l.env_cluster = Some("c.toml".into());
        let e = discover(&l).unwrap();
        assert_eq!(e.osses, ["oss1:7000"]);
        assert_eq!(e.key_file, dir.path().join("st/cluster.key"));
        // ... and what `up` recorded in its state directory comes before the file's fields.
        let rec = Endpoints {
            osses: vec!["127.0.0.1:40000".into()],
            mds: "127.0.0.1:40001".into(),
            key_file: dir.path().join("st/cluster.key"),
            server_key_file: Some(dir.path().join("st/server.key")),
            mount: Some(dir.path().join("m")),
            source: String::new(),
        };
        std::fs::create_dir_all(dir.path().join("st")).unwrap();
        write_endpoints(&dir.path().join("st"), &rec).unwrap();
        let e = discover(&l).unwrap();
        assert_eq!((e.osses, e.mount), (rec.osses.clone(), rec.mount.clone()));
        // The working directory's state directory comes first of all.
        std::fs::create_dir_all(dir.path().join("pfsqos-state")).unwrap();
        std::fs::write(dir.path().join("pfsqos-state/cluster.key"), "k").unwrap();
        let e = discover(&l).unwrap();
        assert_eq!(e.key_file, dir.path().join("pfsqos-state/cluster.key"));
        assert_eq!(e.mount, Some(dir.path().join("pfsqos-mnt")));
        // A variable naming nothing usable is an error, not skipped.
        let mut l2 = lookup(&dir.path().join("elsewhere"), &etc);
        l2.env_state = Some(dir.path().join("nothing").into());
        let err = discover(&l2).unwrap_err().to_string();
        assert!(err.starts_with("PFSQOS_STATE="), "{err}");
        l2.env_state = Some(dir.path().join("st").into());
        assert_eq!(discover(&l2).unwrap().osses, rec.osses);
        // Explicit flags override what is found. The administrator's tools prove the
        // servers' key once it is there, the cluster key before (a cluster without one).
        let (servers, key) = client_target(&["h:1".to_string()], None, &l2).unwrap();
        assert_eq!(
            (servers, key),
            (vec!["h:1".to_string()], rec.key_file.clone())
        );
        std::fs::write(dir.path().join("st/server.key"), "s").unwrap();
        let (_, key) = client_target(&["h:1".to_string()], None, &l2).unwrap();
        assert_eq!(key, dir.path().join("st/server.key"));
        let (servers, key) = client_target(&[], Some(Path::new("/k")), &l2).unwrap();
        assert_eq!((servers, key), (rec.osses.clone(), PathBuf::from("/k")));
        let none = lookup(&dir.path().join("elsewhere"), &dir.path().join("no-etc"));
        assert_eq!(
            client_target(&[], Some(Path::new("/k")), &none).unwrap().0,
            [crate::lctl::DEFAULT_SERVER]
        );
        assert!(client_target(&[], None, &none).is_err());
    }

    #[tokio::test]
    async fn host_names_resolve_and_bad_ones_are_named() {
        assert_eq!(
            resolve("127.0.0.1:7988").await.unwrap(),
            "127.0.0.1:7988".parse().unwrap()
        );
        assert_eq!(resolve("localhost:7988").await.unwrap().port(), 7988);
        for bad in ["localhost", "a b:1", ":7988", "h:99999", &"x".repeat(300)] {
            let e = resolve(bad).await.unwrap_err();
            assert!(e.contains("expected HOST:PORT"), "{bad}: {e}");
        }
    }
}
