//! The key/value form, as libpq's `conninfo_parse` reads it: `keyword = value` items separated by
//! whitespace (C's `isspace`); a value is either a run of non-space characters or a single-quoted
//! string, and in both a backslash takes the next character as it is (`\'`, `\\`, `\ `). Nothing
//! is percent-decoded. A keyword libpq does not know is refused.
//! An error never quotes the item written after a secret (`password=it is` leaves `is` as an
//! item of its own): it says which secret it follows.

use super::error::ConninfoError;
use super::keywords;
use super::settings::Settings;
use super::url::is_c_space;

/// The keywords `text` sets.
pub(super) fn parse(text: &str) -> Result<Settings, ConninfoError> {
    let mut settings = Settings::default();
    let mut chars = text.chars().peekable();
    let mut after_secret: Option<&'static str> = None;
    loop {
        while chars.next_if(|c| is_c_space(*c)).is_some() {}
        if chars.peek().is_none() {
            return Ok(settings);
        }
        let keyword: String =
            std::iter::from_fn(|| chars.next_if(|c| *c != '=' && !is_c_space(*c))).collect();
        while chars.next_if(|c| is_c_space(*c)).is_some() {}
        if chars.next() != Some('=') {
            return Err(match after_secret {
                Some(secret) => ConninfoError::MissingEqualsAfterSecret(secret),
                // Quoted only if it is a keyword: a lone word may be a password set by mistake.
                None if keywords::find(&keyword).is_some() => ConninfoError::MissingEquals(keyword),
                None => ConninfoError::NotKeyValue,
            });
        }
        while chars.next_if(|c| is_c_space(*c)).is_some() {}
        let mut value = String::new();
        if chars.next_if_eq(&'\'').is_some() {
            loop {
                match chars.next() {
                    Some('\\') => match chars.next() {
                        Some(c) => value.push(c),
                        None => return Err(unterminated(&keyword, after_secret)),
                    },
                    Some('\'') => break,
                    Some(c) => value.push(c),
                    None => return Err(unterminated(&keyword, after_secret)),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !is_c_space(*c)) {
                if c == '\\' {
                    value.extend(chars.next_if(|_| true));
                } else {
                    value.push(c);
                }
            }
            // The space that ended the value is the item's; a backslash at the very end is dropped.
        }
        settings.store_item(&keyword, value, &mut after_secret)?;
    }
}

fn unterminated(keyword: &str, after_secret: Option<&'static str>) -> ConninfoError {
    match after_secret {
        Some(secret) => ConninfoError::MissingEqualsAfterSecret(secret),
        None => ConninfoError::Unterminated(keyword.to_owned()),
    }
}
