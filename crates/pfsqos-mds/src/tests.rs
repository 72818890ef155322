use super::*;

fn config(ost_count: u32) -> NamespaceConfig {
    NamespaceConfig {
        fsname: "testfs".into(),
        osses: vec![OssSpec {
            addr: "127.0.0.1:9000".into(),
            ost_count,
        }],
        default_stripe: StripeSpec {
            stripe_count: 1,
            stripe_size_bytes: 1 << 20,
            start_ost: None,
        },
        inodes_max: 1000,
        placer: PLACER_DEFAULT.into(),
    }
}

fn open(dir: &tempfile::TempDir, ost_count: u32) -> Namespace {
    Namespace::open(&dir.path().join("mds.db"), config(ost_count)).unwrap()
}

const O: Owner = Owner {
    mode: 0o644,
    uid: 10,
    gid: 20,
};

fn errno<T: std::fmt::Debug>(r: Result<T, RemoteError>) -> Errno {
    r.unwrap_err().errno
}

fn osts(l: &FileLayout) -> Vec<u32> {
    l.stripes.iter().map(|s| s.ost).collect()
}

#[test]
fn create_lookup_getattr() {
    let d = tempfile::tempdir().unwrap();
    let mut ns = open(&d, 4);
    let (a, l) = ns.create(ROOT_INO, b"f", O, None, 5).unwrap();
    assert_eq!(a.kind, Kind::File);
    assert_eq!((a.mode, a.uid, a.gid, a.nlink), (0o644, 10, 20, 1));
    assert_eq!((a.mtime_ns, a.ctime_ns, a.size_bytes), (5, 5, 0));
    assert_eq!(l.stripes, [Stripe { ost: 0, object: 1 }]);
    assert_eq!(ns.lookup(ROOT_INO, b"f").unwrap(), a);
    assert_eq!(ns.getattr(a.ino).unwrap(), a);
    assert_eq!(ns.layout(a.ino).unwrap(), l);
    assert_eq!(errno(ns.create(ROOT_INO, b"f", O, None, 6)), Errno::EEXIST);
    assert_eq!(errno(ns.lookup(ROOT_INO, b"g")), Errno::ENOENT);
    assert_eq!(errno(ns.create(a.ino, b"x", O, None, 6)), Errno::ENOTDIR);
    assert_eq!(errno(ns.create(999, b"x", O, None, 6)), Errno::ENOENT);
    assert_eq!(errno(ns.lookup(a.ino, b"x")), Errno::ENOTDIR);
    let root = ns.getattr(ROOT_INO).unwrap();
    assert_eq!((root.kind, root.mtime_ns, root.nlink), (Kind::Dir, 5, 2));
    assert_eq!(errno(ns.layout(ROOT_INO)), Errno::EISDIR);
}

#[test]
fn names_are_validated() {
    let d = tempfile::tempdir().unwrap();
    let mut ns = open(&d, 1);
    let long = vec![b'a'; 256];
    assert_eq!(
        errno(ns.create(ROOT_INO, &long, O, None, 0)),
        Errno::ENAMETOOLONG
    );
    assert!(ns.create(ROOT_INO, &long[..255], O, None, 0).is_ok());
    for bad in [&b""[..], b".", b"..", b"a/b", b"a\0b"] {
        assert_eq!(errno(ns.create(ROOT_INO, bad, O, None, 0)), Errno::EINVAL);
        assert_eq!(errno(ns.mkdir(ROOT_INO, bad, O, 0)), Errno::EINVAL);
        assert_eq!(errno(ns.lookup(ROOT_INO, bad)), Errno::EINVAL);
    }
    // Non-UTF-8 bytes are legal in names.
    assert!(ns.create(ROOT_INO, &[0xff, 0xfe], O, None, 0).is_ok());
    assert_eq!(
        errno(ns.create(ROOT_INO, b"m", Owner { mode: 0o10000, ..O }, None, 0)),
        Errno::EINVAL
    );
}

#[test]
fn bogus_inodes_are_enoent() {
    let d = tempfile::tempdir().unwrap();
    let mut ns = open(&d, 1);
    for ino in [0, 2, 12345, u64::MAX, i64::MAX as u64 + 1] {
        assert_eq!(errno(ns.getattr(ino)), Errno::ENOENT);
        assert_eq!(errno(ns.readdir(ino, 0, 10)), Errno::ENOENT);
        assert_eq!(errno(ns.setattr(ino, SetAttr::default(), 0)), Errno::ENOENT);
        assert_eq!(errno(ns.layout(ino)), Errno::ENOENT);
    }
}

#[test]
fn round_robin_across_creates_and_inherited_layouts() {
    let d = tempfile::tempdir().unwrap();
    let mut ns = open(&d, 4);
    let got: Vec<Vec<u32>> = (0..5)
        .map(|i| {
            osts(
                &ns.create(ROOT_INO, format!("f{i}").as_bytes(), O, None, 0)
                    .unwrap()
                    .1,
            )
        })
        .collect();
    assert_eq!(got, [[0], [1], [2], [3], [0]]);
    let dir = ns.mkdir(ROOT_INO, b"wide", O, 0).unwrap();
    let spec = StripeSpec {
        stripe_count: 2,
        stripe_size_bytes: 4 << 20,
        start_ost: None,
    };
    ns.set_dir_stripe(dir.ino, Some(spec)).unwrap();
    assert_eq!(ns.dir_stripe(dir.ino).unwrap(), Some(spec));
    let (_, l) = ns.create(dir.ino, b"a", O, None, 0).unwrap();
    assert_eq!((osts(&l), l.stripe_size_bytes), (vec![1, 2], 4 << 20));
    // Objects are unique across the file system.
    assert_eq!(
        l.stripes.iter().map(|s| s.object).collect::<Vec<_>>(),
        [6, 7]
    );
    // Subdirectories inherit the default.
    let sub = ns.mkdir(dir.ino, b"sub", O, 0).unwrap();
    assert_eq!(ns.dir_stripe(sub.ino).unwrap(), Some(spec));
    let (_, l) = ns.create(sub.ino, b"b", O, None, 0).unwrap();
    assert_eq!(osts(&l), [3, 0]);
    // Explicit layouts win; -1 is every OST.
    let all = StripeSpec {
        stripe_count: -1,
        ..spec
    };
    let (_, l) = ns.create(sub.ino, b"c", O, Some(all), 0).unwrap();
    assert_eq!(osts(&l), [1, 2, 3, 0]);
    let too_many = StripeSpec {
        stripe_count: 5,
        ..spec
    };
    assert_eq!(
        errno(ns.create(sub.ino, b"d", O, Some(too_many), 0)),
        Errno::EINVAL
    );
    assert_eq!(
        errno(ns.set_dir_stripe(sub.ino, Some(too_many))),
        Errno::EINVAL
    );
    assert_eq!(errno(ns.lookup(sub.ino, b"d")), Errno::ENOENT);
    // Removing the default falls back to the file system's.
    ns.set_dir_stripe(dir.ino, None).unwrap();
    let (_, l) = ns.create(dir.ino, b"e", O, None, 0).unwrap();
    assert_eq!(osts(&l), [1]);
    assert_eq!(
        errno(ns.set_dir_stripe(l.stripes[0].object, None)),
        Errno::ENOENT
    );
}

#[test]
fn setattr_and_truncate() {
    let d = tempfile::tempdir().unwrap();
    let mut ns = open(&d, 1);
    let (f, _) = ns.create(ROOT_INO, b"f", O, None, 1).unwrap();
    let a = ns
        .setattr(
            f.ino,
            SetAttr {
                mode: Some(0o600),
                uid: Some(7),
                size_bytes: Some(1 << 30),
                ..SetAttr::default()
            },
            9,
        )
        .unwrap();
    assert_eq!(
        (a.mode, a.uid, a.gid, a.size_bytes),
        (0o600, 7, 20, 1 << 30)
    );
    assert_eq!((a.mtime_ns, a.ctime_ns), (9, 9));
    let a = ns
        .setattr(
            f.ino,
            SetAttr {
                mtime_ns: Some(3),
                ..SetAttr::default()
            },
            10,
        )
        .unwrap();
    assert_eq!((a.mtime_ns, a.ctime_ns), (3, 10));
    assert_eq!(ns.getattr(f.ino).unwrap(), a);
    let big = SetAttr {
        size_bytes: Some(FILE_SIZE_BYTES_MAX + 1),
        ..SetAttr::default()
    };
    assert_eq!(errno(ns.setattr(f.ino, big, 0)), Errno::EFBIG);
    let trunc = SetAttr {
        size_bytes: Some(0),
        ..SetAttr::default()
    };
    assert_eq!(errno(ns.setattr(ROOT_INO, trunc, 0)), Errno::EISDIR);
    let mode = SetAttr {
        mode: Some(0o17777),
        ..SetAttr::default()
    };
    assert_eq!(errno(ns.setattr(f.ino, mode, 0)), Errno::EINVAL);
    assert_eq!(ns.getattr(f.ino).unwrap(), a);
}

#[test]
fn readdir_pages_with_a_cursor() {
    let d = tempfile::tempdir().unwrap();
    let mut ns = open(&d, 1);
    for i in 0..10 {
        ns.create(ROOT_INO, format!("f{i}").as_bytes(), O, None, 0)
            .unwrap();
    }
    ns.mkdir(ROOT_INO, b"d", O, 0).unwrap();
    let mut names = Vec::new();
    let mut after = 0;
    let mut pages = 0;
    loop {
        let p = ns.readdir(ROOT_INO, after, 4).unwrap();
        assert!(p.entries.len() <= 4);
        names.extend(
            p.entries
                .iter()
                .map(|e| String::from_utf8(e.name.clone()).unwrap()),
        );
        pages += 1;
        match p.next {
            Some(n) => after = n,
            None => break,
        }
    }
    assert_eq!(pages, 3);
    let mut want: Vec<String> = (0..10).map(|i| format!("f{i}")).collect();
    want.push("d".into());
    assert_eq!(names, want);
    let p = ns.readdir(ROOT_INO, 0, READDIR_ENTRIES_MAX).unwrap();
    assert_eq!(p.entries.last().unwrap().kind, Kind::Dir);
    assert_eq!(p.next, None);
    assert_eq!(errno(ns.readdir(ROOT_INO, 0, 0)), Errno::EINVAL);
    assert_eq!(
        errno(ns.readdir(ROOT_INO, 0, READDIR_ENTRIES_MAX + 1)),
        Errno::EINVAL
    );
    let f = ns.lookup(ROOT_INO, b"f0").unwrap();
    assert_eq!(errno(ns.readdir(f.ino, 0, 1)), Errno::ENOTDIR);
    assert!(ns
        .readdir(ROOT_INO, u64::MAX, 1)
        .unwrap()
        .entries
        .is_empty());
}

#[test]
fn unlink_and_rmdir() {
    let d = tempfile::tempdir().unwrap();
    let mut ns = open(&d, 2);
    let (f, l) = ns.create(ROOT_INO, b"f", O, None, 0).unwrap();
    let dir = ns.mkdir(ROOT_INO, b"d", O, 0).unwrap();
    assert_eq!(ns.getattr(ROOT_INO).unwrap().nlink, 3);
    ns.create(dir.ino, b"inner", O, None, 0).unwrap();
    assert_eq!(errno(ns.unlink(ROOT_INO, b"d", 1)), Errno::EISDIR);
    assert_eq!(errno(ns.rmdir(ROOT_INO, b"f", 1)), Errno::ENOTDIR);
    assert_eq!(errno(ns.rmdir(ROOT_INO, b"d", 1)), Errno::ENOTEMPTY);
    assert_eq!(ns.unlink(ROOT_INO, b"f", 1).unwrap(), l);
    assert_eq!(errno(ns.getattr(f.ino)), Errno::ENOENT);
    assert_eq!(errno(ns.unlink(ROOT_INO, b"f", 1)), Errno::ENOENT);
    ns.unlink(dir.ino, b"inner", 2).unwrap();
    ns.rmdir(ROOT_INO, b"d", 3).unwrap();
    let root = ns.getattr(ROOT_INO).unwrap();
    assert_eq!((root.nlink, root.mtime_ns), (2, 3));
    assert_eq!(ns.statfs().unwrap().inodes, 1);
    assert!(ns.readdir(ROOT_INO, 0, 10).unwrap().entries.is_empty());
}

#[test]
fn inode_numbers_are_never_reused() {
    let d = tempfile::tempdir().unwrap();
    let mut seen = std::collections::BTreeSet::new();
    {
        let mut ns = open(&d, 1);
        // Unlinking the newest inode is the case SQLite's rowid would hand out again.
        for t in 0..3 {
            let (f, _) = ns.create(ROOT_INO, b"f", O, None, t).unwrap();
            assert!(seen.insert(f.ino), "inode {} handed out twice", f.ino);
            ns.unlink(ROOT_INO, b"f", t).unwrap();
        }
        let dir = ns.mkdir(ROOT_INO, b"d", O, 5).unwrap();
        assert!(seen.insert(dir.ino));
        ns.rmdir(ROOT_INO, b"d", 6).unwrap();
    }
    // Across a restart too.
    let mut ns = open(&d, 1);
    let (f, _) = ns.create(ROOT_INO, b"f", O, None, 7).unwrap();
    assert!(seen.insert(f.ino), "inode {} reused after reopen", f.ino);
    assert!(f.ino > *seen.iter().rev().nth(1).unwrap());
}

#[test]
fn a_database_without_the_inode_counter_continues_past_its_largest_inode() {
    let d = tempfile::tempdir().unwrap();
    let last = {
        let mut ns = open(&d, 1);
        ns.create(ROOT_INO, b"a", O, None, 0).unwrap();
        let (b, _) = ns.create(ROOT_INO, b"b", O, None, 0).unwrap();
        // What a database written before the counter existed looks like.
        ns.db
            .execute("DELETE FROM meta WHERE key = 'next_ino'", [])
            .unwrap();
        b.ino
    };
    let mut ns = open(&d, 1);
    let (c, _) = ns.create(ROOT_INO, b"c", O, None, 0).unwrap();
    assert_eq!(c.ino, last + 1);
}

#[test]
fn rename_cases() {
    let d = tempfile::tempdir().unwrap();
    let mut ns = open(&d, 2);
    let (f, _) = ns.create(ROOT_INO, b"f", O, None, 0).unwrap();
    let (g, gl) = ns.create(ROOT_INO, b"g", O, None, 0).unwrap();
    let a = ns.mkdir(ROOT_INO, b"a", O, 0).unwrap();
    let b = ns.mkdir(a.ino, b"b", O, 0).unwrap();
    let e = ns.mkdir(ROOT_INO, b"empty", O, 0).unwrap();
    // A plain move keeps the inode.
    assert_eq!(ns.rename(ROOT_INO, b"f", a.ino, b"f2", 1).unwrap(), None);
    assert_eq!(ns.lookup(a.ino, b"f2").unwrap().ino, f.ino);
    assert_eq!(errno(ns.lookup(ROOT_INO, b"f")), Errno::ENOENT);
    // Replacing a file hands back the old file's layout.
    assert_eq!(
        ns.rename(a.ino, b"f2", ROOT_INO, b"g", 2).unwrap(),
        Some(gl)
    );
    assert_eq!(ns.lookup(ROOT_INO, b"g").unwrap().ino, f.ino);
    assert_eq!(errno(ns.getattr(g.ino)), Errno::ENOENT);
    // Kind mismatches.
    assert_eq!(
        errno(ns.rename(ROOT_INO, b"g", ROOT_INO, b"a", 3)),
        Errno::EISDIR
    );
    assert_eq!(
        errno(ns.rename(ROOT_INO, b"a", ROOT_INO, b"g", 3)),
        Errno::ENOTDIR
    );
    ns.create(b.ino, b"x", O, None, 0).unwrap();
    assert_eq!(
        errno(ns.rename(ROOT_INO, b"empty", a.ino, b"b", 3)),
        Errno::ENOTEMPTY
    );
    // Into its own subtree.
    assert_eq!(
        errno(ns.rename(ROOT_INO, b"a", b.ino, b"loop", 3)),
        Errno::EINVAL
    );
    assert_eq!(
        errno(ns.rename(ROOT_INO, b"a", a.ino, b"self", 3)),
        Errno::EINVAL
    );
    assert_eq!(
        errno(ns.rename(ROOT_INO, b"nope", ROOT_INO, b"x", 3)),
        Errno::ENOENT
    );
    assert_eq!(
        errno(ns.rename(ROOT_INO, b"g", f.ino, b"x", 3)),
        Errno::ENOTDIR
    );
    // Replacing an empty directory with a directory; link counts follow.
    ns.unlink(b.ino, b"x", 4).unwrap();
    let root_links = ns.getattr(ROOT_INO).unwrap().nlink;
    assert_eq!(ns.rename(ROOT_INO, b"empty", a.ino, b"b", 5).unwrap(), None);
    assert_eq!(ns.lookup(a.ino, b"b").unwrap().ino, e.ino);
    assert_eq!(errno(ns.getattr(b.ino)), Errno::ENOENT);
    assert_eq!(ns.getattr(ROOT_INO).unwrap().nlink, root_links - 1);
    assert_eq!(ns.getattr(a.ino).unwrap().nlink, 3);
    // Renaming onto itself is a no-op.
    assert_eq!(ns.rename(ROOT_INO, b"g", ROOT_INO, b"g", 6).unwrap(), None);
    assert_eq!(ns.lookup(ROOT_INO, b"g").unwrap().ino, f.ino);
}

#[test]
fn depth_and_inode_limits() {
    let d = tempfile::tempdir().unwrap();
    let mut ns = Namespace::open(
        &d.path().join("db"),
        NamespaceConfig {
            inodes_max: 3,
            placer: PLACER_DEFAULT.into(),
            ..config(1)
        },
    )
    .unwrap();
    ns.create(ROOT_INO, b"a", O, None, 0).unwrap();
    ns.create(ROOT_INO, b"b", O, None, 0).unwrap();
    assert_eq!(errno(ns.create(ROOT_INO, b"c", O, None, 0)), Errno::ENOSPC);
    ns.unlink(ROOT_INO, b"b", 0).unwrap();
    ns.mkdir(ROOT_INO, b"c", O, 0).unwrap();

    let d2 = tempfile::tempdir().unwrap();
    let mut ns = open(&d2, 1);
    let mut dir = ROOT_INO;
    for _ in 0..DEPTH_MAX {
        dir = ns.mkdir(dir, b"d", O, 0).unwrap().ino;
    }
    assert_eq!(errno(ns.mkdir(dir, b"d", O, 0)), Errno::ENAMETOOLONG);
    let top = ns.mkdir(ROOT_INO, b"top", O, 0).unwrap();
    assert_eq!(
        errno(ns.rename(ROOT_INO, b"top", dir, b"t", 0)),
        Errno::ENAMETOOLONG
    );
    assert!(ns.getattr(top.ino).is_ok());
}

#[test]
fn reopen_keeps_everything_and_the_rotation() {
    let d = tempfile::tempdir().unwrap();
    let (f, l) = {
        let mut ns = open(&d, 3);
        ns.mkdir(ROOT_INO, b"d", O, 0).unwrap();
        ns.create(ROOT_INO, b"x", O, None, 0).unwrap();
        ns.create(ROOT_INO, b"f", O, None, 0).unwrap()
    };
    let mut ns = open(&d, 3);
    assert_eq!(ns.lookup(ROOT_INO, b"f").unwrap(), f);
    assert_eq!(ns.layout(f.ino).unwrap(), l);
    let (_, next) = ns.create(ROOT_INO, b"g", O, None, 0).unwrap();
    assert_eq!(next.stripes, [Stripe { ost: 2, object: 3 }]);
    assert_eq!(ns.statfs().unwrap().inodes, 5);
}

/// Meta values are whole u64 words: above u32::MAX and above i64::MAX they come back as
/// stored (no placer of the registry produces such a state yet; round robin's is a u32).
#[test]
fn meta_values_keep_every_u64_across_a_reopen() {
    let d = tempfile::tempdir().unwrap();
    let words = [
        0,
        u64::from(u32::MAX) + 1,
        1 << 40,
        i64::MAX as u64 + 1,
        u64::MAX,
    ];
    {
        let ns = open(&d, 3);
        for (i, w) in words.iter().enumerate() {
            meta_set(&ns.db, &format!("w{i}"), *w).unwrap();
        }
        // A placer state beyond u32: stored without a panic, restored as the whole word.
        meta_set(&ns.db, META_PLACER_STATE, u64::from(u32::MAX) + 2).unwrap();
    }
    let mut ns = open(&d, 3);
    for (i, w) in words.iter().enumerate() {
        assert_eq!(meta_get(&ns.db, &format!("w{i}")).unwrap(), *w);
    }
    // Round robin keeps the low 32 bits of its state (its cursor is a u32): 2^32 + 1 is 1.
    let (_, l) = ns.create(ROOT_INO, b"f", O, None, 0).unwrap();
    assert_eq!(osts(&l), [1]);
    assert_eq!(meta_get(&ns.db, META_PLACER_STATE).unwrap(), 2);
}

/// A database of the layout before the version was kept is marked current; one of a later
/// version is refused.
#[test]
fn schema_versions_are_checked() {
    let d = tempfile::tempdir().unwrap();
    {
        let ns = open(&d, 1);
        ns.db.pragma_update(None, "user_version", 0).unwrap();
    }
    let ns = open(&d, 1);
    let v: i64 = ns
        .db
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(v, SCHEMA_VERSION);
    ns.db
        .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    drop(ns);
    let e = Namespace::open(&d.path().join("mds.db"), config(1))
        .err()
        .unwrap();
    assert_eq!(e.errno, Errno::EINVAL);
    assert!(e.message.contains("schema version"), "{}", e.message);
}

#[test]
fn statfs_lists_osts_with_their_servers() {
    let d = tempfile::tempdir().unwrap();
    let ns = Namespace::open(
        &d.path().join("db"),
        NamespaceConfig {
            osses: vec![
                "10.0.0.1:7000:2".parse().unwrap(),
                "10.0.0.2:7000:1".parse().unwrap(),
            ],
            ..config(1)
        },
    )
    .unwrap();
    let s = ns.statfs().unwrap();
    assert_eq!(s.fsname, "testfs");
    let got: Vec<(u32, &str, u32)> = s
        .osts
        .iter()
        .map(|o| (o.index, o.oss_addr.as_str(), o.oss_ost_index))
        .collect();
    assert_eq!(
        got,
        [
            (0, "10.0.0.1:7000", 0),
            (1, "10.0.0.1:7000", 1),
            (2, "10.0.0.2:7000", 0)
        ]
    );
    for bad in ["10.0.0.1:7000", "x:1:0", "host:1:abc", "nocolon"] {
        assert!(bad.parse::<OssSpec>().is_err(), "{bad}");
    }
}

#[test]
fn bad_default_layout_is_refused_at_open() {
    let d = tempfile::tempdir().unwrap();
    let r = Namespace::open(
        &d.path().join("db"),
        NamespaceConfig {
            default_stripe: StripeSpec {
                stripe_count: 2,
                stripe_size_bytes: 1 << 20,
                start_ost: None,
            },
            ..config(1)
        },
    );
    assert_eq!(r.err().unwrap().errno, Errno::EINVAL);
}

#[test]
fn failed_creates_leave_rotation_and_objects_alone() {
    let d = tempfile::tempdir().unwrap();
    let mut ns = open(&d, 3);
    ns.create(ROOT_INO, b"a", O, None, 0).unwrap();
    assert_eq!(errno(ns.create(ROOT_INO, b"a", O, None, 0)), Errno::EEXIST);
    assert_eq!(errno(ns.create(ROOT_INO, b"", O, None, 0)), Errno::EINVAL);
    let (_, l) = ns.create(ROOT_INO, b"b", O, None, 0).unwrap();
    assert_eq!(l.stripes, [Stripe { ost: 1, object: 2 }]);
}

/// Removals queue their objects in the removing transaction; the sweep queues only objects
/// below the bound that no stripe names, never a live file's nor one handed out after the
/// listing began; acknowledged objects leave the queue.
#[test]
fn removals_queue_objects_and_the_sweep_spares_live_and_new_ones() {
    let d = tempfile::tempdir().unwrap();
    let mut ns = open(&d, 2);
    let (_, live) = ns.create(ROOT_INO, b"live", O, None, 0).unwrap();
    let (_, dead) = ns.create(ROOT_INO, b"dead", O, None, 0).unwrap();
    let (_, replaced) = ns.create(ROOT_INO, b"old", O, None, 0).unwrap();
    ns.create(ROOT_INO, b"new", O, None, 0).unwrap();
    assert_eq!(ns.pending_destroy_count().unwrap(), 0);
    ns.unlink(ROOT_INO, b"dead", 1).unwrap();
    ns.rename(ROOT_INO, b"new", ROOT_INO, b"old", 1).unwrap();
    let queued = |ns: &Namespace| -> Vec<(u32, u64)> {
        (0..2)
            .flat_map(|ost| {
                ns.pending_destroys(ost, 100)
                    .unwrap()
                    .into_iter()
                    .map(move |o| (ost, o))
            })
            .collect()
    };
    let mut want: Vec<(u32, u64)> = [&dead, &replaced]
        .iter()
        .flat_map(|l| l.stripes.iter().map(|s| (s.ost, s.object)))
        .collect();
    want.sort_unstable();
    assert_eq!(queued(&ns), want);
    // An unlink that fails queues nothing.
    assert_eq!(errno(ns.unlink(ROOT_INO, b"dead", 2)), Errno::ENOENT);
    assert_eq!(queued(&ns), want);

    // Round robin over two OSTs: live (0, 1), dead (1, 2), old (0, 3), new (1, 4).
    assert_eq!(live.stripes, [Stripe { ost: 0, object: 1 }]);
    assert_eq!(replaced.stripes, [Stripe { ost: 0, object: 3 }]);
    let below = ns.next_object().unwrap();
    assert_eq!(below, 5);
    // OST 0 stores the live file's object, object 2 (a file's on OST 1, so no reference
    // here), the replaced file's (queued already), and two past the bound.
    let n = ns
        .queue_orphans(0, &[1, 2, 3, below, below + 7], below)
        .unwrap();
    assert_eq!(n, 1);
    assert_eq!(ns.pending_destroys(0, 100).unwrap(), [2, 3]);
    for ost in 0..2 {
        let p = ns.pending_destroys(ost, 100).unwrap();
        ns.destroyed(ost, &p).unwrap();
    }
    assert_eq!(ns.pending_destroy_count().unwrap(), 0);
}
