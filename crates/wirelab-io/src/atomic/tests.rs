use super::*;

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wirelab-atomic-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

const STEPS: [Step; 5] = [
    Step::Create,
    Step::Write,
    Step::SyncFile,
    Step::Rename,
    Step::SyncDir,
];

#[test]
fn content_round_trips_and_replaces_the_old() {
    let d = scratch("rt");
    let p = d.join("a.json");
    write(&p, b"first").unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), b"first");
    let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    write(&p, &big).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), big);
    write_with(&p, |f| writeln!(f, "streamed {}", 42)).unwrap();
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "streamed 42\n");
    assert_eq!(names(&d), ["a.json"], "no temporary file is left");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_failure_at_any_step_leaves_the_old_target_or_none_and_no_temp() {
    let d = scratch("steps");
    for (i, step) in STEPS.into_iter().enumerate() {
        // A target with old content, and one that does not exist yet.
        let old = d.join(format!("old{i}"));
        std::fs::write(&old, b"old content").unwrap();
        let e = write_faulty(&old, |f| f.write_all(b"new content"), Some(step)).unwrap_err();
        assert_eq!((e.step, e.path.as_path()), (step, old.as_path()));
        let want: &[u8] = if step == Step::SyncDir {
            b"new content" // renamed already: the new content, whole
        } else {
            b"old content"
        };
        assert_eq!(std::fs::read(&old).unwrap(), want, "{step:?}");

        let new = d.join(format!("new{i}"));
        let e = write_faulty(&new, |f| f.write_all(b"new content"), Some(step)).unwrap_err();
        assert_eq!(e.step, step);
        assert_eq!(new.exists(), step == Step::SyncDir, "{step:?}");
        std::fs::remove_file(&old).unwrap();
        let _ = std::fs::remove_file(&new);
        assert_eq!(names(&d), Vec::<String>::new(), "{step:?}: a file is left");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn real_failures_name_their_step_and_leave_nothing_behind() {
    let d = scratch("real");
    // A target that is a (non-empty) directory: the rename fails, the
    // directory stays, the temporary file goes.
    let dir_target = d.join("t");
    std::fs::create_dir(&dir_target).unwrap();
    std::fs::write(dir_target.join("inside"), b"x").unwrap();
    let e = write(&dir_target, b"new").unwrap_err();
    assert_eq!(e.step, Step::Rename, "{e}");
    assert_eq!(names(&d), ["t"]);
    assert_eq!(names(&dir_target), ["inside"]);
    // A directory that does not exist, and one that is a file.
    let e = write(&d.join("missing/a"), b"new").unwrap_err();
    assert_eq!(e.step, Step::Create, "{e}");
    let e = write(&d.join("t/inside/a"), b"new").unwrap_err();
    assert_eq!(e.step, Step::Create, "{e}");
    // A directory no one may create files in, even root (procfs).
    let e = write(Path::new("/proc/wirelab-atomic-test"), b"new").unwrap_err();
    assert_eq!(e.step, Step::Create, "{e}");
    assert!(!Path::new("/proc/wirelab-atomic-test").exists());
    // The fill's own error fails the write step; the target keeps its content.
    let p = d.join("kept");
    write(&p, b"kept").unwrap();
    let e = write_with(&p, |f| {
        f.write_all(b"half")?;
        Err(io::Error::other("the producer failed"))
    })
    .unwrap_err();
    assert_eq!(e.step, Step::Write);
    assert!(e.to_string().contains("the producer failed"), "{e}");
    assert_eq!(std::fs::read(&p).unwrap(), b"kept");
    assert_eq!(names(&d), ["kept", "t"]);
    // A path that names no file.
    assert_eq!(write(Path::new("/"), b"x").unwrap_err().step, Step::Create);
    // Converted for io::Error callers: same kind, the step in the text.
    let io: io::Error = write(&dir_target, b"x").unwrap_err().into();
    assert!(io.to_string().starts_with("renaming"), "{io}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_staged_directory_is_published_whole() {
    let d = scratch("dir");
    let staged = d.join(".out.partial");
    std::fs::create_dir_all(staged.join("sub")).unwrap();
    std::fs::write(staged.join("a"), b"a").unwrap();
    std::fs::write(staged.join("sub/b"), b"b").unwrap();
    let out = d.join("out");
    publish_dir(&staged, &out).unwrap();
    assert_eq!(names(&d), ["out"]);
    assert_eq!(std::fs::read(out.join("sub/b")).unwrap(), b"b");
    // Onto a non-empty directory: refused, both left as they were.
    std::fs::create_dir_all(&staged).unwrap();
    std::fs::write(staged.join("c"), b"c").unwrap();
    let e = publish_dir(&staged, &out).unwrap_err();
    assert_eq!((e.step, e.path.as_path()), (Step::Rename, out.as_path()));
    assert_eq!(names(&out), ["a", "sub"]);
    assert_eq!(names(&staged), ["c"]);
    std::fs::remove_dir_all(&d).unwrap();
}
