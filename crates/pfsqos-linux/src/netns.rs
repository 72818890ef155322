//! A network namespace joined to the root namespace by a veth pair, made with `ip`: the
//! network the tc actuator's tests run on (a TBF on one end shapes real traffic to or from
//! the namespace, on loopback only, without touching the machine's interfaces). Used by
//! `tests/netns_tbf.rs` here and by `pfsqos-cli`'s tc-client tests.
//!
//! Every name and address is made here from a short tag and the process id, never from
//! outside input; `ip` runs as a child process with separate argv entries (no shell). The
//! namespace and both ends of the pair are removed when the [`VethNamespace`] is dropped.

use std::net::Ipv4Addr;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::process::Command;

/// Runs `program args`, returning its stdout, or what failed (with its stderr).
pub fn run(program: &str, args: &[&str]) -> Result<String, String> {
    let output = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(format!(
            "{program} {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// Why namespaces and tc cannot be used here (not root, iproute2 missing), if they cannot.
pub fn unavailable_reason() -> Option<String> {
    // The owner of /proc/self is the process's effective uid.
    match std::fs::metadata("/proc/self").map(|m| m.uid()) {
        Ok(0) => {}
        Ok(euid) => {
            return Some(format!(
                "not root (euid {euid}): network namespaces, veth pairs and tc need root"
            ))
        }
        Err(e) => return Some(format!("cannot read /proc/self: {e}")),
    }
    for program in ["ip", "tc"] {
        if Command::new(program).arg("-V").output().is_err() {
            return Some(format!("'{program}' is missing: install iproute2"));
        }
    }
    None
}

/// Longest tag: the interface names `pf<tag><pid>h` must fit the kernel's 15 bytes with a
/// pid of up to 7 digits (Linux's `pid_max` is at most 4,194,304).
pub const TAG_LEN_MAX: usize = 5;

/// A namespace `pfsqos-<tag>-<pid>` with a veth pair: `host_if` in the root namespace at
/// `host_ip`, `ns_if` in the namespace at `ns_ip` (a private /30 of 10.0.0.0/8), both up,
/// and the namespace's loopback up.
pub struct VethNamespace {
    pub ns: String,
    pub host_if: String,
    pub ns_if: String,
    pub host_ip: Ipv4Addr,
    pub ns_ip: Ipv4Addr,
}

impl VethNamespace {
    /// Creates the namespace and pair for `tag` (1..=[`TAG_LEN_MAX`] lowercase ASCII letters:
    /// tests running at once in one process use different tags). An error says which `ip`
    /// command failed (a container may lack the kernel support); what was made is removed.
    pub fn create(tag: &str) -> Result<VethNamespace, String> {
        if tag.is_empty() || tag.len() > TAG_LEN_MAX || !tag.bytes().all(|b| b.is_ascii_lowercase())
        {
            return Err(format!(
                "tag {tag:?}: 1..={TAG_LEN_MAX} lowercase ASCII letters"
            ));
        }
        let pid = std::process::id();
        // A /30 per (tag, pid) in 10.213.0.0/16 .. 10.244.0.0/16: the second octet from the
        // tag, the others from the pid.
        let tag_sum: u32 = tag.bytes().map(u32::from).sum();
        let b = 213 + (tag_sum % 32) as u8;
        let (c, d) = (((pid / 64) % 256) as u8, ((pid % 64) * 4) as u8);
        let veth = VethNamespace {
            ns: format!("pfsqos-{tag}-{pid}"),
            host_if: format!("pf{tag}{pid}h"),
            ns_if: format!("pf{tag}{pid}n"),
            host_ip: Ipv4Addr::new(10, b, c, d + 1),
            ns_ip: Ipv4Addr::new(10, b, c, d + 2),
        };
        assert!(veth.host_if.len() <= 15 && veth.ns_if.len() <= 15);
        run("ip", &["netns", "add", &veth.ns])?;
        // From here on, a failure drops `veth`, which removes what exists.
        run(
            "ip",
            &[
                "link",
                "add",
                &veth.host_if,
                "type",
                "veth",
                "peer",
                "name",
                &veth.ns_if,
                "netns",
                &veth.ns,
            ],
        )?;
        let host_cidr = format!("{}/30", veth.host_ip);
        let ns_cidr = format!("{}/30", veth.ns_ip);
        for args in [
            vec!["addr", "add", &host_cidr, "dev", &veth.host_if],
            vec!["link", "set", &veth.host_if, "up"],
            vec!["-n", &veth.ns, "addr", "add", &ns_cidr, "dev", &veth.ns_if],
            vec!["-n", &veth.ns, "link", "set", &veth.ns_if, "up"],
            vec!["-n", &veth.ns, "link", "set", "lo", "up"],
        ] {
            run("ip", &args)?;
        }
        Ok(veth)
    }

    /// The namespace's file, for `setns(2)` or `nsenter --net=` (which, unlike `ip netns
    /// exec`, keeps the caller's mount namespace: a FUSE mount made inside shows outside).
    pub fn ns_path(&self) -> PathBuf {
        PathBuf::from("/run/netns").join(&self.ns)
    }

    /// `tc qdisc show dev IF` inside the namespace.
    pub fn ns_qdisc_show(&self) -> Result<String, String> {
        run("tc", &["-n", &self.ns, "qdisc", "show", "dev", &self.ns_if])
    }
}

impl Drop for VethNamespace {
    fn drop(&mut self) {
        // Deleting one end deletes its peer; deleting the namespace would too.
        let _ = run("ip", &["link", "del", &self.host_if]);
        let _ = run("ip", &["netns", "del", &self.ns]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_checked_before_anything_runs() {
        for bad in ["", "toolong", "a b", "A", "x/y", "é"] {
            let e = VethNamespace::create(bad).err().unwrap();
            assert!(e.contains("lowercase ASCII"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn a_failing_command_names_itself() {
        let e = run("sh", &["-c", "echo oops >&2; exit 3"]).unwrap_err();
        assert!(e.contains("sh -c") && e.contains("oops"), "{e}");
        assert!(run("/nonexistent-program", &[])
            .unwrap_err()
            .contains("cannot run"));
    }
}
