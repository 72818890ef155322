//! Zero-copy reads for the ossd: the bytes of an object are spliced from the page cache into a
//! pipe by an I/O thread (the pipe holds references to the cached pages, nothing is copied),
//! and later from the pipe into the client's socket ([`crate::conn::Writer::msg_with_piped`]).
//! A read through `pread` copies every byte twice on the way out (page cache to buffer, buffer
//! to socket); spliced, neither copy happens.
//!
//! Pipes come from a [`PipePool`] with a bound on how many exist. A read that finds no pipe
//! (all in use, or the kernel refuses one big enough: `/proc/sys/fs/pipe-max-size` and the
//! per-user pipe limits) is answered through `pread` instead; so is a read larger than a pipe.
//!
//! The pipe is sized for the pages the read spans, so filling it never blocks on a full pipe;
//! it is filled with `SPLICE_F_NONBLOCK` all the same, and a fill that would block is given up
//! (the pipe closed, the read answered through `pread`).

use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Pipes a pool hands out at most at once (each holds up to [`PIPE_BYTES_MAX`] of page
/// references while its reply is on the way, and two file descriptors).
pub const PIPES_MAX: usize = 64;
/// The largest pipe asked for: Linux's default `pipe-max-size` (1 MiB). Reads spanning more
/// pages than this go through `pread`.
pub const PIPE_BYTES_MAX: usize = 1 << 20;
const PAGE_BYTES: usize = 4096;

struct Pipe {
    r: OwnedFd,
    w: OwnedFd,
    capacity_bytes: usize,
}

/// A bounded set of pipes, reused once drained.
pub struct PipePool {
    free: Mutex<Vec<Pipe>>,
    /// Pipes in existence (free or in use).
    live: AtomicUsize,
    max: usize,
}

/// Bytes of a file held in a pipe, to be spliced into a socket. Dropped before its bytes were
/// all sent, the pipe is closed (its contents are of no use to anyone); once drained it goes
/// back to the pool.
pub struct Piped {
    pipe: Option<Pipe>,
    pool: Arc<PipePool>,
    len: usize,
    drained: bool,
}

impl PipePool {
    pub fn new(max: usize) -> Arc<PipePool> {
        Arc::new(PipePool {
            free: Mutex::new(Vec::new()),
            live: AtomicUsize::new(0),
            max,
        })
    }

    /// Pipes in existence, free or in use.
    pub fn live(&self) -> usize {
        self.live.load(Ordering::Relaxed)
    }

    /// Up to `len` bytes of `file` at `offset` (fewer only at its end) in a pipe; `None` when
    /// no pipe can hold them (see the module docs), for the caller to read them another way.
    pub fn fill(
        self: &Arc<Self>,
        file: &File,
        offset: u64,
        len: usize,
    ) -> std::io::Result<Option<Piped>> {
        // A pipe slot holds at most one page: the read needs a slot per page it touches.
        let pages = ((offset % PAGE_BYTES as u64) as usize + len).div_ceil(PAGE_BYTES);
        let need = pages.max(1) * PAGE_BYTES;
        if need > PIPE_BYTES_MAX {
            return Ok(None);
        }
        let Some(pipe) = self.take(need) else {
            return Ok(None);
        };
        let mut piped = Piped {
            pipe: Some(pipe),
            pool: self.clone(),
            len: 0,
            drained: false,
        };
        let w = piped.pipe.as_ref().expect("just set").w.as_raw_fd();
        let mut at = offset as libc::loff_t;
        while piped.len < len {
            // SAFETY: plain descriptors and an offset the call updates; no memory is lent.
            let n = unsafe {
                libc::splice(
                    file.as_raw_fd(),
                    &mut at,
                    w,
                    std::ptr::null_mut(),
                    len - piped.len,
                    libc::SPLICE_F_NONBLOCK,
                )
            };
            match n {
                0 => break,
                n if n > 0 => piped.len += n as usize,
                _ => {
                    let e = std::io::Error::last_os_error();
                    match e.kind() {
                        std::io::ErrorKind::Interrupted => {}
                        // A full pipe (not expected, see the module docs), or a file
                        // system that cannot splice: give up, the caller reads otherwise.
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::InvalidInput => {
                            return Ok(None)
                        }
                        _ => return Err(e),
                    }
                }
            }
        }
        if piped.len == 0 {
            // Nothing to send: the empty pipe can go back as it is.
            piped.drained = true;
        }
        Ok(Some(piped))
    }

    /// A free pipe of at least `bytes`, or a new one while fewer than `max` exist.
    fn take(&self, bytes: usize) -> Option<Pipe> {
        {
            let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(i) = free.iter().position(|p| p.capacity_bytes >= bytes) {
                return Some(free.swap_remove(i));
            }
            if let Some(small) = free.pop() {
                // Too small for this read: make room for a bigger one.
                drop(small);
                self.live.fetch_sub(1, Ordering::Relaxed);
            }
        }
        if self
            .live
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < self.max).then_some(n + 1)
            })
            .is_err()
        {
            return None;
        }
        let pipe = new_pipe(bytes);
        if pipe.is_none() {
            self.live.fetch_sub(1, Ordering::Relaxed);
        }
        pipe
    }

    fn give_back(&self, pipe: Pipe) {
        self.free
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(pipe);
    }
}

/// A pipe that holds at least `bytes`, or `None` if the kernel will not make one.
fn new_pipe(bytes: usize) -> Option<Pipe> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return None;
    }
    // SAFETY: pipe2 succeeded, so both are open descriptors that nothing else owns.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // The kernel rounds the size up to a power-of-two number of pages and returns it.
    // SAFETY: F_SETPIPE_SZ on a pipe we own, with an int argument.
    let got = unsafe { libc::fcntl(w.as_raw_fd(), libc::F_SETPIPE_SZ, bytes as libc::c_int) };
    if got < 0 || (got as usize) < bytes {
        return None;
    }
    Some(Pipe {
        r,
        w,
        capacity_bytes: got as usize,
    })
}

impl Piped {
    /// Bytes in the pipe.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The pipe's read end, to splice from.
    pub(crate) fn read_fd(&self) -> RawFd {
        self.pipe
            .as_ref()
            .expect("present until dropped")
            .r
            .as_raw_fd()
    }

    /// Records that every byte has left the pipe: it may be reused.
    pub(crate) fn set_drained(&mut self) {
        self.drained = true;
    }
}

impl Drop for Piped {
    fn drop(&mut self) {
        if let Some(pipe) = self.pipe.take() {
            if self.drained {
                self.pool.give_back(pipe);
            } else {
                drop(pipe);
                self.pool.live.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::FileExt;

    fn drain(p: &mut Piped) -> Vec<u8> {
        let mut out = vec![0u8; p.len()];
        let mut got = 0;
        while got < out.len() {
            // SAFETY: reads into the unfilled rest of `out`.
            let n =
                unsafe { libc::read(p.read_fd(), out[got..].as_mut_ptr().cast(), out.len() - got) };
            assert!(n > 0, "the pipe holds len bytes");
            got += n as usize;
        }
        p.set_drained();
        out
    }

    /// Whatever the offset and length, a pipe holds exactly the file's bytes there (fewer at
    /// its end, none past it), holes read as zeros, and drained pipes are reused.
    #[test]
    fn pipes_hold_the_files_bytes_and_are_reused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("obj");
        let data: Vec<u8> = (0..3 * 4096 + 100).map(|i| (i * 7 % 251) as u8).collect();
        let mut f = File::create(&path).unwrap();
        f.write_all(&data).unwrap();
        // A hole, then 10 bytes at 1 MiB + 5.
        f.write_all_at(&[9; 10], (1 << 20) + 5).unwrap();
        let f = File::open(&path).unwrap();
        let pool = PipePool::new(4);
        let mut expect = data.clone();
        expect.resize((1 << 20) + 5, 0);
        expect.extend_from_slice(&[9; 10]);
        let file_len = expect.len() as u64;
        for (offset, len) in [
            (0u64, 1usize),
            (0, 4096),
            (100, 4096),
            (4095, 2),
            (0, 3 * 4096 + 100),
            (5000, 1 << 19),
            ((1 << 20) - 50, 100),
            (file_len - 3, 100),
            (file_len + 10, 100),
        ] {
            let mut p = pool.fill(&f, offset, len).unwrap().expect("a pipe");
            let start = offset.min(file_len) as usize;
            let end = (offset + len as u64).min(file_len) as usize;
            let want = &expect[start..end.max(start)];
            assert_eq!(drain(&mut p), want, "offset {offset} len {len}");
        }
        assert_eq!(pool.live(), 1, "one pipe, reused for every read");
    }

    /// At most `max` pipes exist; an undrained pipe is closed, not reused; a read of more
    /// pages than a pipe may hold gets none.
    #[test]
    fn pipes_are_bounded_and_only_drained_ones_come_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("obj");
        std::fs::write(&path, vec![1u8; 3 << 20]).unwrap();
        let f = File::open(&path).unwrap();
        let pool = PipePool::new(2);
        let a = pool.fill(&f, 0, 4096).unwrap().expect("first");
        let mut b = pool.fill(&f, 0, 4096).unwrap().expect("second");
        assert!(
            pool.fill(&f, 0, 4096).unwrap().is_none(),
            "a third is refused"
        );
        drain(&mut b);
        drop(b);
        assert_eq!(pool.live(), 2);
        let c = pool
            .fill(&f, 0, 4096)
            .unwrap()
            .expect("the drained one again");
        drop(a);
        assert_eq!(pool.live(), 1, "the undrained pipe is closed");
        drop(c);
        assert_eq!(pool.live(), 0);
        // 1 MiB at an unaligned offset spans 257 pages: more than a 1 MiB pipe holds.
        assert!(pool.fill(&f, 100, 1 << 20).unwrap().is_none());
        assert!(pool.fill(&f, 0, 1 << 20).unwrap().is_some());
    }
}
