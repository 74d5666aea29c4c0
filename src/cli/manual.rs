//! The `topicfs(1)` man page: clap_mangen's sections for the command and for each
//! subcommand (their options under the `--help` headings), then the mounted tree and the
//! errors table, taken from the README so that each has one home.

use std::fmt::Write as _;

/// The README, whose tree and errors table the man page shows.
const README: &str = include_str!("../../README.md");

/// The man page, in roff.
pub fn man_page() -> Vec<u8> {
    let mut cmd = super::command().disable_help_subcommand(true);
    cmd.build();
    let man = clap_mangen::Man::new(cmd.clone()).manual("topicfs manual");
    let mut page = Vec::new();
    man.render_title(&mut page)
        .and_then(|()| man.render_name_section(&mut page))
        .and_then(|()| man.render_synopsis_section(&mut page))
        .expect("writing to a Vec");
    let mut text = String::from_utf8(page).expect("clap_mangen writes UTF-8");
    text.push_str(&description_section());
    text.push_str(&String::from_utf8(options(&man)).expect("clap_mangen writes UTF-8"));
    let subs: Vec<&clap::Command> = cmd.get_subcommands().filter(|s| !s.is_hide_set()).collect();
    text.push_str(".SH COMMANDS\n");
    for sub in &subs {
        let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
        writeln!(
            text,
            ".TP\n\\fBtopicfs {}\\fR\n{} (see \\fBTOPICFS {}\\fR below)",
            sub.get_name(),
            roff_text(&about),
            sub.get_name().to_uppercase()
        )
        .expect("writing to a String");
    }
    for sub in subs {
        text.push_str(&subcommand_section(sub));
    }
    text.push_str(&tree_section());
    text.push_str(&errors_section());
    text.push_str(SEE_ALSO);
    text.into_bytes()
}

const SEE_ALSO: &str = ".SH \"SEE ALSO\"
\\fBmount\\fR(8), \\fBfstab\\fR(5), \\fBfusermount3\\fR(1), \\fBkafka\\-dump\\-log.sh\\fR;
in the source: README.md, docs/contract.md, and mount\\-scripts/README.md (the
\\fBmount.topicfs\\fR helper that \\fBmake install\\fR puts in /sbin, for \\fBmount \\-t topicfs\\fR and
/etc/fstab, and a systemd unit).
";

/// OPTIONS of the command itself (`--help`, `--version`).
fn options(man: &clap_mangen::Man) -> Vec<u8> {
    let mut out = Vec::new();
    man.render_options_section(&mut out)
        .expect("writing to a Vec");
    out
}

/// DESCRIPTION: the README's opening paragraphs.
fn description_section() -> String {
    let mut out = String::from(".SH DESCRIPTION\n");
    let intro = README
        .lines()
        .skip_while(|l| !l.starts_with("# "))
        .skip(1)
        .take_while(|l| !l.starts_with("## "));
    for line in intro {
        if line.trim().is_empty() {
            out.push_str(".PP\n");
        } else {
            out.push_str(&plain(
                line.replace("[docs/](docs/README.md)", "docs/ of the source")
                    .as_str(),
            ));
            out.push('\n');
        }
    }
    out
}

/// `.SH "TOPICFS MOUNT"`: a subcommand's description, synopsis and options, clap_mangen's
/// sections of it made subsections.
fn subcommand_section(sub: &clap::Command) -> String {
    // The synopsis as `--help` shows it (clap_mangen's names every option).
    let usage = sub.clone().render_usage().to_string();
    let usage = usage.trim_start_matches("Usage: ").to_string();
    let man = clap_mangen::Man::new(sub.clone().override_usage(usage));
    let mut body = Vec::new();
    man.render_synopsis_section(&mut body)
        .and_then(|()| man.render_description_section(&mut body))
        .and_then(|()| man.render_options_section(&mut body))
        .expect("writing to a Vec");
    let body = String::from_utf8(body).expect("clap_mangen writes UTF-8");
    let name = sub.get_bin_name().unwrap_or(sub.get_name()).to_uppercase();
    let mut out = format!(".SH \"{name}\"\n");
    for line in body.lines() {
        match line.strip_prefix(".SH ") {
            Some(heading) => writeln!(out, ".SS {heading}"),
            None => writeln!(out, "{line}"),
        }
        .expect("writing to a String");
    }
    out
}

/// The lines of the README section `heading` (`## heading`), up to the next `## `.
fn readme_section(heading: &str) -> impl Iterator<Item = &'static str> {
    README
        .lines()
        .skip_while(move |l| l.strip_prefix("## ") != Some(heading))
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
}

/// Text as roff shows it as it is: backslashes escaped, characters past ASCII named (groff
/// reads its input as Latin-1), and a line that starts with `.` or `'` not taken for a request.
fn roff_text(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    for c in line.chars() {
        match c {
            '\\' => out.push_str("\\e"),
            '-' => out.push_str("\\-"),
            c if c.is_ascii() => out.push(c),
            c => write!(out, "\\[u{:04X}]", u32::from(c)).expect("writing to a String"),
        }
    }
    let line = out;
    if line.starts_with('.') || line.starts_with('\'') {
        format!("\\&{line}")
    } else {
        line
    }
}

/// README prose without its Markdown marks.
fn plain(text: &str) -> String {
    roff_text(&text.replace('`', ""))
}

/// THE MOUNTED TREE: the README's tree, as it is.
fn tree_section() -> String {
    let tree: Vec<&str> = readme_section("The mounted tree")
        .skip_while(|l| !l.starts_with("```"))
        .skip(1)
        .take_while(|l| !l.starts_with("```"))
        .collect();
    let mut out = String::from(".SH \"THE MOUNTED TREE\"\n.nf\n");
    for line in tree {
        out.push_str(&roff_text(line));
        out.push('\n');
    }
    out.push_str(".fi\n");
    out
}

/// The README's errors table as (case, result) rows.
pub(super) fn error_rows() -> Vec<(&'static str, &'static str)> {
    readme_section("Errors")
        .filter_map(|l| l.strip_prefix("| ")?.strip_suffix(" |"))
        .filter_map(|row| row.split_once(" | "))
        .filter(|(case, _)| *case != "case")
        .collect()
}

/// ERRORS: each case of the README's table, under its result.
fn errors_section() -> String {
    let mut out = String::from(".SH ERRORS\n");
    for (case, result) in error_rows() {
        writeln!(out, ".TP\n\\fB{}\\fR\n{}", plain(result), plain(case))
            .expect("writing to a String");
    }
    out
}
