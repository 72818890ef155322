//! The objects of removed files, destroyed with the MDS as the authority (as Lustre's MDT
//! destroys an unlinked file's OST objects, never its clients).
//!
//! **Queue.** An unlink, or a rename that replaces a file, moves the file's stripes into the
//! `destroys` table in the transaction that removes the file, so a removal acknowledged to a
//! client is never forgotten: a crash before the objects are destroyed leaves the rows, and
//! the restarted MDS destroys them. The [`Destroyer`] task sends each OST's rows to its ossd
//! ([`pfsqos_wire::protocol::WireRequest::Destroy`], role `Mds`) and deletes them once the
//! ossd acknowledges; a failure keeps them for the next attempt, at most [`RETRY_MAX`] later,
//! or at once when another removal wakes the task.
//!
//! **Sweep.** Objects can also outlive every reference without a row: a client that still
//! writes to a removed file recreates its object after the destroy; a database restored from
//! a backup forgets removals. A sweep pass lists the ossd's objects
//! ([`WireRequest::ListObjects`], in pages of [`LIST_OBJECTS_MAX`]) and queues for
//! destruction each one that no file references and whose id was handed out before its page
//! was asked for. Ids are never reused and only a create hands one out, so an object below
//! that bound that no stripe names now can never be named again: the sweep never destroys an
//! object a live file references, nor one a create in flight is about to (its id is above
//! the bound).
//!
//! A pass is incremental: each round of the destroyer lists at most
//! [`SWEEP_PAGES_PER_ROUND`] pages of an ossd and keeps its cursor (OST and last id) for the
//! next round, [`SWEEP_ROUND_PAUSE`] later, so a round's work is bounded however many
//! objects an OST holds, and destroys of removed files run between rounds. A pass starts when
//! the MDS first reaches an ossd (a restarted MDS, whose database may have been restored),
//! and again [`SWEEP_PERIOD`] after the last one began; a reconnection continues the pass
//! under way from its cursor instead of listing the OST from the start. The ossd reads its
//! directory once a pass (at the first page) and serves the later pages from that reading. An ossd that names another file system in its handshake, or another OST count
//! than the configuration gives it, is neither swept nor sent destroys.
//!
//! [`WireRequest::ListObjects`]: pfsqos_wire::protocol::WireRequest::ListObjects

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pfsqos_wire::client::OssClient;
use pfsqos_wire::mds::OstInfo;
use pfsqos_wire::protocol::{RemoteError, Role, DESTROY_OBJECTS_MAX, LIST_OBJECTS_MAX};
use rusqlite::{params, Connection};
use tokio::sync::Notify;
use tracing::{debug, info, warn};

use crate::{db_err, meta_get, Namespace};

/// The `destroys` table: objects of removed files not yet acknowledged destroyed.
pub(crate) const DESTROY_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS destroys (
    ost    INTEGER NOT NULL,
    object INTEGER NOT NULL,
    PRIMARY KEY (ost, object)
);
";

/// Longest wait before a failed destroy is tried again (the first retry comes after
/// [`RETRY_MIN`], doubling).
pub const RETRY_MAX: Duration = Duration::from_secs(5);
/// First wait after a failed attempt.
pub const RETRY_MIN: Duration = Duration::from_millis(100);
/// How often a sweep pass of every ossd's objects starts, besides when the MDS first reaches
/// it.
pub const SWEEP_PERIOD: Duration = Duration::from_secs(600);
/// Pages of [`LIST_OBJECTS_MAX`] objects a round of a pass lists on one ossd at most.
pub const SWEEP_PAGES_PER_ROUND: usize = 16;
/// Pause between two rounds of a pass under way.
pub const SWEEP_ROUND_PAUSE: Duration = Duration::from_millis(100);
/// How long one request to an ossd may take before the connection is dropped and retried.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Queues the objects of `ino`'s stripes for destruction (in the transaction removing it).
pub(crate) fn queue_stripes(tx: &Connection, ino: u64) -> Result<(), RemoteError> {
    tx.execute(
        "INSERT OR IGNORE INTO destroys(ost, object) SELECT ost, object FROM stripes WHERE ino = ?1",
        [ino as i64],
    )
    .map_err(db_err)?;
    Ok(())
}

impl Namespace {
    /// Up to `max` objects of OST `ost` waiting to be destroyed, ascending.
    pub fn pending_destroys(&self, ost: u32, max: usize) -> Result<Vec<u64>, RemoteError> {
        let mut st = self
            .db
            .prepare_cached("SELECT object FROM destroys WHERE ost = ?1 ORDER BY object LIMIT ?2")
            .map_err(db_err)?;
        let rows = st
            .query_map(params![ost, max as i64], |r| r.get::<_, i64>(0))
            .map_err(db_err)?
            .map(|r| r.map(|o| o as u64))
            .collect::<Result<Vec<_>, _>>()
            .map_err(db_err)?;
        Ok(rows)
    }

    /// Objects waiting to be destroyed, on every OST.
    pub fn pending_destroy_count(&self) -> Result<u64, RemoteError> {
        self.db
            .query_row("SELECT COUNT(*) FROM destroys", [], |r| r.get::<_, i64>(0))
            .map(|n| n as u64)
            .map_err(db_err)
    }

    /// Forgets objects of OST `ost` their ossd acknowledged destroyed.
    pub fn destroyed(&mut self, ost: u32, objects: &[u64]) -> Result<(), RemoteError> {
        let tx = crate::write_tx(&mut self.db).map_err(db_err)?;
        {
            let mut st = tx
                .prepare_cached("DELETE FROM destroys WHERE ost = ?1 AND object = ?2")
                .map_err(db_err)?;
            for &o in objects {
                st.execute(params![ost, o as i64]).map_err(db_err)?;
            }
        }
        tx.commit().map_err(db_err)
    }

    /// The next object id a create hands out: every id below it was handed out already.
    pub fn next_object(&self) -> Result<u64, RemoteError> {
        meta_get(&self.db, "next_object")
    }

    /// Of the objects `stored` on OST `ost`, queues for destruction those below `below` (ids
    /// handed out before the listing began) that no file's stripe names; returns how many.
    pub fn queue_orphans(
        &mut self,
        ost: u32,
        stored: &[u64],
        below: u64,
    ) -> Result<usize, RemoteError> {
        let tx = crate::write_tx(&mut self.db).map_err(db_err)?;
        let mut queued = 0;
        {
            let mut referenced = tx
                .prepare_cached(
                    "SELECT EXISTS(SELECT 1 FROM stripes WHERE ost = ?1 AND object = ?2)",
                )
                .map_err(db_err)?;
            let mut queue = tx
                .prepare_cached("INSERT OR IGNORE INTO destroys(ost, object) VALUES (?1, ?2)")
                .map_err(db_err)?;
            for &o in stored
                .iter()
                .filter(|&&o| o < below && o <= i64::MAX as u64)
            {
                let live: bool = referenced
                    .query_row(params![ost, o as i64], |r| r.get(0))
                    .map_err(db_err)?;
                if !live {
                    queued += queue.execute(params![ost, o as i64]).map_err(db_err)?;
                }
            }
        }
        tx.commit().map_err(db_err)?;
        Ok(queued)
    }
}

/// One ossd as the destroyer reaches it: its address, its OSTs' global indices, the
/// connection while it works.
struct Oss {
    addr: String,
    /// Global index of the OSS's OST `k` is `first_ost + k`.
    first_ost: u32,
    ost_count: u32,
    conn: Option<OssClient>,
    /// Whether the last attempt failed (the next failure is then logged at debug level).
    failing: bool,
    /// The sweep pass under way on this ossd, if any.
    sweep: Option<SweepCursor>,
    /// Whether a pass ever started on this ossd (the first connection starts one).
    swept_once: bool,
}

/// Where a sweep pass of one ossd stands: its OST `k` (0-based on the ossd), the last id
/// listed there, the objects listed and the orphans queued so far, and when it began.
#[derive(Clone, Copy, Debug)]
struct SweepCursor {
    ost: u32,
    after: u64,
    listed: u64,
    queued: usize,
    began: tokio::time::Instant,
}

impl SweepCursor {
    fn start() -> SweepCursor {
        SweepCursor {
            ost: 0,
            after: 0,
            listed: 0,
            queued: 0,
            began: tokio::time::Instant::now(),
        }
    }
}

/// The task that destroys queued objects and sweeps the ossds for orphans.
pub(crate) struct Destroyer {
    ns: Arc<Mutex<Namespace>>,
    key: Arc<[u8]>,
    /// The file system's name: an ossd of another file system is never swept.
    fsname: String,
    osses: Vec<Oss>,
    /// Objects a sweep page asks for (1..=[`LIST_OBJECTS_MAX`]).
    page_objects: u32,
    wake: Arc<Notify>,
}

type Failure = String;

impl Destroyer {
    pub(crate) fn new(
        ns: Arc<Mutex<Namespace>>,
        key: Arc<[u8]>,
        fsname: String,
        osts: &[OstInfo],
        page_objects: u32,
        wake: Arc<Notify>,
    ) -> Destroyer {
        assert!(
            (1..=LIST_OBJECTS_MAX).contains(&page_objects),
            "a sweep page outside what an ossd lists"
        );
        let mut osses: Vec<Oss> = Vec::new();
        for o in osts {
            match osses.last_mut() {
                Some(last) if last.addr == o.oss_addr => last.ost_count += 1,
                _ => osses.push(Oss {
                    addr: o.oss_addr.clone(),
                    first_ost: o.index,
                    ost_count: 1,
                    conn: None,
                    failing: false,
                    sweep: None,
                    swept_once: false,
                }),
            }
        }
        debug_assert_eq!(
            osses.iter().map(|o| o.ost_count as usize).sum::<usize>(),
            osts.len()
        );
        Destroyer {
            ns,
            key,
            fsname,
            osses,
            page_objects,
            wake,
        }
    }

    pub(crate) async fn run(mut self) {
        let mut retry = RETRY_MIN;
        let mut last_sweep = tokio::time::Instant::now();
        loop {
            let sweep_all = last_sweep.elapsed() >= SWEEP_PERIOD;
            if sweep_all {
                last_sweep = tokio::time::Instant::now();
            }
            let mut all_done = true;
            for i in 0..self.osses.len() {
                if sweep_all && self.osses[i].sweep.is_none() {
                    self.osses[i].sweep = Some(SweepCursor::start());
                }
                match self.serve_oss(i).await {
                    Ok(()) => self.osses[i].failing = false,
                    Err(e) => {
                        all_done = false;
                        let oss = &mut self.osses[i];
                        oss.conn = None;
                        if oss.failing {
                            debug!(oss = %oss.addr.escape_debug(), "objects not destroyed yet: {e}");
                        } else {
                            warn!(oss = %oss.addr.escape_debug(), "objects not destroyed yet, retrying: {e}");
                        }
                        oss.failing = true;
                    }
                }
            }
            let wait = if all_done {
                retry = RETRY_MIN;
                if self.osses.iter().any(|o| o.sweep.is_some()) {
                    SWEEP_ROUND_PAUSE
                } else {
                    SWEEP_PERIOD.saturating_sub(last_sweep.elapsed())
                }
            } else {
                let w = retry;
                retry = (retry * 2).min(RETRY_MAX);
                w
            };
            // A removal wakes the task at once; otherwise the retry or the next sweep does.
            let _ = tokio::time::timeout(wait, self.wake.notified()).await;
        }
    }

    /// Connects to OSS `i` if needed (its first connection starts a sweep pass), runs a
    /// round of the pass under way, then destroys every object queued for its OSTs.
    async fn serve_oss(&mut self, i: usize) -> Result<(), Failure> {
        let fresh = self.osses[i].conn.is_none();
        if fresh {
            let addr = tokio::net::lookup_host(self.osses[i].addr.as_str())
                .await
                .map_err(|e| format!("resolving: {e}"))?
                .next()
                .ok_or("the address resolves to nothing")?;
            let c = tokio::time::timeout(
                REQUEST_TIMEOUT,
                OssClient::connect(addr, &self.key, Role::Mds),
            )
            .await
            .map_err(|_| "connecting timed out".to_string())?
            .map_err(|e| format!("connecting: {e}"))?;
            if c.server().fsname != self.fsname {
                return Err(format!(
                    "the ossd serves file system {:?}, this MDS {:?}",
                    c.server().fsname,
                    self.fsname
                ));
            }
            if c.server().ost_count != self.osses[i].ost_count {
                return Err(format!(
                    "the ossd serves {} OSTs, the MDS's configuration {}",
                    c.server().ost_count,
                    self.osses[i].ost_count
                ));
            }
            self.osses[i].conn = Some(c);
        }
        if !self.osses[i].swept_once {
            self.osses[i].swept_once = true;
            self.osses[i].sweep.get_or_insert_with(SweepCursor::start);
        }
        if self.osses[i].sweep.is_some() {
            self.sweep_round(i).await?;
        }
        for k in 0..self.osses[i].ost_count {
            let ost = self.osses[i].first_ost + k;
            loop {
                let batch = self
                    .db(move |ns| ns.pending_destroys(ost, DESTROY_OBJECTS_MAX))
                    .await?;
                if batch.is_empty() {
                    break;
                }
                let conn = self.osses[i].conn.as_mut().expect("connected above");
                tokio::time::timeout(REQUEST_TIMEOUT, conn.destroy(k, &batch))
                    .await
                    .map_err(|_| "destroy timed out".to_string())?
                    .map_err(|e| format!("destroy on its OST {k}: {e}"))?;
                let n = batch.len();
                self.db(move |ns| ns.destroyed(ost, &batch)).await?;
                debug!(ost, objects = n, "objects destroyed");
                if n < DESTROY_OBJECTS_MAX {
                    break;
                }
            }
        }
        Ok(())
    }

    /// One round of OSS `i`'s sweep pass (see the module docs): at most
    /// [`SWEEP_PAGES_PER_ROUND`] pages from its cursor, each page's orphans queued; the cursor
    /// moves past what was queued, so a failure resumes there. The pass ends after its last
    /// OST's last page.
    async fn sweep_round(&mut self, i: usize) -> Result<(), Failure> {
        let ost_count = self.osses[i].ost_count;
        for _ in 0..SWEEP_PAGES_PER_ROUND {
            let Some(cur) = self.osses[i].sweep else {
                return Ok(());
            };
            assert!(cur.ost < ost_count, "a sweep cursor past the ossd's OSTs");
            let ost = self.osses[i].first_ost + cur.ost;
            // Taken before the page is asked for: every id below it was handed out already.
            let below = self.db(|ns| ns.next_object()).await?;
            let conn = self.osses[i]
                .conn
                .as_mut()
                .expect("connected before a sweep");
            let (ids, more) = tokio::time::timeout(
                REQUEST_TIMEOUT,
                conn.list_objects(cur.ost, cur.after, self.page_objects),
            )
            .await
            .map_err(|_| "object listing timed out".to_string())?
            .map_err(|e| format!("listing its OST {}: {e}", cur.ost))?;
            let last = ids.last().copied();
            let listed = ids.len() as u64;
            let queued = self
                .db(move |ns| ns.queue_orphans(ost, &ids, below))
                .await?;
            let mut next = SweepCursor {
                listed: cur.listed + listed,
                queued: cur.queued + queued,
                ..cur
            };
            match last {
                Some(last) if more => {
                    assert!(last > cur.after, "an object listing that does not advance");
                    next.after = last;
                }
                _ if cur.ost + 1 < ost_count => {
                    next.ost += 1;
                    next.after = 0;
                }
                _ => {
                    if next.queued > 0 {
                        info!(oss = %self.osses[i].addr.escape_debug(), objects = next.queued, "orphaned objects found, destroying them");
                    }
                    info!(oss = %self.osses[i].addr.escape_debug(), objects = next.listed, seconds = next.began.elapsed().as_secs_f64(), "sweep pass done");
                    self.osses[i].sweep = None;
                    continue;
                }
            }
            self.osses[i].sweep = Some(next);
        }
        Ok(())
    }

    /// Runs `f` on the namespace off the network threads (SQLite commits fsync).
    async fn db<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Namespace) -> Result<T, RemoteError> + Send + 'static,
    ) -> Result<T, Failure> {
        let ns = self.ns.clone();
        tokio::task::spawn_blocking(move || {
            let mut ns = ns.lock().unwrap_or_else(|p| p.into_inner());
            f(&mut ns)
        })
        .await
        .map_err(|e| format!("database task: {e}"))?
        .map_err(|e| format!("database: {e}"))
    }
}
