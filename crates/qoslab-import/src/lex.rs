//! Lines to words, each word with the line and column where it starts, so
//! every error can point at its token.

/// One whitespace-separated word of the configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Word {
    pub text: String,
    /// 1-based line and column (in characters).
    pub line: usize,
    pub column: usize,
}

/// A logical line: its words, its indentation (MQC nesting; tc show
/// output's statistics lines) and its text for comments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub words: Vec<Word>,
    /// Leading spaces of the first physical line (a tab counts 8).
    pub indent: usize,
    pub number: usize,
    pub text: String,
}

/// How comments and continuations are written.
#[derive(Clone, Copy, Debug)]
pub struct Style {
    /// Characters that start a comment at the start of a word (`#` for
    /// shell scripts, `!` for IOS).
    pub comment: &'static [char],
    /// A trailing `\` joins the next line (shell).
    pub continuation: bool,
}

pub const SHELL: Style = Style {
    comment: &['#'],
    continuation: true,
};
pub const IOS: Style = Style {
    comment: &['!'],
    continuation: false,
};

/// Splits `text` into logical lines of words; blank and comment-only lines
/// are left out.
pub fn lines(text: &str, style: Style) -> Vec<Line> {
    let mut out: Vec<Line> = Vec::new();
    let mut pending: Option<Line> = None;
    for (i, raw) in text.lines().enumerate() {
        let number = i + 1;
        let mut words = Vec::new();
        let mut col = 0usize;
        let mut cur: Option<(String, usize)> = None;
        let mut continued = false;
        let chars: Vec<char> = raw.chars().collect();
        let mut k = 0;
        while k < chars.len() {
            let c = chars[k];
            col += 1;
            if c.is_whitespace() {
                if let Some((w, c0)) = cur.take() {
                    words.push(Word {
                        text: w,
                        line: number,
                        column: c0,
                    });
                }
            } else if cur.is_none() && style.comment.contains(&c) {
                break;
            } else if style.continuation
                && c == '\\'
                && chars[k + 1..].iter().all(|c| c.is_whitespace())
            {
                continued = true;
                break;
            } else {
                match &mut cur {
                    Some((w, _)) => w.push(c),
                    None => cur = Some((c.to_string(), col)),
                }
            }
            k += 1;
        }
        if let Some((w, c0)) = cur.take() {
            words.push(Word {
                text: w,
                line: number,
                column: c0,
            });
        }
        let indent = raw
            .chars()
            .take_while(|c| c.is_whitespace())
            .map(|c| if c == '\t' { 8 } else { 1 })
            .sum();
        let line = match pending.take() {
            Some(mut p) => {
                p.words.extend(words);
                p.text.push(' ');
                p.text.push_str(strip_continuation(raw, continued));
                p
            }
            None => Line {
                words,
                indent,
                number,
                text: strip_continuation(raw, continued).to_string(),
            },
        };
        if continued {
            pending = Some(line);
        } else if !line.words.is_empty() {
            out.push(line);
        }
    }
    if let Some(p) = pending {
        if !p.words.is_empty() {
            out.push(p);
        }
    }
    out
}

/// The line's text without the trailing `\\` that continues it.
fn strip_continuation(raw: &str, continued: bool) -> &str {
    let t = raw.trim();
    if continued {
        t.strip_suffix('\\').unwrap_or(t).trim_end()
    } else {
        t
    }
}

/// A cursor over one line's words.
pub struct Cursor<'a> {
    pub words: &'a [Word],
    pub pos: usize,
    /// Where a missing word is reported: just after the line's last word.
    end: Word,
}

impl<'a> Cursor<'a> {
    pub fn new(line: &'a Line) -> Self {
        let end = match line.words.last() {
            Some(w) => Word {
                text: String::new(),
                line: w.line,
                column: w.column + w.text.chars().count() + 1,
            },
            None => Word {
                text: String::new(),
                line: line.number,
                column: 1,
            },
        };
        Cursor {
            words: &line.words,
            pos: 0,
            end,
        }
    }
    pub fn peek(&self) -> Option<&'a Word> {
        self.words.get(self.pos)
    }
    pub fn next_word(&mut self) -> Option<&'a Word> {
        let w = self.words.get(self.pos);
        if w.is_some() {
            self.pos += 1;
        }
        w
    }
    /// The next word, or an error at the end of the line saying what was
    /// expected after `after`.
    pub fn expect(&mut self, what: &str) -> crate::Result<&'a Word> {
        let end = self.end.clone();
        self.next_word()
            .ok_or_else(|| crate::ImportError::at(&end, format!("expected {what}")))
    }
    pub fn done(&self) -> bool {
        self.pos >= self.words.len()
    }
    /// The position after the last word (for "missing …" errors).
    pub fn end(&self) -> &Word {
        &self.end
    }
    /// Is the next word `w` (case-insensitive)? Consumes it if so.
    pub fn eat(&mut self, w: &str) -> bool {
        match self.peek() {
            Some(x) if x.text.eq_ignore_ascii_case(w) => {
                self.pos += 1;
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_keep_line_and_column_and_continuations_join() {
        let l = lines(
            "# comment\ntc qdisc add \\\n   dev eth0 root tbf  # tail\n\n x",
            SHELL,
        );
        assert_eq!(l.len(), 2);
        let w: Vec<(&str, usize, usize)> = l[0]
            .words
            .iter()
            .map(|w| (w.text.as_str(), w.line, w.column))
            .collect();
        assert_eq!(
            w,
            vec![
                ("tc", 2, 1),
                ("qdisc", 2, 4),
                ("add", 2, 10),
                ("dev", 3, 4),
                ("eth0", 3, 8),
                ("root", 3, 13),
                ("tbf", 3, 18)
            ]
        );
        assert_eq!(l[1].indent, 1);
        let i = lines("policy-map P\n class c ! x\n  police 8000\n", IOS);
        assert_eq!(i[1].words.len(), 2);
        assert_eq!(i[2].indent, 2);
    }
}
