//! The keywords a `DATABASE_URL` sets, with their values and where each came from, as libpq's
//! option array holds them: stored as the text is read, completed from the environment, then
//! checked against each keyword's policy (`keywords`).

use std::collections::BTreeMap;

use super::error::ConninfoError;
use super::keywords::{KEYWORDS, Keyword, Policy, Source, find};

/// One keyword's value and where it came from.
#[derive(Clone)]
pub(super) struct Setting {
    pub value: String,
    pub from: Source,
}

/// Every keyword given a value, as libpq's option array holds them: the last value written for
/// a keyword wins. Its `Debug` shows keywords only.
#[derive(Clone, Default)]
pub(super) struct Settings(BTreeMap<&'static str, Setting>);

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

impl Settings {
    /// Stores `value` for `name` as libpq's `conninfo_storeval` does (with its translation of
    /// the old `requiressl`); `Err` holds the keyword if libpq knows no such keyword.
    pub fn store(&mut self, name: &str, value: String) -> Result<&'static Keyword, String> {
        let (name, value) = match name {
            "requiressl" if value.starts_with('1') => ("sslmode", "require".to_owned()),
            "requiressl" => ("sslmode", "prefer".to_owned()),
            other => (other, value),
        };
        let keyword = find(name).ok_or_else(|| name.to_owned())?;
        self.0.insert(
            keyword.name,
            Setting {
                value,
                from: Source::Text,
            },
        );
        Ok(keyword)
    }

    /// [`Settings::store`] for an item of the text read in order: an unknown keyword is refused
    /// by name, or, right after a secret's item, described without its text (it may be the rest
    /// of the secret). `after_secret` is the keyword of the secret just stored, if the previous
    /// item was one, and is updated for the next item.
    pub fn store_item(
        &mut self,
        name: &str,
        value: String,
        after_secret: &mut Option<&'static str>,
    ) -> Result<(), ConninfoError> {
        let stored = self
            .store(name, value)
            .map_err(|unknown| match after_secret {
                Some(secret) => ConninfoError::UnknownAfterSecret(secret),
                None => ConninfoError::unknown_keyword(unknown),
            })?;
        *after_secret = stored.secret.then_some(stored.name);
        Ok(())
    }

    /// Every keyword set that is not a secret, with its value.
    pub fn shown(&self) -> impl Iterator<Item = (&'static str, &str)> {
        self.0
            .iter()
            .filter(|(name, _)| find(name).is_some_and(|keyword| !keyword.secret))
            .map(|(name, setting)| (*name, setting.value.as_str()))
    }

    pub fn get(&self, name: &str) -> Option<&Setting> {
        self.0.get(name)
    }

    /// The value of `name` if it is set and not empty (libpq treats an empty value as unset
    /// for most keywords).
    pub fn non_empty(&self, name: &str) -> Option<&Setting> {
        self.get(name).filter(|setting| !setting.value.is_empty())
    }

    /// libpq's `conninfo_add_defaults`: each keyword the text left out takes its environment
    /// variable, if set; `PGREQUIRESSL=1` stands for `sslmode=require` when `PGSSLMODE` is unset.
    pub fn add_defaults(&mut self, env: &dyn Fn(&str) -> Option<String>) {
        for keyword in KEYWORDS {
            let Some(name) = keyword.env else { continue };
            if self.0.contains_key(keyword.name) {
                continue;
            }
            if let Some(value) = env(name) {
                self.0.insert(
                    keyword.name,
                    Setting {
                        value,
                        from: Source::Env(name),
                    },
                );
            }
        }
        if !self.0.contains_key("sslmode")
            && env("PGREQUIRESSL").is_some_and(|value| value.starts_with('1'))
        {
            self.0.insert(
                "sslmode",
                Setting {
                    value: "require".to_owned(),
                    from: Source::Env("PGREQUIRESSL"),
                },
            );
        }
    }

    /// Refuses, by name, every keyword set whose meaning the service would not honour.
    pub fn check_policies(&self) -> Result<(), ConninfoError> {
        for (name, setting) in &self.0 {
            let Some(keyword) = find(name) else { continue };
            let value = setting.value.as_str();
            let honoured = match keyword.policy {
                Policy::Use => continue,
                Policy::Refuse(reason) => {
                    return Err(ConninfoError::Unsupported {
                        keyword: keyword.name,
                        from: setting.from,
                        reason,
                    });
                }
                Policy::Only(values) if values.contains(&value) => continue,
                Policy::OnlyAnyCase(values)
                    if values.iter().any(|one| one.eq_ignore_ascii_case(value)) =>
                {
                    continue;
                }
                Policy::Only(values) | Policy::OnlyAnyCase(values) => values,
            };
            return Err(ConninfoError::UnsupportedValue {
                keyword: keyword.name,
                value: value.to_owned(),
                from: setting.from,
                honoured: honoured.join(" or "),
            });
        }
        Ok(())
    }
}
