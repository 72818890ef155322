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

use super::ops::{parse_spec, XATTR_CREATE, XATTR_LAYOUT, XATTR_OST_COUNT, XATTR_PLACEMENT};

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

/// What `getstripe` prints (lfs getstripe's `-c -S -i -y -d -r`). With none of `-c -S -i`
/// every field and a file's objects are printed; with some, only those (labelled only when
/// there are several), and, as in lfs, no path line and no descent into a directory unless
/// `-r` (lfs sets its depth to 0 for each of these flags).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GetStripe {
    /// `-c`
    pub count: bool,
    /// `-S`
    pub size: bool,
    /// `-i`
    pub index: bool,
    /// `-y`: YAML, as `lfs getstripe -y` (no path lines).
    pub yaml: bool,
    /// `-d`: a directory's own default only, not its contents.
    pub directory_only: bool,
    /// `-r`: into subdirectories, to any depth.
    pub recursive: bool,
}

impl GetStripe {
    fn some_fields(&self) -> bool {
        self.count || self.size || self.index
    }

    /// lfs's `fp_max_depth`: 0 (the path itself), 1 (a directory's entries) or unbounded.
    fn max_depth(&self) -> Option<usize> {
        if self.recursive {
            None
        } else if self.directory_only || self.some_fields() {
            Some(0)
        } else {
            Some(1)
        }
    }
}

/// The `fid` lfs prints for an object: Lustre's IDIF FID of object `id` on OST `ost` in
/// sequence 0 (`ostid_to_fid`: sequence `0x100000000 | ost << 16 | id >> 32 & 0xffff`, object id
/// the low 32 bits, version 0), without braces as `-y` prints it.
pub fn idif_fid(ost: u32, id: u64) -> String {
    let seq = 0x1_0000_0000u64 | (u64::from(ost & 0xffff) << 16) | ((id >> 32) & 0xffff);
    format!("{seq:#x}:{:#x}:0x0", id & 0xffff_ffff)
}

/// `lfs getstripe` output for one path: a file's `user.pfsqos.layout` (spec line, then `OST
/// OBJECT` lines) or a directory's default (spec line only). The formats are liblustreapi's
/// (`lov_dump_user_lmm_header` and `lov_dump_user_lmm_v1v3`, lustre/utils/liblustreapi.c):
/// labels `lmm_stripe_count:  ` etc. for files, `stripe_count:  ` etc. on one line for
/// directories, the object table `\tobdidx\t\t objid\t\t objid\t\t group` with rows
/// `\t%6u\t%14llu\t%#13llx\t%14llu` and a blank line after it; `print_path` is lfs's depth
/// test (no path line at depth 0 or with -y).
pub fn getstripe_text(
    path: &Path,
    value: &str,
    is_dir: bool,
    opts: &GetStripe,
    print_path: bool,
) -> Result<String, String> {
    let (spec, _) = parse_spec(value)?;
    let mut objects = Vec::new();
    if !is_dir {
        for line in value.lines().skip(1) {
            let mut it = line.split_whitespace();
            let (Some(ost), Some(obj), None) = (it.next(), it.next(), it.next()) else {
                return Err(format!("layout line {line:?}: expected OST OBJECT"));
            };
            let ost: u32 = ost.parse().map_err(|_| format!("OST {ost:?}"))?;
            let obj: u64 = obj.parse().map_err(|_| format!("object {obj:?}"))?;
            objects.push((ost, obj));
        }
    }
    let all = !opts.some_fields();
    let offset = spec.start_ost.map_or(-1, |o| o as i64);
    // (field selected, file label, directory label, value)
    let fields: Vec<(bool, &str, &str, String)> = vec![
        (
            all || opts.count,
            "lmm_stripe_count:  ",
            "stripe_count:  ",
            spec.stripe_count.to_string(),
        ),
        (
            all || opts.size,
            "lmm_stripe_size:   ",
            "stripe_size:   ",
            spec.stripe_size_bytes.to_string(),
        ),
        (
            all,
            "lmm_pattern:       ",
            "pattern:       ",
            "raid0".to_string(),
        ),
        (all && !is_dir, "lmm_layout_gen:    ", "", "0".to_string()),
        (
            all || opts.index,
            "lmm_stripe_offset: ",
            "stripe_offset: ",
            offset.to_string(),
        ),
    ];
    let chosen: Vec<&(bool, &str, &str, String)> = fields.iter().filter(|f| f.0).collect();
    let labelled = chosen.len() > 1;
    let mut out = String::new();
    if print_path && !opts.yaml {
        out.push_str(&format!("{}\n", path.display()));
    }
    let sep = if is_dir && !opts.yaml { " " } else { "\n" };
    let parts: Vec<String> = chosen
        .iter()
        .map(|(_, file_label, dir_label, v)| {
            let label = if !labelled {
                ""
            } else if is_dir {
                dir_label
            } else {
                file_label
            };
            format!("{label}{v}")
        })
        .collect();
    out.push_str(&parts.join(sep));
    out.push('\n');
    if all && !is_dir {
        if opts.yaml {
            out.push_str("lmm_objects:\n");
            for (ost, obj) in &objects {
                out.push_str(&format!(
                    "      - l_ost_idx: {ost}\n        l_fid:     {}\n",
                    idif_fid(*ost, *obj)
                ));
            }
        } else {
            out.push_str("\tobdidx\t\t objid\t\t objid\t\t group\n");
            for (ost, obj) in &objects {
                out.push_str(&format!("\t{ost:>6}\t{obj:>14}\t{obj:>#13x}\t{:>14}\n", 0));
            }
            out.push('\n');
        }
    }
    Ok(out)
}

/// The line `getstripe` prints for a file's `user.pfsqos.placement`: `placed_by: iez`, or
/// `placed_by: ALLOCATOR (iez fell back: REASON)` (the MDS's allocator: `lustre` under the
/// `iez` placer); nothing for a file its placer placed without a plan or a value that is not
/// short printable text (it comes from the server).
pub fn placement_line(value: &[u8]) -> Option<String> {
    let v = std::str::from_utf8(value).ok()?;
    if v.len() > 2048 || v.chars().any(char::is_control) {
        return None;
    }
    match v.split_once(": ") {
        _ if v == "iez" => Some("placed_by: iez".into()),
        Some((allocator, why))
            if !allocator.is_empty()
                && allocator.len() <= 32
                && allocator.bytes().all(|b| b.is_ascii_alphanumeric()) =>
        {
            Some(format!("placed_by: {allocator} (iez fell back: {why})"))
        }
        _ => None,
    }
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

/// The file system's OST count, read from any path of a mount (`None`: not a pfsqos mount).
fn ost_count(p: &Path) -> Result<Option<u32>, std::io::Error> {
    match get_xattr(p, XATTR_OST_COUNT) {
        Ok(v) => Ok(std::str::from_utf8(&v)
            .ok()
            .and_then(|t| t.trim().parse().ok())),
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENODATA | libc::ENOTSUP)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Checks a setstripe request against Lustre's limits and this file system's OST count;
/// the error names the value, the limit and what is allowed.
pub fn check_setstripe(s: &SetStripe, ost_count: u32) -> Result<(), String> {
    use pfsqos_core::lustre::{STRIPE_SIZE_BYTES_MAX, STRIPE_SIZE_UNIT_BYTES};
    if let Some(c) = s.stripe_count {
        if c < -1 || c > ost_count as i32 {
            return Err(format!(
                "stripe count {c}: this file system has {ost_count} OST(s); allowed -1 (every \
                 OST), 0 (the directory's or file system's default) or 1..={ost_count}"
            ));
        }
    }
    if let Some(b) = s.stripe_size_bytes {
        if b != 0 && (!b.is_multiple_of(STRIPE_SIZE_UNIT_BYTES) || b > STRIPE_SIZE_BYTES_MAX) {
            return Err(format!(
                "stripe size {b} bytes: must be a multiple of 64 KiB ({STRIPE_SIZE_UNIT_BYTES} \
                 bytes) up to {STRIPE_SIZE_BYTES_MAX} bytes (4 GiB - 64 KiB), e.g. 64k, 1M, \
                 4M; 0 means the default"
            ));
        }
    }
    if let Some(i) = s.stripe_index {
        if i < -1 || i >= ost_count as i32 {
            return Err(format!(
                "stripe index {i}: this file system has {ost_count} OST(s); allowed -1 (the MDS \
                 chooses) or 0..={}",
                ost_count.saturating_sub(1)
            ));
        }
    }
    Ok(())
}

/// Runs `setstripe`; errors name the path, and a refused value its limit.
pub fn setstripe(s: &SetStripe) -> Result<(), String> {
    let spec = spec_text(s);
    let fail = |what: &str, e: std::io::Error| format!("{what} '{}': {e}", s.path.display());
    let meta = std::fs::metadata(&s.path);
    let parent = match s.path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let probe = match &meta {
        Ok(m) if m.is_dir() => s.path.clone(),
        _ => parent.clone(),
    };
    match ost_count(&probe).map_err(|e| fail("setstripe", e))? {
        Some(n) => {
            check_setstripe(s, n).map_err(|e| format!("setstripe '{}': {e}", s.path.display()))?
        }
        None => {
            return Err(format!(
                "setstripe '{}': not on a pfsqos mount ({} has no {XATTR_OST_COUNT})",
                s.path.display(),
                probe.display()
            ))
        }
    }
    match meta {
        Ok(m) if m.is_dir() => {
            set_xattr(&s.path, XATTR_LAYOUT, spec.as_bytes()).map_err(|e| fail("setstripe", e))
        }
        Ok(_) => Err(format!(
            "setstripe '{}': the file exists, and a layout is fixed when a file is created (as \
             in Lustre): set it on a new file name, or on the directory for files created \
             later",
            s.path.display()
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let name = s
                .path
                .file_name()
                .ok_or_else(|| format!("setstripe '{}': no file name", s.path.display()))?;
            let mut value = format!("{spec} name=").into_bytes();
            value.extend_from_slice(name.as_bytes());
            set_xattr(&parent, XATTR_CREATE, &value)
                .map_err(|e| fail("setstripe: create stripe file", e))
        }
        Err(e) => Err(fail("setstripe", e)),
    }
}

/// Runs `getstripe` on each path (directories as lfs walks them: their entries at depth 1,
/// every level with `-r`, only themselves with `-d` or a field flag); layouts to `out`, one
/// error line per path that fails to `err`. Returns whether every path succeeded.
pub fn getstripe(
    paths: &[PathBuf],
    opts: &GetStripe,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> bool {
    let mut ok = true;
    for p in paths {
        ok &= walk(p, 0, opts, out, err);
    }
    ok
}

/// Most directory entries `getstripe` lists per directory (a bound on one command's output).
pub const DIR_ENTRIES_MAX: usize = 1 << 20;

fn walk(
    path: &Path,
    depth: usize,
    opts: &GetStripe,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> bool {
    let fail = |err: &mut dyn Write, e: String| {
        let _ = writeln!(err, "error: getstripe '{}': {e}", path.display());
        false
    };
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) => return fail(err, e.to_string()),
    };
    if meta.file_type().is_symlink() && depth > 0 {
        return true; // lfs does not follow links found while walking
    }
    let is_dir = std::fs::metadata(path).is_ok_and(|m| m.is_dir());
    let value = match get_xattr(path, XATTR_LAYOUT) {
        Ok(v) => v,
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENODATA | libc::ENOTSUP)) => {
            return fail(err, "not on a pfsqos mount".to_string())
        }
        Err(e) => return fail(err, e.to_string()),
    };
    let Ok(value) = String::from_utf8(value) else {
        return fail(err, "layout is not text".to_string());
    };
    let max = opts.max_depth();
    let print_path = max != Some(0);
    match getstripe_text(path, &value, is_dir, opts, print_path) {
        Ok(t) => {
            let _ = out.write_all(t.as_bytes());
        }
        Err(e) => return fail(err, e),
    }
    if !is_dir && !opts.yaml && !opts.some_fields() {
        // Who chose the layout, after lfs's own output, only when iez was involved: files
        // round robin placed with nothing predicted print exactly as lfs does.
        if let Some(line) = get_xattr(path, XATTR_PLACEMENT)
            .ok()
            .and_then(|v| placement_line(&v))
        {
            let _ = writeln!(out, "{line}");
        }
    }
    if !is_dir || max.is_some_and(|m| depth >= m) {
        return true;
    }
    let entries = match std::fs::read_dir(path) {
        Ok(r) => r,
        Err(e) => return fail(err, e.to_string()),
    };
    let mut names: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .take(DIR_ENTRIES_MAX)
        .collect();
    names.sort();
    // A blank line after a directory's default before its entries, as a file's object
    // table ends with one.
    if !opts.yaml && !opts.some_fields() {
        let _ = writeln!(out);
    }
    let mut ok = true;
    for n in names {
        ok &= walk(&n, depth + 1, opts, out, err);
    }
    ok
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

    /// The formats of liblustreapi's `lov_dump_user_lmm_header` / `lov_dump_user_lmm_v1v3`.
    #[test]
    fn getstripe_prints_like_lfs() {
        let v = "stripe_count=2 stripe_size=1048576 stripe_offset=1\n1 7\n0 8\n";
        let all = GetStripe::default();
        let t = getstripe_text(Path::new("/m/f"), v, false, &all, true).unwrap();
        assert_eq!(
            t,
            "/m/f\nlmm_stripe_count:  2\nlmm_stripe_size:   1048576\nlmm_pattern:       raid0\n\
             lmm_layout_gen:    0\nlmm_stripe_offset: 1\n\
             \tobdidx\t\t objid\t\t objid\t\t group\n\
             \t     1\t             7\t          0x7\t             0\n\
             \t     0\t             8\t          0x8\t             0\n\n"
        );
        let d = getstripe_text(
            Path::new("/m"),
            "stripe_count=1 stripe_size=65536 stripe_offset=-1",
            true,
            &all,
            true,
        )
        .unwrap();
        assert_eq!(
            d,
            "/m\nstripe_count:  1 stripe_size:   65536 pattern:       raid0 stripe_offset: -1\n"
        );
        assert!(
            getstripe_text(Path::new("/m/f"), "stripe_count=1\n1\n", false, &all, true).is_err()
        );
    }

    /// `lfs getstripe -c FILE` prints the bare value (one field: no label; depth 0: no path);
    /// two fields are labelled; a directory's fields share a line.
    #[test]
    fn field_flags_print_bare_or_labelled_values() {
        let v = "stripe_count=2 stripe_size=1048576 stripe_offset=1\n1 7\n0 8\n";
        let f = |o: GetStripe| getstripe_text(Path::new("/m/f"), v, false, &o, false).unwrap();
        let c = GetStripe {
            count: true,
            ..Default::default()
        };
        assert_eq!(f(c.clone()), "2\n");
        assert_eq!(
            f(GetStripe {
                size: true,
                ..Default::default()
            }),
            "1048576\n"
        );
        assert_eq!(
            f(GetStripe {
                index: true,
                ..Default::default()
            }),
            "1\n"
        );
        assert_eq!(
            f(GetStripe {
                count: true,
                size: true,
                ..Default::default()
            }),
            "lmm_stripe_count:  2\nlmm_stripe_size:   1048576\n"
        );
        let d = getstripe_text(
            Path::new("/m"),
            "stripe_count=-1 stripe_size=65536 stripe_offset=-1",
            true,
            &GetStripe {
                count: true,
                index: true,
                ..Default::default()
            },
            false,
        )
        .unwrap();
        assert_eq!(d, "stripe_count:  -1 stripe_offset: -1\n");
        assert_eq!(c.max_depth(), Some(0));
        assert_eq!(GetStripe::default().max_depth(), Some(1));
        assert_eq!(
            GetStripe {
                directory_only: true,
                ..Default::default()
            }
            .max_depth(),
            Some(0)
        );
        assert_eq!(
            GetStripe {
                recursive: true,
                count: true,
                ..Default::default()
            }
            .max_depth(),
            None
        );
    }

    /// `-y`: lfs's YAML, objects as IDIF FIDs, no path line.
    #[test]
    fn yaml_prints_objects_as_fids() {
        let v = "stripe_count=1 stripe_size=1048576 stripe_offset=1\n1 7\n";
        let y = GetStripe {
            yaml: true,
            ..Default::default()
        };
        let t = getstripe_text(Path::new("/m/f"), v, false, &y, true).unwrap();
        assert_eq!(
            t,
            "lmm_stripe_count:  1\nlmm_stripe_size:   1048576\nlmm_pattern:       raid0\n\
             lmm_layout_gen:    0\nlmm_stripe_offset: 1\nlmm_objects:\n\
             \x20     - l_ost_idx: 1\n        l_fid:     0x100010000:0x7:0x0\n"
        );
        assert_eq!(idif_fid(2, (5 << 32) | 9), "0x100020005:0x9:0x0");
    }

    /// The limits a refused setstripe names.
    #[test]
    fn setstripe_limits_are_named() {
        let s = |c: Option<i32>, b: Option<u64>, i: Option<i32>| SetStripe {
            stripe_count: c,
            stripe_size_bytes: b,
            stripe_index: i,
            path: "/m/f".into(),
        };
        assert!(check_setstripe(&s(Some(2), Some(1 << 20), Some(1)), 2).is_ok());
        assert!(check_setstripe(&s(Some(-1), None, Some(-1)), 2).is_ok());
        assert_eq!(
            check_setstripe(&s(Some(5), None, None), 2).unwrap_err(),
            "stripe count 5: this file system has 2 OST(s); allowed -1 (every OST), 0 (the \
             directory's or file system's default) or 1..=2"
        );
        let e = check_setstripe(&s(None, Some(100 << 10), None), 2).unwrap_err();
        assert!(
            e.starts_with("stripe size 102400 bytes: must be a multiple of 64 KiB (65536 bytes)"),
            "{e}"
        );
        let e = check_setstripe(&s(None, None, Some(2)), 2).unwrap_err();
        assert!(e.ends_with("allowed -1 (the MDS chooses) or 0..=1"), "{e}");
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
