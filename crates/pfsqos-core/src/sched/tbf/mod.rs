//! Lustre's NRS Token Bucket Filter, with the exact semantics of `nrs_tbf.c` (see
//! `../shared/docs/lustre-tbf.md` §1-§2).
