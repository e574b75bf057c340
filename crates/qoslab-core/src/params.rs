//! Conditioner parameters given as `key = "value"` strings (CLI flags,
//! scenario TOML, Python dicts), validated into typed values with errors that
//! name the parameter, say what was expected and suggest the nearest key.
//!
//! Every conditioner's `from_params` reads its keys through [`Params`] and
//! then calls [`Params::finish`], which rejects keys nobody read.

use crate::parse::{self, Limit};
use crate::time::Duration;
use crate::units::{Bytes, Rate};
use core::fmt;

/// An invalid configuration: which parameter, and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The parameter at fault (e.g. `cbs`), or the conditioner kind.
    pub param: String,
    pub message: String,
}

impl ConfigError {
    pub fn new(param: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError {
            param: param.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.param, self.message)
    }
}

impl std::error::Error for ConfigError {}

struct Entry {
    key: String,
    value: String,
    used: bool,
}

/// A bag of string parameters for one conditioner of kind `kind`.
pub struct Params {
    kind: String,
    entries: Vec<Entry>,
    known: Vec<&'static str>,
}

impl Params {
    /// Keys are compared case-insensitively with `_` and `-` equivalent.
    pub fn new<K: AsRef<str>, V: AsRef<str>>(
        kind: &str,
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        Params {
            kind: kind.to_string(),
            entries: pairs
                .into_iter()
                .map(|(k, v)| Entry {
                    key: normalize(k.as_ref()),
                    value: v.as_ref().trim().to_string(),
                    used: false,
                })
                .collect(),
            known: Vec::new(),
        }
    }

    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// Treats `aliases` as other spellings of `key` (tc's `buffer` for
    /// `burst`, say). Giving two spellings at once is an error.
    pub fn alias(
        &mut self,
        key: &'static str,
        aliases: &[&'static str],
    ) -> Result<(), ConfigError> {
        let mut seen: Option<String> = self
            .entries
            .iter()
            .any(|e| e.key == key)
            .then(|| key.to_string());
        for a in aliases {
            let norm = normalize(a);
            for e in self.entries.iter_mut().filter(|e| e.key == norm) {
                if let Some(prev) = &seen {
                    return Err(ConfigError::new(
                        key,
                        format!("given twice, as '{prev}' and as '{a}'; give one"),
                    ));
                }
                seen = Some(a.to_string());
                e.key = key.to_string();
            }
            self.known.push(a);
        }
        Ok(())
    }

    fn take(&mut self, key: &'static str) -> Result<Option<String>, ConfigError> {
        self.known.push(key);
        let mut found: Option<String> = None;
        for e in self.entries.iter_mut().filter(|e| e.key == key) {
            if found.is_some() {
                return Err(ConfigError::new(key, "given more than once"));
            }
            e.used = true;
            found = Some(e.value.clone());
        }
        Ok(found)
    }

    fn required(&mut self, key: &'static str, what: &str) -> Result<String, ConfigError> {
        self.take(key)?.ok_or_else(|| {
            ConfigError::new(key, format!("missing: {} needs {key} ({what})", self.kind))
        })
    }

    fn unit<T, E: fmt::Display>(
        key: &'static str,
        v: &str,
        f: fn(&str) -> Result<T, E>,
    ) -> Result<T, ConfigError> {
        f(v).map_err(|e| ConfigError::new(key, e.to_string()))
    }

    pub fn rate(&mut self, key: &'static str) -> Result<Rate, ConfigError> {
        let v = self.required(key, "a rate, e.g. 20mbit")?;
        Self::unit(key, &v, parse::parse_rate)
    }
    pub fn opt_rate(&mut self, key: &'static str) -> Result<Option<Rate>, ConfigError> {
        self.take(key)?
            .map(|v| Self::unit(key, &v, parse::parse_rate))
            .transpose()
    }
    pub fn size(&mut self, key: &'static str) -> Result<Bytes, ConfigError> {
        let v = self.required(key, "a size, e.g. 3000B or 32kb")?;
        Self::unit(key, &v, parse::parse_size)
    }
    pub fn opt_size(&mut self, key: &'static str) -> Result<Option<Bytes>, ConfigError> {
        self.take(key)?
            .map(|v| Self::unit(key, &v, parse::parse_size))
            .transpose()
    }
    pub fn time(&mut self, key: &'static str) -> Result<Duration, ConfigError> {
        let v = self.required(key, "a time, e.g. 50ms")?;
        Self::unit(key, &v, parse::parse_time)
    }
    pub fn opt_time(&mut self, key: &'static str) -> Result<Option<Duration>, ConfigError> {
        self.take(key)?
            .map(|v| Self::unit(key, &v, parse::parse_time))
            .transpose()
    }
    pub fn opt_limit(&mut self, key: &'static str) -> Result<Option<Limit>, ConfigError> {
        self.take(key)?
            .map(|v| Self::unit(key, &v, parse::parse_limit))
            .transpose()
    }
    /// The raw string value (lists such as a priomap, parsed by the caller).
    pub fn opt_str(&mut self, key: &'static str) -> Result<Option<String>, ConfigError> {
        self.take(key)
    }
    /// A plain non-negative integer (a seed, a packet count, a DSCP).
    pub fn opt_u64(&mut self, key: &'static str) -> Result<Option<u64>, ConfigError> {
        self.take(key)?
            .map(|v| {
                v.parse::<u64>().map_err(|_| {
                    ConfigError::new(key, format!("expected a non-negative integer, got '{v}'"))
                })
            })
            .transpose()
    }
    /// A packet count: a bare number (`200`, as Cisco's `queue-limit`) or
    /// one with a packet suffix (`200p`). A byte size is refused.
    pub fn opt_packets(&mut self, key: &'static str) -> Result<Option<u64>, ConfigError> {
        self.take(key)?
            .map(|v| {
                let err = || {
                    ConfigError::new(
                        key,
                        format!("expected a packet count such as 200 or 200p, got '{v}'"),
                    )
                };
                if let Ok(n) = v.parse::<u64>() {
                    return Ok(n);
                }
                match parse::parse_limit(&v) {
                    Ok(Limit::Packets(n)) => Ok(n as u64),
                    _ => Err(err()),
                }
            })
            .transpose()
    }
    /// `true/false/yes/no/on/off/1/0`.
    pub fn opt_bool(&mut self, key: &'static str) -> Result<Option<bool>, ConfigError> {
        self.take(key)?
            .map(|v| match v.to_ascii_lowercase().as_str() {
                "true" | "yes" | "on" | "1" => Ok(true),
                "false" | "no" | "off" | "0" => Ok(false),
                _ => Err(ConfigError::new(
                    key,
                    format!("expected true or false, got '{v}'"),
                )),
            })
            .transpose()
    }
    /// A finite decimal number such as `0.02` or `1.25` (tc's `%lg`).
    pub fn opt_f64(&mut self, key: &'static str) -> Result<Option<f64>, ConfigError> {
        self.take(key)?
            .map(|v| match v.parse::<f64>() {
                Ok(x) if x.is_finite() => Ok(x),
                _ => Err(ConfigError::new(
                    key,
                    format!("expected a number such as 0.02, got '{v}'"),
                )),
            })
            .transpose()
    }
    /// One of `choices` (case-insensitive); returns the matching choice.
    pub fn opt_choice(
        &mut self,
        key: &'static str,
        choices: &[&'static str],
    ) -> Result<Option<&'static str>, ConfigError> {
        self.take(key)?
            .map(|v| {
                choices
                    .iter()
                    .find(|c| c.eq_ignore_ascii_case(&v))
                    .copied()
                    .ok_or_else(|| {
                        ConfigError::new(
                            key,
                            format!("expected one of {}, got '{v}'", choices.join(", ")),
                        )
                    })
            })
            .transpose()
    }
    /// A policer action (`transmit`, `drop`, `set-dscp:N`).
    pub fn opt_action(
        &mut self,
        key: &'static str,
    ) -> Result<Option<crate::packet::Action>, ConfigError> {
        self.take(key)?
            .map(|v| {
                crate::packet::Action::parse(&v).ok_or_else(|| {
                    ConfigError::new(
                        key,
                        format!("expected transmit, drop or set-dscp:N (N in 0..63), got '{v}'"),
                    )
                })
            })
            .transpose()
    }
    /// Colour mode: `blind` (default) or `aware`. Returns true when aware.
    pub fn color_aware(&mut self) -> Result<bool, ConfigError> {
        Ok(self.opt_choice("mode", &["blind", "aware"])? == Some("aware"))
    }

    /// Rejects any key that no reader asked for, suggesting the nearest one.
    pub fn finish(self) -> Result<(), ConfigError> {
        if let Some(e) = self.entries.iter().find(|e| !e.used) {
            let mut known = self.known.clone();
            known.sort_unstable();
            known.dedup();
            let hint = nearest(&e.key, &known)
                .map(|k| format!(" (did you mean '{k}'?)"))
                .unwrap_or_default();
            return Err(ConfigError::new(
                e.key.clone(),
                format!(
                    "unknown parameter for {}{hint}; valid: {}",
                    self.kind,
                    known.join(", ")
                ),
            ));
        }
        Ok(())
    }
}

fn normalize(k: &str) -> String {
    k.trim()
        .trim_start_matches("--")
        .to_ascii_lowercase()
        .replace('_', "-")
}

/// The known key within edit distance 2 of `key`, if any.
pub fn nearest<'a>(key: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (edit_distance(key, k), *k))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, k)| k)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_typed_values_and_rejects_leftovers_with_a_hint() {
        let mut p = Params::new("srtcm", [("cir", "1mbit"), ("cbz", "3000")]);
        assert_eq!(p.rate("cir").unwrap().bps(), 1_000_000);
        assert!(p.opt_size("cbs").unwrap().is_none());
        let e = p.finish().unwrap_err();
        assert_eq!(e.param, "cbz");
        assert!(e.message.contains("did you mean 'cbs'"), "{e}");
    }

    #[test]
    fn missing_and_malformed_values_name_the_key() {
        let mut p = Params::new("srtcm", [("cbs", "lots")]);
        let e = p.rate("cir").unwrap_err();
        assert_eq!(e.param, "cir");
        assert!(e.message.contains("missing"));
        let e = p.size("cbs").unwrap_err();
        assert!(e.to_string().starts_with("cbs: expected a size"), "{e}");
    }

    #[test]
    fn aliases_map_to_one_key_and_conflict_when_doubled() {
        let mut p = Params::new("tbf", [("buffer", "1540")]);
        p.alias("burst", &["buffer", "maxburst"]).unwrap();
        assert_eq!(p.size("burst").unwrap().get(), 1540);
        p.finish().unwrap();
        let mut p = Params::new("tbf", [("burst", "1540"), ("buffer", "10")]);
        assert!(p.alias("burst", &["buffer"]).is_err());
    }

    #[test]
    fn packet_counts_take_bare_numbers_and_p_but_not_bytes() {
        let mut p = Params::new("shape", [("a", "200"), ("b", "83p"), ("c", "64kb")]);
        assert_eq!(p.opt_packets("a").unwrap(), Some(200));
        assert_eq!(p.opt_packets("b").unwrap(), Some(83));
        assert!(p
            .opt_packets("c")
            .unwrap_err()
            .message
            .contains("packet count"));
    }

    #[test]
    fn keys_are_case_and_dash_insensitive() {
        let mut p = Params::new("x", [("CIR_TH", "10kb")]);
        assert_eq!(p.size("cir-th").unwrap().get(), 10240);
    }
}
