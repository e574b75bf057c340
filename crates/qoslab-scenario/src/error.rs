//! The one error type of this crate: where in which file, which key, what
//! is wrong — printed as `file:line:col: key.path: message`, the form
//! compilers use, so editors can jump to it.

use core::fmt;

/// The file name under which a scenario given as a Python dict is parsed
/// (written out as TOML first): its errors print `<dict>: key.path: message`
/// without the line and column of the generated text, which the user never
/// saw.
pub const DICT_FILE: &str = "<dict>";

/// A scenario that cannot be run, located in its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file name as given by the caller (`<string>` for text).
    pub file: String,
    /// 1-based line and column (columns count characters, not bytes).
    pub line: usize,
    pub column: usize,
    /// The key at fault as a dotted path (`traffic[1].cc`,
    /// `policy.bottleneck.egress.police.cir`); empty for a syntax error.
    pub path: String,
    /// What is wrong and, where it helps, what was expected and the
    /// nearest valid key.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.file == DICT_FILE {
            // A dict has no lines: its key path is the location.
            write!(f, "{}: ", self.file)?;
        } else {
            write!(f, "{}:{}:{}: ", self.file, self.line, self.column)?;
        }
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path)?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for ScenarioError {}

/// The text being parsed, for turning byte offsets into line:column.
#[derive(Clone, Copy)]
pub(crate) struct Source<'s> {
    pub text: &'s str,
    pub file: &'s str,
}

/// Byte offsets where the lines of a text start, so that locating a key is a
/// binary search plus a scan of its own line (locating every key of a file
/// is then linear in its size, not quadratic).
pub(crate) struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub fn new(text: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { starts }
    }

    /// 1-based (line, column in characters) of byte `offset` of `text`
    /// (the text this index was built from), clamped to the text.
    pub fn line_col(&self, text: &str, offset: usize) -> (usize, usize) {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        // The last line start at or before `offset`.
        let line = self.starts.partition_point(|&s| s <= offset);
        let column = text[self.starts[line - 1]..offset].chars().count() + 1;
        (line, column)
    }
}

impl Source<'_> {
    /// 1-based (line, column) of byte `offset` (clamped to the text). One
    /// pass over the text: for many offsets build a [`LineIndex`] once.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        LineIndex::new(self.text).line_col(self.text, offset)
    }

    pub fn error(
        &self,
        offset: usize,
        path: impl Into<String>,
        message: impl Into<String>,
    ) -> ScenarioError {
        let (line, column) = self.line_col(offset);
        ScenarioError {
            file: self.file.to_string(),
            line,
            column,
            path: path.into(),
            message: message.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_become_one_based_lines_and_character_columns() {
        let s = Source {
            text: "a = 1\n# µs\nbad",
            file: "x.toml",
        };
        assert_eq!(s.line_col(0), (1, 1));
        assert_eq!(s.line_col(4), (1, 5));
        assert_eq!(s.line_col(6), (2, 1));
        // "# µs\n": µ is two bytes but one column.
        let bad = s.text.find("bad").unwrap();
        assert_eq!(s.line_col(bad), (3, 1));
        assert_eq!(s.line_col(s.text.find('s').unwrap()), (2, 4));
        assert_eq!(s.line_col(10_000), (3, 4));
    }

    #[test]
    fn display_is_file_line_col_path_message() {
        let s = Source {
            text: "x\ny",
            file: "f.toml",
        };
        assert_eq!(
            s.error(2, "traffic[0].cc", "nope").to_string(),
            "f.toml:2:1: traffic[0].cc: nope"
        );
        assert_eq!(s.error(0, "", "syntax").to_string(), "f.toml:1:1: syntax");
    }
}
