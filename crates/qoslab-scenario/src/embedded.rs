//! A policy written in its source's own configuration text inside a
//! scenario: `[policy.LINK.DIR]` with `tc = """…"""` (a tc script or `tc
//! -s -d … show` output) or `mqc = """…"""` (Cisco MQC, with `platform =
//! "ios" | "ios-xe"`), read by `qoslab-import`. `dev` / `interface` picks
//! one device when the text configures several. Errors in the text are
//! located at their line in the file (the string's first line + the line
//! in the text).
//!
//! `stab = { … }` beside `mqc` says what length the router counts per
//! packet, which MQC text does not state: a Cisco router counts the frame
//! it sends (with its 14-byte Ethernet header) where qoslab's packets are
//! IP packets. A tc script carries its own `stab` in the text, so a second
//! one beside `tc` is refused.

use crate::reader::{Cx, Field, Result};
use qoslab_import::{mqc, Direction, ImportError};
use qoslab_policy::spec::PolicySpec;

/// The policy of table `f` if it embeds tc or MQC text, else `None`.
pub(crate) fn policy(cx: &mut Cx<'_>, f: &Field<'_>, dir: Direction) -> Result<Option<PolicySpec>> {
    if !f.is_table() {
        return Ok(None);
    }
    let mut t = f.table(cx)?;
    let tc = t.get(cx, "tc");
    let mqc_f = t.get(cx, "mqc");
    let (text_f, from) = match (tc, mqc_f) {
        (None, None) => return Ok(None),
        (Some(a), Some(_)) => {
            return Err(a.error(cx, "give tc or mqc, not both"));
        }
        (Some(a), None) => (a, "tc"),
        (None, Some(b)) => (b, "mqc"),
    };
    let platform_f = t.get(cx, "platform");
    let pick = t.get_either(cx, "interface", "dev")?;
    let stab = match t.get(cx, "stab") {
        Some(s) if from == "tc" => {
            return Err(s.error(
                cx,
                "stab beside tc: write it in the tc text (tc qdisc add … stab overhead N …)",
            ))
        }
        Some(s) => Some(crate::topology::size_table(cx, &s)?),
        None => None,
    };
    t.finish(
        cx,
        &format!("beside {from} = \"\"\"…\"\"\" (platform, interface, dev or stab)"),
    )?;
    let text = text_f.str(cx, "the configuration text")?.to_string();
    let imported = match from {
        "tc" => {
            if let Some(p) = &platform_f {
                return Err(p.error(cx, "platform is for mqc (ios, ios-xe); tc has none"));
            }
            qoslab_import::tc::import(&text)
        }
        _ => {
            let platform = match &platform_f {
                None => {
                    return Err(text_f.error(
                        cx,
                        "mqc needs platform = \"ios\" or \"ios-xe\" beside it (the defaults of Bc, Tc and queue-limit differ)",
                    ))
                }
                Some(p) => {
                    let s = p.string(cx)?;
                    mqc::Platform::parse(&s)
                        .ok_or_else(|| p.error(cx, "expected platform = \"ios\" or \"ios-xe\""))?
                }
            };
            mqc::import(&text, platform)
        }
    };
    let imported = imported.map_err(|e| located(cx, &text_f, &e))?;
    let pick = pick.map(|p| p.string(cx)).transpose()?;
    let one = imported
        .select(dir, pick.as_deref())
        .map_err(|e| located(cx, &text_f, &e))?;
    let spec = match stab {
        Some(stab) => PolicySpec::Sized {
            stab,
            inner: Box::new(one.spec.clone()),
        },
        None => one.spec.clone(),
    };
    // Check it by building, as the table forms are.
    if let Err(e) = qoslab_import::render::derived(&spec) {
        return Err(text_f.error(
            cx,
            format!("the imported {from} policy does not build: {e}"),
        ));
    }
    Ok(Some(spec))
}

/// An import error at its line in the file: the text starts on the line
/// after an opening `"""` / `'''` followed by a newline (TOML trims that
/// newline), else on the quote's own line.
fn located(cx: &Cx<'_>, f: &Field<'_>, e: &ImportError) -> crate::ScenarioError {
    let src = cx.src.text;
    let at = f.at.min(src.len());
    let rest = &src[at..];
    let (open, multi) = if rest.starts_with("\"\"\"") || rest.starts_with("'''") {
        (3, true)
    } else {
        (1, false)
    };
    let mut start = at + open;
    if multi {
        if src[start..].starts_with("\r\n") {
            start += 2;
        } else if src[start..].starts_with('\n') {
            start += 1;
        }
    }
    let mut m = e.message.clone();
    if !e.token.is_empty() {
        m = format!("'{}': {m}", e.token);
    }
    if e.line == 0 {
        return cx.err(f.at, &f.path, m);
    }
    // Walk to line `e.line` of the text, then its column.
    let mut off = start;
    for _ in 1..e.line {
        match src[off..].find('\n') {
            Some(i) => off += i + 1,
            None => break,
        }
    }
    let line_end = src[off..].find('\n').map_or(src.len(), |i| off + i);
    let col_off = src[off..line_end]
        .char_indices()
        .nth(e.column.saturating_sub(1))
        .map_or(line_end, |(i, _)| off + i);
    cx.err(col_off, &f.path, m)
}
