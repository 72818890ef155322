//! The tc actuator against the real kernel: a network namespace joined to the root namespace by
//! a veth pair, a TBF on the root side's veth, and a TCP stream from the root namespace to a
//! listener inside the namespace. The achieved rate is measured at the receiver, where socket
//! and qdisc buffers cannot inflate it.
//!
//! The listener runs on a thread of this process that has joined the namespace with
//! setns(CLONE_NEWNET) (a thread's network namespace is its own, and a socket stays in the
//! namespace it was created in): no second process to start, find and reap.
//!
//! Needs root and iproute2 (`ip`, `tc`); without them it prints why and passes. The namespace
//! and veth (`pfsqos_linux::netns`) are removed when dropped, on failure too.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use pfsqos_linux::netns::{unavailable_reason, VethNamespace};
use pfsqos_linux::{TcActuator, SYSFS_ROOT};

/// Runs `f` on a new thread inside network namespace `ns`.
fn spawn_in_netns<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> thread::JoinHandle<T> {
    let ns_path = Path::new("/run/netns").join(ns);
    thread::spawn(move || {
        let ns_file = std::fs::File::open(&ns_path)
            .unwrap_or_else(|e| panic!("cannot open {}: {e}", ns_path.display()));
        // SAFETY: a valid namespace fd; CLONE_NEWNET changes only this thread's network
        // namespace, which is allowed in a multithreaded process.
        let rc = unsafe { libc::setns(ns_file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
        f()
    })
}

/// Bytes per second received by a listener in `ns` on `listen_ip` from a TCP stream sent as
/// fast as possible from this (root) namespace: counted from `warmup` after the first byte
/// (past the initial bucket and slow start) over about `window`.
fn measure_rate_bytes_per_s(
    ns: &str,
    listen_ip: Ipv4Addr,
    warmup: Duration,
    window: Duration,
) -> f64 {
    let deadline = Instant::now() + warmup + window + Duration::from_secs(10);
    let (addr_tx, addr_rx) = mpsc::channel::<SocketAddr>();
    let receiver = spawn_in_netns(ns, move || -> Result<f64, String> {
        let listener =
            TcpListener::bind(SocketAddrV4::new(listen_ip, 0)).map_err(|e| e.to_string())?;
        addr_tx
            .send(listener.local_addr().map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
        listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        let mut stream = loop {
            match listener.accept() {
                Ok((stream, _)) => break stream,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if Instant::now() > deadline {
                        return Err("no connection".to_string());
                    }
                    thread::sleep(Duration::from_millis(5));
                }
                Err(e) => return Err(e.to_string()),
            }
        };
        stream.set_nonblocking(false).map_err(|e| e.to_string())?;
        stream
            .set_read_timeout(Some(Duration::from_millis(200)))
            .map_err(|e| e.to_string())?;
        let mut buf = vec![0u8; 256 * 1024];
        let mut first_byte_at: Option<Instant> = None;
        let mut window_start: Option<Instant> = None;
        let mut counted_bytes = 0u64;
        loop {
            if Instant::now() > deadline {
                return Err("the stream stalled".to_string());
            }
            let read_bytes = match stream.read(&mut buf) {
                Ok(0) => return Err("the sender closed the stream".to_string()),
                Ok(n) => n as u64,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    0
                }
                Err(e) => return Err(e.to_string()),
            };
            let now = Instant::now();
            let first = *first_byte_at.get_or_insert(now);
            match window_start {
                // Bytes read at the window's start arrived before it: not counted.
                None if now >= first + warmup => window_start = Some(now),
                None => {}
                Some(start) => {
                    counted_bytes += read_bytes;
                    let elapsed = now - start;
                    if elapsed >= window {
                        return Ok(counted_bytes as f64 / elapsed.as_secs_f64());
                    }
                }
            }
        }
        // Dropping the stream with unread data resets it: the sender's write fails and it ends.
    });
    let addr = addr_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the listener's address");
    let sender = thread::spawn(move || {
        let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_secs(5)) else {
            return;
        };
        let _ = stream.set_write_timeout(Some(Duration::from_secs(2)));
        let chunk = vec![0x5au8; 64 * 1024];
        while stream.write_all(&chunk).is_ok() {}
    });
    let rate = receiver
        .join()
        .expect("the receiver thread")
        .expect("the receiver's measurement");
    sender.join().expect("the sender thread");
    rate
}

#[test]
fn tbf_limits_a_real_tcp_stream_and_removing_it_lifts_the_limit() {
    if let Some(reason) = unavailable_reason() {
        pfsqos_testkit::skip(
            "tbf_limits_a_real_tcp_stream_and_removing_it_lifts_the_limit",
            &reason,
        );
        return;
    }
    // The namespace and veth need kernel support a container may lack: skip, do not fail.
    let netns = match VethNamespace::create("tbf") {
        Ok(n) => n,
        Err(e) => {
            pfsqos_testkit::skip(
                "tbf_limits_a_real_tcp_stream_and_removing_it_lifts_the_limit",
                &format!("cannot create a network namespace and veth pair: {e}"),
            );
            return;
        }
    };
    let ns_ip = netns.ns_ip;

    // 8 Mbit/s on the root side's egress; a 100 ms period gives a 100 kB burst.
    let limit_bytes_per_s = 1_000_000u64;
    let actuator = TcActuator::new(&netns.host_if, 100_000_000, 50, Path::new(SYSFS_ROOT)).unwrap();
    actuator.apply(Some(limit_bytes_per_s)).unwrap();
    let shown = actuator.show().unwrap().expect("a root tbf");
    assert_eq!(shown.rate_bytes_per_s, limit_bytes_per_s, "{shown:?}");
    assert!(shown.burst_bytes.abs_diff(100_000) <= 2_000, "{shown:?}");

    let limited = measure_rate_bytes_per_s(
        &netns.ns,
        ns_ip,
        Duration::from_millis(300),
        Duration::from_millis(1500),
    );
    println!("limited to {limit_bytes_per_s} B/s: received {limited:.0} B/s");
    assert!(
        (0.5 * limit_bytes_per_s as f64..=1.3 * limit_bytes_per_s as f64).contains(&limited),
        "rate {limited:.0} B/s is not near the {limit_bytes_per_s} B/s limit"
    );

    // Replacing changes the qdisc in place.
    actuator.apply(Some(2 * limit_bytes_per_s)).unwrap();
    assert_eq!(
        actuator
            .show()
            .unwrap()
            .expect("a root tbf")
            .rate_bytes_per_s,
        2 * limit_bytes_per_s
    );

    // Removing the limit, twice (the second finds no qdisc and is not an error).
    actuator.apply(None).unwrap();
    actuator.apply(None).unwrap();
    assert_eq!(actuator.show().unwrap(), None);
    let unlimited = measure_rate_bytes_per_s(
        &netns.ns,
        ns_ip,
        Duration::from_millis(100),
        Duration::from_millis(500),
    );
    println!("unlimited: received {unlimited:.0} B/s");
    assert!(
        unlimited > 3.0 * limit_bytes_per_s as f64,
        "without the qdisc the rate {unlimited:.0} B/s should be well above {limit_bytes_per_s} B/s"
    );
}
