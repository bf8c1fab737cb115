//! What makes a name (of a scenario, a policy, a tier) unfit to become a
//! file or folder name beyond the plain rules of `crate::check::unsafe_name`:
//! characters nobody sees (Unicode format and control characters, such as
//! a right-to-left override that makes `txt.exe` read `exe.txt`, or a
//! zero-width space that makes two names look the same), whitespace at
//! either end, a name of invisible characters only, and the device names
//! Windows reserves (`CON`, `NUL`, `COM1`, ... also with an extension),
//! which cannot be folder names there.

use std::borrow::Cow;

/// The ranges of Unicode general category Cf (format characters): Unicode
/// 14.0's table, as Python's `unicodedata` 14.0.0 gives it, with the
/// Egyptian hieroglyph format controls Unicode 15.0 added (U+13439 to
/// U+1343F). Control characters (Cc) are `char::is_control`.
const FORMAT: &[(u32, u32)] = &[
    (0x00AD, 0x00AD),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x180E, 0x180E),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x2064),
    (0x2066, 0x206F),
    (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
];

/// Characters that draw nothing though they are neither format characters
/// nor whitespace: the combining grapheme joiner, the Hangul fillers, the
/// Khmer inherent vowels, the Mongolian variation selectors, the braille
/// blank and the variation selectors. A name made only of these (and of
/// whitespace) looks empty.
const BLANK: &[(u32, u32)] = &[
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x2800, 0x2800),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFFA0, 0xFFA0),
    (0xE0100, 0xE01EF),
];

fn within(ranges: &[(u32, u32)], c: char) -> bool {
    let c = c as u32;
    ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(&c))
}

/// Whether `c` is a Unicode format character (general category Cf).
pub fn is_format(c: char) -> bool {
    within(FORMAT, c)
}

/// Whether `c` shows nothing: whitespace, a control or format character,
/// or one of the blank characters above.
pub fn is_invisible(c: char) -> bool {
    c.is_whitespace() || c.is_control() || is_format(c) || within(BLANK, c)
}

/// The device names Windows reserves for any file or folder, also with an
/// extension (`NUL.txt` is `NUL`): "Naming Files, Paths, and Namespaces"
/// in Microsoft's Win32 documentation.
const RESERVED: &[&str] = &[
    "CON", "PRN", "AUX", "NUL", "COM1", "COM2", "COM3", "COM4", "COM5", "COM6", "COM7", "COM8",
    "COM9", "COM¹", "COM²", "COM³", "LPT1", "LPT2", "LPT3", "LPT4", "LPT5", "LPT6", "LPT7", "LPT8",
    "LPT9", "LPT¹", "LPT²", "LPT³",
];

/// The printable characters Windows does not allow in a file or folder
/// name ("Naming Files, Paths, and Namespaces"; `/` and `\` are refused
/// as path separators before these).
pub(crate) const WINDOWS_FORBIDDEN: [char; 7] = ['<', '>', ':', '"', '|', '?', '*'];

/// Why `name` (of a scenario, a policy or a tier) cannot be used, if it
/// cannot: the plain rules of `crate::check::unsafe_name` (empty, path
/// separators, a leading `.` or formula character, length), then this
/// module's.
pub fn name_problem(name: &str) -> Option<Cow<'static, str>> {
    if let Some(why) = crate::check::unsafe_name(name) {
        return Some(why.into());
    }
    invisible_or_reserved(name).map(Into::into)
}

/// Why `name` cannot name a file or folder for the reasons this module
/// covers, if it cannot; the message says which character (by code
/// point) or rule.
pub fn invisible_or_reserved(name: &str) -> Option<String> {
    if !name.is_empty() && name.chars().all(is_invisible) {
        return Some(
            "is made only of invisible characters (spaces, zero-width or blank characters); \
             give it a visible name"
                .into(),
        );
    }
    if let Some(c) = name.chars().find(|&c| c.is_control() || is_format(c)) {
        let kind = if c.is_control() {
            "a control character"
        } else {
            "a Unicode format character (such as a bidirectional override or a zero-width \
             space), which is invisible and can make a name look like another"
        };
        return Some(format!(
            "contains U+{:04X}, {kind}; remove it",
            u32::from(c)
        ));
    }
    if let Some(c) = name.chars().find(|c| WINDOWS_FORBIDDEN.contains(c)) {
        return Some(format!(
            "contains `{c}`, which Windows does not allow in a folder name; remove it"
        ));
    }
    if name.starts_with(char::is_whitespace) || name.ends_with(char::is_whitespace) {
        return Some(
            "starts or ends with whitespace, which a folder name would keep unseen; remove it"
                .into(),
        );
    }
    if name.ends_with('.') {
        return Some("ends with `.`, which Windows drops from a folder name; remove it".into());
    }
    let stem = name.split('.').next().unwrap_or(name).trim_end();
    if let Some(r) = RESERVED.iter().find(|r| stem.to_uppercase() == **r) {
        return Some(format!(
            "is the device name {r}, which Windows reserves (also with an extension), so it \
             cannot be a folder name there; choose another name"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every character Windows refuses in a folder name is refused, and
    /// named.
    #[test]
    fn characters_windows_forbids_are_refused() {
        for c in WINDOWS_FORBIDDEN {
            let why = invisible_or_reserved(&format!("a{c}b")).expect("refused");
            assert!(why.contains(&format!("`{c}`")), "{why}");
        }
        assert_eq!(invisible_or_reserved("a-b_c.d (1)"), None);
    }

    #[test]
    fn invisible_and_reserved_names_are_refused_with_the_reason() {
        for (name, needle) in [
            ("a\u{202E}txt.exe", "U+202E, a Unicode format character"),
            ("\u{200B}\u{200B}", "only of invisible characters"),
            ("\u{3164}", "only of invisible characters"),
            ("storm\u{200D}", "U+200D"),
            ("x\u{FEFF}", "U+FEFF"),
            ("a\u{7}b", "U+0007, a control character"),
            ("storm ", "ends with whitespace"),
            ("\u{A0}storm", "starts or ends with whitespace"),
            ("storm.", "ends with `.`"),
            ("CON", "device name CON"),
            ("con", "device name CON"),
            ("Nul.txt", "device name NUL"),
            ("com1.tar.gz", "device name COM1"),
            ("LPT9", "device name LPT9"),
            ("lpt²", "device name LPT²"),
            ("AUX .json", "device name AUX"),
        ] {
            let why = invisible_or_reserved(name).unwrap_or_default();
            assert!(why.contains(needle), "{name:?}: {why:?}");
        }
    }

    #[test]
    fn ordinary_names_pass() {
        for name in [
            "spanner-90s",
            "full jitter",
            "CONsole",
            "COM10",
            "LPT",
            "console.json",
            "a.CON",
            "é-ü-日本",
            "emoji 🚀",
            "v1.2",
        ] {
            assert_eq!(invisible_or_reserved(name), None, "{name:?}");
        }
    }

    #[test]
    fn the_format_table_is_sorted_and_covers_the_usual_suspects() {
        assert!(FORMAT.windows(2).all(|w| w[0].1 < w[1].0));
        assert!(FORMAT.iter().all(|(lo, hi)| lo <= hi));
        for c in [
            '\u{200B}', '\u{200E}', '\u{202A}', '\u{2066}', '\u{2069}', '\u{FEFF}', '\u{AD}',
        ] {
            assert!(is_format(c), "{c:?}");
        }
        for c in ['a', ' ', '\u{2010}', '\u{2070}', '\u{FFFC}'] {
            assert!(!is_format(c), "{c:?}");
        }
    }
}
