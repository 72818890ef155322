//! `pfsqos setstripe` and `pfsqos getstripe`: Lustre's `lfs setstripe`/`lfs getstripe` for a
//! pfsqos mount, through the xattrs the mount serves (so they work on any path of a mount
//! without a connection of their own).
//!
//! * directory: `setstripe` writes `user.pfsqos.layout` (its default for new files);
//! * path that does not exist: `setstripe` writes `user.pfsqos.create` on the parent
//!   directory, which creates an empty file with that layout (as `lfs setstripe FILE` does);
//! * existing file: refused with `EEXIST` (a layout is fixed at creation, as in Lustre).

use std::ffi::CString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::ops::{parse_spec, XATTR_CREATE, XATTR_LAYOUT};

/// Largest xattr value read (a 2000-stripe layout is about 40 KiB of text).
const XATTR_VALUE_BYTES_MAX: usize = 1 << 20;

/// `setstripe` options; `None` means the default of the directory or the file system.
#[derive(Clone, Debug, Default)]
pub struct SetStripe {
    pub stripe_count: Option<i32>,
    pub stripe_size_bytes: Option<u64>,
    pub stripe_index: Option<i32>,
    pub path: PathBuf,
}

/// Parses a size as `lfs` takes it (a stripe size, an OST size): bytes, or a number with `k`,
/// `M` or `G` (powers of 1024, either case).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (num, mult) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1u64 << 10),
        Some('m' | 'M') => (&t[..t.len() - 1], 1 << 20),
        Some('g' | 'G') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("size {text:?}: expected bytes or a number with k, M or G"))
}

/// The xattr text of a setstripe request (0 and -1 stand for "default").
pub fn spec_text(s: &SetStripe) -> String {
    format!(
        "stripe_count={} stripe_size={} stripe_offset={}",
        s.stripe_count.unwrap_or(0),
        s.stripe_size_bytes.unwrap_or(0),
        s.stripe_index.unwrap_or(-1)
    )
}

/// `lfs getstripe` output for a file (`user.pfsqos.layout` of a file: spec line, then
/// `OST OBJECT` lines) or a directory (spec line only).
pub fn getstripe_text(path: &Path, value: &str, is_dir: bool) -> Result<String, String> {
    let (spec, _) = parse_spec(value)?;
    let mut out = format!("{}\n", path.display());
    if is_dir {
        out.push_str(&format!(
            "stripe_count:  {} stripe_size:   {} pattern:       raid0 stripe_offset: {}\n",
            spec.stripe_count,
            spec.stripe_size_bytes,
            spec.start_ost.map_or(-1, |o| o as i64)
        ));
        return Ok(out);
    }
    out.push_str(&format!(
        "lmm_stripe_count:  {}\nlmm_stripe_size:   {}\nlmm_pattern:       raid0\nlmm_layout_gen:    0\nlmm_stripe_offset: {}\n\tobdidx\t\t objid\t\t objid\t\t group\n",
        spec.stripe_count,
        spec.stripe_size_bytes,
        spec.start_ost.map_or(-1, |o| o as i64)
    ));
    for line in value.lines().skip(1) {
        let mut it = line.split_whitespace();
        let (Some(ost), Some(obj), None) = (it.next(), it.next(), it.next()) else {
            return Err(format!("layout line {line:?}: expected OST OBJECT"));
        };
        let ost: u32 = ost.parse().map_err(|_| format!("OST {ost:?}"))?;
        let obj: u64 = obj.parse().map_err(|_| format!("object {obj:?}"))?;
        out.push_str(&format!(
            "\t{ost:>6}\t{obj:>14}\t{:>#14x}\t{:>14}\n",
            obj, 0
        ));
    }
    Ok(out)
}

fn cpath(p: &Path) -> Result<CString, String> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| format!("{}: NUL in path", p.display()))
}

fn set_xattr(p: &Path, name: &str, value: &[u8]) -> std::io::Result<()> {
    let path = cpath(p).map_err(std::io::Error::other)?;
    let name = CString::new(name).expect("xattr names have no NUL");
    // SAFETY: valid NUL-terminated strings and a buffer of the given length.
    let r = unsafe {
        libc::setxattr(
            path.as_ptr(),
            name.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Reads an xattr (bounded).
pub fn get_xattr(p: &Path, name: &str) -> std::io::Result<Vec<u8>> {
    let path = cpath(p).map_err(std::io::Error::other)?;
    let name = CString::new(name).expect("xattr names have no NUL");
    let mut buf = vec![0u8; XATTR_VALUE_BYTES_MAX];
    // SAFETY: valid NUL-terminated strings and a buffer of the given length.
    let r = unsafe {
        libc::getxattr(
            path.as_ptr(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    buf.truncate(r as usize);
    Ok(buf)
}

/// Runs `setstripe`; errors name the path.
pub fn setstripe(s: &SetStripe) -> Result<(), String> {
    let spec = spec_text(s);
    let fail = |what: &str, e: std::io::Error| format!("{what} '{}': {e}", s.path.display());
    match std::fs::metadata(&s.path) {
        Ok(m) if m.is_dir() => {
            set_xattr(&s.path, XATTR_LAYOUT, spec.as_bytes()).map_err(|e| fail("setstripe", e))
        }
        Ok(_) => Err(fail(
            "setstripe: stripe already set on",
            std::io::Error::from_raw_os_error(libc::EEXIST),
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let name = s
                .path
                .file_name()
                .ok_or_else(|| format!("setstripe '{}': no file name", s.path.display()))?;
            let parent = match s.path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                _ => PathBuf::from("."),
            };
            let mut value = format!("{spec} name=").into_bytes();
            value.extend_from_slice(name.as_bytes());
            set_xattr(&parent, XATTR_CREATE, &value)
                .map_err(|e| fail("setstripe: create stripe file", e))
        }
        Err(e) => Err(fail("setstripe", e)),
    }
}

/// Runs `getstripe`, printing to `out`.
pub fn getstripe(path: &Path, out: &mut impl Write) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("getstripe '{}': {e}", path.display());
    let is_dir = std::fs::metadata(path).map_err(fail)?.is_dir();
    let value = get_xattr(path, XATTR_LAYOUT).map_err(|e| {
        if e.raw_os_error() == Some(libc::ENODATA) || e.raw_os_error() == Some(libc::ENOTSUP) {
            format!("getstripe '{}': not on a pfsqos mount", path.display())
        } else {
            fail(e)
        }
    })?;
    let value =
        String::from_utf8(value).map_err(|_| fail(std::io::Error::other("layout is not text")))?;
    let text = getstripe_text(path, &value, is_dir)?;
    out.write_all(text.as_bytes()).map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_lfs_suffixes() {
        assert_eq!(parse_size("1M").unwrap(), 1 << 20);
        assert_eq!(parse_size("64k").unwrap(), 64 << 10);
        assert_eq!(parse_size("2G").unwrap(), 2 << 30);
        assert_eq!(parse_size("65536").unwrap(), 65536);
        assert!(parse_size("1T").is_err());
        assert!(parse_size("x").is_err());
        assert!(parse_size("99999999999999999999G").is_err());
    }

    #[test]
    fn getstripe_prints_like_lfs() {
        let v = "stripe_count=2 stripe_size=1048576 stripe_offset=1\n1 7\n0 8\n";
        let t = getstripe_text(Path::new("/m/f"), v, false).unwrap();
        assert!(
            t.starts_with("/m/f\nlmm_stripe_count:  2\nlmm_stripe_size:   1048576\n"),
            "{t}"
        );
        assert!(t.contains("lmm_stripe_offset: 1\n"), "{t}");
        assert!(
            t.contains("\t     1\t             7\t           0x7\t             0\n"),
            "{t}"
        );
        let d = getstripe_text(
            Path::new("/m"),
            "stripe_count=1 stripe_size=65536 stripe_offset=-1",
            true,
        )
        .unwrap();
        assert_eq!(
            d,
            "/m\nstripe_count:  1 stripe_size:   65536 pattern:       raid0 stripe_offset: -1\n"
        );
        assert!(getstripe_text(Path::new("/m/f"), "stripe_count=1\n1\n", false).is_err());
    }

    #[test]
    fn spec_text_marks_defaults() {
        let s = SetStripe {
            stripe_count: Some(2),
            ..Default::default()
        };
        assert_eq!(
            spec_text(&s),
            "stripe_count=2 stripe_size=0 stripe_offset=-1"
        );
    }
}
