//! Reading `/proc` texts, shared by the daemons that report their host's or their own load
//! (the ossd's report to the MDS, the MDS's "busy" gate for iez): one bounded read and one
//! `kB` field parser, so the two cannot disagree on either.

use std::io::Read;

/// Most bytes read of one `/proc` file: `stat`, `status`, `loadavg` and `meminfo` are a few
/// KiB; a longer text (a kernel or a mount that is not procfs) is cut there and parsed as far
/// as it goes, never read whole into memory.
pub const PROC_TEXT_LEN_MAX: u64 = 64 * 1024;

/// The text of `path`, at most [`PROC_TEXT_LEN_MAX`] bytes of it; `None` if it cannot be
/// read or is not UTF-8.
pub fn read_capped(path: &str) -> Option<String> {
    let mut text = String::new();
    std::fs::File::open(path)
        .ok()?
        .take(PROC_TEXT_LEN_MAX)
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

/// A `kB` field (`Name:   1234 kB`) of `/proc/meminfo` or `/proc/<pid>/status`, in bytes;
/// `None` when the field is missing, not in kB, not a number, or overflows.
pub fn kb_field_bytes(text: &str, name: &str) -> Option<u64> {
    let kb: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix(name))?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse()
        .ok()?;
    kb.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kb_fields_parse_or_refuse() {
        let meminfo = "MemTotal:       1000 kB\nMemFree: 10 kB\nMemAvailable:    250 kB\n";
        assert_eq!(kb_field_bytes(meminfo, "MemTotal:"), Some(1000 * 1024));
        assert_eq!(kb_field_bytes(meminfo, "MemAvailable:"), Some(250 * 1024));
        assert_eq!(kb_field_bytes(meminfo, "SwapTotal:"), None);
        assert_eq!(kb_field_bytes("VmRSS: x kB\n", "VmRSS:"), None);
        assert_eq!(kb_field_bytes("VmRSS: 12\n", "VmRSS:"), None);
        assert_eq!(
            kb_field_bytes(&format!("VmRSS: {} kB\n", u64::MAX), "VmRSS:"),
            None
        );
    }

    #[test]
    fn reads_are_capped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big");
        std::fs::write(&path, "a".repeat(PROC_TEXT_LEN_MAX as usize + 100)).unwrap();
        let text = read_capped(path.to_str().unwrap()).unwrap();
        assert_eq!(text.len() as u64, PROC_TEXT_LEN_MAX);
        assert_eq!(read_capped("/nonexistent/pfsqos"), None);
    }
}
