//! A strict reader over `toml_edit`'s span-keeping tree: every table is read
//! through a [`Section`] that remembers which keys were asked for and, at
//! [`Section::finish`], rejects the rest with the nearest valid spelling.
//! Every value is converted through a [`Field`], whose errors point at the
//! value's own line and column.

use crate::error::{ScenarioError, Source};
use qoslab_core::params::nearest;
use qoslab_core::parse;
use qoslab_core::{Duration, Rate};
use toml_edit::{Item, Key, TableLike, Value};

pub(crate) type Result<T> = core::result::Result<T, ScenarioError>;

/// Parse state: the source text and the offset of every key read, so an
/// error found later (by the engine, by `qoslab-core`) can be located.
pub(crate) struct Cx<'s> {
    pub src: Source<'s>,
    /// (dotted path, byte offset of its value), in reading order.
    pub located: Vec<(String, usize)>,
}

impl<'s> Cx<'s> {
    pub fn new(text: &'s str, file: &'s str) -> Self {
        Cx {
            src: Source { text, file },
            located: Vec::new(),
        }
    }

    pub fn err(&self, at: usize, path: &str, message: impl Into<String>) -> ScenarioError {
        self.src.error(at, path, message)
    }
}

fn start(span: Option<core::ops::Range<usize>>) -> Option<usize> {
    span.map(|r| r.start)
}

/// One table (a `[header]` table, an inline table, or the document root)
/// being read.
pub(crate) struct Section<'a> {
    pub path: String,
    table: &'a dyn TableLike,
    /// Where to point when a key is missing: the table's header or the key
    /// that holds it.
    pub at: usize,
    known: Vec<&'static str>,
    /// Every key is valid (a map of names, such as `routes`).
    open: bool,
}

impl<'a> Section<'a> {
    pub fn new(path: impl Into<String>, table: &'a dyn TableLike, at: usize) -> Self {
        Section {
            path: path.into(),
            table,
            at,
            known: Vec::new(),
            open: false,
        }
    }

    fn child_path(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    fn field(&self, cx: &mut Cx<'_>, key: &Key, item: &'a Item) -> Field<'a> {
        let path = self.child_path(key.get());
        let key_at = start(key.span()).unwrap_or(self.at);
        let at = start(item.span()).unwrap_or(key_at);
        cx.located.push((path.clone(), at));
        Field::from_item(path, key_at, at, item)
    }

    /// The value of `key`, if present (and marks `key` as valid here).
    pub fn get(&mut self, cx: &mut Cx<'_>, key: &'static str) -> Option<Field<'a>> {
        self.known.push(key);
        let (k, item) = self.table.get_key_value(key)?;
        Some(self.field(cx, k, item))
    }

    /// `key` or its other spelling `alias` (giving both is an error).
    pub fn get_either(
        &mut self,
        cx: &mut Cx<'_>,
        key: &'static str,
        alias: &'static str,
    ) -> Result<Option<Field<'a>>> {
        let a = self.get(cx, key);
        let b = self.get(cx, alias);
        match (a, b) {
            (Some(_), Some(b)) => Err(cx.err(
                b.key_at,
                &b.path,
                format!("'{alias}' is another name for '{key}': give one of them"),
            )),
            (a, b) => Ok(a.or(b)),
        }
    }

    /// The value of `key`, which must be present; `what` says what it is.
    pub fn require(&mut self, cx: &mut Cx<'_>, key: &'static str, what: &str) -> Result<Field<'a>> {
        self.get(cx, key).ok_or_else(|| {
            let inside = if self.path.is_empty() {
                String::new()
            } else {
                format!(" in {}", self.path)
            };
            cx.err(
                self.at,
                &self.child_path(key),
                format!("missing key '{key}'{inside}: {what}"),
            )
        })
    }

    /// Every (key, field) in file order, all of them accepted.
    pub fn entries(&mut self, cx: &mut Cx<'_>) -> Vec<(String, Field<'a>)> {
        let table = self.table;
        let mut out = Vec::new();
        for (name, _) in table.iter() {
            if let Some((k, item)) = table.get_key_value(name) {
                out.push((name.to_string(), self.field(cx, k, item)));
            }
        }
        self.open = true;
        out
    }

    /// Rejects any key not asked for, suggesting the nearest known one.
    /// `context` names the table for the message (e.g. `kind = "udp"`).
    pub fn finish(self, cx: &mut Cx<'_>, context: &str) -> Result<()> {
        if self.open {
            return Ok(());
        }
        let mut known = self.known.clone();
        known.sort_unstable();
        known.dedup();
        for (name, _) in self.table.iter() {
            if known.contains(&name) {
                continue;
            }
            let at = self
                .table
                .key(name)
                .and_then(|k| start(k.span()))
                .unwrap_or(self.at);
            let hint = nearest(name, &known)
                .map(|k| format!(" (did you mean '{k}'?)"))
                .unwrap_or_default();
            let what = if context.is_empty() {
                if self.path.is_empty() {
                    "at the top level".to_string()
                } else {
                    format!("in {}", self.path)
                }
            } else {
                context.to_string()
            };
            return Err(cx.err(
                at,
                &self.child_path(name),
                format!(
                    "unknown key '{name}' {what}{hint}; valid: {}",
                    known.join(", ")
                ),
            ));
        }
        Ok(())
    }
}

/// One value read from the file, with where it is.
pub(crate) struct Field<'a> {
    pub path: String,
    pub key_at: usize,
    pub at: usize,
    value: Option<&'a Value>,
    table: Option<&'a dyn TableLike>,
    array_of_tables: Option<&'a toml_edit::ArrayOfTables>,
    type_name: &'static str,
}

impl<'a> Field<'a> {
    pub(crate) fn from_item(path: String, key_at: usize, at: usize, item: &'a Item) -> Self {
        Field {
            path,
            key_at,
            at,
            value: item.as_value(),
            table: item.as_table_like(),
            array_of_tables: item.as_array_of_tables(),
            type_name: item.type_name(),
        }
    }

    fn from_value(path: String, at: usize, v: &'a Value) -> Self {
        Field {
            path,
            key_at: at,
            at,
            value: Some(v),
            table: v.as_inline_table().map(|t| t as &dyn TableLike),
            array_of_tables: None,
            type_name: v.type_name(),
        }
    }

    pub fn error(&self, cx: &Cx<'_>, message: impl Into<String>) -> ScenarioError {
        cx.err(self.at, &self.path, message)
    }

    fn expected(&self, cx: &Cx<'_>, what: &str) -> ScenarioError {
        let got = match self.value {
            Some(Value::String(s)) => format!("'{}'", s.value()),
            Some(Value::Integer(i)) => i.value().to_string(),
            Some(Value::Float(f)) => f.value().to_string(),
            Some(Value::Boolean(b)) => b.value().to_string(),
            _ => format!("a {}", self.type_name),
        };
        self.error(cx, format!("expected {what}, got {got}"))
    }

    pub fn str(&self, cx: &Cx<'_>, what: &str) -> Result<&'a str> {
        self.value
            .and_then(Value::as_str)
            .ok_or_else(|| self.expected(cx, what))
    }

    pub fn string(&self, cx: &Cx<'_>) -> Result<String> {
        self.str(cx, "a string").map(str::to_string)
    }

    /// A string, integer, float or boolean as the string `qoslab-core`'s
    /// parameter parser takes (`20000000` → `"20000000"`, a bare number
    /// meaning what it means to tc).
    pub fn scalar_string(&self, cx: &Cx<'_>) -> Result<String> {
        match self.value {
            Some(Value::String(s)) => Ok(s.value().clone()),
            Some(Value::Integer(i)) => Ok(i.value().to_string()),
            Some(Value::Float(f)) if f.value().is_finite() => Ok(f.value().to_string()),
            Some(Value::Boolean(b)) => Ok(b.value().to_string()),
            _ => Err(self.expected(cx, "a string or a number")),
        }
    }

    pub fn bool(&self, cx: &Cx<'_>) -> Result<bool> {
        self.value
            .and_then(Value::as_bool)
            .ok_or_else(|| self.expected(cx, "true or false"))
    }

    pub fn is_bool(&self) -> bool {
        self.value.and_then(Value::as_bool).is_some()
    }

    pub fn is_str(&self) -> bool {
        self.value.and_then(Value::as_str).is_some()
    }

    fn integer(&self) -> Option<i64> {
        self.value.and_then(Value::as_integer)
    }

    pub fn i32(&self, cx: &Cx<'_>) -> Result<i32> {
        self.integer()
            .and_then(|i| i32::try_from(i).ok())
            .ok_or_else(|| self.expected(cx, "an integer"))
    }

    pub fn u64(&self, cx: &Cx<'_>) -> Result<u64> {
        self.integer()
            .and_then(|i| u64::try_from(i).ok())
            .ok_or_else(|| self.expected(cx, "a non-negative integer"))
    }

    pub fn u32(&self, cx: &Cx<'_>) -> Result<u32> {
        self.integer()
            .and_then(|i| u32::try_from(i).ok())
            .ok_or_else(|| self.expected(cx, "a non-negative integer below 2^32"))
    }

    /// A positive `u32` (a count of flows, senders, segments).
    pub fn count(&self, cx: &Cx<'_>) -> Result<u32> {
        match self.integer().and_then(|i| u32::try_from(i).ok()) {
            Some(n) if n > 0 => Ok(n),
            _ => Err(self.expected(cx, "a positive integer")),
        }
    }

    /// A time with its unit (`"50ms"`). A bare number is refused: tc would
    /// read it as µs, which nobody means in a scenario.
    pub fn time(&self, cx: &Cx<'_>) -> Result<Duration> {
        if self.integer().is_some() || self.value.and_then(Value::as_float).is_some() {
            return Err(self.expected(
                cx,
                "a time with its unit, such as \"50ms\", \"1.5s\" or \"200us\" (a quoted string)",
            ));
        }
        let s = self.str(cx, "a time such as \"50ms\"")?;
        parse::parse_time(s).map_err(|e| self.error(cx, e.to_string()))
    }

    /// A rate (`"20mbit"`, or an integer in bit/s).
    pub fn rate(&self, cx: &Cx<'_>) -> Result<Rate> {
        if let Some(i) = self.integer() {
            return u64::try_from(i)
                .map(Rate::from_bps)
                .map_err(|_| self.expected(cx, "a non-negative rate"));
        }
        let s = self.str(cx, "a rate such as \"20mbit\"")?;
        parse::parse_rate(s).map_err(|e| self.error(cx, e.to_string()))
    }

    /// A size in bytes (`"625000B"`, `"32kb"`, or an integer of bytes).
    pub fn size(&self, cx: &Cx<'_>) -> Result<u64> {
        if let Some(i) = self.integer() {
            return u64::try_from(i).map_err(|_| self.expected(cx, "a non-negative size"));
        }
        let s = self.str(cx, "a size such as \"625000B\" or \"32kb\"")?;
        parse::parse_size(s)
            .map(|b| b.get())
            .map_err(|e| self.error(cx, e.to_string()))
    }

    /// A queue limit: `"200p"` (packets), a byte size (`"64kb"`), or an
    /// integer of packets (as Cisco's `queue-limit 200`).
    pub fn limit(&self, cx: &Cx<'_>) -> Result<parse::Limit> {
        if let Some(i) = self.integer() {
            return u32::try_from(i)
                .map(parse::Limit::Packets)
                .map_err(|_| self.expected(cx, "a packet count"));
        }
        let s = self.str(cx, "a limit such as \"200p\" or \"64kb\"")?;
        parse::parse_limit(s).map_err(|e| self.error(cx, e.to_string()))
    }

    /// One of `choices` (a string, matched case-insensitively).
    pub fn choice(&self, cx: &Cx<'_>, choices: &[&'static str]) -> Result<&'static str> {
        let list = choices
            .iter()
            .map(|c| format!("\"{c}\""))
            .collect::<Vec<_>>()
            .join(", ");
        let s = self.str(cx, &format!("one of {list}"))?;
        if let Some(c) = choices.iter().find(|c| c.eq_ignore_ascii_case(s)) {
            return Ok(c);
        }
        let hint = nearest(&s.to_ascii_lowercase(), choices)
            .map(|c| format!(" (did you mean \"{c}\"?)"))
            .unwrap_or_default();
        Err(self.error(
            cx,
            format!("unknown value '{s}'{hint}; expected one of {list}"),
        ))
    }

    /// A table (a `[header]` table or an inline `{ ... }` table).
    pub fn table(&self, cx: &Cx<'_>) -> Result<Section<'a>> {
        self.table
            .map(|t| Section::new(self.path.clone(), t, self.at))
            .ok_or_else(|| self.expected(cx, "a table"))
    }

    pub fn is_table(&self) -> bool {
        self.table.is_some()
    }

    /// The elements of an array of values.
    pub fn array(&self, cx: &Cx<'_>) -> Result<Vec<Field<'a>>> {
        let arr = self
            .value
            .and_then(Value::as_array)
            .ok_or_else(|| self.expected(cx, "an array [ ... ]"))?;
        Ok(arr
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let at = start(v.span()).unwrap_or(self.at);
                Field::from_value(format!("{}[{i}]", self.path), at, v)
            })
            .collect())
    }

    /// `[[name]]` tables, or an array of inline tables.
    pub fn tables(&self, cx: &mut Cx<'_>) -> Result<Vec<Section<'a>>> {
        if let Some(aot) = self.array_of_tables {
            return Ok(aot
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let path = format!("{}[{i}]", self.path);
                    let at = start(t.span()).unwrap_or(self.at);
                    cx.located.push((path.clone(), at));
                    Section::new(path, t as &dyn TableLike, at)
                })
                .collect());
        }
        let items = self.array(cx)?;
        items
            .iter()
            .map(|f| {
                cx.located.push((f.path.clone(), f.at));
                f.table(cx)
            })
            .collect()
    }
}
