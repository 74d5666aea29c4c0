//! `make install`: the files it puts in place under `DESTDIR`, and the installed helper and
//! command mounting and unmounting as a user runs them. The test installs the binary this
//! test build uses (`BIN=`), so it builds nothing; `make -n` shows the build a plain
//! `make install` runs.

use std::path::Path;
use std::process::Command;

use crate::common::mount::{BIN, is_mounted};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn make(args: &[&str]) -> std::process::Output {
    Command::new("make")
        .arg("-C")
        .arg(ROOT)
        .args(args)
        .output()
        .expect("make")
}

fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o7777
}

/// The installed man page renders with groff and names the commands; the shell completions
/// are in place under `dest`.
fn check_page_and_completions(dest: &Path, man: &Path) {
    let page = std::fs::read_to_string(man).unwrap();
    assert!(page.contains("\n.TH topicfs 1 "), "{}", &page[..200]);
    // groff (what man(1) runs) renders it: the page names the commands.
    let shown = Command::new("groff")
        .args(["-man", "-Tutf8", "-P-cbou"])
        .arg(man)
        .output();
    let shown = String::from_utf8_lossy(&shown.unwrap().stdout).into_owned();
    assert!(shown.contains("topicfs umount"), "{shown}");
    for (file, first) in [
        (
            "usr/local/share/bash-completion/completions/topicfs",
            "_topicfs()",
        ),
        (
            "usr/local/share/zsh/site-functions/_topicfs",
            "#compdef topicfs",
        ),
        (
            "usr/local/share/fish/vendor_completions.d/topicfs.fish",
            "# Print an optspec",
        ),
    ] {
        let text = std::fs::read_to_string(dest.join(file)).unwrap();
        assert!(text.contains(first), "{file}: {}", &text[..80]);
        assert_eq!(mode(&dest.join(file)), 0o644, "{file}");
    }
}

#[test]
fn make_install_puts_every_file_in_place_and_topicfs_umount_works_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("dest");
    let destdir = format!("DESTDIR={}", dest.display());
    let out = make(&["install", &destdir, &format!("BIN={BIN}")]);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let bin = dest.join("usr/local/bin/topicfs");
    let helper = dest.join("sbin/mount.topicfs");
    let man = dest.join("usr/local/share/man/man1/topicfs.1");
    assert_eq!(mode(&bin), 0o755);
    assert_eq!(mode(&helper), 0o755);
    assert_eq!(mode(&man), 0o644);
    // Stripped of its debug info (readelf, an independent reader of ELF), and the same
    // command.
    assert!(sections(BIN).contains(".debug_info"));
    assert!(!sections(&bin).contains(".debug_info"), "not stripped");
    let version = |b: &Path| Command::new(b).arg("--version").output().unwrap().stdout;
    assert_eq!(version(&bin), version(Path::new(BIN)));
    // The helper names where topicfs was installed (without DESTDIR, where it will run).
    let source =
        std::fs::read_to_string(Path::new(ROOT).join("mount-scripts/mount.topicfs")).unwrap();
    let installed = std::fs::read_to_string(&helper).unwrap();
    assert_eq!(
        installed,
        source.replace("\ninstalled=\n", "\ninstalled=/usr/local/bin/topicfs\n")
    );
    assert_ne!(installed, source);
    check_page_and_completions(&dest, &man);

    // The installed helper finds the installed topicfs on the PATH, and `topicfs umount`
    // (from the PATH) returns once the clean shutdown is done.
    let (logs, mnt) = (dir.path().join("logs"), dir.path().join("mnt"));
    std::fs::create_dir(&mnt).unwrap();
    let path = format!(
        "{}:/sbin:/bin:/usr/sbin:/usr/bin",
        bin.parent().unwrap().display()
    );
    let out = Command::new(&helper)
        .arg(&logs)
        .arg(&mnt)
        .args(["-o", "num.partitions=2"])
        .env_clear()
        .env("PATH", &path)
        .output()
        .unwrap();
    let mounted = is_mounted(&mnt);
    let wrote = Command::new("sh")
        .arg("-c")
        .arg("mkdir t && echo hi >> t/1/append && cat t/1/by-offset/0")
        .current_dir(&mnt)
        .output()
        .unwrap();
    let umount = Command::new("sh")
        .args(["-c", "topicfs umount \"$1\"", "sh"])
        .arg(&mnt)
        .env_clear()
        .env("PATH", &path)
        .output()
        .unwrap();
    if is_mounted(&mnt) {
        crate::common::mount::force_unmount(&mnt);
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(mounted);
    assert_eq!(String::from_utf8_lossy(&wrote.stdout), "hi\n");
    assert!(
        umount.status.success(),
        "{}",
        String::from_utf8_lossy(&umount.stderr)
    );
    assert!(logs.join(".kafka_cleanshutdown").exists());

    // make uninstall takes all of it away again.
    let out = make(&["uninstall", &destdir]);
    assert!(out.status.success());
    for f in [&bin, &helper, &man] {
        assert!(!f.exists(), "{}", f.display());
    }
}

/// The section names of an ELF file, as `readelf -S` lists them.
fn sections(file: impl AsRef<Path>) -> String {
    let out = Command::new("readelf")
        .args(["-S", "--wide"])
        .arg(file.as_ref())
        .output()
        .expect("readelf (binutils)");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_helper_mount_runs_finds_topicfs_where_make_install_put_it() {
    // PREFIX elsewhere than /usr/local or /usr, the helper in a directory of its own (for
    // /sbin): mount(8) runs it with PATH=/sbin:/bin:/usr/sbin:/usr/bin only.
    let dir = tempfile::tempdir().unwrap();
    let (prefix, sbin) = (dir.path().join("p"), dir.path().join("sbin"));
    let out = make(&[
        "install",
        &format!("PREFIX={}", prefix.display()),
        &format!("SBINDIR={}", sbin.display()),
        &format!("BIN={BIN}"),
    ]);
    assert!(out.status.success(), "{out:?}");
    let out = Command::new(sbin.join("mount.topicfs"))
        .args(["/var/lib/topicfs", "/mnt/topics", "-f", "-o", "ro"])
        .env_clear()
        .env("PATH", "/sbin:/bin:/usr/sbin:/usr/bin")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let want = format!(
        "would run: {}/bin/topicfs mount /mnt/topics",
        prefix.display()
    );
    assert!(err.contains(&want), "{err}");
}

#[test]
fn make_install_builds_with_cargo_and_honours_prefix() {
    // A dry run: the commands a plain `make install` runs, without running them.
    let out = make(&["-n", "install", "PREFIX=/opt/t", "DESTDIR=/stage"]);
    assert!(out.status.success());
    let plan = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = plan.lines().collect();
    let build = lines
        .iter()
        .position(|l| l.contains("cargo build --locked --profile release --bin topicfs"))
        .unwrap_or_else(|| panic!("{plan}"));
    let install = lines
        .iter()
        .position(|l| l.contains("target/release/topicfs /stage/opt/t/bin/topicfs"))
        .unwrap_or_else(|| panic!("{plan}"));
    assert!(build < install, "{plan}");
    assert!(plan.contains("/stage/sbin/mount.topicfs"), "{plan}");
    assert!(
        plan.contains("man > /stage/opt/t/share/man/man1/topicfs.1"),
        "{plan}"
    );
    // PROFILE=dev builds and installs the debug build.
    let out = make(&["-n", "install", "PROFILE=dev"]);
    let plan = String::from_utf8_lossy(&out.stdout);
    assert!(plan.contains("--profile dev"), "{plan}");
    assert!(
        plan.contains("target/debug/topicfs /usr/local/bin/topicfs"),
        "{plan}"
    );
}
