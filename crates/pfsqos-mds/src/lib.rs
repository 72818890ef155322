//! The metadata server: the namespace and file layouts in an embedded SQLite database.
//!
//! [`Namespace`] is the storage layer (every operation, every check, one SQLite transaction per
//! mutation); [`Mds`] serves it over the pfsqos protocol
//! ([`pfsqos_wire::mds::MdsRequest`]/`MdsReply` after the usual handshake). A truncate
//! records the new size (the client punches the objects). The objects of a file an unlink or
//! a rename removes are the MDS's to destroy: queued in the removing transaction and sent to
//! their ossds until acknowledged, with a sweep for orphans ([`destroy`]).
//!
//! Durability: WAL journal with `synchronous=FULL`, so a mutation is on stable storage before
//! it is acknowledged and survives `kill -9` of the server.
//!
//! pfsqos-mds's one job is this server. API boundary: [`Mds::start`] with an [`MdsConfig`]
//! (built from the command line's [`MdsArgs`]) and [`Mds::shutdown`]; [`Namespace`] for direct
//! use. The types on the wire are `pfsqos_wire::mds`'s (clients never depend on this crate);
//! the process around the server (runtime, logging, signals) is the `pfsqos` binary's.

mod args;
pub mod destroy;
pub mod iez;
pub mod load;
pub use args::MdsArgs;
pub use iez::{IezCounters, StoredPrediction};

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use pfsqos_core::model::JobId;
use pfsqos_core::model::{OstId, StripeLayout};
use pfsqos_core::place::{PlacementContext, PlacementRequest};
use pfsqos_node::mds::Placer;
use rusqlite::{params, Connection, OptionalExtension, Transaction};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use tracing::{debug, info, warn};

use pfsqos_metrics::{render_collector, MdsCollector, MdsSample, MetricsServer, Render};
use pfsqos_wire::admission::{Admission, HandshakeSlot};
use pfsqos_wire::conn::{self, Reader, Writer};
use pfsqos_wire::mds::{decode_mds_request, FILE_SIZE_BYTES_MAX};
use pfsqos_wire::mds::{
    Attr, DirEntry, DirPage, FileLayout, Kind, MdsOp, MdsReply, MdsReplyBody, OstInfo, Owner,
    SetAttr, StatFs, Stripe, StripeSpec, MDS_OP_NAMES, NAME_LEN_MAX, READDIR_ENTRIES_MAX, ROOT_INO,
};
use pfsqos_wire::protocol::{self, Errno, RemoteError, Role};

/// Deepest directory nesting below the root.
pub const DEPTH_MAX: u32 = 256;
/// Largest OSS list in the configuration.
pub const OSS_COUNT_MAX: usize = 1024;

/// A [`Kind`]'s number in the database.
fn kind_code(kind: Kind) -> i64 {
    match kind {
        Kind::File => 1,
        Kind::Dir => 2,
    }
}

fn kind_from_code(c: i64) -> Kind {
    if c == 2 {
        Kind::Dir
    } else {
        Kind::File
    }
}

/// An ossd as given by `--oss ADDR:OSTCOUNT`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OssSpec {
    pub addr: String,
    pub ost_count: u32,
}

impl std::str::FromStr for OssSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<OssSpec, String> {
        let (addr, count) = s
            .rsplit_once(':')
            .filter(|(a, _)| a.contains(':'))
            .ok_or_else(|| format!("{s:?}: expected HOST:PORT:OSTCOUNT"))?;
        let ost_count: u32 = count
            .parse()
            .map_err(|_| format!("{s:?}: OST count {count:?} is not a number"))?;
        if ost_count == 0 || ost_count > protocol::OST_COUNT_MAX {
            return Err(format!(
                "{s:?}: OST count must be 1..={}",
                protocol::OST_COUNT_MAX
            ));
        }
        Ok(OssSpec {
            addr: addr.to_string(),
            ost_count,
        })
    }
}

/// Namespace settings.
#[derive(Clone, Debug)]
pub struct NamespaceConfig {
    pub fsname: String,
    pub osses: Vec<OssSpec>,
    /// Layout of files in directories without a default of their own.
    pub default_stripe: StripeSpec,
    pub inodes_max: u64,
    /// The placement policy of new files, a spec `name[:key=value]...` of
    /// `pfsqos_core::place::PLACER_ROWS` (`roundrobin`, `lustre`, `iez`), as the simulator's
    /// scenarios name it.
    pub placer: String,
}

/// The placer of an MDS whose configuration names none: round robin, the rotation Lustre's
/// allocator falls back to when the OSTs are balanced.
pub const PLACER_DEFAULT: &str = "roundrobin";

impl NamespaceConfig {
    fn osts(&self) -> Vec<OstInfo> {
        let mut out = Vec::new();
        for oss in &self.osses {
            for i in 0..oss.ost_count {
                out.push(OstInfo {
                    index: out.len() as u32,
                    oss_addr: oss.addr.clone(),
                    oss_ost_index: i,
                });
            }
        }
        out
    }

    pub fn ost_count(&self) -> u32 {
        self.osses.iter().map(|o| o.ost_count).sum()
    }
}

fn err(errno: Errno, message: impl Into<String>) -> RemoteError {
    RemoteError::new(errno, message)
}

fn db_err(e: rusqlite::Error) -> RemoteError {
    err(Errno::EIO, format!("metadata database: {e}"))
}

/// Directory entry names: 1..=255 bytes, no `/` or NUL, not `.` or `..`.
pub fn validate_name(name: &[u8]) -> Result<(), RemoteError> {
    if name.is_empty() {
        return Err(err(Errno::EINVAL, "empty name"));
    }
    if name.len() > NAME_LEN_MAX {
        return Err(err(
            Errno::ENAMETOOLONG,
            format!("name of {} bytes (at most {NAME_LEN_MAX})", name.len()),
        ));
    }
    if name.contains(&b'/') || name.contains(&0) {
        return Err(err(Errno::EINVAL, "name contains '/' or NUL"));
    }
    if name == b"." || name == b".." {
        return Err(err(Errno::EINVAL, "'.' and '..' are not entries"));
    }
    Ok(())
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS inodes (
    ino      INTEGER PRIMARY KEY,
    parent   INTEGER NOT NULL,
    name     BLOB NOT NULL,
    kind     INTEGER NOT NULL,
    mode     INTEGER NOT NULL,
    uid      INTEGER NOT NULL,
    gid      INTEGER NOT NULL,
    size     INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    ctime_ns INTEGER NOT NULL,
    nlink    INTEGER NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS inodes_by_entry ON inodes(parent, name);
CREATE TABLE IF NOT EXISTS layouts (
    ino         INTEGER PRIMARY KEY,
    stripe_size INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS stripes (
    ino    INTEGER NOT NULL,
    idx    INTEGER NOT NULL,
    ost    INTEGER NOT NULL,
    object INTEGER NOT NULL,
    PRIMARY KEY (ino, idx)
);
CREATE TABLE IF NOT EXISTS dir_stripe (
    ino          INTEGER PRIMARY KEY,
    stripe_count INTEGER NOT NULL,
    stripe_size  INTEGER NOT NULL,
    start_ost    INTEGER
);
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
";

/// The database layout this MDS writes, kept in SQLite's `user_version`. Version 1: every
/// `meta` value is a u64 stored as the i64 of the same bits (SQLite's INTEGER is a signed
/// 64-bit word), and `rr_cursor` holds the placer's whole state word
/// (`pfsqos_node::mds::Placer::state`). Version 0 (databases from before the version was
/// kept) has the same tables; its values were all below 2^32, which read the same, so it is
/// taken as is and marked 1. A database of a later version is refused: this MDS cannot know
/// what it changed.
///
/// Version 2 adds iez's tables (`iez_predictions`, `placements`, see [`iez`]); a version 1
/// database gets them empty, and files created before read as placed by round robin.
///
/// Version 3 adds `iez_predictions.created` (whether a row's file was created; other
/// applications' rows not yet created reserve their OSTs when an application is planned); a
/// version 2 database gets the column with every row not created.
///
/// Version 4 adds `destroys`, the objects of removed files not yet destroyed ([`destroy`]);
/// a version 3 database gets it empty (its removed files' objects are found by the sweep).
pub const SCHEMA_VERSION: i64 = 4;

/// The meta key of round robin's state (its cursor; the key predates the other placers).
const META_PLACER_STATE: &str = "rr_cursor";

/// The meta key of a placer's state: each placer keeps its own, so an MDS restarted with
/// another placer never reads a state word of a different shape.
fn placer_state_key(placer_name: &str) -> String {
    if placer_name == "roundrobin" {
        META_PLACER_STATE.to_string()
    } else {
        format!("placer_state:{placer_name}")
    }
}

/// The name of a placer spec (`lustre:qos_maxage=5` is `lustre`).
fn placer_name(spec: &str) -> &str {
    spec.split(':').next().unwrap_or_default()
}

/// The namespace: one SQLite database.
pub struct Namespace {
    db: Connection,
    config: NamespaceConfig,
    placer: Placer,
    /// The placer's name (the spec's first word), which also names its state's meta key.
    placer_name: String,
    iez: iez::IezState,
}

fn attr_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Attr> {
    Ok(Attr {
        ino: r.get::<_, i64>(0)? as u64,
        kind: kind_from_code(r.get(1)?),
        mode: r.get::<_, i64>(2)? as u32,
        uid: r.get::<_, i64>(3)? as u32,
        gid: r.get::<_, i64>(4)? as u32,
        size_bytes: r.get::<_, i64>(5)? as u64,
        mtime_ns: r.get::<_, i64>(6)? as u64,
        ctime_ns: r.get::<_, i64>(7)? as u64,
        nlink: r.get::<_, i64>(8)? as u32,
    })
}

const ATTR_COLS: &str = "ino, kind, mode, uid, gid, size, mtime_ns, ctime_ns, nlink";

fn get_attr(tx: &Connection, ino: u64) -> Result<Attr, RemoteError> {
    if ino == 0 || ino > i64::MAX as u64 {
        return Err(err(Errno::ENOENT, format!("inode {ino}")));
    }
    tx.query_row(
        &format!("SELECT {ATTR_COLS} FROM inodes WHERE ino = ?1"),
        [ino as i64],
        attr_row,
    )
    .optional()
    .map_err(db_err)?
    .ok_or_else(|| err(Errno::ENOENT, format!("inode {ino}")))
}

fn get_dir(tx: &Connection, ino: u64) -> Result<Attr, RemoteError> {
    let a = get_attr(tx, ino)?;
    if a.kind != Kind::Dir {
        return Err(err(
            Errno::ENOTDIR,
            format!("inode {ino} is not a directory"),
        ));
    }
    Ok(a)
}

fn lookup_in(tx: &Connection, parent: u64, name: &[u8]) -> Result<Option<Attr>, RemoteError> {
    tx.query_row(
        &format!("SELECT {ATTR_COLS} FROM inodes WHERE parent = ?1 AND name = ?2 AND ino != ?1"),
        params![parent as i64, name],
        attr_row,
    )
    .optional()
    .map_err(db_err)
}

/// A meta value (0 if absent): the u64 whose bits the stored i64 holds ([`SCHEMA_VERSION`]).
fn meta_get(tx: &Connection, key: &str) -> Result<u64, RemoteError> {
    let stored = tx
        .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| {
            r.get::<_, i64>(0)
        })
        .optional()
        .map_err(db_err)?
        .unwrap_or(0);
    Ok(u64::from_ne_bytes(stored.to_ne_bytes()))
}

/// Whether the meta table holds `key`.
fn meta_has(tx: &Connection, key: &str) -> Result<bool, RemoteError> {
    tx.query_row(
        "SELECT EXISTS(SELECT 1 FROM meta WHERE key = ?1)",
        [key],
        |r| r.get::<_, bool>(0),
    )
    .map_err(db_err)
}

/// Stores a meta value: any u64, as the i64 of the same bits.
fn meta_set(tx: &Connection, key: &str, value: u64) -> Result<(), RemoteError> {
    tx.execute(
        "INSERT INTO meta(key, value) VALUES (?1, ?2)
         ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        params![key, i64::from_ne_bytes(value.to_ne_bytes())],
    )
    .map_err(db_err)?;
    Ok(())
}

fn get_layout(tx: &Connection, ino: u64) -> Result<Option<FileLayout>, RemoteError> {
    let Some(stripe_size) = tx
        .query_row(
            "SELECT stripe_size FROM layouts WHERE ino = ?1",
            [ino as i64],
            |r| r.get::<_, i64>(0),
        )
        .optional()
        .map_err(db_err)?
    else {
        return Ok(None);
    };
    let mut st = tx
        .prepare_cached("SELECT ost, object FROM stripes WHERE ino = ?1 ORDER BY idx")
        .map_err(db_err)?;
    let stripes = st
        .query_map([ino as i64], |r| {
            Ok(Stripe {
                ost: r.get::<_, i64>(0)? as u32,
                object: r.get::<_, i64>(1)? as u64,
            })
        })
        .map_err(db_err)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(db_err)?;
    Ok(Some(FileLayout {
        stripe_size_bytes: stripe_size as u64,
        stripes,
    }))
}

fn dir_stripe(tx: &Connection, ino: u64) -> Result<Option<StripeSpec>, RemoteError> {
    tx.query_row(
        "SELECT stripe_count, stripe_size, start_ost FROM dir_stripe WHERE ino = ?1",
        [ino as i64],
        |r| {
            Ok(StripeSpec {
                stripe_count: r.get::<_, i64>(0)? as i32,
                stripe_size_bytes: r.get::<_, i64>(1)? as u64,
                start_ost: r.get::<_, Option<i64>>(2)?.map(|v| v as u32),
            })
        },
    )
    .optional()
    .map_err(db_err)
}

/// Removes an inode that has no entries under it, returning its layout; its objects are
/// queued for destruction in the same transaction.
fn remove_inode(tx: &Connection, ino: u64) -> Result<Option<FileLayout>, RemoteError> {
    let layout = get_layout(tx, ino)?;
    destroy::queue_stripes(tx, ino)?;
    for sql in [
        "DELETE FROM inodes WHERE ino = ?1",
        "DELETE FROM layouts WHERE ino = ?1",
        "DELETE FROM stripes WHERE ino = ?1",
        "DELETE FROM dir_stripe WHERE ino = ?1",
        "DELETE FROM placements WHERE ino = ?1",
    ] {
        tx.execute(sql, [ino as i64]).map_err(db_err)?;
    }
    let n = meta_get(tx, "inodes")?;
    // The inode being removed was counted.
    debug_assert!(n > 0, "inode count is zero while an inode is removed");
    meta_set(tx, "inodes", n.saturating_sub(1))?;
    Ok(layout)
}

/// A transaction that takes the write lock at its start (SQLite's `BEGIN IMMEDIATE`): a
/// deferred one that reads, then writes, fails at once with `SQLITE_BUSY` if another
/// connection wrote in between (in WAL mode the busy timeout does not cover that upgrade),
/// while an immediate one waits for the lock within the busy timeout. One connection serves
/// the MDS; another appears while a stopped MDS's last tasks finish or a tool opens the
/// database.
fn write_tx(db: &mut Connection) -> rusqlite::Result<Transaction<'_>> {
    db.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
}

fn has_children(tx: &Connection, ino: u64) -> Result<bool, RemoteError> {
    tx.query_row(
        "SELECT EXISTS(SELECT 1 FROM inodes WHERE parent = ?1 AND ino != ?1)",
        [ino as i64],
        |r| r.get::<_, bool>(0),
    )
    .map_err(db_err)
}

/// The path of `ino` from the root (`/a/b`; empty for the root).
fn path_of(tx: &Connection, ino: u64) -> Result<Vec<u8>, RemoteError> {
    let mut names: Vec<Vec<u8>> = Vec::new();
    let mut cur = ino;
    while cur != ROOT_INO {
        let (parent, name) = tx
            .query_row(
                "SELECT parent, name FROM inodes WHERE ino = ?1",
                [cur as i64],
                |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, Vec<u8>>(1)?)),
            )
            .map_err(db_err)?;
        names.push(name);
        cur = parent;
        if names.len() > DEPTH_MAX as usize * 4 {
            return Err(err(Errno::EIO, "directory tree deeper than any valid one"));
        }
    }
    let mut out = Vec::new();
    for n in names.iter().rev() {
        out.push(b'/');
        out.extend_from_slice(n);
    }
    Ok(out)
}

/// Depth of a directory below the root, and whether `ancestor` is on its path.
fn ancestry(tx: &Connection, dir: u64, ancestor: u64) -> Result<(u32, bool), RemoteError> {
    let (mut cur, mut depth, mut found) = (dir, 0u32, dir == ancestor);
    while cur != ROOT_INO {
        cur = tx
            .query_row(
                "SELECT parent FROM inodes WHERE ino = ?1",
                [cur as i64],
                |r| r.get::<_, i64>(0),
            )
            .map_err(db_err)? as u64;
        depth += 1;
        found |= cur == ancestor;
        if depth > DEPTH_MAX * 4 {
            return Err(err(Errno::EIO, "directory tree deeper than any valid one"));
        }
    }
    Ok((depth, found))
}

fn touch_dir(tx: &Connection, ino: u64, now_ns: u64, nlink_delta: i64) -> Result<(), RemoteError> {
    tx.execute(
        "UPDATE inodes SET mtime_ns = ?2, ctime_ns = ?2, nlink = nlink + ?3 WHERE ino = ?1",
        params![ino as i64, now_ns as i64, nlink_delta],
    )
    .map_err(db_err)?;
    Ok(())
}

fn check_mode(mode: u32) -> Result<(), RemoteError> {
    if mode > 0o7777 {
        return Err(err(
            Errno::EINVAL,
            format!("mode {mode:o} has bits beyond 07777"),
        ));
    }
    Ok(())
}

fn check_time(t: u64) -> Result<(), RemoteError> {
    if t > i64::MAX as u64 {
        return Err(err(Errno::EINVAL, format!("time {t} ns out of range")));
    }
    Ok(())
}

impl Namespace {
    /// Opens (creating if needed) the database at `path`.
    pub fn open(path: &Path, config: NamespaceConfig) -> Result<Namespace, RemoteError> {
        if config.osses.is_empty() || config.osses.len() > OSS_COUNT_MAX {
            return Err(err(
                Errno::EINVAL,
                format!("1..={OSS_COUNT_MAX} OSSs needed"),
            ));
        }
        if config.ost_count() > protocol::OST_COUNT_MAX {
            return Err(err(Errno::EINVAL, "too many OSTs"));
        }
        let db = Connection::open(path).map_err(db_err)?;
        db.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(db_err)?;
        // WAL + FULL: every commit is fsynced before it returns, so an acknowledged
        // mutation survives a crash of the process or the machine.
        db.pragma_update(None, "journal_mode", "WAL")
            .map_err(db_err)?;
        db.pragma_update(None, "synchronous", "FULL")
            .map_err(db_err)?;
        let version: i64 = db
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(db_err)?;
        if !(0..=SCHEMA_VERSION).contains(&version) {
            return Err(err(
                Errno::EINVAL,
                format!(
                    "{}: database schema version {version}, this MDS reads 0..={SCHEMA_VERSION} \
                     (written by a newer pfsqos?)",
                    path.display()
                ),
            ));
        }
        db.execute_batch(SCHEMA).map_err(db_err)?;
        db.execute_batch(iez::IEZ_SCHEMA).map_err(db_err)?;
        db.execute_batch(destroy::DESTROY_SCHEMA).map_err(db_err)?;
        iez::migrate(&db)?;
        if version < SCHEMA_VERSION {
            db.pragma_update(None, "user_version", SCHEMA_VERSION)
                .map_err(db_err)?;
        }
        let placer = Placer::by_name(&config.placer, config.ost_count())
            .map_err(|e| err(Errno::EINVAL, format!("placer: {e}")))?;
        let mut ns = Namespace {
            db,
            config: config.clone(),
            placer,
            placer_name: placer_name(&config.placer).to_string(),
            iez: iez::IezState::new(
                &config.osses,
                iez::STATS_MAX_AGE_DEFAULT_MS.saturating_mul(1_000_000),
            ),
        };
        // The default must be placeable, or every create would fail later.
        ns.placement_request(&ns.config.default_stripe.clone())?;
        let tx = crate::write_tx(&mut ns.db).map_err(db_err)?;
        if get_attr(&tx, ROOT_INO).is_err() {
            tx.execute(
                "INSERT INTO inodes(ino, parent, name, kind, mode, uid, gid, size, mtime_ns, ctime_ns, nlink)
                 VALUES (?1, ?1, x'', 2, 493, 0, 0, 0, 0, 0, 2)",
                [ROOT_INO as i64],
            )
            .map_err(db_err)?;
            meta_set(&tx, "inodes", 1)?;
            meta_set(&tx, "next_object", 1)?;
        }
        // Inode numbers are never reused (as Lustre's FIDs): a kernel or client still holding
        // an unlinked file's number must not reach a newer file through it. SQLite's rowid
        // would hand out max + 1 again after the newest file is unlinked, so the next number
        // is a counter of its own; a database written before the counter existed starts it
        // past its largest inode.
        if meta_get(&tx, "next_ino")? == 0 {
            let max: i64 = tx
                .query_row("SELECT COALESCE(MAX(ino), 0) FROM inodes", [], |r| r.get(0))
                .map_err(db_err)?;
            meta_set(&tx, "next_ino", max as u64 + 1)?;
        }
        // A placer that never placed here starts as the registry builds it (Lustre's
        // allocator from its seeded start), not from a zero state word.
        let key = placer_state_key(&ns.placer_name);
        let placer_state = meta_has(&tx, &key)?
            .then(|| meta_get(&tx, &key))
            .transpose()?;
        ns.iez.has_rows = iez::has_rows(&tx)?;
        tx.commit().map_err(db_err)?;
        if let Some(state) = placer_state {
            ns.placer.restore(state);
        }
        Ok(ns)
    }

    pub fn config(&self) -> &NamespaceConfig {
        &self.config
    }

    /// How old an OSS's statistics may be for iez to place on them.
    pub fn set_iez_stats_max_age_ms(&mut self, ms: u64) {
        self.iez.stats_max_age_ns = ms.saturating_mul(1_000_000);
    }

    /// The MDS's own CPU and memory utilization ([`load`]) for iez's busy gate; `None`
    /// (unknown) lifts the gate. Fractions outside `0..=1` or not finite are refused.
    pub fn set_mds_load(
        &mut self,
        load: Option<pfsqos_core::place::ServerLoad>,
    ) -> Result<(), String> {
        if let Some(l) = load {
            let fraction = |x: f64| x.is_finite() && (0.0..=1.0).contains(&x);
            if !fraction(l.cpu_util) || !fraction(l.mem_util) {
                return Err(format!(
                    "MDS load {l:?}: utilizations must be fractions in 0..=1"
                ));
            }
        }
        self.iez.mds_load = load;
        Ok(())
    }

    /// iez's values for the metrics endpoint (counters, rows, the MDS's load).
    pub fn iez_metrics(&self) -> pfsqos_metrics::IezSample {
        self.iez.metrics_sample(iez::row_count(&self.db).ok())
    }

    /// What iez did since the namespace was opened.
    pub fn iez_counters(&self) -> IezCounters {
        self.iez.counters
    }

    /// Statistics reports accepted from each OSS (configuration order) since the namespace
    /// was opened.
    pub fn iez_reports_per_oss(&self) -> Vec<u64> {
        self.iez.reports_per_oss.clone()
    }

    /// An ossd's statistics, received at `now_ns`.
    pub fn report_oss(
        &mut self,
        report: pfsqos_wire::mds::OssReport,
        now_ns: u64,
    ) -> Result<(), RemoteError> {
        let name = report.oss.clone();
        self.iez.report(report, now_ns).inspect_err(|e| {
            warn!(oss = %name.escape_debug(), "OSS statistics refused: {e}");
        })?;
        // Once every OSS has reported, the placer sees the servers' space and load (Lustre's
        // allocator weighs OSTs by free space when it is uneven, iez plans on it).
        if let Ok(stats) = self.iez.fresh_stats(now_ns) {
            if let Err(e) = self.placer.observe_servers(&stats) {
                warn!("OSS statistics not used by the placer: {e}");
            }
        }
        Ok(())
    }

    /// The servers' space and load as the placer last saw them, if every OSS reported within
    /// the allowed age at `now_ns`.
    pub fn server_stats(&self, now_ns: u64) -> Option<pfsqos_core::place::ServerStats> {
        self.iez.fresh_stats(now_ns).ok()
    }

    /// The placer's name (`roundrobin`, `lustre`, `iez`).
    pub fn placer_name(&self) -> &str {
        &self.placer_name
    }

    /// The allocator that places a file without an interaction-database row: the placer
    /// itself, except that iez's placer places such a file by Lustre's allocator
    /// (`pfsqos_core::place::iez`).
    fn allocator_name(&self) -> &str {
        if self.iez_places() {
            "lustre"
        } else {
            &self.placer_name
        }
    }

    /// Whether creates consult the interaction database (the `iez` placer's live path).
    fn iez_places(&self) -> bool {
        self.placer_name == "iez"
    }

    /// Loads an application's predicted files into the interaction database ([`iez`]).
    pub fn iez_load(
        &mut self,
        app: &str,
        files: &[pfsqos_wire::mds::IezPrediction],
        now_ns: u64,
    ) -> Result<(u32, u32), RemoteError> {
        if !self.iez_places() {
            return Err(err(
                Errno::EINVAL,
                format!(
                    "this MDS places files with `{}`; iez's predictions need the placer `iez`",
                    self.placer_name
                ),
            ));
        }
        let tx = crate::write_tx(&mut self.db).map_err(db_err)?;
        let r = self.iez.load(&tx, app, files, now_ns)?;
        tx.commit().map_err(db_err)?;
        self.iez.loaded(r.0);
        info!(app, files = r.0, planned = r.1, "iez predictions loaded");
        Ok(r)
    }

    /// The interaction database's rows.
    pub fn iez_predictions(&self) -> Result<Vec<StoredPrediction>, RemoteError> {
        iez::predictions(&self.db)
    }

    /// Who placed a file.
    pub fn placement(&self, ino: u64) -> Result<pfsqos_wire::mds::PlacementInfo, RemoteError> {
        self.layout(ino)?;
        iez::placement_of(&self.db, ino)
    }

    /// An inode's path from the root (`/` for the root).
    pub fn path(&self, ino: u64) -> Result<Vec<u8>, RemoteError> {
        get_attr(&self.db, ino)?;
        let p = path_of(&self.db, ino)?;
        Ok(if p.is_empty() { b"/".to_vec() } else { p })
    }

    fn placement_request(&self, s: &StripeSpec) -> Result<PlacementRequest, RemoteError> {
        let r = PlacementRequest {
            stripe_count: s.stripe_count,
            stripe_size_bytes: s.stripe_size_bytes,
            ost_count: self.config.ost_count(),
            start_ost: s.start_ost,
        };
        r.resolved_stripe_count()
            .map_err(|e| err(e.errno(), e.to_string()))?;
        Ok(r)
    }

    fn begin(&mut self) -> Result<Transaction<'_>, RemoteError> {
        crate::write_tx(&mut self.db).map_err(db_err)
    }

    fn new_inode(
        tx: &Connection,
        config: &NamespaceConfig,
        parent: u64,
        name: &[u8],
        kind: Kind,
        owner: Owner,
        now_ns: u64,
    ) -> Result<Attr, RemoteError> {
        validate_name(name)?;
        check_mode(owner.mode)?;
        check_time(now_ns)?;
        get_dir(tx, parent)?;
        if lookup_in(tx, parent, name)?.is_some() {
            return Err(err(
                Errno::EEXIST,
                format!("{} exists", String::from_utf8_lossy(name)),
            ));
        }
        let count = meta_get(tx, "inodes")?;
        if count >= config.inodes_max {
            return Err(err(
                Errno::ENOSPC,
                format!("inode limit {} reached", config.inodes_max),
            ));
        }
        meta_set(tx, "inodes", count + 1)?;
        let ino = meta_get(tx, "next_ino")?;
        if ino > i64::MAX as u64 {
            return Err(err(Errno::ENOSPC, "inode numbers exhausted"));
        }
        meta_set(tx, "next_ino", ino + 1)?;
        let nlink = if kind == Kind::Dir { 2 } else { 1 };
        tx.execute(
            "INSERT INTO inodes(ino, parent, name, kind, mode, uid, gid, size, mtime_ns, ctime_ns, nlink)
             VALUES (?9, ?1, ?2, ?3, ?4, ?5, ?6, 0, ?7, ?7, ?8)",
            params![
                parent as i64,
                name,
                kind_code(kind),
                owner.mode,
                owner.uid,
                owner.gid,
                now_ns as i64,
                nlink,
                ino as i64
            ],
        )
        .map_err(db_err)?;
        touch_dir(tx, parent, now_ns, if kind == Kind::Dir { 1 } else { 0 })?;
        Ok(Attr {
            ino,
            kind,
            mode: owner.mode,
            uid: owner.uid,
            gid: owner.gid,
            size_bytes: 0,
            mtime_ns: now_ns,
            ctime_ns: now_ns,
            nlink: nlink as u32,
        })
    }

    /// Creates a file with a layout from `stripe`, else the directory's default, else the
    /// file system default; object ids are allocated here.
    pub fn create(
        &mut self,
        parent: u64,
        name: &[u8],
        owner: Owner,
        stripe: Option<StripeSpec>,
        now_ns: u64,
    ) -> Result<(Attr, FileLayout), RemoteError> {
        let explicit = stripe.map(|s| self.placement_request(&s)).transpose()?;
        let config = self.config.clone();
        let mut placer = self.placer.clone();
        let iez_places = self.iez_places();
        let allocator = self.allocator_name().to_string();
        let tx = crate::write_tx(&mut self.db).map_err(db_err)?;
        let attr = Self::new_inode(&tx, &config, parent, name, Kind::File, owner, now_ns)?;
        // The interaction database is keyed by path; a name that is not UTF-8 has no row.
        let choice = if iez_places && self.iez.has_rows {
            let mut path = path_of(&tx, parent)?;
            path.push(b'/');
            path.extend_from_slice(name);
            match String::from_utf8(path) {
                Ok(p) => self.iez.choose(&tx, &p, explicit.is_some(), now_ns),
                Err(_) => Ok(None),
            }
        } else {
            Ok(None)
        };
        let iez_layout = match choice {
            Ok(Some(row)) => Ok(row),
            Ok(None) => Err(None),
            Err((_, Some(e))) => return Err(e),
            Err((f, None)) => {
                warn!(
                    ino = attr.ino,
                    name = %String::from_utf8_lossy(name).escape_debug(),
                    allocator,
                    "iez falls back: {f}"
                );
                Err(Some(f))
            }
        };
        let spec = match explicit {
            Some(r) => r,
            None => {
                let s = dir_stripe(&tx, parent)?.unwrap_or(config.default_stripe);
                PlacementRequest {
                    stripe_count: s.stripe_count,
                    stripe_size_bytes: s.stripe_size_bytes,
                    ost_count: config.ost_count(),
                    start_ost: s.start_ost,
                }
            }
        };
        debug_assert_eq!(spec.ost_count, placer.ost_count());
        let placed = match &iez_layout {
            Ok(row) => StripeLayout {
                stripe_size_bytes: row.stripe_size_bytes,
                osts: row.osts.iter().map(|&o| OstId(o)).collect(),
            },
            Err(_) => placer
                .create_for(
                    &PlacementContext {
                        now_ns,
                        // A create carries no job id.
                        job: JobId::EMPTY,
                    },
                    spec.stripe_count,
                    spec.stripe_size_bytes,
                    spec.start_ost,
                )
                .map_err(|e| err(e.errno(), e.to_string()))?,
        };
        let reason = iez_layout
            .as_ref()
            .err()
            .and_then(|f| f.as_ref().map(|f| f.to_string()));
        let policy = if iez_layout.is_ok() {
            "iez"
        } else {
            allocator.as_str()
        };
        iez::record_placement(&tx, attr.ino, policy, reason.as_deref())?;
        let first = meta_get(&tx, "next_object")?;
        let stripes: Vec<Stripe> = placed
            .osts
            .iter()
            .enumerate()
            .map(|(i, ost)| Stripe {
                ost: ost.0,
                object: first + i as u64,
            })
            .collect();
        meta_set(&tx, "next_object", first + stripes.len() as u64)?;
        meta_set(&tx, &placer_state_key(&self.placer_name), placer.state())?;
        tx.execute(
            "INSERT INTO layouts(ino, stripe_size) VALUES (?1, ?2)",
            params![attr.ino as i64, placed.stripe_size_bytes as i64],
        )
        .map_err(db_err)?;
        for (i, s) in stripes.iter().enumerate() {
            tx.execute(
                "INSERT INTO stripes(ino, idx, ost, object) VALUES (?1, ?2, ?3, ?4)",
                params![attr.ino as i64, i as i64, s.ost, s.object as i64],
            )
            .map_err(db_err)?;
        }
        tx.commit().map_err(db_err)?;
        // Only a committed create moves the rotation and counts.
        self.placer = placer;
        match &iez_layout {
            Ok(row) => self.iez.placed(row),
            Err(Some(f)) => self.iez.fell_back(f),
            Err(None) => {}
        }
        Ok((
            attr,
            FileLayout {
                stripe_size_bytes: placed.stripe_size_bytes,
                stripes,
            },
        ))
    }

    /// Creates a directory; it inherits the parent's default layout, if any.
    pub fn mkdir(
        &mut self,
        parent: u64,
        name: &[u8],
        owner: Owner,
        now_ns: u64,
    ) -> Result<Attr, RemoteError> {
        let config = self.config.clone();
        let tx = self.begin()?;
        get_dir(&tx, parent)?;
        let (depth, _) = ancestry(&tx, parent, ROOT_INO)?;
        if depth + 1 > DEPTH_MAX {
            return Err(err(
                Errno::ENAMETOOLONG,
                format!("directories nest at most {DEPTH_MAX} deep"),
            ));
        }
        let attr = Self::new_inode(&tx, &config, parent, name, Kind::Dir, owner, now_ns)?;
        if let Some(s) = dir_stripe(&tx, parent)? {
            set_dir_stripe(&tx, attr.ino, &s)?;
        }
        tx.commit().map_err(db_err)?;
        Ok(attr)
    }

    pub fn lookup(&self, parent: u64, name: &[u8]) -> Result<Attr, RemoteError> {
        validate_name(name)?;
        get_dir(&self.db, parent)?;
        lookup_in(&self.db, parent, name)?.ok_or_else(|| {
            err(
                Errno::ENOENT,
                format!("{} in inode {parent}", String::from_utf8_lossy(name)),
            )
        })
    }

    pub fn getattr(&self, ino: u64) -> Result<Attr, RemoteError> {
        get_attr(&self.db, ino)
    }

    /// A file's layout; directories have none (`EISDIR`).
    pub fn layout(&self, ino: u64) -> Result<FileLayout, RemoteError> {
        let a = get_attr(&self.db, ino)?;
        if a.kind == Kind::Dir {
            return Err(err(Errno::EISDIR, format!("inode {ino} is a directory")));
        }
        get_layout(&self.db, ino)?
            .ok_or_else(|| err(Errno::EIO, format!("inode {ino} has no layout")))
    }

    /// Changes attributes. A size change records the new size only: the client punches the
    /// objects on the OSSs.
    pub fn setattr(&mut self, ino: u64, set: SetAttr, now_ns: u64) -> Result<Attr, RemoteError> {
        check_time(now_ns)?;
        if let Some(m) = set.mode {
            check_mode(m)?;
        }
        if let Some(t) = set.mtime_ns {
            check_time(t)?;
        }
        let tx = self.begin()?;
        let mut a = get_attr(&tx, ino)?;
        if let Some(size) = set.size_bytes {
            if a.kind == Kind::Dir {
                return Err(err(Errno::EISDIR, "cannot truncate a directory"));
            }
            if size > FILE_SIZE_BYTES_MAX {
                return Err(err(
                    Errno::EFBIG,
                    format!("size {size} beyond {FILE_SIZE_BYTES_MAX}"),
                ));
            }
            a.size_bytes = size;
            // truncate(2) sets mtime as well as ctime.
            a.mtime_ns = now_ns;
        }
        a.mode = set.mode.unwrap_or(a.mode);
        a.uid = set.uid.unwrap_or(a.uid);
        a.gid = set.gid.unwrap_or(a.gid);
        a.mtime_ns = set.mtime_ns.unwrap_or(a.mtime_ns);
        a.ctime_ns = now_ns;
        tx.execute(
            "UPDATE inodes SET mode = ?2, uid = ?3, gid = ?4, size = ?5, mtime_ns = ?6, ctime_ns = ?7
             WHERE ino = ?1",
            params![
                ino as i64,
                a.mode,
                a.uid,
                a.gid,
                a.size_bytes as i64,
                a.mtime_ns as i64,
                a.ctime_ns as i64
            ],
        )
        .map_err(db_err)?;
        tx.commit().map_err(db_err)?;
        Ok(a)
    }

    /// Up to `max` entries after cursor `after` (0 for the start), in inode order so that a
    /// listing interrupted by creates or unlinks never repeats an entry.
    pub fn readdir(&self, dir: u64, after: u64, max: u32) -> Result<DirPage, RemoteError> {
        if max == 0 || max > READDIR_ENTRIES_MAX {
            return Err(err(
                Errno::EINVAL,
                format!("readdir count {max} outside 1..={READDIR_ENTRIES_MAX}"),
            ));
        }
        get_dir(&self.db, dir)?;
        let after = after.min(i64::MAX as u64) as i64;
        let mut st = self
            .db
            .prepare_cached(
                "SELECT ino, name, kind FROM inodes WHERE parent = ?1 AND ino > ?2 AND ino != ?1
                 ORDER BY ino LIMIT ?3",
            )
            .map_err(db_err)?;
        let entries = st
            .query_map(params![dir as i64, after, max as i64 + 1], |r| {
                Ok(DirEntry {
                    ino: r.get::<_, i64>(0)? as u64,
                    name: r.get(1)?,
                    kind: kind_from_code(r.get(2)?),
                })
            })
            .map_err(db_err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(db_err)?;
        let mut entries = entries;
        let next = if entries.len() > max as usize {
            entries.truncate(max as usize);
            entries.last().map(|e| e.ino)
        } else {
            None
        };
        Ok(DirPage { entries, next })
    }

    /// Removes a file and queues its objects for destruction; returns its layout.
    pub fn unlink(
        &mut self,
        parent: u64,
        name: &[u8],
        now_ns: u64,
    ) -> Result<FileLayout, RemoteError> {
        validate_name(name)?;
        check_time(now_ns)?;
        let tx = self.begin()?;
        get_dir(&tx, parent)?;
        let a = lookup_in(&tx, parent, name)?
            .ok_or_else(|| err(Errno::ENOENT, String::from_utf8_lossy(name).into_owned()))?;
        if a.kind == Kind::Dir {
            return Err(err(Errno::EISDIR, "unlink of a directory (use rmdir)"));
        }
        let layout = remove_inode(&tx, a.ino)?
            .ok_or_else(|| err(Errno::EIO, format!("inode {} has no layout", a.ino)))?;
        touch_dir(&tx, parent, now_ns, 0)?;
        tx.commit().map_err(db_err)?;
        Ok(layout)
    }

    pub fn rmdir(&mut self, parent: u64, name: &[u8], now_ns: u64) -> Result<(), RemoteError> {
        validate_name(name)?;
        check_time(now_ns)?;
        let tx = self.begin()?;
        get_dir(&tx, parent)?;
        let a = lookup_in(&tx, parent, name)?
            .ok_or_else(|| err(Errno::ENOENT, String::from_utf8_lossy(name).into_owned()))?;
        if a.kind != Kind::Dir {
            return Err(err(Errno::ENOTDIR, "rmdir of a file (use unlink)"));
        }
        if has_children(&tx, a.ino)? {
            return Err(err(
                Errno::ENOTEMPTY,
                String::from_utf8_lossy(name).into_owned(),
            ));
        }
        remove_inode(&tx, a.ino)?;
        touch_dir(&tx, parent, now_ns, -1)?;
        tx.commit().map_err(db_err)?;
        Ok(())
    }

    /// rename(2): replaces a file with a file or an empty directory with a directory. Returns
    /// the layout of a replaced file, whose objects are queued for destruction.
    pub fn rename(
        &mut self,
        parent: u64,
        name: &[u8],
        new_parent: u64,
        new_name: &[u8],
        now_ns: u64,
    ) -> Result<Option<FileLayout>, RemoteError> {
        validate_name(name)?;
        validate_name(new_name)?;
        check_time(now_ns)?;
        let tx = self.begin()?;
        get_dir(&tx, parent)?;
        get_dir(&tx, new_parent)?;
        let src = lookup_in(&tx, parent, name)?
            .ok_or_else(|| err(Errno::ENOENT, String::from_utf8_lossy(name).into_owned()))?;
        let dst = lookup_in(&tx, new_parent, new_name)?;
        if dst.as_ref().is_some_and(|d| d.ino == src.ino) {
            return Ok(None);
        }
        if src.kind == Kind::Dir {
            let (depth, inside) = ancestry(&tx, new_parent, src.ino)?;
            if inside {
                return Err(err(
                    Errno::EINVAL,
                    "cannot move a directory into its own subtree",
                ));
            }
            if depth + 1 > DEPTH_MAX {
                return Err(err(
                    Errno::ENAMETOOLONG,
                    format!("directories nest at most {DEPTH_MAX} deep"),
                ));
            }
        }
        let mut replaced = None;
        let mut new_parent_links = 0i64;
        if let Some(d) = &dst {
            match (src.kind, d.kind) {
                (Kind::File, Kind::Dir) => {
                    return Err(err(Errno::EISDIR, "cannot replace a directory with a file"))
                }
                (Kind::Dir, Kind::File) => {
                    return Err(err(
                        Errno::ENOTDIR,
                        "cannot replace a file with a directory",
                    ))
                }
                (Kind::Dir, Kind::Dir) => {
                    if has_children(&tx, d.ino)? {
                        return Err(err(
                            Errno::ENOTEMPTY,
                            String::from_utf8_lossy(new_name).into_owned(),
                        ));
                    }
                    remove_inode(&tx, d.ino)?;
                    new_parent_links -= 1;
                }
                (Kind::File, Kind::File) => replaced = remove_inode(&tx, d.ino)?,
            }
        }
        tx.execute(
            "UPDATE inodes SET parent = ?2, name = ?3, ctime_ns = ?4 WHERE ino = ?1",
            params![src.ino as i64, new_parent as i64, new_name, now_ns as i64],
        )
        .map_err(db_err)?;
        if src.kind == Kind::Dir {
            touch_dir(&tx, parent, now_ns, -1)?;
            new_parent_links += 1;
        } else {
            touch_dir(&tx, parent, now_ns, 0)?;
        }
        touch_dir(&tx, new_parent, now_ns, new_parent_links)?;
        tx.commit().map_err(db_err)?;
        Ok(replaced)
    }

    /// `lfs setstripe` on a directory: files created in it (and directories made in it)
    /// inherit `spec`; `None` removes the default.
    pub fn set_dir_stripe(
        &mut self,
        dir: u64,
        spec: Option<StripeSpec>,
    ) -> Result<(), RemoteError> {
        if let Some(s) = &spec {
            self.placement_request(s)?;
        }
        let tx = self.begin()?;
        get_dir(&tx, dir)?;
        match spec {
            Some(s) => set_dir_stripe(&tx, dir, &s)?,
            None => {
                tx.execute("DELETE FROM dir_stripe WHERE ino = ?1", [dir as i64])
                    .map_err(db_err)?;
            }
        }
        tx.commit().map_err(db_err)?;
        Ok(())
    }

    /// A directory's own default layout, if it has one.
    pub fn dir_stripe(&self, dir: u64) -> Result<Option<StripeSpec>, RemoteError> {
        get_dir(&self.db, dir)?;
        dir_stripe(&self.db, dir)
    }

    pub fn statfs(&self) -> Result<StatFs, RemoteError> {
        Ok(StatFs {
            fsname: self.config.fsname.clone(),
            osts: self.config.osts(),
            inodes: meta_get(&self.db, "inodes")?,
            inodes_max: self.config.inodes_max,
            default_stripe: self.config.default_stripe,
        })
    }
}

fn set_dir_stripe(tx: &Connection, dir: u64, s: &StripeSpec) -> Result<(), RemoteError> {
    tx.execute(
        "INSERT INTO dir_stripe(ino, stripe_count, stripe_size, start_ost) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT(ino) DO UPDATE SET stripe_count = excluded.stripe_count,
             stripe_size = excluded.stripe_size, start_ost = excluded.start_ost",
        params![
            dir as i64,
            s.stripe_count,
            s.stripe_size_bytes as i64,
            s.start_ost
        ],
    )
    .map_err(db_err)?;
    Ok(())
}

/// Operations answered per kind, for the metrics endpoint.
type OpCounts = [AtomicU64; MDS_OP_NAMES.len()];

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

impl Namespace {
    /// Runs one operation at time `now_ns`.
    pub fn execute(&mut self, op: MdsOp, now_ns: u64) -> Result<MdsReplyBody, RemoteError> {
        Ok(match op {
            MdsOp::Create {
                parent,
                name,
                owner,
                stripe,
            } => {
                let (a, l) = self.create(parent, &name, owner, stripe, now_ns)?;
                MdsReplyBody::Created(a, l)
            }
            MdsOp::Mkdir {
                parent,
                name,
                owner,
            } => MdsReplyBody::Attr(self.mkdir(parent, &name, owner, now_ns)?),
            MdsOp::Lookup { parent, name } => MdsReplyBody::Attr(self.lookup(parent, &name)?),
            MdsOp::GetAttr { ino } => MdsReplyBody::Attr(self.getattr(ino)?),
            MdsOp::GetLayout { ino } => MdsReplyBody::Layout(self.layout(ino)?),
            MdsOp::SetAttr { ino, set } => MdsReplyBody::Attr(self.setattr(ino, set, now_ns)?),
            MdsOp::ReadDir { dir, after, max } => MdsReplyBody::Dir(self.readdir(dir, after, max)?),
            MdsOp::Unlink { parent, name } => {
                MdsReplyBody::Removed(Some(self.unlink(parent, &name, now_ns)?))
            }
            MdsOp::Rmdir { parent, name } => {
                self.rmdir(parent, &name, now_ns)?;
                MdsReplyBody::Done
            }
            MdsOp::Rename {
                parent,
                name,
                new_parent,
                new_name,
            } => MdsReplyBody::Removed(self.rename(parent, &name, new_parent, &new_name, now_ns)?),
            MdsOp::SetDirStripe { dir, spec } => {
                self.set_dir_stripe(dir, spec)?;
                MdsReplyBody::Done
            }
            MdsOp::GetDirStripe { dir } => MdsReplyBody::DirStripe(self.dir_stripe(dir)?),
            MdsOp::StatFs => MdsReplyBody::StatFs(self.statfs()?),
            MdsOp::ReportOss(r) => {
                self.report_oss(r, now_ns)?;
                MdsReplyBody::Done
            }
            MdsOp::IezLoad { app, files } => {
                let (files, planned) = self.iez_load(&app, &files, now_ns)?;
                MdsReplyBody::IezLoaded { files, planned }
            }
            MdsOp::GetPlacement { ino } => MdsReplyBody::Placement(self.placement(ino)?),
            MdsOp::GetPath { ino } => MdsReplyBody::Path(self.path(ino)?),
        })
    }
}

/// Server settings.
#[derive(Clone, Debug)]
pub struct MdsConfig {
    pub listen: SocketAddr,
    pub db: PathBuf,
    pub key: Vec<u8>,
    /// The servers' own key (`--server-key-file`, never sent, different from the cluster
    /// key): an ossd reporting its statistics (role `Oss`) proves it, so a client cannot
    /// forge them, and the destroyer proves it to the ossds (role `Mds`), which admit that
    /// role only against it.
    pub server_key: Vec<u8>,
    pub namespace: NamespaceConfig,
    pub connections_max: usize,
    /// Where to serve Prometheus metrics; see [`pfsqos_metrics`].
    pub metrics_listen: Option<SocketAddr>,
    /// How old an OSS's statistics may be for iez to place on them ([`iez`]).
    pub iez_stats_max_age_ms: u64,
    /// How often the MDS measures its own CPU and memory for iez's busy gate ([`load`]);
    /// `None`: never (the gate stays open). An MDS started inside another program (tests that
    /// run ossds, the MDS and a mount in one process) would measure that whole process.
    pub mds_load_period: Option<std::time::Duration>,
    /// Objects one page of the orphan sweep asks an ossd for (1..=`LIST_OBJECTS_MAX`, the
    /// default): smaller pages bound each reply's size, and make a pass of few objects span
    /// several pages and rounds.
    pub sweep_page_objects: u32,
}

impl MdsConfig {
    pub fn new(
        listen: SocketAddr,
        db: PathBuf,
        key: Vec<u8>,
        server_key: Vec<u8>,
        osses: Vec<OssSpec>,
    ) -> MdsConfig {
        MdsConfig {
            listen,
            db,
            key,
            server_key,
            namespace: NamespaceConfig {
                fsname: "pfsqos".into(),
                osses,
                default_stripe: StripeSpec {
                    stripe_count: 1,
                    stripe_size_bytes: 1 << 20,
                    start_ost: None,
                },
                inodes_max: 100_000_000,
                placer: PLACER_DEFAULT.into(),
            },
            connections_max: 256,
            metrics_listen: None,
            iez_stats_max_age_ms: iez::STATS_MAX_AGE_DEFAULT_MS,
            mds_load_period: Some(load::MDS_LOAD_PERIOD),
            sweep_page_objects: pfsqos_wire::protocol::LIST_OBJECTS_MAX,
        }
    }
}

/// A running MDS.
pub struct Mds {
    addr: SocketAddr,
    ns: Arc<Mutex<Namespace>>,
    admission: Arc<Admission>,
    accept: JoinHandle<()>,
    /// Samples the MDS's own load for iez's busy gate ([`load`]).
    load_sampler: JoinHandle<()>,
    /// Destroys the objects of removed files ([`destroy`]).
    destroyer: JoinHandle<()>,
    metrics: Option<MetricsServer>,
}

impl Mds {
    /// Binds `config.listen` and starts serving.
    pub async fn start(config: MdsConfig) -> anyhow::Result<Mds> {
        let listener = TcpListener::bind(config.listen)
            .await
            .map_err(|e| anyhow::anyhow!("listening on {}: {e}", config.listen))?;
        Mds::serve(listener, config).await
    }

    /// Starts serving on a listener the caller bound already (`config.listen` is ignored).
    /// For a set-up where others must know the MDS's address before it starts (the ossds
    /// report to it and it lists them): binding first and handing the socket over leaves no
    /// window in which another process can take the port.
    pub async fn start_on(
        listener: std::net::TcpListener,
        config: MdsConfig,
    ) -> anyhow::Result<Mds> {
        listener.set_nonblocking(true)?;
        Mds::serve(TcpListener::from_std(listener)?, config).await
    }

    async fn serve(listener: TcpListener, config: MdsConfig) -> anyhow::Result<Mds> {
        if config.key.len() < 16 || config.server_key.len() < 16 || config.server_key == config.key
        {
            anyhow::bail!("the cluster and server keys must be at least 16 bytes each, and differ");
        }
        let page_max = pfsqos_wire::protocol::LIST_OBJECTS_MAX;
        if !(1..=page_max).contains(&config.sweep_page_objects) {
            anyhow::bail!(
                "sweep_page_objects {}: must be 1..={page_max}",
                config.sweep_page_objects
            );
        }
        let mut ns = Namespace::open(&config.db, config.namespace.clone())
            .map_err(|e| anyhow::anyhow!("{}: {e}", config.db.display()))?;
        ns.set_iez_stats_max_age_ms(config.iez_stats_max_age_ms);
        let ns = Arc::new(Mutex::new(ns));
        let ns_handle = ns.clone();
        let addr = listener.local_addr()?;
        let ops: Arc<OpCounts> = Arc::new(std::array::from_fn(|_| AtomicU64::new(0)));
        let admission = Admission::with_connections_max(config.connections_max);
        let metrics = match config.metrics_listen {
            Some(listen) => {
                let (ns, ops, adm) = (ns.clone(), ops.clone(), admission.clone());
                let render: Render = Arc::new(move || {
                    let (inodes, iez) = {
                        let ns = ns.lock().unwrap_or_else(|p| p.into_inner());
                        (ns.statfs().ok().map(|s| s.inodes), ns.iez_metrics())
                    };
                    let ops = MDS_OP_NAMES
                        .iter()
                        .zip(ops.iter())
                        .map(|(n, c)| (*n, c.load(Ordering::Relaxed)))
                        .collect();
                    render_collector(MdsCollector(MdsSample {
                        ops,
                        inodes,
                        admission: adm.counters().fields().to_vec(),
                        iez: Some(iez),
                    }))
                });
                Some(MetricsServer::start(listen, render).await?)
            }
            None => None,
        };
        let load_sampler = {
            let ns = ns.clone();
            let period = config.mds_load_period;
            tokio::spawn(async move {
                let Some(period) = period.filter(|p| !p.is_zero()) else {
                    return;
                };
                let mut sampler = load::LoadSampler::new();
                let mut tick = tokio::time::interval(period);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                // The first tick is immediate: the first window starts then.
                tick.tick().await;
                loop {
                    tick.tick().await;
                    let Ok((s, reading)) = tokio::task::spawn_blocking(move || {
                        let reading = sampler.sample();
                        (sampler, reading)
                    })
                    .await
                    else {
                        return;
                    };
                    sampler = s;
                    let mut ns = ns.lock().unwrap_or_else(|p| p.into_inner());
                    if let Err(e) = ns.set_mds_load(reading) {
                        warn!("MDS load not used: {e}");
                    }
                }
            })
        };
        let key: Arc<[u8]> = config.key.clone().into();
        let server_key: Arc<[u8]> = config.server_key.clone().into();
        let removed = Arc::new(tokio::sync::Notify::new());
        let destroyer = tokio::spawn(
            destroy::Destroyer::new(
                ns.clone(),
                server_key.clone(),
                config.namespace.fsname.clone(),
                &config.namespace.osts(),
                config.sweep_page_objects,
                removed.clone(),
            )
            .run(),
        );
        let fsname = config.namespace.fsname.clone();
        let ost_count = config.namespace.ost_count();
        info!(%addr, db = %config.db.display(), ost_count, "mds serving");
        let adm = admission.clone();
        let accept = tokio::spawn(async move {
            loop {
                let (stream, peer) = match listener.accept().await {
                    Ok(s) => s,
                    Err(e) => {
                        warn!("accept: {e}");
                        // Out of descriptors and the like: back off instead of spinning.
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                        continue;
                    }
                };
                // Only a small pre-auth budget is open to a peer that has not authenticated.
                let slot = match adm.handshake(peer.ip()) {
                    Ok(s) => s,
                    Err(refusal) => {
                        if let Some(suppressed) = adm.log_allowed() {
                            warn!(%peer, reason = %refusal, suppressed, "connection refused before authentication");
                        }
                        continue;
                    }
                };
                let (ns, key, fsname) = (ns.clone(), key.clone(), fsname.clone());
                let server_key = server_key.clone();
                let (ops, adm, removed) = (ops.clone(), adm.clone(), removed.clone());
                tokio::spawn(async move {
                    let keys = conn::ServerKeys {
                        cluster: &key,
                        server: &server_key,
                    };
                    if let Err(e) = serve(
                        stream, ns, &ops, keys, &fsname, ost_count, &adm, slot, &removed,
                    )
                    .await
                    {
                        debug!(%peer, "connection ended: {e}");
                    }
                });
            }
        });
        Ok(Mds {
            addr,
            ns: ns_handle,
            admission,
            accept,
            load_sampler,
            destroyer,
            metrics,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The namespace, for in-process inspection (iez's counters and rows, in tests and tools);
    /// holding its lock stalls every request.
    pub fn with_namespace<T>(&self, f: impl FnOnce(&Namespace) -> T) -> T {
        f(&self.ns.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// What connection admission refused so far.
    pub fn admission_counters(&self) -> pfsqos_wire::admission::AdmissionCounters {
        self.admission.counters()
    }

    /// Where the metrics endpoint listens, if it runs.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics.as_ref().map(MetricsServer::local_addr)
    }

    pub async fn shutdown(self) {
        if let Some(m) = self.metrics {
            m.stop().await;
        }
        self.accept.abort();
        let _ = self.accept.await;
        self.load_sampler.abort();
        let _ = self.load_sampler.await;
        self.destroyer.abort();
        let _ = self.destroyer.await;
    }
}

/// Why the MDS refuses a peer claiming `role` at the handshake, if it does: it serves file
/// system clients (the namespace) and ossds (their statistics, [`MdsOp::ReportOss`]); an
/// `lctl` or another MDS has nothing to do here.
fn mds_role_refusal(role: Role) -> Option<String> {
    match role {
        Role::Client | Role::Oss => None,
        Role::Lctl | Role::Mds => Some(format!(
            "the MDS serves clients and ossds, not role {role:?}"
        )),
    }
}

/// Why a peer of `role` may not run `op`, as the errno it gets (`EPERM`): only an ossd
/// ([`Role::Oss`], which proves the servers' key where the MDS has one) reports an OSS's
/// statistics, since a forged report steers iez's placement of every new file; an ossd runs
/// no namespace operation.
fn op_refusal(role: Role, op: &MdsOp) -> Option<RemoteError> {
    let is_report = matches!(op, MdsOp::ReportOss(_));
    match (role, is_report) {
        (Role::Oss, true) | (Role::Client, false) => None,
        (Role::Oss, false) => Some(err(
            Errno::EPERM,
            "an ossd's connection reports statistics only",
        )),
        _ => Some(err(
            Errno::EPERM,
            "only an ossd (role Oss) reports an OSS's statistics",
        )),
    }
}

#[allow(clippy::too_many_arguments)] // one connection's context, passed once
async fn serve(
    stream: TcpStream,
    ns: Arc<Mutex<Namespace>>,
    ops: &OpCounts,
    keys: conn::ServerKeys<'_>,
    fsname: &str,
    ost_count: u32,
    admission: &Arc<Admission>,
    mut slot: HandshakeSlot,
    removed: &tokio::sync::Notify,
) -> Result<(), conn::ConnError> {
    stream.set_nodelay(true)?;
    let (r, w) = stream.into_split();
    let (mut reader, mut writer) = (Reader::new(r), Writer::new(w));
    // The pre-auth slot becomes a connection slot once the peer has authenticated.
    // It ends early if admission gives it to a source holding fewer handshake slots.
    let adm = admission.clone();
    let eviction = slot.eviction();
    let (peer, _conn_slot) = admission
        .run_handshake(
            eviction,
            conn::server_handshake_admit_keys(
                &mut reader,
                &mut writer,
                keys,
                fsname,
                ost_count,
                move |peer| {
                    mds_role_refusal(peer.role).map_or(Ok(()), Err)?;
                    adm.authenticated(slot).map_err(|r| r.to_string())
                },
            ),
        )
        .await?;
    loop {
        let frame = reader.frame().await?;
        let req = decode_mds_request(&frame)?;
        ops[req.op.kind()].fetch_add(1, Ordering::Relaxed);
        if let Some(refused) = op_refusal(peer.role, &req.op) {
            writer
                .msg(&MdsReply {
                    tag: req.tag,
                    result: Err(refused),
                })
                .await?;
            continue;
        }
        let removes = matches!(req.op, MdsOp::Unlink { .. } | MdsOp::Rename { .. });
        let ns = ns.clone();
        // SQLite commits fsync; keep them off the network threads.
        let result = tokio::task::spawn_blocking(move || {
            let mut ns = ns.lock().unwrap_or_else(|p| p.into_inner());
            ns.execute(req.op, now_ns())
        })
        .await
        .unwrap_or_else(|e| Err(err(Errno::EIO, format!("operation failed: {e}"))));
        if removes && result.is_ok() {
            // Objects may have been queued: the destroyer sends them now.
            removed.notify_one();
        }
        writer
            .msg(&MdsReply {
                tag: req.tag,
                result,
            })
            .await?;
    }
}

#[cfg(test)]
mod tests;
