//! How records are addressed by name, as kcat and kafka-consumer-groups address them: offset
//! forms (`15`, `earliest`, `latest`, `-K`, `A..B`), time forms (ms, ISO-8601 with a zone, a
//! date, `now`, a duration before now, `T1..T2`) and the reset lines of a group's `offsets`
//! file. Parsing and resolving only: no storage here, the log's bounds and the clock are
//! given.

use std::fmt;

/// Where an offset form points, before the log's bounds are known.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OffsetForm {
    /// A decimal offset.
    At(i64),
    /// The log start (Kafka's ListOffsets -2).
    Earliest,
    /// The log end (ListOffsets -1).
    Latest,
    /// The last K offsets: max(log start, log end - K), as `kcat -o -K`.
    Last(i64),
}

impl OffsetForm {
    /// The offset in a log of [start, end). None for a decimal offset outside it (the
    /// by-offset range rule, [`crate::base::offset_in_range`]).
    pub fn resolve(self, start: i64, end: i64) -> Option<i64> {
        match self {
            OffsetForm::At(n) => crate::base::offset_in_range(n, start, end).ok().map(|_| n),
            OffsetForm::Earliest => Some(start),
            OffsetForm::Latest => Some(end),
            OffsetForm::Last(k) => Some(end.saturating_sub(k).max(start)),
        }
    }

    /// As the end of a range `A..B`: any offset, clamped to the log start (an end past the
    /// log end is where a growing file stops).
    pub fn resolve_end(self, start: i64, end: i64) -> i64 {
        match self {
            OffsetForm::At(n) => n.max(start),
            other => other.resolve(start, end).unwrap_or(end),
        }
    }
}

/// Where a time form points, before the clock is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimeForm {
    /// Milliseconds since the epoch (a decimal, an ISO-8601 time or a date).
    At(i64),
    /// The time of the open.
    Now,
    /// This many milliseconds before the open.
    Ago(i64),
}

impl TimeForm {
    /// The timestamp (ms) at clock `now_ms`.
    pub fn resolve(self, now_ms: i64) -> i64 {
        match self {
            TimeForm::At(t) => t,
            TimeForm::Now => now_ms,
            TimeForm::Ago(d) => now_ms.saturating_sub(d),
        }
    }
}

/// Where a stream starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Start {
    Offset(OffsetForm),
    Time(TimeForm),
}

/// Where a stream ends (excluded): an offset, or the first record in offset order whose
/// timestamp is at or after a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum End {
    Offset(OffsetForm),
    Time(TimeForm),
}

/// A parsed address: a start and, for a range, an end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Address {
    pub start: Start,
    pub end: Option<End>,
}

/// The name forms of each directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Forms {
    /// `by-offset/`: an offset form, or a range `A..B` of them.
    ByOffset,
    /// `by-time/`: a time form, or a range `T1..T2` of them.
    ByTime,
    /// `follow/`: an offset form, or `@` and a time form.
    Follow,
}

/// Parses a name of `by-offset/`, `by-time/` or `follow/` (without `.jsonl`).
pub fn parse(forms: Forms, name: &str) -> Option<Address> {
    match forms {
        Forms::ByOffset => {
            let (a, b) = split_range(name);
            Some(Address {
                start: Start::Offset(parse_offset(a)?),
                end: match b {
                    Some(b) => Some(End::Offset(parse_offset(b)?)),
                    None => None,
                },
            })
        }
        Forms::ByTime => {
            let (a, b) = split_range(name);
            Some(Address {
                start: Start::Time(parse_time(a)?),
                end: match b {
                    Some(b) => Some(End::Time(parse_time(b)?)),
                    None => None,
                },
            })
        }
        Forms::Follow => {
            let start = match name.strip_prefix('@') {
                Some(t) => Start::Time(parse_time(t)?),
                None => Start::Offset(parse_offset(name)?),
            };
            Some(Address { start, end: None })
        }
    }
}

fn split_range(name: &str) -> (&str, Option<&str>) {
    match name.split_once("..") {
        Some((a, b)) => (a, Some(b)),
        None => (name, None),
    }
}

/// `15`, `earliest`, `latest`, `-K`.
pub fn parse_offset(s: &str) -> Option<OffsetForm> {
    match s {
        "earliest" => Some(OffsetForm::Earliest),
        "latest" => Some(OffsetForm::Latest),
        _ => match s.strip_prefix('-') {
            Some(k) => parse_decimal(k).map(OffsetForm::Last),
            None => parse_decimal(s).map(OffsetForm::At),
        },
    }
}

/// ms since the epoch; ISO-8601 with a zone (`2026-12-04T16:49:00Z`,
/// `2026-12-04T17:49:00.250+01:00`); a date (`2026-12-04`, midnight UTC); `now`; a duration
/// before now (`-90s`, `-15m`, `-2h`, `-1d`, `-500ms`).
pub fn parse_time(s: &str) -> Option<TimeForm> {
    if s == "now" {
        return Some(TimeForm::Now);
    }
    if let Some(d) = s.strip_prefix('-') {
        return parse_short_duration(d).map(TimeForm::Ago);
    }
    if let Some(ms) = parse_decimal(s) {
        return Some(TimeForm::At(ms));
    }
    parse_instant(s).map(TimeForm::At)
}

/// An ISO-8601 instant with a zone offset, or a date (midnight UTC), as ms since the epoch
/// (sub-millisecond fractions are cut, as Kafka's timestamps have none).
pub fn parse_instant(s: &str) -> Option<i64> {
    // Only the forms the contract names: a time must carry its zone (`Z` or `±hh:mm`), not a
    // zone name in brackets.
    if s.contains('[') {
        return None;
    }
    if s.contains('T') || s.contains('t') {
        let ts: jiff::Timestamp = s.parse().ok()?;
        return Some(ts.as_millisecond());
    }
    let date: jiff::civil::Date = s.parse().ok()?;
    let zoned = date.to_zoned_datetime(jiff::tz::TimeZone::UTC).ok()?;
    Some(zoned.timestamp().as_millisecond())
}

/// `90s`, `15m`, `2h`, `1d`, `500ms` as ms.
fn parse_short_duration(s: &str) -> Option<i64> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let (n, unit) = s.split_at(digits);
    let n = parse_decimal(n)?;
    let ms_per = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return None,
    };
    n.checked_mul(ms_per)
}

/// An ISO-8601 duration (`PT1H`, `PT-15M`, `P1DT2H`, `-PT30S`) in ms, as Java's
/// `Duration.parse` reads it for `kafka-consumer-groups --by-duration` (a day is 24 hours).
pub fn parse_iso_duration(s: &str) -> Option<i64> {
    if !s.starts_with(['P', 'p', '-', '+']) {
        return None;
    }
    let span: jiff::Span = s.parse().ok()?;
    let d = span
        .to_duration(jiff::SpanRelativeTo::days_are_24_hours())
        .ok()?;
    i64::try_from(d.as_millis()).ok()
}

/// A non-negative decimal that fits in an i64 (no sign, no spaces).
pub fn parse_decimal(s: &str) -> Option<i64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<i64>().ok()
}

impl fmt::Display for OffsetForm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OffsetForm::At(n) => write!(f, "{n}"),
            OffsetForm::Earliest => f.write_str("earliest"),
            OffsetForm::Latest => f.write_str("latest"),
            OffsetForm::Last(k) => write!(f, "-{k}"),
        }
    }
}

impl fmt::Display for TimeForm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimeForm::At(t) => write!(f, "{t}"),
            TimeForm::Now => f.write_str("now"),
            TimeForm::Ago(d) => write!(f, "-{d}ms"),
        }
    }
}

impl fmt::Display for Address {
    /// A name that parses back to this address (times as ms).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.start {
            Start::Offset(o) => write!(f, "{o}")?,
            Start::Time(t) if self.end.is_none() => write!(f, "@{t}")?,
            Start::Time(t) => write!(f, "{t}")?,
        }
        match self.end {
            Some(End::Offset(o)) => write!(f, "..{o}"),
            Some(End::Time(t)) => write!(f, "..{t}"),
            None => Ok(()),
        }
    }
}

/// One line written to a group's `offsets` file, as `kafka-consumer-groups --reset-offsets`
/// takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResetLine {
    /// `P N`, `P earliest`, `P latest`, `P -K`: one partition.
    Partition(u32, OffsetForm),
    /// `earliest` / `latest`: every partition.
    All(OffsetForm),
    /// `shift-by K` (K may be negative): every partition with a committed offset, from it.
    ShiftBy(i64),
    /// `to-datetime <ISO-8601>`: every partition, to the first offset at or after the time.
    ToTime(i64),
    /// `by-duration <ISO-8601 duration>`: every partition, to the first offset at or after
    /// now minus the duration (after now when it is negative: the log end).
    ByDuration(i64),
}

/// Parses one non-empty line of an `offsets` write.
pub fn parse_reset_line(line: &str) -> Result<ResetLine, String> {
    let bad = || {
        format!(
            "offsets: {line:?} is not `partition offset`, `partition earliest|latest`, \
             `earliest`, `latest`, `shift-by K`, `to-datetime <ISO-8601>` or \
             `by-duration <ISO-8601 duration>`"
        )
    };
    let mut it = line.split_whitespace();
    let (Some(a), b, None) = (it.next(), it.next(), it.next()) else {
        return Err(bad());
    };
    match (a, b) {
        ("earliest", None) => Ok(ResetLine::All(OffsetForm::Earliest)),
        ("latest", None) => Ok(ResetLine::All(OffsetForm::Latest)),
        ("shift-by", Some(k)) => {
            let (neg, digits) = match k.strip_prefix('-') {
                Some(d) => (true, d),
                None => (false, k.strip_prefix('+').unwrap_or(k)),
            };
            let k = parse_decimal(digits).ok_or_else(bad)?;
            Ok(ResetLine::ShiftBy(if neg { -k } else { k }))
        }
        ("to-datetime", Some(t)) => parse_instant(t)
            .or_else(|| parse_local_as_utc(t))
            .map(ResetLine::ToTime)
            .ok_or_else(bad),
        // Signed, as Kafka's tool takes it: a negative duration is a time after now.
        ("by-duration", Some(d)) => parse_iso_duration(d)
            .map(ResetLine::ByDuration)
            .ok_or_else(bad),
        (p, Some(o)) => {
            let p = parse_decimal(p)
                .and_then(|p| u32::try_from(p).ok())
                .ok_or_else(bad)?;
            if o.starts_with('-') && parse_decimal(&o[1..]).is_some() {
                return Err(format!("offsets: {line:?}: an offset is never negative"));
            }
            let o = match o {
                "earliest" => OffsetForm::Earliest,
                "latest" => OffsetForm::Latest,
                _ => OffsetForm::At(parse_decimal(o).ok_or_else(bad)?),
            };
            Ok(ResetLine::Partition(p, o))
        }
        _ => Err(bad()),
    }
}

/// What a reset line resolves against, for one partition.
pub trait ResetView {
    /// (log start, log end).
    fn bounds(&self, partition: u32) -> crate::error::Result<(i64, i64)>;
    /// The first offset whose record's timestamp is at or after `ts` (None: none is).
    fn offset_for_time(&self, partition: u32, ts: i64) -> crate::error::Result<Option<i64>>;
}

/// The offsets a reset line sets, by partition, as `kafka-consumer-groups --reset-offsets`
/// computes them: every partition of `partitions` a line names; `committed` are the group's
/// offsets now; a time with no record at or after it is the log end; every result is moved
/// into [log start, log end] (Kafka's clamp). `shift-by` of a partition without a committed
/// offset is refused, as Kafka's tool refuses it.
pub fn resolve_reset(
    line: ResetLine,
    partitions: u32,
    committed: &std::collections::BTreeMap<u32, i64>,
    view: &dyn ResetView,
    now_ms: i64,
) -> crate::error::Result<Vec<(u32, i64)>> {
    let named: Vec<u32> = match line {
        // A partition the topic lacks makes the line malformed for this topic.
        ResetLine::Partition(p, _) if p >= partitions => {
            return Err(crate::error::Error::InvalidRecord(format!(
                "offsets: partition {p}: the topic has {partitions} partitions"
            )));
        }
        ResetLine::Partition(p, _) => vec![p],
        _ => (0..partitions).collect(),
    };
    let mut out = Vec::with_capacity(named.len());
    for p in named {
        let (start, end) = view.bounds(p)?;
        let want = match line {
            ResetLine::Partition(_, form) | ResetLine::All(form) => match form {
                OffsetForm::At(n) => n,
                other => other.resolve(start, end).unwrap_or(end),
            },
            ResetLine::ShiftBy(k) => match committed.get(&p) {
                Some(c) => c.saturating_add(k),
                None => {
                    return Err(crate::error::Error::InvalidRecord(format!(
                        "offsets: shift-by: partition {p} has no committed offset to shift"
                    )));
                }
            },
            ResetLine::ToTime(ts) => view.offset_for_time(p, ts)?.unwrap_or(end),
            ResetLine::ByDuration(d) => view
                .offset_for_time(p, now_ms.saturating_sub(d))?
                .unwrap_or(end),
        };
        out.push((p, want.clamp(start, end)));
    }
    Ok(out)
}

/// `kafka-consumer-groups --to-datetime` also takes a time without a zone
/// (`2026-12-04T16:49:00.000`); topicfs reads it as UTC.
fn parse_local_as_utc(s: &str) -> Option<i64> {
    let dt: jiff::civil::DateTime = s.parse().ok()?;
    let zoned = dt.to_zoned_datetime(jiff::tz::TimeZone::UTC).ok()?;
    Some(zoned.timestamp().as_millisecond())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_forms_parse() {
        assert_eq!(parse_offset("15"), Some(OffsetForm::At(15)));
        assert_eq!(parse_offset("earliest"), Some(OffsetForm::Earliest));
        assert_eq!(parse_offset("latest"), Some(OffsetForm::Latest));
        assert_eq!(parse_offset("-10"), Some(OffsetForm::Last(10)));
        for bad in [
            "",
            "-",
            "+1",
            "1a",
            "0x10",
            " 1",
            "9223372036854775808",
            "1.5",
            "--1",
        ] {
            assert_eq!(parse_offset(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn offset_forms_resolve_as_kcat() {
        // A log of [100, 150).
        assert_eq!(OffsetForm::At(120).resolve(100, 150), Some(120));
        assert_eq!(OffsetForm::At(150).resolve(100, 150), Some(150));
        assert_eq!(OffsetForm::At(99).resolve(100, 150), None);
        assert_eq!(OffsetForm::At(151).resolve(100, 150), None);
        assert_eq!(OffsetForm::Earliest.resolve(100, 150), Some(100));
        assert_eq!(OffsetForm::Latest.resolve(100, 150), Some(150));
        assert_eq!(OffsetForm::Last(10).resolve(100, 150), Some(140));
        // More than the log holds: the log start.
        assert_eq!(OffsetForm::Last(1000).resolve(100, 150), Some(100));
        assert_eq!(OffsetForm::Last(i64::MAX).resolve(100, 150), Some(100));
        // Range ends: any offset, never before the log start.
        assert_eq!(OffsetForm::At(500).resolve_end(100, 150), 500);
        assert_eq!(OffsetForm::At(5).resolve_end(100, 150), 100);
        assert_eq!(OffsetForm::Last(5).resolve_end(100, 150), 145);
    }

    #[test]
    fn by_offset_ranges() {
        let a = parse(Forms::ByOffset, "10..20").unwrap();
        assert_eq!(a.start, Start::Offset(OffsetForm::At(10)));
        assert_eq!(a.end, Some(End::Offset(OffsetForm::At(20))));
        let a = parse(Forms::ByOffset, "earliest..-5").unwrap();
        assert_eq!(a.start, Start::Offset(OffsetForm::Earliest));
        assert_eq!(a.end, Some(End::Offset(OffsetForm::Last(5))));
        for bad in ["10..", "..20", "10...20", "10..20..30", "a..b"] {
            assert_eq!(parse(Forms::ByOffset, bad), None, "{bad:?}");
        }
        // Time forms are not offsets, nor offsets a follow time.
        assert_eq!(parse(Forms::ByOffset, "now"), None);
        assert_eq!(parse(Forms::Follow, "1..2"), None);
    }

    #[test]
    fn time_forms_parse() {
        assert_eq!(
            parse_time("1585448614028"),
            Some(TimeForm::At(1585448614028))
        );
        assert_eq!(
            parse_time("2026-12-04T16:49:00Z"),
            Some(TimeForm::At(1_796_402_940_000))
        );
        // The same instant an hour east, with a fraction.
        assert_eq!(
            parse_time("2026-12-04T17:49:00.250+01:00"),
            Some(TimeForm::At(1_796_402_940_250))
        );
        assert_eq!(
            parse_time("2026-12-04T11:49:00.5-05:00"),
            Some(TimeForm::At(1_796_402_940_500))
        );
        // Sub-millisecond digits are cut.
        assert_eq!(
            parse_time("2026-12-04T16:49:00.000999Z"),
            Some(TimeForm::At(1_796_402_940_000))
        );
        assert_eq!(
            parse_time("2026-12-04"),
            Some(TimeForm::At(1_796_342_400_000))
        );
        assert_eq!(parse_time("1970-01-01"), Some(TimeForm::At(0)));
        assert_eq!(parse_time("now"), Some(TimeForm::Now));
        assert_eq!(parse_time("-90s"), Some(TimeForm::Ago(90_000)));
        assert_eq!(parse_time("-15m"), Some(TimeForm::Ago(900_000)));
        assert_eq!(parse_time("-2h"), Some(TimeForm::Ago(7_200_000)));
        assert_eq!(parse_time("-1d"), Some(TimeForm::Ago(86_400_000)));
        assert_eq!(parse_time("-500ms"), Some(TimeForm::Ago(500)));
        for bad in [
            "",
            "-",
            "-5",
            "-5y",
            "-m",
            "+5m",
            "2026-12-04T16:49:00",
            "2026-12-04T16:49:00Z[Europe/Paris]",
            "2026-13-04",
            "yesterday",
            "-99999999999999999d",
        ] {
            assert_eq!(parse_time(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn time_forms_resolve_against_the_clock() {
        assert_eq!(TimeForm::Now.resolve(1000), 1000);
        assert_eq!(TimeForm::Ago(300).resolve(1000), 700);
        assert_eq!(TimeForm::At(5).resolve(1000), 5);
        assert_eq!(TimeForm::Ago(i64::MAX).resolve(i64::MIN + 1), i64::MIN);
    }

    #[test]
    fn by_time_ranges_and_follow_times() {
        let a = parse(Forms::ByTime, "2026-12-04..2026-12-05").unwrap();
        assert_eq!(a.start, Start::Time(TimeForm::At(1_796_342_400_000)));
        assert_eq!(a.end, Some(End::Time(TimeForm::At(1_796_428_800_000))));
        let a = parse(Forms::ByTime, "-1h..now").unwrap();
        assert_eq!(a.end, Some(End::Time(TimeForm::Now)));
        let a = parse(Forms::Follow, "@-15m").unwrap();
        assert_eq!(a.start, Start::Time(TimeForm::Ago(900_000)));
        assert_eq!(
            parse(Forms::Follow, "-15").unwrap().start,
            Start::Offset(OffsetForm::Last(15))
        );
        assert_eq!(parse(Forms::ByTime, "earliest"), None);
    }

    #[test]
    fn names_print_back() {
        for name in [
            "15", "earliest", "latest", "-10", "3..-2", "@now", "@-500ms",
        ] {
            let forms = if name.starts_with('@') || !name.contains("..") {
                Forms::Follow
            } else {
                Forms::ByOffset
            };
            let a = parse(forms, name).unwrap();
            assert_eq!(a.to_string(), name);
        }
    }

    #[test]
    fn iso_durations_as_java_reads_them() {
        assert_eq!(parse_iso_duration("PT1H"), Some(3_600_000));
        assert_eq!(parse_iso_duration("PT15M"), Some(900_000));
        assert_eq!(parse_iso_duration("PT0.5S"), Some(500));
        assert_eq!(parse_iso_duration("P1DT2H"), Some(93_600_000));
        assert_eq!(parse_iso_duration("-PT1H"), Some(-3_600_000));
        for bad in ["1h", "", "P", "PT", "P1Y", "P1M"] {
            assert_eq!(parse_iso_duration(bad), None, "{bad:?}");
        }
    }

    /// Partition p holds offsets [10p, 10p + 10), record o stamped 1000 * o.
    struct View;
    impl ResetView for View {
        fn bounds(&self, p: u32) -> crate::error::Result<(i64, i64)> {
            Ok((10 * p as i64, 10 * p as i64 + 10))
        }
        fn offset_for_time(&self, p: u32, ts: i64) -> crate::error::Result<Option<i64>> {
            let (s, e) = self.bounds(p)?;
            Ok((s..e).find(|o| o * 1000 >= ts))
        }
    }

    #[test]
    fn resets_resolve_and_clamp_as_kafka_consumer_groups() {
        let committed: std::collections::BTreeMap<u32, i64> = [(0, 5), (1, 12)].into();
        let r = |line: &str| {
            resolve_reset(
                parse_reset_line(line).unwrap(),
                2,
                &committed,
                &View,
                100_000,
            )
        };
        assert_eq!(r("1 earliest").unwrap(), [(1, 10)]);
        assert_eq!(r("1 latest").unwrap(), [(1, 20)]);
        assert_eq!(r("earliest").unwrap(), [(0, 0), (1, 10)]);
        assert_eq!(r("1 99").unwrap(), [(1, 20)]);
        assert_eq!(r("1 3").unwrap(), [(1, 10)]);
        assert_eq!(r("shift-by -3").unwrap(), [(0, 2), (1, 10)]);
        assert_eq!(r("shift-by 4").unwrap(), [(0, 9), (1, 16)]);
        assert_eq!(r("shift-by 400").unwrap(), [(0, 10), (1, 20)]);
        // 1970-01-01T00:00:12.5Z: offset 13 (stamped 13 s) in partition 1; all of partition 0
        // is earlier: its log end.
        assert_eq!(
            r("to-datetime 1970-01-01T00:00:12.500Z").unwrap(),
            [(0, 10), (1, 13)]
        );
        // 100 s less 88 s: 12 s.
        assert_eq!(r("by-duration PT88S").unwrap(), [(0, 10), (1, 12)]);
        // A negative duration is a time after now (Kafka's tool: now.minus(duration)): no
        // record is that late, every partition goes to its log end.
        assert_eq!(r("by-duration -PT1H").unwrap(), [(0, 10), (1, 20)]);
        let none: std::collections::BTreeMap<u32, i64> = [(0, 5)].into();
        assert!(
            resolve_reset(ResetLine::ShiftBy(1), 2, &none, &View, 0)
                .unwrap_err()
                .to_string()
                .contains("no committed offset")
        );
    }

    /// A line naming a partition the topic lacks is a malformed line for this topic.
    #[test]
    fn a_reset_of_a_partition_the_topic_lacks_is_einval() {
        let none = std::collections::BTreeMap::new();
        for line in ["2 5", "2 earliest", "7 latest"] {
            let e = resolve_reset(parse_reset_line(line).unwrap(), 2, &none, &View, 0).unwrap_err();
            assert!(
                matches!(e, crate::error::Error::InvalidRecord(_)),
                "{line}: {e:?}"
            );
            assert!(e.to_string().contains("has 2 partitions"), "{line}: {e}");
        }
    }

    #[test]
    fn reset_lines() {
        assert_eq!(
            parse_reset_line("3 15"),
            Ok(ResetLine::Partition(3, OffsetForm::At(15)))
        );
        assert_eq!(
            parse_reset_line("3 earliest"),
            Ok(ResetLine::Partition(3, OffsetForm::Earliest))
        );
        assert_eq!(
            parse_reset_line("0 latest"),
            Ok(ResetLine::Partition(0, OffsetForm::Latest))
        );
        assert_eq!(
            parse_reset_line("earliest"),
            Ok(ResetLine::All(OffsetForm::Earliest))
        );
        assert_eq!(
            parse_reset_line("latest"),
            Ok(ResetLine::All(OffsetForm::Latest))
        );
        assert_eq!(parse_reset_line("shift-by -5"), Ok(ResetLine::ShiftBy(-5)));
        assert_eq!(parse_reset_line("shift-by 7"), Ok(ResetLine::ShiftBy(7)));
        assert_eq!(
            parse_reset_line("to-datetime 2026-12-04T16:49:00Z"),
            Ok(ResetLine::ToTime(1_796_402_940_000))
        );
        assert_eq!(
            parse_reset_line("to-datetime 2026-12-04T16:49:00.000"),
            Ok(ResetLine::ToTime(1_796_402_940_000))
        );
        assert_eq!(
            parse_reset_line("by-duration PT1H"),
            Ok(ResetLine::ByDuration(3_600_000))
        );
        assert!(parse_reset_line("0 -1").unwrap_err().contains("negative"));
        for bad in [
            "x",
            "0",
            "0 1 2",
            "-1 5",
            "0 -",
            "shift-by",
            "shift-by x",
            "to-datetime yesterday",
            "by-duration 1h",
            "earliest 0",
        ] {
            assert!(parse_reset_line(bad).is_err(), "{bad:?}");
        }
    }
}
