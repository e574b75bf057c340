//! Users' configurations in: a Linux `tc` script (or the output of
//! `tc -s -d qdisc show` / `tc -s -d class show`) and Cisco IOS / IOS XE
//! MQC (`class-map`, `policy-map`, `interface … service-policy`), parsed into
//! [`qoslab_policy::spec`] specs, and rendered back as the scenario policy
//! TOML (`[policy.LINK.DIR]`) with every derived default written out.
//!
//! Pure: text in, specs and warnings out; no I/O. Every error is located in
//! the configuration text ([`ImportError`]: line, column, the token, what
//! was expected); what qoslab cannot model is refused by name, never
//! dropped.
//!
//! | module | job |
//! |---|---|
//! | [`lex`] | lines → words with their line and column (tc `\` continuations, `#` / `!` comments) |
//! | [`tc`] | tc commands and `tc -s -d … show` output → specs (iproute2 `tc/q_*.c`, `tc/f_u32.c`, `tc/m_police.c`) |
//! | [`mqc`] | Cisco MQC → specs, with the platform profile (`ios`, `ios-xe`) for the defaults that differ |
//! | [`render`] | specs → scenario TOML, derived defaults as comments (from qoslab's own build of the policy) |
//! | [`fmt`] | exact unit spellings for output (`2mbit`, `1600B`, `20ms`) |

pub mod fmt;
pub mod lex;
pub mod mqc;
pub mod render;
pub mod tc;

use core::fmt as cfmt;
use qoslab_policy::spec::PolicySpec;

/// Which way a policy applies on its device / interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// tc root qdisc, MQC `service-policy output`.
    Egress,
    /// tc `ingress` qdisc + `police`, MQC `service-policy input`.
    Ingress,
}

impl Direction {
    pub fn name(self) -> &'static str {
        match self {
            Direction::Egress => "egress",
            Direction::Ingress => "ingress",
        }
    }
}

/// One policy found in the text: where it is attached and what it does.
#[derive(Clone, Debug, PartialEq)]
pub struct ImportedPolicy {
    /// `dev eth1`, `interface GigabitEthernet0/0/1`, or the policy-map's
    /// name when no interface attaches it.
    pub attach: String,
    pub direction: Direction,
    pub spec: PolicySpec,
    /// The configuration lines it came from, for the rendered comments.
    pub source: Vec<String>,
}

/// A warning tc or IOS would print, or a note on how something was mapped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// 1-based line of the configuration text (0: the whole text).
    pub line: usize,
    pub message: String,
}

impl cfmt::Display for Warning {
    fn fmt(&self, f: &mut cfmt::Formatter<'_>) -> cfmt::Result {
        if self.line > 0 {
            write!(f, "line {}: ", self.line)?;
        }
        f.write_str(&self.message)
    }
}

/// What an import found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Imported {
    pub policies: Vec<ImportedPolicy>,
    pub warnings: Vec<Warning>,
}

impl Imported {
    /// The one policy of `direction` (optionally on `attach`), or an error
    /// saying which ones there are.
    pub fn select(&self, direction: Direction, attach: Option<&str>) -> Result<&ImportedPolicy> {
        let found: Vec<&ImportedPolicy> = self
            .policies
            .iter()
            .filter(|p| p.direction == direction)
            .filter(|p| attach.is_none_or(|a| p.attach.ends_with(a) || p.attach == a))
            .collect();
        let all: Vec<String> = self
            .policies
            .iter()
            .map(|p| format!("{} {}", p.attach, p.direction.name()))
            .collect();
        match found.as_slice() {
            [one] => Ok(one),
            [] => Err(ImportError::whole(format!(
                "no {} policy{} in the text (found: {})",
                direction.name(),
                attach.map(|a| format!(" on '{a}'")).unwrap_or_default(),
                if all.is_empty() {
                    "none".to_string()
                } else {
                    all.join(", ")
                }
            ))),
            _ => Err(ImportError::whole(format!(
                "several {} policies in the text ({}); name one (tc: dev, MQC: interface)",
                direction.name(),
                found
                    .iter()
                    .map(|p| p.attach.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }
}

/// A configuration that cannot be imported, located in its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportError {
    /// 1-based line and column (characters) of the token; 0 when the error
    /// concerns the whole text.
    pub line: usize,
    pub column: usize,
    /// The offending word ("" when none).
    pub token: String,
    /// What is wrong and what was expected.
    pub message: String,
}

impl ImportError {
    pub fn at(w: &lex::Word, message: impl Into<String>) -> Self {
        ImportError {
            line: w.line,
            column: w.column,
            token: w.text.clone(),
            message: message.into(),
        }
    }
    pub fn whole(message: impl Into<String>) -> Self {
        ImportError {
            line: 0,
            column: 0,
            token: String::new(),
            message: message.into(),
        }
    }
}

impl cfmt::Display for ImportError {
    fn fmt(&self, f: &mut cfmt::Formatter<'_>) -> cfmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}: ", self.line, self.column)?;
        }
        if !self.token.is_empty() {
            write!(f, "'{}': ", self.token)?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for ImportError {}

pub type Result<T> = core::result::Result<T, ImportError>;
