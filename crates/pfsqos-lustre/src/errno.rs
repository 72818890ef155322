//! Lustre errnos as a type (`EINVAL`, `ENOENT`, ...): what a control write, a placement or a
//! namespace operation answers, from the pure core through the wire to `lctl`'s output.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A Lustre errno, as a type: every error in pfsqos that Lustre would answer with an errno carries
/// one of these, so a misspelt name is a compile error rather than a silent `EIO` at the boundary.
/// The variant order is the wire encoding (postcard's variant index): append, never reorder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Errno {
    EPERM,
    ENOENT,
    EIO,
    EAGAIN,
    EBUSY,
    EEXIST,
    ENODEV,
    EINVAL,
    EFBIG,
    ENOSPC,
    ERANGE,
    ENAMETOOLONG,
    ENOSYS,
    EPROTO,
    ENOTDIR,
    EISDIR,
    ENOTEMPTY,
    EOVERFLOW,
    /// Kernel-internal 524, which Lustre's TBF returns for an unknown policy type up to
    /// 2.16.57 (`nrs_tbf_start`); userspace has no name for it (`Unknown error 524`).
    ENOTSUPP,
    ENOMEM,
}

impl Errno {
    pub const ALL: [Errno; 20] = [
        Errno::EPERM,
        Errno::ENOENT,
        Errno::EIO,
        Errno::EAGAIN,
        Errno::EBUSY,
        Errno::EEXIST,
        Errno::ENODEV,
        Errno::EINVAL,
        Errno::EFBIG,
        Errno::ENOSPC,
        Errno::ERANGE,
        Errno::ENAMETOOLONG,
        Errno::ENOSYS,
        Errno::EPROTO,
        Errno::ENOTDIR,
        Errno::EISDIR,
        Errno::ENOTEMPTY,
        Errno::EOVERFLOW,
        Errno::ENOTSUPP,
        Errno::ENOMEM,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Errno::EPERM => "EPERM",
            Errno::ENOENT => "ENOENT",
            Errno::EIO => "EIO",
            Errno::EAGAIN => "EAGAIN",
            Errno::EBUSY => "EBUSY",
            Errno::EEXIST => "EEXIST",
            Errno::ENODEV => "ENODEV",
            Errno::EINVAL => "EINVAL",
            Errno::EFBIG => "EFBIG",
            Errno::ENOSPC => "ENOSPC",
            Errno::ERANGE => "ERANGE",
            Errno::ENAMETOOLONG => "ENAMETOOLONG",
            Errno::ENOSYS => "ENOSYS",
            Errno::EPROTO => "EPROTO",
            Errno::ENOTDIR => "ENOTDIR",
            Errno::EISDIR => "EISDIR",
            Errno::ENOTEMPTY => "ENOTEMPTY",
            Errno::EOVERFLOW => "EOVERFLOW",
            Errno::ENOTSUPP => "ENOTSUPP",
            Errno::ENOMEM => "ENOMEM",
        }
    }

    /// `strerror` text, as `lctl` prints it.
    /// The errno's number on Linux, what a process's exit status or a FUSE reply carries
    /// (`ENOTSUPP` is the kernel-internal 524, as Lustre's tools report it).
    pub fn linux_number(self) -> i32 {
        match self {
            Errno::EPERM => 1,
            Errno::ENOENT => 2,
            Errno::EIO => 5,
            Errno::EAGAIN => 11,
            Errno::ENOMEM => 12,
            Errno::EBUSY => 16,
            Errno::EEXIST => 17,
            Errno::ENODEV => 19,
            Errno::ENOTDIR => 20,
            Errno::EISDIR => 21,
            Errno::EINVAL => 22,
            Errno::EFBIG => 27,
            Errno::ENOSPC => 28,
            Errno::ERANGE => 34,
            Errno::ENAMETOOLONG => 36,
            Errno::ENOSYS => 38,
            Errno::ENOTEMPTY => 39,
            Errno::EPROTO => 71,
            Errno::EOVERFLOW => 75,
            Errno::ENOTSUPP => 524,
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            Errno::EPERM => "Operation not permitted",
            Errno::ENOENT => "No such file or directory",
            Errno::EIO => "Input/output error",
            Errno::EAGAIN => "Resource temporarily unavailable",
            Errno::EBUSY => "Device or resource busy",
            Errno::EEXIST => "File exists",
            Errno::ENODEV => "No such device",
            Errno::EINVAL => "Invalid argument",
            Errno::EFBIG => "File too large",
            Errno::ENOSPC => "No space left on device",
            Errno::ERANGE => "Numerical result out of range",
            Errno::ENAMETOOLONG => "File name too long",
            Errno::ENOSYS => "Function not implemented",
            Errno::EPROTO => "Protocol error",
            Errno::ENOTDIR => "Not a directory",
            Errno::EISDIR => "Is a directory",
            Errno::ENOTEMPTY => "Directory not empty",
            Errno::EOVERFLOW => "Value too large for defined data type",
            Errno::ENOTSUPP => "Unknown error 524",
            Errno::ENOMEM => "Cannot allocate memory",
        }
    }

    /// The errno named `name` (`"EINVAL"`), if it is one of these.
    pub fn from_name(name: &str) -> Option<Errno> {
        Errno::ALL.into_iter().find(|e| e.name() == name)
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_none() {
        for e in Errno::ALL {
            assert_eq!(Errno::from_name(e.name()), Some(e));
            assert_eq!(e.to_string(), e.name());
            assert!(!e.description().is_empty());
        }
        assert_eq!(Errno::from_name("EWHATEVER"), None);
        assert_eq!(Errno::from_name("einval"), None);
    }
}
