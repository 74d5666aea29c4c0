use super::{command, completions, man_page};
use crate::config::{BROKER_DEFAULTS_HEADING, CONFIG_KEYS, TOPIC_DEFAULTS_HEADING};
use crate::mount::options::MOUNT_HEADING;
use crate::mount::remote::REMOTE_HEADING;

const README: &str = include_str!("../../README.md");

fn mount_help() -> String {
    command()
        .find_subcommand_mut("mount")
        .expect("mount")
        .render_long_help()
        .to_string()
}

/// The `--help` heading each long option of `mount` is listed under.
fn headings_of(help: &str) -> Vec<(String, String)> {
    let mut heading = String::new();
    let mut out = Vec::new();
    for line in help.lines() {
        if !line.starts_with(' ') && line.ends_with(':') {
            heading = line.trim_end_matches(':').to_string();
        }
        for word in line.split([' ', ',']) {
            if let Some(long) = word.strip_prefix("--")
                && long.chars().next().is_some_and(|c| c.is_ascii_lowercase())
                && line.trim_start().starts_with('-')
            {
                out.push((long.to_string(), heading.clone()));
            }
        }
    }
    out
}

#[test]
fn mount_help_groups_every_option_under_its_heading() {
    let help = mount_help();
    let listed = headings_of(&help);
    let heading = |opt: &str| {
        listed
            .iter()
            .find(|(o, _)| o == opt)
            .map(|(_, h)| h.as_str())
            .unwrap_or_else(|| panic!("--{opt} is not in mount --help:\n{help}"))
    };
    for k in CONFIG_KEYS.iter().filter(|k| k.broker != "log.dirs") {
        let Some(opt) = k.option else { continue };
        let want = if k.topic.is_some() {
            TOPIC_DEFAULTS_HEADING
        } else {
            k.help_heading()
        };
        assert_eq!(heading(opt), want, "--{opt}");
        if let Some(alias) = k.alias {
            assert!(help.contains(alias), "alias --{alias} not shown");
        }
    }
    for opt in [
        "segment-bytes",
        "retention-ms",
        "num-partitions",
        "roll-hours",
    ] {
        assert_eq!(heading(opt), TOPIC_DEFAULTS_HEADING, "--{opt}");
    }
    for opt in ["log-cleaner-backoff-ms", "retention-check-interval-ms"] {
        assert_eq!(heading(opt), BROKER_DEFAULTS_HEADING, "--{opt}");
    }
    for opt in [
        "log-dir",
        "config",
        "foreground",
        "pid-file",
        "log-file",
        "allow-other",
        "uid",
        "gid",
        "fuse-threads",
    ] {
        assert_eq!(heading(opt), MOUNT_HEADING, "--{opt}");
    }
    for opt in [
        "bootstrap-servers",
        "client-config",
        "replication-factor",
        "write-behind",
    ] {
        assert_eq!(heading(opt), REMOTE_HEADING, "--{opt}");
    }
    // The headings in the order a reader needs them.
    let at = |h: &str| {
        help.find(&format!("\n{h}:\n"))
            .unwrap_or_else(|| panic!("no heading {h}"))
    };
    assert!(at(MOUNT_HEADING) < at(TOPIC_DEFAULTS_HEADING));
    assert!(at(TOPIC_DEFAULTS_HEADING) < at(BROKER_DEFAULTS_HEADING));
    assert!(at(BROKER_DEFAULTS_HEADING) < at(REMOTE_HEADING));
    // Every option of mount (but --help) is under one of the four.
    for (opt, h) in &listed {
        if opt != "help" {
            assert!(
                [
                    MOUNT_HEADING,
                    TOPIC_DEFAULTS_HEADING,
                    BROKER_DEFAULTS_HEADING,
                    REMOTE_HEADING
                ]
                .contains(&h.as_str()),
                "--{opt} under {h}"
            );
        }
    }
}

/// The `--long-options` a README section names.
fn readme_options(section: &str) -> Vec<String> {
    long_options(README, section)
}

/// The `--long-options` the `## section` of a Markdown text names.
fn long_options(doc: &str, section: &str) -> Vec<String> {
    let text: String = doc
        .lines()
        .skip_while(|l| l.strip_prefix("## ") != Some(section))
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .collect::<Vec<_>>()
        .join("\n");
    let mut out: Vec<String> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|w| {
            w.strip_prefix("--")
                .is_some_and(|o| o.starts_with(|c: char| c.is_ascii_lowercase()))
        })
        .map(str::to_string)
        .collect();
    out.sort();
    out.dedup();
    out
}

#[test]
fn mount_help_lists_every_option_the_readme_names() {
    let help = mount_help();
    let named = readme_options("Options");
    assert!(named.len() > 30, "{named:?}");
    for opt in named.iter().chain(&readme_options("Security")) {
        assert!(
            help.contains(&format!("{opt} ")) || help.contains(&format!("{opt}\n")),
            "{opt} is in the README but not in mount --help"
        );
    }
}

#[test]
fn every_option_the_contract_names_is_an_option_of_a_subcommand() {
    let contract = include_str!("../../docs/contract.md");
    let mut cmd = command();
    cmd.build();
    let mut known: Vec<String> = Vec::new();
    for sub in cmd.get_subcommands() {
        let help = sub.clone().render_long_help().to_string();
        known.extend(
            help.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .map(str::to_string),
        );
    }
    let named = long_options(contract, "Command line");
    assert!(named.len() > 15, "{named:?}");
    for opt in &named {
        assert!(
            known.contains(opt),
            "{opt} is in docs/contract.md but no subcommand has it"
        );
    }
}

/// The man page as text: roff's `\-` as `-`, fonts dropped.
fn man_text() -> String {
    String::from_utf8(man_page())
        .unwrap()
        .replace("\\-", "-")
        .replace("\\fB", "")
        .replace("\\fI", "")
        .replace("\\fR", "")
}

#[test]
fn man_page_has_every_subcommand_and_option() {
    let man = man_text();
    let mut cmd = command();
    cmd.build();
    let mut subs = 0;
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        subs += 1;
        assert!(
            man.contains(&format!(
                ".SH \"TOPICFS {}\"",
                sub.get_name().to_uppercase()
            )),
            "no section for {}",
            sub.get_name()
        );
        for arg in sub.get_arguments() {
            if let Some(long) = arg.get_long() {
                assert!(
                    man.contains(&format!("--{long}")),
                    "--{long} of {} missing",
                    sub.get_name()
                );
            }
        }
    }
    assert_eq!(subs, 5);
    for alias in CONFIG_KEYS.iter().filter_map(|k| k.alias) {
        assert!(man.contains(&format!("--{alias}")), "--{alias} missing");
    }
    for heading in [
        MOUNT_HEADING,
        TOPIC_DEFAULTS_HEADING,
        BROKER_DEFAULTS_HEADING,
        REMOTE_HEADING,
    ] {
        assert!(
            man.contains(&format!(".SS \"{}\"", heading.to_uppercase())),
            "{heading}"
        );
    }
}

#[test]
fn man_page_has_the_tree_and_the_errors_table() {
    let man = man_text();
    let tree = &man[man.find(".SH \"THE MOUNTED TREE\"").expect("tree")..];
    for line in [
        "by-offset/<N>       r  values from offset N to the log end",
        "segments/           r  the partition's real .log/.index/.timeindex files",
        "groups/               r  `ls` lists the consumer groups",
    ] {
        assert!(tree.contains(line), "{line}");
    }
    let errors = &man[man.find(".SH ERRORS").expect("errors")..];
    let rows = super::manual::error_rows();
    assert!(rows.len() > 20, "{}", rows.len());
    for (case, result) in rows {
        assert!(errors.contains(&result.replace('`', "")), "{result}");
        assert!(errors.contains(&case.replace('`', "")), "{case}");
    }
    assert!(errors.contains(".TP\nEINVAL\nmkdir of an invalid topic name"));
}

#[test]
fn man_page_is_clean_roff() {
    let mut groff = std::process::Command::new("groff")
        .args(["-man", "-Tutf8", "-ww", "-z"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("groff (scripts/install-deps.sh installs it)");
    use std::io::Write;
    groff.stdin.take().unwrap().write_all(&man_page()).unwrap();
    let out = groff.wait_with_output().unwrap();
    assert!(out.status.success());
    let warnings = String::from_utf8_lossy(&out.stderr);
    assert!(warnings.is_empty(), "{warnings}");
}

#[test]
fn bash_completions_parse_and_complete_options() {
    let script = completions(clap_complete::Shell::Bash);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("topicfs.bash");
    std::fs::write(&path, &script).unwrap();
    let check = std::process::Command::new("bash")
        .arg("-n")
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    // Sourced, it completes `topicfs mount --segm` to the long option.
    let run = std::process::Command::new("bash")
        .arg("-c")
        .arg(
            r#"source "$1"
COMP_WORDS=(topicfs mount --segm); COMP_CWORD=2; COMP_LINE="topicfs mount --segm"; COMP_POINT=${#COMP_LINE}
_topicfs topicfs --segm mount
printf '%s\n' "${COMPREPLY[@]}""#,
        )
        .arg("bash")
        .arg(&path)
        .output()
        .unwrap();
    let got = String::from_utf8_lossy(&run.stdout);
    assert!(
        got.lines().any(|l| l == "--segment-bytes"),
        "{got}{}",
        String::from_utf8_lossy(&run.stderr)
    );
}

#[test]
fn zsh_and_fish_completions_name_every_subcommand() {
    let zsh = String::from_utf8(completions(clap_complete::Shell::Zsh)).unwrap();
    let fish = String::from_utf8(completions(clap_complete::Shell::Fish)).unwrap();
    assert!(zsh.starts_with("#compdef topicfs"));
    for sub in ["mount", "umount", "dump-log", "completions", "man"] {
        assert!(zsh.contains(&format!("'{sub}:")), "zsh: {sub}");
        assert!(fish.contains(&format!("-a \"{sub}\"")), "fish: {sub}");
    }
    assert!(zsh.contains("--segment-bytes"));
    assert!(fish.contains("-l segment-bytes"));
}

/// What the bash completion offers for the last of `words` (`topicfs mount ...`), run in a
/// directory that holds a file, so offering file names shows.
fn bash_complete(words: &[&str]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("topicfs.bash");
    std::fs::write(&path, completions(clap_complete::Shell::Bash)).unwrap();
    let run = std::process::Command::new("bash")
        .arg("-c")
        .arg(
            r#"source "$1"; shift
COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
_topicfs topicfs "${@: -1}" "${@: -2:1}"
printf '%s\n' "${COMPREPLY[@]}""#,
        )
        .arg("bash")
        .arg(&path)
        .args(words)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(run.status.success(), "{run:?}");
    String::from_utf8_lossy(&run.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completion_offers_a_keys_values_and_no_file_names_for_values() {
    let offered = |words: &[&str]| {
        let mut got = bash_complete(words);
        got.sort();
        got
    };
    let mut codecs = crate::config::COMPRESSION_TYPES.to_vec();
    codecs.sort_unstable();
    assert_eq!(
        offered(&["topicfs", "mount", "--compression-type", ""]),
        codecs
    );
    assert_eq!(
        offered(&["topicfs", "mount", "--cleanup-policy", "c"]),
        ["compact", "compact,delete"]
    );
    assert_eq!(
        offered(&["topicfs", "mount", "--message-timestamp-type", ""]),
        ["CreateTime", "LogAppendTime"]
    );
    // A value with no fixed set: never the file names of the directory.
    for option in ["-o", "--segment-bytes", "--retention-ms"] {
        let got = offered(&["topicfs", "mount", option, "to"]);
        assert!(
            !got.iter().any(|g| g.contains("topicfs.bash")),
            "{option}: {got:?}"
        );
    }
    // Where a file is wanted, files are offered.
    let got = offered(&["topicfs", "mount", "--config", "to"]);
    assert_eq!(got, ["topicfs.bash"]);
}
